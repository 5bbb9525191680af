// The PerfMgr in process: counter sweeps over the simulator's PMAs (LID routed GMPs
// through the SM's engine), deltas across a saturating clear, a port that goes and
// returns, thresholds crossed (event, mark on disk, policy applied, kept across a
// restart, cleared by an admin), and a counter sweep that leaves a sweep's time alone.
#include <gtest/gtest.h>

#include <fstream>

#include "../simulator/sim_sm.hpp"
#include "weft/daemon/managers.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::sm;

using weft::testing::ScratchDir;
using weft::testing::sim_of;

namespace {

constexpr const char* kFabric = "ft2:leaves=2,spines=2,hosts=2";

SmOptions perf_opts(const ScratchDir& d, const std::string& policy = "report") {
  SmOptions o = weft::testing::sm_opts(d);
  o.perf.enabled = true;
  o.perf.unhealthy_policy = *perf::unhealthy_policy_named(policy);
  o.perf.log_errors = false;
  return o;
}

Result<perf::PerfSweep> counter_sweep(daemon::Managers& m) {
  std::optional<Result<perf::PerfSweep>> got;
  m.perf_sweep([&](Result<perf::PerfSweep> r) { got = std::move(r); });
  if (auto r = m.sm().engine().run_all(); !r) return std::unexpected(r.error());
  if (!got) return fail(Errc::kInternal, "the counter sweep did not finish");
  return *got;
}

using Link = weft::testing::Uplink;
using weft::testing::uplink;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t linked_ports(const fabric::Fabric& f) {
  size_t n = 0;
  for (const auto& nd : f.nodes())
    for (const auto& p : nd.ports) n += p.num && p.linked();
  return n;
}

uint64_t delta(const perf::PortStats* st, perf::Counter c) {
  return st ? st->delta.counted[size_t(c)] : ~0ull;
}

}  // namespace

TEST(PerfMgr, ReadsEveryLinkedPortAndCountsWhatHappenedBetweenTwoSweeps) {
  ScratchDir dir("weft-perf");
  SimFabric sim = sim_of(kFabric);
  SimTransport t(sim, {.attach = 0});
  daemon::Managers m(t, perf_opts(dir));
  auto& sm = m.sm();
  EXPECT_FALSE(counter_sweep(m)) << "nothing to read before the subnet is up";
  ASSERT_TRUE(sm.sweep()->subnet_up);
  const size_t ports = linked_ports(sim.model());
  auto first = counter_sweep(m);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->ports, ports);
  EXPECT_EQ(first->read, ports);
  EXPECT_EQ(first->failed, 0u);
  // One ClassPortInfo per node, PortCounters and PortCountersExtended per port.
  const size_t nodes = sim.model().size();
  EXPECT_EQ(first->mads, nodes + 2 * ports);
  const Link l = uplink(sim);
  const Guid leaf = sim.model().node(l.leaf).guid;
  sim.count(l.leaf, l.lp, perf::Counter::kSymbolErrors, 3);
  sim.count(l.leaf, l.lp, perf::Counter::kXmitWait, 500);
  sim.count(l.leaf, l.lp, perf::ExtCounter::kXmitData, 1'000'000);
  t.manual_clock().advance_to(t.clock().now() + std::chrono::seconds(10));
  auto second = counter_sweep(m);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->mads, 2 * ports) << "capabilities are asked once per node";
  auto view = sm.published()->perf;
  ASSERT_TRUE(view);
  EXPECT_EQ(view->ports.size(), ports);
  const auto* st = view->find(leaf.value, l.lp);
  ASSERT_TRUE(st);
  EXPECT_FALSE(st->baseline);
  EXPECT_EQ(delta(st, perf::Counter::kSymbolErrors), 3u);
  EXPECT_EQ(delta(st, perf::Counter::kXmitWait), 500u);
  EXPECT_TRUE(st->has_ext);
  EXPECT_EQ(st->ext_delta.counted[size_t(perf::ExtCounter::kXmitData)], 1'000'000u);
  EXPECT_NEAR(st->interval_s, 10.0, 0.5);
  EXPECT_NEAR(st->rate(perf::Counter::kSymbolErrors), 0.3, 0.02);
  // Its peer saw nothing.
  const auto* peer = view->find(sim.model().node(l.spine).guid.value, l.sp);
  ASSERT_TRUE(peer);
  EXPECT_EQ(delta(peer, perf::Counter::kSymbolErrors), 0u);
  // A PMA without PortCountersExtended is not asked for it. Its node is gone a sweep,
  // so its capabilities are asked again when it returns.
  const auto host = *sim.model().find_by_name("h1-1");
  const auto hpeer = sim.model().node(host).ports[1].peer;
  const PortNum hport = sim.model().node(host).ports[1].peer_port;
  sim.set_pma_capabilities(host, 0x0100);
  sim.unlink(host, 1);
  ASSERT_TRUE(sm.sweep());
  ASSERT_TRUE(counter_sweep(m));
  EXPECT_FALSE(sm.published()->perf->find(sim.model().node(host).guid.value, 1));
  ASSERT_TRUE(sim.relink(host, 1, hpeer, hport));
  ASSERT_TRUE(sm.sweep());
  ASSERT_TRUE(sm.sweep()->subnet_up);
  auto third = counter_sweep(m);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->mads, 2 * ports) << "one ClassPortInfo, and no PortCountersExtended for h0";
  st = sm.published()->perf->find(sim.model().node(host).guid.value, 1);
  ASSERT_TRUE(st);
  EXPECT_FALSE(st->has_ext);
  EXPECT_TRUE(st->baseline);
}

TEST(PerfMgr, CountsAcrossASaturatingClearAndStartsOverForAPortThatReturns) {
  ScratchDir dir("weft-perf");
  SimFabric sim = sim_of(kFabric);
  SimTransport t(sim, {.attach = 0});
  auto o = perf_opts(dir);
  o.perf.thresholds = {};  // counts only
  daemon::Managers m(t, o);
  auto& sm = m.sm();
  ASSERT_TRUE(sm.sweep()->subnet_up);
  ASSERT_TRUE(counter_sweep(m));
  const Link l = uplink(sim);
  const uint64_t leaf = sim.model().node(l.leaf).guid.value;
  // 16-bit SymbolErrorCounter past 75 %: counted, then cleared by a Set.
  sim.count(l.leaf, l.lp, perf::Counter::kSymbolErrors, 60'000);
  ASSERT_TRUE(counter_sweep(m));
  const auto* st = sm.published()->perf->find(leaf, l.lp);
  ASSERT_TRUE(st);
  EXPECT_EQ(delta(st, perf::Counter::kSymbolErrors), 60'000u);
  EXPECT_EQ(st->clears, 1u);
  EXPECT_EQ(sim.counters(l.leaf, l.lp)[perf::Counter::kSymbolErrors], 0u) << "cleared";
  // 10 more after the clear: 10, not a reset and not 60,010 - 60,000 gone negative.
  sim.count(l.leaf, l.lp, perf::Counter::kSymbolErrors, 10);
  ASSERT_TRUE(counter_sweep(m));
  st = sm.published()->perf->find(leaf, l.lp);
  EXPECT_EQ(delta(st, perf::Counter::kSymbolErrors), 10u);
  EXPECT_EQ(st->delta.reset, 0u);
  EXPECT_EQ(st->totals[size_t(perf::Counter::kSymbolErrors)], 60'010u);
  // A jump to saturation between two reads: a lower bound, and flagged.
  sim.count(l.leaf, l.lp, perf::Counter::kSymbolErrors, 1'000'000);
  ASSERT_TRUE(counter_sweep(m));
  st = sm.published()->perf->find(leaf, l.lp);
  EXPECT_EQ(delta(st, perf::Counter::kSymbolErrors), 65'535u - 10);
  EXPECT_TRUE(st->delta.saturated & perf::bit(perf::Counter::kSymbolErrors));
  ASSERT_TRUE(counter_sweep(m));  // cleared after that read: counts from 0
  st = sm.published()->perf->find(leaf, l.lp);
  EXPECT_EQ(delta(st, perf::Counter::kSymbolErrors), 0u);
  // A device reset (counters to zero with no clear of ours): counted from zero, flagged.
  sim.count(l.leaf, l.lp, perf::Counter::kLinkDowned, 5);
  ASSERT_TRUE(counter_sweep(m));
  sim.reset_counters(l.leaf, l.lp);
  sim.count(l.leaf, l.lp, perf::Counter::kLinkDowned, 2);
  ASSERT_TRUE(counter_sweep(m));
  st = sm.published()->perf->find(leaf, l.lp);
  EXPECT_EQ(delta(st, perf::Counter::kLinkDowned), 2u);
  EXPECT_TRUE(st->delta.reset & perf::bit(perf::Counter::kLinkDowned));
  // The link goes: the port is out of the view. It returns: a new series, a baseline.
  sim.unlink(l.leaf, l.lp);
  ASSERT_TRUE(sm.sweep());
  ASSERT_TRUE(counter_sweep(m));
  EXPECT_FALSE(sm.published()->perf->find(leaf, l.lp));
  ASSERT_TRUE(sim.relink(l.leaf, l.lp, l.spine, l.sp));
  ASSERT_TRUE(sm.sweep());
  ASSERT_TRUE(sm.sweep()->subnet_up);
  sim.count(l.leaf, l.lp, perf::Counter::kSymbolErrors, 7);
  ASSERT_TRUE(counter_sweep(m));
  st = sm.published()->perf->find(leaf, l.lp);
  ASSERT_TRUE(st);
  EXPECT_TRUE(st->baseline) << "its counts before it went do not join the new ones";
  EXPECT_EQ(st->totals[size_t(perf::Counter::kSymbolErrors)], 0u);
}

TEST(PerfMgr, APortPastAThresholdIsMarkedReportedAndKeptAcrossARestartUntilMarkedHealthy) {
  ScratchDir dir("weft-perf");
  SimFabric sim = sim_of(kFabric);
  const Link l = uplink(sim);
  const Guid leaf = sim.model().node(l.leaf).guid;
  {
    SimTransport t(sim, {.attach = 0});
    daemon::Managers m(t, perf_opts(dir));
    auto& sm = m.sm();
    std::vector<SmEvent> events;
    sm.on_event([&](const SmEvent& e) { events.push_back(e); });
    ASSERT_TRUE(sm.sweep()->subnet_up);
    ASSERT_TRUE(counter_sweep(m));
    // 9 symbol errors: below infiniband-diags' 10. Then 3 more within the window: past.
    sim.count(l.leaf, l.lp, perf::Counter::kSymbolErrors, 9);
    auto r = counter_sweep(m);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->unhealthy.empty());
    sim.count(l.leaf, l.lp, perf::Counter::kSymbolErrors, 3);
    r = counter_sweep(m);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->unhealthy.size(), 1u);
    EXPECT_EQ(r->unhealthy[0].first, (perf::PortKey{leaf.value, l.lp}));
    EXPECT_EQ(r->unhealthy[0].second.counter, "SymbolErrorCounter");
    EXPECT_EQ(r->unhealthy[0].second.reason, "SymbolErrorCounter 12 within 3600 s (threshold 10)");
    auto ev = std::find_if(events.begin(), events.end(),
                           [](const SmEvent& e) { return e.type == "port_unhealthy"; });
    ASSERT_NE(ev, events.end());
    EXPECT_EQ(ev->data["guid"], leaf.str());
    EXPECT_EQ(ev->data["policy"], "report");
    EXPECT_NE(slurp(dir.path() + "/unhealthy-ports").find(leaf.str() + " " + std::to_string(l.lp)),
              std::string::npos);
    EXPECT_EQ(sm.published()->perf->unhealthy.size(), 1u);
    // report: the link stays in the routes.
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up);
    EXPECT_EQ(rep->ports_disabled, 0u);
  }
  // A restart keeps the mark; an admin clears it, on disk.
  SimTransport t(sim, {.attach = 0});
  daemon::Managers m(t, perf_opts(dir));
  auto& sm = m.sm();
  EXPECT_EQ(sm.published()->perf->unhealthy.size(), 1u);
  ASSERT_TRUE(sm.sweep()->subnet_up);
  EXPECT_FALSE(m.mark_healthy(leaf, PortNum(l.lp == 1 ? 2 : 1))) << "not marked";
  auto was = m.mark_healthy(leaf, l.lp);
  ASSERT_TRUE(was);
  EXPECT_EQ(was->counter, "SymbolErrorCounter");
  EXPECT_TRUE(sm.published()->perf->unhealthy.empty());
  EXPECT_EQ(slurp(dir.path() + "/unhealthy-ports").find(leaf.str()), std::string::npos);
  // Its old errors do not mark it again.
  ASSERT_TRUE(counter_sweep(m));
  auto r = counter_sweep(m);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->unhealthy.empty());
}

// The marks file as another weft (or an admin's editor) left it: each line's policy is read
// as the policy it names; a line whose policy is no known word is skipped, not guessed at.
TEST(PerfMgr, MarksFromTheStateDirectoryKeepTheirPolicyAndUnknownPoliciesAreSkipped) {
  ScratchDir dir("weft-perf");
  std::filesystem::create_directories(dir.path());
  {
    std::ofstream out(dir.path() + "/unhealthy-ports");
    out << "# ports weft's PerfMgr marked unhealthy\n"
           "0x0002c90300001001 1 1700000000 isolate SymbolErrorCounter SymbolErrorCounter 12\n"
           "0x0002c90300001002 2 1700000000 reroute LinkDownedCounter LinkDownedCounter 3\n"
           "0x0002c90300001003 3 1700000000 sometimes - corrupt\n";
  }
  SimFabric sim = sim_of(kFabric);
  SimTransport t(sim, {.attach = 0});
  daemon::Managers m(t, perf_opts(dir));
  auto& sm = m.sm();
  const auto& marks = sm.published()->perf->unhealthy;
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks.at({0x0002c90300001001ull, 1}).policy, perf::UnhealthyPolicy::kIsolate);
  EXPECT_EQ(marks.at({0x0002c90300001002ull, 2}).policy, perf::UnhealthyPolicy::kReroute);
  EXPECT_EQ(marks.at({0x0002c90300001002ull, 2}).reason, "LinkDownedCounter 3");
  EXPECT_FALSE(marks.count({0x0002c90300001003ull, 3}));
}

TEST(PerfMgr, RerouteRoutesAroundAnUnhealthyLinkAndIsolateLeavesItDown) {
  for (const std::string policy : {"reroute", "isolate"}) {
    SCOPED_TRACE(policy);
    ScratchDir dir("weft-perf");
    SimFabric sim = sim_of(kFabric);
    SimTransport t(sim, {.attach = 0});
    daemon::Managers m(t, perf_opts(dir, policy));
    auto& sm = m.sm();
    ASSERT_TRUE(sm.sweep()->subnet_up);
    const Link l = uplink(sim);
    const Guid leaf = sim.model().node(l.leaf).guid;
    auto uses = [&] {  // the discovered fabric numbers nodes its own way: by GUID
      const auto& snap = *sm.snapshot();
      const auto& lft = snap.tables.lft[*snap.fabric.find(leaf)];
      return std::count(lft.begin(), lft.end(), l.lp);
    };
    EXPECT_GT(uses(), 0) << "the uplink carries routes before";
    ASSERT_TRUE(counter_sweep(m));
    sim.count(l.leaf, l.lp, perf::Counter::kLinkErrorRecovery, 10);
    auto r = counter_sweep(m);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->unhealthy.size(), 1u);
    // A CA that lost its LID meanwhile (a reset host): the sweep gives it back, and the
    // routes around the link carry it too (they are computed on the LIDs just assigned).
    fabric::NodeIndex ca = 0;
    while (sim.model().node(ca).is_switch() || ca == 0) ++ca;
    sim.model().node(ca).ports[1].attrs.lid = Lid{};
    // The policy acts at the next sweep.
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    EXPECT_EQ(uses(), 0) << "no route leaves by the unhealthy link";
    EXPECT_NE(sim.model().node(ca).ports[1].attrs.lid.value, 0u);
    EXPECT_TRUE(weft::testing::readback(sim).ok()) << weft::testing::readback(sim).first_problem;
    if (policy == "reroute") {
      EXPECT_EQ(sim.model().node(l.leaf).ports[l.lp].attrs.state, fabric::PortState::kActive);
      EXPECT_EQ(rep->ports_disabled, 0u);
    } else {
      EXPECT_EQ(rep->ports_disabled, 1u);
      EXPECT_EQ(sim.model().node(l.leaf).ports[l.lp].attrs.phys_state, 3);
      EXPECT_EQ(sm.ports_down().size(), 1u);
    }
    // Marked healthy: routes (and the link) come back.
    ASSERT_TRUE(m.mark_healthy(leaf, l.lp));
    EXPECT_TRUE(sm.needs_sweep());
    for (int i = 0; i < 3 && uses() == 0; ++i) ASSERT_TRUE(sm.sweep());
    EXPECT_GT(uses(), 0);
    EXPECT_TRUE(sm.ports_down().empty());
  }
}

TEST(PerfMgr, ACounterSweepUnderWayLeavesAHeavySweepsTimeAndSmpsAlone) {
  auto heavy = [](bool with_counters) {
    ScratchDir dir("weft-perf");
    SimFabric sim = sim_of("ft3:pods=3,leaves=3,aggs=2,hosts=2,cores=2");
    // PMAs slow enough that a sweep waiting for them would take longer.
    SimTransport t(sim, {.attach = 0, .pma_latency = std::chrono::milliseconds(50)});
    SmOptions o = perf_opts(dir);
    o.engine.gmp_window = 8;
    daemon::Managers m(t, o);
    auto& sm = m.sm();
    EXPECT_TRUE(sm.sweep()->subnet_up);
    std::optional<Result<perf::PerfSweep>> got;
    if (with_counters) m.perf_sweep([&](Result<perf::PerfSweep> r) { got = std::move(r); });
    EXPECT_FALSE(sm.engine().gmps_idle() && with_counters) << "GMPs queued";
    const auto t0 = t.clock().now();
    const auto sent0 = sm.mad_stats().sent;
    auto rep = sm.sweep();
    EXPECT_TRUE(rep && rep->subnet_up);
    const auto took = t.clock().now() - t0;
    const auto smps = sm.mad_stats().sent - sent0;
    EXPECT_TRUE(sm.engine().run_all());
    if (with_counters) {
      EXPECT_TRUE(got && *got);
      EXPECT_GT(sm.mad_stats().gmps_sent, 0u);
    }
    return std::pair(took, smps);
  };
  const auto [alone, smps_alone] = heavy(false);
  const auto [beside, smps_beside] = heavy(true);
  EXPECT_EQ(smps_beside, smps_alone);
  EXPECT_LE(beside, alone) << "simulated time of the heavy sweep";
}
