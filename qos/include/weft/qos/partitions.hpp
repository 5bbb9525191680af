// weft/qos/partitions.hpp — from a partition policy (partitions.conf) and a
// fabric to the P_Keys every end port holds, with OpenSM's rules: the Default
// partition (0x7fff) always exists; without a file every end port is its full
// member, with one every end port is at least a limited member and the SM's
// port a full one. A port that is both a full and a limited member holds the
// full P_Key only, unless allow_both_pkeys.
//
//   auto plan = weft::qos::plan_partitions(&policy, fabric, sm_port_guid, {});
//   plan.pkeys[node][port];            // {0xffff, 0x8002, ...}: index-0 key first
//   auto t = weft::qos::layout_pkeys(plan.pkeys[n][p], held_table, cap, /*keep*/ true);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/config/partitions.hpp"
#include "weft/fabric/fabric.hpp"

namespace weft::qos {

constexpr uint16_t kFullMember = 0x8000;

struct PartitionOptions {
  bool allow_both_pkeys = false;
};

struct ResolvedPartition {
  std::string name;
  uint16_t pkey = 0;  // low 15 bits
  bool ipoib = false;
  bool indx0 = false;
  config::GroupFlags flags;
  std::vector<config::McGroupSpec> groups;
  size_t full_members = 0, limited_members = 0;
  std::string where;  // FILE:LINE, or "built in" for the implicit Default rule
};

struct PartitionPlan {
  std::vector<ResolvedPartition> partitions;  // Default first, then file order
  // [node][port]: the P_Keys of each end port (CA and router ports, switch port 0),
  // membership bit included; the key that belongs at index 0 first, the rest in
  // ascending order. Empty for other ports.
  std::vector<std::vector<std::vector<uint16_t>>> pkeys;
  // Per vport of the fabric (f.vports(), in that order): its P_Keys, as for an end port.
  // A vport is a CA end port of its own GUID (ALL and ALL_CAS take it in, and so does
  // the Default partition); one the host has given no GUID yet holds none.
  std::vector<std::vector<uint16_t>> vport_pkeys;
  std::vector<std::string> warnings;  // e.g. a GUID of the file that is not in the fabric
  // Whether two end ports can talk: a P_Key both hold, at least one as a full member.
  bool share_partition(fabric::NodeIndex a, PortNum pa, fabric::NodeIndex b, PortNum pb) const;
  // The P_Key two end ports would use, preferring `want` when given (0 = any).
  std::optional<uint16_t> common_pkey(fabric::NodeIndex a, PortNum pa, fabric::NodeIndex b,
                                      PortNum pb, uint16_t want = 0) const;
};

// The P_Keys the switch port facing CA port (n, p) of `f` holds to let its traffic
// through: the port's own and those of its vports (a key held as a full member by any of
// them, held full), the port's first key first. `f` is the fabric `plan` was made for.
std::vector<uint16_t> facing_pkeys(const PartitionPlan& plan, const fabric::Fabric& f,
                                   fabric::NodeIndex n, PortNum p);

// `policy` null: no partition file (or OpenSM's default path missing).
PartitionPlan plan_partitions(const config::PartitionPolicy* policy, const fabric::Fabric& f,
                              Guid sm_port_guid, const PartitionOptions& o = {});

// A port's P_Key table of `cap` entries holding `want` (want[0] at index 0). With
// `keep`, a key the port already holds (same low 15 bits) stays at its index.
// Keys that do not fit go to `dropped`.
struct PkeyLayout {
  std::vector<uint16_t> table;
  std::vector<uint16_t> dropped;
};
PkeyLayout layout_pkeys(const std::vector<uint16_t>& want, const std::vector<uint16_t>& held,
                        size_t cap, bool keep);

}  // namespace weft::qos
