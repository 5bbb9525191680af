#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <set>

#include "test_fabrics.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/sm/lid_manager.hpp"

using namespace weft;
using namespace weft::fabric;
using namespace weft::routing;
using weft::testing::with_lids;

namespace {

Tables route(const Fabric& f) {
  return weft::testing::routed(f, "minhop");
}

// Switch-to-switch hop distances by a plain BFS (independent of the engine's Boost.Graph one).
std::map<std::pair<NodeIndex, NodeIndex>, int> distances(const Fabric& f) {
  std::map<std::pair<NodeIndex, NodeIndex>, int> d;
  for (NodeIndex s = 0; s < f.size(); ++s) {
    if (!f.node(s).is_switch()) continue;
    std::deque<NodeIndex> q{s};
    d[{s, s}] = 0;
    while (!q.empty()) {
      NodeIndex u = q.front();
      q.pop_front();
      for (const auto& p : f.node(u).ports)
        if (p.num && p.linked() && f.node(p.peer).is_switch() && !d.contains({s, p.peer})) {
          d[{s, p.peer}] = d[{s, u}] + 1;
          q.push_back(p.peer);
        }
    }
  }
  return d;
}

// Routes every CA to every CA through the tables; returns per directed switch link
// (switch, port) the number of routes over it. Fails the test on a non-minimal path.
std::map<std::pair<NodeIndex, PortNum>, int> all_to_all(const Fabric& f, const Tables& t) {
  auto dist = distances(f);
  std::map<std::pair<NodeIndex, PortNum>, int> load;
  for (NodeIndex s = 0; s < f.size(); ++s)
    for (const auto& p : f.node(s).ports)
      if (f.node(s).is_switch() && p.num && p.linked() && f.node(p.peer).is_switch())
        load[{s, p.num}] = 0;
  std::vector<std::pair<NodeIndex, NodeIndex>> cas;  // (ca, its switch)
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (!f.node(n).is_switch() && f.node(n).ports[1].linked())
      cas.emplace_back(n, f.node(n).ports[1].peer);
  for (auto [src, ssw] : cas)
    for (auto [dst, dsw] : cas) {
      if (src == dst) continue;
      uint16_t lid = f.node(dst).ports[1].attrs.lid.value;
      NodeIndex cur = ssw;
      int hops = 0;
      while (cur != dsw && hops < 100) {
        PortNum out = t.lft[cur][lid];
        ++load[{cur, out}];
        cur = f.node(cur).ports[out].peer;
        ++hops;
      }
      EXPECT_EQ(hops, dist.at({ssw, dsw})) << "non-minimal path";
    }
  return load;
}

}  // namespace

class MinHopOnFabric : public ::testing::TestWithParam<std::string> {};

TEST_P(MinHopOnFabric, CompleteLoopFreeAndMinimal) {
  Fabric f = with_lids(GetParam());
  Tables t = route(f);
  auto rep = verify_lfts(f, t);
  EXPECT_TRUE(rep.ok()) << rep.first_problem;
  EXPECT_EQ(rep.pairs, f.num_switches() * f.num_lid_ports());  // switch LIDs included
  // Switch-to-switch paths are minimal too.
  auto dist = distances(f);
  for (NodeIndex s = 0; s < f.size(); ++s) {
    if (!f.node(s).is_switch()) continue;
    for (NodeIndex d = 0; d < f.size(); ++d) {
      if (!f.node(d).is_switch()) continue;
      uint16_t lid = f.node(d).ports[0].attrs.lid.value;
      NodeIndex cur = s;
      int hops = 0;
      while (cur != d && hops < 100) cur = f.node(cur).ports[t.lft[cur][lid]].peer, ++hops;
      EXPECT_EQ(hops, dist.at({s, d}));
    }
  }
  all_to_all(f, t);
}

TEST_P(MinHopOnFabric, SameInputSameTables) {
  Fabric f = with_lids(GetParam());
  EXPECT_EQ(route(f).lft, route(f).lft);
}

INSTANTIATE_TEST_SUITE_P(
    Generated, MinHopOnFabric,
    ::testing::Values("ft2:leaves=8,spines=4,hosts=6", "ft2:leaves=6,spines=3,hosts=4,links=2",
                      "ft2:leaves=3,spines=2,hosts=3,links=40",  // 120 switch links on a spine
                      "ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=2",
                      "ft3:pods=3,leaves=2,aggs=3,hosts=1,cores=1",  // partial population
                      "torus:dims=4x4x4,hosts=2", "torus:dims=5x3,hosts=1", "mesh:dims=6x6,hosts=1",
                      "random:switches=30,degree=4,hosts=2,seed=1",
                      "random:switches=50,degree=6,hosts=1,seed=9"));

TEST(MinHop, BalancesUpperTreeLevels) {
  // LIDs numbered in topological order are the case where a per-port counter over
  // all LIDs, with every switch taking destinations in the same order, collapses
  // aggregation-to-core traffic onto a few links (OpenSM: busiest link 5-8x the
  // mean, a third of the links unused). Balanced per switch, in an order of its own,
  // the busiest stays within 1.6x of the mean (84 against 54 here); ftree is exact.
  Fabric f = with_lids("ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4");
  Tables t = route(f);
  auto load = all_to_all(f, t);
  long sum = 0;
  int max = 0, unused = 0;
  for (auto& [link, n] : load) {
    if (n == 0)
      ADD_FAILURE() << f.node(link.first).name << " port " << int(link.second)
                    << " carries no route";
    sum += n;
    max = std::max(max, n);
    unused += n == 0;
  }
  const double mean = double(sum) / load.size();
  EXPECT_EQ(unused, 0);
  EXPECT_LE(max, 1.6 * mean) << "max " << max << " mean " << mean;
}

TEST(MinHop, DisconnectedPartsGetDropEntriesNotGarbage) {
  Fabric f = with_lids("ft2:leaves=2,spines=1,hosts=1");
  // Cut leaf1 from the spine: its host and it are unreachable from the rest.
  NodeIndex leaf1 = *f.find_by_name("leaf1");
  for (const auto& p : f.node(leaf1).ports)
    if (p.num && p.linked() && f.node(p.peer).is_switch()) {
      f.disconnect(leaf1, p.num);
      break;
    }
  Tables t = route(f);
  NodeIndex leaf0 = *f.find_by_name("leaf0");
  uint16_t far = f.node(leaf1).ports[0].attrs.lid.value;
  EXPECT_EQ(t.lft[leaf0][far], kDropPort);
  auto rep = verify_lfts(f, t);
  EXPECT_FALSE(rep.ok());
  EXPECT_GT(rep.unreachable, 0u);
  EXPECT_EQ(rep.loops, 0u);
}

TEST(MinHop, RefusesDuplicateLids) {
  Fabric f = with_lids("ft2:leaves=2,spines=1,hosts=1");
  f.node(0).ports[1].attrs.lid = f.node(1).ports[1].attrs.lid;
  auto t = (*make_engine("minhop"))->compute(f, {});
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("is held by two ports"), std::string::npos);
}

TEST(Verify, FindsLoopsAndDrops) {
  Fabric f = with_lids("ft2:leaves=2,spines=2,hosts=1");
  Tables t = route(f);
  NodeIndex leaf0 = *f.find_by_name("leaf0"), spine0 = *f.find_by_name("spine0");
  uint16_t lid = f.node(*f.find_by_name("h1-0")).ports[1].attrs.lid.value;
  // spine0 sends it back to leaf0, leaf0 sends it to spine0: a loop.
  for (const auto& p : f.node(spine0).ports)
    if (p.linked() && p.peer == leaf0) t.lft[spine0][lid] = p.num;
  for (const auto& p : f.node(leaf0).ports)
    if (p.linked() && p.peer == spine0) t.lft[leaf0][lid] = p.num;
  auto rep = verify_lfts(f, t);
  EXPECT_GT(rep.loops, 0u);
  EXPECT_NE(rep.first_problem.find("loop"), std::string::npos);
  t.lft[leaf0][lid] = kDropPort;
  EXPECT_GT(verify_lfts(f, t).unreachable, 0u);
  EXPECT_EQ(make_engine("nosuch").error().message.find("unknown routing engine"), 0u);
}

// ---- repair: after links are lost, only the entries that no longer take a shortest
// path are routed again -------------------------------------------------------------

namespace {

Options after(const Fabric& f, const Tables& t, const std::string& engine = "minhop") {
  Options o;
  o.previous = {&f, &t, engine};
  return o;
}

// The inter-switch links of f, every `step`-th one.
// The number just before `what` in a table's notes (0 where no note says it).
size_t noted(const Tables& t, std::string_view what) {
  for (const auto& n : t.notes)
    if (auto at = n.find(what); at != std::string::npos) {
      auto from = at;
      while (from > 0 && std::isdigit(static_cast<unsigned char>(n[from - 1]))) --from;
      return from == at ? 0 : std::stoul(n.substr(from, at - from));
    }
  return 0;
}

std::vector<fabric::Link> some_switch_links(const Fabric& f, size_t step) {
  std::vector<fabric::Link> out;
  size_t i = 0;
  for (const auto& l : f.links())
    if (f.node(l.a).is_switch() && f.node(l.b).is_switch() && i++ % step == 0) out.push_back(l);
  return out;
}

// Each switch link of f cut in turn, every other cut followed by a second one repaired
// from the first repair's tables and memo: each repair by `engine` from tables with
// their memo held byte for byte to the repair from the same tables without it; seen(r,
// bare) then told of both.
template <class Seen>
void memo_repairs_match_bare(const Fabric& f, const Tables& t0, const std::string& engine,
                             Seen&& seen) {
  auto e = make_engine(engine);
  ASSERT_TRUE(e);
  auto both = [&](const Fabric& was, const Tables& t, const Fabric& now) {
    Tables bare = t;
    bare.memo.reset();
    auto r = (*e)->compute(now, after(was, t, engine));
    auto r_bare = (*e)->compute(now, after(was, bare, engine));
    EXPECT_EQ(bool(r), bool(r_bare));
    if (r && r_bare) {
      EXPECT_EQ(r->repaired, r_bare->repaired);
      EXPECT_EQ(r->lft, r_bare->lft);
      EXPECT_EQ(r->path_sl, r_bare->path_sl);
      EXPECT_EQ(r->rerouted, r_bare->rerouted);
    }
    seen(r, r_bare);
  };
  const auto cuts = some_switch_links(f, 1);
  for (size_t i = 0; i + 1 < cuts.size(); i += 2) {
    Fabric g = f;
    g.disconnect(cuts[i].a, cuts[i].pa);
    both(f, t0, g);
    auto r = (*e)->compute(g, after(f, t0, engine));
    if (!r) continue;  // (a refusal: seen() was told of it)
    Fabric h = g;
    h.disconnect(cuts[i + 1].a, cuts[i + 1].pa);
    both(g, *r, h);
  }
}

}  // namespace

TEST(MinHopRepair, ALostLinkReroutesOnlyTheEntriesThatNoLongerTakeAShortestPath) {
  for (const std::string spec :
       {"ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4", "ft2:leaves=8,spines=4,hosts=4,links=2",
        "torus:dims=4x4,hosts=1"}) {
    SCOPED_TRACE(spec);
    const Fabric f = with_lids(spec);
    const Tables t0 = route(f);
    uint64_t repaired_max = 0, fresh_max = 0;
    for (const auto& cut : some_switch_links(f, 7)) {
      Fabric g = f;
      g.disconnect(cut.a, cut.pa);
      auto e = make_engine("minhop");
      ASSERT_TRUE(e);
      auto r = (*e)->compute(g, after(f, t0));
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_TRUE(r->repaired);
      EXPECT_TRUE(verify_lfts(g, *r).ok()) << verify_lfts(g, *r).first_problem;
      EXPECT_EQ(analyze(g, *r).stretch_max, 1.0);
      // Only the entries whose old port no longer leads one hop nearer were routed again,
      // and only they changed.
      const auto d = distances(g);
      std::map<size_t, NodeIndex> dest;  // LID -> the switch that delivers it
      for (const auto& o : lid_owners(g))
        dest[o.lid.value] = g.node(o.node).is_switch() ? o.node : g.node(o.node).ports[o.port].peer;
      std::set<std::pair<NodeIndex, size_t>> broken, changed;
      for (NodeIndex n = 0; n < g.size(); ++n) {
        if (!g.node(n).is_switch()) continue;
        for (const auto& [lid, at] : dest) {
          if (at == n) continue;
          const auto& p = g.node(n).ports[t0.lft[n][lid]];
          if (!p.linked() || !g.node(p.peer).is_switch() || d.at({p.peer, at}) + 1 != d.at({n, at}))
            broken.insert({n, lid});
          if (r->lft[n][lid] != t0.lft[n][lid]) changed.insert({n, lid});
        }
      }
      EXPECT_FALSE(broken.empty());
      EXPECT_EQ(r->rerouted, broken.size());
      EXPECT_EQ(changed, broken);  // a broken entry cannot keep its port
      repaired_max += analyze(g, *r).max_link_load;
      fresh_max += analyze(g, route(g)).max_link_load;
    }
    // The balance stays a fresh computation's: over the cuts, the busiest links carry
    // about what minhop gives from scratch (one cut's either way varies by the
    // switches' shuffles: 36 to 57 routes on the small 3-level tree for both).
    EXPECT_LE(repaired_max, fresh_max * 11 / 10) << "fresh " << fresh_max;
  }
}

// minhop keeps a memo with its tables (its distances, each LID's switch, the LIDs per
// port): a repair keeps whole the rows of the switches that lost no link and where no
// distance moved there or next door, checks the others only toward the switches whose
// distances moved, and deals from the memo's counts. The tables are byte for byte those
// of the repair without the memo, after each cut and after a second cut repaired from
// the first repair's tables and memo; trees, parallel links, a torus, a random graph, a
// tree a cut splits.
TEST(MinHopRepair, KeepsWholeTheRowsWhereNoDistanceMovedAsTheEntryByEntryCheckWould) {
  for (const std::string spec :
       {"ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4", "ft2:leaves=8,spines=4,hosts=4,links=2",
        "torus:dims=4x4,hosts=1", "random:switches=20,degree=4,hosts=2,seed=5",
        "ft2:leaves=4,spines=1,hosts=2"}) {  // (where a cut leaves a leaf unreachable)
    SCOPED_TRACE(spec);
    const Fabric f = with_lids(spec);
    auto e = make_engine("minhop");
    ASSERT_TRUE(e);
    auto t0 = (*e)->compute(f, {});
    ASSERT_TRUE(t0) << t0.error().message;
    ASSERT_TRUE(t0->memo);
    auto whole = [&](const Tables& t) { return noted(t, " switches' rows kept whole"); };
    size_t kept = 0, partly = 0, rerouted = 0;
    memo_repairs_match_bare(f, *t0, "minhop", [&](const Routed& r, const Routed& r_bare) {
      EXPECT_TRUE(r && r_bare);
      if (!r || !r_bare) return;
      EXPECT_TRUE(r->repaired);
      EXPECT_EQ(whole(*r_bare), 0u);
      kept += whole(*r);
      partly += noted(*r, " checked only toward");
      rerouted += r->rerouted;
    });
    EXPECT_GT(kept, 0u);
    EXPECT_GT(partly, 0u);
    if (!spec.contains("spines=1")) {  // (a split tree has no other way to reroute by)
      EXPECT_GT(rerouted, 0u);
    }
  }
}

TEST(MinHopRepair, RoutesAfreshWhenALinkIsNewALidMovedOrAnotherEngineRouted) {
  const Fabric f = with_lids("ft2:leaves=6,spines=3,hosts=2");
  const auto cut = some_switch_links(f, 1).front();
  Fabric g = f;
  g.disconnect(cut.a, cut.pa);
  const Tables tg = route(g);
  auto e = make_engine("minhop");
  ASSERT_TRUE(e);
  // The link comes back: routed afresh, so the balanced routes of f return.
  auto back = (*e)->compute(f, after(g, tg));
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->repaired);
  EXPECT_EQ(back->lft, route(f).lft);
  // A LID that moved to another port.
  Fabric moved = g;
  for (NodeIndex n = 0; n < moved.size(); ++n)
    if (!moved.node(n).is_switch()) {
      moved.node(n).ports[1].attrs.lid = Lid{static_cast<uint16_t>(900)};
      break;
    }
  auto r = (*e)->compute(moved, after(g, tg));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->repaired);
  // Tables of another engine.
  Fabric h = g;
  h.disconnect(some_switch_links(g, 1).back().a, some_switch_links(g, 1).back().pa);
  auto other = (*e)->compute(h, after(g, tg, "updn"));
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->repaired);
  auto same = (*e)->compute(h, after(g, tg));
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->repaired);
}

// What repairing `t0` gives, one cut link at a time (every 5th switch link), beside a
// fresh computation of the cut fabric: each repaired table verified, as complete and
// deadlock-free as the fresh one, no longer paths (`same_lengths`: the same ones), its
// count of changed entries right; summed over the cuts.
struct RepairTally {
  size_t cuts = 0;
  uint64_t rerouted = 0, fresh_changed = 0, repaired_max = 0, fresh_max = 0;
};
RepairTally repair_against_fresh(const Fabric& f, const Tables& t0, const std::string& engine,
                                 bool same_lengths) {
  RepairTally tally;
  auto e = make_engine(engine);
  EXPECT_TRUE(e);
  if (!e) return tally;
  for (const auto& cut : some_switch_links(f, 5)) {
    Fabric g = f;
    g.disconnect(cut.a, cut.pa);
    auto fresh = (*e)->compute(g, {});
    auto r = (*e)->compute(g, after(f, t0, engine));
    EXPECT_EQ(bool(fresh), bool(r)) << (r ? fresh.error().message : r.error().message);
    if (!r || !fresh) continue;  // (a cut the engine refuses either way)
    ++tally.cuts;
    EXPECT_TRUE(r->repaired);
    EXPECT_FALSE(fresh->repaired);
    EXPECT_TRUE(verify_lfts(g, *r).ok()) << verify_lfts(g, *r).first_problem;
    const auto ar = analyze(g, *r), af = analyze(g, *fresh);
    EXPECT_EQ(ar.reachable, af.reachable);
    if (same_lengths) {
      EXPECT_EQ(ar.stretch_max, af.stretch_max);
    } else {
      EXPECT_LE(ar.stretch_max, af.stretch_max);
    }
    EXPECT_EQ(r->deadlock_free, fresh->deadlock_free);
    EXPECT_TRUE(channel_dependencies(g, *r).acyclic);
    // What the repair changed, against what a fresh computation changes.
    uint64_t changed = 0;
    for (NodeIndex n = 0; n < g.size(); ++n)
      if (g.node(n).is_switch())
        for (size_t lid = 1; lid < r->lft[n].size(); ++lid) {
          changed += r->lft[n][lid] != t0.lft[n][lid];
          tally.fresh_changed += fresh->lft[n][lid] != t0.lft[n][lid];
        }
    EXPECT_EQ(changed, r->rerouted);
    tally.rerouted += r->rerouted;
    tally.repaired_max += ar.max_link_load;
    tally.fresh_max += af.max_link_load;
  }
  return tally;
}

// The up/down repair tests' fabrics: trees where the top switches' pairs are bridged,
// one with doubled links, and a random graph.
const std::vector<std::string> kUpDownRepairSpecs = {"ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4",
                                                     "ft2:leaves=8,spines=4,hosts=4,links=2",
                                                     "random:switches=20,degree=4,hosts=2,seed=5"};

// up/down repairs the same way: after links are lost, an entry whose port is still a
// legal up*down* hop one step nearer keeps it, and only the others are routed again.
// The guarantees stay a fresh computation's (complete, legal, the same path lengths,
// the busiest links within 10 %), for far fewer changed entries.
TEST(UpDownRepair, ALostLinkReroutesOnlyTheEntriesWhoseHopIsNoLongerLegal) {
  for (const std::string& spec : kUpDownRepairSpecs) {
    for (const std::string engine : {"updn", "dnup"}) {
      SCOPED_TRACE(spec + " " + engine);
      const Fabric f = with_lids(spec);
      auto t0 = (*make_engine(engine))->compute(f, {});
      if (!t0 && engine == "dnup" && spec.starts_with("random")) continue;  // no down*up* way
      ASSERT_TRUE(t0) << t0.error().message;
      const RepairTally t = repair_against_fresh(f, *t0, engine, true);
      EXPECT_GT(t.cuts, 0u);
      // On a tree a lost link leaves the ranks as they were, and most hops legal; on a
      // random graph it moves the ranks about its single root, and more hops with them.
      const bool tree = spec.starts_with("ft");
      EXPECT_LT(t.rerouted * (tree ? 2 : 1), t.fresh_changed)
          << "repair " << t.rerouted << ", fresh " << t.fresh_changed;
      EXPECT_LE(t.repaired_max, t.fresh_max * 11 / 10) << "fresh " << t.fresh_max;
    }
  }
  // Tables of another engine, or a link that came back: afresh.
  const Fabric f = with_lids("ft2:leaves=6,spines=3,hosts=2");
  auto e = make_engine("updn");
  auto t0 = (*e)->compute(f, {});
  ASSERT_TRUE(t0);
  Fabric g = f;
  g.disconnect(some_switch_links(f, 1).front().a, some_switch_links(f, 1).front().pa);
  auto other = (*e)->compute(g, after(f, *t0, "minhop"));
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->repaired);
  auto tg = (*e)->compute(g, {});
  auto back = (*e)->compute(f, after(g, *tg, "updn"));
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->repaired);
  EXPECT_EQ(back->lft, t0->lft);
}

// up/down keeps a memo with its tables (its distances, counts and the groups each
// switch had no legal hop to, and its bridges): a repair keeps whole the rows of the
// switches whose distances, and their neighbours', are as they were, instead of
// checking each entry, checks the others only toward the groups that moved, and takes
// the bridges nothing they depend on changed.
// The tables are byte for byte those of the repair without the memo, after one cut
// and after a second cut repaired from the first repair's tables; trees where the top
// switches' pairs are bridged, a random graph, both directions.
TEST(UpDownRepair, KeepsWholeTheRowsWhoseDistancesStandAsTheEntryByEntryCheckWould) {
  for (const std::string& spec : kUpDownRepairSpecs) {
    for (const std::string engine : {"updn", "dnup"}) {
      SCOPED_TRACE(spec + " " + engine);
      const Fabric f = with_lids(spec);
      auto e = make_engine(engine);
      ASSERT_TRUE(e);
      auto t0 = (*e)->compute(f, {});
      if (!t0 && engine == "dnup" && spec.starts_with("random")) continue;  // no down*up* way
      ASSERT_TRUE(t0) << t0.error().message;
      ASSERT_TRUE(t0->memo);
      size_t switches = 0;
      for (NodeIndex n = 0; n < f.size(); ++n) switches += f.node(n).is_switch();
      const auto cuts = some_switch_links(f, 1);
      size_t kept_whole = 0, repairs = 0;
      // The note's count of switches kept whole, or (partly) checked toward a few groups
      // only (0 without one).
      auto whole = [](const Tables& t, bool partly = false) -> size_t {
        for (const auto& n : t.notes)
          if (auto at = n.find("; "); at != std::string::npos && n.find("kept whole") != n.npos)
            return std::stoul(partly ? n.substr(n.find("), ", at) + 3) : n.substr(at + 2));
        return 0;
      };
      size_t partly = 0, bridges_kept = 0;
      // The ways into the routed switches (of pairs no up*down* path joins) taken from
      // the memo.
      auto bridges = [](const Tables& t) -> size_t {
        for (const auto& n : t.notes)
          if (auto at = n.find(" ways, one per set"); at != std::string::npos)
            return std::stoul(n.substr(n.rfind("(", at) + 1));
        return 0;
      };
      for (size_t i = 0; i + 1 < cuts.size(); i += 2) {
        Fabric g = f;
        g.disconnect(cuts[i].a, cuts[i].pa);
        Tables bare = *t0;
        bare.memo.reset();
        auto r = (*e)->compute(g, after(f, *t0, engine));
        auto r_bare = (*e)->compute(g, after(f, bare, engine));
        ASSERT_EQ(bool(r), bool(r_bare));
        if (!r) continue;
        ASSERT_TRUE(r->repaired && r_bare->repaired);
        EXPECT_EQ(r->lft, r_bare->lft);
        EXPECT_EQ(r->rerouted, r_bare->rerouted);
        EXPECT_EQ(whole(*r_bare), 0u);
        EXPECT_EQ(bridges(*r_bare), 0u);
        kept_whole += whole(*r);
        partly += whole(*r, true);
        bridges_kept += bridges(*r);
        ++repairs;
        EXPECT_LT(whole(*r), switches);  // the cut link's ends are not
        // A second cut, repaired from the first repair's tables and memo.
        Fabric h = g;
        h.disconnect(cuts[i + 1].a, cuts[i + 1].pa);
        Tables bare2 = *r;
        bare2.memo.reset();
        auto r2 = (*e)->compute(h, after(g, *r, engine));
        auto r2_bare = (*e)->compute(h, after(g, bare2, engine));
        ASSERT_EQ(bool(r2), bool(r2_bare));
        if (!r2) continue;
        EXPECT_EQ(r2->lft, r2_bare->lft);
        EXPECT_EQ(r2->rerouted, r2_bare->rerouted);
        EXPECT_TRUE(verify_lfts(h, *r2).ok()) << verify_lfts(h, *r2).first_problem;
        kept_whole += whole(*r2);
        partly += whole(*r2, true);
        bridges_kept += bridges(*r2);
        ++repairs;
      }
      ASSERT_GT(repairs, 0u);
      // On the trees a cut leaves the ranks as they were, and most switches' distances
      // (on these small ones a third or more keep their rows); on the random graph it
      // moves the ranks about its root for some cuts (then nothing is kept whole).
      // On the 3-level tree a leaf's lost link moves the distances toward it (and toward
      // its aggregation switch) at a few switches: theirs and their neighbours' rows are
      // checked toward those groups only. (The 2-level tree's links are doubled: a cut
      // moves no distance.)
      if (spec.starts_with("ft")) {
        EXPECT_GT(kept_whole * 3, repairs * switches);
      }
      if (spec.starts_with("ft3")) {
        EXPECT_GT(partly, 0u);
        EXPECT_GT(bridges_kept, 0u);  // (the top switches' pairs toward each other)
      }
    }
  }
  // Distances held in spans (a budget below all groups at once) keep no memo.
  const Fabric f = with_lids("random:switches=100,degree=4,hosts=1,seed=2");
  Options small;
  small.updown_distance_budget = 1;
  auto t = (*make_engine("updn"))->compute(f, small);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->memo);
}

// dfsssp repairs too: an entry whose previous hop still leads one step nearer keeps it,
// the others are balanced against the kept entries' loads, and the routes are layered
// (the unchanged paths on their SLs, below). Complete, minimal, deadlock-free, the
// busiest links within 10 % of a fresh computation, and fewer than half the entries a
// fresh computation changes.
TEST(DfssspRepair, ALostLinkKeepsEveryEntryStillOneStepNearer) {
  for (const std::string spec :
       {"torus:dims=4x4x4,hosts=1", "ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4",
        "random:switches=20,degree=4,hosts=2,seed=5"}) {
    SCOPED_TRACE(spec);
    const Fabric f = with_lids(spec);
    auto t0 = (*make_engine("dfsssp"))->compute(f, {});
    ASSERT_TRUE(t0) << t0.error().message;
    const RepairTally t = repair_against_fresh(f, *t0, "dfsssp", true);
    EXPECT_GT(t.cuts, 0u);
    EXPECT_LT(t.rerouted * 2, t.fresh_changed)
        << "repair " << t.rerouted << ", fresh " << t.fresh_changed;
    EXPECT_LE(t.repaired_max, t.fresh_max * 11 / 10) << "fresh " << t.fresh_max;
  }
}

// A dfsssp repair keeps the SL of every path whose hops are all as before (traffic that
// holds a path record keeps a layer that still holds its path), places the changed paths
// afresh, and is deadlock-free: each layer re-checked with the kept and the new paths.
// Held to a plain walk of both tables.
TEST(DfssspRepair, EveryPathWhoseHopsStayKeepsItsSl) {
  for (const std::string spec :
       {"torus:dims=4x4x4,hosts=1", "random:switches=20,degree=4,hosts=2,seed=5",
        "dragonfly:groups=6,routers=3,global=2,hosts=1"}) {
    SCOPED_TRACE(spec);
    const Fabric f = with_lids(spec);
    auto t0 = (*make_engine("dfsssp"))->compute(f, {});
    ASSERT_TRUE(t0) << t0.error().message;
    ASSERT_GT(t0->vls, 1u);
    size_t kept = 0, changed = 0, repairs = 0;
    for (const auto& cut : some_switch_links(f, 5)) {
      Fabric g = f;
      g.disconnect(cut.a, cut.pa);
      auto r = (*make_engine("dfsssp"))->compute(g, after(f, *t0, "dfsssp"));
      ASSERT_TRUE(r) << r.error().message;
      ASSERT_TRUE(r->repaired);
      ++repairs;
      EXPECT_TRUE(verify_lfts(g, *r).ok()) << verify_lfts(g, *r).first_problem;
      const CdgReport cdg = channel_dependencies(g, *r);
      EXPECT_TRUE(cdg.acyclic);
      EXPECT_LE(cdg.vls, 8u);
      ASSERT_FALSE(r->path_sl.empty());
      EXPECT_TRUE(std::ranges::any_of(r->notes, [](const std::string& n) {
        return n.find("paths kept their SL where every hop stayed") != std::string::npos;
      }));
      for (const auto& ow : lid_owners(g)) {
        const uint16_t lid = ow.lid.value;
        for (NodeIndex n = 0; n < g.size(); ++n) {
          if (!g.node(n).is_switch()) continue;
          // The path from n: its hops in both tables, switch by switch.
          bool same = true, any = false;
          for (NodeIndex u = n; u != fabric::kNoNode;) {
            const PortNum p = r->lft[u][lid];
            if (p != t0->lft[u][lid]) {
              same = false;
              break;
            }
            if (p == 0 || p > g.node(u).num_ports) break;  // (kDropPort too)
            const auto& port = g.node(u).ports[p];
            if (!port.linked() || !g.node(port.peer).is_switch()) break;
            any = true;
            u = port.peer;
          }
          if (!any) continue;  // no channel: nothing to keep
          if (same) {
            ++kept;
            EXPECT_EQ(r->path_sl[n][lid], t0->path_sl[n][lid]) << "switch " << n << " LID " << lid;
          } else {
            ++changed;
          }
        }
      }
    }
    EXPECT_GT(repairs, 0u);
    EXPECT_GT(kept, 0u);
    EXPECT_GT(changed, 0u);
  }
}

// ftree repairs the same way: an entry whose previous port is still one of its
// up-then-down candidates keeps it, the others go to their least used candidate,
// counted against the kept ones. Complete, deadlock-free, no longer paths, the
// busiest links within 10 % of a fresh computation, and fewer entries changed.
// A repair, entry by entry: with adaptive routing each entry's group is its candidates
// (ftree: the ports d-mod-k picks among; up/down: its legal shortest hops), so every
// entry whose previous port is still one of them must keep it; and the static tables
// are the same with adaptive routing or without (the repairs' common cases run apart
// from the paths adaptive routing takes), so the check holds for both.
// (`base`: the options every computation starts from.)
void keeps_candidates(const std::string& spec, const std::string& name, const Options& base = {}) {
  SCOPED_TRACE(spec + " " + name);
  const Fabric f = with_lids(spec);
  const auto engine = *make_engine(name);
  Options ao = base;
  ao.adaptive = true;
  auto t0 = engine->compute(f, ao);
  ASSERT_TRUE(t0) << t0.error().message;
  size_t checked = 0, kept = 0;
  for (const auto& cut : some_switch_links(f, 3)) {
    Fabric g = f;
    g.disconnect(cut.a, cut.pa);
    Options o = base, os = base;
    o.previous = os.previous = {&f, &*t0, name};
    o.adaptive = true;
    auto ra = engine->compute(g, o);
    auto rs = engine->compute(g, os);
    ASSERT_EQ(bool(ra), bool(rs)) << (ra ? rs.error().message : ra.error().message);
    if (!ra) continue;  // (a cut the engine refuses either way)
    ASSERT_TRUE(ra->repaired && rs->repaired);
    EXPECT_TRUE(verify_lfts(g, *rs).ok()) << verify_lfts(g, *rs).first_problem;
    for (NodeIndex n = 0; n < g.size(); ++n) {
      if (!g.node(n).is_switch()) continue;
      ASSERT_EQ(ra->lft[n], rs->lft[n]) << "switch " << n;
      for (size_t lid = 1; lid < ra->lft[n].size(); ++lid) {
        const uint16_t grp = ra->ar_group[n][lid];
        if (grp == Tables::kNoArGroup) continue;
        const auto& cands = ra->ar_sets[n][grp];
        const PortNum was = t0->lft[n][lid];
        ++checked;
        if (std::find(cands.begin(), cands.end(), was) == cands.end()) continue;
        ++kept;
        EXPECT_EQ(ra->lft[n][lid], was) << "switch " << n << " LID " << lid;
      }
    }
  }
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, checked);  // some entries lost their port
}

TEST(FatTreeRepair, EveryEntryKeepsItsPortWhereItIsStillACandidateWithOrWithoutAdaptive) {
  for (const std::string spec :
       {"ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4", "ft2:leaves=8,spines=4,hosts=4,links=2"})
    keeps_candidates(spec, "ftree");
}

TEST(UpDownRepair, EveryEntryKeepsItsHopWhereItIsStillLegalWithOrWithoutAdaptive) {
  for (const std::string spec :
       {"ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4", "ft2:leaves=8,spines=4,hosts=4,links=2"})
    for (const std::string engine : {"updn", "dnup"}) keeps_candidates(spec, engine);
}

// Past Options::updown_distance_budget up/down goes through the destination switches in
// spans of 64 (on a fabric of over 11,000 switches, at the default): 78 switches here,
// in two spans, route complete, loop-free and deadlock-free, and repair as above.
TEST(UpDownRepair, DistancesInSpansRouteAndRepairAsAtOnce) {
  const std::string spec = "ft3:pods=6,leaves=6,aggs=6,hosts=2,cores=6";
  Options spans;
  spans.updown_distance_budget = 1;
  const Fabric f = with_lids(spec);
  size_t switches = 0;
  for (NodeIndex n = 0; n < f.size(); ++n) switches += f.node(n).is_switch();
  ASSERT_GT(switches, 64u);  // (more than one span)
  for (const std::string engine : {"updn", "dnup"}) {
    SCOPED_TRACE(engine);
    auto whole = (*make_engine(engine))->compute(f, {});
    auto spanned = (*make_engine(engine))->compute(f, spans);
    ASSERT_TRUE(whole && spanned);
    EXPECT_TRUE(verify_lfts(f, *spanned).ok()) << verify_lfts(f, *spanned).first_problem;
    EXPECT_TRUE(spanned->deadlock_free);
    EXPECT_TRUE(channel_dependencies(f, *spanned).acyclic);
    EXPECT_EQ(analyze(f, *spanned).reachable, analyze(f, *whole).reachable);
    keeps_candidates(spec, engine, spans);
  }
}

// ftree keeps a memo with its tables: a repair takes the plan of each target no lost link
// mattered to, keeps whole the rows of the switches where every LID's candidates stand,
// and checks the others only for the LIDs whose candidates changed there. Its tables are byte for
// byte those of the repair without the memo; every switch link of the trees cut in turn, then a
// second cut repaired from the first repair's tables and memo.
TEST(FatTreeRepair, TakesFromItsMemoThePlansAndRowsNoLostLinkTouched) {
  for (const std::string spec :
       {"ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4", "ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4",
        "ft2:leaves=8,spines=4,hosts=4,links=2"}) {
    SCOPED_TRACE(spec);
    const Fabric f = with_lids(spec);
    auto e = make_engine("ftree");
    ASSERT_TRUE(e);
    auto t0 = (*e)->compute(f, {});
    ASSERT_TRUE(t0) << t0.error().message;
    ASSERT_TRUE(t0->memo);
    struct Taken {
      size_t plans = 0, whole = 0, partly = 0;
    } taken;
    // What each repair took from the memo. (Tables whose paths turn on SL 1 are routed
    // afresh, with or without the memo.)
    memo_repairs_match_bare(f, *t0, "ftree", [&](const Routed& r, const Routed& r_bare) {
      if (!r || !r_bare) return;
      EXPECT_EQ(noted(*r_bare, " targets' plans"), 0u);
      EXPECT_EQ(noted(*r_bare, " switches' rows kept whole"), 0u);
      taken.plans += noted(*r, " targets' plans");
      taken.whole += noted(*r, " switches' rows kept whole");
      taken.partly += noted(*r, " checked only for the LIDs");
    });
    EXPECT_GT(taken.plans, 0u);
    EXPECT_GT(taken.whole, 0u);
    EXPECT_GT(taken.partly, 0u);
  }
}

TEST(FatTreeRepair, ALostLinkKeepsEveryEntryWhosePortIsStillACandidate) {
  for (const std::string spec :
       {"ft3:pods=3,leaves=4,aggs=4,hosts=3,cores=4", "ft2:leaves=8,spines=4,hosts=4,links=2",
        "ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4"}) {
    SCOPED_TRACE(spec);
    const Fabric f = with_lids(spec);
    auto t0 = (*make_engine("ftree"))->compute(f, {});
    ASSERT_TRUE(t0) << t0.error().message;
    const RepairTally t = repair_against_fresh(f, *t0, "ftree", false);
    EXPECT_GT(t.cuts, 0u);
    EXPECT_LT(t.rerouted, t.fresh_changed)
        << "repair " << t.rerouted << ", fresh " << t.fresh_changed;
    EXPECT_LE(t.repaired_max, t.fresh_max * 11 / 10) << "fresh " << t.fresh_max;
  }
}
