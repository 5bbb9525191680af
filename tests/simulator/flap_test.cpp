// Flapping links in process: a switch with a flapping port costs at most one
// trap-driven heavy sweep per interval, and flap_policy down leaves the link disabled
// at its switch ports, routed around, across restarts, until an admin releases it.
#include <gtest/gtest.h>

#include <fstream>

#include "sim_sm.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::sm;

using weft::testing::readback;
using weft::testing::ScratchDir;
using weft::testing::sim_of;

namespace {

constexpr const char* kFabric = "ft2:leaves=2,spines=2,hosts=2";

SmOptions flap_opts(const ScratchDir& d, const std::string& policy) {
  SmOptions o = weft::testing::sm_opts(d);
  o.flap_threshold = 4;
  o.flap_policy = *flap_policy_named(policy);
  o.flap_holdoff = std::chrono::seconds(10);
  return o;
}

using Link = weft::testing::Uplink;
using weft::testing::uplink;

// Four link changes, a sweep after each: the threshold.
void flap(SimFabric& sim, SubnetManager& sm, const Link& l) {
  for (int i = 0; i < 2; ++i) {
    sim.unlink(l.leaf, l.lp);
    ASSERT_TRUE(sm.sweep());
    ASSERT_TRUE(sim.relink(l.leaf, l.lp, l.spine, l.sp));
    ASSERT_TRUE(sm.sweep());
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(FlapPolicy, DownLeavesAFlappingLinkDisabledAcrossRestartsUntilItIsReleased) {
  ScratchDir dir("weft-flap");
  SimFabric sim = sim_of(kFabric);
  const Link l = uplink(sim);
  const Guid leaf_guid = sim.model().node(l.leaf).guid, spine_guid = sim.model().node(l.spine).guid;
  {
    SimTransport t(sim, {.attach = 0});
    SubnetManager sm(t, flap_opts(dir, "down"));
    std::vector<SmEvent> events;
    sm.on_event([&](const SmEvent& e) { events.push_back(e); });
    ASSERT_TRUE(sm.sweep()->subnet_up);
    flap(sim, sm, l);
    // Both ends are switch ports: both are kept down, on disk.
    ASSERT_EQ(sm.ports_down().size(), 2u);
    EXPECT_TRUE(sm.ports_down().count({leaf_guid.value, l.lp}));
    EXPECT_TRUE(sm.ports_down().count({spine_guid.value, l.sp}));
    const std::string file = slurp(dir.path() + "/ports-down");
    EXPECT_NE(file.find(leaf_guid.str() + " " + std::to_string(l.lp) + " "), std::string::npos)
        << file;
    EXPECT_EQ(std::count_if(events.begin(), events.end(),
                            [](const SmEvent& e) { return e.type == "port_left_down"; }),
              2);
    // The next sweep disables them, routes around the link and is up.
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    EXPECT_EQ(rep->ports_disabled, 2u) << "both ends, by routes around the link";
    EXPECT_EQ(sim.model().node(l.spine).ports[l.sp].attrs.phys_state, 3);
    EXPECT_EQ(sim.model().node(l.leaf).ports[l.lp].attrs.phys_state, 3);
    EXPECT_FALSE(sim.model().node(l.leaf).ports[l.lp].linked());
    EXPECT_TRUE(readback(sim).ok());
    // The cable is plugged back: the port stays disabled, and sweeps leave it so.
    ASSERT_TRUE(sim.relink(l.leaf, l.lp, l.spine, l.sp));
    rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up);
    EXPECT_FALSE(sim.model().node(l.leaf).ports[l.lp].linked());
    EXPECT_EQ(rep->ports_enabled, 0u);
  }
  // A restarted SM keeps them down, from the state file.
  SimTransport t(sim, {.attach = 0});
  SubnetManager sm(t, flap_opts(dir, "down"));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  EXPECT_EQ(sm.ports_down().size(), 2u);
  EXPECT_FALSE(sim.model().node(l.leaf).ports[l.lp].linked());
  EXPECT_EQ(sm.published()->ports_down.size(), 2u);
  // Released (both ends): the next sweep enables the disabled end, the link trains, and
  // the sweep after brings it ACTIVE and routes over it again.
  EXPECT_FALSE(sm.enable_port(leaf_guid, PortNum(l.lp == 1 ? 2 : 1)))
      << "a port weft did not leave down";
  ASSERT_TRUE(sm.enable_port(leaf_guid, l.lp));
  ASSERT_TRUE(sm.enable_port(spine_guid, l.sp));
  EXPECT_TRUE(sm.ports_down().empty());
  EXPECT_EQ(slurp(dir.path() + "/ports-down").find(leaf_guid.str()), std::string::npos);
  EXPECT_TRUE(sm.needs_sweep());
  rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->ports_enabled, 2u);
  EXPECT_TRUE(sim.model().node(l.leaf).ports[l.lp].linked());
  rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << rep->reason;
  EXPECT_EQ(sim.model().node(l.leaf).ports[l.lp].attrs.state, fabric::PortState::kActive);
  EXPECT_EQ(rep->ports_linked, sim.model().links().size() * 2);
  EXPECT_TRUE(readback(sim).ok());
}

TEST(FlapPolicy, ReportLeavesTheLinkUp) {
  ScratchDir dir("weft-flap");
  SimFabric sim = sim_of(kFabric);
  const Link l = uplink(sim);
  SimTransport t(sim, {.attach = 0});
  SubnetManager sm(t, flap_opts(dir, "report"));
  ASSERT_TRUE(sm.sweep()->subnet_up);
  flap(sim, sm, l);
  EXPECT_EQ(sm.published()->flapping.size(), 2u);
  EXPECT_TRUE(sm.ports_down().empty());
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  EXPECT_EQ(rep->ports_disabled, 0u);
  EXPECT_TRUE(sim.model().node(l.leaf).ports[l.lp].linked());
}

TEST(FlapPolicy, ASwitchWithAFlappingPortGetsOneTrapDrivenSweepPerInterval) {
  ScratchDir dir("weft-flap");
  SimFabric sim = sim_of(kFabric);
  const Link l = uplink(sim);
  SimTransport t(sim, {.attach = 0});
  SubnetManager sm(t, flap_opts(dir, "report"));
  std::vector<SmEvent> events;
  sm.on_event([&](const SmEvent& e) { events.push_back(e); });
  ASSERT_TRUE(sm.sweep()->subnet_up);
  const uint16_t leaf_lid = sim.model().node(l.leaf).ports[0].attrs.lid.value;
  auto trap128 = [&] {
    weft::testing::inject_switch_trap(t, 128, leaf_lid, leaf_lid);
    EXPECT_TRUE(sm.serve_for(std::chrono::milliseconds(1)));
    return events.back();
  };
  flap(sim, sm, l);
  ASSERT_FALSE(sm.published()->flapping.empty());
  // The first trap sweeps; one 2 s later (past trap_holdoff, within the interval) is
  // held for the interval's sweep; one after the interval sweeps again.
  SmEvent e = trap128();
  EXPECT_TRUE(e.data["sweep"]);
  EXPECT_TRUE(e.data["flapping"]);
  ASSERT_TRUE(sm.sweep());
  ASSERT_TRUE(sm.serve_for(std::chrono::seconds(2)));
  e = trap128();
  EXPECT_FALSE(e.data["sweep"]);
  EXPECT_EQ(e.data["holdoff_ms"], 10000);
  EXPECT_FALSE(sm.needs_sweep());
  ASSERT_TRUE(sm.serve_for(std::chrono::seconds(9)));
  e = trap128();
  EXPECT_TRUE(e.data["sweep"]);
  EXPECT_TRUE(sm.needs_sweep());
}
