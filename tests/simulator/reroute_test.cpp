// Reroute after a link change, in process: the SM reads again only the switches that
// report the change, routes again only the entries it broke, and writes only the LFT
// blocks whose content changed; when the link returns, so do the balanced routes.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <set>
#include <tuple>

#include "sim_sm.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/torus.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;

using weft::testing::readback;
using weft::testing::ScratchDir;
using weft::testing::sim_of;

namespace {

SmOptions opts(const ScratchDir& d) {
  return weft::testing::sm_opts(d);
}

// Links by the GUIDs and ports of their ends, so that two models of one fabric compare
// whatever order their nodes are in.
using GuidLink = std::tuple<uint64_t, PortNum, uint64_t, PortNum>;
std::set<GuidLink> guid_links(const fabric::Fabric& f) {
  std::set<GuidLink> out;
  for (const auto& l : f.links()) {
    GuidLink a{f.node(l.a).guid.value, l.pa, f.node(l.b).guid.value, l.pb};
    GuidLink b{f.node(l.b).guid.value, l.pb, f.node(l.a).guid.value, l.pa};
    out.insert(std::min(a, b));
  }
  return out;
}

// Every node by its GUID as the devices describe themselves: type, ports (their GUIDs),
// NodeDescription; whatever order the model holds them in.
void expect_nodes_of(const fabric::Fabric& got, const fabric::Fabric& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& n : want.nodes()) {
    const auto at = got.find(n.guid);
    ASSERT_TRUE(at) << n.guid.str();
    const auto& g = got.node(*at);
    EXPECT_EQ(g.type, n.type) << n.guid.str();
    EXPECT_EQ(g.description, n.description) << n.guid.str();
    ASSERT_EQ(g.ports.size(), n.ports.size()) << n.guid.str();
    for (size_t p = 1; p < n.ports.size(); ++p) EXPECT_EQ(g.ports[p].guid, n.ports[p].guid);
  }
}

// (switch, LID) entries, and 64-LID blocks, that differ between two sets of held tables
// (both indexed by the simulator's own nodes).
size_t entries_differing(const routing::Tables& a, const routing::Tables& b) {
  size_t n = 0;
  for (size_t s = 0; s < a.lft.size(); ++s)
    for (size_t lid = 0; lid < std::max(a.lft[s].size(), b.lft[s].size()); ++lid)
      n += (lid < a.lft[s].size() ? a.lft[s][lid] : kDropPort) !=
           (lid < b.lft[s].size() ? b.lft[s][lid] : kDropPort);
  return n;
}
size_t blocks_differing(const routing::Tables& a, const routing::Tables& b) {
  size_t n = 0;
  for (size_t s = 0; s < a.lft.size(); ++s) {
    std::set<size_t> blocks;
    for (size_t lid = 0; lid < std::max(a.lft[s].size(), b.lft[s].size()); ++lid)
      if ((lid < a.lft[s].size() ? a.lft[s][lid] : kDropPort) !=
          (lid < b.lft[s].size() ? b.lft[s][lid] : kDropPort))
        blocks.insert(lid / 64);
    n += blocks.size();
  }
  return n;
}

// The first linked port of switch n whose peer is (`to_switch`) or is not a switch; 0
// for none.
PortNum first_port(const SimFabric& sim, fabric::NodeIndex n, bool to_switch) {
  for (const auto& p : sim.model().node(n).ports)
    if (p.num && p.linked() && sim.model().node(p.peer).is_switch() == to_switch) return p.num;
  return 0;
}

// A switch by name and its first port to another switch (a leaf's uplink).
std::pair<fabric::NodeIndex, PortNum> uplink(const SimFabric& sim, const std::string& name) {
  const fabric::NodeIndex n = *sim.model().find_by_name(name);
  return {n, first_port(sim, n, true)};
}

}  // namespace

TEST(Reroute, ALinkCutIsReadAtItsSwitchesOnlyAndRewritesOnlyTheBlocksThatChanged) {
  ScratchDir dir("weft-reroute");
  SimFabric sim = sim_of("ft3:pods=3,leaves=4,aggs=4,hosts=6,cores=4");
  SimTransport t(sim, {});
  SubnetManager sm(t, opts(dir));
  auto up = sm.sweep();
  ASSERT_TRUE(up && up->subnet_up);
  EXPECT_FALSE(up->updated);
  const routing::Tables before = sim.held_tables();
  const auto [leaf, cut] = uplink(sim, "leaf1-2");
  ASSERT_NE(cut, 0);
  const fabric::NodeIndex agg = sim.model().node(leaf).ports[cut].peer;
  const PortNum agg_port = sim.model().node(leaf).ports[cut].peer_port;
  sim.unlink(leaf, cut);
  const size_t lft_sets = sim.sets(kAttrLft);
  auto rep = sm.light_sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->heavy);
  EXPECT_TRUE(rep->updated);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  // The two switches that flag the change, and nothing else: SwitchInfo and every
  // PortInfo of each (the light sweep's SwitchInfo reads are counted apart).
  const size_t reads = sim.model().node(leaf).num_ports + 2u + sim.model().node(agg).num_ports + 2u;
  EXPECT_LE(rep->smps_discovery, reads);
  EXPECT_GE(rep->smps_discovery, reads - 2);
  // The model the update made is the fabric as it is (taken as the walk left it, in
  // order: discovery.cpp's canonicalise; the bring-up's was rebuilt or taken the same).
  EXPECT_EQ(guid_links(sm.snapshot()->fabric), guid_links(sim.model()));
  expect_nodes_of(sm.snapshot()->fabric, sim.model());
  const routing::Tables cut_tables = sim.held_tables();
  EXPECT_TRUE(routing::verify_lfts(sim.model(), cut_tables).ok());
  // Only the routes that crossed the link were chosen again, and only the blocks that
  // changed were written.
  EXPECT_TRUE(sm.snapshot()->tables.repaired);
  // The entries whose routes crossed the link (the LIDs the leaf sent up it, and the
  // routes down it to the leaf's hosts) and no others: a few percent of them all.
  const size_t changed = entries_differing(before, cut_tables);
  EXPECT_GT(changed, 0u);
  EXPECT_EQ(changed, sm.snapshot()->tables.rerouted);
  EXPECT_LT(changed, sim.model().num_switches() * sim.model().num_lid_ports() / 20);
  EXPECT_EQ(sim.sets(kAttrLft) - lft_sets, blocks_differing(before, cut_tables));
  EXPECT_EQ(rep->lft_blocks_written, blocks_differing(before, cut_tables));
  EXPECT_EQ(rep->lid_assignment.changed, 0u);

  // The link comes back: read at the same two switches, routed afresh, and the tables
  // are again the ones of the first bring-up.
  ASSERT_TRUE(sim.relink(leaf, cut, agg, agg_port));
  const size_t lft_sets2 = sim.sets(kAttrLft);
  auto back = sm.light_sweep();
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->updated);
  EXPECT_TRUE(back->subnet_up) << back->reason;
  EXPECT_EQ(back->ports_active, back->ports_linked);
  EXPECT_FALSE(sm.snapshot()->tables.repaired);
  EXPECT_EQ(guid_links(sm.snapshot()->fabric), guid_links(sim.model()));
  expect_nodes_of(sm.snapshot()->fabric, sim.model());
  EXPECT_EQ(entries_differing(before, sim.held_tables()), 0u);
  EXPECT_EQ(sim.sets(kAttrLft) - lft_sets2, blocks_differing(cut_tables, before));
  // And nothing is left to do.
  auto quiet = sm.light_sweep();
  ASSERT_TRUE(quiet);
  EXPECT_FALSE(quiet->heavy);
}

// dfsssp's repair in the SM: after a link of a layered torus is cut, the sweep keeps
// every entry whose hop still leads one step nearer, writes only the blocks that changed,
// and the repaired routes are layered again: every VL acyclic, every path's SL on its
// own VL at the switches.
TEST(Reroute, DfssspRepairsALayeredTorusAndWritesOnlyWhatChanged) {
  ScratchDir dir("weft-reroute-dfsssp");
  SimFabric sim = sim_of("torus:dims=4x4x4,hosts=1");
  SimTransport t(sim, {});
  SmOptions o = opts(dir);
  o.routing_engine = "dfsssp";
  SubnetManager sm(t, o);
  auto up = sm.sweep();
  ASSERT_TRUE(up && up->subnet_up);
  ASSERT_GT(sm.snapshot()->tables.vls, 1);
  const auto first = sm.snapshot();
  const routing::Tables before = sim.held_tables();
  const auto [sw, cut] = uplink(sim, "sw1-1-1");
  ASSERT_NE(cut, 0);
  sim.unlink(sw, cut);
  auto rep = sm.light_sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  const auto snap = sm.snapshot();
  EXPECT_TRUE(snap->tables.repaired);
  const routing::Tables after = sim.held_tables();
  EXPECT_TRUE(routing::verify_lfts(sim.model(), after).ok());
  const size_t changed = entries_differing(before, after);
  EXPECT_GT(changed, 0u);
  EXPECT_EQ(changed, snap->tables.rerouted);
  EXPECT_LT(changed, sim.model().num_switches() * sim.model().num_lid_ports() / 4);
  EXPECT_EQ(rep->lft_blocks_written, blocks_differing(before, after));
  EXPECT_TRUE(routing::channel_dependencies(snap->fabric, snap->tables).acyclic);
  const uint8_t vls = snap->tables.vls;
  for (fabric::NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) continue;
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked()) continue;
      const auto& held = sim.sl2vl(n, 0, p);
      for (uint8_t sl = 0; sl < vls; ++sl) EXPECT_EQ(held[sl], sl) << nd.name << ":" << int(p);
    }
  }
  // Every path whose hops all stayed keeps its SL (the one the SA's path records give
  // its hosts); the others moved.
  const fabric::Fabric& g = snap->fabric;
  ASSERT_EQ(g.size(), first->fabric.size());
  for (fabric::NodeIndex n = 0; n < g.size(); ++n)
    ASSERT_EQ(g.node(n).guid, first->fabric.node(n).guid);
  size_t kept = 0, moved = 0;
  for (const auto& ow : routing::lid_owners(g)) {
    const uint16_t lid = ow.lid.value;
    for (fabric::NodeIndex n = 0; n < g.size(); ++n) {
      if (!g.node(n).is_switch()) continue;
      bool same = true, any = false;
      for (fabric::NodeIndex u = n; u != fabric::kNoNode;) {
        const PortNum p = snap->tables.lft[u][lid];
        if (p != first->tables.lft[u][lid]) {
          same = false;
          break;
        }
        if (p == 0 || p > g.node(u).num_ports) break;
        const auto& port = g.node(u).ports[p];
        if (!port.linked() || !g.node(port.peer).is_switch()) break;
        any = true;
        u = port.peer;
      }
      if (!any) continue;
      if (!same) {
        ++moved;
        continue;
      }
      ++kept;
      EXPECT_EQ(snap->tables.path_sl[n][lid], first->tables.path_sl[n][lid])
          << g.node(n).name << " LID " << lid;
    }
  }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(moved, 0u);
}

// A switch that did not take its new blocks is believed to hold nothing (not the tables
// it was sent), though its ports stayed ACTIVE and its top as weft left it: once it takes
// writes again, the next sweep reads it back and rewrites what differs.
TEST(Reroute, ASwitchThatDidNotTakeItsBlocksIsReadBackOnceItDoes) {
  ScratchDir dir("weft-reroute");
  SimFabric sim = sim_of("ft3:pods=3,leaves=4,aggs=4,hosts=6,cores=4");
  SimTransport t(sim, {});
  SubnetManager sm(t, opts(dir));
  auto up = sm.sweep();
  ASSERT_TRUE(up && up->subnet_up);
  const auto [leaf, cut] = uplink(sim, "leaf1-2");
  ASSERT_NE(cut, 0);
  sim.ignore_sets(leaf, kAttrLft, true);
  sim.unlink(leaf, cut);
  auto failed = sm.light_sweep();
  ASSERT_TRUE(failed);
  EXPECT_GT(failed->lft_failures, 0u);
  EXPECT_FALSE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());
  sim.ignore_sets(leaf, kAttrLft, false);
  auto again = sm.sweep();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->subnet_up) << again->reason;
  EXPECT_GT(again->lft_blocks_read, 0u);
  EXPECT_TRUE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());
  EXPECT_TRUE(readback(sim).ok());
}

TEST(Reroute, AHostLinkCutDropsTheHostAndItsReturnBringsItBack) {
  ScratchDir dir("weft-reroute");
  SimFabric sim = sim_of("ft2:leaves=4,spines=2,hosts=3");
  SimTransport t(sim, {});
  SubnetManager sm(t, opts(dir));
  ASSERT_TRUE(sm.sweep());
  const size_t ports = sm.snapshot()->end_ports.size();
  const fabric::NodeIndex leaf = *sim.model().find_by_name("leaf2");
  const PortNum to_host = first_port(sim, leaf, false);
  ASSERT_NE(to_host, 0);
  const fabric::NodeIndex host = sim.model().node(leaf).ports[to_host].peer;
  sim.unlink(leaf, to_host);
  auto rep = sm.light_sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->updated);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_EQ(sm.snapshot()->end_ports.size(), ports - 1);
  EXPECT_EQ(guid_links(sm.snapshot()->fabric), guid_links(sim.model()));
  ASSERT_TRUE(sim.relink(leaf, to_host, host, 1));
  auto back = sm.light_sweep();
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->updated);
  EXPECT_TRUE(back->subnet_up) << back->reason;
  EXPECT_EQ(sm.snapshot()->end_ports.size(), ports);
  EXPECT_EQ(back->lid_assignment.changed, 0u);
  EXPECT_EQ(sim.model().node(host).ports[1].attrs.state, fabric::PortState::kActive);
  EXPECT_TRUE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());
}

namespace {

// A trap 128 (link state change) from the switch with `lid`, to the SM.
void inject_trap128(SimTransport& t, uint16_t lid) {
  weft::testing::inject_switch_trap(t, 128, lid, lid);
}

}  // namespace

TEST(Reroute, ATrapStartsAnUpdateAndAnUpdateThatCannotReadFallsBackToAFullDiscovery) {
  ScratchDir dir("weft-reroute");
  SimFabric sim = sim_of("ft2:leaves=4,spines=2,hosts=2");
  SimTransport t(sim, {});
  SubnetManager sm(t, opts(dir));
  auto first = sm.sweep();
  ASSERT_TRUE(first && first->subnet_up);
  const auto [leaf, cut] = uplink(sim, "leaf1");
  ASSERT_NE(cut, 0);
  const fabric::NodeIndex spine = sim.model().node(leaf).ports[cut].peer;
  const PortNum spine_port = sim.model().node(leaf).ports[cut].peer_port;
  const uint16_t leaf_lid = sim.model().node(leaf).ports[0].attrs.lid.value;
  const uint16_t spine_lid = sim.model().node(spine).ports[0].attrs.lid.value;

  // Both ends trap: the sweep reads those two switches again, and nothing else.
  sim.unlink(leaf, cut);
  inject_trap128(t, leaf_lid);
  inject_trap128(t, spine_lid);
  ASSERT_TRUE(sm.serve_for(std::chrono::milliseconds(10)));
  ASSERT_TRUE(sm.needs_sweep());
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->updated);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_LE(rep->smps_discovery, 2u * (sim.model().node(leaf).num_ports + 2u));
  EXPECT_FALSE(sm.needs_sweep());
  EXPECT_TRUE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());

  // The link returns, but the spine stops answering before the SM reads it: the update
  // cannot finish, and the sweep discovers the subnet in full instead (which finds the
  // spine gone and says so).
  ASSERT_TRUE(sim.relink(leaf, cut, spine, spine_port));
  sim.set_unresponsive(spine, true);
  inject_trap128(t, leaf_lid);
  inject_trap128(t, spine_lid);
  ASSERT_TRUE(sm.serve_for(std::chrono::milliseconds(10)));
  rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_FALSE(rep->updated);
  EXPECT_GT(rep->smps_discovery, first->smps_discovery / 2);
  EXPECT_FALSE(rep->subnet_up);
  // Once it answers, the next sweep brings everything up: heavy (the last did not bring
  // the subnet up), an update of what the last one learned that reads again only the
  // switches whose links led to the spine.
  sim.set_unresponsive(spine, false);
  rep = sm.light_sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->updated);
  EXPECT_LT(rep->smps_discovery, first->smps_discovery);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_EQ(guid_links(sm.snapshot()->fabric), guid_links(sim.model()));
  EXPECT_TRUE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());

  // A trap from a LID the model does not hold: a full discovery.
  inject_trap128(t, 999);
  ASSERT_TRUE(sm.serve_for(std::chrono::milliseconds(10)));
  rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_FALSE(rep->updated);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
}

TEST(Reroute, TablesAnotherClientWipedAreFoundByTheLightSweepAndRewritten) {
  ScratchDir dir("weft-reroute");
  SimFabric sim = sim_of("ft2:leaves=4,spines=2,hosts=2");
  SimTransport t(sim, {});
  SubnetManager sm(t, opts(dir));
  ASSERT_TRUE(sm.sweep());
  ASSERT_TRUE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());
  // From another host, as a second client on ibsim would: the leaf it is cabled to
  // gets LinearFDBTop 0 and its first LFT block dropped; no port changes.
  fabric::NodeIndex host = 0;
  for (fabric::NodeIndex n = sim.model().size(); n-- > 0;)
    if (!sim.model().node(n).is_switch() && n != 0) {  // node 0: the SM's
      host = n;
      break;
    }
  const fabric::NodeIndex leaf = sim.model().node(host).ports[1].peer;
  SimTransport other(sim, {.attach = host, .port = 1});
  MadEngine e(other, {});
  const DrPath to_leaf = DrPath{}.extended(1);
  std::optional<SwitchInfo> si;
  e.submit(SmpRequest::get(kAttrSwitchInfo, 0, to_leaf), [&](Result<Smp> r) {
    if (r) si = decode_switch_info(r->data);
  });
  ASSERT_TRUE(e.run());
  ASSERT_TRUE(si);
  EXPECT_FALSE(si->port_state_change);
  si->lft_top = 0;
  LftBlock dropped;
  dropped.fill(kDropPort);
  bool wrote = false, topped = false;
  e.submit(SmpRequest::set(kAttrLft, 0, to_leaf, encode_lft_block(dropped)),
           [&](Result<Smp> r) { wrote = r.has_value(); });
  e.submit(SmpRequest::set(kAttrSwitchInfo, 0, to_leaf, encode_switch_info(*si)),
           [&](Result<Smp> r) { topped = r.has_value(); });
  ASSERT_TRUE(e.run());
  ASSERT_TRUE(wrote && topped);
  EXPECT_EQ(sim.lft_top(leaf), 0);
  EXPECT_FALSE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());
  auto rep = sm.light_sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->heavy);
  EXPECT_TRUE(rep->updated);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_GT(rep->lft_blocks_written, 0u);
  EXPECT_NE(sim.lft_top(leaf), 0);
  EXPECT_TRUE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());
}

TEST(Reroute, AfterTheFirstBringUpTablesGoOverLidsWhereTheRouteThereAndBackStays) {
  ScratchDir dir("weft-reroute");
  SimFabric sim = sim_of("ft3:pods=2,leaves=2,aggs=2,hosts=2,cores=2");
  SimTransport t(sim, {});
  SubnetManager sm(t, opts(dir));
  auto first = sm.sweep();
  ASSERT_TRUE(first && first->subnet_up);
  EXPECT_EQ(first->switches_by_lid, 0u) << "a first bring-up goes by directed route";
  EXPECT_EQ(sim.lid_routed_sets(kAttrLft), 0u);
  // A cut: the blocks it changes go by LID to the switches whose route from and to the
  // SM stays, by directed route to the others; the tables come out whole either way.
  const auto [leaf, cut] = uplink(sim, "leaf0-1");
  ASSERT_NE(cut, 0);
  sim.unlink(leaf, cut);
  const size_t lft_sets = sim.sets(kAttrLft);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  EXPECT_GT(rep->switches_by_lid, 0u);
  EXPECT_LT(rep->switches_by_lid, rep->switches) << "some route to or from the SM changed";
  EXPECT_GT(sim.lid_routed_sets(kAttrLft), 0u);
  EXPECT_LE(sim.lid_routed_sets(kAttrLft), sim.sets(kAttrLft) - lft_sets);
  EXPECT_EQ(rep->lft_failures, 0u);
  EXPECT_EQ(sm.mad_stats().timed_out, 0u);
  EXPECT_TRUE(readback(sim).ok());
}

// The spot check (do the switches still hold what weft wrote) goes out as the routing
// starts. When the routing then fails (dor on a torus whose y rings at x=1, 2 and 3 all
// split at the same places: no line beside leads round), the sweep ends once its
// answers are in, and they count in its report; once the links are back the SM routes
// again.
TEST(Reroute, ARoutingFailureEndsTheSweepWithTheSpotChecksAnswersIn) {
  ScratchDir dir("weft-reroute-spot");
  SimFabric sim = sim_of("torus:dims=5x5,hosts=1");
  SimTransport t(sim, {});
  SmOptions o = opts(dir);
  o.routing_engine = "dor";
  o.torus = routing::detect_torus(sim.model());
  ASSERT_TRUE(o.torus);
  SubnetManager sm(t, o);
  auto up = sm.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  struct Cut {
    fabric::NodeIndex n, m;
    PortNum p, q;
  };
  std::vector<Cut> cuts;
  for (int x = 1; x <= 3; ++x)
    for (auto [a, b] : {std::pair{0, 1}, std::pair{3, 4}}) {
      const auto n = *sim.model().find_by_name("sw" + std::to_string(x) + "-" + std::to_string(a));
      const auto m = *sim.model().find_by_name("sw" + std::to_string(x) + "-" + std::to_string(b));
      for (const auto& port : sim.model().node(n).ports)
        if (port.num && port.linked() && port.peer == m) {
          cuts.push_back({n, m, port.num, port.peer_port});
          break;
        }
    }
  ASSERT_EQ(cuts.size(), 6u);
  for (const Cut& c : cuts) sim.unlink(c.n, c.p);
  auto failed = sm.sweep();
  ASSERT_TRUE(failed);
  EXPECT_FALSE(failed->subnet_up);
  EXPECT_NE(failed->reason.find("routing (dor) failed"), std::string::npos) << failed->reason;
  EXPECT_NE(failed->reason.find("no line beside it leads round the gap"), std::string::npos)
      << failed->reason;
  EXPECT_GT(failed->lft_blocks_checked, 0u);
  for (const Cut& c : cuts) ASSERT_TRUE(sim.relink(c.n, c.p, c.m, c.q));
  auto again = sm.sweep();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->subnet_up) << again->reason;
  EXPECT_TRUE(routing::verify_lfts(sim.model(), sim.held_tables()).ok());
}
