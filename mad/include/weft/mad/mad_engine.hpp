// weft/mad/mad_engine.hpp — the transaction layer: transaction ids, a window of
// outstanding SMPs, timeouts and retries on the transport's clock, and exactly
// one completion per request (reply, error status, timeout, or transport
// failure). Completions may submit more requests.
//
// GMPs (performance queries) go through it too, in a window of their own and only
// after every SMP waiting to go: a counter sweep never holds a sweep's SMPs back,
// and idle() — what a sweep's phases wait for — counts SMPs only.
//
// Two ways to drive it. Pulled (tests, the in-process simulator): run() pumps the
// transport until nothing is queued or on the wire. Pushed (the daemon's event
// loop, mad/asio_driver.hpp): whoever reads the transport hands each MAD to
// deliver(), and service() — called when on_work() asks, when a MAD came, and at
// next_deadline() — sends what the window allows and expires what timed out.
//
//   MadEngine eng(transport, {.window = 16});
//   eng.submit(SmpRequest::get(kAttrNodeInfo, 0, {}), [](Result<Smp> r) { ... });
//   if (auto r = eng.run(); !r) ...   // only a broken transport fails run()
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "weft/mad/transport.hpp"

namespace weft::mad {

struct EngineOptions {
  int window = 64;  // SMPs on the wire at once (OpenSM: max_wire_smps)
  Duration timeout = std::chrono::milliseconds(200);  // per attempt (OpenSM: transaction_timeout)
  int retries = 3;  // extra attempts after the first (transaction_retries)
  // Per attempt of a request marked long (SmpRequest::long_transaction; OpenSM:
  // long_transaction_timeout); a value below `timeout` counts as `timeout`.
  Duration long_timeout = std::chrono::milliseconds(500);
  // An SMP that got no reply to any of its 1 + retries attempts starts another round of
  // as many, each attempt of a later round waiting twice the timeout, up to this many
  // rounds in all (transaction_rounds; 1: OpenSM's behaviour). On a lossy fabric a
  // multi-hop SMP fails a whole round now and then, and a sweep is only as good as its
  // worst SMP. While the fabric shows loss (another SMP was answered only after an
  // unanswered attempt since this one was submitted) it gets twice as many rounds, and
  // four times as many when its target (its directed route or LID) answered an SMP
  // before: the device is there, the fabric loses its MADs (a target that then runs
  // out of rounds is forgotten: it may be gone). A device that never answers on a
  // fabric that loses nothing costs, with 3 rounds, (1 + 2 + 2) x (retries + 1)
  // timeouts. Requests that name their own retries (polls, probes) get one round, and
  // so does every request with rounds 1.
  int rounds = 3;
  // GMPs on the wire at once, apart from the SMPs (perfmgr_max_outstanding_queries).
  int gmp_window = 500;
};

struct EngineStats {
  uint64_t submitted = 0;
  uint64_t sets = 0;          // of them SubnSet requests: what changes a device (or another SM)
  uint64_t sent = 0;          // MADs put on the wire, retries included
  uint64_t retried = 0;       // attempts resent after waiting out the timeout
  uint64_t rounds_again = 0;  // rounds begun again by SMPs that failed a whole one
  uint64_t recovered = 0;     // SMPs answered after at least one unanswered attempt
  // Attempts the carrier reported lost (umad's send timeout: ibsim hands its drops back
  // at once), resent without waiting; they count toward the retries a request has.
  uint64_t lost = 0;
  uint64_t completed_ok = 0;
  uint64_t timed_out = 0;          // requests that failed after every retry
  uint64_t probes_unanswered = 0;  // probes (SmpRequest::probe, GmpRequest::probe) nobody answered
  uint64_t error_status = 0;       // replies with a non-zero MAD status
  uint64_t malformed = 0;          // replies that did not decode or did not match their request
  uint64_t unmatched = 0;          // replies for no outstanding request (late, duplicate)
  uint64_t unsolicited = 0;        // requests and traps addressed to us
  uint64_t unserved = 0;           // MADs of classes the SM does not serve, dropped
  uint64_t peak_queued = 0;        // the most SMPs queued at once, waiting for the window
  // GMPs (counted apart: `sent` is the SMPs, SMInfo's ActCount).
  uint64_t gmps_sent = 0;  // retries included
  uint64_t gmps_ok = 0;
  uint64_t gmps_timed_out = 0;
  uint64_t gmps_error_status = 0;
};

using Completion = std::function<void(Result<Smp>)>;
using GmpCompletion = std::function<void(Result<Gmp>)>;

// Where the M_Key of each SMP comes from (sm/mkey.hpp), and what it learns from the
// answers: asked on every attempt of a request that names no key.
class KeySource {
 public:
  virtual ~KeySource() = default;
  // The key attempt `attempt` (1, 2, ...) of `req` carries.
  virtual uint64_t key_for(const SmpRequest& req, int attempt) const = 0;
  // A reply to `req`; and `req` unanswered after its every attempt, or answered with an
  // error status (either way, what it set is not known from a reply).
  virtual void observe(const SmpRequest& req, const Smp& reply) = 0;
  virtual void unanswered(const SmpRequest&) {}
};
using UnsolicitedHandler = std::function<void(const Smp&, const InMad&)>;

class MadEngine {
 public:
  MadEngine(Transport& t, EngineOptions o);
  void submit(SmpRequest req, Completion done);
  // A source of SMPs drawn as the window empties, not queued all at once (an LFT
  // programmer's millions of blocks would hold hundreds of bytes each while they wait):
  // `next` submits the source's next request or requests; a call that submits nothing
  // ends it. Sources are drawn in order, each to its end, once what is queued runs
  // below a window's worth; the engine is not idle while one is left.
  void feed(std::function<void()> next);
  // A LID-routed GMP to QP1 of `req.dlid`; its reply (a GetResp of the same class,
  // attribute and modifier) completes it.
  void submit(GmpRequest req, GmpCompletion done);
  // Pulled: pumps until idle() (GMPs are served meanwhile, not waited for). Fails only
  // when the transport fails; every request still queued then completes with that error.
  [[nodiscard]] Result<void> run();
  // Pulled: pumps until no SMP and no GMP is left.
  [[nodiscard]] Result<void> run_all();
  // Pulled: pumps for at most `d` of clock time, then returns.
  [[nodiscard]] Result<void> poll_for(Duration d);

  // Pushed: `kick` is called when submit() leaves work for service() (once until
  // service() runs). Setting it hands the transport's receive side to the caller.
  void on_work(std::function<void()> kick);
  // Pushed: while the caller holds the transport's receive side (its reader is kept
  // out), service() may read too, between sends, so that a carrier whose send blocks
  // while its receive side is full (umad2sim's socket to ibsim) cannot deadlock a
  // wide window against a reader that waits for the caller.
  void receive_between_sends(bool on) { receive_between_sends_ = on; }
  // A MAD read from the transport.
  void deliver(const InMad& in);
  // Expires what timed out and sends what the window allows. Fails only when the
  // transport fails (every request then completes with the error).
  [[nodiscard]] Result<void> service();
  // When service() must run next for a timeout; nullopt when nothing is on the wire.
  std::optional<TimePoint> next_deadline() const;
  // Completes every queued and outstanding request with `e`, and whatever their
  // completions submit meanwhile: exactly once each.
  void fail_all(const Error& e);
  void on_unsolicited(UnsolicitedHandler h) { unsolicited_ = std::move(h); }
  // MADs of the SubnAdm class (SA requests) go here, undecoded.
  void on_sa(std::function<void(const InMad&)> h) { sa_ = std::move(h); }
  const EngineStats& stats() const { return stats_; }
  const EngineOptions& options() const { return opts_; }
  // New window, timeout and retries, for what is submitted from now on.
  void set_options(EngineOptions o);
  Transport& transport() { return t_; }
  // The M_Key of every request that names none (nullptr: 0).
  void set_keys(KeySource* k) { keys_ = k; }
  // No SMP queued or on the wire (GMPs may be).
  bool idle() const { return pending_.empty() && wire_.empty() && feeds_.empty(); }
  bool gmps_idle() const { return gpending_.empty() && gwire_.empty(); }

 private:
  template <class Req>
  int retries_of(const Req& r) const {
    return r.retries >= 0 ? r.retries : opts_.retries;
  }
  // Attempts a request gets in all (EngineOptions::rounds); GMPs and requests that name
  // their retries get one round.
  template <class E>
  int attempts_of(const E& e) const {
    const int per_round = retries_of(e.req) + 1;
    if constexpr (std::is_same_v<E, EntryOf<SmpRequest, Completion>>) {
      if (e.req.retries < 0 && !e.req.probe && opts_.rounds > 1) {
        if (stats_.recovered == e.recovered_before) return per_round * opts_.rounds;
        return per_round * opts_.rounds * (answered_.count(target_key(e.req)) ? 4 : 2);
      }
    }
    return per_round;
  }
  // Where an SMP goes (its directed route, or its LID), as a key of answered_.
  static uint64_t target_key(const SmpRequest& r);
  // Targets that answered an SMP (bounded: cleared when it holds 1 << 20): on a lossy
  // fabric, an SMP to a device that answers others gets more rounds than one to a
  // device that may be dead; a target whose request ran out of rounds leaves it.
  std::unordered_set<uint64_t> answered_;
  std::set<uint8_t> unserved_seen_;  // classes dropped so far (logged once each)
  template <class Req, class Done>
  struct EntryOf {
    Req req;
    Done done;
    int attempts = 0;
    uint64_t recovered_before = 0;  // EngineStats::recovered when it was submitted
  };
  using Entry = EntryOf<SmpRequest, Completion>;
  using GmpEntry = EntryOf<GmpRequest, GmpCompletion>;
  enum class Until { kIdle, kQuiet, kTime };
  [[nodiscard]] Result<void> pump(TimePoint until, Until what);
  [[nodiscard]] Result<void> fill_window();
  [[nodiscard]] Result<void> drain();
  void send_attempt(Entry e);
  void send_attempt(GmpEntry e);
  void expire(TimePoint now);
  // A request the carrier or the clock gave up on: retried, or failed with a timeout.
  template <class E>
  void no_reply(E e, std::deque<E>& pending, bool logged);
  void handle(const InMad& in);
  void handle_gmp(const InMad& in);
  template <class E, class R>
  void complete(E& e, R r) {
    auto done = std::move(e.done);
    e.done = nullptr;
    if (done) done(std::move(r));
  }

  Transport& t_;
  EngineOptions opts_;
  EngineStats stats_;
  UnsolicitedHandler unsolicited_;
  std::function<void(const InMad&)> sa_;
  std::deque<Entry> pending_;
  std::deque<std::function<void()>> feeds_;  // see feed()
  // Draws from the sources until `want` SMPs are queued or none is left.
  void top_up(size_t want);
  std::unordered_map<uint32_t, Entry> wire_;  // keyed by the TID's low 32 bits
  std::deque<GmpEntry> gpending_;
  std::unordered_map<uint32_t, GmpEntry> gwire_;
  // Each attempt's deadline and TID (answered ones are skipped when they come up), in a
  // FIFO per timeout: the clock only moves forward, so each FIFO is in deadline order and
  // the soonest deadline is at one of their fronts. (Attempts of later rounds wait longer,
  // so one FIFO would not be in order; a heap cost more than the rest of the engine at
  // millions of SMPs.)
  class Deadlines {
   public:
    void push(TimePoint at, Duration timeout, uint32_t tid);
    std::optional<TimePoint> soonest() const;
    // The TID of the soonest deadline at or before `now`, taken off; nullopt: none is due.
    std::optional<uint32_t> take_due(TimePoint now);
    void clear() { fifos_.clear(); }

   private:
    using Deadline = std::pair<TimePoint, uint32_t>;
    // The FIFO whose front is soonest; fifos_.size() when every one is empty.
    size_t soonest_fifo() const;
    std::vector<std::pair<Duration, std::deque<Deadline>>> fifos_;
  };
  Deadlines deadlines_;
  uint32_t take_tid();
  uint32_t next_tid_ = 0x10000;
  std::function<void()> kick_;  // set: pushed mode
  bool receive_between_sends_ = false;
  KeySource* keys_ = nullptr;
  bool kicked_ = false;
};

// Feeds `items` to `eng` one at a time as its window empties (MadEngine::feed):
// `one(item)` submits the SMPs of one item, if any; each item is given exactly once.
template <class T, class F>
void feed_each(MadEngine& eng, std::vector<T> items, F one) {
  if (items.empty()) return;
  auto left = std::make_shared<std::vector<T>>(std::move(items));
  // An item may submit nothing (a table already known): the next is given then.
  eng.feed([&eng, left, one, i = size_t{0}]() mutable {
    const uint64_t before = eng.stats().submitted;
    while (i < left->size() && eng.stats().submitted == before) one((*left)[i++]);
  });
}

}  // namespace weft::mad
