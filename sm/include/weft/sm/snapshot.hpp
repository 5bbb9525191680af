// weft/sm/snapshot.hpp — what one sweep produced: the report, and the immutable
// snapshot the SM publishes for its readers (the SA, summaries, later REST).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/qos/partitions.hpp"
#include "weft/qos/policy.hpp"
#include "weft/routing/engine.hpp"
#include "weft/sm/lid_manager.hpp"

namespace weft::sm {

struct SweepReport {
  size_t switches = 0, cas = 0, routers = 0;
  size_t links = 0;  // inter-node links
  size_t lids = 0;   // LID-holding ports
  uint16_t top_lid = 0;
  LidAssignment lid_assignment;
  uint64_t smps_discovery = 0, smps_program = 0, smps_activate = 0;
  uint64_t lft_blocks_read = 0, lft_blocks_written = 0, portinfo_sets = 0, switchinfo_sets = 0;
  uint64_t ports_activated = 0;
  uint64_t pkey_blocks_read = 0, pkey_blocks_written = 0;
  uint64_t sl2vl_read = 0, sl2vl_written = 0, vlarb_read = 0, vlarb_written = 0;
  uint64_t ports_enforcing = 0;  // switch ports that filter P_Keys
  uint64_t table_failures = 0;   // P_Key, SL2VL or VLArb reads and writes that failed
  uint64_t mft_blocks_read = 0, mft_blocks_written = 0;
  size_t mcast_groups = 0;
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
  bool subnet_up = false;
  std::string reason;  // why not, when !subnet_up
};

// What the last sweep produced, for summaries, tests and (later) the REST API.
struct SubnetSnapshot {
  fabric::Fabric fabric;  // with the LIDs as assigned
  routing::Tables tables;
  qos::PartitionPlan partitions;
  // [node][port]: the P_Key table each port holds as weft laid it out (empty where
  // weft does not manage one), for the SA's P_KeyTableRecords.
  std::vector<std::vector<std::vector<uint16_t>>> pkey_tables;
  // The QoS policy resolved on this fabric (under QoS, when a policy file is set).
  std::shared_ptr<const qos::PolicyMatcher> qos_policy;
  // [node][port]: VL arbitration table capacities (low, high) as the ports report them.
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> vlarb_caps;
  SweepReport report;
  Lid sm_lid;
};

}  // namespace weft::sm
