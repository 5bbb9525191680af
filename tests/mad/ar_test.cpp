// Adaptive routing attributes against the layouts NVIDIA's GPL/BSD ib_types.h publishes
// (ib_ar_info_t, ib_ar_group_table_t, ib_ar_lft_entry_t): golden bytes written out by
// hand from those layouts, and every byte a device sends kept through a Set.
#include <gtest/gtest.h>

#include <random>

#include "weft/mad/ar.hpp"

using namespace weft::mad;

TEST(ArCodec, AdaptiveRoutingInfoFieldByField) {
  SmpData d{};
  d[0] = 0x08;                                         // by_sl_cap
  d[1] = 0x02;                                         // direction_num_sup
  d[2] = 0x10;                                         // group_table_copy_sup 1, sub_grps_active 0
  d[3] = 0x0e;                                         // ARN, FRN, FR supported; not enabled
  d[4] = 0x01, d[5] = 0x00, d[6] = 0x08, d[7] = 0x00;  // table cap 1, top 0, cap 2048
  d[8] = 0xff, d[9] = 0xff;                            // enable_by_sl_mask
  d[10] = 0x03;                                        // sub_grps_supported
  d[11] = 0x12;                                        // RN version 1, AR version 2
  d[15] = 0x20;                                        // reserved bits above by_transport_disable
  d[16] = 0, d[17] = 0, d[18] = 0, d[19] = 30;         // ageing time 30 us
  d[20] = 0x80;                                        // HBF supported: weft does not decode it
  d[40] = 0x5a;
  const ArInfo a = decode_ar_info(d);
  EXPECT_TRUE(a.by_sl_cap);
  EXPECT_FALSE(a.by_sl_en);
  EXPECT_FALSE(a.enabled);
  EXPECT_EQ(a.direction_num_sup, 2);
  EXPECT_EQ(a.group_table_copy_sup, 1);
  EXPECT_EQ(a.sub_grps_active, 0);
  EXPECT_TRUE(a.arn_sup && a.frn_sup && a.fr_sup);
  EXPECT_FALSE(a.fr_enabled);
  EXPECT_EQ(a.group_cap, 2048);
  EXPECT_EQ(a.group_top, 0);
  EXPECT_EQ(a.group_table_cap, 1);
  EXPECT_EQ(a.string_width_cap, 0);
  EXPECT_EQ(a.enable_by_sl_mask, 0xffff);
  EXPECT_EQ(a.sub_grps_supported, 3);
  EXPECT_EQ(a.ar_version_cap, 2);
  EXPECT_EQ(a.rn_version_cap, 1);
  EXPECT_EQ(a.ageing_time_us, 30u);

  // What an SM sets: enable, GroupTop, by-SL on SL 0 only, fast recovery, ageing 60 us.
  ArInfo s = a;
  s.enabled = true;
  s.group_top = 0x123;
  s.by_sl_en = true;
  s.enable_by_sl_mask = 0x0001;
  s.fr_enabled = true;
  s.ageing_time_us = 60;
  s.by_transport_disable = 0x1;  // not on UD
  SmpData want = d;
  want[0] = 0x18;
  want[3] = 0x1f;
  want[4] = 0x01, want[5] = 0x12, want[6] = 0x38, want[7] = 0x00;
  want[8] = 0x00, want[9] = 0x01;
  want[15] = 0x21;
  want[19] = 60;
  EXPECT_EQ(encode_ar_info(s), want);
  EXPECT_EQ(decode_ar_info(encode_ar_info(s)), decode_ar_info(want));
}

TEST(ArCodec, AnInfoReadAndSentBackIsTheSameBytes) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    SmpData d;
    for (auto& b : d) b = uint8_t(rng());
    EXPECT_EQ(encode_ar_info(decode_ar_info(d)), d) << "round " << round;
  }
}

TEST(ArCodec, GroupTableMasksArePortsFromTheLastByteUp) {
  ArGroupBlock b{};
  for (uint32_t p : {0u, 1u, 8u, 36u}) ar_mask_set(b[0], p);
  ar_mask_set(b[1], 255);
  ar_mask_set(b[1], 256);  // beyond the mask: ignored
  SmpData want{};
  want[31] = 0x03;      // ports 0 and 1
  want[30] = 0x01;      // port 8
  want[27] = 0x10;      // port 36
  want[32 + 0] = 0x80;  // port 255 of the second entry
  EXPECT_EQ(encode_ar_group_block(b), want);
  const ArGroupBlock back = decode_ar_group_block(want);
  EXPECT_EQ(back, b);
  EXPECT_TRUE(ar_mask_has(back[0], 36));
  EXPECT_FALSE(ar_mask_has(back[0], 35));
  EXPECT_FALSE(ar_mask_has(back[1], 0));
  ar_mask_set(b[0], 1, false);
  EXPECT_EQ(encode_ar_group_block(b)[31], 0x01);
}

TEST(ArCodec, ArLftEntriesCarryStateTableDefaultPortAndGroup) {
  ArLftBlock b{};
  b[0] = {ArLidState::kFree, 3, 17, 0x2ab};
  b[1] = {ArLidState::kStatic, 0, 5, 0};
  b[15] = {ArLidState::kBounded, 0, 1, 0xfff};
  SmpData want{};
  for (int i = 2; i < 15; ++i) want[4 * i] = 0x80;  // the rest: static, port 0
  want[0] = 0x43, want[1] = 0x11, want[2] = 0x02, want[3] = 0xab;
  want[4] = 0x80, want[5] = 0x05;
  want[60] = 0x00, want[61] = 0x01, want[62] = 0x0f, want[63] = 0xff;
  for (int i = 2; i < 15; ++i) b[i] = {ArLidState::kStatic, 0, 0, 0};
  EXPECT_EQ(encode_ar_lft_block(b), want);
  EXPECT_EQ(decode_ar_lft_block(want), b);
  // Reserved bits a device sets are not read as state, table or group.
  SmpData noisy = want;
  noisy[0] |= 0x30;
  noisy[2] |= 0xf0;
  EXPECT_EQ(decode_ar_lft_block(noisy), b);
  // Block b covers LIDs 16b .. 16b+15; the modifier is the block (weft's choice).
  EXPECT_EQ(ar_lft_modifier(49 / kArLftLids), 3u);
  EXPECT_EQ(ar_group_modifier(0x1234), 0x234u);
}
