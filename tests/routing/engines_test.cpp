// Property tests for every routing engine on generated fabrics: complete (switch
// LIDs too) and loop-free, or a typed refusal; deadlock-free engines have an
// acyclic channel dependency graph on every VL; up/down-style routes never turn
// down then up; the same input gives the same tables.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "../fuzz.hpp"
#include "test_fabrics.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/lft_dump.hpp"
#include "weft/routing/torus.hpp"
#include "weft/routing/traffic.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/whatif.hpp"

using namespace weft;
using namespace weft::fabric;
using namespace weft::routing;
using weft::testing::with_lids;

namespace {

struct Case {
  std::string spec;
  uint32_t fail_links = 0;                // random inter-switch links taken out
  std::vector<std::string> fail_hosts{};  // "leaf:port" CA links taken out (partial population)
};

std::string case_name(const Case& c) {
  std::string n = c.spec + (c.fail_links ? "_minus" + std::to_string(c.fail_links) : "") +
                  (c.fail_hosts.empty() ? "" : "_partial");
  for (auto& ch : n)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << case_name(c);
}

Fabric build(const Case& c) {
  Fabric f = with_lids(c.spec);
  simulator::Failures fl;
  fl.random_links = c.fail_links;
  fl.links = c.fail_hosts;
  fl.seed = 11;
  auto r = simulator::apply_failures(f, fl);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return f;
}

const Case kCases[] = {
    {"ft2:leaves=6,spines=3,hosts=3"},
    {"ft2:leaves=6,spines=3,hosts=5,links=2"},
    {"ft2:leaves=6,spines=3,hosts=3", 0, {"leaf1:1", "leaf1:2", "leaf4:3"}},
    {"ft2:leaves=6,spines=3,hosts=3", 3},
    {"ft3:pods=3,leaves=3,aggs=3,hosts=3,cores=3"},
    {"ft3:pods=4,leaves=2,aggs=2,hosts=3,cores=2,links=2"},
    {"ft3:pods=3,leaves=3,aggs=3,hosts=3,cores=3", 4},
    {"ft3:pods=3,leaves=3,aggs=3,hosts=3,cores=3", 0, {"leaf0-0:1", "leaf2-1:2"}},
    {"torus:dims=4x4x4,hosts=1"},
    {"torus:dims=5x3,hosts=2"},
    {"mesh:dims=4x4,hosts=1"},
    {"dragonfly:groups=5,routers=4,global=1,hosts=2"},
    {"random:switches=20,degree=4,hosts=2,seed=5"},
    {"random:switches=20,degree=4,hosts=2,seed=5", 5},
    // Spines of more than 64 switch links: their candidate masks take two words.
    {"ft2:leaves=70,spines=2,hosts=1"},
    {"ft2:leaves=70,spines=2,hosts=1", 0, {"leaf3:2", "leaf68:1"}},
};

// Engines that claim deadlock freedom.
bool deadlock_free(std::string_view e) {
  return e != "minhop";
}

class EngineOnFabric : public ::testing::TestWithParam<std::tuple<std::string, Case>> {};

TEST_P(EngineOnFabric, CompleteOrRefusedAndDeadlockFreeWhereClaimed) {
  const auto& [label, c] = GetParam();
  const Fabric f = build(c);
  // "dfsssp-large": dfsssp the way it routes large fabrics (one balancing pass,
  // destinations in pairs on two cores, branches before paths), here on small ones.
  const std::string name = label == "dfsssp-large" ? "dfsssp" : label;
  Options opts;
  if (label == "dfsssp-large") opts.large_fabric = 0;
  auto engine = make_engine(name);
  ASSERT_TRUE(engine);
  auto t = (*engine)->compute(f, opts);
  if (!t) {
    // A refusal is typed and says why; only some engines may refuse some fabrics.
    EXPECT_FALSE(t.error().message.empty());
    EXPECT_TRUE(t.error().message.starts_with(name + ":")) << t.error().message;
    const bool tree = c.spec.starts_with("ft");
    if (name == "ftree") {
      EXPECT_TRUE(!tree || c.fail_links) << "ftree refused a tree: " << t.error().message;
    } else if (name == "dnup") {
      // dnup routes every whole, partly populated or degraded tree (it ranks from the
      // switches with CAs, as OpenSM's does, so its routes climb to the spines and
      // descend; the pairs of a spine cut from a pod are bridged, on a VL of their own
      // where they would close a cycle). It may refuse where every switch has CAs (it
      // ranks from the centre then, and a switch with no neighbour farther from the
      // centre, a mesh's corner, cannot climb away from it to reach another).
      EXPECT_TRUE(!tree) << "dnup refused " << c.spec << ": " << t.error().message;
      EXPECT_EQ(t.error().kind, Refusal::kTopology) << t.error().message;
      EXPECT_NE(t.error().message.find("no down*up* path"), std::string::npos) << t.error().message;
    } else {
      ADD_FAILURE() << name << " refused: " << t.error().message;
    }
    return;
  }
  const auto v = verify_lfts(f, *t);
  EXPECT_TRUE(v.ok()) << v.first_problem;
  EXPECT_EQ(v.unreachable, 0u);
  EXPECT_EQ(v.loops, 0u);
  const auto m = analyze(f, *t);
  EXPECT_EQ(m.reachable, m.ca_pairs);
  if (deadlock_free(name)) {
    const auto cdg = channel_dependencies(f, *t);
    EXPECT_TRUE(cdg.acyclic) << "cycle of " << cdg.cycle_length << " on VL " << cdg.cyclic_vl;
    EXPECT_LE(cdg.vls, 8u);
    EXPECT_EQ(cdg.vls, std::max<uint32_t>(1, t->vls));
  }
  // Same input, same tables.
  auto again = (*engine)->compute(f, opts);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->lft, t->lft);
  EXPECT_EQ(again->path_sl, t->path_sl);
}

INSTANTIATE_TEST_SUITE_P(Generated, EngineOnFabric,
                         ::testing::Combine(::testing::Values("minhop", "updn", "dnup", "ftree",
                                                              "dfsssp", "dfsssp-large"),
                                            ::testing::ValuesIn(kCases)),
                         [](const auto& info) {
                           std::string e = std::get<0>(info.param);
                           std::replace(e.begin(), e.end(), '-', '_');
                           return e + "_" + case_name(std::get<1>(info.param));
                         });

// Switch hops from the nearest of `from`, by a plain BFS over inter-switch links.
std::map<NodeIndex, int> hops_from(const Fabric& f, const std::vector<NodeIndex>& from) {
  std::map<NodeIndex, int> d;
  std::deque<NodeIndex> q;
  for (NodeIndex n : from)
    if (!d.contains(n)) d[n] = 0, q.push_back(n);
  while (!q.empty()) {
    NodeIndex u = q.front();
    q.pop_front();
    for (const auto& p : f.node(u).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch() && !d.contains(p.peer))
        d[p.peer] = d[u] + 1, q.push_back(p.peer);
  }
  return d;
}

// Levels as the ftree engine defines them: hops from the nearest switch with CAs.
std::map<NodeIndex, int> levels(const Fabric& f) {
  std::vector<NodeIndex> leaves;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (f.node(n).is_switch())
      for (const auto& p : f.node(n).ports)
        if (p.num && p.linked() && !f.node(p.peer).is_switch()) {
          leaves.push_back(n);
          break;
        }
  return hops_from(f, leaves);
}

// Every CA-to-CA route of ftree climbs and then descends: never down then up.
TEST(FatTree, CaRoutesNeverTurnDownThenUp) {
  for (const char* spec :
       {"ft2:leaves=6,spines=3,hosts=3", "ft3:pods=3,leaves=3,aggs=3,hosts=3,cores=3"}) {
    Fabric f = with_lids(spec);
    auto t = (*make_engine("ftree"))->compute(f, {});
    ASSERT_TRUE(t) << t.error().message;
    auto lv = levels(f);
    for (auto [src, sp] : topology_order(f))
      for (auto [dst, dp] : topology_order(f)) {
        if (src == dst) continue;
        const uint16_t lid = f.node(dst).ports[dp].attrs.lid.value;
        NodeIndex cur = f.node(src).ports[sp].peer;
        bool descended = false;
        for (int hop = 0; hop < 16 && f.node(cur).is_switch(); ++hop) {
          const auto& p = f.node(cur).ports[t->lft[cur][lid]];
          if (!f.node(p.peer).is_switch()) break;
          const bool up = lv[p.peer] > lv[cur];
          EXPECT_FALSE(descended && up) << spec << ": down then up toward LID " << lid;
          descended |= !up;
          cur = p.peer;
        }
      }
  }
}

// With the roots given, every updn route climbs (toward lower rank) then descends, and
// dnup's the reverse; only the routes the engine declares turning (a tree's top
// switches toward each other, bridged) are exempt.
TEST(UpDown, RoutesNeverTurnTheWrongWay) {
  Fabric f = with_lids("ft3:pods=3,leaves=3,aggs=3,hosts=2,cores=2");
  // updn from one core: with more, a tree's top switches have no up*down* path to
  // each other's LIDs, and updn refuses given roots that leave pairs unrouted. dnup
  // from the leaves, as it ranks a tree itself. Mirrored about a core, dnup leaves
  // pairs from and to the other switches without CAs unrouted; bridged, they close
  // a cycle on one VL, so they are layered onto a second, and refused with one VL.
  Options from_core, from_leaves;
  from_core.roots.push_back(f.node(*f.find_by_name("core1-0")).guid);
  for (auto [n, lv] : levels(f))
    if (lv == 0) from_leaves.roots.push_back(f.node(n).guid);
  {
    auto layered = (*make_engine("dnup"))->compute(f, from_core);
    ASSERT_TRUE(layered) << layered.error().message;
    EXPECT_EQ(layered->vls, 2);
    EXPECT_TRUE(channel_dependencies(f, *layered).acyclic);
    Options one_vl = from_core;
    one_vl.max_vls = 1;
    auto refused = (*make_engine("dnup"))->compute(f, one_vl);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, Refusal::kTopology);
  }
  for (const char* name : {"updn", "dnup"}) {
    const bool reverse = std::string(name) == "dnup";
    const Options& o = reverse ? from_leaves : from_core;
    // Rank: hops from the nearest root.
    std::vector<NodeIndex> root_nodes;
    for (Guid g : o.roots) root_nodes.push_back(*f.find(g));
    auto rank = hops_from(f, root_nodes);
    auto up = [&](NodeIndex a, NodeIndex b) {
      return rank[b] < rank[a] || (rank[b] == rank[a] && f.node(b).guid < f.node(a).guid);
    };
    auto t = (*make_engine(name))->compute(f, o);
    ASSERT_TRUE(t) << t.error().message;
    const std::set<uint16_t> turning(t->updown_turning.begin(), t->updown_turning.end());
    size_t walked = 0;
    for (NodeIndex s = 0; s < f.size(); ++s) {
      if (!f.node(s).is_switch()) continue;
      for (const auto& ow : lid_owners(f)) {
        if (turning.contains(ow.lid.value)) continue;
        NodeIndex cur = s;
        bool turned = false;
        for (int hop = 0; hop < 16; ++hop) {
          const PortNum out = t->lft[cur][ow.lid.value];
          if (out == 0) break;
          const auto& p = f.node(cur).ports[out];
          if (!f.node(p.peer).is_switch()) break;
          const bool climbs = up(cur, p.peer) != reverse;
          EXPECT_FALSE(turned && climbs)
              << name << " turns the wrong way toward LID " << ow.lid.value;
          turned |= !climbs;
          cur = p.peer;
          ++walked;
        }
      }
    }
    EXPECT_GT(walked, 0u);
  }
}

// LIDs in the order a directed-route sweep from the first CA meets the ports (breadth
// first, ports in order), as an SM on a live fabric hands them out: another order than
// assign_lids' own, so an engine that balances by LID order shows it.
Fabric with_sweep_lids(Fabric f) {
  std::set<std::pair<NodeIndex, PortNum>> holds;
  for (auto np : f.lid_ports()) holds.insert(np);
  NodeIndex first = 0;
  while (first < f.size() && f.node(first).is_switch()) ++first;
  std::vector<char> seen(f.size(), 0);
  std::deque<NodeIndex> q{first};
  seen[first] = 1;
  uint16_t next = 1;
  while (!q.empty()) {
    const NodeIndex n = q.front();
    q.pop_front();
    for (auto& p : f.node(n).ports) {
      if (holds.contains({n, p.num})) p.attrs.lid = Lid{next++};
      if (p.num && p.linked() && !seen[p.peer]) seen[p.peer] = 1, q.push_back(p.peer);
    }
  }
  return f;
}

// updn and dnup have every shortest path of a fat tree to choose from, as minhop
// has, and balance as well: their busiest link within 1.15x of minhop's on the same
// fabric and LIDs, under two LID orders. (Before each switch took its destinations in
// an order of its own, updn's busiest link on the 6-ary 3-tree was 3.8x minhop's.)
// Trees with failed inter-switch links too: the pairs a cut spine leaves without an
// up*down* path close a cycle when bridged on one VL, so the routes are layered over
// two (before, the cut spines were left out of the roots and their transit lost: up
// to 2.3x minhop's busiest link, and dnup refused). The known gap, held at what it is
// so that it cannot grow: irregular graphs, where up*down* funnels routes toward the
// root, within 3.1x of dfsssp's (2.1-3.0x here; the target is 1.5x).
TEST(UpDown, BalancesTreesAsWellAsMinhop) {
  const Case trees[] = {
      {"ft2:leaves=6,spines=3,hosts=3"},
      {"ft2:leaves=12,spines=6,hosts=6,links=2"},
      {"ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4"},  // the 4-ary 3-tree
      {"ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6"},  // the 6-ary 3-tree
      {"ft3:pods=4,leaves=6,aggs=4,hosts=6,cores=2,links=2"},
      {"ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6", 0, {"leaf0-0:1", "leaf0-0:2", "leaf3-2:4"}},
      {"ft2:leaves=6,spines=3,hosts=3", 0, {"leaf1:1", "leaf1:2", "leaf4:3"}},
      {"ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6", 6},
      {"ft3:pods=3,leaves=3,aggs=3,hosts=3,cores=3", 4},
      {"ft2:leaves=12,spines=6,hosts=6", 4},
  };
  for (const Case& c : trees)
    for (const bool sweep_order : {false, true}) {
      const Fabric f = sweep_order ? with_sweep_lids(build(c)) : build(c);
      const std::string what = case_name(c) + (sweep_order ? " (sweep LIDs)" : " (weft LIDs)");
      const uint64_t minhop = analyze(f, weft::testing::routed(f, "minhop")).max_link_load;
      ASSERT_GT(minhop, 0u) << what;
      for (const char* e : {"updn", "dnup"}) {
        const uint64_t load = analyze(f, weft::testing::routed(f, e)).max_link_load;
        EXPECT_LE(double(load), 1.15 * double(minhop))
            << what << ": " << e << "'s busiest link " << load << ", minhop's " << minhop;
      }
    }
  for (const std::string spec :
       {"random:switches=20,degree=4,hosts=2,seed=5", "random:switches=40,degree=6,hosts=3,seed=2",
        "dragonfly:groups=5,routers=4,global=1,hosts=2", "torus:dims=4x4x4,hosts=1"}) {
    const Fabric f = with_lids(spec);
    const uint64_t dfsssp = analyze(f, weft::testing::routed(f, "dfsssp")).max_link_load;
    const uint64_t updn = analyze(f, weft::testing::routed(f, "updn")).max_link_load;
    EXPECT_LE(double(updn), 3.1 * double(dfsssp))
        << spec << ": updn's busiest link " << updn << ", dfsssp's " << dfsssp;
  }
}

// A degraded tree's bridged pairs close a cycle on one VL: updn layers the routes onto
// a second (only routes toward the bridged LIDs leave VL 0), each VL acyclic; with one
// VL allowed, or past Options::large_fabric, it leaves the cut spines out of the roots
// and stays on one VL, dearer in load.
TEST(UpDown, LayersADegradedTreeUnlessOneVlOrTooLarge) {
  const Fabric f = build({"ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6", 6});
  auto has = [](const Tables& t, const char* what) {
    return std::any_of(t.notes.begin(), t.notes.end(),
                       [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  for (const char* name : {"updn", "dnup"}) {
    auto layered = (*make_engine(name))->compute(f, {});
    ASSERT_TRUE(layered) << layered.error().message;
    EXPECT_EQ(layered->vls, 2) << name;
    EXPECT_TRUE(channel_dependencies(f, *layered).acyclic) << name;
    EXPECT_TRUE(has(*layered, "SL i must map to VL i")) << name;
    // VL 1 only on routes toward LIDs some switch has no up*down* path to.
    std::set<uint16_t> on_vl1;
    for (const auto& row : layered->path_sl)
      for (size_t lid = 0; lid < row.size(); ++lid)
        if (row[lid]) on_vl1.insert(static_cast<uint16_t>(lid));
    EXPECT_FALSE(on_vl1.empty()) << name;
    EXPECT_LT(on_vl1.size(), lid_owners(f).size() / 4) << name;
  }
  Options one_vl, small;
  one_vl.max_vls = 1;
  small.large_fabric = 1;
  for (const Options& o : {one_vl, small}) {
    auto t = (*make_engine("updn"))->compute(f, o);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->vls, 1);
    EXPECT_TRUE(t->path_sl.empty());
    EXPECT_TRUE(has(*t, "detected roots that reach every switch with CAs")) << t->notes.front();
    EXPECT_TRUE(channel_dependencies(f, *t).acyclic);
  }
}

// On full fat trees, ftree is d-mod-k: every shift round is free of congestion, and
// eBB beats minhop's.
TEST(FatTree, FullTreesAreShiftCongestionFree) {
  for (const char* spec :
       {"ft2:leaves=8,spines=4,hosts=4", "ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4"}) {
    Fabric f = with_lids(spec);
    auto ft = (*make_engine("ftree"))->compute(f, {});
    auto mh = (*make_engine("minhop"))->compute(f, {});
    ASSERT_TRUE(ft && mh);
    const auto pf = traffic_patterns(f, *ft), pm = traffic_patterns(f, *mh);
    EXPECT_EQ(pf.shift_max_congestion, 1u) << spec;
    EXPECT_EQ(pf.shift_congested_rounds, 0u) << spec;
    EXPECT_GT(pf.ebb, pm.ebb) << spec;
    EXPECT_GT(pm.shift_max_congestion, 1u) << spec << ": the test would not tell them apart";
  }
}

// ftree's port toward a CA follows the CA's index in topology order (d-mod-k), not its
// LID. A fresh row takes a run of CAs whose LIDs follow each other (as weft assigns them)
// as one stretch, other CAs entry by entry: the same fabric with its CAs' LIDs shuffled
// among them routes every CA the same way. With parallel links (links=2) a run may start
// inside one port's share of the destinations.
TEST(FatTree, RoutesEachCaAlikeWhetherItsLidsFollowEachOtherOrNot) {
  for (const char* spec :
       {"ft2:leaves=8,spines=4,hosts=6", "ft3:pods=4,leaves=6,aggs=4,hosts=5,cores=4,links=2",
        "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"}) {
    Fabric a = with_lids(spec), b = with_lids(spec);
    std::vector<std::pair<NodeIndex, PortNum>> cas;
    for (auto [n, p] : b.lid_ports())
      if (!b.node(n).is_switch()) cas.emplace_back(n, p);
    std::vector<Lid> lids;
    for (auto [n, p] : cas) lids.push_back(b.node(n).ports[p].attrs.lid);
    std::shuffle(lids.begin(), lids.end(), std::mt19937(7));
    for (size_t i = 0; i < cas.size(); ++i)
      b.node(cas[i].first).ports[cas[i].second].attrs.lid = lids[i];
    const Tables ta = weft::testing::routed(a, "ftree"), tb = weft::testing::routed(b, "ftree");
    size_t compared = 0, apart = 0;
    for (NodeIndex n = 0; n < a.size(); ++n) {
      if (!a.node(n).is_switch()) continue;
      for (auto [c, p] : cas) {
        const uint16_t la = a.node(c).ports[p].attrs.lid.value,
                       lb = b.node(c).ports[p].attrs.lid.value;
        ASSERT_EQ(ta.lft[n][la], tb.lft[n][lb])
            << spec << ": " << a.node(n).name << " to " << a.node(c).name;
        ++compared;
        apart += la != lb;
      }
    }
    EXPECT_EQ(compared, size_t(std::count_if(a.nodes().begin(), a.nodes().end(),
                                             [](const Node& x) { return x.is_switch(); })) *
                            cas.size())
        << spec;
    EXPECT_GT(apart, cas.size() / 2) << spec << ": the shuffle moved few LIDs";
  }
}

TEST(FatTree, RefusesWhatIsNotATreeWithAReason) {
  Fabric f = with_lids("torus:dims=3x3,hosts=1");
  auto t = (*make_engine("ftree"))->compute(f, {});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind, Refusal::kTopology);
  EXPECT_NE(t.error().message.find("not a fat tree"), std::string::npos);
  // A leaf cut from one of its two spines keeps its routes; toward that spine's LID
  // it turns, and the dependency graph stays acyclic.
  Fabric g = with_lids("ft2:leaves=4,spines=2,hosts=2");
  simulator::Failures fl;
  fl.links = {"leaf0:3"};
  ASSERT_TRUE(simulator::apply_failures(g, fl));
  auto r = (*make_engine("ftree"))->compute(g, {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(verify_lfts(g, *r).ok());
  EXPECT_TRUE(channel_dependencies(g, *r).acyclic);
}

TEST(Dfsssp, LayersATorusWithinEightVlsAndRefusesBelowWhatItNeeds) {
  Fabric f = with_lids("torus:dims=4x4x4,hosts=2");
  auto t = (*make_engine("dfsssp"))->compute(f, {});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_GE(t->vls, 2u);  // minimal routes on a torus have a cycle on one VL
  EXPECT_LE(t->vls, 8u);
  const auto cdg = channel_dependencies(f, *t);
  EXPECT_TRUE(cdg.acyclic);
  EXPECT_EQ(cdg.vls, t->vls);
  // The same routes on one VL have a cycle: the layers are what makes them safe. And
  // they are minimal.
  Tables one = *t;
  one.path_sl.clear();
  EXPECT_FALSE(channel_dependencies(f, one).acyclic);
  EXPECT_EQ(analyze(f, *t).stretch_max, 1.0);
  Options o;
  o.max_vls = static_cast<uint8_t>(t->vls - 1);
  auto fewer = (*make_engine("dfsssp"))->compute(f, o);
  ASSERT_FALSE(fewer);
  EXPECT_EQ(fewer.error().kind, Refusal::kVirtualLanes);
}

// Routes whose dependencies close no cycle on one VL are not layered: the layering's
// initial order finds that (a DFS edge back onto its stack) and stops. A DFS also meets
// edges into channels it has finished; those close nothing.
TEST(Dfsssp, RoutesWithoutACycleStayOnOneVlUnlayered) {
  for (const std::string spec : {"ft2:leaves=4,spines=1,hosts=2", "ft2:leaves=2,spines=2,hosts=2",
                                 "torus:dims=2x2,hosts=1"}) {
    const Fabric f = with_lids(spec);
    const auto t = (*make_engine("dfsssp"))->compute(f, {});
    ASSERT_TRUE(t) << spec << ": " << t.error().message;
    EXPECT_EQ(t->vls, 1u) << spec;
    EXPECT_TRUE(t->path_sl.empty()) << spec;
    EXPECT_TRUE(t->deadlock_free) << spec;
    EXPECT_TRUE(channel_dependencies(f, *t).acyclic) << spec;
    EXPECT_TRUE(std::ranges::any_of(t->notes, [](const std::string& n) {
      return n.find("no dependency cycle: 1 VL") != std::string::npos;
    })) << spec;
  }
  // A ring of four routes minimally both ways round: a cycle on one VL, so layered.
  const Fabric ring = with_lids("torus:dims=4,hosts=1");
  const auto t = (*make_engine("dfsssp"))->compute(ring, {});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->path_sl.empty());
  Tables one = *t;
  one.path_sl.clear();
  EXPECT_FALSE(channel_dependencies(ring, one).acyclic);
  EXPECT_TRUE(channel_dependencies(ring, *t).acyclic);
}

// dfsssp's large-fabric ways run on two cores; a one-core machine must get the same
// tables and SLs.
TEST(Dfsssp, TwoCoresAndOneGiveTheSameLayers) {
  for (const std::string spec :
       {"random:switches=30,degree=5,hosts=2,seed=3", "torus:dims=4x4x3,hosts=1",
        "dragonfly:groups=6,routers=3,global=2,hosts=1"}) {
    const Fabric f = with_lids(spec);
    Options two, one;
    two.large_fabric = one.large_fabric = 0;
    one.one_core = true;
    const auto a = (*make_engine("dfsssp"))->compute(f, two);
    const auto b = (*make_engine("dfsssp"))->compute(f, one);
    ASSERT_TRUE(a && b) << spec;
    EXPECT_GT(a->vls, 1) << spec << ": layered, so the pairs of layers were used";
    EXPECT_EQ(a->lft, b->lft) << spec;
    EXPECT_EQ(a->path_sl, b->path_sl) << spec;
    EXPECT_EQ(a->vls, b->vls) << spec;
  }
}

TEST(Chain, FallsBackInOrderAndKeepsEveryReason) {
  Fabric f = with_lids("torus:dims=3x3,hosts=1");
  auto chain = EngineChain::parse("ftree, updn,minhop");
  ASSERT_TRUE(chain) << chain.error().message;
  auto r = chain->compute(f, {});
  ASSERT_TRUE(r.tables);
  EXPECT_EQ(r.engine, "updn");
  ASSERT_EQ(r.fallbacks.size(), 1u);
  EXPECT_EQ(r.fallbacks[0].engine, "ftree");
  EXPECT_EQ(r.fallbacks[0].failure.kind, Refusal::kTopology);
  EXPECT_NE(r.summary().find("ftree refused (topology): ftree: not a fat tree"), std::string::npos)
      << r.summary();
  // Every engine refusing: no tables, every reason.
  Options o;
  o.max_vls = 1;
  auto only = EngineChain::parse("ftree,dfsssp");
  auto none = only->compute(with_lids("torus:dims=4x4,hosts=1"), o);
  EXPECT_FALSE(none.tables);
  EXPECT_EQ(none.fallbacks.size(), 2u);
  for (const char* bad : {"", "minhop,", "minhop,,updn", "updn,updn", "ftree,fastest", "ar_dfsssp",
                          "ar_", "ar_ftree,ftree"})
    EXPECT_FALSE(EngineChain::parse(bad)) << '"' << bad << '"';
  EXPECT_TRUE(EngineChain::parse("ftree,updn")->adaptive_names().empty());
}

// NVIDIA's SM names its adaptive-routing engines ar_updn, ar_ftree, ar_minhop, ar_dor: an
// opensm.conf written for it routes here with those engines (static tables), and says so.
TEST(Chain, NvidiasAdaptiveEngineNamesAreTheirStaticEngines) {
  auto chain = EngineChain::parse("ar_ftree, ar_updn,minhop");
  ASSERT_TRUE(chain) << chain.error().message;
  EXPECT_EQ(chain->names(), (std::vector<std::string_view>{"ftree", "updn", "minhop"}));
  EXPECT_EQ(chain->adaptive_names(), (std::vector<std::string>{"ar_ftree", "ar_updn"}));
  auto r = chain->compute(with_lids("ft2:leaves=2,spines=2,hosts=2"), {});
  ASSERT_TRUE(r.tables);
  EXPECT_EQ(r.engine, "ftree");
  for (const char* name : {"ar_minhop", "ar_dor"})
    EXPECT_EQ(EngineChain::parse(name)->adaptive_names().size(), 1u) << name;
}

namespace {

// An engine that promises deadlock freedom and hands out minhop's tables, which on a
// torus close dependency cycles; with `heights`, it also claims an up/down order its
// routes do not follow.
class Liar final : public RoutingEngine {
 public:
  explicit Liar(bool heights) : heights_(heights) {}
  std::string_view name() const override { return "liar"; }
  Routed compute(const Fabric& f, const Options& o) const override {
    auto t = (*make_engine("minhop"))->compute(f, o);
    if (!t) return t;
    t->deadlock_free = true;
    if (heights_)
      for (NodeIndex n = 0; n < f.size(); ++n) t->updown_height.push_back(n);
    return t;
  }

 private:
  bool heights_;
};

}  // namespace

TEST(Chain, TablesThatBreakTheirDeadlockPromiseAreRefusedBeforeAnyoneUsesThem) {
  Fabric f = with_lids("torus:dims=4x4,hosts=1");
  ASSERT_FALSE(channel_dependencies(f, weft::testing::routed(f, "minhop")).acyclic);
  for (bool heights : {false, true}) {
    SCOPED_TRACE(heights ? "with heights" : "full check");
    std::shared_ptr<const RoutingEngine> minhop = std::move(*make_engine("minhop"));
    auto chain = EngineChain::of({std::make_shared<Liar>(heights), minhop});
    auto r = chain.compute(f, {});
    ASSERT_TRUE(r.tables);
    EXPECT_EQ(r.engine, "minhop");
    ASSERT_EQ(r.fallbacks.size(), 1u);
    EXPECT_EQ(r.fallbacks[0].engine, "liar");
    EXPECT_EQ(r.fallbacks[0].failure.kind, Refusal::kCreditLoop);
    EXPECT_NE(r.summary().find("liar refused (credit-loop): liar: its tables close a credit loop"),
              std::string::npos)
        << r.summary();
    // Alone, it routes nothing.
    auto alone = EngineChain::of({std::make_shared<Liar>(heights)}).compute(f, {});
    EXPECT_FALSE(alone.tables);
  }
  // The engines that promise it keep it, and say it was checked.
  for (const char* spec : {"updn", "dnup", "dfsssp"}) {
    auto chain = EngineChain::parse(spec);
    ASSERT_TRUE(chain);
    auto r = chain->compute(f, {});
    ASSERT_TRUE(r.tables) << spec << ": " << r.summary();
    EXPECT_TRUE(r.tables->deadlock_free) << spec;
    EXPECT_TRUE(std::any_of(r.tables->notes.begin(), r.tables->notes.end(), [](const auto& n) {
      return n.find("deadlock freedom checked before programming") != std::string::npos;
    })) << spec;
  }
  auto tree = EngineChain::parse("ftree");
  auto ft = tree->compute(with_lids("ft3:pods=2,leaves=2,aggs=2,hosts=2,cores=2"), {});
  ASSERT_TRUE(ft.tables) << ft.summary();
  EXPECT_FALSE(ft.tables->updown_height.empty());
  // minhop promises nothing, and is not checked.
  auto mh = EngineChain::parse("minhop")->compute(f, {});
  ASSERT_TRUE(mh.tables);
  EXPECT_FALSE(mh.tables->deadlock_free);
}

TEST(LftDump, WriteThenReadGivesTheSameTablesAndLids) {
  Fabric f = with_lids("ft3:pods=2,leaves=2,aggs=2,hosts=2,cores=2");
  auto t = (*make_engine("ftree"))->compute(f, {});
  ASSERT_TRUE(t);
  std::stringstream ss;
  write_lft_dump(ss, f, *t);
  // Read into a copy whose LIDs are all wrong: the dump's destinations restore them.
  Fabric g = f;
  for (NodeIndex n = 0; n < g.size(); ++n)
    for (auto& p : g.node(n).ports)
      if (p.attrs.lid.is_unicast())
        p.attrs.lid = Lid{static_cast<uint16_t>(p.attrs.lid.value + 100)};
  auto d = read_lft_dump(ss, g, "dump");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->switches, f.num_switches());
  EXPECT_EQ(d->tables.lft, t->lft);
  for (NodeIndex n = 0; n < f.size(); ++n)
    for (size_t p = 0; p < f.node(n).ports.size(); ++p)
      EXPECT_EQ(g.node(n).ports[p].attrs.lid, f.node(n).ports[p].attrs.lid);
}

TEST(LftDump, BadInputNamesTheLine) {
  Fabric f = with_lids("ft2:leaves=2,spines=2,hosts=2");
  const std::pair<const char*, const char*> cases[] = {
      {"0x0001 001 : x\n", "d:1: LFT entry before any"},
      {"Unicast lids [0x0-0x3] of switch Lid 1 guid 0x00000000deadbeef (x):\n",
       "d:1: switch 0x00000000deadbeef is not a switch"},
      {"Unicast lids [0x0-0x3] of switch Lid 1 (x):\n", "d:1: switch header without"},
      {"Unicast lids [0x0-0x3] of switch Lid 1 guid 0x0002c90300001000 (x):\n0xc000 001 : x\n",
       "d:2: LID must be"},
      {"Unicast lids [0x0-0x3] of switch Lid 1 guid 0x0002c90300001000 (x):\n0x0001 zz\n",
       "d:2: expected an output port"},
      {"nothing here\n", "d: no \"Unicast lids"},
  };
  for (auto [text, want] : cases) {
    std::istringstream in(text);
    Fabric g = f;
    auto d = read_lft_dump(in, g, "d");
    ASSERT_FALSE(d) << text;
    EXPECT_NE(d.error().message.find(want), std::string::npos) << d.error().message;
  }
}

TEST(RootGuids, ReadsOpenSmStyleFilesAndNamesBadLines) {
  std::istringstream good("# roots\n0x0002c90300001004\n\n  0x0002C90300001005  # spine\n");
  auto g = read_guid_list(good, "r");
  ASSERT_TRUE(g) << g.error().message;
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[1].value, 0x0002c90300001005ull);
  std::istringstream bad("0x1\n0xZZ\n");
  auto b = read_guid_list(bad, "r");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("r:2:"), std::string::npos);
  std::istringstream empty("# nothing\n");
  EXPECT_FALSE(read_guid_list(empty, "r"));
}

}  // namespace

namespace {

TEST(Adaptive, GroupsHoldTheStaticPortAndOnlyNearerPorts) {
  for (const char* name : {"ftree", "updn", "minhop"}) {
    Fabric f = with_lids("ft3:pods=3,leaves=4,aggs=3,hosts=3,cores=2,links=2");
    Options o;
    o.adaptive = true;
    auto t = (*make_engine(name))->compute(f, o);
    ASSERT_TRUE(t) << t.error().message;
    ASSERT_EQ(t->ar_group.size(), f.size()) << name;
    auto lv = levels(f);
    size_t grouped = 0;
    for (const LidOwner& ow : lid_owners(f)) {
      const NodeIndex dsw =
          f.node(ow.node).is_switch() ? ow.node : f.node(ow.node).ports[ow.port].peer;
      auto d = hops_from(f, {dsw});
      for (NodeIndex n = 0; n < f.size(); ++n) {
        if (!f.node(n).is_switch()) continue;
        const uint16_t g = t->ar_group[n][ow.lid.value];
        if (g == Tables::kNoArGroup) continue;
        ++grouped;
        const auto& ports = t->ar_sets[n].at(g);
        const PortNum stat = t->lft[n][ow.lid.value];
        EXPECT_NE(std::find(ports.begin(), ports.end(), stat), ports.end()) << name;
        const NodeIndex stat_next = f.node(n).ports[stat].peer;
        for (PortNum p : ports) {
          const NodeIndex next = f.node(n).ports[p].peer;
          ASSERT_TRUE(f.node(next).is_switch()) << name;
          if (std::string(name) != "minhop") {  // nearer, in the static port's direction
            EXPECT_EQ(d[next] + 1, d[n]) << name << ": a group port that is not nearer";
            EXPECT_EQ(lv[next] > lv[n], lv[stat_next] > lv[n]) << name;
          } else {  // parallel links to the static route's next switch only
            EXPECT_EQ(next, stat_next) << name;
          }
        }
      }
    }
    EXPECT_GT(grouped, 0u) << name;
  }
}

TEST(Adaptive, FtreeLeavesMayUseEveryUpPortTowardOtherLeaves) {
  Fabric f = with_lids("ft2:leaves=4,spines=3,hosts=2");
  Options o;
  o.adaptive = true;
  auto t = (*make_engine("ftree"))->compute(f, o);
  ASSERT_TRUE(t);
  const NodeIndex leaf0 = *f.find_by_name("leaf0");
  const NodeIndex far = *f.find_by_name("h3-0");
  const uint16_t lid = f.node(far).ports[1].attrs.lid.value;
  const uint16_t g = t->ar_group[leaf0][lid];
  ASSERT_NE(g, Tables::kNoArGroup);
  EXPECT_EQ(t->ar_sets[leaf0][g].size(), 3u);  // the three spines
}

}  // namespace

namespace {

// The torus description of a generated torus or mesh: sw0-0-0 and its + neighbours.
TorusSpec spec_of(const Fabric& f, std::vector<int> radix, bool wrap) {
  TorusSpec t;
  t.radix = radix;
  t.wrap = wrap;
  auto name = [&](int d) {
    std::string s = "sw";
    for (size_t k = 0; k < radix.size(); ++k)
      fmt::format_to(std::back_inserter(s), "{}{}", k ? "-" : "", int(int(k) == d));
    return s;
  };
  t.seed = f.node(*f.find_by_name(name(-1))).guid;
  for (size_t d = 0; d < radix.size(); ++d)
    t.plus.push_back(f.node(*f.find_by_name(name(int(d)))).guid);
  return t;
}

struct DorCase {
  std::string spec;
  std::vector<int> radix;
  bool wrap;
  unsigned vls;  // 2 (VL per hop) with a dateline on some wrapped ring of radix 5 or more
};

TEST(Dor, RoutesToriAndMeshesInDimensionOrderDeadlockFree) {
  const DorCase cases[] = {
      {"torus:dims=4x4x4,hosts=1", {4, 4, 4}, true, 1},
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, true, 2},
      {"torus:dims=5x3,hosts=2", {5, 3}, true, 2},
      {"torus:dims=6x4,hosts=1", {6, 4}, true, 2},
      {"torus:dims=3x3x3,hosts=1", {3, 3, 3}, true, 1},
      {"mesh:dims=4x5,hosts=1", {4, 5}, false, 1},
      {"mesh:dims=2x3x4,hosts=1", {2, 3, 4}, false, 1},
      {"torus:dims=6,hosts=2", {6}, true, 2},
  };
  for (const auto& c : cases) {
    Fabric f = with_lids(c.spec);
    Options o;
    o.torus = spec_of(f, c.radix, c.wrap);
    auto t = (*make_engine("dor"))->compute(f, o);
    ASSERT_TRUE(t) << c.spec << ": " << t.error().message;
    EXPECT_TRUE(verify_lfts(f, *t).ok()) << c.spec;
    const auto m = analyze(f, *t);
    EXPECT_EQ(m.reachable, m.ca_pairs) << c.spec;
    EXPECT_EQ(m.stretch_max, 1.0) << c.spec;
    const auto cdg = channel_dependencies(f, *t);
    EXPECT_TRUE(cdg.acyclic) << c.spec << ": cycle on VL " << cdg.cyclic_vl;
    EXPECT_EQ(t->vls, c.vls) << c.spec;
    // Dimension order: along any route the dimension that changes never goes back.
    // (Names are sw<x>-<y>-<z>; a hop changes one coordinate.)
    auto coords = [&](NodeIndex n) {
      std::vector<int> v;
      std::string s = f.node(n).name.substr(2);
      for (size_t pos = 0; pos <= s.size();) {
        size_t dash = s.find('-', pos);
        v.push_back(std::stoi(s.substr(pos, dash - pos)));
        if (dash == std::string::npos) break;
        pos = dash + 1;
      }
      return v;
    };
    for (const LidOwner& ow : lid_owners(f))
      for (NodeIndex s = 0; s < f.size(); ++s) {
        if (!f.node(s).is_switch()) continue;
        NodeIndex cur = s;
        int last_dim = -1;
        for (int hop = 0; hop < 64; ++hop) {
          const auto& p = f.node(cur).ports[t->lft[cur][ow.lid.value]];
          if (t->lft[cur][ow.lid.value] == 0 || !f.node(p.peer).is_switch()) break;
          auto a = coords(cur), b = coords(p.peer);
          int dim = 0;
          while (a[size_t(dim)] == b[size_t(dim)]) ++dim;
          EXPECT_GE(dim, last_dim) << c.spec << ": dimension order broken";
          last_dim = dim;
          cur = p.peer;
        }
      }
  }
}

// Per-hop VL maps (Tables::hop_vl), checked on dor's routes of a 5x5x5 torus: maps that
// copy the SL give exactly the layered walk's dependencies (SL i on VL i); torus-2QoS's
// maps (a hop toward dimension d takes the SL's bit d), which are dor's own, carry the
// same paths on 2 VLs with no cycle; maps that put every hop on VL 0 close the rings'
// cycles, and the check finds one.
TEST(Cdg, HopVlMapsAreCheckedPerHop) {
  const Fabric f = with_lids("torus:dims=5x5x5,hosts=1");
  Options o;
  o.torus = spec_of(f, {5, 5, 5}, true);
  auto dor = (*make_engine("dor"))->compute(f, o);
  ASSERT_TRUE(dor) << dor.error().message;
  ASSERT_EQ(dor->vls, 2u);
  Tables plain = *dor;  // SL i on VL i
  plain.hop_vl.clear();
  const CdgReport layered = channel_dependencies(f, plain);
  ASSERT_TRUE(layered.acyclic);
  EXPECT_EQ(layered.vls, 8u);
  auto coords = [&](NodeIndex n) {  // sw<x>-<y>-<z>
    std::vector<int> v;
    std::string s = f.node(n).name.substr(2);
    for (size_t pos = 0;;) {
      const size_t dash = s.find('-', pos);
      v.push_back(std::stoi(s.substr(pos, dash - pos)));
      if (dash == std::string::npos) return v;
      pos = dash + 1;
    }
  };
  // vl(s, d): the VL of SL s on a hop toward dimension d (d = -1: toward an end port).
  auto with_maps = [&](auto vl) {
    Tables t = plain;
    t.hop_vl.assign(f.size(), {});
    for (NodeIndex n = 0; n < f.size(); ++n) {
      const auto& nd = f.node(n);
      if (!nd.is_switch()) continue;
      const size_t np = nd.ports.size();
      t.hop_vl[n].assign(np * np, ~uint64_t(0));
      for (const auto& out : nd.ports) {
        int d = -1;
        if (out.num && out.linked() && f.node(out.peer).is_switch()) {
          const auto a = coords(n), b = coords(out.peer);
          d = 0;
          while (a[size_t(d)] == b[size_t(d)]) ++d;
        }
        uint64_t map = ~uint64_t(0);
        for (unsigned sl = 0; sl < 8; ++sl) {
          map &= ~(uint64_t(0xF) << (4 * sl));
          map |= uint64_t(vl(sl, d)) << (4 * sl);
        }
        for (size_t in = 0; in < np; ++in) t.hop_vl[n][in * np + out.num] = map;
      }
    }
    return t;
  };
  const CdgReport same = channel_dependencies(f, with_maps([](unsigned sl, int) { return sl; }));
  EXPECT_TRUE(same.acyclic);
  EXPECT_EQ(same.dependencies, layered.dependencies);
  EXPECT_EQ(same.vls, 8u);
  const Tables two = with_maps([](unsigned sl, int d) { return d < 0 ? 0u : sl >> d & 1; });
  const CdgReport t2 = channel_dependencies(f, two);
  EXPECT_TRUE(t2.acyclic) << "cycle on VL " << t2.cyclic_vl;
  EXPECT_EQ(t2.vls, 2u);
  EXPECT_TRUE(adaptive_dependencies(f, two).acyclic);
  EXPECT_EQ(dor->hop_vl, two.hop_vl);
  // Adaptive routing over per-hop VLs: groups of the static port alone add nothing; a
  // group of every inter-switch port (any way, any dimension) closes a cycle.
  Tables ar = *dor;
  ar.ar_group.assign(f.size(), {});
  ar.ar_sets.assign(f.size(), {});
  for (NodeIndex n = 0; n < f.size(); ++n) {
    if (!f.node(n).is_switch()) continue;
    ar.ar_group[n].assign(size_t(ar.top_lid) + 1, 0);
    ar.ar_sets[n].push_back({});
  }
  const CdgReport alone = adaptive_dependencies(f, ar);
  EXPECT_TRUE(alone.acyclic);
  EXPECT_EQ(alone.dependencies, t2.dependencies);
  for (NodeIndex n = 0; n < f.size(); ++n)
    for (const auto& p : f.node(n).ports)
      if (f.node(n).is_switch() && p.num && p.linked() && f.node(p.peer).is_switch())
        ar.ar_sets[n][0].push_back(p.num);
  const CdgReport any = adaptive_dependencies(f, ar);
  EXPECT_FALSE(any.acyclic);
  EXPECT_GT(any.dependencies, t2.dependencies);
  const CdgReport one = channel_dependencies(f, with_maps([](unsigned, int) { return 0u; }));
  EXPECT_FALSE(one.acyclic);
  EXPECT_EQ(one.cyclic_vl, 0);
  EXPECT_EQ(one.vls, 1u);
  // A dateline bit read from the wrong dimension breaks it: VL 1 from the SL's bit d + 1.
  const CdgReport wrong = channel_dependencies(
      f, with_maps([](unsigned sl, int d) { return d < 0 ? 0u : sl >> ((d + 1) % 3) & 1; }));
  EXPECT_FALSE(wrong.acyclic);
}

TEST(Dor, RefusesWithAReason) {
  Fabric f = with_lids("torus:dims=5x5,hosts=1");
  auto dor = *make_engine("dor");
  auto none = dor->compute(f, {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, Refusal::kTopology);
  Options o;
  o.torus = spec_of(f, {5, 5}, true);
  o.max_vls = 1;
  auto few = dor->compute(f, o);
  ASSERT_FALSE(few);
  EXPECT_EQ(few.error().kind, Refusal::kVirtualLanes);
  Options four = o;  // the SL has a bit per dimension and one more: 3 dimensions at most
  four.max_vls = 8;
  four.torus->radix.insert(four.torus->radix.end(), {1, 1});
  auto too_many = dor->compute(f, four);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().kind, Refusal::kInvalidInput);
  EXPECT_NE(too_many.error().message.find("1 to 3 dimensions, not 4"), std::string::npos)
      << too_many.error().message;
  o.max_vls = 8;
  o.torus->radix = {4, 5};
  auto count = dor->compute(f, o);
  ASSERT_FALSE(count);
  EXPECT_NE(count.error().message.find("25 switches; a 4x5 torus has 20"), std::string::npos)
      << count.error().message;
  // Right switch count, wrong shape: a random graph of 16 switches.
  Fabric g = with_lids("random:switches=16,degree=4,hosts=1,seed=3");
  Options og;
  og.torus = TorusSpec{};
  og.torus->radix = {4, 4};
  og.torus->seed = g.node(*g.find_by_name("sw0")).guid;
  for (const auto& p : g.node(*g.find_by_name("sw0")).ports)
    if (p.num && p.linked() && g.node(p.peer).is_switch() && og.torus->plus.size() < 2)
      og.torus->plus.push_back(g.node(p.peer).guid);
  auto shape = dor->compute(g, og);
  ASSERT_FALSE(shape);
  EXPECT_NE(shape.error().message.find("dor: not a 4x4 torus"), std::string::npos)
      << shape.error().message;
  // A seed link that is no link.
  o.torus = spec_of(f, {5, 5}, true);
  o.torus->plus[1] = f.node(*f.find_by_name("sw2-2")).guid;
  auto seed = dor->compute(f, o);
  ASSERT_FALSE(seed);
  EXPECT_EQ(seed.error().kind, Refusal::kInvalidInput);
}

// Fails the links between each pair of named switches (every parallel one).
Fabric without_links(Fabric f, const std::vector<std::pair<std::string, std::string>>& cuts) {
  for (const auto& [a, b] : cuts) {
    const NodeIndex na = *f.find_by_name(a), nb = *f.find_by_name(b);
    std::vector<PortNum> ports;
    for (const auto& p : f.node(na).ports)
      if (p.num && p.linked() && p.peer == nb) ports.push_back(p.num);
    EXPECT_FALSE(ports.empty()) << a << " - " << b;
    for (PortNum p : ports) f.disconnect(na, p);
  }
  return f;
}

// dor on a torus or mesh (its generator spec and shape), and again after `fail` took
// links or switches away: both fabrics and both tables. A refusal of either fails the
// test (nullopt).
struct DorAfterFailure {
  Fabric f, g;
  Tables pristine, t;
};
std::optional<DorAfterFailure> dor_after_failure(const std::string& spec,
                                                 const std::vector<int>& radix, bool wrap,
                                                 const std::function<Fabric(const Fabric&)>& fail) {
  DorAfterFailure r{with_lids(spec), {}, {}, {}};
  Options o;
  o.torus = spec_of(r.f, radix, wrap);
  auto dor = *make_engine("dor");
  auto pristine = dor->compute(r.f, o);
  if (!pristine) {
    ADD_FAILURE() << spec << ": " << pristine.error().message;
    return std::nullopt;
  }
  r.g = fail(r.f);
  auto t = dor->compute(r.g, o);
  if (!t) {
    ADD_FAILURE() << spec << " after the failure: " << t.error().message;
    return std::nullopt;
  }
  r.pristine = std::move(*pristine);
  r.t = std::move(*t);
  return r;
}

// dor's tables after a failure: loop-free, complete and deadlock-free; the check's
// report, for its VLs.
CdgReport expect_routed_whole(const Fabric& g, const Tables& t) {
  EXPECT_TRUE(verify_lfts(g, t).ok());
  const auto m = analyze(g, t);
  EXPECT_EQ(m.reachable, m.ca_pairs);
  const auto cdg = channel_dependencies(g, t);
  EXPECT_TRUE(cdg.acyclic) << "cycle of " << cdg.cycle_length << " on VL " << cdg.cyclic_vl;
  return cdg;
}

// torus-2QoS's rule for failed links: a ring a failure broke is taken the long way
// round; every path keeps its SL, every route that did not cross the failure is the
// pristine one, and the channels stay acyclic on the VLs the datelines need.
TEST(Dor, RoutesATorusWithFailedLinksTheLongWayRoundKeepingEverySl) {
  struct Case {
    std::string spec;
    std::vector<int> radix;
    std::vector<std::pair<std::string, std::string>> cuts;
  };
  const Case cases[] = {
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, {{"sw1-0-0", "sw2-0-0"}}},
      {"torus:dims=5x5x5,hosts=1",
       {5, 5, 5},
       {{"sw1-0-0", "sw2-0-0"}, {"sw3-2-1", "sw3-3-1"}, {"sw4-4-4", "sw4-4-0"}}},
      {"torus:dims=6x4,hosts=1", {6, 4}, {{"sw0-0", "sw5-0"}, {"sw2-1", "sw2-2"}}},
      {"torus:dims=6,hosts=2", {6}, {{"sw2", "sw3"}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec + " less " + std::to_string(c.cuts.size()) + " link(s)");
    auto run = dor_after_failure(c.spec, c.radix, true,
                                 [&](const Fabric& f) { return without_links(f, c.cuts); });
    if (!run) continue;
    const auto& [f, g, pristine, t] = *run;
    expect_routed_whole(g, t);
    EXPECT_EQ(t.vls, pristine.vls);
    EXPECT_EQ(t.path_sl, pristine.path_sl) << "a path's SL changed";
    // Every route that did not cross a failed link is the pristine one; some did.
    std::set<std::pair<NodeIndex, NodeIndex>> cut;
    for (const auto& [a, b] : c.cuts) {
      cut.insert({*f.find_by_name(a), *f.find_by_name(b)});
      cut.insert({*f.find_by_name(b), *f.find_by_name(a)});
    }
    size_t kept = 0, moved = 0;
    for (const LidOwner& ow : lid_owners(f))
      for (NodeIndex s = 0; s < f.size(); ++s) {
        if (!f.node(s).is_switch()) continue;
        bool crosses = false;
        NodeIndex cur = s;
        for (int hop = 0; hop < 64; ++hop) {
          const PortNum out = pristine.lft[cur][ow.lid.value];
          if (out == 0 || !f.node(f.node(cur).ports[out].peer).is_switch()) break;
          crosses |= cut.count({cur, f.node(cur).ports[out].peer}) > 0;
          cur = f.node(cur).ports[out].peer;
        }
        if (crosses) {
          ++moved;
        } else {
          ++kept;
          EXPECT_EQ(t.lft[s][ow.lid.value], pristine.lft[s][ow.lid.value])
              << f.node(s).name << " to LID " << ow.lid.value;
        }
      }
    EXPECT_GT(kept, 0u);
    EXPECT_GT(moved, 0u);
    bool noted = false;
    for (const auto& n : t.notes)
      noted |= n.find(std::to_string(c.cuts.size()) + " link(s) of the shape missing") !=
               std::string::npos;
    EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(t.notes, " | "));
  }
  // The long way, seen on one route: sw1-0-0 reaches sw2-0-0 through sw0-0-0.
  {
    const Fabric f = with_lids("torus:dims=5x5x5,hosts=1");
    Options o;
    o.torus = spec_of(f, {5, 5, 5}, true);
    const Fabric g = without_links(f, {{"sw1-0-0", "sw2-0-0"}});
    auto t = (*make_engine("dor"))->compute(g, o);
    ASSERT_TRUE(t) << t.error().message;
    const NodeIndex from = *g.find_by_name("sw1-0-0");
    const Lid to = g.node(*g.find_by_name("sw2-0-0")).ports[0].attrs.lid;
    EXPECT_EQ(g.node(g.node(from).ports[t->lft[from][to.value]].peer).name, "sw0-0-0");
  }
}

// A fabric after switches failed: the switches and the hosts behind them gone,
// everything else (GUIDs, LIDs, links) as it was.
Fabric without_switches(const Fabric& f, const std::vector<std::string>& names) {
  std::vector<uint8_t> drop(f.size(), 0);
  for (const auto& name : names) {
    const NodeIndex gone = *f.find_by_name(name);
    drop[gone] = 1;
    for (const auto& p : f.node(gone).ports)
      if (p.num && p.linked() && !f.node(p.peer).is_switch()) drop[p.peer] = 1;
  }
  Fabric g;
  std::vector<NodeIndex> at(f.size(), kNoNode);
  for (NodeIndex n = 0; n < f.size(); ++n) {
    if (drop[n]) continue;
    Node nd = f.node(n);
    for (auto& p : nd.ports) p.peer = kNoNode, p.peer_port = 0;
    at[n] = *g.add_node(std::move(nd));
    for (PortNum p = 0; p < f.node(n).ports.size(); ++p)
      g.node(at[n]).ports[p].attrs = f.node(n).ports[p].attrs;
  }
  for (const Link& l : f.links()) {
    if (at[l.a] == kNoNode || at[l.b] == kNoNode) continue;
    EXPECT_TRUE(g.connect(at[l.a], l.pa, at[l.b], l.pb));
  }
  return g;
}
Fabric without_switch(const Fabric& f, const std::string& name) {
  return without_switches(f, {name});
}

// The routes of `t` on g (f less the switches `gone` marks, as without_switches makes
// it) against f's pristine tables: a route whose pristine path passes none of them must
// be the pristine one (EXPECTed entry by entry). Counted: those kept and those moved,
// and over every route, the path SLs kept and changed.
struct AgainstPristine {
  size_t kept = 0, moved = 0, sl_kept = 0, sl_changed = 0;
};
AgainstPristine against_pristine(const Fabric& f, const Tables& pristine, const Fabric& g,
                                 const Tables& t, const std::vector<uint8_t>& gone) {
  AgainstPristine r;
  for (const LidOwner& ow : lid_owners(g))
    for (NodeIndex s = 0; s < g.size(); ++s) {
      if (!g.node(s).is_switch()) continue;
      const NodeIndex was = *f.find_by_name(g.node(s).name);
      const uint16_t lid = ow.lid.value;
      if (!pristine.path_sl.empty())
        ++(t.path_sl[s][lid] == pristine.path_sl[was][lid] ? r.sl_kept : r.sl_changed);
      bool passes = false;
      NodeIndex cur = was;
      for (int hop = 0; hop < 64; ++hop) {
        const PortNum out = pristine.lft[cur][lid];
        if (out == 0 || !f.node(f.node(cur).ports[out].peer).is_switch()) break;
        cur = f.node(cur).ports[out].peer;
        passes |= gone[cur] != 0;
      }
      if (passes) {
        ++r.moved;
      } else {
        ++r.kept;
        EXPECT_EQ(t.lft[s][lid], pristine.lft[was][lid]) << g.node(s).name << " to " << lid;
      }
    }
  return r;
}

// torus-2QoS's rule for a failed switch: a route whose turn in dimension order fell on
// it turns early, one step into its next dimension beside the gap, and the hop that
// turns back takes a VL of its own. Complete, loop-free, deadlock-free; every path keeps
// its SL, every route that did not pass the failed switch is the pristine one.
TEST(Dor, RoutesRoundAFailedSwitchKeepingEverySl) {
  struct Case {
    std::string spec;
    std::vector<int> radix;
    std::string failed;
    unsigned vls;
  };
  const Case cases[] = {
      {"torus:dims=6x5,hosts=1", {6, 5}, "sw3-1", 4},
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, "sw2-2-2", 4},
      {"torus:dims=5x5x5,hosts=2", {5, 5, 5}, "sw4-0-3", 4},
      {"torus:dims=4x4x4,hosts=1", {4, 4, 4}, "sw1-2-3", 2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec + " less " + c.failed);
    auto run = dor_after_failure(c.spec, c.radix, true,
                                 [&](const Fabric& f) { return without_switch(f, c.failed); });
    if (!run) continue;
    const auto& [f, g, pristine, t] = *run;
    const auto cdg = expect_routed_whole(g, t);
    EXPECT_EQ(t.vls, c.vls);
    EXPECT_LE(cdg.vls, c.vls);
    EXPECT_GT(cdg.vls, pristine.vls);  // the turns back use their VL
    std::vector<uint8_t> gone(f.size(), 0);
    gone[*f.find_by_name(c.failed)] = 1;
    const AgainstPristine r = against_pristine(f, pristine, g, t, gone);
    EXPECT_GT(r.kept, 0u);
    EXPECT_GT(r.moved, 0u);
    EXPECT_EQ(r.sl_changed, 0u);
    bool noted = false;
    for (const auto& n : t.notes)
      noted |= n.find("1 switch(es) and 0 link(s)") != std::string::npos;
    EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(t.notes, " | "));
  }
  // torus-2QoS's own example: on a 6x5 torus with T = (3,1) failed, S = (1,1) reaches
  // D = (3,3) by S-n-I-r-D, turning early at n = (2,1).
  const Fabric f = with_lids("torus:dims=6x5,hosts=1");
  Options o;
  o.torus = spec_of(f, {6, 5}, true);
  const Fabric g = without_switch(f, "sw3-1");
  auto t = (*make_engine("dor"))->compute(g, o);
  ASSERT_TRUE(t) << t.error().message;
  const uint16_t d = g.node(*g.find_by_name("sw3-3")).ports[0].attrs.lid.value;
  std::vector<std::string> path;
  for (NodeIndex cur = *g.find_by_name("sw1-1"); path.size() < 10;) {
    path.push_back(g.node(cur).name);
    const PortNum out = t->lft[cur][d];
    if (out == 0) break;
    cur = g.node(cur).ports[out].peer;
  }
  EXPECT_EQ(path, (std::vector<std::string>{"sw1-1", "sw2-1", "sw2-2", "sw3-2", "sw3-3"}));
}

// Several failed switches: apart, side by side on one ring (which stays a line), and
// two on one ring apart (which splits it: its routes turn early into a later
// dimension). Each as one failed switch: complete, loop-free, deadlock-free within 4
// VLs, every path's SL kept where no detour needed one of its own, and every route that
// passed none of them the pristine one.
TEST(Dor, RoutesRoundSeveralFailedSwitches) {
  struct Case {
    std::string spec;
    std::vector<int> radix;
    std::vector<std::string> failed;
  };
  const Case cases[] = {
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, {"sw1-1-1", "sw3-3-3"}},
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, {"sw2-2-2", "sw3-2-2"}},
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, {"sw1-2-2", "sw3-2-2"}},
      {"torus:dims=6x5,hosts=1", {6, 5}, {"sw3-1", "sw1-3"}},
      {"torus:dims=6x6x6,hosts=1", {6, 6, 6}, {"sw3-3-3", "sw2-4-1", "sw5-2-4"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec + " less " + fmt::format("{}", fmt::join(c.failed, ", ")));
    auto run = dor_after_failure(c.spec, c.radix, true,
                                 [&](const Fabric& f) { return without_switches(f, c.failed); });
    if (!run) continue;
    const auto& [f, g, pristine, t] = *run;
    const auto cdg = expect_routed_whole(g, t);
    EXPECT_LE(cdg.vls, 4u);
    std::vector<uint8_t> gone(f.size(), 0);
    for (const auto& name : c.failed) gone[*f.find_by_name(name)] = 1;
    const AgainstPristine r = against_pristine(f, pristine, g, t, gone);
    EXPECT_GT(r.kept, 0u);
    EXPECT_GT(r.moved, 0u);
    // Only a detour's own SL may differ, and most paths keep theirs.
    EXPECT_GT(r.sl_kept, 4 * r.sl_changed);
    bool noted = false;
    for (const auto& n : t.notes)
      noted |= n.find(std::to_string(c.failed.size()) + " switch(es)") != std::string::npos;
    EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(t.notes, " | "));
  }
}

// Where neither way along a dimension leads on (a ring split by two failed links, a
// mesh's line cut), routes turn early into a later dimension, round the gap: complete,
// loop-free and deadlock-free, every SL kept or the early turns' own. In the last
// dimension, which has no later one, the switches cut off step onto the line beside
// and back. Where no line beside leads round the gap, dor refuses, naming the line.
TEST(Dor, TurnsEarlyRoundASplitRingOrACutMeshLineInEveryDimension) {
  struct Case {
    std::string spec;
    std::vector<int> radix;
    bool wrap;
    std::vector<std::pair<std::string, std::string>> cuts;
    // Round a gap of one link torus-2QoS's VL for the hop after the turn is enough;
    // round a longer one detours on both sides close a cycle, and the paths that turn
    // early take their own SL.
    bool own_sl = false;
  };
  const Case routed[] = {
      {"torus:dims=5x5,hosts=1", {5, 5}, true, {{"sw0-2", "sw1-2"}, {"sw3-2", "sw4-2"}}, true},
      {"mesh:dims=4x5,hosts=1", {4, 5}, false, {{"sw1-1", "sw2-1"}}},
      {"torus:dims=5x5x5,hosts=1",
       {5, 5, 5},
       true,
       {{"sw0-2-2", "sw1-2-2"}, {"sw3-2-2", "sw4-2-2"}},
       true},
      {"mesh:dims=4x4x4,hosts=1", {4, 4, 4}, false, {{"sw1-1-1", "sw1-2-1"}}},
      // Two lines cut side by side: a route along the first turns to the side whose line
      // leads on (sw2-0's), not into the second cut line, which would turn it back.
      {"mesh:dims=5x5,hosts=1", {5, 5}, false, {{"sw2-1", "sw3-1"}, {"sw2-2", "sw3-2"}}, true},
      // At the gap in y the link toward the destination in z failed too (sw4-3-4 to
      // sw4-3-3, toward sw4-4-2): the other z side, whose y line leads on.
      {"torus:dims=5x5x5,hosts=1",
       {5, 5, 5},
       true,
       {{"sw4-3-4", "sw4-4-4"}, {"sw4-0-4", "sw4-1-4"}, {"sw4-3-4", "sw4-3-3"}},
       true},
      // The last dimension: onto the line beside and back.
      {"torus:dims=5x5,hosts=1", {5, 5}, true, {{"sw2-0", "sw2-1"}, {"sw2-3", "sw2-4"}}},
      {"mesh:dims=4x5,hosts=1", {4, 5}, false, {{"sw1-1", "sw1-2"}}},
      {"torus:dims=5x5x5,hosts=1",
       {5, 5, 5},
       true,
       {{"sw2-2-0", "sw2-2-1"}, {"sw2-2-3", "sw2-2-4"}}},
      {"mesh:dims=4x4x4,hosts=1", {4, 4, 4}, false, {{"sw1-1-1", "sw1-1-2"}}},
      // A mesh line cut at its edge: the line beside is the one inward (- along x).
      {"mesh:dims=4x4,hosts=1", {4, 4}, false, {{"sw3-1", "sw3-2"}}},
  };
  for (const auto& c : routed) {
    SCOPED_TRACE(c.spec + " cut at " + c.cuts[0].first + "-" + c.cuts[0].second);
    auto run = dor_after_failure(c.spec, c.radix, c.wrap,
                                 [&](const Fabric& f) { return without_links(f, c.cuts); });
    if (!run) continue;
    const auto& [f, g, pristine, t] = *run;
    const auto cdg = expect_routed_whole(g, t);
    EXPECT_GT(cdg.vls, pristine.vls);  // the paths that turn early use their VL
    // Per-hop maps come with every path's SL, which the SA hands out (not a QoS level's).
    EXPECT_FALSE(t.hop_vl.empty());
    EXPECT_FALSE(t.path_sl.empty());
    // Every path keeps its SL, or (one that turns early) takes the SL bit after the
    // datelines' on top of it.
    const unsigned bit = pristine.path_sl.empty() ? 1u : 1u << c.radix.size();
    size_t kept = 0, moved = 0;
    for (NodeIndex n = 0; n < g.size(); ++n) {
      if (!g.node(n).is_switch()) continue;
      for (const LidOwner& ow : lid_owners(g)) {
        const unsigned was = pristine.path_sl.empty() ? 0 : pristine.path_sl[n][ow.lid.value];
        const unsigned now = t.path_sl.empty() ? 0 : t.path_sl[n][ow.lid.value];
        EXPECT_TRUE(now == was || now == (was | bit)) << g.node(n).name << " " << ow.lid.value;
        (now == was ? kept : moved) += 1;
      }
    }
    const bool own_sl = c.own_sl;
    EXPECT_GT(kept, 0u);
    EXPECT_EQ(moved > 0, own_sl);
    bool noted = false;
    for (const auto& n : t.notes)
      noted |= n.find(own_sl ? "every other path keeps its SL" : "every path keeping its SL") !=
               std::string::npos;
    EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(t.notes, " | "));
  }
  // The y rings at x=1, 2 and 3 split in two at the same places: from x=2 neither line
  // beside leads round the gap (x=0 and x=4 would, two lines over).
  const Fabric f = with_lids("torus:dims=5x5,hosts=1");
  Options o;
  o.torus = spec_of(f, {5, 5}, true);
  std::vector<std::pair<std::string, std::string>> cuts;
  for (int x = 1; x <= 3; ++x)
    for (auto [a, b] : {std::pair{0, 1}, std::pair{3, 4}})
      cuts.emplace_back(fmt::format("sw{}-{}", x, a), fmt::format("sw{}-{}", x, b));
  auto t = (*make_engine("dor"))->compute(without_links(f, cuts), o);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind, Refusal::kTopology);
  EXPECT_NE(t.error().message.find("the y ring through \"sw2-"), std::string::npos)
      << t.error().message;
  EXPECT_NE(t.error().message.find(" is broken in two (a failed switch or two failed links split "
                                   "it), and no line beside it leads round the gap"),
            std::string::npos)
      << t.error().message;
}

// The generator's coordinates of a switch named sw<x>-<y>-<z>.
std::vector<int> name_coords(const std::string& name) {
  std::vector<int> v;
  std::istringstream in(name.substr(2));
  for (std::string part; std::getline(in, part, '-');) v.push_back(std::stoi(part));
  return v;
}

// A z ring (the last dimension) split in two: the switches the destination's line no
// longer joins to it step onto a line beside and back. The line beside depends on the
// destination's place, so the detours toward the line's 5 destinations spread over
// more than one of the 4 lines beside it (all on one loaded its links with 175 of the
// all-to-all's flows where the x ring's split loads 108), still deadlock-free.
TEST(Dor, DetoursRoundALastDimensionGapSpreadOverTheLinesBeside) {
  auto run = dor_after_failure("torus:dims=5x5x5,hosts=1", {5, 5, 5}, true, [](const Fabric& f) {
    return without_links(f, {{"sw2-2-0", "sw2-2-1"}, {"sw2-2-3", "sw2-2-4"}});
  });
  ASSERT_TRUE(run);
  const auto& [f, g, pristine, t] = *run;
  expect_routed_whole(g, t);
  auto on_line = [&](NodeIndex n) {
    const auto c = name_coords(g.node(n).name);
    return c[0] == 2 && c[1] == 2;
  };
  std::set<std::pair<int, int>> beside;  // the (x, y) of the lines the detours step onto
  size_t detours = 0;
  for (const LidOwner& ow : lid_owners(g)) {
    if (g.node(ow.node).is_switch()) continue;
    const NodeIndex dest = g.node(ow.node).ports[1].peer;
    if (!on_line(dest)) continue;
    for (NodeIndex n = 0; n < g.size(); ++n) {
      if (!g.node(n).is_switch() || !on_line(n) || n == dest) continue;
      const NodeIndex next = g.node(n).ports[t.lft[n][ow.lid.value]].peer;
      if (on_line(next)) continue;
      const auto c = name_coords(g.node(next).name);
      beside.emplace(c[0], c[1]);
      ++detours;
    }
  }
  // Per destination 3 or 2 switches of the line are cut off: 2 + 3 destinations.
  EXPECT_EQ(detours, 2 * 3 + 3 * 2);
  EXPECT_GE(beside.size(), 3u);
  EXPECT_LE(analyze(g, t).max_link_load, 150u);
}

// Ten failed links round one corner of a 5x5x5 torus (weft route --fail-random 10,
// seed 1): some switches close no square with the switch they are reached from, and
// one has its link ahead failed as well. The labelling places them from their placed
// neighbours instead of guessing which neighbour is ahead; dor routes the rest.
TEST(Dor, LabelsSwitchesWhoseSquaresFailedFromTheirPlacedNeighbours) {
  const Fabric f = with_lids("torus:dims=5x5x5,hosts=1");
  Options o;
  o.torus = spec_of(f, {5, 5, 5}, true);
  const Fabric g = without_links(f, {{"sw1-2-2", "sw1-3-2"},
                                     {"sw0-4-0", "sw4-4-0"},
                                     {"sw2-0-1", "sw2-4-1"},
                                     {"sw1-3-2", "sw1-4-2"},
                                     {"sw3-2-0", "sw4-2-0"},
                                     {"sw2-1-2", "sw2-2-2"},
                                     {"sw1-0-3", "sw1-0-4"},
                                     {"sw4-1-0", "sw4-1-4"},
                                     {"sw3-2-2", "sw3-3-2"},
                                     {"sw3-3-0", "sw3-4-0"}});
  auto c = torus_coordinates(g, *o.torus);
  ASSERT_TRUE(c) << c.error().message;
  for (NodeIndex n = 0; n < g.size(); ++n)
    if (g.node(n).is_switch()) {
      EXPECT_EQ(c->of_node[n], name_coords(g.node(n).name)) << g.node(n).name;
    }
  auto t = (*make_engine("dor"))->compute(g, o);
  ASSERT_TRUE(t) << t.error().message;
  expect_routed_whole(g, *t);
}

TEST(DetectTorus, ReadsToriOfRadixFiveUpAndMeshesOffTheLinks) {
  struct Case {
    std::string spec;
    std::vector<int> radix;  // longest first, as detect_torus orders them
    bool wrap;
  };
  const Case cases[] = {
      {"torus:dims=5x5,hosts=1", {5, 5}, true},      {"torus:dims=5x7x6,hosts=1", {7, 6, 5}, true},
      {"torus:dims=9,hosts=2", {9}, true},           {"mesh:dims=4x5,hosts=1", {5, 4}, false},
      {"mesh:dims=2x3x4,hosts=1", {4, 3, 2}, false}, {"mesh:dims=6,hosts=1", {6}, false},
  };
  for (const auto& c : cases) {
    const Fabric f = with_lids(c.spec);
    const auto spec = detect_torus(f);
    ASSERT_TRUE(spec) << c.spec;
    EXPECT_EQ(spec->radix, c.radix) << c.spec;
    EXPECT_EQ(spec->wrap, c.wrap) << c.spec;
    auto coords = torus_coordinates(f, *spec);
    ASSERT_TRUE(coords) << c.spec << ": " << coords.error().message;
    // The detected grid is the generator's up to the order and direction of its axes:
    // each detected axis moves exactly one of the generator's, and the distance
    // between any two switches along it is the same.
    std::vector<NodeIndex> sws;
    std::map<NodeIndex, std::vector<int>> gen;
    std::vector<int> gen_radix(c.radix.size(), 0);
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch()) {
        sws.push_back(n);
        gen[n] = name_coords(f.node(n).name);
        for (size_t d = 0; d < gen_radix.size(); ++d)
          gen_radix[d] = std::max(gen_radix[d], gen[n][d] + 1);
      }
    auto ring = [&](int x, int y, int k) {
      const int d = std::abs(x - y);
      return c.wrap ? std::min(d, k - d) : d;
    };
    for (NodeIndex a : sws)
      for (NodeIndex b : sws) {
        const auto &ga = gen[a], &gb = gen[b];
        const auto &da = coords->of_node[a], &db = coords->of_node[b];
        std::multiset<int> want, got;
        for (size_t d = 0; d < ga.size(); ++d) {
          want.insert(ring(ga[d], gb[d], gen_radix[d]));
          got.insert(ring(da[d], db[d], spec->radix[d]));
        }
        ASSERT_EQ(want, got) << c.spec << " " << f.node(a).name << " " << f.node(b).name;
      }
  }
  // Not grids read off the links: radix-3 and -4 rings (squares of their own), trees,
  // random graphs, and a torus with a link taken out.
  for (const std::string spec :
       {"torus:dims=4x4,hosts=1", "torus:dims=3x5,hosts=1", "torus:dims=4x4x4,hosts=1",
        "ft2:leaves=4,spines=2,hosts=2", "ft3:pods=2,leaves=2,aggs=2,cores=2,hosts=1",
        "random:switches=25,degree=4,hosts=1,seed=1"})
    EXPECT_FALSE(detect_torus(with_lids(spec))) << spec;
  Fabric cut = with_lids("torus:dims=6x6,hosts=1");
  const NodeIndex s = *cut.find_by_name("sw2-3");
  for (const auto& p : cut.node(s).ports)
    if (p.num && p.linked() && cut.node(p.peer).is_switch()) {
      cut.disconnect(s, p.num);
      break;
    }
  EXPECT_FALSE(detect_torus(cut));
  EXPECT_TRUE(detect_torus(with_lids("torus:dims=6x6,hosts=1")));
}

TEST(TorusCoordinates, FollowTheDescriptionAndRefuseWhatDoesNotFit) {
  const Fabric f = with_lids("torus:dims=4x3,hosts=1");
  auto c = torus_coordinates(f, spec_of(f, {4, 3}, true));
  ASSERT_TRUE(c) << c.error().message;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (f.node(n).is_switch()) {
      EXPECT_EQ(c->of_node[n], name_coords(f.node(n).name));
    }
  auto wrong = torus_coordinates(f, spec_of(f, {4, 3}, false));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, Refusal::kTopology);
  EXPECT_NE(wrong.error().message.find("not a 4x3 mesh"), std::string::npos)
      << wrong.error().message;
}

TEST(TorusSpec, ReadsTheTorus2QosSubsetAndNamesBadLines) {
  std::istringstream good(
      "# a torus\ntorus 4 4 2\nxp_link 0x10 0x11\nyp_link 0x10 0x14\nzp_link 0x10 0x20\n"
      "x_dateline 0\nport_order 1 2 3\n");
  auto t = read_torus_spec(good, "t");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->radix, (std::vector<int>{4, 4, 2}));
  EXPECT_TRUE(t->wrap);
  EXPECT_EQ(t->seed.value, 0x10u);
  EXPECT_EQ(t->plus.size(), 3u);
  const std::pair<const char*, const char*> bad[] = {
      {"torus 4 x\n", "t:1: radix \"x\" is not 1..64"},
      {"mesh 4 4\nxp_link 0x1\n", "t:2: xp_link takes two switch GUIDs"},
      {"torus 4 4\nfrobnicate\n", "t:2: unknown keyword \"frobnicate\""},
      {"xp_link 0x1 0x2\n", "t: no \"torus\" or \"mesh\" line"},
      {"torus 4 4\nxp_link 0x1 0x2\n", "t: no yp_link or ym_link for a 2-dimensional torus"},
      {"torus 4 4\nxp_link 0x1 0x2\nyp_link 0x3 0x4\n",
       "t:3: yp_link starts at 0x0000000000000003, the seed's other links at 0x0000000000000001"},
      {"torus 3q 4 4\n", "t:1: radix \"3q\" is not 1..64"},
      {"torus 4 4\nxp_link 0x1 0x2\nym_link 0x1 0x3\nx_dateline far\n",
       "t:4: x_dateline takes a position"},
      {"torus 4 4 4\nxp_link 0x1 0x2\nyp_link 0x1 0x3\nzp_link 0x1 0x4\nnext_seed\n"
       "xp_link 0x9 0x8\n",
       "t: no yp_link or ym_link of seed 2 (from line 6)"},
      {"torus 4 4\nxp_link 0x1 0x2\nyp_link 0x1 0x3\nx_dateline 99999999999\n",
       "t:4: x_dateline takes a position"},
  };
  for (auto [text, want] : bad) {
    std::istringstream in(text);
    auto r = read_torus_spec(in, "t");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
  }
}

// torus-2QoS.conf as torus-2QoS.conf(5) describes it: a radix-1 dimension left out, both
// link directions, datelines, a second seed, and the tokens after a keyword's ignored;
// t and m suffixes make one dimension a torus or a mesh.
TEST(TorusSpec, ReadsTorus2QosConfWhole) {
  std::istringstream conf(
      "# a 2-D torus in y and z\n"
      "torus 1 4 5\n"
      "yp_link 0x200000 0x200005   # y=0,z=0 -> y=1\n"
      "ym_link 0x200000 0x20000f\n"
      "zp_link 0x200000 0x200001\n"
      "next_seed\n"
      "yp_link 0x20000b 0x200010\n"
      "ym_link 0x20000b 0x200006\n"
      "zp_link 0x20000b 0x20000c\n"
      "y_dateline -2\n"
      "z_dateline -1\n"
      "portgroup_max_ports 17\n"
      "port_order 7 10 8 11 9 12\n"
      "max_changes 32\n");
  auto t = read_torus_spec(conf, "t");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->radix, (std::vector<int>{4, 5}));
  EXPECT_EQ(t->axis(0), 'y');
  EXPECT_EQ(t->axis(1), 'z');
  EXPECT_TRUE(t->wraps(0) && t->wraps(1));
  EXPECT_EQ(t->seed.value, 0x200000u);
  EXPECT_EQ(t->plus, (std::vector<Guid>{Guid{0x200005}, Guid{0x200001}}));
  EXPECT_EQ(t->minus, (std::vector<Guid>{Guid{0x20000f}, Guid{}}));
  EXPECT_TRUE(t->dateline.empty());
  ASSERT_EQ(t->next_seeds.size(), 1u);
  EXPECT_EQ(t->next_seeds[0].seed.value, 0x20000bu);
  EXPECT_EQ(t->next_seeds[0].dateline, (std::vector<int>{-2, -1}));
  // "mesh 3T 4 5" and "torus 3 4M 5M" are the same shape; trailing tokens are ignored.
  const char* links = "xp_link 0x1 0x2 extra\nyp_link 0x1 0x3\nzp_link 0x1 0x4\n";
  for (const char* head : {"mesh 3T 4 5\n", "torus 3 4M 5M and more\n"}) {
    std::istringstream in(std::string(head) + links);
    auto m = read_torus_spec(in, "t");
    ASSERT_TRUE(m) << head << m.error().message;
    EXPECT_EQ(m->radix, (std::vector<int>{3, 4, 5}));
    EXPECT_TRUE(m->wraps(0));
    EXPECT_FALSE(m->wraps(1));
    EXPECT_FALSE(m->wraps(2));
  }
  std::istringstream small("torus 3t 3t 3t\nxp_link 0x1 0x2\nyp_link 0x1 0x3\nzp_link 0x1 0x4\n");
  auto st = read_torus_spec(small, "t");
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->radix, (std::vector<int>{3, 3, 3}));
  EXPECT_TRUE(st->wraps(0) && st->wraps(1) && st->wraps(2));
}

// The switch named for coordinates `c` of a generated torus or mesh.
Guid switch_at(const Fabric& f, const std::vector<int>& c) {
  return f.node(*f.find_by_name(fmt::format("sw{}", fmt::join(c, "-")))).guid;
}

// The rest of the description at work: a seed given by its - links, a dateline that
// moves the origin, a second seed used where the first's link failed (the datelines
// keeping every SL), and a shape whose x rings wrap while its y lines do not.
// The seed's link to a neighbour the description names failed, and there is no
// next_seed (torus-2QoS gives up there): the named switch is placed where the
// description puts it all the same, the labels are the generator's, and on a torus
// every path keeps its SL. A description that names a switch which is not the seed's neighbour
// is still refused, naming the link.
TEST(Dor, LabelsFromASeedWhoseGivenLinkFailed) {
  struct Case {
    std::string spec;
    std::vector<int> radix;
    bool wrap;
    std::pair<std::string, std::string> cut;
  };
  const Case cases[] = {
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, true, {"sw0-0-0", "sw1-0-0"}},
      {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, true, {"sw0-0-0", "sw0-0-1"}},
      {"torus:dims=6x5,hosts=1", {6, 5}, true, {"sw0-0", "sw0-1"}},
      {"mesh:dims=4x4x4,hosts=1", {4, 4, 4}, false, {"sw0-0-0", "sw0-1-0"}},
  };
  auto dor = *make_engine("dor");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec + " without " + c.cut.first + "-" + c.cut.second);
    const Fabric f = with_lids(c.spec);
    Options o;
    o.torus = spec_of(f, c.radix, c.wrap);
    auto pristine = dor->compute(f, o);
    ASSERT_TRUE(pristine) << pristine.error().message;
    const Fabric g = without_links(f, {c.cut});
    auto coords = torus_coordinates(g, *o.torus);
    ASSERT_TRUE(coords) << coords.error().message;
    for (NodeIndex n = 0; n < g.size(); ++n)
      if (g.node(n).is_switch()) {
        EXPECT_EQ(coords->of_node[n], name_coords(g.node(n).name)) << g.node(n).name;
      }
    auto t = dor->compute(g, o);
    ASSERT_TRUE(t) << t.error().message;
    expect_routed_whole(g, *t);
    // (A mesh line cut turns routes early, onto SLs of their own; a ring cut once is
    // taken the long way round, every SL kept.)
    if (c.wrap) {
      EXPECT_EQ(t->path_sl, pristine->path_sl);
    }
    bool noted = false;
    for (const auto& n : t->notes)
      noted |= n.find("1 link(s) of the shape missing") != std::string::npos;
    EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(t->notes, " | "));
  }
  // xp_link naming sw2-0-0, two steps along x: no labelling holds, and the refusal names
  // the link (and the next_seed that would help where it failed).
  const Fabric f = with_lids("torus:dims=5x5x5,hosts=1");
  Options o;
  o.torus = spec_of(f, {5, 5, 5}, true);
  o.torus->plus[0] = f.node(*f.find_by_name("sw2-0-0")).guid;
  auto t = dor->compute(f, o);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind, Refusal::kInvalidInput);
  EXPECT_NE(t.error().message.find("xp_link: " + o.torus->plus[0].str() +
                                   " is not a switch linked to the seed"),
            std::string::npos)
      << t.error().message;
}

TEST(Dor, FollowsMinusLinksDatelinesNextSeedsAndMixedShapes) {
  const Fabric f = with_lids("torus:dims=5x5x5,hosts=1");
  Options o;
  o.torus = spec_of(f, {5, 5, 5}, true);
  auto dor = *make_engine("dor");
  auto pristine = dor->compute(f, o);
  ASSERT_TRUE(pristine) << pristine.error().message;
  {
    // - links only: the seed's - neighbours sit at 4.
    TorusSpec m = *o.torus;
    m.plus.assign(3, Guid{});
    m.minus = {switch_at(f, {4, 0, 0}), switch_at(f, {0, 4, 0}), switch_at(f, {0, 0, 4})};
    auto c = torus_coordinates(f, m);
    ASSERT_TRUE(c) << c.error().message;
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch()) {
        EXPECT_EQ(c->of_node[n], name_coords(f.node(n).name));
      }
  }
  {
    // x_dateline 2: the origin two steps + from the seed, which sits at x = 3.
    TorusSpec d = *o.torus;
    d.dateline = {2, 0, 0};
    auto c = torus_coordinates(f, d);
    ASSERT_TRUE(c) << c.error().message;
    auto want = name_coords("sw1-3-4");
    want[0] = (want[0] + 3) % 5;
    EXPECT_EQ(c->of_node[*f.find_by_name("sw1-3-4")], want);
  }
  {
    // The first seed's x link failed: the second seed, at (2,2,2) with datelines -2,
    // labels the same coordinates, so every path keeps its SL.
    TorusSpec n = *o.torus;
    TorusSeed second;
    second.seed = switch_at(f, {2, 2, 2});
    second.plus = {switch_at(f, {3, 2, 2}), switch_at(f, {2, 3, 2}), switch_at(f, {2, 2, 3})};
    second.dateline = {-2, -2, -2};
    n.next_seeds = {second};
    const Fabric g = without_links(f, {{"sw0-0-0", "sw1-0-0"}});
    Options first_only = o;
    auto alone = dor->compute(g, first_only);
    ASSERT_TRUE(alone) << alone.error().message;
    Options on = o;
    on.torus = n;
    auto t = dor->compute(g, on);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->path_sl, pristine->path_sl);
    EXPECT_TRUE(channel_dependencies(g, *t).acyclic);
    const auto m = analyze(g, *t);
    EXPECT_EQ(m.reachable, m.ca_pairs);
  }
  {
    // x rings, y lines (`torus 5 4M`): a torus with its y wrap links taken away.
    const Fabric t0 = with_lids("torus:dims=5x4,hosts=1");
    std::vector<std::pair<std::string, std::string>> wraps;
    for (int x = 0; x < 5; ++x)
      wraps.push_back({fmt::format("sw{}-3", x), fmt::format("sw{}-0", x)});
    const Fabric g = without_links(t0, wraps);
    Options mo;
    mo.torus = spec_of(t0, {5, 4}, true);
    mo.torus->ring = {1, 0};
    auto t = dor->compute(g, mo);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->vls, 2u) << "a dateline on x only";
    EXPECT_TRUE(channel_dependencies(g, *t).acyclic);
    const auto m = analyze(g, *t);
    EXPECT_EQ(m.reachable, m.ca_pairs);
    EXPECT_EQ(m.stretch_max, 1.0);
    bool shape = false;
    for (const auto& note : t->notes) shape |= note.find("5tx4m torus/mesh") != std::string::npos;
    EXPECT_TRUE(shape) << fmt::format("{}", fmt::join(t->notes, " | "));
    // The same fabric as a whole torus: the y wraps are missing links, and y rings of
    // radix 4 broken once are still routed the long way.
    Options whole = mo;
    whole.torus->ring.clear();
    auto as_torus = dor->compute(g, whole);
    ASSERT_TRUE(as_torus) << as_torus.error().message;
    bool missing = false;
    for (const auto& note : as_torus->notes)
      missing |= note.find("5 link(s) of the shape missing") != std::string::npos;
    EXPECT_TRUE(missing) << fmt::format("{}", fmt::join(as_torus->notes, " | "));
  }
}

}  // namespace

namespace {

// A small mutation fuzzer for the three new readers: flips, inserts and deletes bytes
// of a valid input; every result is a success or an error that names the input.
template <class Read>
void fuzz(const std::string& base, const std::string& alphabet, Read read) {
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const std::string s = weft::testing::mutate(base, alphabet, rng);
    std::istringstream in(s);
    if (auto msg = read(in); !msg.empty()) {
      EXPECT_EQ(msg.rfind("in", 0), 0u) << msg;
    }
  }
}

TEST(Readers, GarbageNeverCrashes) {
  Fabric f = with_lids("ft2:leaves=2,spines=1,hosts=1");
  auto t = (*make_engine("ftree"))->compute(f, {});
  ASSERT_TRUE(t);
  std::stringstream dump;
  write_lft_dump(dump, f, *t);
  fuzz(dump.str(), "0x123456789abcdef :()'\nUnicast lids guid", [&](std::istream& in) {
    Fabric g = f;
    auto r = read_lft_dump(in, g, "in");
    return r ? std::string() : r.error().message;
  });
  fuzz("torus 4 4 2\nxp_link 0x10 0x11\nyp_link 0x10 0x14\nzp_link 0x10 0x20\n",
       "0x123456789 torusmeshp_link#\n", [](std::istream& in) {
         auto r = read_torus_spec(in, "in");
         return r ? std::string() : r.error().message;
       });
  fuzz("# roots\n0x0002c90300001004\n0x0002c90300001005\n", "0x123456789abcdefX# \n",
       [](std::istream& in) {
         auto r = read_guid_list(in, "in");
         return r ? std::string() : r.error().message;
       });
}

}  // namespace

namespace {

// updn's tables (acyclic) with groups of every port that leads one switch hop nearer
// the destination: fully adaptive minimal routing, which on a torus closes credit loops.
class GreedyGroups final : public RoutingEngine {
 public:
  explicit GreedyGroups(std::string base = "updn") : base_(std::move(base)) {}
  std::string_view name() const override { return "greedy"; }
  Routed compute(const Fabric& f, const Options& o) const override {
    auto t = (*make_engine(base_))->compute(f, o);
    if (!t) return t;
    t->ar_sets.assign(f.size(), {});
    t->ar_group.assign(f.size(), std::vector<uint16_t>(size_t(t->top_lid) + 1, Tables::kNoArGroup));
    for (const LidOwner& own : lid_owners(f)) {
      // Switch hops to the destination's switch.
      std::vector<int> d(f.size(), -1);
      std::vector<NodeIndex> q{
          f.node(own.node).is_switch() ? own.node : f.node(own.node).ports[own.port].peer};
      d[q[0]] = 0;
      for (size_t i = 0; i < q.size(); ++i)
        for (const auto& p : f.node(q[i]).ports)
          if (p.num && p.linked() && f.node(p.peer).is_switch() && d[p.peer] < 0)
            d[p.peer] = d[q[i]] + 1, q.push_back(p.peer);
      for (NodeIndex n = 0; n < f.size(); ++n) {
        if (!f.node(n).is_switch() || d[n] <= 0) continue;
        std::vector<PortNum> set;
        for (const auto& p : f.node(n).ports)
          if (p.num && p.linked() && f.node(p.peer).is_switch() && d[p.peer] == d[n] - 1)
            set.push_back(p.num);
        if (std::find(set.begin(), set.end(), t->lft[n][own.lid.value]) == set.end()) continue;
        t->ar_group[n][own.lid.value] = uint16_t(t->ar_sets[n].size());
        t->ar_sets[n].push_back(std::move(set));
      }
    }
    return t;
  }

 private:
  std::string base_;
};

}  // namespace

TEST(Chain, AdaptiveGroupsThatWouldCloseACreditLoopAreDroppedBeforeProgramming) {
  Fabric f = with_lids("torus:dims=4x4,hosts=1");
  Options o;
  o.adaptive = true;
  auto r = EngineChain::of({std::make_shared<GreedyGroups>()}).compute(f, o);
  ASSERT_TRUE(r.tables) << r.summary();
  EXPECT_EQ(r.engine, "greedy");
  EXPECT_TRUE(r.tables->ar_group.empty());
  EXPECT_TRUE(r.tables->ar_sets.empty());
  EXPECT_TRUE(std::any_of(r.tables->notes.begin(), r.tables->notes.end(), [](const auto& n) {
    return n.find("greedy: no adaptive-routing groups offered: its groups close a credit loop") !=
           std::string::npos;
  }));
  // The static tables are kept, and stay acyclic.
  EXPECT_TRUE(channel_dependencies(f, *r.tables).acyclic);
  // Groups that keep every route up*/down* (ftree on a tree; updn's parallel links) pass,
  // and say they were checked.
  for (auto [spec, engine] : {std::pair{"ft2:leaves=4,spines=2,hosts=2", "ftree"},
                              std::pair{"ft2:leaves=4,spines=2,hosts=2,links=2", "updn"}}) {
    Fabric tree = with_lids(spec);
    auto ok = EngineChain::parse(engine)->compute(tree, o);
    ASSERT_TRUE(ok.tables) << ok.summary();
    EXPECT_FALSE(ok.tables->ar_sets.empty()) << engine;
    EXPECT_TRUE(adaptive_dependencies(tree, *ok.tables).acyclic) << engine;
    ASSERT_FALSE(ok.tables->updown_height.empty()) << engine;  // the cheaper check ran
    EXPECT_TRUE(adaptive_updown_dependencies(tree, *ok.tables, ok.tables->updown_height,
                                             ok.tables->updown_turning)
                    .acyclic)
        << engine;
    EXPECT_TRUE(std::any_of(ok.tables->notes.begin(), ok.tables->notes.end(), [](const auto& n) {
      return n.find("adaptive routing checked before programming") != std::string::npos;
    })) << engine;
  }
  // Layered tables (dfsssp's, on several VLs here) are checked per VL over every port a
  // packet of that VL may take: the greedy groups close a loop within a layer.
  auto layered = EngineChain::of({std::make_shared<GreedyGroups>("dfsssp")}).compute(f, o);
  ASSERT_TRUE(layered.tables) << layered.summary();
  ASSERT_GT(layered.tables->vls, 1);
  EXPECT_TRUE(layered.tables->ar_sets.empty());
  EXPECT_TRUE(
      std::any_of(layered.tables->notes.begin(), layered.tables->notes.end(), [](const auto& n) {
        return n.find(
                   "greedy: no adaptive-routing groups offered: its groups close a credit "
                   "loop") != std::string::npos &&
               n.find(" on VL ") != std::string::npos;
      }));
  EXPECT_TRUE(channel_dependencies(f, *layered.tables).acyclic);
}

// Layered tables keep groups that leave every layer acyclic: updn on a degraded tree (2
// VLs) its up*down* groups for the CA LIDs, ftree on a tree with a failed leaf uplink (2
// VLs) its up-then-down ones; each checked in full per VL before programming, and
// minimal and loop-free.
TEST(Adaptive, LayeredTablesKeepGroupsThatLeaveEveryLayerAcyclic) {
  Options o;
  o.adaptive = true;
  const Fabric degraded = build({"ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6", 6});
  Fabric cut = with_lids("ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4");
  cut.disconnect(*cut.find_by_name("leaf0-0"), 5);
  for (auto [f, engine] :
       {std::pair<const Fabric*, const char*>{&degraded, "updn"}, {&cut, "ftree"}}) {
    SCOPED_TRACE(engine);
    auto r = EngineChain::parse(engine)->compute(*f, o);
    ASSERT_TRUE(r.tables) << r.summary();
    const Tables& t = *r.tables;
    ASSERT_GT(t.vls, 1);
    ASSERT_FALSE(t.ar_sets.empty());
    const CdgReport c = adaptive_dependencies(*f, t);
    EXPECT_TRUE(c.acyclic);
    EXPECT_EQ(c.vls, t.vls);
    EXPECT_FALSE(c.part);
    EXPECT_TRUE(std::any_of(t.notes.begin(), t.notes.end(), [&](const auto& n) {
      return n.find(std::string(engine) + ": adaptive routing checked before programming") !=
                 std::string::npos &&
             n.find(" over every group port on " + std::to_string(t.vls) + " VLs, no cycle") !=
                 std::string::npos;
    }));
    size_t entries = 0;
    for (const auto& row : t.ar_group)
      entries += size_t(std::count_if(row.begin(), row.end(),
                                      [](uint16_t g) { return g != Tables::kNoArGroup; }));
    EXPECT_GT(entries, 0u);
    const auto v = verify_adaptive(*f, t, group_choices(t));
    EXPECT_TRUE(v.ok()) << v.first_problem;
    EXPECT_EQ(v.entries, entries);
    // By effect: over random permutations the busiest links, summed, at most 0.6x the
    // static tables' (the mark; a cut core link must not leave its pod's hosts
    // without groups).
    double fixed = 0, adaptive = 0;
    TrafficOptions to;
    for (to.seed = 1; to.seed <= 5; ++to.seed) {
      fixed += run_traffic(*f, t, Pattern::kPermutation, false, to).max_link_flows;
      adaptive += run_traffic(*f, t, Pattern::kPermutation, true, to).max_link_flows;
    }
    EXPECT_LE(adaptive, 0.6 * fixed) << "static " << fixed << ", adaptive " << adaptive;
  }
}

// updn's groups on graphs that are no trees: what the chain keeps is checked to be free of
// credit loops and to bring every hop nearer; on a whole 3-level tree they spread over
// other next switches than the static one.
TEST(Adaptive, UpDownGroupsOnAnyGraphAreCheckedAndOnTreesReachOtherSwitches) {
  Options o;
  o.adaptive = true;
  size_t kept = 0;  // fabrics whose groups the chain kept
  for (const char* spec : {"torus:dims=4x4,hosts=1", "random:switches=20,degree=4,hosts=2,seed=3",
                           "dragonfly:groups=5,routers=4,global=1,hosts=2",
                           "ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4"}) {
    SCOPED_TRACE(spec);
    Fabric f = with_lids(spec);
    auto r = EngineChain::parse("updn")->compute(f, o);
    ASSERT_TRUE(r.tables) << r.summary();
    const Tables& t = *r.tables;
    if (t.ar_sets.empty()) continue;
    ++kept;
    EXPECT_TRUE(adaptive_dependencies(f, t).acyclic);
    const auto v = verify_adaptive(f, t, group_choices(t));
    EXPECT_TRUE(v.ok()) << v.first_problem;
    if (std::string(spec).starts_with("ft3")) {
      size_t elsewhere = 0;
      for (NodeIndex n = 0; n < f.size(); ++n)
        for (const auto& set : t.ar_sets[n])
          for (PortNum p : set)
            elsewhere += f.node(n).ports[p].peer != f.node(n).ports[set.front()].peer;
      EXPECT_GT(elsewhere, 0u);
    }
  }
  EXPECT_GE(kept, 2u) << "the tree's, and some graph's";
}
