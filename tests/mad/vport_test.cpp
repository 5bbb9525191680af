// Virtual-port attributes against the layouts NVIDIA's GPL/BSD headers publish
// (ib_virtualization_info_t, ib_vport_info_t, ib_vnode_info_t, ib_vport_state_t,
// ib_general_info_smp_t; issue 34, item 1): golden bytes written out by hand from those
// layouts, and every byte a device sends kept through a Set.
#include <gtest/gtest.h>

#include <random>

#include "weft/mad/vport.hpp"

using namespace weft;
using namespace weft::mad;

TEST(VPortCodec, AttributeIdsAndModifiers) {
  EXPECT_EQ(kAttrGeneralInfo, 0xFF17);
  EXPECT_EQ(kAttrVirtualizationInfo, 0xFFB0);
  EXPECT_EQ(kAttrVPortInfo, 0xFFB1);
  EXPECT_EQ(kAttrVNodeInfo, 0xFFB2);
  EXPECT_EQ(kAttrVPortState, 0xFFB3);
  EXPECT_EQ(kAttrVNodeDesc, 0xFFB4);
  EXPECT_EQ(kAttrVPortGuidInfo, 0xFFB5);
  EXPECT_EQ(kAttrVPortPkeyTable, 0xFFB6);
  EXPECT_STREQ(attr_name(kAttrVPortInfo), "VPortInfo");
  EXPECT_STREQ(attr_name(kAttrVPortPkeyTable), "VPortPKeyTable");
  // weft's choice: the vport index low, the block above it.
  EXPECT_EQ(vport_modifier(7), 7u);
  EXPECT_EQ(vport_block_modifier(7, 2), 0x00020007u);
  EXPECT_EQ(vport_state_modifier(1), 1u);
}

TEST(VPortCodec, GeneralInfoAndPortInfoSayWhetherAPortVirtualizes) {
  SmpData d{};
  EXPECT_FALSE(general_info_virtualization(d));
  d[2] = 0x80;  // capability bit 15: word 0, byte 2, mask 0x80
  EXPECT_TRUE(general_info_virtualization(d));
  EXPECT_FALSE(general_info_cap(d, kGeneralCapSlaveVirtualSwitch));
  d[2] = 0x40;  // bit 14
  EXPECT_FALSE(general_info_virtualization(d));
  EXPECT_TRUE(general_info_cap(d, kGeneralCapSlaveVirtualSwitch));
  d[1] = 0x40;  // bit 22: byte 1, mask 0x40
  EXPECT_TRUE(general_info_cap(d, kGeneralCapVPortGuidInfo));
  d[15] = 0x01;  // bit 96: word 3's LSB
  EXPECT_TRUE(general_info_cap(d, 96));
  EXPECT_FALSE(general_info_cap(d, 128));

  PortInfo pi;
  pi.raw[61] = 0x04;  // CapabilityMask2 IsVirtualizationSupported
  EXPECT_FALSE(port_info_virtualization(pi)) << "only where CapabilityMask2 is supported";
  pi.attrs.capability_mask = 0x8000;
  EXPECT_TRUE(port_info_virtualization(pi));
  pi.raw[61] = 0x02;
  EXPECT_FALSE(port_info_virtualization(pi));
}

TEST(VPortCodec, VirtualizationInfoFieldByField) {
  SmpData d{};
  d[0] = 0x00, d[1] = 0x40;  // vport_cap 64
  d[2] = 0x00, d[3] = 0x07;  // vport_index_top 7
  d[4] = 0x20 | 0x01;        // VPortStateChange, a reserved bit
  d[6] = 0x00;               // revision 0
  d[30] = 0x5a;              // reserved: kept
  VirtualizationInfo v = decode_virtualization_info(d);
  EXPECT_EQ(v.vport_cap, 64);
  EXPECT_EQ(v.vport_index_top, 7);
  EXPECT_FALSE(v.enabled);
  EXPECT_TRUE(v.state_change);
  EXPECT_FALSE(v.client_reregister);
  v.enabled = true;
  v.state_change = false;
  const SmpData out = encode_virtualization_info(v);
  EXPECT_EQ(out[4], 0x80 | 0x01);
  EXPECT_EQ(out[30], 0x5a);
  EXPECT_EQ(out[1], 0x40);
}

TEST(VPortCodec, VPortInfoFieldByField) {
  SmpData d{};
  d[0] = 0x40 | 0x04;        // Active, LidRequired
  d[1] = 0x02;               // guid_cap 2
  d[2] = 0x00, d[3] = 0x05;  // cap_mask CM, DevMgt
  d[4] = 0x00, d[5] = 0x03;  // P_Key violations
  d[8] = 0x01, d[9] = 0x2c;  // LID 300
  d[10] = 0x00, d[11] = 0x02;
  const uint8_t guid[8] = {0x02, 0xc9, 0x03, 0x00, 0x00, 0xab, 0xcd, 0xef};
  for (int i = 0; i < 8; ++i) d[12 + i] = guid[i];
  d[27] = 0x11;  // profile's last byte
  d[40] = 0x77;  // reserved: kept
  VPortInfo v = decode_vport_info(d);
  EXPECT_EQ(v.state, uint8_t(VPortState::kActive));
  EXPECT_STREQ(fabric::port_state_name(VPortState(v.state)), "Active");
  EXPECT_TRUE(v.lid_required);
  EXPECT_FALSE(v.client_reregister);
  EXPECT_EQ(v.guid_cap, 2);
  EXPECT_EQ(v.cap_mask, 5);
  EXPECT_EQ(v.pkey_violations, 3);
  EXPECT_EQ(v.lid, 300);
  EXPECT_EQ(v.lid_by_vport_index, 2);
  EXPECT_EQ(v.port_guid.value, 0x02c9030000abcdefull);
  EXPECT_EQ(v.port_profile, 0x11u);
  v.lid = 0x1234;
  v.state = uint8_t(VPortState::kNoChange);
  v.client_reregister = true;
  const SmpData out = encode_vport_info(v);
  EXPECT_EQ(out[0], 0x08 | 0x04);
  EXPECT_EQ(out[8], 0x12);
  EXPECT_EQ(out[9], 0x34);
  EXPECT_EQ(out[40], 0x77);
}

TEST(VPortCodec, VNodeInfoVPortStateAndGuidBlocks) {
  SmpData d{};
  d[0] = 0x00, d[1] = 0x20;  // partition_cap 32
  d[2] = 1, d[3] = 1;
  d[4] = 0x02, d[11] = 0x99;
  const VNodeInfo n = decode_vnode_info(d);
  EXPECT_EQ(n.partition_cap, 32);
  EXPECT_EQ(n.local_port, 1);
  EXPECT_EQ(n.num_ports, 1);
  EXPECT_EQ(n.node_guid.value, 0x0200000000000099ull);
  EXPECT_EQ(encode_vnode_info(n), d);

  SmpData s{};
  s[0] = 0x41;   // vport 0 Active (high nibble), vport 1 Down
  s[63] = 0x23;  // vport 126 Init, vport 127 Armed
  const VPortStateBlock b = decode_vport_state_block(s);
  EXPECT_EQ(b[0], 4);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[126], 2);
  EXPECT_EQ(b[127], 3);
  EXPECT_EQ(b[2], 0);
  EXPECT_EQ(encode_vport_state_block(b), s);

  VPortGuidBlock g{};
  g[0] = Guid{0x0002c90300001001ull};
  g[7] = Guid{0xfedcba9876543210ull};
  const SmpData gd = encode_vport_guid_block(g);
  EXPECT_EQ(gd[0], 0x00);
  EXPECT_EQ(gd[7], 0x01);
  EXPECT_EQ(gd[56], 0xfe);
  EXPECT_EQ(gd[63], 0x10);
  EXPECT_EQ(decode_vport_guid_block(gd), g);
}

// Whatever a device sends decodes, and comes back byte for byte from a Set that
// changes nothing (reserved bits included).
TEST(VPortCodec, AnyBytesDecodeAndSurviveASetUnchanged) {
  std::mt19937_64 rng(34);
  for (int i = 0; i < 2000; ++i) {
    SmpData d;
    for (auto& b : d) b = uint8_t(rng());
    EXPECT_EQ(encode_virtualization_info(decode_virtualization_info(d)), d);
    EXPECT_EQ(encode_vport_info(decode_vport_info(d)), d);
    EXPECT_EQ(encode_vport_state_block(decode_vport_state_block(d)), d);
    EXPECT_EQ(encode_vport_guid_block(decode_vport_guid_block(d)), d);
    const VNodeInfo n = decode_vnode_info(d);
    EXPECT_EQ(decode_vnode_info(encode_vnode_info(n)), n);
    for (uint32_t bit = 0; bit < 130; ++bit) (void)general_info_cap(d, bit);
  }
}
