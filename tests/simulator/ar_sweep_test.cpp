// Adaptive routing programmed by the sweep (issue 30, items 2 and 5): capability read
// from every switch (a model that never answers costs one SMP, once), the engine's
// groups written into the switches that hold AR, fitted into each one's GroupCap, AR
// on last; a second sweep writes nothing; a reset switch is rewritten; AR no longer
// asked for is turned off.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "sim_sm.hpp"
#include "weft/mad/ar.hpp"
#include "weft/routing/traffic.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;
using namespace weft::testing;
using fabric::NodeIndex;

namespace {

// Two links between every leaf and spine: every switch has groups (a spine one per leaf).
constexpr const char* kTree = "ft2:leaves=4,spines=3,hosts=2,links=2";

SimFabric sim_with(SimDefaults d) {
  auto f = make_fabric(kTree);
  EXPECT_TRUE(f);
  return SimFabric(std::move(*f), d);
}

SmOptions ar_opts(const ScratchDir& d, const std::string& engine = "ar_ftree") {
  SmOptions o = sm_opts(d);
  o.routing_engine = engine;
  return o;
}

size_t switches(const SimFabric& sim) {
  size_t n = 0;
  for (NodeIndex i = 0; i < sim.model().size(); ++i) n += sim.model().node(i).is_switch();
  return n;
}

// Hops from every node to node `to`.
std::vector<int> hops_to(const fabric::Fabric& f, NodeIndex to) {
  std::vector<int> d(f.size(), -1);
  std::deque<NodeIndex> q{to};
  d[to] = 0;
  while (!q.empty()) {
    const NodeIndex n = q.front();
    q.pop_front();
    for (const auto& p : f.node(n).ports)
      if (p.num && p.linked() && d[p.peer] < 0) {
        d[p.peer] = d[n] + 1;
        // Only switches forward.
        if (f.node(p.peer).is_switch()) q.push_back(p.peer);
      }
  }
  return d;
}

// What the switches hold, checked against their own LFTs: every AR LFT entry's default
// port is the LFT's, a group holds its entry's default port, and every port of a group
// is one hop nearer the destination. Returns the switches with AR on.
size_t check_held(const SimFabric& sim) {
  const fabric::Fabric& f = sim.model();
  size_t on = 0;
  for (const auto& o : routing::lid_owners(f)) {
    const auto d = hops_to(f, o.node);
    for (NodeIndex n = 0; n < f.size(); ++n) {
      if (!f.node(n).is_switch() || n == o.node) continue;
      const auto& ar = sim.ar(n);
      if (!ar.info.enabled) continue;
      const ArLftEntry& e = ar.lft.at(o.lid.value);
      EXPECT_EQ(e.default_port, sim.lft(n).at(o.lid.value)) << f.node(n).name;
      if (e.state == ArLidState::kStatic) continue;
      EXPECT_EQ(e.state, ArLidState::kBounded);
      EXPECT_GT(e.group, 0) << "group 0 is never used";
      EXPECT_LE(e.group, ar.info.group_top);
      if (e.group == 0 || e.group > ar.info.group_top) continue;
      const ArPortMask& m = ar.groups.at(e.group);
      EXPECT_TRUE(ar_mask_has(m, e.default_port)) << f.node(n).name << " LID " << o.lid.value;
      for (PortNum p = 1; p <= f.node(n).num_ports; ++p) {
        if (!ar_mask_has(m, p)) continue;
        EXPECT_TRUE(f.node(n).ports[p].linked());
        if (f.node(n).ports[p].linked()) {
          EXPECT_EQ(d[f.node(n).ports[p].peer], d[n] - 1)
              << f.node(n).name << " port " << int(p) << " to LID " << o.lid.value;
        }
      }
    }
  }
  // The same, as `weft sim --json` checks it: whatever the switches pick, every hop
  // brings a packet nearer.
  const auto v = routing::verify_adaptive(
      f, sim.held_tables(), [&sim](NodeIndex n, uint16_t lid, std::vector<PortNum>& out) {
        sim.ar_choices(n, lid, out);
      });
  EXPECT_TRUE(v.ok()) << v.first_problem;
  for (NodeIndex n = 0; n < f.size(); ++n) on += f.node(n).is_switch() && sim.ar(n).info.enabled;
  EXPECT_EQ(v.entries > 0, on > 0);
  return on;
}

// Switch entries (switch, LID) whose AR LFT names a group.
size_t adaptive_entries(const SimFabric& sim) {
  size_t k = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n)
    if (sim.model().node(n).is_switch())
      for (const auto& e : sim.ar(n).lft) k += e.state != ArLidState::kStatic;
  return k;
}

}  // namespace

TEST(ArSweep, CapableSwitchesGetTheirGroupsAndAreOnAndASecondSweepWritesNothing) {
  ScratchDir dir("weft-ar");
  SimFabric sim = sim_with({.ar_group_cap = 64});
  SimTransport t(sim, {});
  SubnetManager sm(t, ar_opts(dir));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep) << rep.error().message;
  ASSERT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_TRUE(readback(sim).ok());
  const size_t sw = switches(sim);
  EXPECT_EQ(rep->ar_capable, sw);
  EXPECT_EQ(rep->ar_enabled, sw);
  EXPECT_EQ(rep->ar_static, 0u);
  EXPECT_EQ(rep->ar_failures, 0u);
  EXPECT_GT(rep->ar_group_blocks_written, 0u);
  EXPECT_GT(rep->ar_lft_blocks_written, 0u);
  EXPECT_EQ(rep->ar_info_sets, sw);
  EXPECT_EQ(check_held(sim), sw);
  EXPECT_GT(adaptive_entries(sim), 0u);
  // Every SMP the sweep sent is counted.
  EXPECT_EQ(t.requests_seen(), rep->smps_discovery + rep->smps_program + rep->smps_activate);

  auto again = sm.sweep();
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_TRUE(again->subnet_up) << again->reason;
  EXPECT_EQ(again->ar_enabled, sw);
  EXPECT_EQ(again->ar_blocks_read, 0u);
  EXPECT_EQ(again->ar_group_blocks_written, 0u);
  EXPECT_EQ(again->ar_lft_blocks_written, 0u);
  EXPECT_EQ(again->ar_info_sets, 0u);

  // updn's groups too (numbered the same way every time, so nothing is rewritten).
  ScratchDir dir2("weft-ar");
  SimFabric sim2 = sim_with({.ar_group_cap = 64});
  SimTransport t2(sim2, {});
  SubnetManager sm2(t2, ar_opts(dir2, "ar_updn"));
  auto first = sm2.sweep();
  ASSERT_TRUE(first && first->subnet_up);
  EXPECT_GT(first->ar_enabled, 0u);
  EXPECT_EQ(check_held(sim2), first->ar_enabled);
  for (int i = 0; i < 3; ++i) {
    auto more = sm2.sweep();
    ASSERT_TRUE(more && more->subnet_up);
    EXPECT_EQ(more->ar_group_blocks_written + more->ar_lft_blocks_written + more->ar_info_sets, 0u);
  }
}

TEST(ArSweep, SwitchesWithoutArKeepStaticRoutesAndAModelThatNeverAnswersCostsOneSmp) {
  ScratchDir dir("weft-ar");
  {
    // One switch answers "unsupported"; the others take AR.
    SimFabric sim = sim_with({.ar_group_cap = 64});
    const NodeIndex plain = *sim.model().find_by_name("spine1");
    sim.set_ar_cap(plain, 0);
    SimTransport t(sim, {});
    SubnetManager sm(t, ar_opts(dir));
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up);
    EXPECT_EQ(rep->ar_static, 1u);
    EXPECT_EQ(rep->ar_enabled, switches(sim) - 1);
    EXPECT_FALSE(sim.ar(plain).info.enabled);
    EXPECT_EQ(check_held(sim), switches(sim) - 1);
    EXPECT_TRUE(readback(sim).ok());
  }
  {
    // As on ibsim: no switch answers AdaptiveRoutingInfo at all.
    ScratchDir dir2("weft-ar");
    SimFabric sim = sim_with({.drops_unknown_attrs = true});
    SimTransport t(sim, {});
    SubnetManager sm(t, ar_opts(dir2, "ar_updn"));
    auto rep = sm.sweep();
    ASSERT_TRUE(rep) << rep.error().message;
    ASSERT_TRUE(rep->subnet_up) << rep->reason;
    EXPECT_TRUE(readback(sim).ok());
    EXPECT_EQ(rep->ar_blocks_read, 1u) << "one switch of the model asked";
    EXPECT_EQ(sm.mad_stats().retried, 0u) << "the probe is not retried";
    // The same bring-up without AR asked for sends the same single probe (a new term
    // looks for AR another SM may have left on), and nothing more.
    ScratchDir dir3("weft-ar");
    SimFabric plain = sim_with({.drops_unknown_attrs = true});
    SimTransport tp(plain, {});
    SubnetManager sp(tp, ar_opts(dir3, "updn"));
    auto prep = sp.sweep();
    ASSERT_TRUE(prep && prep->subnet_up);
    EXPECT_EQ(t.requests_seen(), tp.requests_seen());
    EXPECT_EQ(prep->ar_blocks_read, 1u);
    EXPECT_EQ(prep->ar_static + prep->ar_capable, 0u) << "not asked: nothing counted";
    EXPECT_EQ(rep->ar_static, switches(sim));
    EXPECT_EQ(rep->ar_enabled, 0u);
    EXPECT_EQ(t.requests_seen(), rep->smps_discovery + rep->smps_program + rep->smps_activate);
    auto again = sm.sweep();
    ASSERT_TRUE(again && again->subnet_up);
    EXPECT_EQ(again->ar_blocks_read, 0u) << "a silent model is not asked again";
    EXPECT_EQ(again->ar_static, switches(sim));
  }
}

TEST(ArSweep, GroupsBeyondGroupCapRouteStatically) {
  ScratchDir dir("weft-ar");
  // Two links from every spine to every leaf: a spine has one group per leaf.
  auto f = make_fabric("ft2:leaves=4,spines=2,hosts=2,links=2");
  ASSERT_TRUE(f);
  SimFabric sim(std::move(*f), {.ar_group_cap = 64});
  const NodeIndex spine = *sim.model().find_by_name("spine0");
  // GroupCap 3: group 0 and one group, since the entries written come in blocks of two
  // and the second block (entries 2 and 3) would pass the cap.
  sim.set_ar_cap(spine, 3);
  SimTransport t(sim, {});
  SubnetManager sm(t, ar_opts(dir));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  EXPECT_EQ(rep->ar_groups_dropped, 3u);
  EXPECT_EQ(rep->ar_enabled, switches(sim));
  EXPECT_EQ(sim.ar(spine).info.group_top, 1);
  EXPECT_EQ(check_held(sim), switches(sim));
  // The spine routes the hosts of one leaf adaptively, the other three statically.
  std::set<uint16_t> groups;
  size_t adaptive = 0, plain = 0;
  for (const auto& o : routing::lid_owners(sim.model())) {
    if (sim.model().node(o.node).is_switch()) continue;
    const ArLftEntry& e = sim.ar(spine).lft.at(o.lid.value);
    (e.state == ArLidState::kStatic ? plain : adaptive) += 1;
    if (e.state != ArLidState::kStatic) groups.insert(e.group);
  }
  EXPECT_EQ(groups, (std::set<uint16_t>{1}));
  EXPECT_EQ(adaptive, 2u);
  EXPECT_EQ(plain, 6u);
  EXPECT_EQ(rep->ar_failures, 0u) << "nothing written past the cap";
}

TEST(ArSweep, AResetSwitchIsRewrittenAndArNoLongerAskedForIsTurnedOff) {
  ScratchDir dir("weft-ar");
  SimFabric sim = sim_with({.ar_group_cap = 64});
  SimTransport t(sim, {});
  SmOptions o = ar_opts(dir);
  SubnetManager sm(t, o);
  ASSERT_TRUE(sm.sweep());
  const NodeIndex leaf = *sim.model().find_by_name("leaf1");
  const auto before = sim.ar(leaf);
  ASSERT_TRUE(before.info.enabled);
  sim.reset_switch(leaf, false);
  ASSERT_FALSE(sim.ar(leaf).info.enabled);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  EXPECT_TRUE(sim.ar(leaf).info.enabled);
  EXPECT_EQ(sim.ar(leaf).groups, before.groups);
  EXPECT_EQ(sim.ar(leaf).lft, before.lft);
  EXPECT_EQ(rep->ar_info_sets, 1u) << "only the reset switch";
  EXPECT_EQ(check_held(sim), switches(sim));

  o.routing_engine = "ftree";
  sm.set_options(o);
  auto off = sm.sweep();
  ASSERT_TRUE(off && off->subnet_up);
  EXPECT_EQ(off->ar_info_sets, switches(sim));
  EXPECT_EQ(check_held(sim), 0u);
  auto quiet = sm.sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_EQ(quiet->ar_info_sets + quiet->ar_blocks_read, 0u) << "nothing asked of AR any more";
}

// A degraded 3-level tree (updn layers its routes on 2 VLs there) gets its groups too,
// checked on every VL; a link cut later rewrites only the groups and entries it touched.
TEST(ArSweep, ADegradedTreeIsProgrammedAndALinkCutRewritesOnlyWhatItTouched) {
  ScratchDir dir("weft-ar");
  auto f = make_fabric("ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6");
  ASSERT_TRUE(f);
  SimFabric sim(std::move(*f), {.ar_group_cap = 64});
  // One core link of agg0-0 out: the pod it serves needs bridged turns.
  const NodeIndex agg = *sim.model().find_by_name("agg0-0");
  for (PortNum p = 1; p <= sim.model().node(agg).num_ports; ++p)
    if (sim.model().node(agg).ports[p].linked() &&
        sim.model().node(sim.model().node(agg).ports[p].peer).name.starts_with("core")) {
      sim.unlink(agg, p);
      break;
    }
  SimTransport t(sim, {});
  SubnetManager sm(t, ar_opts(dir, "ar_updn"));
  auto first = sm.sweep();
  ASSERT_TRUE(first && first->subnet_up) << (first ? first->reason : first.error().message);
  EXPECT_TRUE(readback(sim).ok());
  EXPECT_GT(first->ar_enabled, 0u);
  EXPECT_EQ(check_held(sim), first->ar_enabled);
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(again->ar_group_blocks_written + again->ar_lft_blocks_written + again->ar_info_sets,
            0u);
  // One more link out: a leaf's uplink. What the switches hold before and after.
  std::map<NodeIndex, SimFabric::ArState> before;
  for (NodeIndex n = 0; n < sim.model().size(); ++n)
    if (sim.model().node(n).is_switch()) before[n] = sim.ar(n);
  const NodeIndex leaf = *sim.model().find_by_name("leaf2-3");
  sim.unlink(leaf, 7);
  auto cut = sm.sweep();
  ASSERT_TRUE(cut && cut->subnet_up) << (cut ? cut->reason : cut.error().message);
  EXPECT_TRUE(readback(sim).ok());
  EXPECT_EQ(check_held(sim), cut->ar_enabled);
  // Blocks written = blocks changed; and a group whose ports did not change keeps its
  // number, so entries change only where their route did.
  size_t group_blocks = 0, lft_blocks = 0, renumbered = 0, kept = 0;
  for (const auto& [n, was] : before) {
    const auto& now = sim.ar(n);
    for (size_t b = 0; b * kArGroupsPerBlock < now.groups.size(); ++b)
      for (size_t e = b * kArGroupsPerBlock; e < (b + 1) * kArGroupsPerBlock; ++e)
        if (e < now.groups.size() && now.groups[e] != was.groups.at(e)) {
          ++group_blocks;
          break;
        }
    for (size_t b = 0; b * kArLftLids < now.lft.size(); ++b)
      for (size_t e = b * kArLftLids; e < (b + 1) * kArLftLids && e < now.lft.size(); ++e)
        if (!(now.lft[e] == was.lft.at(e))) {
          ++lft_blocks;
          break;
        }
    for (uint16_t g = 1; g <= was.info.group_top; ++g) {
      if (was.groups.at(g) == ArPortMask{}) continue;
      bool same = false, elsewhere = false;
      for (uint16_t h = 1; h <= now.info.group_top; ++h)
        if (now.groups.at(h) == was.groups.at(g)) (h == g ? same : elsewhere) = true;
      kept += same;
      renumbered += elsewhere && !same;
    }
  }
  EXPECT_EQ(cut->ar_group_blocks_written, group_blocks);
  EXPECT_EQ(cut->ar_lft_blocks_written, lft_blocks);
  EXPECT_GT(kept, 0u);
  EXPECT_EQ(renumbered, 0u) << kept << " groups kept their numbers";
  // So the AR tables change about as much as the static ones (updn routes afresh).
  EXPECT_GT(cut->ar_lft_blocks_written, 0u);
  EXPECT_LT(double(cut->ar_lft_blocks_written) / double(first->ar_lft_blocks_written),
            1.5 * double(cut->lft_blocks_written) / double(first->lft_blocks_written))
      << "AR LFT blocks " << first->ar_lft_blocks_written << ", then " << cut->ar_lft_blocks_written
      << "; LFT blocks " << first->lft_blocks_written << ", then " << cut->lft_blocks_written;
}

// A switch that refuses to turn AR off (its Set answered with an error) is visited again
// in every sweep until it is seen off, though AR is no longer asked for.
TEST(ArSweep, ASwitchThatRefusedToTurnArOffIsVisitedUntilItIsOff) {
  ScratchDir dir("weft-ar");
  SimFabric sim = sim_with({.ar_group_cap = 64});
  SimTransport t(sim, {});
  SmOptions o = ar_opts(dir);
  SubnetManager sm(t, o);
  ASSERT_TRUE(sm.sweep());
  ASSERT_EQ(check_held(sim), switches(sim));
  const NodeIndex leaf = *sim.model().find_by_name("leaf1");
  sim.refuse_sets(leaf, mad::kAttrArInfo, true);
  o.routing_engine = "ftree";
  sm.set_options(o);
  for (int i = 0; i < 2; ++i) {
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up);
    EXPECT_EQ(rep->ar_failures, 1u) << "sweep " << i;
    EXPECT_TRUE(sim.ar(leaf).info.enabled) << "sweep " << i;
    EXPECT_EQ(check_held(sim), 1u) << "only the refusing switch still holds AR";
  }
  sim.refuse_sets(leaf, mad::kAttrArInfo, false);
  auto off = sm.sweep();
  ASSERT_TRUE(off && off->subnet_up);
  EXPECT_EQ(off->ar_failures, 0u);
  EXPECT_EQ(off->ar_info_sets, 1u) << "only the switch that was left on";
  EXPECT_FALSE(sim.ar(leaf).info.enabled);
  EXPECT_EQ(check_held(sim), 0u);
  auto quiet = sm.sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_EQ(quiet->ar_info_sets + quiet->ar_blocks_read + quiet->ar_failures, 0u);
}

// Another SM (here an earlier weft asked for AR) left adaptive routing on; a weft that is
// not asked for AR turns it off in its first sweep as master, and asks nothing of AR after.
TEST(ArSweep, ArLeftOnByAnotherSmIsTurnedOffWhenNotAskedFor) {
  ScratchDir dir("weft-ar");
  SimFabric sim = sim_with({.ar_group_cap = 64});
  {
    SimTransport t(sim, {});
    SubnetManager other(t, ar_opts(dir));
    ASSERT_TRUE(other.sweep());
  }
  ASSERT_EQ(check_held(sim), switches(sim));
  ScratchDir dir2("weft-ar");
  SimTransport t(sim, {});
  SubnetManager sm(t, ar_opts(dir2, "ftree"));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  EXPECT_EQ(rep->ar_info_sets, switches(sim));
  EXPECT_EQ(check_held(sim), 0u);
  EXPECT_TRUE(readback(sim).ok());
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(again->ar_blocks_read + again->ar_info_sets, 0u);
}

// The traffic model routes by what the switches hold: their groups spread a random
// permutation that their static ports pile up (8 leaves of 4 hosts, 4 spines).
TEST(ArSweep, TrafficGoesByWhatTheSwitchesHold) {
  ScratchDir dir("weft-ar");
  auto f = make_fabric("ft2:leaves=8,spines=4,hosts=4");
  ASSERT_TRUE(f);
  SimFabric sim(std::move(*f), {.ar_group_cap = 64});
  SimTransport t(sim, {});
  SubnetManager sm(t, ar_opts(dir));
  ASSERT_TRUE(sm.sweep());
  auto held = sim.held_tables();
  ASSERT_EQ(held.ar_sets.size(), sim.model().size());
  const auto st = routing::run_traffic(sim.model(), held, routing::Pattern::kPermutation, false);
  const auto ad = routing::run_traffic(sim.model(), held, routing::Pattern::kPermutation, true);
  EXPECT_GT(st.max_link_flows, 1.0);
  EXPECT_DOUBLE_EQ(ad.max_link_flows, 1.0);
  EXPECT_DOUBLE_EQ(ad.min_flow_throughput, 1.0);
  // AR off on the switches: the same flows go static.
  for (fabric::NodeIndex n = 0; n < sim.model().size(); ++n)
    if (sim.model().node(n).is_switch()) sim.set_ar_cap(n, 64);
  held = sim.held_tables();
  EXPECT_TRUE(held.ar_sets.empty());
  EXPECT_EQ(
      routing::run_traffic(sim.model(), held, routing::Pattern::kPermutation, true).max_link_flows,
      st.max_link_flows);
}

// Issue 33, item 2, for adaptive routing: every sweep reads back drift_check_blocks of
// the AR state weft believes each switch holds (AdaptiveRoutingInfo, group blocks, AR
// LFT blocks, rotating), so AR turned off or an AR LFT block rewritten by another writer
// with no other sign is found, written back, told as a "drift" event and counted.
TEST(ArSweep, ArStateChangedWithNoOtherSignIsFoundAndWrittenBack) {
  ScratchDir dir("weft-ar-drift");
  SimFabric sim = sim_with({.ar_group_cap = 64});
  SimTransport t(sim, {});
  SmOptions o = ar_opts(dir);
  o.drift_check_blocks = 1024;  // every block each sweep: how many weft holds
  SubnetManager sm(t, o);
  std::vector<nlohmann::json> drift;
  sm.on_event([&](const SmEvent& e) {
    if (e.type == "drift") drift.push_back(e.data);
  });
  auto up = sm.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  const size_t sw = switches(sim);
  ASSERT_EQ(check_held(sim), sw);
  auto all = sm.light_sweep();
  ASSERT_TRUE(all && all->subnet_up);
  EXPECT_EQ(all->ar_switches_changed, 0u);
  const size_t held = all->ar_blocks_checked;  // every switch's info, groups and AR LFT
  ASSERT_GT(held, 3 * sw);

  const auto held_snap = sm.snapshot();  // held: later sweeps replace the SM's
  const auto& snap = *held_snap;
  std::vector<NodeIndex> sws;  // snapshot indexes
  for (NodeIndex s = 0; s < snap.fabric.size(); ++s)
    if (snap.fabric.node(s).is_switch()) sws.push_back(s);
  auto sim_index = [&](NodeIndex s) { return *sim.model().find(snap.fabric.node(s).guid); };
  auto set = [&](NodeIndex s, uint16_t attr, uint32_t mod, const SmpData& data) {
    auto out =
        sim.process(encode_smp(SmpRequest::set(attr, mod, snap.node_paths[s], data), 9), 0, 1);
    ASSERT_TRUE(out.reply);
  };
  // Another writer turns AR off on one switch and makes AR LFT block 0 all static on
  // another.
  const NodeIndex off = sws[0], rewritten = sws[1];
  ArInfo ai = sim.ar(sim_index(off)).info;
  ai.enabled = false;
  set(off, kAttrArInfo, 0, encode_ar_info(ai));
  ASSERT_FALSE(sim.ar(sim_index(off)).info.enabled);
  ArLftBlock blk{};
  for (size_t i = 0; i < kArLftLids; ++i) blk[i].default_port = sim.lft(sim_index(rewritten)).at(i);
  set(rewritten, kAttrArLft, ar_lft_modifier(0), encode_ar_lft_block(blk));
  const size_t entries = adaptive_entries(sim);

  auto found = sm.light_sweep();
  ASSERT_TRUE(found && found->subnet_up) << (found ? found->reason : found.error().message);
  EXPECT_EQ(found->ar_switches_changed, 2u);
  EXPECT_EQ(check_held(sim), sw);
  EXPECT_GT(adaptive_entries(sim), entries);
  EXPECT_EQ(found->ar_info_sets, 3u) << "on again where it went off; off and on where rewritten";
  EXPECT_EQ(found->ar_lft_blocks_written, 1u);
  EXPECT_EQ(found->ar_group_blocks_written, 0u);
  ASSERT_EQ(drift.size(), 2u);
  for (const auto& d : drift) EXPECT_EQ(d.at("table"), "ar");
  EXPECT_EQ(sm.published()->drift_ar, 2u);
  auto quiet = sm.light_sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_EQ(quiet->ar_switches_changed, 0u);
  EXPECT_EQ(quiet->ar_blocks_checked, held);

  // One block a sweep: AR turned off is found within the switch's held blocks in sweeps.
  o.drift_check_blocks = 1;
  sm.set_options(o);
  set(off, kAttrArInfo, 0, encode_ar_info(ai));
  size_t changed = 0, sweeps = 0;
  while (changed == 0 && sweeps < held) {
    auto r = sm.light_sweep();
    ASSERT_TRUE(r && r->subnet_up);
    changed += r->ar_switches_changed;
    ++sweeps;
  }
  EXPECT_EQ(changed, 1u);
  // Its AdaptiveRoutingInfo, group blocks and AR LFT blocks, one a sweep.
  const size_t its = 1 + (size_t(ai.group_top) + kArGroupsPerBlock) / kArGroupsPerBlock +
                     size_t(up->top_lid) / kArLftLids + 1;
  EXPECT_LE(sweeps, its);
  EXPECT_EQ(check_held(sim), sw);

  // Off: nothing is read back, and AR stays off there.
  o.drift_check_blocks = 0;
  sm.set_options(o);
  set(off, kAttrArInfo, 0, encode_ar_info(ai));
  for (size_t i = 0; i < 4; ++i) {
    auto r = sm.light_sweep();
    ASSERT_TRUE(r && r->subnet_up);
    EXPECT_EQ(r->ar_blocks_checked, 0u);
  }
  EXPECT_EQ(check_held(sim), sw - 1);
  EXPECT_EQ(drift.size(), 3u);
}
