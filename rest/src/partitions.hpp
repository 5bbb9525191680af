// Partitions as the API shows and changes them. A view merges what the admin's
// partition_config_file defines, what was made over REST, and which ports of the
// fabric hold each P_Key; the operations are pure functions from the REST partitions
// as they are to what they become (or the error, with its HTTP status), which the SM's
// loop applies and writes before anyone is told.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "handlers.hpp"
#include "weft/daemon/partitions.hpp"
#include "weft/sm/snapshot.hpp"

namespace weft::rest {

struct MemberView {
  uint64_t guid = 0;
  config::Membership membership = config::Membership::kFull;
  bool index0 = false;
  std::string source;  // "rest", "file" (a GUID there), "fabric" (a rule there: ALL, ...)
  bool on_fabric = false;
  std::string port;  // its name on the fabric, when it is there
};

struct PartitionItem {
  uint16_t pkey = 0;
  std::string name;
  bool ipoib = false;
  config::GroupFlags flags;
  std::string file_where;  // FILE:LINE of its partition_config_file definition, if any
  bool in_rest = false;
  std::vector<MemberView> members;  // by GUID
  nlohmann::json to_json(bool with_members) const;
};

std::vector<PartitionItem> partition_items(const sm::Published& pub,
                                           const daemon::PartitionView& v);

// Port GUIDs of hosts by name: a host is the first word of a CA's NodeDescription
// ("node01 mlx5_0" is node01), compared without case; every linked port of every CA
// of the host counts. Unknown names come back in `unknown`.
struct HostPorts {
  std::vector<Guid> guids;
  std::vector<std::string> unknown;
};
HostPorts resolve_hosts(const sm::SubnetSnapshot* snap, const std::vector<std::string>& hosts);

struct AddSpec {
  uint16_t pkey = 0;
  std::vector<Guid> guids;
  config::Membership membership = config::Membership::kFull;
  // Per GUID, in the order of `guids` (UFM's "memberships"); empty: `membership` for all.
  std::vector<config::Membership> memberships;
  bool index0 = false;
  std::optional<bool> ipoib;
  std::optional<std::string> name;
  std::optional<uint8_t> mtu, rate, sl;  // IBTA codes
};

// Adds members (a new P_Key is made); members already there take the new membership.
ApiResult<daemon::RestPartitions> op_add(const daemon::RestPartitions& cur, const AddSpec& s);
// The P_Key's REST members become exactly `s.guids`.
ApiResult<daemon::RestPartitions> op_replace(const daemon::RestPartitions& cur, const AddSpec& s);
// Removes members; a GUID that is no member is no error; one that partition_config_file
// names cannot be removed here (409).
ApiResult<daemon::RestPartitions> op_remove(const daemon::RestPartitions& cur,
                                            const daemon::PartitionView& v, uint16_t pkey,
                                            const std::vector<Guid>& guids);
// Deletes a REST-made P_Key (404 unknown, 409 when partition_config_file defines it).
ApiResult<daemon::RestPartitions> op_delete(const daemon::RestPartitions& cur,
                                            const daemon::PartitionView& v, uint16_t pkey);
// Defines (or redefines) a P_Key's properties, members untouched.
ApiResult<daemon::RestPartitions> op_define(const daemon::RestPartitions& cur, const AddSpec& s);

// Membership words: "full", "limited", "both".
ApiResult<config::Membership> as_membership(const nlohmann::json& v, const std::string& field);
// UFM's rate_limit (Gb/s: 2.5, 10, 100, ...) as an IBTA rate code.
std::optional<uint8_t> rate_code_of_gbps(double gbps);
// An MTU as an IBTA code: a code 1-5, or bytes 256-4096.
std::optional<uint8_t> mtu_code(int64_t v);

// Runs `op` against the REST partitions on the SM's loop and, once the result is on
// disk, answers `status` with `body(generation)`; or the error.
using PartitionOp = std::function<ApiResult<daemon::RestPartitions>(const daemon::RestPartitions&,
                                                                    const daemon::PartitionView&)>;
void commit(Ctx& c, PartitionOp op, int status, std::function<nlohmann::json(uint64_t)> body);

}  // namespace weft::rest
