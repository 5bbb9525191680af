#include "weft/cc/manager.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "weft/log.hpp"

namespace weft::cc {

const char* state_name(DeviceState s) {
  switch (s) {
    case DeviceState::kUnknown:
      return "unknown";
    case DeviceState::kConfigured:
      return "configured";
    case DeviceState::kUnavailable:
      return "unavailable";
    case DeviceState::kLocked:
      return "locked";
    case DeviceState::kFailed:
      return "failed";
  }
  return "?";
}

struct CcManager::LogRead {
  Egress egress;
  int64_t now_unix_s = 0;
  std::function<void(Result<CcLogRead>)> done;
  CcLogRead out;
};

struct CcManager::Pass {
  std::shared_ptr<const fabric::Fabric> fabric;
  std::function<void(Result<CcSweep>)> done;
  CcSweep rep;
  size_t outstanding = 0;         // devices not finished
  std::unique_ptr<LogRead> logs;  // a read of the logs, not a pass
};

namespace {

// "switch 0x... port 0" or "CA port 0x... port 1", as the log names a device.
std::string who(bool is_switch, DeviceKey k) {
  char b[64];
  std::snprintf(b, sizeof b, "%s 0x%016llx port %u", is_switch ? "switch" : "CA port",
                static_cast<unsigned long long>(k.first), unsigned(k.second));
  return b;
}

// CongestionInfo carries 3 bytes; a real agent leaves the rest of the area zero. An
// answer with anything there is no CongestionInfo (ibsim's echo of the request, below).
bool real_congestion_info(const Data& d) {
  return std::all_of(d.begin() + 3, d.end(), [](uint8_t b) { return b == 0; });
}

// The Get carries a marker in those reserved bytes: an agent answers them zero, ibsim
// echoes the request (its SMP handlers never copy their data out for class 0x21), so
// the echo is told apart by bytes that are on the wire, not by whatever follows them
// (umad2sim delivers only a MAD's first 224 bytes; the rest is past its heap buffer).
Data congestion_info_get() {
  Data d{};
  std::fill(d.begin() + 3, d.end(), uint8_t{0xA5});
  return d;
}

// CongestionKeyInfo as compared: its violation counter is the device's to count.
CongestionKeyInfo without_violations(const Data& d) {
  CongestionKeyInfo k = decode_congestion_key_info(d);
  k.violations = 0;
  return k;
}

// Steps run one after another, each only if the one before held; `finish` gets whether
// all did. The steps' completions hold the chain, not the other way round.
struct Chain : std::enable_shared_from_this<Chain> {
  std::vector<std::function<void(std::function<void(bool)>)>> steps;
  std::function<void(bool)> finish;
  size_t i = 0;
  void next() {
    if (i == steps.size()) return finish(true);
    auto self = shared_from_this();
    steps[i++]([self](bool ok) {
      if (!ok) return self->finish(false);
      self->next();
    });
  }
};

}  // namespace

std::string CcSweep::summary() const {
  return std::to_string(configured) + " of " + std::to_string(switches + cas) +
         " devices configured, " + std::to_string(unavailable) + " without CC, " +
         std::to_string(locked) + " locked by another CC_Key, " + std::to_string(failed) +
         " failed; " + std::to_string(mads) + " MADs (" + std::to_string(mads_written) + " Sets)";
}

CcManager::CcManager(mad::MadEngine& eng, CcOptions o) : eng_(eng), opts_(std::move(o)) {}

void CcManager::set_options(CcOptions o) {
  // Nothing to forget: each pass compares what every device holds with the options.
  opts_ = std::move(o);
}

std::map<DeviceKey, CcDeviceView> CcManager::view() const {
  std::map<DeviceKey, CcDeviceView> out;
  for (const auto& [k, d] : dev_) out[k] = d.v;
  return out;
}

void CcManager::send(const std::shared_ptr<Pass>& p, uint8_t method, uint16_t attr, uint32_t mod,
                     const Data& data, DeviceKey k, int retries, Done done) {
  ++p->rep.mads;
  if (method == mad::kMethodSet) ++p->rep.mads_written;
  // The key the device holds, as far as weft knows (to change it, the old one goes
  // along); cc_key where it is not known.
  const Device& d = dev_.at(k);
  const uint64_t key = d.key ? d.key->cc_key : opts_.key;
  mad::GmpRequest req{request(method, attr, mod, key, data), d.lid};
  req.retries = retries;
  req.probe = retries == 0;  // CongestionInfo's first ask: no answer is an answer
  queue_.push_back([this, req = std::move(req), done = std::move(done)]() mutable {
    ++inflight_;
    eng_.submit(std::move(req), [this, done = std::move(done)](Result<mad::Gmp> r) {
      --inflight_;
      done(std::move(r));
      pump();
    });
  });
  pump();
}

void CcManager::pump() {
  while (!queue_.empty() && inflight_ < std::max<uint32_t>(1, opts_.max_outstanding)) {
    auto f = std::move(queue_.front());
    queue_.pop_front();
    f();
  }
}

void CcManager::start(std::shared_ptr<const fabric::Fabric> f,
                      std::function<void(Result<CcSweep>)> done) {
  if (pass_) return done(fail(Errc::kUnsupported, "a congestion-control pass is under way"));
  auto p = std::make_shared<Pass>();
  p->fabric = std::move(f);
  p->done = std::move(done);
  pass_ = p;
  // The fabric's devices: each switch (port 0) and each CA port with a LID.
  std::map<DeviceKey, Device> seen;
  std::vector<DeviceKey> todo;
  const fabric::Fabric& fab = *p->fabric;
  for (const auto& [n, port] : fab.lid_ports()) {
    const auto& nd = fab.node(n);
    if (!nd.is_switch() && nd.type != fabric::NodeType::kCa) continue;
    const DeviceKey k{nd.guid.value, nd.is_switch() ? PortNum(0) : port};
    const Lid lid = nd.ports[nd.is_switch() ? 0 : port].attrs.lid;
    if (!lid.value || seen.count(k)) continue;
    Device d;
    if (auto old = dev_.find(k); old != dev_.end() && old->second.lid == lid)
      d = std::move(old->second);  // what it holds is trusted
    d.lid = lid;
    d.vendor_id = nd.vendor_id;
    d.device_id = nd.device_id;
    d.v.is_switch = nd.is_switch();
    d.ports = nd.num_ports;
    d.packet_ns = nd.is_switch() ? 0 : packet_time_ns(nd.ports[port].attrs);
    d.lmc = nd.is_switch() ? 0 : nd.ports[port].attrs.lmc;
    nd.is_switch() ? ++p->rep.switches : ++p->rep.cas;
    seen.emplace(k, std::move(d));
    todo.push_back(k);
  }
  dev_ = std::move(seen);
  // Congestion on devices that left the fabric is forgotten with them.
  std::set<uint64_t> nodes;
  for (const auto& [k, d] : dev_) nodes.insert(k.first);
  std::erase_if(ports_, [&](const auto& e) { return !nodes.count(e.first.first); });
  p->outstanding = todo.size() + 1;
  for (const DeviceKey& k : todo) visit(p, k);
  release(p);
}

void CcManager::release(const std::shared_ptr<Pass>& p) {
  if (--p->outstanding) return;
  if (p->logs) {
    pass_.reset();
    p->logs->out.mads = p->rep.mads;
    return finish_read(*p->logs);
  }
  CcSweep& r = p->rep;
  for (const auto& [k, d] : dev_) {
    switch (d.v.state) {
      case DeviceState::kConfigured:
        ++r.configured;
        break;
      case DeviceState::kUnavailable:
        ++r.unavailable;
        break;
      case DeviceState::kLocked:
        ++r.locked;
        break;
      case DeviceState::kFailed:
      case DeviceState::kUnknown:
        ++r.failed;
        break;
    }
  }
  r.verified = r.failed == 0 && r.locked == 0;
  pass_.reset();
  last_pass_ = r;
  publish();
  p->done(r);
}

void CcManager::read_logs(Egress egress, int64_t now_unix_s,
                          std::function<void(Result<CcLogRead>)> done) {
  if (pass_) return done(fail(Errc::kUnsupported, "a congestion-control pass is under way"));
  auto p = std::make_shared<Pass>();
  p->logs = std::make_unique<LogRead>();
  p->logs->egress = std::move(egress);
  p->logs->now_unix_s = now_unix_s;
  p->logs->done = std::move(done);
  pass_ = p;
  ++log_reads_;
  for (auto& [k, acc] : ports_) {
    acc.last = 0;
    acc.marking = false;
  }
  std::vector<DeviceKey> todo;
  for (const auto& [k, d] : dev_)
    if (d.v.state == DeviceState::kConfigured) todo.push_back(k);
  p->logs->out.devices = todo.size();
  p->outstanding = 2 * todo.size() + 1;
  for (const DeviceKey& k : todo) {
    check_held(p, k);
    send(p, mad::kMethodGet, kAttrCongestionLog, 0, Data{}, k, -1,
         [this, p, k](Result<mad::Gmp> r) {
           LogRead& lr = *p->logs;
           auto log = r ? decode_congestion_log(log_of(*r))
                        : Result<CongestionLog>(std::unexpected(r.error()));
           const bool sw = dev_.at(k).v.is_switch;
           if (log && log->log_type != (sw ? kLogSwitch : kLogCa))
             log = fail(Errc::kBadReply, "CongestionLog of the other device type");
           Device& d = dev_.at(k);
           if (!log) {
             ++lr.out.failed;
             if (!d.log_failed_told)
               WEFT_LOG(Warn, "CC-0005")
                   << who(sw, k) << ": CongestionLog not read: " << log.error().message
                   << "; said once until it is";
             d.log_failed_told = true;
           } else {
             d.log_failed_told = false;
             ++lr.out.read;
             take_log(lr, k, *log);
           }
           release(p);
         });
  }
  release(p);
}

void CcManager::check_held(const std::shared_ptr<Pass>& p, DeviceKey k) {
  // A device's main setting (SwitchCongestionSetting, CACongestionSetting) read back
  // beside its log: one that no longer holds what weft wrote (a reset, another tool) is
  // forgotten whole, and the next pass reads and rewrites what differs.
  const bool sw = dev_.at(k).v.is_switch;
  const uint16_t attr = sw ? kAttrSwitchCongestionSetting : kAttrCaCongestionSetting;
  send(p, mad::kMethodGet, attr, 0, Data{}, k, -1, [this, p, k, sw, attr](Result<mad::Gmp> r) {
    Device& d = dev_.at(k);
    if (r && d.v.state == DeviceState::kConfigured) {
      const Data data = data_of(*r);
      const bool same = sw ? d.sw && decode_switch_congestion_setting(data) == *d.sw
                           : d.ca && decode_ca_congestion_setting(data) == *d.ca;
      if (!same) {
        // The pass that rewrites it reads it back once more (confirm_held).
        d.confirm = true;
        ++p->logs->out.drifted;
        d.key.reset();
        d.sw.reset();
        d.ca.reset();
        for (auto& b : d.port_blocks) b.reset();
        for (auto& b : d.cct) b.reset();
        failed(k, std::string(attr_name(attr)) +
                      " read back is not what weft wrote (a reset, or another tool)");
      }
    }
    release(p);
  });
}

void CcManager::take_log(LogRead& lr, DeviceKey k, const CongestionLog& log) {
  const bool sw = log.log_type == kLogSwitch;
  const size_t entries = sw ? log.switch_entries.size() : log.ca_entries.size();
  // A device that keeps entries but no count: its entries are its events.
  const uint64_t events = std::max<uint64_t>(log.event_counter, entries);
  lr.out.events += events;
  auto flow = [&](uint16_t slid, uint16_t dlid, uint8_t sl) -> FlowAcc& {
    FlowAcc& f = flows_[{slid, dlid, sl}];
    if (f.seen != log_reads_) {
      f.seen = log_reads_;
      f.last = 0;
      f.marked_at.clear();
      f.qps.clear();
    }
    ++f.last;
    ++f.total;
    return f;
  };
  auto add = [&](PortNum port, uint64_t n, bool marking) {
    PortAcc& a = ports_[{k.first, port}];
    a.is_switch = sw;
    a.last += n;
    a.total += n;
    a.marking = a.marking || marking;
  };
  if (!sw) {
    // A CA port names flows from its own LIDs: an entry from any other is not its own.
    const Device& d = dev_.at(k);
    for (const CaLogEntry& e : log.ca_entries)
      if (e.local_lid >= d.lid.value && unsigned(e.local_lid - d.lid.value) < (1u << d.lmc))
        flow(e.local_lid, e.remote_lid, e.sl).qps.push_back({e.local_qp, e.remote_qp});
    if (events) add(k.second, events, false);
    return;
  }
  // A switch counts its events, not its ports'. Each entry weighs the same: on the port
  // the switch forwards its DLID by, where that port is in the PortMap (or the map is
  // empty); else (an unrouted DLID, or an AR switch that sent it another way) spread over
  // the PortMap's ports; else on the switch as a whole (port 0). With no entries, the
  // events spread the same way. Ports the switch does not have are no ports.
  const unsigned ports = dev_.at(k).ports;
  std::vector<PortNum> mapped;
  for (unsigned p = 1; p <= ports && p < 256; ++p)
    if (port_bit(log.port_map, p)) mapped.push_back(static_cast<PortNum>(p));
  // Weights in units of 1 / |spread|, so that an entry spread over the map stays whole.
  const std::vector<PortNum> spread = mapped.empty() ? std::vector<PortNum>{0} : mapped;
  std::map<PortNum, uint64_t> weight;
  auto place_unknown = [&] {
    for (PortNum p : spread) weight[p] += 1;
  };
  for (const SwitchLogEntry& e : log.switch_entries) {
    const PortNum out = lr.egress ? lr.egress(k.first, e.dlid) : PortNum(0);
    FlowAcc& f = flow(e.slid, e.dlid, e.sl);
    const bool placed = out >= 1 && out <= ports && (mapped.empty() || port_bit(log.port_map, out));
    if (!placed) {
      place_unknown();
      continue;
    }
    weight[out] += spread.size();
    if (std::find(f.marked_at.begin(), f.marked_at.end(), std::pair{k.first, out}) ==
        f.marked_at.end())
      f.marked_at.push_back({k.first, out});
  }
  if (weight.empty() && events) place_unknown();
  uint64_t total = 0;
  for (const auto& [p, w] : weight) total += w;
  uint64_t given = 0;
  for (const auto& [p, w] : weight) {
    const uint64_t n = events * w / total;
    given += n;
    add(p, n, p != 0 && port_bit(log.port_map, p));
  }
  // What rounding left goes to the heaviest ports first, one each.
  std::vector<std::pair<uint64_t, PortNum>> heavy;
  for (const auto& [p, w] : weight) heavy.push_back({w, p});
  std::stable_sort(heavy.begin(), heavy.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (auto it = heavy.begin(); given < events && it != heavy.end(); ++it, ++given)
    add(it->second, 1, false);
  for (PortNum p : mapped)
    if (!weight.count(p)) add(p, 0, true);
}

void CcManager::finish_read(LogRead& lr) {
  if (last_read_unix_s_ && lr.now_unix_s > last_read_unix_s_)
    interval_s_ = double(lr.now_unix_s - last_read_unix_s_);
  last_read_unix_s_ = lr.now_unix_s;
  last_read_devices_ = lr.out.devices;
  last_read_failed_ = lr.out.failed;
  // Flows: the most recent kMaxFlows kept.
  if (flows_.size() > CcView::kMaxFlows) {
    std::vector<std::pair<uint64_t, std::tuple<uint16_t, uint16_t, uint8_t>>> age;
    for (const auto& [key, f] : flows_) age.push_back({f.seen, key});
    std::sort(age.begin(), age.end());
    for (size_t i = 0; i + CcView::kMaxFlows < age.size(); ++i) flows_.erase(age[i].second);
  }
  lr.out.flows = 0;
  for (const auto& [key, f] : flows_) lr.out.flows += f.seen == log_reads_;
  publish();
  for (const PortCongestion& pc : published_->ports)
    if (pc.log_events) lr.out.ports.push_back(pc);
  auto done = std::move(lr.done);
  done(std::move(lr.out));
}

void CcManager::publish() {
  auto v = std::make_shared<CcView>();
  v->devices = view();
  v->pass = last_pass_;
  for (const auto& [k, a] : ports_) {
    if (!a.total && !a.marking) continue;
    v->ports.push_back({k.first, k.second, a.is_switch, a.last, a.total, a.marking});
  }
  std::stable_sort(v->ports.begin(), v->ports.end(),
                   [](const PortCongestion& a, const PortCongestion& b) {
                     return std::pair(a.log_events, a.log_events_total) >
                            std::pair(b.log_events, b.log_events_total);
                   });
  for (const auto& [key, f] : flows_) {
    FlowCongestion fc;
    std::tie(fc.slid, fc.dlid, fc.sl) = key;
    fc.count = f.seen == log_reads_ ? f.last : 0;
    fc.total = f.total;
    if (fc.count) {
      fc.marked_at = f.marked_at;
      fc.qps = f.qps;
    }
    v->flows.push_back(std::move(fc));
  }
  std::stable_sort(v->flows.begin(), v->flows.end(),
                   [](const FlowCongestion& a, const FlowCongestion& b) {
                     return std::pair(a.count, a.total) > std::pair(b.count, b.total);
                   });
  v->log_reads = log_reads_;
  v->last_read_devices = last_read_devices_;
  v->last_read_failed = last_read_failed_;
  v->last_read_unix_s = last_read_unix_s_;
  v->interval_s = interval_s_;
  published_ = std::move(v);
}

void CcManager::unavailable(DeviceKey k, std::string why) {
  Device& d = dev_.at(k);
  d.v.state = DeviceState::kUnavailable;
  d.v.why = std::move(why);
  if (told_.emplace(d.vendor_id, d.device_id, d.v.is_switch).second)
    WEFT_LOG(Info, "CC-0001") << who(d.v.is_switch, k) << " (vendor 0x" << std::hex << d.vendor_id
                              << ", device 0x" << d.device_id << std::dec
                              << "): no congestion control (" << d.v.why
                              << "); never written; said once for its kind";
}

void CcManager::locked(DeviceKey k, std::string why) {
  Device& d = dev_.at(k);
  const bool was = d.v.state == DeviceState::kLocked;
  d.v.state = DeviceState::kLocked;
  d.v.why = std::move(why);
  if (!was)
    WEFT_LOG(Warn, "CC-0003") << who(d.v.is_switch, k) << ": " << d.v.why
                              << "; asked again each sweep";
}

void CcManager::failed(DeviceKey k, std::string why) {
  Device& d = dev_.at(k);
  d.v.state = DeviceState::kFailed;
  d.v.why = std::move(why);
  WEFT_LOG(Warn, "CC-0002") << who(d.v.is_switch, k) << ": " << d.v.why
                            << "; tried again by the next pass";
}

void CcManager::visit(const std::shared_ptr<Pass>& p, DeviceKey k) {
  Device& d = dev_.at(k);
  if (d.v.state == DeviceState::kUnavailable) return release(p);
  if (d.v.state != DeviceState::kUnknown && d.info_read) return key_step(p, k);
  // CongestionInfo first, once, with no retry: a device without CC costs one MAD.
  send(p, mad::kMethodGet, kAttrCongestionInfo, 0, congestion_info_get(), k, 0,
       [this, p, k](Result<mad::Gmp> r) {
         if (!r && r.error().code == Errc::kTimeout && opts_.key) {
           // No CC agent, or one holding another CC_Key (it drops what carries ours):
           // asked again next sweep, in case the other key's lease runs out.
           locked(k,
                  "no answer to CongestionInfo carrying cc_key (no CC agent, or another "
                  "CC_Key): " +
                      r.error().message);
           return release(p);
         }
         if (!r) {  // no answer without a key, or an error status: no CC here
           unavailable(k, "CongestionInfo: " + r.error().message);
           return release(p);
         }
         const Data data = data_of(*r);
         if (!real_congestion_info(data)) {
           unavailable(k, "its CongestionInfo answer is no CongestionInfo (reserved bytes set)");
           return release(p);
         }
         dev_.at(k).v.info = decode_congestion_info(data);
         dev_.at(k).info_read = true;
         key_step(p, k);
       });
}

template <class T>
void CcManager::converge(const std::shared_ptr<Pass>& p, DeviceKey k, uint16_t attr, uint32_t mod,
                         const T& want, Slot<T> slot, T (*decode)(const Data&),
                         std::function<void(bool)> then) {
  // What the device holds is looked up through `slot` at each completion, never kept
  // as a reference across one.
  auto write = [this, p, k, attr, mod, want, slot, decode, then]() {
    if (const auto& held = slot(dev_.at(k)); held && *held == want) return then(true);
    send(p, mad::kMethodSet, attr, mod, encode(want), k, -1,
         [this, k, attr, want, slot, decode, then](Result<mad::Gmp> r) {
           Device& d = dev_.at(k);
           if (!r) {
             slot(d).reset();
             failed(k, std::string(attr_name(attr)) + " Set: " + r.error().message);
             return then(false);
           }
           ++d.v.sets;
           const T got = decode(data_of(*r));
           if (!(got == want)) {
             // Not what was written: no real CC agent behind it.
             slot(d).reset();
             unavailable(k, std::string(attr_name(attr)) +
                                ": a Set's reply does not carry what was written");
             return then(false);
           }
           slot(d) = got;
           then(true);
         });
  };
  if (slot(dev_.at(k))) return write();
  send(p, mad::kMethodGet, attr, mod, Data{}, k, -1,
       [this, k, attr, slot, decode, write, then](Result<mad::Gmp> r) {
         if (!r) {
           failed(k, std::string(attr_name(attr)) + " Get: " + r.error().message);
           return then(false);
         }
         slot(dev_.at(k)) = decode(data_of(*r));
         write();
       });
}

void CcManager::key_step(const std::shared_ptr<Pass>& p, DeviceKey k) {
  if (opts_.key == 0) return settings_step(p, k);
  const CongestionKeyInfo want{opts_.key, opts_.key_protect, opts_.key_lease_period, 0};
  Device& d = dev_.at(k);
  if (d.key && *d.key == want) return settings_step(p, k);
  // Read with our key: a device holding another drops it (a timeout), and is locked.
  send(p, mad::kMethodGet, kAttrCongestionKeyInfo, 0, Data{}, k, -1,
       [this, p, k, want](Result<mad::Gmp> r) {
         if (!r && r.error().code == Errc::kTimeout) {
           locked(k, "no answer to CongestionKeyInfo carrying cc_key (another CC_Key?): " +
                         r.error().message);
           return release(p);
         }
         if (!r) {
           failed(k, "CongestionKeyInfo Get: " + r.error().message);
           return release(p);
         }
         Device& dv = dev_.at(k);
         const CongestionKeyInfo held = decode_congestion_key_info(data_of(*r));
         dv.v.key_violations = held.violations;
         dv.key = without_violations(data_of(*r));
         converge<CongestionKeyInfo>(
             p, k, kAttrCongestionKeyInfo, 0, want,
             [](Device& x) -> std::optional<CongestionKeyInfo>& { return x.key; },
             without_violations,
             [this, p, k](bool ok) {
               if (!ok) return release(p);
               settings_step(p, k);
             });
       });
}

void CcManager::confirm_held(const std::shared_ptr<Pass>& p, DeviceKey k,
                             std::function<void(bool)> next) {
  // After a drift was rewritten: a Get of the main setting must read back what the Set
  // replied. One that does not keeps it its own way or drops it, and weft cannot tell
  // which: it is left alone, said so, rather than taken as configured or rewritten at
  // every read.
  if (!dev_.at(k).confirm) return next(true);
  const bool sw = dev_.at(k).v.is_switch;
  const uint16_t attr = sw ? kAttrSwitchCongestionSetting : kAttrCaCongestionSetting;
  send(p, mad::kMethodGet, attr, 0, Data{}, k, -1, [this, k, sw, attr, next](Result<mad::Gmp> r) {
    Device& d = dev_.at(k);
    if (!r) {
      failed(k, std::string(attr_name(attr)) + " Get: " + r.error().message);
      return next(false);
    }
    d.confirm = false;
    const Data data = data_of(*r);
    const bool same = sw ? d.sw && decode_switch_congestion_setting(data) == *d.sw
                         : d.ca && decode_ca_congestion_setting(data) == *d.ca;
    if (same) return next(true);
    unavailable(k, std::string(attr_name(attr)) +
                       ": rewritten, it reads back otherwise than its Set replied");
    next(false);
  });
}

void CcManager::settings_step(const std::shared_ptr<Pass>& p, DeviceKey k) {
  Device& d = dev_.at(k);
  auto finish = [this, p, k](bool ok) {
    Device& dv = dev_.at(k);
    if (ok) {
      dv.v.state = DeviceState::kConfigured;
      dv.v.why.clear();
    }
    release(p);
  };
  // Every step after the one before, each only if the one before held.
  auto chain = std::make_shared<Chain>();
  chain->finish = finish;
  auto* steps = &chain->steps;
  if (d.v.is_switch) {
    steps->push_back([this, p, k](std::function<void(bool)> next) {
      converge<SwitchCongestionSetting>(
          p, k, kAttrSwitchCongestionSetting, 0, opts_.sw,
          [](Device& x) -> std::optional<SwitchCongestionSetting>& { return x.sw; },
          decode_switch_congestion_setting, next);
    });
    steps->push_back([this, p, k](std::function<void(bool)> next) { confirm_held(p, k, next); });
    const size_t blocks = port_blocks(d.ports);
    if (d.port_blocks.size() != blocks) d.port_blocks.assign(blocks, std::nullopt);
    for (size_t b = 0; b < blocks; ++b) {
      SwitchPortCongestionBlock want{};
      for (size_t i = 0; i < kPortsPerBlock; ++i) {
        const size_t port = b * kPortsPerBlock + i;
        if (port >= 1 && port <= d.ports) want[i] = opts_.port_element();
      }
      steps->push_back([this, p, k, b, want](std::function<void(bool)> next) {
        converge<SwitchPortCongestionBlock>(
            p, k, kAttrSwitchPortCongestionSetting, static_cast<uint32_t>(b), want,
            [b](Device& x) -> std::optional<SwitchPortCongestionBlock>& {
              return x.port_blocks[b];
            },
            decode_switch_port_congestion_block, next);
      });
    }
  } else {
    steps->push_back([this, p, k](std::function<void(bool)> next) {
      converge<CaCongestionSetting>(
          p, k, kAttrCaCongestionSetting, 0, opts_.ca,
          [](Device& x) -> std::optional<CaCongestionSetting>& { return x.ca; },
          decode_ca_congestion_setting, next);
    });
    steps->push_back([this, p, k](std::function<void(bool)> next) { confirm_held(p, k, next); });
    const auto blocks = opts_.cct_blocks(d.v.info.control_table_cap, d.packet_ns);
    if (d.cct.size() != blocks.size()) d.cct.assign(blocks.size(), std::nullopt);
    for (size_t b = 0; b < blocks.size(); ++b)
      steps->push_back([this, p, k, b, want = blocks[b]](std::function<void(bool)> next) {
        converge<CongestionControlTableBlock>(
            p, k, kAttrCongestionControlTable, static_cast<uint32_t>(b), want,
            [b](Device& x) -> std::optional<CongestionControlTableBlock>& { return x.cct[b]; },
            decode_cct_block, next);
      });
  }
  chain->next();
}

}  // namespace weft::cc
