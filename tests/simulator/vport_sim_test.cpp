// The simulator's SR-IOV virtual ports (issue 34, item 6), through the SMPs an SM sends:
// a CA port with 8 VFs (3 wanting LIDs) answers GeneralInfo, VirtualizationInfo,
// VPortState, VPortInfo, VNodeInfo, VPortGUIDInfo and VPortPKeyTable as the headers
// lay them out; the host writing a VF's GUID raises VPortStateChange; the P_Keys the
// vports hold decide which may talk.
#include <gtest/gtest.h>

#include "sim_sm.hpp"
#include "weft/mad/vport.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using fabric::NodeIndex;

namespace {

struct Sma {
  SimFabric& sim;
  NodeIndex at;
  DrPath path;
  uint64_t tid = 1;
  // The answer's status and data; nullopt when nothing came back.
  std::optional<Smp> ask(SmpRequest req) {
    auto out = sim.process(encode_smp(req, tid++), at, 1);
    if (!out.reply) return std::nullopt;
    auto s = decode_smp(out.reply->data(), kMadSize);
    if (!s) return std::nullopt;
    return *s;
  }
  std::optional<Smp> get(uint16_t attr, uint32_t mod) {
    return ask(SmpRequest::get(attr, mod, path));
  }
  std::optional<Smp> set(uint16_t attr, uint32_t mod, const SmpData& d) {
    return ask(SmpRequest::set(attr, mod, path, d));
  }
};

}  // namespace

TEST(SimVPorts, AVirtualizedPortAnswersAsTheHeadersLayItOut) {
  SimFabric sim = weft::testing::sim_of("ft2:leaves=2,spines=1,hosts=2");
  const NodeIndex host = *sim.model().find_by_name("h0-0");
  const NodeIndex plain = *sim.model().find_by_name("h0-1");
  sim.vports().add(host, 1,
                   {.vports = 8, .lid_required = 3, .node_guid = Guid{0x0200000000000100}});
  Sma sma{sim, host, DrPath{}};  // the SM on the virtualized port itself

  auto gi = sma.get(kAttrGeneralInfo, kGeneralInfoCapabilities);
  ASSERT_TRUE(gi);
  EXPECT_EQ(gi->status, 0);
  EXPECT_TRUE(general_info_virtualization(gi->data));
  auto vi = sma.get(kAttrVirtualizationInfo, 0);
  ASSERT_TRUE(vi && vi->status == 0);
  VirtualizationInfo v = decode_virtualization_info(vi->data);
  EXPECT_EQ(v.vport_cap, 9);
  EXPECT_EQ(v.vport_index_top, 8);
  EXPECT_FALSE(v.enabled);
  // Refused until enabled (weft's choice for the simulator).
  EXPECT_EQ(sma.get(kAttrVPortInfo, vport_modifier(1))->status, 0x1C);
  v.enabled = true;
  auto en = sma.set(kAttrVirtualizationInfo, 0, encode_virtualization_info(v));
  ASSERT_TRUE(en && en->status == 0);
  EXPECT_TRUE(decode_virtualization_info(en->data).enabled);

  // VFs are Down until the host gives one a GUID.
  auto st = sma.get(kAttrVPortState, vport_state_modifier(0));
  ASSERT_TRUE(st && st->status == 0);
  VPortStateBlock b = decode_vport_state_block(st->data);
  EXPECT_EQ(b[0], uint8_t(VPortState::kActive));
  EXPECT_EQ(b[2], uint8_t(VPortState::kDown));
  EXPECT_EQ(b[9], 0) << "past the top";
  sim.vports().host_set_guid(host, 1, 2, Guid{0x02000000000000a2});
  EXPECT_TRUE(decode_virtualization_info(sma.get(kAttrVirtualizationInfo, 0)->data).state_change);
  b = decode_vport_state_block(sma.get(kAttrVPortState, 0)->data);
  EXPECT_EQ(b[2], uint8_t(VPortState::kInit));
  // Written 1, the change bit clears.
  v.state_change = true;
  sma.set(kAttrVirtualizationInfo, 0, encode_virtualization_info(v));
  EXPECT_FALSE(decode_virtualization_info(sma.get(kAttrVirtualizationInfo, 0)->data).state_change);

  // VF 2 wants a LID; it takes one and goes Init, Armed, Active.
  VPortInfo vp = decode_vport_info(sma.get(kAttrVPortInfo, vport_modifier(2))->data);
  EXPECT_TRUE(vp.lid_required);
  EXPECT_EQ(vp.port_guid.value, 0x02000000000000a2u);
  EXPECT_EQ(vp.state, uint8_t(VPortState::kInit));
  vp.lid = 0x40;
  vp.state = uint8_t(VPortState::kActive);
  EXPECT_EQ(sma.set(kAttrVPortInfo, vport_modifier(2), encode_vport_info(vp))->status, 0x1C)
      << "Init to Active skips Armed";
  vp.state = uint8_t(VPortState::kArmed);
  auto armed = sma.set(kAttrVPortInfo, vport_modifier(2), encode_vport_info(vp));
  ASSERT_TRUE(armed && armed->status == 0);
  EXPECT_EQ(decode_vport_info(armed->data).lid, 0x40);
  vp.state = uint8_t(VPortState::kActive);
  EXPECT_EQ(decode_vport_info(sma.set(kAttrVPortInfo, 2, encode_vport_info(vp))->data).state,
            uint8_t(VPortState::kActive));
  // VF 5 wants none: it shows no LID of its own whatever is set.
  sim.vports().host_set_guid(host, 1, 5, Guid{0x02000000000000a5});
  VPortInfo v5 = decode_vport_info(sma.get(kAttrVPortInfo, 5)->data);
  EXPECT_FALSE(v5.lid_required);
  v5.lid = 0x41;
  v5.state = 0;
  EXPECT_EQ(decode_vport_info(sma.set(kAttrVPortInfo, 5, encode_vport_info(v5))->data).lid, 0);
  EXPECT_EQ(sma.get(kAttrVPortInfo, vport_modifier(9))->status, 0x1C) << "past the top";

  VNodeInfo vn = decode_vnode_info(sma.get(kAttrVNodeInfo, vport_modifier(2))->data);
  EXPECT_EQ(vn.partition_cap, 32);
  EXPECT_EQ(vn.node_guid.value, 0x0200008200000100u);  // derived_vport_guid(node GUID, 2)
  EXPECT_EQ(
      decode_vport_guid_block(sma.get(kAttrVPortGuidInfo, vport_block_modifier(2, 0))->data)[0]
          .value,
      0x02000000000000a2u);

  // Partitions: VF 2 a full member of 0x0a12, VF 5 a limited one: they may talk; VF 3
  // holds nothing.
  PkeyBlock pk{};
  pk[0] = 0x8a12;
  ASSERT_EQ(sma.set(kAttrVPortPkeyTable, vport_block_modifier(2, 0), encode_pkey_block(pk))->status,
            0);
  pk[0] = 0x0a12;
  ASSERT_EQ(sma.set(kAttrVPortPkeyTable, vport_block_modifier(5, 0), encode_pkey_block(pk))->status,
            0);
  EXPECT_EQ(decode_pkey_block(sma.get(kAttrVPortPkeyTable, vport_block_modifier(5, 0))->data)[0],
            0x0a12);
  EXPECT_EQ(sma.get(kAttrVPortPkeyTable, vport_block_modifier(5, 1))->status, 0x1C)
      << "partition_cap 32: one block";
  EXPECT_TRUE(sim.vports().may_talk(host, 1, 2, host, 1, 5));
  EXPECT_FALSE(sim.vports().may_talk(host, 1, 5, host, 1, 5)) << "two limited members";
  EXPECT_FALSE(sim.vports().may_talk(host, 1, 2, host, 1, 3));

  // A CA port without vports: GeneralInfo says so; the rest is not there.
  const auto& leaf = sim.model().node(sim.model().node(host).ports[1].peer);
  PortNum to_plain = 0;
  for (PortNum q = 1; q <= leaf.num_ports; ++q)
    if (leaf.ports[q].linked() && leaf.ports[q].peer == plain) to_plain = q;
  ASSERT_NE(to_plain, 0);
  Sma other{sim, host, DrPath{}.extended(1).extended(to_plain)};
  auto gi2 = other.get(kAttrGeneralInfo, kGeneralInfoCapabilities);
  ASSERT_TRUE(gi2 && gi2->status == 0);
  EXPECT_FALSE(general_info_virtualization(gi2->data));
  EXPECT_EQ(other.get(kAttrVirtualizationInfo, 0)->status, 0x0C);
}
