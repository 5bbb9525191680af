// The timers (issue 29, item 6), in process: HOQLife and VLStallCount on switch ports
// (the leaf values where the peer is a CA), SwitchInfo LifeTimeValue, with OpenSM's
// names and defaults, written where they differ and nowhere else; a device that does
// not keep one is said so once and not rewritten every sweep.
#include <gtest/gtest.h>

#include "sim_sm.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::sm;
using namespace weft::testing;
using fabric::NodeIndex;

namespace {

struct Ends {
  size_t to_switch = 0, to_ca = 0;
};

// Switch port ends facing switches and facing CAs, and whether each holds `want`.
Ends count_ends(const SimFabric& sim) {
  Ends e;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) continue;
    for (PortNum p = 1; p <= nd.num_ports; ++p)
      if (nd.ports[p].linked())
        ++(sim.model().node(nd.ports[p].peer).is_switch() ? e.to_switch : e.to_ca);
  }
  return e;
}

// Ports (switch ports by peer kind, CA ports) that do not hold the timers given.
size_t off(const SimFabric& sim, uint8_t hoq, uint8_t stall, uint8_t leaf_hoq, uint8_t leaf_stall) {
  size_t bad = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked()) continue;
      const auto& x = sim.extras(n, p);
      if (!nd.is_switch()) {
        bad += x.hoq_life != 31 || x.vl_stall_count != 7;  // CA ports: left as they come
        continue;
      }
      const bool leaf = !sim.model().node(nd.ports[p].peer).is_switch();
      bad +=
          x.hoq_life != (leaf ? leaf_hoq : hoq) || x.vl_stall_count != (leaf ? leaf_stall : stall);
    }
  }
  return bad;
}

size_t lifetimes_off(const SimFabric& sim, uint8_t life) {
  size_t bad = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n)
    if (sim.model().node(n).is_switch()) bad += sim.lifetime(n) != life;
  return bad;
}

}  // namespace

TEST(Timers, OpenSmsDefaultsThenEachChangeWrittenWhereItDiffers) {
  ScratchDir dir("weft-timers");
  SimFabric sim = sim_of("ft2:leaves=4,spines=2,hosts=3");
  SimTransport t(sim, {});
  SubnetManager weft(t, sm_opts(dir));
  auto up = weft.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  EXPECT_TRUE(up->problems.empty()) << up->problems.front();
  const Ends e = count_ends(sim);
  ASSERT_EQ(e.to_switch, 16u);
  ASSERT_EQ(e.to_ca, 12u);
  EXPECT_EQ(off(sim, 0x12, 7, 0x10, 7), 0u);
  EXPECT_EQ(lifetimes_off(sim, 0x12), 0u);
  auto quiet = weft.sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_EQ(quiet->portinfo_sets, 0u);
  EXPECT_EQ(quiet->switchinfo_sets, 0u);

  // head_of_queue_lifetime and vl_stall_count: the ports between switches, only.
  SmOptions o = weft.options();
  o.head_of_queue_lifetime = 0x14;
  o.vl_stall_count = 3;
  weft.set_options(o);
  auto inner = weft.sweep();
  ASSERT_TRUE(inner && inner->subnet_up) << (inner ? inner->reason : inner.error().message);
  EXPECT_EQ(inner->portinfo_sets, e.to_switch);
  EXPECT_EQ(off(sim, 0x14, 3, 0x10, 7), 0u);
  // The leaf values: the ports facing CAs, only.
  o.leaf_head_of_queue_lifetime = 0x0c;
  o.leaf_vl_stall_count = 5;
  weft.set_options(o);
  auto leaf = weft.sweep();
  ASSERT_TRUE(leaf && leaf->subnet_up);
  EXPECT_EQ(leaf->portinfo_sets, e.to_ca);
  EXPECT_EQ(off(sim, 0x14, 3, 0x0c, 5), 0u);
  // packet_life_time: one SwitchInfo Set per switch, no PortInfo.
  o.packet_life_time = 0x13;
  weft.set_options(o);
  auto life = weft.sweep();
  ASSERT_TRUE(life && life->subnet_up);
  EXPECT_EQ(life->switchinfo_sets, up->switches);
  EXPECT_EQ(life->portinfo_sets, 0u);
  EXPECT_EQ(lifetimes_off(sim, 0x13), 0u);
  auto again = weft.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(again->portinfo_sets + again->switchinfo_sets, 0u);
}

TEST(Timers, APortThatDropsVlStallCountIsReportedOnceAndNotRewritten) {
  ScratchDir dir("weft-timers");
  auto f = simulator::make_fabric("ft2:leaves=2,spines=1,hosts=1");
  ASSERT_TRUE(f);
  SimFabric sim(std::move(*f), {.drops_vl_stall_count = true});
  SimTransport t(sim, {});
  SmOptions o = sm_opts(dir);
  o.vl_stall_count = 4;  // ports between switches; the leaf value (7) is what they hold
  SubnetManager weft(t, o);
  auto up = weft.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  const Ends e = count_ends(sim);
  size_t said = 0;
  for (const auto& p : up->problems) said += p.find("did not keep HOQLife") != std::string::npos;
  EXPECT_EQ(said, e.to_switch);
  auto again = weft.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(again->portinfo_sets, 0u);
  EXPECT_TRUE(again->problems.empty()) << again->problems.front();
  // HOQLife, which those ports keep, is still written where it changes.
  SmOptions o2 = weft.options();
  o2.head_of_queue_lifetime = 0x13;
  weft.set_options(o2);
  auto hoq = weft.sweep();
  ASSERT_TRUE(hoq && hoq->subnet_up);
  EXPECT_EQ(hoq->portinfo_sets, e.to_switch);
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) continue;
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked() || !sim.model().node(nd.ports[p].peer).is_switch()) continue;
      EXPECT_EQ(sim.extras(n, p).hoq_life, 0x13);
    }
  }
}
