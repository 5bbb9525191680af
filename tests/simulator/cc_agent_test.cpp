// The simulator's congestion-control agents (issue 31, item 5): every switch and CA port
// holds the Annex A10 attributes and answers Get and Set, with the CC_Key checked (a
// wrong key discarded and counted, a lease that runs out clears it); a device without
// an agent never answers, one that refuses says so; the MAD reaches them LID-routed,
// by its whole class byte.
#include <gtest/gtest.h>

#include "sim_sm.hpp"
#include "weft/cc/wire.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::testing;

namespace {

mad::Gmp get(uint16_t attr, uint32_t mod = 0, uint64_t key = 0) {
  return cc::request(mad::kMethodGet, attr, mod, key, cc::Data{});
}
mad::Gmp set(uint16_t attr, const cc::Data& d, uint32_t mod = 0, uint64_t key = 0) {
  return cc::request(mad::kMethodSet, attr, mod, key, d);
}

}  // namespace

TEST(SimCc, AgentsAnswerGetAndSetAsAnnexA10Says) {
  SimCc agents;
  agents.add(1, 0, true, 36, CcSupport::kAgent, 0);
  agents.add(2, 1, false, 0, CcSupport::kAgent, 2);
  const mad::TimePoint t0{0};
  // A CA: CongestionInfo says its table's size; its setting and table come back as set.
  auto info = agents.handle(2, 1, get(cc::kAttrCongestionInfo), t0);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->status, 0);
  EXPECT_EQ(info->method, mad::kMethodGetResp);
  EXPECT_EQ(cc::decode_congestion_info(cc::data_of(*info)).control_table_cap, 2);
  cc::CaCongestionSetting ca;
  ca.control_map = 0x0001;
  ca.sl[0] = {10, 1, 4, 0};
  auto r = agents.handle(2, 1, set(cc::kAttrCaCongestionSetting, cc::encode(ca)), t0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(cc::decode_ca_congestion_setting(cc::data_of(*r)), ca);
  EXPECT_EQ(agents.find(2, 1)->ca, ca);
  cc::CongestionControlTableBlock cct;
  cct.ccti_limit = 127;
  cct.entries[5] = {1, 300};
  EXPECT_EQ(
      agents.handle(2, 1, set(cc::kAttrCongestionControlTable, cc::encode(cct), 1), t0)->status, 0);
  EXPECT_EQ(agents.find(2, 1)->cct[1], cct);
  // Past the table, a switch's attribute, a Set of what is read-only: refused, by status.
  EXPECT_EQ(agents.handle(2, 1, get(cc::kAttrCongestionControlTable, 2), t0)->status, 0x001C);
  EXPECT_EQ(agents.handle(2, 1, get(cc::kAttrSwitchCongestionSetting), t0)->status, 0x000C);
  EXPECT_EQ(agents.handle(2, 1, set(cc::kAttrCongestionInfo, cc::Data{}), t0)->status, 0x000C);
  // A switch: its setting and per-port blocks (36 ports: blocks 0 and 1).
  cc::SwitchCongestionSetting sw;
  sw.control_map = 0xF;
  cc::set_port_bit(sw.victim_mask, 3);
  sw.threshold = 0xF;
  EXPECT_EQ(agents.handle(1, 0, set(cc::kAttrSwitchCongestionSetting, cc::encode(sw)), t0)->status,
            0);
  EXPECT_EQ(agents.find(1, 0)->sw, sw);
  cc::SwitchPortCongestionBlock b{};
  b[4] = {true, false, 0xA, 8, 100};
  EXPECT_EQ(
      agents.handle(1, 0, set(cc::kAttrSwitchPortCongestionSetting, cc::encode(b), 1), t0)->status,
      0);
  EXPECT_EQ(agents.find(1, 0)->port_blocks[1], b);
  EXPECT_EQ(agents.handle(1, 0, get(cc::kAttrSwitchPortCongestionSetting, 2), t0)->status, 0x001C);
  EXPECT_EQ(agents.handle(1, 0, get(cc::kAttrCaCongestionSetting), t0)->status, 0x000C);
  // The log comes as the device's kind and is cleared by reading it.
  agents.find(1, 0)->log.event_counter = 3;
  agents.find(1, 0)->log.switch_entries = {{1, 2, 0, 5}};
  auto log = agents.handle(1, 0, get(cc::kAttrCongestionLog), t0);
  ASSERT_TRUE(log);
  auto l = cc::decode_congestion_log(cc::log_of(*log));
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->log_type, cc::kLogSwitch);
  EXPECT_EQ(l->event_counter, 3);
  EXPECT_EQ(l->switch_entries.size(), 1u);
  EXPECT_TRUE(agents.find(1, 0)->log.switch_entries.empty());
  EXPECT_EQ(agents.find(1, 0)->log.event_counter, 0);
  EXPECT_EQ(agents.find(1, 0)->sets, 2u);
}

TEST(SimCc, AWrongKeyIsDiscardedAndCountedUntilTheLeaseClearsIt) {
  SimCc agents;
  agents.add(2, 1, false, 0, CcSupport::kAgent, 1);
  const uint64_t key = 0x1234;
  mad::TimePoint now{0};
  auto r = agents.handle(
      2, 1, set(cc::kAttrCongestionKeyInfo, cc::encode(cc::CongestionKeyInfo{key, true, 2, 0})),
      now);
  ASSERT_TRUE(r);
  EXPECT_EQ(agents.find(2, 1)->key.cc_key, key);
  // The right key is answered; another (0 included) is not, and counted.
  EXPECT_TRUE(agents.handle(2, 1, get(cc::kAttrCongestionInfo, 0, key), now));
  EXPECT_FALSE(agents.handle(2, 1, get(cc::kAttrCongestionInfo, 0, 0), now));
  EXPECT_FALSE(agents.handle(2, 1, get(cc::kAttrCongestionInfo, 0, 99), now));
  EXPECT_EQ(agents.find(2, 1)->key.violations, 2);
  auto k = agents.handle(2, 1, get(cc::kAttrCongestionKeyInfo, 0, key), now);
  ASSERT_TRUE(k);
  EXPECT_EQ(cc::decode_congestion_key_info(cc::data_of(*k)).violations, 2);
  // A right key stops the lease; after a new violation and 2 s with no right key, the
  // key is gone and anyone is answered.
  EXPECT_FALSE(agents.handle(2, 1, get(cc::kAttrCongestionInfo), now));
  now += std::chrono::milliseconds(1999);
  EXPECT_FALSE(agents.handle(2, 1, get(cc::kAttrCongestionInfo), now));
  now += std::chrono::milliseconds(1);
  EXPECT_TRUE(agents.handle(2, 1, get(cc::kAttrCongestionInfo), now));
  EXPECT_EQ(agents.find(2, 1)->key.cc_key, 0u);
}

// Reached through the fabric, LID-routed by the class byte 0x21: agents answer, a node
// without one is silent, one that refuses answers 0x0004, as does a wrong class version.
TEST(SimCc, CcMadsReachTheAgentOfTheLidTheyAreSentTo) {
  ScratchDir dir("weft-cc");
  auto f = make_fabric("ft2:leaves=2,spines=1,hosts=2");
  ASSERT_TRUE(f);
  SimFabric sim(std::move(*f), {.cc_agents = true});
  {
    SimTransport t(sim, {});
    sm::SubnetManager sm(t, sm_opts(dir));
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up);
  }
  const auto& m = sim.model();
  const fabric::NodeIndex h0 = *m.find_by_name("h0-0"), h1 = *m.find_by_name("h1-1"),
                          leaf = *m.find_by_name("leaf1");
  auto ask = [&](const mad::Gmp& g, fabric::NodeIndex to) -> std::optional<mad::Gmp> {
    const Lid dlid =
        m.node(to).is_switch() ? m.node(to).ports[0].attrs.lid : m.node(to).ports[1].attrs.lid;
    mad::Gmp req = g;
    req.tid = 77;
    auto out = sim.process(mad::encode_gmp(req), h0, 1, dlid);
    if (!out.reply) return std::nullopt;
    auto back = mad::decode_gmp(out.reply->data(), out.reply->size());
    EXPECT_TRUE(back);
    EXPECT_EQ(back->tid, 77u);
    return *back;
  };
  auto ca = ask(get(cc::kAttrCongestionInfo), h1);
  ASSERT_TRUE(ca);
  EXPECT_EQ(ca->status, 0);
  EXPECT_EQ(cc::decode_congestion_info(cc::data_of(*ca)).control_table_cap, 2);
  auto sw = ask(get(cc::kAttrSwitchPortCongestionSetting, 0), leaf);
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->status, 0);
  mad::Gmp old = get(cc::kAttrCongestionInfo);
  old.class_version = 1;
  EXPECT_EQ(ask(old, h1)->status, 0x0004);
  sim.set_cc(leaf, CcSupport::kRefuses);
  EXPECT_EQ(ask(get(cc::kAttrCongestionInfo), leaf)->status, 0x0004);
  sim.set_cc(h1, CcSupport::kNone);
  EXPECT_FALSE(ask(get(cc::kAttrCongestionInfo), h1));
  // A CACongestionSetting Set (attribute 0x16, the P_Key table's number among SMPs)
  // reaches the CC agent, not the P_Key table: the class is not mistaken for an SMP.
  sim.set_cc(h1, CcSupport::kAgent);
  const auto pkeys = sim.pkeys(h1, 1);
  cc::CaCongestionSetting s;
  s.port_control = 0x1234;
  s.control_map = 0xFFFF;
  auto r = ask(set(cc::kAttrCaCongestionSetting, cc::encode(s)), h1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(sim.cc().find(h1, 1)->ca, s);
  EXPECT_EQ(sim.pkeys(h1, 1), pkeys);
}
