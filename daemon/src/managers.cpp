#include "weft/daemon/managers.hpp"

#include <algorithm>
#include <chrono>

namespace weft::daemon {

Managers::Managers(mad::Transport& t, sm::SmOptions o, std::shared_ptr<store::StateStore> state)
    : sm_(t, o, &sa_, std::move(state)),
      perf_(sm_.engine(), o.perf, sm_.state_store()),
      cc_(sm_.engine(), o.cc) {
  sm_.set_perf(perf_.view());
  sm_.publish_stats();  // the marks read at start are in the first published view
}

void Managers::set_options(sm::SmOptions o) {
  perf_.set_options(o.perf);
  cc_.set_options(o.cc);
  sm_.set_options(std::move(o));
}

void Managers::perf_sweep(std::function<void(Result<perf::PerfSweep>)> done) {
  auto snap = sm_.snapshot();
  if (sm_.sm_state() != mad::SmState::kMaster || !snap)
    return done(fail(Errc::kUnsupported, "counters are read by the master, once the subnet is up"));
  // The PerfMgr reads the snapshot's fabric and keeps the snapshot alive while it does.
  perf_.start(std::shared_ptr<const fabric::Fabric>(snap, &snap->fabric),
              [this, done = std::move(done)](Result<perf::PerfSweep> r) {
                sm_.set_perf(perf_.view());
                if (r) sm_.counters_swept(*r);
                sm_.publish_stats();
                done(std::move(r));
              });
}

void Managers::cc_pass(std::function<void(Result<cc::CcSweep>)> done) {
  auto snap = sm_.snapshot();
  if (!cc_.options().enabled) return done(fail(Errc::kUnsupported, "congestion_control is FALSE"));
  if (sm_.sm_state() != mad::SmState::kMaster || !snap)
    return done(
        fail(Errc::kUnsupported, "congestion control is the master's, once the subnet is up"));
  cc_.start(std::shared_ptr<const fabric::Fabric>(snap, &snap->fabric),
            [this, done = std::move(done)](Result<cc::CcSweep> r) {
              if (r) last_cc_ = *r;
              sm_.set_cc(cc_.published());
              sm_.publish_stats();
              done(std::move(r));
            });
}

void Managers::cc_read_logs(std::function<void(Result<cc::CcLogRead>)> done) {
  auto snap = sm_.snapshot();
  if (!cc_.options().enabled) return done(fail(Errc::kUnsupported, "congestion_control is FALSE"));
  if (sm_.sm_state() != mad::SmState::kMaster || !snap)
    return done(
        fail(Errc::kUnsupported, "congestion logs are read by the master, once the subnet is up"));
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  cc_.read_logs([snap](uint64_t guid, uint16_t dlid) { return snap->egress(Guid{guid}, dlid); },
                now,
                [this, done = std::move(done)](Result<cc::CcLogRead> r) {
                  sm_.set_cc(cc_.published());
                  if (r) sm_.congestion_read(*r);
                  sm_.publish_stats();
                  done(std::move(r));
                });
}

Result<perf::Unhealthy> Managers::mark_healthy(Guid node, PortNum port) {
  auto was = perf_.mark_healthy(node.value, port);
  if (!was) return was;
  sm_.set_perf(perf_.view());
  sm_.port_healthy(node, port, *was);
  return was;
}

void Managers::state_changed(const std::vector<std::string>& names) {
  sm_.state_changed(names);
  if (std::find(names.begin(), names.end(), "unhealthy-ports") != names.end()) {
    perf_.reload();
    sm_.set_perf(perf_.view());
  }
}

}  // namespace weft::daemon
