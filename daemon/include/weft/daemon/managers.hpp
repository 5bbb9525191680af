// weft/daemon/managers.hpp — the managers side by side, as OpenSM's top-level object
// holds them: the SM (which serves its SA, an sa::SaAgent made here) and the PerfMgr,
// both over the SM's MAD engine. What one manager finds that another needs passes here,
// in one place: a counter sweep's marks and view go to the SM; an admin's cleared mark
// goes to the PerfMgr, then to the SM; a document another master changed goes to whoever
// owns it. Driver-agnostic: the daemon runs it on its loop, tests with the SyncDriver.
//
//   daemon::Managers m(transport, sm_options, state_store);
//   m.sm().sweep();
//   m.perf_sweep([](Result<perf::PerfSweep> r) { ... });
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/cc/manager.hpp"
#include "weft/perf/manager.hpp"
#include "weft/sa/sa.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::daemon {

class Managers {
 public:
  // `state`: the SM's state store (none: its state directory), where the PerfMgr keeps
  // its unhealthy marks too.
  Managers(mad::Transport& t, sm::SmOptions o, std::shared_ptr<store::StateStore> state = nullptr);
  Managers(const Managers&) = delete;
  Managers& operator=(const Managers&) = delete;

  sm::SubnetManager& sm() { return sm_; }
  const sm::SubnetManager& sm() const { return sm_; }
  perf::PerfManager& perf() { return perf_; }
  sa::SaAgent& sa() { return sa_; }

  // New options (a reload): the SM's with its next sweep, the PerfMgr's and CC's now.
  void set_options(sm::SmOptions o);
  // One counter sweep of every port of the SM's last snapshot (master only); a port it
  // finds unhealthy gets an event and its policy, applied by the next sweep.
  void perf_sweep(std::function<void(Result<perf::PerfSweep>)> done);
  bool perf_sweeping() const { return perf_.running(); }
  // Clears a port's unhealthy mark (on disk before it returns); the next heavy sweep
  // routes over it again or enables it. Fails for a port that is not marked.
  [[nodiscard]] Result<perf::Unhealthy> mark_healthy(Guid node, PortNum port);
  // Documents of the state store another master changed: each to its owner.
  void state_changed(const std::vector<std::string>& names);
  // One congestion-control pass over the SM's last snapshot (master only, with
  // congestion_control TRUE): what differs is written; an unchanged fabric costs nothing.
  void cc_pass(std::function<void(Result<cc::CcSweep>)> done);
  bool cc_running() const { return cc_.running(); }
  cc::CcManager& cc() { return cc_; }
  // The last pass's counts (none before the first).
  const std::optional<cc::CcSweep>& last_cc() const { return last_cc_; }
  // One read of the congestion logs of every device the last pass configured (master
  // only), each switch's events put on its ports by the snapshot's tables; published,
  // with a "congestion" event when anything was logged. Fails while a pass is under way.
  void cc_read_logs(std::function<void(Result<cc::CcLogRead>)> done);

 private:
  sa::SaAgent sa_;  // the SM's SA: declared first, destroyed last
  sm::SubnetManager sm_;
  perf::PerfManager perf_;  // over sm_'s engine: declared after it, destroyed before it
  cc::CcManager cc_;        // so is this
  std::optional<cc::CcSweep> last_cc_;
};

}  // namespace weft::daemon
