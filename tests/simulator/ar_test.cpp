// The simulator's switches hold adaptive routing as NVIDIA's do (issue 30, item 6, first
// slice): AdaptiveRoutingInfo, the group table and the AR LFT, answered to Get and Set
// with the capability the switch was built with; a switch without AR, and a CA, answer
// "unsupported attribute"; values beyond the capability are refused and change nothing.
#include <gtest/gtest.h>

#include "weft/mad/ar.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_fabric.hpp"

using namespace weft;
using namespace weft::mad;
using namespace weft::simulator;
using fabric::NodeIndex;

namespace {

struct Rig {
  SimFabric sim;
  NodeIndex host, leaf;
  explicit Rig(SimDefaults d)
      : sim(*make_fabric("ft2:leaves=2,spines=1,hosts=2"), d),
        host(*sim.model().find_by_name("h0-0")),
        leaf(sim.model().node(host).ports[1].peer) {}
  // An SMP from the host's port 1 to its leaf (hops 1) or to the host itself (hops 0).
  Smp ask(uint8_t method, uint16_t attr, uint32_t mod, const SmpData& data = {}, int hops = 1) {
    const DrPath path = hops ? DrPath{}.extended(1) : DrPath{};
    SmpRequest req = method == kMethodSet ? SmpRequest::set(attr, mod, path, data)
                                          : SmpRequest::get(attr, mod, path);
    auto out = sim.process(encode_smp(req, 42), host, 1);
    EXPECT_TRUE(out.reply);
    if (!out.reply) return {};
    auto smp = decode_smp(out.reply->data(), out.reply->size());
    EXPECT_TRUE(smp);
    return smp ? *smp : Smp{};
  }
};

constexpr uint16_t kUnsupported = 0x000C, kInvalid = 0x001C;

}  // namespace

TEST(SimAr, SwitchesAnswerTheArAttributesWithinTheirCapability) {
  Rig r({.ar_group_cap = 64, .ar_sub_groups = 2});
  ASSERT_TRUE(r.sim.model().node(r.leaf).is_switch());
  // What the switch can do, AR off.
  Smp got = r.ask(kMethodGet, kAttrArInfo, 0);
  ASSERT_EQ(got.status, 0);
  ArInfo ai = decode_ar_info(got.data);
  EXPECT_EQ(ai.group_cap, 64);
  EXPECT_EQ(ai.sub_grps_supported, 2);
  EXPECT_TRUE(ai.by_sl_cap);
  EXPECT_FALSE(ai.enabled);
  // A CA has no AR.
  EXPECT_EQ(r.ask(kMethodGet, kAttrArInfo, 0, {}, 0).status, kUnsupported);

  // Enable with GroupTop 3, two sub-groups in use.
  ai.enabled = true;
  ai.group_top = 3;
  ai.sub_grps_active = 1;
  ai.ageing_time_us = 100;
  got = r.ask(kMethodSet, kAttrArInfo, 0, encode_ar_info(ai));
  ASSERT_EQ(got.status, 0);
  EXPECT_TRUE(decode_ar_info(got.data).enabled);
  EXPECT_EQ(r.sim.ar(r.leaf).info.group_top, 3);
  EXPECT_EQ(r.sim.ar(r.leaf).info.ageing_time_us, 100u);
  // Beyond the capability: refused, nothing changed.
  ArInfo over = ai;
  over.group_top = 65;
  EXPECT_EQ(r.ask(kMethodSet, kAttrArInfo, 0, encode_ar_info(over)).status, kInvalid);
  over = ai;
  over.sub_grps_active = 2;
  EXPECT_EQ(r.ask(kMethodSet, kAttrArInfo, 0, encode_ar_info(over)).status, kInvalid);
  EXPECT_EQ(r.sim.ar(r.leaf).info.group_top, 3);
  EXPECT_EQ(r.sim.ar(r.leaf).info.sub_grps_active, 1);
  // A capability is not the SM's to change.
  over = ai;
  over.group_cap = 4000;
  ASSERT_EQ(r.ask(kMethodSet, kAttrArInfo, 0, encode_ar_info(over)).status, 0);
  EXPECT_EQ(r.sim.ar(r.leaf).info.group_cap, 64);

  // The group table: 64 groups of 2 sub-groups, 2 entries a block: blocks 0-63.
  ArGroupBlock gb{};
  ar_mask_set(gb[0], 2);
  ar_mask_set(gb[0], 3);
  ar_mask_set(gb[1], 4);
  ASSERT_EQ(
      r.ask(kMethodSet, kAttrArGroupTable, ar_group_modifier(1), encode_ar_group_block(gb)).status,
      0);
  EXPECT_EQ(r.sim.ar(r.leaf).groups[2], gb[0]);
  EXPECT_EQ(r.sim.ar(r.leaf).groups[3], gb[1]);
  got = r.ask(kMethodGet, kAttrArGroupTable, ar_group_modifier(1));
  ASSERT_EQ(got.status, 0);
  EXPECT_EQ(decode_ar_group_block(got.data), gb);
  EXPECT_EQ(r.ask(kMethodGet, kAttrArGroupTable, ar_group_modifier(63)).status, 0);
  EXPECT_EQ(r.ask(kMethodGet, kAttrArGroupTable, ar_group_modifier(64)).status, kInvalid);
  EXPECT_EQ(r.ask(kMethodGet, kAttrArGroupTable, 1u << 16 | 1).status, kInvalid)
      << "group table 1: the switch has one";

  // The AR LFT: LID 17 free over group 1, LID 18 static.
  ArLftBlock lb{};
  lb[1] = {ArLidState::kFree, 0, 2, 1};
  lb[2] = {ArLidState::kStatic, 0, 3, 0};
  ASSERT_EQ(r.ask(kMethodSet, kAttrArLft, ar_lft_modifier(1), encode_ar_lft_block(lb)).status, 0);
  EXPECT_EQ(r.sim.ar(r.leaf).lft[17], lb[1]);
  got = r.ask(kMethodGet, kAttrArLft, ar_lft_modifier(1));
  EXPECT_EQ(decode_ar_lft_block(got.data), lb);
  // A group beyond the table, or a table the switch does not have: refused whole.
  ArLftBlock bad = lb;
  bad[0] = {ArLidState::kBounded, 0, 2, 64};
  EXPECT_EQ(r.ask(kMethodSet, kAttrArLft, ar_lft_modifier(1), encode_ar_lft_block(bad)).status,
            kInvalid);
  bad = lb;
  bad[0].table = 1;
  EXPECT_EQ(r.ask(kMethodSet, kAttrArLft, ar_lft_modifier(1), encode_ar_lft_block(bad)).status,
            kInvalid);
  EXPECT_EQ(r.sim.ar(r.leaf).lft[16], ArLftEntry{});
  EXPECT_EQ(r.ask(kMethodGet, kAttrArLft, 1u << 24 | 1).status, kInvalid) << "pLFT 1";

  // One switch built without AR.
  r.sim.set_ar_cap(r.leaf, 0);
  EXPECT_EQ(r.ask(kMethodGet, kAttrArInfo, 0).status, kUnsupported);
  EXPECT_EQ(r.ask(kMethodGet, kAttrArLft, 0).status, kUnsupported);
}

TEST(SimAr, ByDefaultSwitchesHaveNoAr) {
  Rig r({});
  EXPECT_EQ(r.ask(kMethodGet, kAttrArInfo, 0).status, kUnsupported);
  EXPECT_EQ(r.ask(kMethodSet, kAttrArGroupTable, 0, {}).status, kUnsupported);
}
