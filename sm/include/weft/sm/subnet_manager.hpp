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

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/routing/engine.hpp"
#include "weft/sm/discovery.hpp"
#include "weft/sm/lid_manager.hpp"
#include "weft/sm/mad_engine.hpp"

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
};

struct SweepReport {
  size_t switches = 0, cas = 0, routers = 0;
  size_t links = 0;  // inter-node links
  size_t lids = 0;   // LID-holding ports
  uint16_t top_lid = 0;
  LidAssignment lid_assignment;
  uint64_t smps_discovery = 0, smps_program = 0, smps_activate = 0;
  uint64_t lft_blocks_read = 0, lft_blocks_written = 0, portinfo_sets = 0, switchinfo_sets = 0;
  uint64_t ports_activated = 0;
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
  SweepReport report;
  Lid sm_lid;
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

 private:
  void on_unsolicited(const Smp& s, const InMad& in);
  void program(const Discovered& d, fabric::Fabric& target, const routing::Tables& t, Lid sm_lid,
               SweepReport& rep, std::vector<std::vector<PortInfo>>& after);
  void program_ports(const Discovered& d, fabric::Fabric& target, Lid sm_lid, SweepReport& rep,
                     std::vector<std::vector<PortInfo>>& after);
  void program_lfts(const Discovered& d, fabric::Fabric& target, const routing::Tables& t,
                    SweepReport& rep);
  // Records that switch `sw` holds `blk` as LFT block `block`.
  void remember_block(Guid sw, size_t block, const LftBlock& blk);
  void activate(const Discovered& d, const fabric::Fabric& target,
                std::vector<std::vector<PortInfo>>& after, SweepReport& rep);

  Transport& t_;
  SmOptions opts_;
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
};

}  // namespace weft::sm
