// weft/sm/snapshot.hpp — what one sweep produced: the report, and the immutable
// snapshot the SM publishes for its readers; and Published, everything a reader on
// another thread (the REST server) may look at, swapped whole and atomically.
//
//   auto p = sm.published();              // any thread; never the SM's live state
//   if (p->subnet) use(p->subnet->fabric, p->versions.ports);
#pragma once

#include <array>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/mad/mad.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/qos/partitions.hpp"
#include "weft/qos/policy.hpp"
#include "weft/routing/engine.hpp"
#include "weft/sm/lid_manager.hpp"
#include "weft/sm/multicast.hpp"
#include "weft/sm/sa_stats.hpp"
#include "weft/sm/sm_role.hpp"
#include "weft/store/state_store.hpp"

namespace weft::perf {
struct PerfView;  // weft/perf/manager.hpp
}
namespace weft::cc {
struct CcView;  // weft/cc/view.hpp
}

namespace weft::sm {

struct SweepReport {
  size_t switches = 0, cas = 0, routers = 0;
  size_t links = 0;  // inter-node links
  size_t lids = 0;   // LID-holding ports
  uint16_t top_lid = 0;
  LidAssignment lid_assignment;
  uint64_t smps_discovery = 0, smps_program = 0, smps_activate = 0;
  uint64_t lft_blocks_read = 0, lft_blocks_written = 0, portinfo_sets = 0, switchinfo_sets = 0;
  // End ports whose PortInfo Set carried ClientReregister (once a master term, and when
  // a port lost its LID or SM LID), and SR-IOV VFs whose VPortInfo Set did.
  uint64_t client_reregisters = 0;
  // One LFT block per switch weft believes it knows, read back to check (spot checks),
  // and the switches whose block differed: another writer changed them unannounced,
  // so they were read back whole and rewritten where they differ.
  uint64_t lft_blocks_checked = 0, lft_switches_changed = 0;
  // A new master term (weft was not the only SM programming since its last sweep as
  // master, or this process is new): every cache of device contents was voided.
  bool new_term = false;
  uint64_t ports_activated = 0;
  uint64_t ports_disabled = 0, ports_enabled = 0;  // PhysState Sets (flap_policy down)
  uint64_t switches_by_lid = 0;  // whose LFT blocks and top went by LID-routed SMPs
  uint64_t pkey_blocks_read = 0, pkey_blocks_written = 0;
  uint64_t sl2vl_read = 0, sl2vl_written = 0, vlarb_read = 0, vlarb_written = 0;
  uint64_t ports_enforcing = 0;  // switch ports that filter P_Keys
  uint64_t table_failures = 0;   // P_Key, SL2VL or VLArb reads and writes that failed
  // P_Key, SL2VL and VLArb blocks weft believes ports hold, read back to check
  // (drift_check_table_blocks), and those that differed: read again and rewritten.
  uint64_t table_blocks_checked = 0, table_blocks_changed = 0;
  uint64_t mft_blocks_read = 0, mft_blocks_written = 0;
  size_t mcast_groups = 0;
  // MLIDs switches forward that no group holds (another SM's, or groups whose document
  // was lost): kept through the term's first full sweep as master, then cleared.
  size_t mcast_foreign = 0;
  // Adaptive routing (when asked for, or off where weft had turned it on): switches
  // that hold AR groups (capable), those with AR on when the sweep ended, those left
  // with static routing (no AR, a model that does not answer, a write that failed), the
  // AR attributes read and written, groups GroupCap could not hold, and failed AR MADs.
  size_t ar_capable = 0, ar_enabled = 0, ar_static = 0, ar_groups_dropped = 0;
  uint64_t ar_blocks_read = 0, ar_group_blocks_written = 0, ar_lft_blocks_written = 0,
           ar_info_sets = 0, ar_failures = 0;
  // AR state weft believes switches hold, read back to check (drift_check_blocks a
  // switch), and the switches where it differed: taken as held, and rewritten.
  uint64_t ar_blocks_checked = 0, ar_switches_changed = 0;
  // SR-IOV virtual ports (virt_enabled): CA ports whose PortInfo says they support
  // virtualization, the vports found on them (not DOWN), those holding a LID of their
  // own; vport SMPs of discovery (VirtualizationInfo, VPortState, VPortInfo, VNodeInfo,
  // VNodeDescription), LIDs written (VPortInfo), VPortPKeyTable blocks read and written, vports
  // moved to ACTIVE, and vport SMPs that failed.
  size_t virt_ports = 0, vports_found = 0, vports_with_lid = 0;
  uint64_t vport_reads = 0, vport_lids_set = 0, vport_pkey_blocks_read = 0,
           vport_pkey_blocks_written = 0, vports_activated = 0, vport_failures = 0;
  uint64_t lft_failures =
      0;                    // LFT blocks or SwitchInfo writes that failed, switches not programmed
  uint64_t lft_capped = 0;  // switches whose LinearFDBCap is below the top LID
  size_t ports_active = 0, ports_linked = 0;  // port ends, both ends of each link counted
  double ms_discovery = 0, ms_lids = 0, ms_routing = 0, ms_program = 0, ms_activate = 0,
         ms_total = 0;
  std::vector<std::string> problems;
  std::string routing_engine;                        // the engine of the chain that routed
  std::vector<routing::Fallback> routing_fallbacks;  // engines before it that refused, and why
  bool heavy = true;                                 // false: a light sweep found nothing changed
  bool updated = false;  // heavy, on the last model: only switches that reported a change read
  bool subnet_up = false;
  std::string reason;  // why not, when !subnet_up
  // The SM's state when the sweep ended: STANDBY (or NOTACTIVE) sweeps only read, and
  // `reason` says which SM is master; `sms` are the other SMs the sweep found.
  mad::SmState sm_state = mad::SmState::kMaster;
  std::vector<RemoteSm> sms;
};
// A problem of the sweep: logged (as `id`) and kept in the report.
void add_problem(SweepReport& rep, std::string s, const char* id = "SM-0010");

// End ports (switch port 0, CA and router ports with a link) that hold a unicast LID, by
// LID and by port GUID, and each one's base LID: the lookups the SA and the path query
// make, built once with the snapshot.
struct EndPortIndex {
  std::vector<std::pair<fabric::NodeIndex, PortNum>> by_lid;  // LID -> port; node kNoNode = none
  std::unordered_map<uint64_t, std::pair<fabric::NodeIndex, PortNum>> by_guid;
  std::vector<std::vector<uint16_t>> lid_of;  // [node][port] base LID (0 = none)
  // The end port a LID (base or LMC offset) belongs to.
  std::optional<std::pair<fabric::NodeIndex, PortNum>> at(uint16_t lid) const {
    if (lid >= by_lid.size() || by_lid[lid].first == fabric::kNoNode) return std::nullopt;
    return by_lid[lid];
  }
  // SR-IOV virtual ports (fabric.vports()) by port GUID, and by each LID of those that
  // hold their own (base to base + 2^LMC - 1, the LMC of their CA port). Of two VFs
  // claiming one GUID, the first in fabric.vports() order.
  struct VPortAt {
    size_t index = 0;  // in fabric.vports()
    fabric::NodeIndex node = fabric::kNoNode;
    PortNum port = 0;  // the CA port it is behind
  };
  std::unordered_map<uint64_t, VPortAt> vport_by_guid;
  std::unordered_map<uint16_t, VPortAt> vport_by_lid;
  const VPortAt* vport(uint64_t guid) const {
    auto it = vport_by_guid.find(guid);
    return it == vport_by_guid.end() ? nullptr : &it->second;
  }
  const VPortAt* vport_at(uint16_t lid) const {
    auto it = vport_by_lid.find(lid);
    return it == vport_by_lid.end() ? nullptr : &it->second;
  }
  static EndPortIndex of(const fabric::Fabric& f);
};

// Adaptive routing on one switch, as weft last read or wrote it.
struct ArView {
  bool supported = false;  // AdaptiveRoutingInfo answered, with groups to hold
  bool enabled = false;
  uint16_t group_cap = 0, group_top = 0;
  std::vector<std::vector<PortNum>> groups;  // [g] for g in 0..group_top (0 stays empty)
  struct Entry {
    uint16_t lid = 0, group = 0;
    PortNum default_port = 0;
  };
  std::vector<Entry> entries;  // the LIDs routed adaptively, ascending
};

// What the last sweep produced: the fabric it found and what weft programmed into it.
// The SA answers from it, multicast trees are computed on it, and it never changes
// once published: node indices, paths and end ports all belong to this fabric.
struct SubnetSnapshot {
  fabric::Fabric fabric;  // with the LIDs as assigned and the port states reached
  routing::Tables tables;
  std::vector<mad::DrPath> node_paths;  // [node]: a directed route from the SM
  // End ports (CA and router ports, switch port 0) by port GUID.
  std::unordered_map<uint64_t, std::pair<fabric::NodeIndex, PortNum>> end_ports;
  EndPortIndex ends;     // of `fabric`
  uint16_t mft_cap = 0;  // MLIDs every switch holds (the least MulticastFDBCap)
  qos::PartitionPlan partitions;
  // [node][port]: the P_Key table each port holds as weft laid it out (empty where
  // weft does not manage one), for the SA's P_KeyTableRecords.
  std::vector<std::vector<std::vector<uint16_t>>> pkey_tables;
  // The QoS policy resolved on this fabric (under QoS, when a policy file is set).
  std::shared_ptr<const qos::PolicyMatcher> qos_policy;
  // [node][port]: VL arbitration table capacities (low, high) as the ports report them.
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> vlarb_caps;
  Lid sm_lid;
  Guid sm_guid;  // the SM's port GUID
  // Adaptive routing by switch GUID: the switches weft asked (while AR is asked for).
  std::map<uint64_t, ArView> ar;
  // Every link once, by its ends' (GUID, port), the lesser end first, sorted: what the
  // next snapshot's diff compares its own with (make_snapshot fills it).
  std::vector<std::tuple<uint64_t, PortNum, uint64_t, PortNum>> link_keys;
  // The port switch `sw` forwards `dlid` by, as weft programmed it (0: not a switch of
  // this fabric, or the LID not routed).
  PortNum egress(Guid sw, uint16_t dlid) const;
};

struct SmOptions;

// A change counter per collection, as UFM's app/versioning: each moves when a sweep
// (or a join, or a command) changed what the collection holds.
struct Versions {
  uint64_t nodes = 0, ports = 0, links = 0, partitions = 0, multicast = 0, sm = 0;
};

// Everything the SM shows the rest of the process, as of one moment.
struct Published {
  std::shared_ptr<const SubnetSnapshot> subnet;  // null until the first sweep's
  std::shared_ptr<const SweepReport> report;     // the last finished sweep's
  std::shared_ptr<const std::vector<McGroup>> multicast;
  mad::SmState state = mad::SmState::kNotActive;
  uint8_t priority = 0;
  Guid guid;  // the SM's port
  Lid lid;
  uint32_t act_count = 0;
  // The master as this SM sees it (itself when master), and the other SMs the last
  // heavy sweep found.
  Guid master_guid;
  Lid master_lid;
  std::string master_name;
  std::vector<RemoteSm> sms;
  // Traps received, by number (0: vendor traps), and the ports now flapping.
  std::vector<std::pair<uint16_t, uint64_t>> traps;
  std::vector<std::pair<uint64_t, PortNum>> flapping;
  // Switch ports weft keeps disabled (flap_policy down): (GUID, port), why, since.
  struct DownPort {
    uint64_t guid = 0;
    PortNum port = 0;
    std::string reason;
    int64_t since_unix_s = 0;
  };
  std::vector<DownPort> ports_down;
  uint64_t heavy_sweeps = 0, light_sweeps = 0;
  // Switches found holding an LFT block weft did not write, since start; P_Key, SL2VL
  // and VLArb blocks found holding what weft did not write or read.
  uint64_t drift_lft = 0, drift_pkey = 0, drift_sl2vl = 0, drift_vlarb = 0, drift_ar = 0;
  bool sweeping = false;
  // Partition policy generations: the latest accepted, and the latest whose P_Key
  // tables a sweep wrote without a failure.
  uint64_t partitions_generation = 0, partitions_applied = 0;
  Versions versions;
  mad::EngineStats mad;
  SaStats sa;
  // Heavy sweeps' durations: counts at or below each of kSweepBuckets (seconds), and
  // their sum, for a Prometheus histogram.
  static constexpr double kSweepBuckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,   2.5,
                                             5,    10,   30,  60,   120, 300, 600};
  std::array<uint64_t, std::size(kSweepBuckets)> sweep_le{};
  uint64_t sweep_count = 0;
  double sweep_seconds = 0;
  int64_t started_unix_s = 0;
  // What the PerfMgr's last counter sweep read, and the ports marked unhealthy (null
  // before the first).
  std::shared_ptr<const perf::PerfView> perf;
  // Congestion control: each device's state, the last pass, the congestion its logs
  // showed (null before the first pass).
  std::shared_ptr<const cc::CcView> cc;
  // The SM's options in force (sm/subnet_manager.hpp).
  std::shared_ptr<const SmOptions> options;
  // Where the master's state lives and how it fares, as the store said at publication
  // (a value: readers never call into the store).
  std::optional<store::StateStoreStatus> store;
};

}  // namespace weft::sm
