// weft/sm/multicast.hpp — multicast groups (what MCMemberRecord Set and Delete
// change) and the multicast forwarding tables that carry them: one spanning tree
// per group over the switches, reaching every member that receives (full and
// non-members, not send-only ones) and no other port.
//
//   McDb db;
//   auto g = db.join(req, port_guid, port_caps);  // creates the group (and its MLID) if asked
//   auto mft = multicast_tables(fabric, lft_tables, db.group(mlid)->members...);
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/result.hpp"

namespace weft::sm {

using Gid = std::array<uint8_t, 16>;

constexpr uint16_t kMlidBase = 0xC000;
constexpr uint8_t kJoinFull = 1, kJoinNon = 2, kJoinSendOnlyNon = 4, kJoinSendOnlyFull = 8;

struct McGroup {
  Gid mgid{};
  uint16_t mlid = 0;
  uint32_t qkey = 0;
  uint16_t pkey = 0xffff;
  uint8_t mtu = 4, rate = 3, sl = 0, tclass = 0, scope = 2;
  uint32_t flow_label = 0;
  uint8_t hop_limit = 0;
  bool well_known = false;              // created from the partition file: kept without members
  std::map<uint64_t, uint8_t> members;  // port GUID -> JoinState bits
  bool operator==(const McGroup&) const = default;
};

class McDb {
 public:
  // Whether an MLID may go to a new group (beside not being any group's): the SM says no
  // while switches may still forward it to ports of a group it does not know. Empty:
  // every MLID may.
  using MlidFree = std::function<bool(uint16_t)>;
  McGroup* find(const Gid& mgid);
  McGroup* by_mlid(uint16_t mlid);
  // A new group: MLID from `mlid_cap` (0xC000 + cap - 1 at most), the lowest `free`
  // allows; the MGID is made when `g.mgid` is zero. nullopt when no MLID is free.
  std::optional<uint16_t> create(McGroup g, uint16_t mlid_cap, const MlidFree& free = {});
  // Removes `state` bits of `port`; the group goes when its last member does (unless
  // well known). Returns whether anything changed.
  bool leave(const Gid& mgid, uint64_t port, uint8_t state);
  // Members whose ports are gone (`alive` says which port GUIDs exist); returns the
  // MLIDs whose membership changed.
  std::vector<uint16_t> prune(const std::function<bool(uint64_t)>& alive);
  const std::map<uint16_t, McGroup>& groups() const { return groups_; }

  // The groups as a document of the state store ("mcast-groups", JSON): every group
  // with its MGID, MLID, parameters and members (port GUID, JoinState), and the count
  // of MGIDs the SA has made (so a restart makes no MGID twice).
  std::string text() const;
  // The groups `text` holds, every MLID where it was; an error names the group and
  // field (`where`: the document's name, for the message).
  static Result<McDb> parse(std::string_view text, std::string_view where);
  bool operator==(const McDb&) const = default;

 private:
  // The lowest MLID below `end` no group has and `free` allows; `end` when none.
  uint32_t lowest_free(const MlidFree& free, uint32_t end) const;
  std::map<uint16_t, McGroup> groups_;  // by MLID
  uint64_t made_ = 0;                   // MGIDs the SA has made
};

// Per switch node: the port mask (bit p = port p) the group's MLID forwards to.
// `members` are end ports (node, port) that receive; `senders` only send (their
// switches join the tree, their ports get nothing). Empty when no member receives.
std::map<fabric::NodeIndex, std::vector<bool>> multicast_tree(
    const fabric::Fabric& f, const std::vector<std::pair<fabric::NodeIndex, PortNum>>& members,
    const std::vector<std::pair<fabric::NodeIndex, PortNum>>& senders);

}  // namespace weft::sm
