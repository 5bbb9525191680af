#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "weft/config/options.hpp"
#include "weft/mad/from_options.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"

using namespace weft;
using namespace weft::mad;
using namespace weft::simulator;

namespace {

// A transport that records what is sent and answers nothing unless told to.
class ScriptedTransport final : public Transport {
 public:
  Result<void> send(const MadBuf& mad, const SendAddr&) override {
    sent.push_back(mad);
    max_outstanding = std::max(max_outstanding, ++outstanding);
    if (fail_sends) return fail(Errc::kIo, "link gone");
    if (lose > 0) {
      // Lost on the way: the carrier hands the request back with its send timed out,
      // as umad does (and ibsim at once, for a drop).
      --lose;
      InMad in;
      in.mad = mad;
      in.len = kMadSize;
      in.send_timed_out = true;
      queue.push_back(in);
      return {};
    }
    if (answer && !dead_ports.count(decode_smp(mad.data(), kMadSize)->path.ports[1])) {
      auto s = decode_smp(mad.data(), kMadSize);
      Smp r = *s;
      r.method = kMethodGetResp;
      r.direction = true;
      r.status = status;
      if (wrong_attr) r.attr_id = kAttrSwitchInfo;
      InMad in;
      in.mad = encode_smp(r);
      in.len = truncate ? 40 : kMadSize;
      queue.push_back(in);
    }
    return {};
  }
  Result<void> send_long(std::span<const uint8_t>, const SendAddr&) override { return {}; }
  Result<std::optional<InMad>> receive(Duration max_wait) override {
    if (fail_receive) return fail(Errc::kIo, "device removed");
    if (!queue.empty()) {
      InMad m = queue.front();
      queue.erase(queue.begin());
      --outstanding;
      clock_.advance(std::chrono::microseconds(1));
      return std::optional<InMad>(m);
    }
    clock_.advance(max_wait);
    outstanding = 0;  // whatever was out has timed out by now
    return std::optional<InMad>{};
  }
  Clock& clock() override { return clock_; }
  LocalPort local_port() const override { return {}; }
  Result<void> set_is_sm(bool) override { return {}; }

  ManualClock clock_;
  std::vector<MadBuf> sent;
  std::vector<InMad> queue;
  bool answer = true, wrong_attr = false, truncate = false, fail_sends = false,
       fail_receive = false;
  uint16_t status = 0;
  int outstanding = 0, max_outstanding = 0;
  int lose = 0;                  // attempts to hand back as lost
  std::set<uint8_t> dead_ports;  // DR requests out of these ports are never answered
};

}  // namespace

TEST(MadEngine, CompletesEachRequestExactlyOnce) {
  ScriptedTransport t;
  MadEngine eng(t, {.window = 4, .timeout = std::chrono::milliseconds(100), .retries = 2});
  std::vector<int> calls(50, 0);
  for (int i = 0; i < 50; ++i)
    eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}.extended(static_cast<uint8_t>(i + 1))),
               [&calls, i](Result<Smp> r) {
                 EXPECT_TRUE(r);
                 ++calls[i];
               });
  ASSERT_TRUE(eng.run());
  for (int c : calls) EXPECT_EQ(c, 1);
  EXPECT_EQ(eng.stats().completed_ok, 50u);
  EXPECT_EQ(eng.stats().sent, 50u);
  EXPECT_LE(t.max_outstanding, 4);
}

// The key source hears the attempt number of each SMP it keys, every reply, and every
// request whose outcome no reply settles: unanswered after its every attempt, or
// answered with an error status (a key-changing Set refused as a repeat after its first
// attempt was taken with the reply lost). MKeyBook keys such a port both ways then.
TEST(MadEngine, TheKeySourceHearsAttemptsRepliesAndUnsettledRequests) {
  struct Keys final : KeySource {
    std::vector<int> attempts;
    int observed = 0, unsettled = 0;
    uint64_t key_for(const SmpRequest&, int attempt) const override {
      const_cast<Keys*>(this)->attempts.push_back(attempt);
      return 0x42;
    }
    void observe(const SmpRequest&, const Smp&) override { ++observed; }
    void unanswered(const SmpRequest&) override { ++unsettled; }
  } keys;
  ScriptedTransport t;
  MadEngine eng(
      t, {.window = 4, .timeout = std::chrono::milliseconds(100), .retries = 2, .rounds = 1});
  eng.set_keys(&keys);
  const auto set = SmpRequest::set(kAttrPortInfo, 0, DrPath{}.extended(1), SmpData{});
  eng.submit(set, [](Result<Smp> r) { EXPECT_TRUE(r); });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(keys.observed, 1);
  EXPECT_EQ(keys.unsettled, 0);
  EXPECT_EQ(decode_smp(t.sent.back().data(), kMadSize)->m_key, 0x42u);
  t.status = 0x1C;
  eng.submit(set, [](Result<Smp> r) { EXPECT_FALSE(r); });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(keys.observed, 1);
  EXPECT_EQ(keys.unsettled, 1) << "an error status settles nothing";
  t.answer = false;
  keys.attempts.clear();
  eng.submit(set, [](Result<Smp> r) { EXPECT_FALSE(r); });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(keys.unsettled, 2);
  EXPECT_EQ(keys.attempts, (std::vector<int>{1, 2, 3}));
}

TEST(MadEngine, TimesOutAfterRetriesOnTheInjectedClock) {
  ScriptedTransport t;
  t.answer = false;
  MadEngine eng(
      t, {.window = 8, .timeout = std::chrono::milliseconds(200), .retries = 3, .rounds = 1});
  int calls = 0;
  Errc code{};
  eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) {
    ++calls;
    ASSERT_FALSE(r);
    code = r.error().code;
  });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(code, Errc::kTimeout);
  EXPECT_EQ(t.sent.size(), 4u);  // first attempt + 3 retries
  EXPECT_EQ(eng.stats().timed_out, 1u);
  EXPECT_EQ(eng.stats().retried, 3u);
  // Each attempt waited its full timeout on the manual clock, no real time passed.
  EXPECT_GE(t.clock_.now(), std::chrono::milliseconds(800));
  // Every attempt carried a fresh transaction id.
  std::set<uint32_t> tids;
  for (const auto& m : t.sent)
    tids.insert(static_cast<uint32_t>(decode_smp(m.data(), kMadSize)->tid));
  EXPECT_EQ(tids.size(), 4u);
}

// What the carrier reports lost is resent at once (no timeout waited for), counted as
// lost and not as a retry after a timeout, and still bounded by the retries.
TEST(MadEngine, LossesTheCarrierReportsAreResentAtOnceAndCounted) {
  ScriptedTransport t;
  t.lose = 3;
  MadEngine eng(
      t, {.window = 4, .timeout = std::chrono::milliseconds(500), .retries = 3, .rounds = 1});
  int ok = 0;
  for (int i = 0; i < 10; ++i)
    eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}.extended(static_cast<uint8_t>(i + 1))),
               [&](Result<Smp> r) { ok += r.has_value(); });
  const auto t0 = t.clock_.now();
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(ok, 10);
  EXPECT_EQ(eng.stats().lost, 3u);
  EXPECT_EQ(eng.stats().retried, 0u);
  EXPECT_EQ(eng.stats().sent, 13u);
  EXPECT_LT(t.clock_.now() - t0, std::chrono::milliseconds(500)) << "a timeout was waited out";

  // Lost on every attempt: the request fails after its retries, each loss counted.
  ScriptedTransport always;
  always.lose = 100;
  MadEngine eng2(
      always, {.window = 4, .timeout = std::chrono::milliseconds(500), .retries = 2, .rounds = 1});
  int failed = 0;
  eng2.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::kTimeout);
    ++failed;
  });
  ASSERT_TRUE(eng2.run());
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(eng2.stats().lost, 3u);
  EXPECT_EQ(eng2.stats().timed_out, 1u);
}

// An SMP that fails a whole round (1 + retries attempts) starts another, each attempt of
// a later round waiting twice the timeout, up to `rounds` rounds; one that names its own
// retries (a poll) gets one round. On a lossy fabric a request lost on more attempts
// than one round has still gets through, and more rounds are given while the fabric
// shows loss.
TEST(MadEngine, ARequestThatFailsAWholeRoundStartsAnotherWithLongerTimeouts) {
  ScriptedTransport t;
  t.answer = false;
  MadEngine eng(
      t, {.window = 8, .timeout = std::chrono::milliseconds(200), .retries = 3, .rounds = 3});
  int calls = 0;
  std::string msg;
  eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) {
    ++calls;
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::kTimeout);
    msg = r.error().message;
  });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(t.sent.size(), 12u);  // three rounds of four
  EXPECT_EQ(eng.stats().rounds_again, 2u);
  EXPECT_EQ(eng.stats().retried, 11u);
  EXPECT_EQ(eng.stats().timed_out, 1u);
  EXPECT_NE(msg.find("after 12 attempts"), std::string::npos) << msg;
  // On the manual clock: 4 attempts of 200 ms, then 8 of 400 ms.
  EXPECT_EQ(t.clock_.now(), std::chrono::milliseconds(4 * 200 + 8 * 400));

  // Lost six times (more than a round holds): answered on the seventh attempt.
  ScriptedTransport lossy;
  lossy.lose = 6;
  MadEngine eng2(lossy, {.window = 4, .timeout = std::chrono::milliseconds(200), .retries = 3});
  bool ok = false;
  eng2.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}),
              [&](Result<Smp> r) { ok = r.has_value(); });
  ASSERT_TRUE(eng2.run());
  EXPECT_TRUE(ok);
  EXPECT_EQ(lossy.sent.size(), 7u);
  EXPECT_EQ(eng2.stats().lost, 6u);
  EXPECT_EQ(eng2.stats().rounds_again, 1u);

  // On a fabric that shows loss (another request was answered after a lost attempt
  // while this one waited) twice as many rounds.
  ScriptedTransport mixed;
  mixed.lose = 1;
  mixed.dead_ports = {9};
  MadEngine eng4(mixed, {.window = 1, .timeout = std::chrono::milliseconds(200), .retries = 3});
  bool first = false, second = true;
  eng4.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}.extended(1)),
              [&](Result<Smp> r) { first = r.has_value(); });
  eng4.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}.extended(9)),
              [&](Result<Smp> r) { second = r.has_value(); });
  ASSERT_TRUE(eng4.run());
  EXPECT_TRUE(first);
  EXPECT_FALSE(second);
  EXPECT_EQ(eng4.stats().recovered, 1u);
  EXPECT_EQ(mixed.sent.size(), 2u + 24u);  // the first twice, the second six rounds of four
  EXPECT_EQ(eng4.stats().rounds_again, 5u);

  // Four times as many when the target answered before: the device is there, the
  // fabric loses its MADs.
  ScriptedTransport alive;
  MadEngine eng5(alive, {.window = 4, .timeout = std::chrono::milliseconds(200), .retries = 3});
  eng5.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}.extended(1)),
              [](Result<Smp> r) { EXPECT_TRUE(r); });
  ASSERT_TRUE(eng5.run());
  alive.dead_ports = {1};
  alive.lose = 1;
  bool other = false, again = true;
  eng5.submit(SmpRequest::get(kAttrPortInfo, 0, DrPath{}.extended(2)),
              [&](Result<Smp> r) { other = r.has_value(); });
  eng5.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}.extended(1)),
              [&](Result<Smp> r) { again = r.has_value(); });
  ASSERT_TRUE(eng5.run());
  EXPECT_TRUE(other);
  EXPECT_FALSE(again);
  EXPECT_EQ(alive.sent.size(), 1u + 2u + 48u);  // twelve rounds of four
  // Having run out of rounds, the target is forgotten (it may be gone): twice as many
  // again, as for a probe beyond it (0,1,7), whose device never answered.
  for (const DrPath& to : {DrPath{}.extended(1), DrPath{}.extended(1).extended(7)}) {
    alive.sent.clear();
    alive.lose = 1;
    eng5.submit(SmpRequest::get(kAttrPortInfo, 0, DrPath{}.extended(2)),
                [&](Result<Smp> r) { other = r.has_value(); });
    eng5.submit(SmpRequest::get(kAttrNodeInfo, 0, to),
                [&](Result<Smp> r) { again = r.has_value(); });
    ASSERT_TRUE(eng5.run());
    EXPECT_EQ(alive.sent.size(), 2u + 24u) << to.str();
  }

  // A request that names its retries gets exactly those.
  ScriptedTransport none;
  none.answer = false;
  MadEngine eng3(none, {.window = 4, .timeout = std::chrono::milliseconds(200), .retries = 3});
  SmpRequest poll = SmpRequest::get(kAttrSmInfo, 0, DrPath{});
  poll.retries = 1;
  eng3.submit(poll, [](Result<Smp> r) { EXPECT_FALSE(r); });
  ASSERT_TRUE(eng3.run());
  EXPECT_EQ(none.sent.size(), 2u);
  EXPECT_EQ(eng3.stats().rounds_again, 0u);
}

// A probe (an attribute a device may not implement) that nobody answers, lost by the
// carrier or timed out: a timeout to its caller, counted apart, no loss, no timeout.
TEST(MadEngine, UnansweredProbesAreCountedApart) {
  for (bool carrier_drop : {true, false}) {
    ScriptedTransport t;
    t.answer = false;
    if (carrier_drop) t.lose = 1;
    MadEngine eng(t, {.window = 4, .timeout = std::chrono::milliseconds(200), .retries = 3});
    SmpRequest req = SmpRequest::get(0xFF20, 0, DrPath{});
    req.retries = 0;
    req.probe = true;
    int failed = 0;
    eng.submit(req, [&](Result<Smp> r) {
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code, Errc::kTimeout);
      ++failed;
    });
    ASSERT_TRUE(eng.run());
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(t.sent.size(), 1u);
    EXPECT_EQ(eng.stats().probes_unanswered, 1u);
    EXPECT_EQ(eng.stats().lost + eng.stats().timed_out + eng.stats().retried, 0u);
  }
}

TEST(MadEngine, ErrorStatusAndMismatchedRepliesFailTheRequest) {
  ScriptedTransport t;
  t.status = 0x001C;
  MadEngine eng(t, {});
  std::string msg;
  eng.submit(SmpRequest::get(kAttrPortInfo, 3, DrPath{}.extended(2)), [&](Result<Smp> r) {
    ASSERT_FALSE(r);
    msg = r.error().message;
  });
  ASSERT_TRUE(eng.run());
  EXPECT_NE(msg.find("PortInfo to DR 0,2: status 0x001c"), std::string::npos) << msg;
  EXPECT_EQ(eng.stats().error_status, 1u);

  t.status = 0;
  t.wrong_attr = true;
  eng.submit(SmpRequest::get(kAttrPortInfo, 3, DrPath{}), [&](Result<Smp> r) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::kBadReply);
  });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(eng.stats().malformed, 1u);
}

TEST(MadEngine, TruncatedRepliesAreDroppedAndTheRequestRetried) {
  ScriptedTransport t;
  t.truncate = true;
  MadEngine eng(t,
                {.window = 1, .timeout = std::chrono::milliseconds(10), .retries = 1, .rounds = 1});
  int calls = 0;
  eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) {
    ++calls;
    EXPECT_FALSE(r);
  });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(eng.stats().malformed, 2u);
  EXPECT_EQ(t.sent.size(), 2u);
}

TEST(MadEngine, CompletionsMaySubmitMore) {
  ScriptedTransport t;
  MadEngine eng(t, {.window = 2});
  int depth = 0;
  std::function<void(Result<Smp>)> next = [&](Result<Smp> r) {
    ASSERT_TRUE(r);
    if (++depth < 10) eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), next);
  };
  eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), next);
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(depth, 10);
}

// A fed source is drawn as the window empties: at most a window queued beside a window
// on the wire, sources one after another, each request completed once.
TEST(MadEngine, FedSourcesAreDrawnAsTheWindowEmptiesInOrder) {
  ScriptedTransport t;
  MadEngine eng(t, {.window = 4});
  std::vector<int> calls;
  int in_flight = 0, most_in_flight = 0;
  auto source = [&](int first, int count) {
    std::vector<int> items(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) items[static_cast<size_t>(i)] = first + i;
    feed_each(eng, std::move(items), [&](int i) {
      // Every third item submits nothing: the next is given in its place.
      if (i % 3 == 2) return calls.push_back(-i);
      most_in_flight = std::max(most_in_flight, ++in_flight);
      eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&, i](Result<Smp> r) {
        EXPECT_TRUE(r);
        --in_flight;
        calls.push_back(i);
      });
    });
  };
  source(0, 300);
  source(1000, 30);
  EXPECT_FALSE(eng.idle());  // nothing queued yet, but work is waiting in the sources
  EXPECT_EQ(eng.stats().submitted, 0u);
  ASSERT_TRUE(eng.run());
  EXPECT_TRUE(eng.idle());
  ASSERT_EQ(calls.size(), 330u);
  EXPECT_EQ(eng.stats().completed_ok, 220u);
  EXPECT_LE(most_in_flight, 8);  // a window queued, a window on the wire
  EXPECT_LE(eng.stats().peak_queued, 4u);
  // Each item once; the second source only after the first.
  std::set<int> seen;
  size_t last_first = 0, first_second = calls.size();
  for (size_t k = 0; k < calls.size(); ++k) {
    EXPECT_TRUE(seen.insert(calls[k]).second) << calls[k];
    const int i = calls[k] < 0 ? -calls[k] : calls[k];
    if (i < 1000) last_first = k;
    if (i >= 1000) first_second = std::min(first_second, k);
  }
  EXPECT_LT(last_first, first_second + 8);  // the window lets the tails overlap, no more
}

// Pushed: a source kicks the caller once, as a submit does.
TEST(MadEngine, PushedModeAFedSourceKicks) {
  ScriptedTransport t;
  MadEngine eng(t, {.window = 2});
  int kicks = 0, ok = 0;
  eng.on_work([&] { ++kicks; });
  feed_each(eng, std::vector<int>(5, 0), [&](int) {
    eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}),
               [&](Result<Smp> r) { ok += r ? 1 : 0; });
  });
  EXPECT_EQ(kicks, 1);
  for (int round = 0; round < 10 && !eng.idle(); ++round) {
    ASSERT_TRUE(eng.service());
    while (!t.queue.empty()) {
      InMad in = t.queue.front();
      t.queue.erase(t.queue.begin());
      eng.deliver(in);
    }
  }
  EXPECT_EQ(ok, 5);
  EXPECT_TRUE(eng.idle());
}

// Deadlines are kept in a FIFO per timeout: a request sent later with a shorter timeout
// still times out first, and next_deadline() is the soonest of all.
TEST(MadEngine, ALaterRequestWithAShorterTimeoutTimesOutFirst) {
  ScriptedTransport t;
  t.answer = false;
  EngineOptions o{
      .window = 4, .timeout = std::chrono::milliseconds(500), .retries = 0, .rounds = 1};
  MadEngine eng(t, o);
  std::vector<char> order;
  auto submit = [&](char name) {
    eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&, name](Result<Smp> r) {
      EXPECT_FALSE(r);
      order.push_back(name);
    });
  };
  submit('a');
  ASSERT_TRUE(eng.poll_for(std::chrono::milliseconds(1)));
  const TimePoint a_due = *eng.next_deadline();
  o.timeout = std::chrono::milliseconds(100);
  eng.set_options(o);
  submit('b');
  ASSERT_TRUE(eng.poll_for(std::chrono::milliseconds(1)));
  ASSERT_TRUE(eng.next_deadline());
  EXPECT_LT(*eng.next_deadline(), a_due);
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(std::string(order.begin(), order.end()), "ba");
  EXPECT_EQ(eng.stats().timed_out, 2u);
}

// A request marked long (an SL2VL Set for every input port) waits long_timeout per
// attempt, read from OpenSM's long_transaction_timeout; one below the timeout counts as
// the timeout, as OpenSM takes it.
TEST(MadEngine, ALongTransactionWaitsTheLongTimeout) {
  config::Values v = config::defaults();
  ASSERT_TRUE(config::load_text("transaction_timeout 100\nlong_transaction_timeout 700\n",
                                "opensm.conf", v));
  const EngineOptions from_conf = engine_from_options(v);
  EXPECT_EQ(from_conf.timeout, std::chrono::milliseconds(100));
  EXPECT_EQ(from_conf.long_timeout, std::chrono::milliseconds(700));
  for (const auto& [long_ms, marked, want_ms] :
       {std::tuple{700, true, 700}, std::tuple{50, true, 100}, std::tuple{700, false, 100}}) {
    ScriptedTransport t;
    t.answer = false;
    EngineOptions o = from_conf;
    o.retries = 0;
    o.rounds = 1;
    o.long_timeout = std::chrono::milliseconds(long_ms);
    MadEngine eng(t, o);
    auto req = SmpRequest::get(kAttrNodeInfo, 0, DrPath{});
    req.long_transaction = marked;
    eng.submit(req, [](Result<Smp> r) { EXPECT_FALSE(r); });
    const TimePoint sent = t.clock().now();
    ASSERT_TRUE(eng.poll_for(std::chrono::milliseconds(1)));
    ASSERT_TRUE(eng.next_deadline());
    EXPECT_EQ(*eng.next_deadline() - sent, std::chrono::milliseconds(want_ms))
        << long_ms << " ms, marked " << marked;
    ASSERT_TRUE(eng.run());
    EXPECT_EQ(eng.stats().timed_out, 1u);
  }
  // A later round (transaction_rounds) waits twice the long timeout.
  ScriptedTransport t;
  t.answer = false;
  EngineOptions o = from_conf;
  o.retries = 0;
  o.rounds = 2;
  MadEngine eng(t, o);
  auto req = SmpRequest::get(kAttrNodeInfo, 0, DrPath{});
  req.long_transaction = true;
  eng.submit(req, [](Result<Smp> r) { EXPECT_FALSE(r); });
  ASSERT_TRUE(eng.poll_for(std::chrono::milliseconds(1)));
  ASSERT_TRUE(eng.next_deadline());
  const TimePoint first_due = *eng.next_deadline();
  ASSERT_TRUE(eng.poll_for(first_due - t.clock().now()));
  EXPECT_EQ(t.sent.size(), 2u);
  ASSERT_TRUE(eng.next_deadline());
  EXPECT_EQ(*eng.next_deadline() - t.clock().now(), std::chrono::milliseconds(1400));
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(eng.stats().timed_out, 1u);
}

// A broken transport fails every request once: those queued, and those a source still
// holds.
TEST(MadEngine, ABrokenTransportFailsEveryQueuedRequestOnce) {
  ScriptedTransport t;
  t.answer = false;
  t.fail_receive = true;
  MadEngine eng(t, {.window = 2});
  int failed = 0;
  auto one = [&] {
    eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) {
      EXPECT_FALSE(r);
      ++failed;
    });
  };
  for (int i = 0; i < 5; ++i) one();
  feed_each(eng, std::vector<int>(50, 0), [&](int) { one(); });
  auto r = eng.run();
  EXPECT_FALSE(r);
  EXPECT_EQ(failed, 55);
  EXPECT_TRUE(eng.idle());
}

TEST(MadEngine, SendFailuresCompleteWithTheError) {
  ScriptedTransport t;
  t.fail_sends = true;
  MadEngine eng(t, {});
  int calls = 0;
  eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) {
    ++calls;
    EXPECT_EQ(r.error().code, Errc::kIo);
  });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(calls, 1);
}

TEST(MadEngine, LateRepliesAreCountedNotDelivered) {
  ScriptedTransport t;
  MadEngine eng(t, {});
  Smp late;
  late.mgmt_class = kClassSmiDirect;
  late.method = kMethodGetResp;
  late.tid = 0xDEAD;
  InMad in;
  in.mad = encode_smp(late);
  in.len = kMadSize;
  t.queue.push_back(in);
  eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [](Result<Smp> r) { EXPECT_TRUE(r); });
  ASSERT_TRUE(eng.run());
  EXPECT_EQ(eng.stats().unmatched, 1u);
  EXPECT_EQ(eng.stats().completed_ok, 1u);
}

// A transport failure fails every request exactly once, also those that completions
// submit on failure, however deep they nest (fail_all used to stop after 64 rounds).
TEST(MadEngine, ABrokenTransportFailsNestedSubmissionsExactlyOnce) {
  ScriptedTransport t;
  t.answer = false;
  t.fail_receive = true;
  MadEngine eng(t, {.window = 4});
  constexpr int kDepth = 300;
  std::vector<int> calls(kDepth + 1, 0);
  std::function<void(int)> submit_at = [&](int level) {
    eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&, level](Result<Smp> r) {
      EXPECT_FALSE(r);
      ++calls[level];
      if (level < kDepth) submit_at(level + 1);  // a sweep's next read, as discovery does
    });
  };
  for (int i = 0; i < 3; ++i) submit_at(0);  // three chains, started side by side
  EXPECT_FALSE(eng.run());
  EXPECT_EQ(calls[0], 3);
  for (int level = 1; level <= kDepth; ++level) EXPECT_EQ(calls[level], 3) << "level " << level;
  EXPECT_TRUE(eng.idle());
  EXPECT_EQ(eng.stats().submitted, 3u * (kDepth + 1));
}

// Pushed mode: submit() asks for service, deliver() takes replies the reader read,
// next_deadline() says when a timeout is due; the transport is never read inline.
TEST(MadEngine, PushedModeSendsOnServiceAndTakesDeliveredReplies) {
  ScriptedTransport t;
  MadEngine eng(
      t, {.window = 2, .timeout = std::chrono::milliseconds(100), .retries = 1, .rounds = 1});
  int kicks = 0;
  eng.on_work([&] { ++kicks; });
  int ok = 0, timed_out = 0;
  for (int i = 0; i < 3; ++i)
    eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) {
      if (r)
        ++ok;
      else if (r.error().code == Errc::kTimeout)
        ++timed_out;
      else
        ADD_FAILURE() << r.error().message;
    });
  EXPECT_EQ(kicks, 1);  // one kick until service() runs
  EXPECT_TRUE(t.sent.empty());
  ASSERT_TRUE(eng.service());
  EXPECT_EQ(t.sent.size(), 2u);  // the window
  ASSERT_TRUE(eng.next_deadline());
  EXPECT_EQ(*eng.next_deadline(), t.clock_.now() + std::chrono::milliseconds(100));
  EXPECT_EQ(t.queue.size(), 2u);  // answered, but nobody read them yet
  // The reader hands one reply over; service() fills the window again.
  InMad first = t.queue.front();
  t.queue.erase(t.queue.begin());
  eng.deliver(first);
  EXPECT_EQ(ok, 1);
  ASSERT_TRUE(eng.service());
  EXPECT_EQ(t.sent.size(), 3u);
  // Nothing else is delivered: past the deadline, both retry once, then time out.
  t.answer = false;
  t.queue.clear();
  for (int round = 0; round < 2; ++round) {
    t.clock_.advance(std::chrono::milliseconds(101));
    ASSERT_TRUE(eng.service());
  }
  EXPECT_EQ(timed_out, 2);
  EXPECT_EQ(eng.stats().retried, 2u);
  EXPECT_TRUE(eng.idle());
  EXPECT_FALSE(eng.next_deadline());
}

TEST(MadEngine, MadsOfClassesItDoesNotServeAreDroppedAndCounted) {
  // On ibsim they would crash libumad2sim's receiver; here they must not reach the SA,
  // the SMInfo handler or an outstanding request, and must not be answered.
  ScriptedTransport t;
  t.answer = false;
  MadEngine eng(
      t, {.window = 4, .timeout = std::chrono::milliseconds(100), .retries = 0, .rounds = 1});
  int unsolicited = 0, sa = 0;
  eng.on_unsolicited([&](const Smp&, const InMad&) { ++unsolicited; });
  eng.on_sa([&](const InMad&) { ++sa; });
  std::optional<Result<Smp>> done;
  eng.submit(SmpRequest::get(kAttrNodeInfo, 0, DrPath{}), [&](Result<Smp> r) { done = r; });
  ASSERT_TRUE(eng.poll_for(std::chrono::milliseconds(1)));
  ASSERT_EQ(t.sent.size(), 1u);
  const auto out = decode_smp(t.sent[0].data(), kMadSize);
  ASSERT_TRUE(out);
  // PerfMgt, CM, a vendor class, BM, DevMgt, SNMP, and one of them dressed as a reply to
  // the outstanding request (its TID).
  for (uint8_t cls : {0x04, 0x07, 0x09, 0x05, 0x06, 0x08, 0x30, 0x04}) {
    InMad in;
    in.mad[0] = 1;
    in.mad[1] = cls;
    in.mad[2] = 1;
    in.mad[3] = cls == 0x30 ? 0x81 : 0x01;
    for (int i = 0; i < 8; ++i) in.mad[8 + i] = uint8_t(out->tid >> (56 - 8 * i));
    in.len = kMadSize;
    t.queue.push_back(in);
  }
  const size_t sent_before = t.sent.size();
  ASSERT_TRUE(eng.poll_for(std::chrono::milliseconds(300)));
  // The requests are dropped unserved; the vendor-class reply is a GMP reply that no
  // GMP of ours awaits (unmatched), never taken for the SMP's.
  EXPECT_EQ(eng.stats().unserved, 7u);
  EXPECT_EQ(eng.stats().unmatched, 1u);
  EXPECT_EQ(unsolicited, 0);
  EXPECT_EQ(sa, 0);
  EXPECT_EQ(eng.stats().malformed, 0u);
  EXPECT_EQ(t.sent.size(), sent_before) << "nothing is answered";
  ASSERT_TRUE(done);
  EXPECT_FALSE(*done) << "the request timed out: no foreign MAD completed it";
}

namespace {

// umad2sim's carrier, in small: every request is answered into a receive queue that
// holds `cap` MADs, and a send while it is full would block (here: fails), as a
// write to ibsim blocks while ibsim waits to write replies no one reads.
class BoundedQueueTransport final : public Transport {
 public:
  explicit BoundedQueueTransport(size_t cap) : cap_(cap) {}
  Result<void> send(const MadBuf& mad, const SendAddr&) override {
    if (queue_.size() >= cap_) return fail(Errc::kIo, "would block: the receive queue is full");
    auto g = decode_gmp(mad.data(), kMadSize);
    if (!g) return fail(Errc::kInternal, "not a GMP");
    g->method = kMethodGetResp;
    InMad in;
    in.mad = encode_gmp(*g);
    in.len = kMadSize;
    queue_.push_back(in);
    max_queued = std::max(max_queued, queue_.size());
    return {};
  }
  Result<void> send_long(std::span<const uint8_t>, const SendAddr&) override { return {}; }
  Result<std::optional<InMad>> receive(Duration) override {
    if (queue_.empty()) return std::optional<InMad>{};
    InMad m = queue_.front();
    queue_.pop_front();
    return std::optional<InMad>(m);
  }
  Clock& clock() override { return clock_; }
  LocalPort local_port() const override { return {}; }
  Result<void> set_is_sm(bool) override { return {}; }
  size_t max_queued = 0;

 private:
  size_t cap_;
  std::deque<InMad> queue_;
  ManualClock clock_;
};

}  // namespace

// Pushed, with the receive side held off its reader (the daemon's pump), a window wider
// than the carrier's queue reads between sends instead of blocking on a full one.
TEST(MadEngine, AWideGmpWindowReadsBetweenSendsWhileTheCallerHoldsTheReceiveSide) {
  BoundedQueueTransport t(16);
  MadEngine eng(t, {.timeout = std::chrono::milliseconds(100), .retries = 0, .gmp_window = 500});
  int kicks = 0;
  eng.on_work([&] { ++kicks; });
  eng.receive_between_sends(true);
  int ok = 0, failed = 0;
  for (int i = 0; i < 300; ++i) {
    GmpRequest r;
    r.mad.mgmt_class = 0x04;
    r.mad.attr_id = 0x0012;
    r.dlid = Lid{static_cast<uint16_t>(i + 1)};
    eng.submit(std::move(r), [&](Result<Gmp> g) { (g ? ok : failed) += 1; });
  }
  ASSERT_TRUE(eng.service());
  EXPECT_EQ(failed, 0) << "a send found the queue full";
  EXPECT_EQ(ok, 300);
  EXPECT_LE(t.max_queued, 1u) << "each reply read before the next send";
  EXPECT_GE(kicks, 1);
}
