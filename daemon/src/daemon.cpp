#include "weft/daemon/daemon.hpp"

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include <algorithm>

#include "weft/log.hpp"

namespace weft::daemon {

namespace asio = boost::asio;

Daemon::Daemon(mad::Transport& t, sm::SmOptions o, std::shared_ptr<store::StateStore> state,
               PartitionStore store, EventLog& events, DaemonOptions so)
    : m_(
          t,
          [&] {
            o.partitions = store.merged();
            o.partitions_generation = store.generation();
            return std::move(o);
          }(),
          std::move(state)),
      driver_(io_, sm_.engine(), t),
      store_(std::move(store)),
      events_(events),
      opts_(std::move(so)),
      interval_(io_),
      stats_(io_),
      poll_(io_),
      holdoff_(io_),
      perf_(io_),
      cc_logs_(io_) {
  sm_.set_driver(driver_);
  sm_.on_event([this](const sm::SmEvent& e) { on_sm_event(e); });
  publish_partitions();
  const auto& st = sm_.state_store();
  st->on_changed([this](const std::vector<std::string>& names) {
    asio::post(io_, [this, names] { state_changed(names); });
  });
  st->on_note([this](const nlohmann::json& j) { events_.append("state_store", j); });
}

Daemon::~Daemon() {
  const auto& st = sm_.state_store();
  st->on_changed({});
  st->on_note({});
  driver_.stop();
}

void Daemon::state_changed(const std::vector<std::string>& names) {
  m_.state_changed(names);
  if (std::find(names.begin(), names.end(), "partitions.rest.conf") != names.end()) {
    auto r = store_.reload();
    if (!r) {
      WEFT_LOG(Error, "PRT-0102") << "REST partitions from the state store not read: "
                                  << r.error().message;
    } else if (*r) {
      WEFT_LOG(Info, "PRT-0103") << store_.path() << ": REST partitions at generation "
                                 << store_.generation() << " from the state store";
      publish_partitions();
      take_partitions();
    }
  }
  if (opts_.on_state_changed) opts_.on_state_changed(names);
}

void Daemon::publish_partitions() {
  auto v = std::make_shared<PartitionView>();
  v->rest = store_.partitions();
  v->file = store_.file_policy();
  v->rest_path = store_.path();
  v->generation = store_.generation();
  partitions_.store(std::move(v));
}

void Daemon::post(std::function<void()> f) {
  asio::post(io_, std::move(f));
}

void Daemon::stop() {
  asio::post(io_, [this] {
    if (stopping_) return;
    stopping_ = true;
    WEFT_LOG(Info, "APP-0002") << "stopping";
    interval_.cancel();
    stats_.cancel();
    poll_.cancel();
    holdoff_.cancel();
    perf_.cancel();
    cc_logs_.cancel();
    events_.stop();
    // A sweep under way is abandoned where it waits; the loop ends here.
    io_.stop();
  });
}

int Daemon::run() {
  driver_.start([this](const Error& e) {
    WEFT_LOG(Error, "SM-0102") << "the SM's port failed: " << e.message << "; stopping";
    exit_ = 1;
    stop();
  });
  // Counters for readers on other threads, each second.
  std::function<void()> tick = [this, &tick] {
    stats_.expires_after(std::chrono::seconds(1));
    stats_.async_wait([this, &tick](const boost::system::error_code& ec) {
      if (ec) return;
      sm_.publish_stats();
      tick();
    });
  };
  tick();
  asio::post(io_, [this] { sweep_now(true); });
  arm_perf(sm_.options().perf.sweep_time);
  arm_cc_logs(sm_.options().cc.log_interval);
  io_.run();
  driver_.stop();
  return exit_;
}

void Daemon::on_sm_event(const sm::SmEvent& e) {
  events_.append(e.type, e.data);
  // A trap is acted on when it arrives: no polling slice between it and its sweep. So
  // is another SM's HANDOVER or DISCOVER.
  // What the sweep does is the SM's to say (needs_sweep): an update of the switches
  // that trapped, or a full discovery. A second trap of the same event (the link's other
  // end) that the sweep under way already covers asks for nothing more.
  if (e.type == "trap" && e.data.value("sweep", false)) asio::post(io_, [this] { maybe_sweep(); });
  // A trap held back (its LID trapped within trap_holdoff): one heavy sweep when the
  // hold-off ends, whatever else trapped meanwhile.
  if (e.type == "trap" && e.data.value("held", false) && !holdoff_armed_) {
    holdoff_armed_ = true;
    holdoff_.expires_after(std::chrono::milliseconds(e.data.value("holdoff_ms", 1000)));
    holdoff_.async_wait([this](const boost::system::error_code& ec) {
      holdoff_armed_ = false;
      if (!ec) request_sweep(true);
    });
  }
  if (e.type == "sm_control" && e.data.value("sweep", false)) request_sweep(true);
}

void Daemon::submit(Command c) {
  asio::post(io_, [this, c = std::move(c)]() mutable {
    std::visit([this](auto& cmd) { handle(cmd); }, c);
  });
}

void Daemon::handle(RequestSweep& c) {
  wanted_ = (wanted_ && *wanted_) || c.heavy;
  maybe_sweep();
}

void Daemon::handle(EnablePort& c) {
  auto r = sm_.enable_port(c.sw, c.port);
  if (r) events_.append("port_released", {{"guid", hex_guid(c.sw.value)}, {"port", c.port}});
  if (c.done) c.done(r);
  if (r) maybe_sweep();
}

void Daemon::handle(MarkHealthy& c) {
  auto r = m_.mark_healthy(c.node, c.port);
  if (c.done) c.done(r);
  if (r) maybe_sweep();
}

void Daemon::arm_perf(std::chrono::steady_clock::duration after) {
  perf_.expires_after(after);
  perf_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    const auto period = sm_.options().perf.sweep_time;
    // Off, not master yet, or the last one still reading: try again a period later.
    if (!sm_.options().perf.enabled || m_.perf_sweeping() ||
        sm_.sm_state() != mad::SmState::kMaster || !sm_.snapshot())
      return arm_perf(period);
    const auto started = std::chrono::steady_clock::now();
    m_.perf_sweep([this, period, started](Result<perf::PerfSweep> r) {
      if (!r) WEFT_LOG(Info, "PERF-0011") << "counter sweep: " << r.error().message;
      if (r && !r->unhealthy.empty()) maybe_sweep();
      const auto spent = std::chrono::steady_clock::now() - started;
      arm_perf(period > spent ? period - spent : std::chrono::steady_clock::duration::zero());
    });
  });
}

void Daemon::request_sweep(bool heavy) {
  submit(RequestSweep{heavy});
}

void Daemon::maybe_sweep() {
  if (stopping_ || sm_.sweeping()) return;
  if (pending_reload_) {
    auto [o, interval] = std::move(*pending_reload_);
    pending_reload_.reset();
    opts_.sweep_interval = interval;
    apply_options(std::move(o));
  }
  if (!wanted_ && !sm_.needs_sweep()) return;
  const bool heavy = (wanted_ && *wanted_) || sm_.needs_sweep();
  wanted_.reset();
  sweep_now(heavy);
}

void Daemon::sweep_now(bool heavy) {
  interval_.cancel();
  sm_.start_sweep(heavy, [this](Result<sm::SweepReport> r) {
    if (!r) {
      WEFT_LOG(Error, "SM-0103") << "sweep failed: " << r.error().message;
      exit_ = 1;
      return stop();
    }
    if (r->heavy && opts_.on_heavy_sweep) opts_.on_heavy_sweep(*r, sm_.mad_stats());
    const bool master = r->sm_state == mad::SmState::kMaster && !sm_.polling();
    if (opts_.once) {
      exit_ = r->subnet_up || !master ? 0 : 1;
      // The master's congestion control goes with its one sweep.
      if (master && r->subnet_up && sm_.options().cc.enabled)
        return cc_after_sweep([this] { asio::post(io_, [this] { stop(); }); });
      return stop();
    }
    if (!master) {
      // STANDBY polls the master; a master waiting for another's HANDOVER polls it;
      // NOTACTIVE waits for a master's STANDBY.
      retry_ = std::chrono::seconds(1);
      arm_poll(std::chrono::milliseconds(sm_.options().sminfo_polling_timeout_ms));
      return maybe_sweep();
    }
    if (!r->subnet_up) {
      // A sweep that ended with failures is tried again soon, backing off to the
      // interval, not a whole interval later.
      wanted_ = true;
      interval_.expires_after(retry_);
      retry_ = std::min(2 * retry_, std::max(opts_.sweep_interval, std::chrono::seconds(1)));
      interval_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) maybe_sweep();
      });
      return;
    }
    retry_ = std::chrono::seconds(1);
    arm_interval();
    cc_after_sweep();
    maybe_sweep();
  });
}

void Daemon::cc_after_sweep(std::function<void()> then) {
  if (!sm_.options().cc.enabled || m_.cc_running()) {
    cc_pending_ = sm_.options().cc.enabled;  // off: nothing is due
    if (then) then();
    return;
  }
  cc_pending_ = false;
  m_.cc_pass([this, then = std::move(then)](Result<cc::CcSweep> r) {
    struct After {
      Daemon& d;
      const std::function<void()>& f;
      ~After() {
        if (f) f();
        if (d.cc_pending_ && !d.stopping_) d.cc_after_sweep();
      }
    } after{*this, then};
    if (!r) {
      WEFT_LOG(Info, "CC-0004") << "congestion control: " << r.error().message;
      return;
    }
    if (r->mads) WEFT_LOG(Info, "CC-0004") << "congestion control: " << r->summary();
  });
}

void Daemon::arm_cc_logs(std::chrono::steady_clock::duration after) {
  cc_logs_.expires_after(after);
  cc_logs_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    const auto& o = sm_.options().cc;
    // 0: never (looked at again a minute later, for a reload).
    const std::chrono::steady_clock::duration period =
        o.log_interval.count() ? o.log_interval : std::chrono::seconds(60);
    if (!o.enabled || !o.log_interval.count() || sm_.sm_state() != mad::SmState::kMaster ||
        !sm_.snapshot())
      return arm_cc_logs(period);
    // A pass or a sweep under way, or a pass due: read once they are done (a sweep may be
    // giving LIDs anew, and a read clears the log it reaches).
    if (m_.cc_running() || sm_.sweeping() || cc_pending_)
      return arm_cc_logs(std::chrono::seconds(1));
    const auto started = std::chrono::steady_clock::now();
    m_.cc_read_logs([this, started](Result<cc::CcLogRead> r) {
      if (!r) WEFT_LOG(Info, "CC-0006") << "congestion logs: " << r.error().message;
      // A device that lost its settings is rewritten now, not at the next sweep.
      if (r && r->drifted) cc_pending_ = true;
      if (cc_pending_ && !stopping_) cc_after_sweep();
      if (stopping_) return;
      // The interval in force now (a reload during the read counts).
      const auto& now = sm_.options().cc;
      const std::chrono::steady_clock::duration next =
          now.log_interval.count() ? now.log_interval : std::chrono::seconds(60);
      const auto spent = std::chrono::steady_clock::now() - started;
      arm_cc_logs(next > spent ? next - spent : std::chrono::steady_clock::duration::zero());
    });
  });
}

void Daemon::arm_poll(std::chrono::milliseconds after) {
  if (!sm_.polling()) return;
  poll_.expires_after(after);
  poll_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    // One poll every sminfo_polling_timeout ms, each timed from the previous one's
    // start: a master gone is noticed polling_retry_number + 1 periods after its last
    // answer, plus one transaction_timeout.
    const auto period = std::chrono::milliseconds(sm_.options().sminfo_polling_timeout_ms);
    const auto started = std::chrono::steady_clock::now();
    sm_.poll_master([this, period, started](bool gone) {
      if (gone) return request_sweep(true);
      const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started);
      arm_poll(period > spent ? period - spent : std::chrono::milliseconds(0));
    });
  });
}

void Daemon::arm_interval() {
  if (opts_.sweep_interval.count() <= 0) return;
  interval_.expires_after(opts_.sweep_interval);
  interval_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    if (!wanted_) wanted_ = false;  // a light sweep
    maybe_sweep();
  });
}

void Daemon::handle(ChangePartitions& c) {
  auto done = [&c](Result<uint64_t> r) {
    if (c.done) c.done(std::move(r));
  };
  auto next = c.change(store_.partitions());
  if (!next) return done(std::unexpected(next.error()));
  if (*next == store_.partitions()) return done(store_.generation());
  auto gen = store_.commit(std::move(*next));
  if (!gen) {
    WEFT_LOG(Error, "PRT-0101") << "REST partitions not saved: " << gen.error().message;
    return done(std::unexpected(gen.error()));
  }
  WEFT_LOG(Info, "PRT-0100") << store_.path() << ": REST partitions at generation " << *gen << " ("
                             << store_.partitions().size() << " partitions)";
  publish_partitions();
  events_.append("partitions", {{"generation", *gen}, {"file", store_.path()}});
  // On disk; the SM takes the merged policy with its next sweep, asked for now.
  take_partitions();
  done(*gen);
  request_sweep(true);
}

void Daemon::reload(sm::SmOptions o, std::chrono::seconds sweep_interval) {
  asio::post(io_, [this, o = std::move(o), sweep_interval]() mutable {
    store_.set_file_policy(o.partitions);
    publish_partitions();
    o.partitions = store_.merged();
    o.partitions_generation = store_.generation();
    events_.append("reload", {{"sweep_interval_s", sweep_interval.count()}});
    if (sm_.sweeping()) {
      pending_reload_.emplace(std::move(o), sweep_interval);
    } else {
      opts_.sweep_interval = sweep_interval;
      apply_options(std::move(o));
    }
    request_sweep(true);
  });
}

void Daemon::take_partitions() {
  sm::SmOptions o = sm_.options();
  o.partitions = store_.merged();
  o.partitions_generation = store_.generation();
  if (sm_.sweeping())
    pending_reload_.emplace(std::move(o), opts_.sweep_interval);
  else
    apply_options(std::move(o));
}

void Daemon::apply_options(sm::SmOptions o) {
  const auto& was = sm_.options().cc;
  const bool logs_changed = was.enabled != o.cc.enabled || was.log_interval != o.cc.log_interval;
  m_.set_options(std::move(o));
  // A new interval counts from now, not from the end of the old wait.
  if (logs_changed && !stopping_) arm_cc_logs(sm_.options().cc.log_interval);
}

}  // namespace weft::daemon
