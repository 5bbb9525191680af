#include "weft/sm/mad_engine.hpp"

#include <algorithm>

#include "weft/log.hpp"

namespace weft::sm {

MadEngine::MadEngine(Transport& t, EngineOptions o) : t_(t) {
  set_options(o);
}

void MadEngine::set_options(EngineOptions o) {
  opts_ = o;
  opts_.window = std::max(1, opts_.window);
  opts_.retries = std::max(0, opts_.retries);
}

void MadEngine::submit(SmpRequest req, Completion done) {
  ++stats_.submitted;
  if (req.method == kMethodSet) ++stats_.sets;
  pending_.push_back(Entry{std::move(req), std::move(done), 0});
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

std::optional<TimePoint> MadEngine::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.front().first;
}

void MadEngine::complete(Entry& e, Result<Smp> r) {
  Completion done = std::move(e.done);
  e.done = nullptr;
  if (done) done(std::move(r));
}

void MadEngine::send_attempt(Entry e) {
  // ibsim rewrites the upper 32 TID bits with its client id: match on the lower 32.
  uint32_t tid = next_tid_++;
  if (next_tid_ == 0) next_tid_ = 1;
  ++e.attempts;
  // Asked again on each attempt: a retry after a Set that changed the port's key
  // carries the new one.
  MadBuf wire;
  if (e.req.m_key || !keys_) {
    wire = encode_smp(e.req, tid);
  } else {
    SmpRequest keyed = e.req;
    keyed.m_key = keys_->key_for(e.req);
    wire = encode_smp(keyed, tid);
  }
  SendAddr to = e.req.directed ? SendAddr::directed() : SendAddr::lid(e.req.dlid);
  to.response_timeout = opts_.timeout;
  auto r = t_.send(wire, to);
  ++stats_.sent;
  if (!r) {
    WEFT_LOG(Warn, "MAD-0003") << attr_name(e.req.attr_id) << " to " << e.req.target()
                               << ": send failed: " << r.error().message;
    complete(e, std::unexpected(r.error()));
    return;
  }
  deadlines_.emplace_back(t_.clock().now() + opts_.timeout, tid);
  wire_.emplace(tid, std::move(e));
}

Result<void> MadEngine::fill_window() {
  while (!pending_.empty() && wire_.size() < static_cast<size_t>(opts_.window)) {
    Entry e = std::move(pending_.front());
    pending_.pop_front();
    send_attempt(std::move(e));
    if (kick_) continue;  // pushed: a reader drains the transport on its own
    // Take in whatever already came back before sending more: a carrier whose
    // send can block while its receive side is full (umad2sim's socket to ibsim)
    // would otherwise deadlock with a wide window.
    while (true) {
      auto got = t_.receive(Duration{0});
      if (!got) return std::unexpected(got.error());
      if (!*got) break;
      handle(**got);
    }
  }
  return {};
}

void MadEngine::expire(TimePoint now) {
  while (!deadlines_.empty() && deadlines_.front().first <= now) {
    uint32_t tid = deadlines_.front().second;
    deadlines_.pop_front();
    auto it = wire_.find(tid);
    if (it == wire_.end()) continue;  // answered already
    Entry e = std::move(it->second);
    wire_.erase(it);
    if (e.attempts <= retries_of(e.req)) {
      ++stats_.retried;
      WEFT_LOG(Debug, "MAD-0001") << attr_name(e.req.attr_id) << " to " << e.req.target()
                                  << ": no reply, retry " << e.attempts;
      // Retries go ahead of new work so a sweep's tail does not wait behind it.
      pending_.push_front(std::move(e));
      continue;
    }
    ++stats_.timed_out;
    WEFT_LOG(Warn, "MAD-0002") << attr_name(e.req.attr_id) << " mod " << e.req.attr_mod << " to "
                               << e.req.target() << ": no reply after " << e.attempts
                               << " attempts";
    complete(e, fail(Errc::kTimeout, std::string(attr_name(e.req.attr_id)) + " to " +
                                         e.req.target() + ": no reply after " +
                                         std::to_string(e.attempts) + " attempts"));
  }
}

void MadEngine::handle(const InMad& in) {
  if (in.len >= 2 && in.mad[1] == 0x03 && !in.send_timed_out) {  // SubnAdm
    ++stats_.unsolicited;
    if (sa_) sa_(in);
    return;
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
    Entry e = std::move(it->second);
    wire_.erase(it);
    if (e.attempts <= retries_of(e.req)) {
      ++stats_.retried;
      pending_.push_front(std::move(e));
    } else {
      ++stats_.timed_out;
      complete(e, fail(Errc::kTimeout, std::string(attr_name(e.req.attr_id)) + " to " +
                                           e.req.target() + ": no reply"));
    }
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
  std::string what = std::string(attr_name(q.attr_id)) + " to " + q.target();
  if (s.mgmt_class != want_class || s.method != kMethodGetResp || s.attr_id != q.attr_id ||
      s.attr_mod != q.attr_mod) {
    ++stats_.malformed;
    WEFT_LOG(Warn, "MAD-0006") << what << ": reply does not match (class " << int(s.mgmt_class)
                               << " method " << int(s.method) << " attr " << s.attr_id << " mod "
                               << s.attr_mod << ")";
    complete(e, fail(Errc::kBadReply, what + ": reply does not match the request"));
    return;
  }
  if (s.status != 0) {
    ++stats_.error_status;
    WEFT_LOG(Debug, "MAD-0007") << what << ": status " << mad_status_str(s.status);
    complete(e, fail(Errc::kBadReply, what + ": status " + mad_status_str(s.status)));
    return;
  }
  ++stats_.completed_ok;
  if (keys_) keys_->observe(e.req, s);
  complete(e, s);
}

void MadEngine::fail_all(const Error& err) {
  // Completions may submit more (a sweep's next reads); those fail too, round after
  // round, until a round submits nothing.
  while (!wire_.empty() || !pending_.empty()) {
    std::vector<Entry> all;
    all.reserve(wire_.size() + pending_.size());
    for (auto& [tid, e] : wire_) all.push_back(std::move(e));
    wire_.clear();
    deadlines_.clear();
    while (!pending_.empty()) {
      all.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
    for (auto& e : all) complete(e, std::unexpected(err));
  }
}

Result<void> MadEngine::pump(TimePoint until, bool until_idle) {
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
    if (until_idle && idle()) return {};
    if (!until_idle && now >= until) return {};
    TimePoint wake = until_idle ? now + opts_.timeout : until;
    if (!deadlines_.empty()) wake = std::min(wake, deadlines_.front().first);
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
  return pump(TimePoint{0}, true);
}

Result<void> MadEngine::poll_for(Duration d) {
  return pump(t_.clock().now() + d, false);
}

}  // namespace weft::sm
