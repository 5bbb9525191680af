// weft/sm/subnet_manager.hpp — the master SM: one sweep discovers the subnet,
// assigns LIDs, computes routes, programs every switch and port (writing only
// what differs from what the devices hold) and brings ports to ACTIVE. Between
// sweeps it answers SMInfo queries and reacts to traps.
//
//   SubnetManager sm(transport, opts);
//   auto rep = sm.sweep();              // "SUBNET UP" is logged when it succeeds
//   while (!stop) sm.serve_for(1s);     // answers SMInfo, notices traps
//   if (sm.needs_sweep()) sm.sweep();
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "weft/config/partitions.hpp"
#include "weft/config/qos_policy.hpp"
#include "weft/qos/partitions.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/routing/engine.hpp"
#include "weft/sm/discovery.hpp"
#include "weft/sm/lid_manager.hpp"
#include "weft/sm/mad_engine.hpp"
#include "weft/sm/sa.hpp"
#include "weft/sm/snapshot.hpp"

namespace weft::sm {

struct SmOptions {
  EngineOptions engine;
  std::string state_dir = "/var/lib/weft";  // holds guid2lid
  uint8_t lmc = 0;
  std::string routing_engine = "minhop";    // a chain: "ftree,updn,minhop"
  std::vector<Guid> roots;                  // updn/dnup roots (root_guid_file); empty = detect
  std::optional<routing::TorusSpec> torus;  // dor's shape (torus_config)
  uint8_t sm_priority = 0;
  uint8_t max_op_vls = 5;       // OpenSM's max_op_vls: 1=VL0 2=VL0-1 3=VL0-3 4=VL0-7 5=VL0-14
  uint8_t subnet_timeout = 18;  // OpenSM's subnet_timeout (4.096 us * 2^x)
  // Partitions (partition_config_file); nullopt: no file, every end port a full
  // member of the Default partition.
  std::optional<config::PartitionPolicy> partitions;
  std::string part_enforce = "both";  // in, out, both, off
  bool no_partition_enforcement = false;
  bool allow_both_pkeys = false;
  bool keep_pkey_indexes = true;
  // SL2VL and VL arbitration (qos_*). SL2VL is also written when a routing engine
  // layers its paths on more than one VL, qos or not.
  qos::QosConfig qos;
  // The QoS policy (qos_policy_file), applied to PathRecords under QoS.
  std::optional<config::QosPolicy> qos_policy;
};

class SubnetManager {
 public:
  SubnetManager(Transport& t, SmOptions o);
  // A full sweep (discover, LIDs, routes, program, activate). Fails only when it
  // cannot start (no local node, bad state file directory); a partial bring-up
  // returns a report with subnet_up = false and the reasons.
  [[nodiscard]] Result<SweepReport> sweep();
  // Checks every known switch's SwitchInfo for a port state change; runs a full
  // sweep when something changed (or when no sweep has run yet).
  [[nodiscard]] Result<SweepReport> light_sweep();
  // Serves MADs addressed to the SM for `d`: SMInfo queries, traps.
  [[nodiscard]] Result<void> serve_for(Duration d);
  bool needs_sweep() const { return trap_seen_; }
  std::shared_ptr<const SubnetSnapshot> snapshot() const { return snapshot_; }
  const EngineStats& mad_stats() const { return eng_.stats(); }
  const SaStats& sa_stats() const { return sa_.stats(); }
  const McDb& multicast() const { return mc_; }

 private:
  void on_unsolicited(const Smp& s, const InMad& in);
  void serve_sa(const InMad& in);
  void send_reports(uint16_t trap, const Gid& gid);
  void program(const Discovered& d, fabric::Fabric& target, const routing::Tables& t,
               const qos::PartitionPlan& plan, Lid sm_lid, SweepReport& rep,
               std::vector<std::vector<PortInfo>>& after);
  void program_ports(const Discovered& d, fabric::Fabric& target, const qos::PartitionPlan& plan,
                     Lid sm_lid, SweepReport& rep, std::vector<std::vector<PortInfo>>& after);
  // Whether switch port p (facing an end port) filters P_Keys this sweep.
  bool enforces(const Discovered& d, const fabric::Fabric& f, const qos::PartitionPlan& plan,
                fabric::NodeIndex n, PortNum p) const;
  void program_lfts(const Discovered& d, fabric::Fabric& target, const routing::Tables& t,
                    SweepReport& rep);
  // Records that switch `sw` holds `blk` as LFT block `block`.
  void remember_block(Guid sw, size_t block, const LftBlock& blk);
  // P_Key tables (end ports, and switch ports that enforce), SL2VL and VLArb: each
  // read, then written only where it differs.
  void program_tables(const Discovered& d, const fabric::Fabric& target, const routing::Tables& t,
                      const qos::PartitionPlan& plan,
                      const std::vector<std::vector<PortInfo>>& after, SweepReport& rep);
  void write_pkeys(const Discovered& d, const fabric::Fabric& target, fabric::NodeIndex n,
                   PortNum p, uint32_t mod_base, size_t cap, const std::vector<uint16_t>& want,
                   SweepReport& rep);
  // Writes one SL2VL or VLArb table where the port holds something else; `done`
  // (optional) learns whether the port now holds `want`.
  void write_table(const Discovered& d, const fabric::Fabric& target, fabric::NodeIndex n,
                   PortNum p, uint16_t attr, uint32_t mod, const SmpData& want,
                   size_t compare_bytes, SweepReport& rep, std::function<void(bool)> done = {});
  // What a port's tables hold, as last read or written, is trusted while the port has
  // not been reset since: a CA port still ACTIVE, a switch still at the LinearFDBTop
  // weft left it with.
  struct TableKey {
    uint64_t guid;  // the switch's node GUID, or the CA port's GUID
    uint32_t mod;
    uint16_t attr;
    uint8_t port;
    bool operator==(const TableKey&) const = default;
  };
  struct TableKeyHash {
    size_t operator()(const TableKey& k) const {
      return std::hash<uint64_t>()(k.guid * 0x9E3779B97F4A7C15ull ^ (uint64_t(k.mod) << 24) ^
                                   (uint64_t(k.attr) << 8) ^ k.port);
    }
  };
  bool steady(const Discovered& d, fabric::NodeIndex n, PortNum p) const;
  static uint64_t port_key(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p);
  void note_ignored(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p, uint64_t key,
                    const PortInfo& want, const PortInfo& got, SweepReport& rep);
  TableKey table_key(const Discovered& d, fabric::NodeIndex n, PortNum p, uint16_t attr,
                     uint32_t mod) const;
  const SmpData* held(const Discovered& d, fabric::NodeIndex n, PortNum p, uint16_t attr,
                      uint32_t mod) const;
  // Multicast: the groups the partition file asks for, members whose ports left,
  // each group's tree, and the MFT blocks that differ from what switches hold.
  void sync_groups(const qos::PartitionPlan& plan);
  std::vector<std::pair<fabric::NodeIndex, uint32_t>> route_mlid(const fabric::Fabric& f,
                                                                 uint16_t mlid);
  void write_mfts(const fabric::Fabric& f,
                  const std::vector<std::pair<fabric::NodeIndex, uint32_t>>& blocks,
                  SweepReport* rep);
  // Which QoS settings a port takes (CA, router, switch port 0 or external).
  const qos::QosPortConfig& qos_for(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p) const;
  void activate(const Discovered& d, const fabric::Fabric& target,
                std::vector<std::vector<PortInfo>>& after, SweepReport& rep);

  Transport& t_;
  SmOptions opts_;
  SaAgent sa_;
  MadEngine eng_;
  Guid2Lid db_;
  bool db_loaded_ = false;
  bool trap_seen_ = false;
  uint32_t act_count_ = 0;
  Lid sm_lid_;
  Guid sm_guid_;
  std::shared_ptr<const SubnetSnapshot> snapshot_;
  std::vector<DrPath> last_switch_paths_;
  std::map<Guid, std::vector<uint8_t>>
      lft_cache_;  // what each switch holds, as we wrote or read it
  std::unordered_map<uint64_t, uint16_t> switch_top_;
  // PortInfo fields a port was seen to drop from a Set (ibsim keeps neither).
  static constexpr uint8_t kIgnoresEnforcement = 1, kIgnoresHighLimit = 2;
  std::unordered_map<uint64_t, uint8_t> ignores_;  // LinearFDBTop each switch was left with
  std::unordered_map<TableKey, SmpData, TableKeyHash> table_cache_;
  std::vector<std::vector<std::vector<uint16_t>>> pkey_tables_;  // this sweep's, for the snapshot
  McDb mc_;
  uint16_t mft_cap_ = 0;            // MLIDs every switch holds
  std::vector<DrPath> node_paths_;  // per node of the snapshot's model
  std::unordered_map<uint64_t, std::pair<fabric::NodeIndex, PortNum>> end_ports_;  // by port GUID
  // MFT blocks: what weft wants each switch to hold (node -> pos << 28 | block -> masks),
  // what switches hold as last read or written (switch GUID, modifier), and which
  // switches each MLID's tree crossed.
  std::map<fabric::NodeIndex, std::map<uint32_t, MftBlock>> mft_want_;
  std::map<std::pair<uint64_t, uint32_t>, MftBlock> mft_held_;
  std::map<uint16_t, std::vector<fabric::NodeIndex>> mlid_switches_;
  std::set<uint64_t> last_ports_;  // end port GUIDs of the last snapshot
};

}  // namespace weft::sm
