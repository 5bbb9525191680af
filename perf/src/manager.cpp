#include "weft/perf/manager.hpp"

#include <algorithm>
#include <sstream>

#include "weft/durable_file.hpp"
#include "weft/log.hpp"
#include "weft/text_file.hpp"

namespace weft::perf {

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string port_name(const PortStats& s) {
  std::string n = s.node_desc.empty() ? hex_guid(s.node_guid) : "\"" + s.node_desc + "\"";
  return n + " port " + std::to_string(s.port);
}

// A PerfMgt GMP whose PMA data area is `data`.
mad::Gmp pma_mad(uint8_t method, uint16_t attr, const PmaData& data) {
  mad::Gmp g;
  g.mgmt_class = kClassPerf;
  g.method = method;
  g.attr_id = attr;
  std::copy(data.begin(), data.end(), g.payload.begin() + (kPmaDataOffset - mad::kMadHeaderSize));
  return g;
}

PmaData pma_data(const mad::Gmp& g) {
  PmaData d;
  std::copy_n(g.payload.begin() + (kPmaDataOffset - mad::kMadHeaderSize), d.size(), d.begin());
  return d;
}

}  // namespace

Thresholds default_thresholds() {
  Thresholds t{};
  auto set = [&t](Counter c, uint64_t v) { t[size_t(c)] = v; };
  set(Counter::kSymbolErrors, 10);
  set(Counter::kLinkErrorRecovery, 10);
  set(Counter::kLinkDowned, 10);
  set(Counter::kRcvErrors, 10);
  set(Counter::kRcvRemotePhysicalErrors, 100);
  set(Counter::kRcvSwitchRelayErrors, 100);
  set(Counter::kXmitDiscards, 100);
  set(Counter::kXmitConstraintErrors, 100);
  set(Counter::kRcvConstraintErrors, 100);
  set(Counter::kLocalLinkIntegrityErrors, 10);
  set(Counter::kExcessiveBufferOverrunErrors, 10);
  set(Counter::kVl15Dropped, 100);
  return t;
}

Result<Thresholds> parse_thresholds(const std::string& text, const std::string& origin,
                                    Thresholds base) {
  std::istringstream in(text);
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const std::string l = trim(line);
    if (l.empty()) continue;
    const std::string where = origin + ":" + std::to_string(no) + ": ";
    const auto eq = l.find('=');
    if (eq == std::string::npos)
      return fail(Errc::kInvalidInput, where + "expected Name=value, got \"" + l + "\"");
    const std::string name = trim(l.substr(0, eq)), value = trim(l.substr(eq + 1));
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(value.c_str(), &end, 0);
    if (value.empty() || *end || errno == ERANGE || value.front() == '-')
      return fail(Errc::kInvalidInput,
                  where + name + " wants a non-negative count, got \"" + value + "\"");
    if (name == "PortXmitWait") continue;  // congestion: perfmgr_xmit_wait_threshold
    bool known = false;
    for (size_t i = 0; i < kCounters; ++i) {
      const auto& ci = info(Counter(i));
      if (ci.error && ci.name == name) {
        base[i] = v;
        known = true;
      }
    }
    if (!known) {
      std::string names;
      for (size_t i = 0; i < kCounters; ++i)
        if (info(Counter(i)).error)
          names += std::string(names.empty() ? "" : ", ") + std::string(info(Counter(i)).name);
      return fail(Errc::kInvalidInput,
                  where + "unknown counter \"" + name + "\" (known: " + names + ", PortXmitWait)");
    }
  }
  return base;
}

struct PerfManager::Sweep {
  std::shared_ptr<const fabric::Fabric> fabric;
  std::function<void(Result<PerfSweep>)> done;
  std::chrono::steady_clock::time_point t0;
  uint64_t mads_at_start = 0;
  uint64_t number = 0;
  size_t outstanding = 0;
  PerfSweep out;
};

const char* policy_name(UnhealthyPolicy p) {
  switch (p) {
    case UnhealthyPolicy::kReroute:
      return "reroute";
    case UnhealthyPolicy::kIsolate:
      return "isolate";
    case UnhealthyPolicy::kReport:
      break;
  }
  return "report";
}

std::optional<UnhealthyPolicy> unhealthy_policy_named(std::string_view word) {
  for (auto p : {UnhealthyPolicy::kReport, UnhealthyPolicy::kReroute, UnhealthyPolicy::kIsolate})
    if (word == policy_name(p)) return p;
  return std::nullopt;
}

PerfManager::PerfManager(mad::MadEngine& eng, PerfOptions o,
                         std::shared_ptr<store::StateStore> store)
    : eng_(eng), opts_(std::move(o)), store_(std::move(store)) {
  reload();
}

void PerfManager::reload() {
  if (!store_) return;
  unhealthy_.clear();
  load_error_.clear();
  const std::string path = store_->path("unhealthy-ports");
  auto r = for_each_state_line(path, [this](const std::string& line, const std::string& where) {
    std::istringstream ss(line);
    std::string g, policy, counter;
    unsigned port = 0;
    long long since = 0;
    const bool read = static_cast<bool>(ss >> g >> port >> since >> policy >> counter);
    std::string reason;
    if (read) std::getline(ss >> std::ws, reason);
    char* end = nullptr;
    const unsigned long long gv = std::strtoull(g.c_str(), &end, 0);
    const auto pol = unhealthy_policy_named(policy);
    if (!read || *end || gv == 0 || port > 254 || !pol) {
      WEFT_LOG(Warn, "PERF-0006") << where
                                  << "expected \"0xNODEGUID PORT SINCE POLICY COUNTER "
                                     "REASON\" (POLICY report, reroute or isolate), skipped";
      return;
    }
    unhealthy_[{gv, static_cast<PortNum>(port)}] = {reason, counter, since, *pol};
  });
  if (!r) {
    load_error_ = r.error().message;
    WEFT_LOG(Error, "PERF-0007") << "unhealthy port marks not read: " << load_error_;
  } else if (!unhealthy_.empty()) {
    WEFT_LOG(Info, "PERF-0008") << path << ": " << unhealthy_.size() << " ports marked unhealthy";
  }
  auto v = view_ ? std::make_shared<PerfView>(*view_) : std::make_shared<PerfView>();
  v->unhealthy = unhealthy_;
  view_ = v;
}

Result<void> PerfManager::save() const {
  if (!store_) return {};
  std::string text =
      "# ports weft's PerfMgr marked unhealthy: 0xNODEGUID PORT SINCE(unix s) POLICY COUNTER "
      "REASON\n";
  for (const auto& [key, u] : unhealthy_) {
    std::string reason = u.reason;
    std::replace(reason.begin(), reason.end(), '#', ' ');
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    text += hex_guid(key.first) + " " + std::to_string(key.second) + " " +
            std::to_string(u.since_unix_s) + " " + policy_name(u.policy) + " " +
            (u.counter.empty() ? "-" : u.counter) + " " + reason + "\n";
  }
  return store_->write("unhealthy-ports", text);
}

Result<Unhealthy> PerfManager::mark_healthy(uint64_t node_guid, PortNum port) {
  auto it = unhealthy_.find({node_guid, port});
  if (it == unhealthy_.end())
    return fail(Errc::kInvalidInput,
                "port " + hex_guid(node_guid) + "/" + std::to_string(port) + " is not unhealthy");
  const Unhealthy was = it->second;
  unhealthy_.erase(it);
  if (auto r = save(); !r) {
    unhealthy_[{node_guid, port}] = was;
    return std::unexpected(r.error());
  }
  if (auto p = ports_.find({node_guid, port}); p != ports_.end()) {
    p->second.window.clear();
    p->second.stats.window = {};
  }
  auto v = std::make_shared<PerfView>(*view_);
  v->unhealthy = unhealthy_;
  view_ = v;
  WEFT_LOG(Info, "PERF-0009") << "port " << hex_guid(node_guid) << "/" << int(port)
                              << " marked healthy (was: " << was.reason << ")";
  return was;
}

void PerfManager::start(std::shared_ptr<const fabric::Fabric> fabric,
                        std::function<void(Result<PerfSweep>)> done) {
  if (sweep_) return done(fail(Errc::kUnsupported, "a counter sweep is under way"));
  if (!fabric) return done(fail(Errc::kInvalidInput, "no fabric yet: nothing to read"));
  auto sw = std::make_shared<Sweep>();
  sw->fabric = std::move(fabric);
  sw->done = std::move(done);
  sw->t0 = std::chrono::steady_clock::now();
  sw->mads_at_start = eng_.stats().gmps_sent;
  sw->number = ++sweeps_;
  sweep_ = sw;
  const auto& f = *sw->fabric;
  // Holds the sweep open until every node's queries are submitted.
  ++sw->outstanding;
  for (size_t n = 0; n < f.size(); ++n) query_node(sw, n);
  release(sw);
}

void PerfManager::release(const std::shared_ptr<Sweep>& sw) {
  if (--sw->outstanding == 0) finish(sw);
}

void PerfManager::query_node(const std::shared_ptr<Sweep>& sw, size_t node) {
  const auto& f = *sw->fabric;
  const auto& nd = f.node(static_cast<fabric::NodeIndex>(node));
  if (!nd.is_switch() && (opts_.ignore_cas || nd.type != fabric::NodeType::kCa)) return;
  // The ports to read: a switch's linked external ports (asked at port 0's LID); a
  // CA's linked ports, each at its own LID.
  std::vector<std::pair<PortNum, Lid>> ports;
  for (const auto& p : nd.ports) {
    if (p.num == 0 || !p.linked()) continue;
    const Lid lid = nd.is_switch() ? nd.ports[0].attrs.lid : p.attrs.lid;
    if (!lid.is_unicast()) continue;
    ports.push_back({p.num, lid});
  }
  if (ports.empty()) return;
  for (const auto& [p, lid] : ports) {
    auto& ps = ports_[{nd.guid.value, p}];
    if (ps.sweep + 1 < sw->number && ps.sweep != 0) {
      // Gone from the fabric for a sweep or more: its counts do not join the new ones.
      ps.pc.restart();
      ps.ext.restart();
      ps.cleared = 0;
      ps.window.clear();
      ps.last_read.reset();
      ps.stats = {};
    }
    if (ps.sweep == 0 || ps.stats.series_unix_s == 0) ps.stats.series_unix_s = unix_now();
    ps.sweep = sw->number;
    ps.stats.node_guid = nd.guid.value;
    ps.stats.port_guid = nd.is_switch() ? nd.ports[0].guid.value : nd.ports[p].guid.value;
    ps.stats.port = p;
    ps.stats.lid = lid;
    ps.stats.is_switch = nd.is_switch();
    ps.stats.node_desc = nd.description;
    if (auto c = caps_.find(nd.guid.value); c != caps_.end()) ps.stats.caps = c->second;
  }
  sw->out.ports += ports.size();
  const uint64_t guid = nd.guid.value;
  auto go = [this, sw, guid, ports] {
    const PmaCapabilities caps = caps_[guid];
    for (const auto& [p, lid] : ports)
      query_port(sw, {guid, p}, lid, caps.extended() || caps.extended_data_only());
  };
  if (caps_.count(guid)) return go();
  // ClassPortInfo first, once per node: whether to ask for PortCountersExtended.
  ++sw->outstanding;
  mad::GmpRequest req{pma_mad(mad::kMethodGet, kAttrClassPortInfo, {}), ports.front().second};
  eng_.submit(std::move(req), [this, sw, guid, go](Result<mad::Gmp> r) {
    if (r) {
      caps_[guid] = decode_class_port_info(pma_data(*r));
      for (auto it = ports_.lower_bound({guid, 0}); it != ports_.end() && it->first.first == guid;
           ++it)
        it->second.stats.caps = caps_[guid];
    } else {
      WEFT_LOG(Debug, "PERF-0001")
          << hex_guid(guid) << ": " << r.error().message << " (PortCounters only)";
      caps_[guid] = {};
    }
    go();
    release(sw);
  });
}

void PerfManager::query_port(const std::shared_ptr<Sweep>& sw, PortKey key, Lid lid, bool ext) {
  PortCounters sel;
  sel.port_select = key.second;
  PmaData data{};
  encode_port_counters(sel, data);
  sw->outstanding += ext ? 2 : 1;
  eng_.submit(mad::GmpRequest{pma_mad(mad::kMethodGet, kAttrPortCounters, data), lid},
              [this, sw, key](Result<mad::Gmp> r) {
                on_counters(*sw, key, std::move(r));
                release(sw);
              });
  if (!ext) return;
  PortCountersExt esel;
  esel.port_select = key.second;
  encode_port_counters_ext(esel, data);
  eng_.submit(mad::GmpRequest{pma_mad(mad::kMethodGet, kAttrPortCountersExt, data), lid},
              [this, sw, key](Result<mad::Gmp> r) {
                on_ext(key, std::move(r));
                release(sw);
              });
}

void PerfManager::on_counters(Sweep& sw, PortKey key, Result<mad::Gmp> r) {
  auto it = ports_.find(key);
  if (it == ports_.end()) return;
  PortState& ps = it->second;
  PortStats& st = ps.stats;
  if (!r) {
    st.read = false;
    st.error = r.error().message;
    ++sw.out.failed;
    return;
  }
  const PortCounters pc = decode_port_counters(pma_data(*r));
  if (pc.port_select != key.second) {
    st.read = false;
    st.error = "PortCounters answer for port " + std::to_string(pc.port_select) + ", not " +
               std::to_string(key.second);
    ++sw.out.failed;
    return;
  }
  const mad::TimePoint now = eng_.transport().clock().now();
  st.read = true;
  st.error.clear();
  st.delta = ps.pc.add(pc, ps.cleared);
  ps.cleared = 0;
  st.baseline = st.delta.baseline;
  st.current = pc.value;
  st.totals = ps.pc.totals();
  st.interval_s =
      ps.last_read && !st.baseline ? std::chrono::duration<double>(now - *ps.last_read).count() : 0;
  ps.last_read = now;
  st.read_unix_s = unix_now();
  ++sw.out.read;
  if (!st.baseline) check_health(sw, key, ps, now);
  // Counters near saturation are cleared now and counted from zero at the next read.
  // Where PortCountersExtended counts the data, PortCounters' 32-bit data counters
  // (seconds to saturate on a busy link) are left saturated: not worth a Set a sweep.
  uint32_t due = ps.pc.due_for_clear();
  if (st.caps.extended() || st.caps.extended_data_only())
    due &= ~(bit(Counter::kXmitData) | bit(Counter::kRcvData) | bit(Counter::kXmitPkts) |
             bit(Counter::kRcvPkts));
  if (due != 0) {
    ++sw.outstanding;
    auto keep = sweep_;
    eng_.submit(
        mad::GmpRequest{pma_mad(mad::kMethodSet, kAttrPortCounters, clear_request(key.second, due)),
                        st.lid},
        [this, keep, key, due](Result<mad::Gmp> c) {
          if (auto p = ports_.find(key); p != ports_.end()) {
            if (c) {
              p->second.cleared |= due;
              ++p->second.stats.clears;
            } else {
              WEFT_LOG(Warn, "PERF-0003")
                  << port_name(p->second.stats)
                  << ": clearing counters near saturation failed: " << c.error().message;
            }
          }
          release(keep);
        });
  }
}

void PerfManager::on_ext(PortKey key, Result<mad::Gmp> r) {
  auto it = ports_.find(key);
  if (it == ports_.end() || !r) return;
  PortState& ps = it->second;
  const PortCountersExt pce = decode_port_counters_ext(pma_data(*r));
  if (pce.port_select != key.second) return;
  ps.stats.has_ext = true;
  ps.stats.ext_delta = ps.ext.add(pce);
  ps.stats.ext_current = pce.value;
  ps.stats.ext_totals = ps.ext.totals();
}

void PerfManager::check_health(Sweep& sw, PortKey key, PortState& ps, mad::TimePoint now) {
  PortStats& st = ps.stats;
  ps.window.emplace_back(now, st.delta.counted);
  while (!ps.window.empty() && now - ps.window.front().first > opts_.health_window)
    ps.window.pop_front();
  st.window = {};
  for (const auto& [t, counts] : ps.window)
    for (size_t i = 0; i < kCounters; ++i) st.window[i] += counts[i];
  for (size_t i = 0; i < kCounters; ++i) {
    const auto& ci = info(Counter(i));
    if (ci.error && opts_.log_errors && st.delta.counted[i])
      WEFT_LOG(Warn, "PERF-0002") << port_name(st) << ": " << ci.name << " +" << st.delta.counted[i]
                                  << ((st.delta.saturated >> i & 1) ? " (at least: saturated)"
                                                                    : "");
  }
  const uint64_t wait = st.delta.counted[size_t(Counter::kXmitWait)];
  st.congested = opts_.xmit_wait_threshold > 0 && wait > opts_.xmit_wait_threshold;
  if (st.congested) {
    sw.out.congested.push_back(key);
    if (opts_.xmit_wait_log)
      WEFT_LOG(Info, "PERF-0004") << port_name(st) << ": PortXmitWait +" << wait << " (threshold "
                                  << opts_.xmit_wait_threshold << ")";
  }
  if (unhealthy_.count(key)) return;
  for (size_t i = 0; i < kCounters; ++i) {
    const uint64_t limit = opts_.thresholds[i];
    if (!info(Counter(i)).error || limit == 0 || st.window[i] < limit) continue;
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(opts_.health_window).count();
    Unhealthy u;
    u.counter = std::string(info(Counter(i)).name);
    u.reason = u.counter + " " + std::to_string(st.window[i]) + " within " + std::to_string(secs) +
               " s (threshold " + std::to_string(limit) + ")";
    u.since_unix_s = unix_now();
    u.policy = opts_.unhealthy_policy;
    unhealthy_[key] = u;
    if (auto r = save(); !r)
      WEFT_LOG(Error, "PERF-0010") << "unhealthy port marks not saved: " << r.error().message;
    WEFT_LOG(Warn, "PERF-0005") << port_name(st) << " is unhealthy: " << u.reason << " (policy "
                                << policy_name(u.policy) << ")";
    sw.out.unhealthy.push_back({key, u});
    break;
  }
}

void PerfManager::finish(const std::shared_ptr<Sweep>& sw) {
  sweep_.reset();
  auto v = std::make_shared<PerfView>();
  for (auto& [key, ps] : ports_) {
    if (ps.sweep != sw->number) continue;  // not in this fabric
    v->index[key] = v->ports.size();
    v->ports.push_back(ps.stats);
  }
  v->unhealthy = unhealthy_;
  v->sweeps = sw->number;
  sw->out.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sw->t0).count();
  sw->out.mads = eng_.stats().gmps_sent - sw->mads_at_start;
  v->last_sweep_ms = sw->out.ms;
  v->last_sweep_mads = sw->out.mads;
  v->last_sweep_failed = sw->out.failed;
  v->last_sweep_unix_s = unix_now();
  view_ = v;
  // Nodes gone from the fabric are asked for their capabilities again if they return.
  for (auto it = caps_.begin(); it != caps_.end();)
    it = sw->fabric->find(Guid{it->first}) ? std::next(it) : caps_.erase(it);
  WEFT_LOG(Info, "PERF-0000") << "counter sweep " << sw->number << ": " << sw->out.read << " of "
                              << sw->out.ports << " ports read, " << sw->out.mads << " MADs, "
                              << sw->out.failed << " failed, " << static_cast<int>(sw->out.ms)
                              << " ms";
  auto done = std::move(sw->done);
  done(sw->out);
}

}  // namespace weft::perf
