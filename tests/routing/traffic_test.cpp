// The flow-level traffic model (issue 30, item 7, first slice): patterns, the busiest
// link, max-min fair rates, and adaptive routing over the AR groups judged beside the
// static tables it came with.
#include <gtest/gtest.h>

#include <cstdio>

#include "test_fabrics.hpp"
#include "weft/routing/traffic.hpp"
#include "weft/routing/verify.hpp"

using namespace weft;
using namespace weft::routing;
using namespace weft::testing;

TEST(Traffic, PatternsAsTheirNamesSay) {
  const auto f = with_lids("ft2:leaves=4,spines=2,hosts=2");  // 8 CAs, full bisection
  const auto t = routed(f, "ftree");
  // Hotspot: 7 senders into one CA link; each gets a seventh.
  const auto hot = run_traffic(f, t, Pattern::kHotspot, false);
  EXPECT_EQ(hot.flows, 7u);
  EXPECT_EQ(hot.blackholed, 0u);
  EXPECT_EQ(hot.max_link_flows, 7u);
  EXPECT_DOUBLE_EQ(hot.min_flow_throughput, 1.0 / 7);
  EXPECT_DOUBLE_EQ(hot.mean_flow_throughput, 1.0 / 7);
  // A ring and a shift on a full fat tree under d-mod-k: no link shared, full rate.
  for (Pattern p : {Pattern::kAllreduce, Pattern::kShift}) {
    const auto r = run_traffic(f, t, p, false);
    EXPECT_EQ(r.flows, 8u) << pattern_name(p);
    EXPECT_EQ(r.max_link_flows, 1u) << pattern_name(p);
    EXPECT_DOUBLE_EQ(r.min_flow_throughput, 1.0) << pattern_name(p);
  }
  // All-to-all: 56 flows, 7 out of and into every CA link.
  const auto all = run_traffic(f, t, Pattern::kAllToAll, false);
  EXPECT_EQ(all.flows, 56u);
  EXPECT_EQ(all.max_link_flows, 7u);
  EXPECT_DOUBLE_EQ(all.min_flow_throughput, 1.0 / 7);
  // Names.
  for (const char* n : {"shift", "permutation", "all-to-all", "allreduce", "hotspot"})
    EXPECT_STREQ(pattern_name(*parse_pattern(n)), n);
  EXPECT_EQ(parse_pattern("tornado").error().message,
            "unknown traffic pattern \"tornado\" (known: shift, permutation, all-to-all, "
            "allreduce, hotspot)");
}

TEST(Traffic, AdaptiveSpreadsRandomPermutationsOverTheGroups) {
  // Two-level tree, 4 hosts a leaf, 4 spines: static d-mod-k piles random permutations
  // onto some links. Adaptive, per packet (the flow split over its group's ports): every
  // uplink carries a quarter of each flow leaving the leaf, every downlink a quarter of
  // each arriving, so no link carries more than a CA link does. Whole flows to the
  // least-loaded port help less.
  const auto f = with_lids("ft2:leaves=8,spines=4,hosts=4");
  Options o;
  o.adaptive = true;
  const auto t = routed(f, "ftree", o);
  ASSERT_FALSE(t.ar_sets.empty());
  double static_max = 0, split_max = 0, least_max = 0;
  double static_min = 0, split_min = 0, least_min = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    TrafficOptions to;
    to.seed = seed;
    const auto s = run_traffic(f, t, Pattern::kPermutation, false, to);
    const auto a = run_traffic(f, t, Pattern::kPermutation, true, to);
    to.rule = ArRule::kLeastLoaded;
    const auto l = run_traffic(f, t, Pattern::kPermutation, true, to);
    EXPECT_EQ(s.flows, 32u);
    EXPECT_EQ(a.blackholed + l.blackholed, 0u);
    EXPECT_DOUBLE_EQ(a.max_link_flows, 1.0) << "seed " << seed;
    EXPECT_DOUBLE_EQ(a.min_flow_throughput, 1.0) << "seed " << seed;
    static_max += s.max_link_flows, split_max += a.max_link_flows, least_max += l.max_link_flows;
    static_min += s.min_flow_throughput, split_min += a.min_flow_throughput;
    least_min += l.min_flow_throughput;
  }
  EXPECT_LE(split_max, 0.6 * static_max);
  EXPECT_LT(least_max, static_max);
  EXPECT_GT(least_min, static_min);
  std::printf(
      "20 permutations: busiest link %.0f static, %.0f split, %.0f least-loaded; slowest flow "
      "%.2f, %.2f, %.2f\n",
      static_max, split_max, least_max, static_min / 20, split_min / 20, least_min / 20);
  // Without groups adaptive is static.
  const auto plain = routed(f, "ftree");
  const auto s = run_traffic(f, plain, Pattern::kPermutation, false);
  const auto a = run_traffic(f, plain, Pattern::kPermutation, true);
  EXPECT_EQ(a.max_link_flows, s.max_link_flows);
  EXPECT_DOUBLE_EQ(a.mean_flow_throughput, s.mean_flow_throughput);
}

// A failed link before the SM reroutes: static tables black-hole the flows that cross it;
// adaptive routing leaves the dead port for the group's others at once.
TEST(Traffic, AFailedLinkBlackHolesStaticFlowsButNotAdaptiveOnes) {
  auto f = with_lids("ft2:leaves=4,spines=2,hosts=2");
  Options o;
  o.adaptive = true;
  const auto t = routed(f, "ftree", o);  // on the whole tree
  const auto leaf = *f.find_by_name("leaf0");
  PortNum up = 0;
  for (const auto& p : f.node(leaf).ports)
    if (p.num && p.linked() && f.node(p.peer).is_switch()) up = p.num;
  ASSERT_NE(up, 0);
  f.disconnect(leaf, up);
  for (ArRule rule : {ArRule::kSplit, ArRule::kLeastLoaded}) {
    TrafficOptions to;
    to.rule = rule;
    const auto s = run_traffic(f, t, Pattern::kAllToAll, false, to);
    const auto a = run_traffic(f, t, Pattern::kAllToAll, true, to);
    EXPECT_GT(s.blackholed, 0u);
    EXPECT_EQ(a.blackholed, 0u);
    EXPECT_GT(a.min_flow_throughput, 0);
    EXPECT_EQ(s.min_flow_throughput, 0);
  }
}

// The AR check `weft sim --json` reports: the engines' own groups pass, and a choice that
// leads back up (a spine sending a leaf's LID to another leaf) is found.
TEST(Traffic, AdaptiveChoicesAreCheckedToBringEveryHopNearer) {
  const auto f = with_lids("ft2:leaves=4,spines=2,hosts=2,links=2");
  Options o;
  o.adaptive = true;
  auto t = (*make_engine("ftree"))->compute(f, o);
  ASSERT_TRUE(t) << t.error().message;
  const auto groups = group_choices(*t);
  const auto good = verify_adaptive(f, *t, groups);
  EXPECT_TRUE(good.ok()) << good.first_problem;
  EXPECT_GT(good.entries, 0u);
  EXPECT_GT(good.choices, good.entries);
  const auto spine = *f.find_by_name("spine0");
  const auto h = *f.find_by_name("h1-0");
  const uint16_t lid = f.node(h).ports[1].attrs.lid.value;
  const auto bad =
      verify_adaptive(f, *t, [&](fabric::NodeIndex n, uint16_t l, std::vector<PortNum>& out) {
        groups(n, l, out);
        if (n == spine && l == lid) out.push_back(1);  // port 1: a link to leaf0
      });
  EXPECT_EQ(bad.bad, 1u);
  EXPECT_NE(bad.first_problem.find("leads no nearer"), std::string::npos) << bad.first_problem;
}
