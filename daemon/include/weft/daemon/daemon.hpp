// weft/daemon/daemon.hpp — the composition root: the SM, the SA beside it, the
// partition ledger and the event log, on one Boost.Asio io_context that owns the
// SubnetManager and everything that reaches it: MADs (through the AsioDriver's reader
// thread), the engine's timeouts, the sweep timer, and commands posted from other
// threads (the REST server, signals). It decides when to sweep: at start; at once on
// a trap (heavy) or another SM's HANDOVER; every sweep_interval seconds (light, as
// master); on request. One sweep at a time: what is asked for during one runs right
// after it. A standby polls its master every sminfo_polling_timeout ms instead, and
// sweeps to take over when it is gone.
//
//   Daemon svc(transport, sm_options, state_store, std::move(partition_store), events,
//              {.sweep_interval = 10s});
//   std::thread rest([&] { serve_rest(svc, ...); });   // reads svc.published(), posts commands
//   return svc.run();                                   // until stop()
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "weft/daemon/command.hpp"
#include "weft/daemon/events.hpp"
#include "weft/daemon/managers.hpp"
#include "weft/daemon/partition_store.hpp"
#include "weft/mad/asio_driver.hpp"

namespace weft::daemon {

struct DaemonOptions {
  std::chrono::seconds sweep_interval{10};  // 0: no light sweeps
  bool once = false;                        // one bring-up, then stop
  // After each heavy sweep (the daemon prints its summary).
  std::function<void(const sm::SweepReport&, const mad::EngineStats&)> on_heavy_sweep;
  // Documents of the state store that another master changed (on the loop, after the
  // SM and the partitions took them): the daemon reloads the REST tokens.
  std::function<void(const std::vector<std::string>&)> on_state_changed;
};

class Daemon {
 public:
  // `state`: the SM's state store (none: its state directory). The SM serves its SA
  // (an sa::SaAgent) beside it.
  Daemon(mad::Transport& t, sm::SmOptions o, std::shared_ptr<store::StateStore> state,
         PartitionStore store, EventLog& events, DaemonOptions so);
  ~Daemon();
  boost::asio::io_context& io() { return io_; }

  // Runs the loop on this thread until stop(). Returns the exit status: 0, or 1 when
  // the transport failed, a sweep could not run, or (once) the subnet did not come up.
  int run();
  void stop();  // any thread

  // A command (weft/daemon/command.hpp), from any thread: it runs on the loop, and its
  // `done`, if it has one, runs there after it.
  void submit(Command c);
  // New options (SIGHUP): applied between sweeps; the caller keeps what cannot change
  // without a restart. `options.partitions` is partition_config_file's policy.
  void reload(sm::SmOptions options, std::chrono::seconds sweep_interval);
  // Runs `f` on the loop (tests, the REST server's reads of loop-owned state).
  void post(std::function<void()> f);

  std::shared_ptr<const sm::Published> published() const { return sm_.published(); }
  // The REST partitions as last committed, and partition_config_file's policy.
  std::shared_ptr<const PartitionView> partitions() const { return partitions_.load(); }
  EventLog& events() { return events_; }

 private:
  // The handlers of the commands, on the loop.
  void handle(RequestSweep& c);
  void handle(ChangePartitions& c);
  void handle(EnablePort& c);
  void handle(MarkHealthy& c);
  void request_sweep(bool heavy);  // posts
  void on_sm_event(const sm::SmEvent& e);
  void maybe_sweep();
  void sweep_now(bool heavy);
  void arm_interval();
  // The PerfMgr's counter sweeps, every perf.sweep_time from one's start to the next's.
  void arm_perf(std::chrono::steady_clock::duration after);
  // A congestion-control pass after a sweep of the master (congestion_control TRUE).
  // One asked for while a pass or a read of the logs ran goes after it.
  void cc_after_sweep(std::function<void()> then = {});
  // Reads of the congestion logs, every cc.log_interval from one's start to the next's.
  void arm_cc_logs(std::chrono::steady_clock::duration after);
  void arm_poll(std::chrono::milliseconds after);
  void apply_options(sm::SmOptions o);
  // The ledger's merged policy and generation into the SM's options: now, or after the
  // sweep under way.
  void take_partitions();
  void publish_partitions();
  void state_changed(const std::vector<std::string>& names);

  boost::asio::io_context io_;
  Managers m_;
  sm::SubnetManager& sm_ = m_.sm();
  mad::AsioDriver driver_;
  PartitionStore store_;
  EventLog& events_;
  DaemonOptions opts_;
  boost::asio::steady_timer interval_, stats_, poll_, holdoff_, perf_, cc_logs_;
  bool cc_pending_ = false;  // a pass asked for while the CC manager was busy
  bool holdoff_armed_ = false;
  std::optional<bool> wanted_;  // a sweep asked for (true: heavy) while one ran
  std::optional<std::pair<sm::SmOptions, std::chrono::seconds>> pending_reload_;
  std::atomic<std::shared_ptr<const PartitionView>> partitions_;
  std::chrono::seconds retry_{1};  // until the next try after a sweep that failed
  int exit_ = 0;
  bool stopping_ = false;
};

}  // namespace weft::daemon
