#include "weft/mad/mad_engine.hpp"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "weft/log.hpp"

namespace weft::mad {
namespace {

std::string what(const SmpRequest& r) {
  return std::string(attr_name(r.attr_id)) + " to " + r.target();
}

std::string what(const GmpRequest& r) {
  const char* name = nullptr;
  if (r.mad.mgmt_class == 0x04) {  // PerfMgt (perf/counters.hpp)
    if (r.mad.attr_id == 0x0001) name = "PerfMgt ClassPortInfo";
    if (r.mad.attr_id == 0x0012) name = "PortCounters";
    if (r.mad.attr_id == 0x001D) name = "PortCountersExtended";
  }
  char buf[48];
  if (!name)
    std::snprintf(buf, sizeof buf, "class 0x%02x attribute 0x%04x", r.mad.mgmt_class,
                  r.mad.attr_id);
  return std::string(name ? name : buf) + " to " + r.target();
}

uint32_t mod_of(const SmpRequest& r) {
  return r.attr_mod;
}
uint32_t mod_of(const GmpRequest& r) {
  return r.mad.attr_mod;
}

}  // namespace

MadEngine::MadEngine(Transport& t, EngineOptions o) : t_(t) {
  set_options(o);
}

void MadEngine::set_options(EngineOptions o) {
  opts_ = o;
  opts_.window = std::max(1, opts_.window);
  opts_.retries = std::max(0, opts_.retries);
  opts_.rounds = std::max(1, opts_.rounds);
  opts_.gmp_window = std::max(1, opts_.gmp_window);
}

void MadEngine::submit(SmpRequest req, Completion done) {
  ++stats_.submitted;
  if (req.method == kMethodSet) ++stats_.sets;
  pending_.push_back(Entry{std::move(req), std::move(done), 0, stats_.recovered});
  stats_.peak_queued = std::max<uint64_t>(stats_.peak_queued, pending_.size());
  if (kick_ && !kicked_) {
    kicked_ = true;
    kick_();
  }
}

void MadEngine::feed(std::function<void()> next) {
  feeds_.push_back(std::move(next));
  if (kick_ && !kicked_) {
    kicked_ = true;
    kick_();
  }
}

void MadEngine::top_up(size_t want) {
  while (pending_.size() < want && !feeds_.empty()) {
    const size_t before = pending_.size();
    feeds_.front()();
    if (pending_.size() == before) feeds_.pop_front();
  }
}

void MadEngine::submit(GmpRequest req, GmpCompletion done) {
  gpending_.push_back(GmpEntry{std::move(req), std::move(done), 0});
  if (kick_ && !kicked_) {
    kicked_ = true;
    kick_();
  }
}

void MadEngine::on_work(std::function<void()> kick) {
  kick_ = std::move(kick);
  kicked_ = false;
}

void MadEngine::deliver(const InMad& in) {
  handle(in);
}

Result<void> MadEngine::service() {
  kicked_ = false;
  auto filled = fill_window();
  if (filled) {
    expire(t_.clock().now());
    filled = fill_window();
  }
  if (!filled) {
    WEFT_LOG(Error, "MAD-0008") << "transport failed: " << filled.error().message;
    fail_all(filled.error());
  }
  return filled;
}

void MadEngine::Deadlines::push(TimePoint at, Duration timeout, uint32_t tid) {
  for (auto& [t, fifo] : fifos_)
    if (t == timeout) {
      fifo.emplace_back(at, tid);
      return;
    }
  fifos_.emplace_back(timeout, std::deque<Deadline>{{at, tid}});
}

size_t MadEngine::Deadlines::soonest_fifo() const {
  size_t best = fifos_.size();
  for (size_t i = 0; i < fifos_.size(); ++i) {
    const auto& fifo = fifos_[i].second;
    if (!fifo.empty() &&
        (best == fifos_.size() || fifo.front().first < fifos_[best].second.front().first))
      best = i;
  }
  return best;
}

std::optional<TimePoint> MadEngine::Deadlines::soonest() const {
  const size_t i = soonest_fifo();
  if (i == fifos_.size()) return std::nullopt;
  return fifos_[i].second.front().first;
}

std::optional<uint32_t> MadEngine::Deadlines::take_due(TimePoint now) {
  const size_t i = soonest_fifo();
  if (i == fifos_.size() || fifos_[i].second.front().first > now) return std::nullopt;
  auto& fifo = fifos_[i].second;
  const uint32_t tid = fifo.front().second;
  fifo.pop_front();
  return tid;
}

std::optional<TimePoint> MadEngine::next_deadline() const {
  return deadlines_.soonest();
}

uint64_t MadEngine::target_key(const SmpRequest& r) {
  if (!r.directed) return (uint64_t{1} << 63) | r.dlid.value;
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the hops and the ports
  h = (h ^ r.path.hops) * 0x100000001b3ull;
  for (int i = 1; i <= r.path.hops; ++i) h = (h ^ r.path.ports[i]) * 0x100000001b3ull;
  return h & ~(uint64_t{1} << 63);
}

uint32_t MadEngine::take_tid() {
  // ibsim rewrites the upper 32 TID bits with its client id: match on the lower 32.
  uint32_t tid = next_tid_++;
  if (next_tid_ == 0) next_tid_ = 1;
  return tid;
}

void MadEngine::send_attempt(Entry e) {
  const uint32_t tid = take_tid();
  ++e.attempts;
  // Asked again on each attempt: a retry after a Set that changed the port's key
  // carries the new one.
  MadBuf wire;
  if (e.req.m_key || !keys_) {
    wire = encode_smp(e.req, tid);
  } else {
    SmpRequest keyed = e.req;
    keyed.m_key = keys_->key_for(e.req, e.attempts);
    wire = encode_smp(keyed, tid);
  }
  SendAddr to = e.req.directed ? SendAddr::directed() : SendAddr::lid(e.req.dlid);
  // An attempt of a later round (EngineOptions::rounds) waits twice as long.
  const int per_round = retries_of(e.req) + 1;
  if (e.attempts > per_round && (e.attempts - 1) % per_round == 0) ++stats_.rounds_again;
  const Duration base =
      e.req.long_transaction ? std::max(opts_.timeout, opts_.long_timeout) : opts_.timeout;
  const Duration timeout = e.attempts > per_round ? 2 * base : base;
  to.response_timeout = timeout;
  auto r = t_.send(wire, to);
  ++stats_.sent;
  if (!r) {
    WEFT_LOG(Warn, "MAD-0003") << attr_name(e.req.attr_id) << " to " << e.req.target()
                               << ": send failed: " << r.error().message;
    complete(e, std::unexpected(r.error()));
    return;
  }
  deadlines_.push(t_.clock().now() + timeout, timeout, tid);
  wire_.emplace(tid, std::move(e));
}

void MadEngine::send_attempt(GmpEntry e) {
  const uint32_t tid = take_tid();
  ++e.attempts;
  Gmp g = e.req.mad;
  g.tid = tid;
  SendAddr to = SendAddr::gsi(e.req.dlid, e.req.qpn, e.req.pkey_index, e.req.sl);
  to.response_timeout = opts_.timeout;
  auto r = t_.send(encode_gmp(g), to);
  ++stats_.gmps_sent;
  if (!r) {
    WEFT_LOG(Warn, "MAD-0003") << what(e.req) << ": send failed: " << r.error().message;
    complete(e, Result<Gmp>(std::unexpected(r.error())));
    return;
  }
  deadlines_.push(t_.clock().now() + opts_.timeout, opts_.timeout, tid);
  gwire_.emplace(tid, std::move(e));
}

Result<void> MadEngine::drain() {
  // Take in whatever already came back before sending more: a carrier whose send can
  // block while its receive side is full (umad2sim's socket to ibsim) would otherwise
  // deadlock with a wide window. Pushed, a reader drains the transport on its own,
  // unless the caller holds it off (receive_between_sends).
  if (kick_ && !receive_between_sends_) return {};
  while (true) {
    auto got = t_.receive(Duration{0});
    if (!got) return std::unexpected(got.error());
    if (!*got) return {};
    handle(**got);
  }
}

Result<void> MadEngine::fill_window() {
  // SMPs first: a GMP goes only when no SMP waits for the window.
  const auto window = static_cast<size_t>(opts_.window);
  while (wire_.size() < window) {
    top_up(window);
    if (pending_.empty()) break;
    Entry e = std::move(pending_.front());
    pending_.pop_front();
    send_attempt(std::move(e));
    if (auto r = drain(); !r) return r;
  }
  while (pending_.empty() && !gpending_.empty() &&
         gwire_.size() < static_cast<size_t>(opts_.gmp_window)) {
    GmpEntry e = std::move(gpending_.front());
    gpending_.pop_front();
    send_attempt(std::move(e));
    if (auto r = drain(); !r) return r;
  }
  return {};
}

template <class E>
void MadEngine::no_reply(E e, std::deque<E>& pending, bool logged) {
  if (e.attempts < attempts_of(e)) {
    if (logged) {
      ++stats_.retried;
      WEFT_LOG(Debug, "MAD-0001") << what(e.req) << ": no reply, retry " << e.attempts;
    }
    // Retries go ahead of new work so a sweep's tail does not wait behind it.
    pending.push_front(std::move(e));
    if constexpr (std::is_same_v<E, Entry>)
      stats_.peak_queued = std::max<uint64_t>(stats_.peak_queued, pending.size());
    return;
  }
  const bool probe = e.req.probe;
  if constexpr (std::is_same_v<E, Entry>) {
    ++(probe ? stats_.probes_unanswered : stats_.timed_out);
    answered_.erase(target_key(e.req));  // it may be gone
    if (keys_) keys_->unanswered(e.req);
  } else
    ++(probe ? stats_.probes_unanswered : stats_.gmps_timed_out);
  if (logged && !probe)
    WEFT_LOG(Warn, "MAD-0002") << what(e.req) << " (modifier " << mod_of(e.req)
                               << "): no reply after " << e.attempts << " attempts";
  complete(
      e, fail(Errc::kTimeout,
              what(e.req) + ": no reply" +
                  (logged ? " after " + std::to_string(e.attempts) + " attempts" : std::string())));
}

void MadEngine::expire(TimePoint now) {
  while (const auto due = deadlines_.take_due(now)) {
    const uint32_t tid = *due;
    auto it = wire_.find(tid);
    if (it != wire_.end()) {
      Entry e = std::move(it->second);
      wire_.erase(it);
      no_reply(std::move(e), pending_, true);
      continue;
    }
    auto g = gwire_.find(tid);
    if (g == gwire_.end()) continue;  // answered already
    GmpEntry e = std::move(g->second);
    gwire_.erase(g);
    no_reply(std::move(e), gpending_, true);
  }
}

void MadEngine::handle(const InMad& in) {
  // The SA's Reports are GMPs of the engine's: their ReportResponses, and the carrier
  // giving up on one, complete them.
  if (in.len >= 4 && in.mad[1] == 0x03 && (in.mad[3] == kMethodReportResp || in.send_timed_out))
    return handle_gmp(in);
  if (in.len >= 2 && in.mad[1] == 0x03) {  // SubnAdm
    ++stats_.unsolicited;
    if (sa_) sa_(in);
    return;
  }
  if (in.len >= 4 && in.mad[1] != kClassSmiLid && in.mad[1] != kClassSmiDirect &&
      ((in.mad[3] & 0x80) || in.send_timed_out) && in.mad[1] != 0x03) {
    return handle_gmp(in);  // a reply to one of ours, or our own that timed out
  }
  if (in.len >= 2 && in.mad[1] != kClassSmiLid && in.mad[1] != kClassSmiDirect &&
      !in.send_timed_out) {
    // A class the SM does not serve (performance management, CM, vendor...): dropped
    // and counted, never answered, never taken for a reply of ours.
    ++stats_.unserved;
    if (unserved_seen_.insert(in.mad[1]).second)
      WEFT_LOG(Info, "MAD-0008") << "dropping MADs of management class 0x" << std::hex
                                 << int(in.mad[1]) << std::dec
                                 << " (not served by the SM; counted)";
    return;
  }
  auto dec = decode_smp(in.mad.data(), in.len);
  if (!dec) {
    ++stats_.malformed;
    WEFT_LOG(Warn, "MAD-0004") << "dropped a malformed MAD: " << dec.error().message;
    return;
  }
  const Smp& s = *dec;
  const uint32_t tid = static_cast<uint32_t>(s.tid);
  if (in.send_timed_out) {
    // The carrier gave up on one of ours: treat as an immediate timeout.
    auto it = wire_.find(tid);
    if (it == wire_.end()) return;
    if (!it->second.req.probe) ++stats_.lost;
    Entry e = std::move(it->second);
    wire_.erase(it);
    no_reply(std::move(e), pending_, false);
    return;
  }
  if (!s.is_response()) {
    ++stats_.unsolicited;
    if (unsolicited_) unsolicited_(s, in);
    return;
  }
  auto it = wire_.find(tid);
  if (it == wire_.end()) {
    ++stats_.unmatched;
    WEFT_LOG(Debug, "MAD-0005") << "reply with TID " << tid << " matches no request (late?)";
    return;
  }
  Entry e = std::move(it->second);
  wire_.erase(it);
  const SmpRequest& q = e.req;
  const uint8_t want_class = q.directed ? kClassSmiDirect : kClassSmiLid;
  // Named only for an error: building the name of every reply cost more than the rest.
  if (s.mgmt_class != want_class || s.method != kMethodGetResp || s.attr_id != q.attr_id ||
      s.attr_mod != q.attr_mod) {
    ++stats_.malformed;
    const std::string w = what(q);
    WEFT_LOG(Warn, "MAD-0006") << w << ": reply does not match (class " << int(s.mgmt_class)
                               << " method " << int(s.method) << " attr " << s.attr_id << " mod "
                               << s.attr_mod << ")";
    complete(e, fail(Errc::kBadReply, w + ": reply does not match the request"));
    return;
  }
  if (s.status != 0) {
    ++stats_.error_status;
    // An earlier attempt may have been taken with its reply lost (a Set that changed the
    // port's M_Key, then refused as a repeat): what the port holds is not settled.
    if (keys_) keys_->unanswered(e.req);
    const std::string w = what(q);
    WEFT_LOG(Debug, "MAD-0007") << w << ": status " << mad_status_str(s.status);
    complete(e, fail(Errc::kBadReply, w + ": status " + mad_status_str(s.status)));
    return;
  }
  ++stats_.completed_ok;
  if (e.attempts > 1) ++stats_.recovered;
  if (answered_.size() >= (1u << 20)) answered_.clear();
  answered_.insert(target_key(e.req));
  if (keys_) keys_->observe(e.req, s);
  complete(e, s);
}

void MadEngine::handle_gmp(const InMad& in) {
  auto dec = decode_gmp(in.mad.data(), in.len, true);
  if (!dec) {
    ++stats_.malformed;
    WEFT_LOG(Warn, "MAD-0004") << "dropped a malformed MAD: " << dec.error().message;
    return;
  }
  const Gmp& g = *dec;
  auto it = gwire_.find(static_cast<uint32_t>(g.tid));
  if (it == gwire_.end()) {
    if (!in.send_timed_out) ++stats_.unmatched;
    return;
  }
  GmpEntry e = std::move(it->second);
  gwire_.erase(it);
  if (in.send_timed_out) {
    ++stats_.lost;
    return no_reply(std::move(e), gpending_, false);
  }
  const Gmp& q = e.req.mad;
  const uint8_t answer = q.method == kMethodReport ? kMethodReportResp : kMethodGetResp;
  if (g.mgmt_class != q.mgmt_class || g.method != answer || g.attr_id != q.attr_id ||
      g.attr_mod != q.attr_mod) {
    ++stats_.malformed;
    const std::string w = what(e.req);
    WEFT_LOG(Warn, "MAD-0006") << w << ": reply does not match (class " << int(g.mgmt_class)
                               << " method " << int(g.method) << " attr " << g.attr_id << " mod "
                               << g.attr_mod << ")";
    complete(e, Result<Gmp>(fail(Errc::kBadReply, w + ": reply does not match the request")));
    return;
  }
  if (g.status != 0) {
    ++stats_.gmps_error_status;
    const std::string w = what(e.req);
    WEFT_LOG(Debug, "MAD-0007") << w << ": status " << mad_status_str(g.status);
    complete(e, Result<Gmp>(fail(Errc::kBadReply, w + ": status " + mad_status_str(g.status))));
    return;
  }
  ++stats_.gmps_ok;
  complete(e, Result<Gmp>(g));
}

void MadEngine::fail_all(const Error& err) {
  // Completions may submit more (a sweep's next reads); those fail too, round after
  // round, until a round submits nothing.
  auto take = [](auto& wire, auto& pending) {
    std::vector<typename std::decay_t<decltype(pending)>::value_type> all;
    all.reserve(wire.size() + pending.size());
    for (auto& [tid, e] : wire) all.push_back(std::move(e));
    wire.clear();
    while (!pending.empty()) {
      all.push_back(std::move(pending.front()));
      pending.pop_front();
    }
    return all;
  };
  while (!wire_.empty() || !pending_.empty() || !feeds_.empty() || !gwire_.empty() ||
         !gpending_.empty()) {
    top_up(static_cast<size_t>(opts_.window));  // a window at a time: memory stays flat
    auto smps = take(wire_, pending_);
    auto gmps = take(gwire_, gpending_);
    deadlines_.clear();
    for (auto& e : smps) complete(e, Result<Smp>(std::unexpected(err)));
    for (auto& e : gmps) complete(e, Result<Gmp>(std::unexpected(err)));
  }
}

Result<void> MadEngine::pump(TimePoint until, Until until_what) {
  const bool until_idle = until_what != Until::kTime;
  Clock& clock = t_.clock();
  while (true) {
    auto filled = fill_window();
    const TimePoint now = clock.now();
    expire(now);
    if (filled) filled = fill_window();
    if (!filled) {
      WEFT_LOG(Error, "MAD-0008") << "transport failed: " << filled.error().message;
      fail_all(filled.error());
      return filled;
    }
    if (until_what == Until::kIdle && idle()) return {};
    if (until_what == Until::kQuiet && idle() && gmps_idle()) return {};
    if (!until_idle && now >= until) return {};
    TimePoint wake = until_idle ? now + opts_.timeout : until;
    if (const auto soonest = deadlines_.soonest()) wake = std::min(wake, *soonest);
    auto got = t_.receive(std::max(Duration{0}, wake - now));
    if (!got) {
      WEFT_LOG(Error, "MAD-0008") << "transport failed: " << got.error().message;
      fail_all(got.error());
      return std::unexpected(got.error());
    }
    if (*got) handle(**got);
  }
}

Result<void> MadEngine::run() {
  return pump(TimePoint{0}, Until::kIdle);
}

Result<void> MadEngine::run_all() {
  return pump(TimePoint{0}, Until::kQuiet);
}

Result<void> MadEngine::poll_for(Duration d) {
  return pump(t_.clock().now() + d, Until::kTime);
}

}  // namespace weft::mad
