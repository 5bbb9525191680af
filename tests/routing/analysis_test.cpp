#include <gtest/gtest.h>

#include <map>

#include "test_fabrics.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/sm/lid_manager.hpp"

using namespace weft;
using namespace weft::fabric;
using namespace weft::routing;
using weft::testing::port_to;
using weft::testing::with_lids;

namespace {

Tables minhop(const Fabric& f) {
  return weft::testing::routed(f, "minhop");
}

// The busiest directed inter-switch link by walking every CA pair, independently.
uint64_t brute_force_max_load(const Fabric& f, const Tables& t) {
  std::map<std::pair<NodeIndex, PortNum>, uint64_t> load;
  std::vector<NodeIndex> cas;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (!f.node(n).is_switch()) cas.push_back(n);
  for (NodeIndex s : cas)
    for (NodeIndex d : cas) {
      if (s == d) continue;
      uint16_t lid = f.node(d).ports[1].attrs.lid.value;
      NodeIndex cur = f.node(s).ports[1].peer;
      for (int guard = 0; guard < 64; ++guard) {
        PortNum out = t.lft[cur][lid];
        const auto& p = f.node(cur).ports[out];
        if (!f.node(p.peer).is_switch()) break;
        ++load[{cur, out}];
        cur = p.peer;
      }
    }
  uint64_t max = 0;
  for (auto& [k, v] : load) max = std::max(max, v);
  return max;
}

}  // namespace

TEST(Analysis, TinyTreeByHand) {
  Fabric f = with_lids("ft2:leaves=2,spines=2,hosts=2");
  auto m = analyze(f, minhop(f));
  EXPECT_EQ(m.ca_pairs, 12u);  // 4 CAs, each to the 3 others
  EXPECT_EQ(m.reachable, 12u);
  EXPECT_DOUBLE_EQ(m.reachable_pct, 100.0);
  EXPECT_EQ(m.isl_count, 8u);  // 2 leaves x 2 spines, both directions
  // 8 cross-leaf pairs, 2 inter-switch hops each, over 8 links: 2 per link when balanced.
  EXPECT_DOUBLE_EQ(m.mean_link_load, 2.0);
  EXPECT_EQ(m.max_link_load, 2u);
  EXPECT_EQ(m.unused_links, 0u);
  EXPECT_EQ(m.max_hops, 2u);
  EXPECT_DOUBLE_EQ(m.stretch_max, 1.0);
}

TEST(Analysis, EverythingThroughOneSpine) {
  Fabric f = with_lids("ft2:leaves=2,spines=2,hosts=2");
  Tables t = minhop(f);
  NodeIndex leaf0 = *f.find_by_name("leaf0"), leaf1 = *f.find_by_name("leaf1");
  for (NodeIndex leaf : {leaf0, leaf1}) {
    NodeIndex other = leaf == leaf0 ? leaf1 : leaf0;
    for (const auto& p : f.node(other).ports)
      if (p.linked() && !f.node(p.peer).is_switch())
        t.lft[leaf][f.node(p.peer).ports[p.peer_port].attrs.lid.value] = port_to(f, leaf, "spine0");
  }
  auto m = analyze(f, t);
  EXPECT_EQ(m.max_link_load, 4u);  // 2 hosts x 2 destinations up one link
  EXPECT_EQ(m.unused_links, 4u);   // spine1 carries nothing
  EXPECT_EQ(m.reachable, 12u);
}

TEST(Analysis, LoopsDropsAndDetours) {
  Fabric f = with_lids("ft2:leaves=3,spines=2,hosts=1");
  Tables t = minhop(f);
  NodeIndex leaf0 = *f.find_by_name("leaf0"), spine0 = *f.find_by_name("spine0");
  NodeIndex spine1 = *f.find_by_name("spine1"), leaf2 = *f.find_by_name("leaf2");
  uint16_t h1 = f.node(*f.find_by_name("h1-0")).ports[1].attrs.lid.value;
  uint16_t h2 = f.node(*f.find_by_name("h2-0")).ports[1].attrs.lid.value;
  // h1: leaf0 -> spine0 -> leaf0: a loop for every source that reaches leaf0 or spine0.
  t.lft[leaf0][h1] = port_to(f, leaf0, "spine0");
  t.lft[spine0][h1] = port_to(f, spine0, "leaf0");
  // h2: spine1 drops it.
  t.lft[spine1][h2] = kDropPort;
  auto m = analyze(f, t);
  EXPECT_GT(m.looping, 0u);
  EXPECT_LT(m.reachable, m.ca_pairs);
  EXPECT_LT(m.reachable_pct, 100.0);
  // A detour: leaf2 sends h0's traffic through leaf1 (4 switch hops instead of 2).
  Tables d = minhop(f);
  uint16_t h0 = f.node(*f.find_by_name("h0-0")).ports[1].attrs.lid.value;
  NodeIndex leaf1 = *f.find_by_name("leaf1");
  d.lft[leaf2][h0] = port_to(f, leaf2, "spine1");
  d.lft[spine1][h0] = port_to(f, spine1, "leaf1");
  d.lft[leaf1][h0] = port_to(f, leaf1, "spine0");
  d.lft[spine0][h0] = port_to(f, spine0, "leaf0");
  auto md = analyze(f, d);
  EXPECT_EQ(md.reachable, md.ca_pairs);
  EXPECT_EQ(md.max_hops, 4u);
  EXPECT_GT(md.stretched_pairs, 0u);
  EXPECT_DOUBLE_EQ(md.stretch_max, 5.0 / 3.0);  // (4+1)/(2+1)
}

class AnalysisMatchesBruteForce : public ::testing::TestWithParam<std::string> {};

TEST_P(AnalysisMatchesBruteForce, MaxLinkLoad) {
  Fabric f = with_lids(GetParam());
  Tables t = minhop(f);
  auto m = analyze(f, t);
  EXPECT_EQ(m.max_link_load, brute_force_max_load(f, t));
  EXPECT_DOUBLE_EQ(m.reachable_pct, 100.0);
  EXPECT_EQ(m.looping, 0u);
  EXPECT_DOUBLE_EQ(m.stretch_max, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Generated, AnalysisMatchesBruteForce,
                         ::testing::Values("ft3:pods=3,leaves=3,aggs=3,hosts=2,cores=2",
                                           "torus:dims=4x4,hosts=2",
                                           "random:switches=20,degree=4,hosts=2,seed=4"));

class UpDownOnFabric : public ::testing::TestWithParam<std::string> {};

TEST_P(UpDownOnFabric, CompleteLoopFreeAndDeadlockFree) {
  Fabric f = with_lids(GetParam());
  auto t = (*make_engine("updn"))->compute(f, {});
  ASSERT_TRUE(t) << t.error().message;
  auto v = verify_lfts(f, *t);
  EXPECT_TRUE(v.ok()) << v.first_problem;  // switch LIDs included
  auto cdg = channel_dependencies(f, *t);
  EXPECT_TRUE(cdg.acyclic) << "cycle of " << cdg.cycle_length << " channels";
  EXPECT_GT(cdg.dependencies, 0u);
  EXPECT_FALSE(t->notes.empty());
  auto again = (*make_engine("updn"))->compute(f, {});
  EXPECT_EQ(again->lft, t->lft);
}

INSTANTIATE_TEST_SUITE_P(Generated, UpDownOnFabric,
                         ::testing::Values("ft2:leaves=6,spines=3,hosts=2",
                                           "ft3:pods=3,leaves=2,aggs=2,hosts=2,cores=2",
                                           "torus:dims=4x4x4,hosts=1", "mesh:dims=5x5,hosts=1",
                                           "random:switches=30,degree=4,hosts=2,seed=1",
                                           "random:switches=40,degree=6,hosts=1,seed=8"));

TEST(Cdg, MinHopOnATorusHasACycleAndTheCheckFindsIt) {
  Fabric f = with_lids("torus:dims=5x5,hosts=1");
  auto cdg = channel_dependencies(f, minhop(f));
  EXPECT_FALSE(cdg.acyclic);
  EXPECT_GE(cdg.cycle_length, 4u);
}

// Layered tables are walked per VL from every switch: with every path on one SL the
// walk finds exactly the dependencies of the plain check, and a cycle is found on the
// VL that holds it.
TEST(Cdg, LayeredWalkAgreesWithTheSingleVlCheck) {
  for (const char* spec : {"torus:dims=5x5,hosts=1", "random:switches=30,degree=4,hosts=2,seed=4",
                           "ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4"}) {
    Fabric f = with_lids(spec);
    Tables plain = minhop(f);
    const CdgReport want = channel_dependencies(f, plain);
    Tables on = plain;
    on.path_sl.assign(f.size(), {});
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch()) on.path_sl[n].assign(size_t(plain.top_lid) + 1, 0);
    const CdgReport sl0 = channel_dependencies(f, on);
    EXPECT_EQ(sl0.dependencies, want.dependencies) << spec;
    EXPECT_EQ(sl0.acyclic, want.acyclic) << spec;
    // Everything on SL 1 but one switch's paths: VL 1 holds what VL 0 held before.
    bool first = true;
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch())
        std::fill(on.path_sl[n].begin(), on.path_sl[n].end(), first ? 0 : 1), first = false;
    const CdgReport sl1 = channel_dependencies(f, on);
    EXPECT_EQ(sl1.vls, 2u) << spec;
    EXPECT_EQ(sl1.acyclic, want.acyclic) << spec;
    if (!want.acyclic) {
      EXPECT_EQ(sl1.cyclic_vl, 1) << spec;
    }
    EXPECT_GE(sl1.dependencies, want.dependencies) << spec;
    // Every path on SL 1 (each LID on one VL, which the check marks switch by switch, not
    // by walks): VL 1 holds all, VL 0 nothing.
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch()) std::fill(on.path_sl[n].begin(), on.path_sl[n].end(), 1);
    const CdgReport all1 = channel_dependencies(f, on);
    EXPECT_EQ(all1.vls, 2u) << spec;
    EXPECT_EQ(all1.dependencies, want.dependencies) << spec;
    EXPECT_EQ(all1.acyclic, want.acyclic) << spec;
    if (!want.acyclic) {
      EXPECT_EQ(all1.cyclic_vl, 1) << spec;
    }
  }
}

// The up/down shortcut must agree with the full check whenever its promise holds,
// which it always does when every LID may turn: any heights, any tables.
TEST(Cdg, UpDownCheckAgreesWithTheFullCheck) {
  size_t cyclic = 0, acyclic = 0;
  for (const std::string spec :
       {"torus:dims=5x5,hosts=1", "mesh:dims=4x4,hosts=1",
        "ft3:pods=3,leaves=2,aggs=2,hosts=2,cores=2", "random:switches=20,degree=4,hosts=2,seed=4",
        "dragonfly:groups=4,routers=3,hosts=1"}) {
    Fabric f = with_lids(spec);
    std::vector<uint16_t> all;
    for (const LidOwner& o : lid_owners(f)) all.push_back(o.lid.value);
    for (const std::string engine : {"minhop", "updn"}) {
      const Tables t = weft::testing::routed(f, engine);
      const CdgReport full = channel_dependencies(f, t);
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        // Distinct heights in a seeded order.
        std::vector<uint32_t> height(f.size());
        for (NodeIndex n = 0; n < f.size(); ++n) height[n] = n;
        uint64_t x = seed;
        for (size_t i = height.size() - 1; i > 0; --i) {
          x = x * 6364136223846793005ull + 1442695040888963407ull;
          std::swap(height[i], height[(x >> 33) % (i + 1)]);
        }
        const CdgReport part = updown_dependencies(f, t, height, all);
        EXPECT_EQ(part.acyclic, full.acyclic) << spec << " " << engine << " seed " << seed;
        EXPECT_LE(part.channels, full.channels);
        // Every LID turning: an engine's scan of the turning LIDs alone is the same scan.
        const CdgReport own = updown_dependencies(f, t, height, all, TurnScan::kTurningOnly);
        EXPECT_EQ(own.acyclic, part.acyclic);
        EXPECT_EQ(own.channels, part.channels);
        EXPECT_EQ(own.dependencies, part.dependencies);
        ++(full.acyclic ? acyclic : cyclic);
      }
    }
  }
  EXPECT_GT(cyclic, 0u);  // both answers were put to the test
  EXPECT_GT(acyclic, 0u);
}

// Where only some LIDs may turn, the search covers only what lies above their turns.
TEST(Cdg, UpDownCheckSearchesAboveTheTurnsOnly) {
  Fabric f = with_lids("ft3:pods=4,leaves=3,aggs=3,hosts=2,cores=3");
  const Tables t = weft::testing::routed(f, "ftree");
  // Heights: levels (leaves 0, aggregation 1, cores 2), as ftree routes.
  std::vector<uint32_t> height(f.size(), 0);
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const std::string& name = f.node(n).name;
    height[n] = name.starts_with("core") ? 2 : name.starts_with("agg") ? 1 : 0;
  }
  const CdgReport full = channel_dependencies(f, t);
  ASSERT_TRUE(full.acyclic);
  // A wrong promise (only CA LIDs turn) is not trusted: routes to switch LIDs turn
  // (aggregation switch to aggregation switch), so the whole graph is checked.
  std::vector<uint16_t> cas, switches;
  for (const LidOwner& o : lid_owners(f))
    (f.node(o.node).is_switch() ? switches : cas).push_back(o.lid.value);
  const CdgReport lie = updown_dependencies(f, t, height, cas);
  EXPECT_TRUE(lie.acyclic);
  EXPECT_EQ(lie.channels, full.channels);
  EXPECT_EQ(lie.dependencies, full.dependencies);
  // The right one: only the part above the turns is searched.
  const CdgReport some = updown_dependencies(f, t, height, switches);
  EXPECT_TRUE(some.acyclic);
  EXPECT_GT(some.channels, 0u);
  EXPECT_LT(some.channels, full.channels);
  // An engine's own check looks only at the turning LIDs' routes: it finds the same
  // turns, and it trusts the rest (a wrong promise is the chain's full check's to catch).
  const CdgReport own = updown_dependencies(f, t, height, switches, TurnScan::kTurningOnly);
  EXPECT_EQ(own.channels, some.channels);
  EXPECT_EQ(own.dependencies, some.dependencies);
  const CdgReport trusted = updown_dependencies(f, t, height, cas, TurnScan::kTurningOnly);
  EXPECT_TRUE(trusted.acyclic);
  EXPECT_LT(trusted.channels, full.channels);
}

TEST(UpDown, GivenRootsAreUsedOrRefusedClearly) {
  Fabric f = with_lids("ft2:leaves=4,spines=2,hosts=1");
  Options o;
  o.roots = {f.node(*f.find_by_name("leaf0")).guid};
  auto t = (*make_engine("updn"))->compute(f, o);
  ASSERT_TRUE(t) << t.error().message;  // one root: always complete
  EXPECT_TRUE(verify_lfts(f, *t).ok());
  EXPECT_TRUE(channel_dependencies(f, *t).acyclic);
  o.roots = {Guid{0x1234}};
  auto bad = (*make_engine("updn"))->compute(f, o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("is not a switch of this fabric"), std::string::npos);
}
