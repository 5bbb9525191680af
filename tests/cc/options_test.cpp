// Congestion control's options (issue 31, item 2) read as OpenSM reads them: an
// opensm.conf as LLNL's CC tuning scripts write it loads into the Sets it means; a bad
// value is an error naming file:line.
#include <gtest/gtest.h>

#include "weft/cc/options.hpp"

using namespace weft;
using namespace weft::cc;

namespace {

Result<CcOptions> load(const std::string& text) {
  config::Values v = config::defaults();
  if (auto r = config::load_text(text, "opensm.conf", v); !r) return std::unexpected(r.error());
  return cc_from_options(v);
}

}  // namespace

TEST(CcOptions, AnOpenSmConfWithCcSettingsLoadsIntoTheSetsItMeans) {
  auto o = load(
      "congestion_control TRUE\n"
      "cc_key 0x00000000000000AB\n"
      "cc_max_outstanding_mads 64\n"
      "cc_sw_cong_setting_control_map 0x0000000F\n"
      "cc_sw_cong_setting_victim_mask "
      "0x00000000000000000000000000000000000000000000000000000001fffffffe\n"
      "cc_sw_cong_setting_credit_mask 0x0\n"
      "cc_sw_cong_setting_threshold 0xf\n"
      "cc_sw_cong_setting_packet_size 1\n"
      "cc_sw_cong_setting_credit_starvation_threshold 0x00\n"
      "cc_sw_cong_setting_credit_starvation_return_delay 1:8\n"
      "cc_sw_cong_setting_marking_rate 0x000f\n"
      "cc_ca_cong_setting_port_control 0x0001\n"
      "cc_ca_cong_setting_control_map 0x0003\n"
      "cc_ca_cong_setting_ccti_timer 0 10\n"
      "cc_ca_cong_setting_ccti_increase 0 1\n"
      "cc_ca_cong_setting_trigger_threshold 0 2\n"
      "cc_ca_cong_setting_ccti_min 0 0\n"
      "cc_ca_cong_setting_ccti_timer 1 20\n"
      "cc_ca_cong_setting_ccti_increase 1 3\n"
      "cc_cct 0:0,0:1,1:2,3:16383\n");
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->enabled);
  EXPECT_EQ(o->key, 0xABu);
  EXPECT_EQ(o->max_outstanding, 64u);
  EXPECT_EQ(o->sw.control_map, 0xFu);
  for (unsigned p = 0; p < 256; ++p)
    EXPECT_EQ(port_bit(o->sw.victim_mask, p), p >= 1 && p <= 32) << "port " << p;
  EXPECT_EQ(o->sw.credit_mask, Mask256{});
  EXPECT_EQ(o->sw.threshold, 15);
  EXPECT_EQ(o->sw.packet_size, 1);
  EXPECT_EQ(o->sw.cs_return_delay, 1 << 14 | 8);
  EXPECT_EQ(o->sw.marking_rate, 15);
  EXPECT_EQ(o->ca.port_control, 1);
  EXPECT_EQ(o->ca.control_map, 3);
  EXPECT_EQ(o->ca.sl[0], (CaCongestionEntry{10, 1, 2, 0}));
  EXPECT_EQ(o->ca.sl[1], (CaCongestionEntry{20, 3, 0, 0}));
  EXPECT_EQ(o->ca.sl[2], CaCongestionEntry{});
  ASSERT_EQ(o->cct.size(), 4u);
  EXPECT_EQ(o->cct[2], (CctEntry{1, 2}));
  EXPECT_EQ(o->cct[3], (CctEntry{3, 16383}));
  const auto blocks = o->cct_blocks();
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].ccti_limit, 3);
  EXPECT_EQ(blocks[0].entries[3], (CctEntry{3, 16383}));
  EXPECT_EQ(o->port_element(), (SwitchPortCongestionElement{true, false, 15, 1, 15}));
  // OpenSM's defaults: off, no key, an empty table sent as one block with CCTI_Limit 0.
  auto d = load("");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_FALSE(d->enabled);
  EXPECT_EQ(d->key, 0u);
  EXPECT_TRUE(d->cct.empty());
  ASSERT_EQ(d->cct_blocks().size(), 1u);
  EXPECT_EQ(d->cct_blocks()[0].ccti_limit, 0);
  // 65 entries: two blocks, the limit 64 in both.
  std::string big = "cc_cct 0:1";
  for (int i = 1; i < 65; ++i) big += ",0:" + std::to_string(i + 1);
  auto b = load(big + "\n");
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->cct_blocks().size(), 2u);
  EXPECT_EQ(b->cct_blocks()[1].ccti_limit, 64);
  EXPECT_EQ(b->cct_blocks()[1].entries[0], (CctEntry{0, 65}));
  // A CA whose table holds one block gets the first, its limit cut to entry 63.
  ASSERT_EQ(b->cct_blocks(1).size(), 1u);
  EXPECT_EQ(b->cct_blocks(1)[0].ccti_limit, 63);
  EXPECT_TRUE(b->cct_blocks(0).empty());
}

TEST(CcOptions, BadValuesAreErrorsNamingWhere) {
  const std::pair<const char*, const char*> bad[] = {
      {"cc_key 0x1g\n", "opensm.conf:1: cc_key wants a 64-bit number"},
      {"\ncc_sw_cong_setting_victim_mask 0xfffg\n",
       "opensm.conf:2: cc_sw_cong_setting_victim_mask: 'g' is no hex digit"},
      {"cc_sw_cong_setting_credit_mask 0x"
       "00000000000000000000000000000000000000000000000000000000000000001\n",
       "65 hex digits"},
      {"cc_sw_cong_setting_credit_starvation_return_delay 4:1\n", "is not SHIFT:MULTIPLIER"},
      {"cc_sw_cong_setting_threshold 16\n", "outside 0..15"},
      {"cc_ca_cong_setting_ccti_timer 0 10\ncc_ca_cong_setting_ccti_timer 16 1\n",
       "opensm.conf:2: cc_ca_cong_setting_ccti_timer: \"16 1\" is not SL VALUE"},
      {"cc_ca_cong_setting_ccti_increase 3\n", "\"3\" is not SL VALUE"},
      {"cc_ca_cong_setting_ccti_min 3 256\n", "VALUE 0..255"},
      {"cc_cct 0:1,2:x\n", "opensm.conf:1: cc_cct: entry 1: \"2:x\" is not SHIFT:MULTIPLIER"},
      {"cc_sw_cong_setting_control_map 0x100000000\n", "wants a 32-bit number"},
  };
  for (auto [text, want] : bad) {
    auto o = load(text);
    ASSERT_FALSE(o) << text;
    EXPECT_NE(o.error().message.find(want), std::string::npos) << o.error().message;
  }
  std::string many = "cc_cct 0:0";
  for (int i = 0; i < 128; ++i) many += ",0:0";
  auto m = load(many + "\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("more than 128 entries"), std::string::npos)
      << m.error().message;
}

TEST(CcOptions, MasksReadAsOpenSmReadsThemBigEndian) {
  auto m = parse_mask256("0x1");
  ASSERT_TRUE(m);
  EXPECT_TRUE(port_bit(*m, 0));
  EXPECT_EQ((*m)[31], 1);
  m = parse_mask256("8" + std::string(63, '0'));
  ASSERT_TRUE(m);
  EXPECT_TRUE(port_bit(*m, 255));
  EXPECT_EQ((*m)[0], 0x80);
  m = parse_mask256("abc");  // odd digit counts: the first digit is the high byte's low nibble
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[30], 0x0a);
  EXPECT_EQ((*m)[31], 0xbc);
  EXPECT_FALSE(parse_mask256(""));
  EXPECT_FALSE(parse_mask256("0x"));
}

// With cc_cct empty and cc_cct_max_delay_ns set, each CA port's table is made for its
// link: a 4x EDR port with a 4096-byte MTU sends a packet in (4096 + 40) * 8 / 100 =
// 330.88 ns, so 100 us is 302.2 packets: shift 3 and multiplier 2418 at the last entry.
TEST(CcOptions, ATableIsMadeForEachPortFromATargetDelay) {
  fabric::PortAttrs edr;
  edr.width_active = 2;      // 4x
  edr.speed_ext_active = 2;  // EDR
  edr.neighbor_mtu = 5;      // 4096
  EXPECT_DOUBLE_EQ(packet_time_ns(edr), 4136 * 8 / 100.0);
  fabric::PortAttrs qdr = edr;
  qdr.speed_ext_active = 0;
  qdr.speed_active = 4;  // QDR: 40 Gb/s signalling, 32 data
  EXPECT_DOUBLE_EQ(packet_time_ns(qdr), 4136 * 8 / 32.0);
  EXPECT_EQ(packet_time_ns(fabric::PortAttrs{}), 0);

  const auto t = generate_cct(100'000, 127, packet_time_ns(edr));
  ASSERT_EQ(t.size(), 128u);
  EXPECT_EQ(t[0], (CctEntry{0, 0}));
  EXPECT_EQ(t[127], (CctEntry{3, 2418}));
  EXPECT_EQ(t[64], (CctEntry{3, 1218}));  // 2417.8 * 64 / 127
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i].multiplier, t[i - 1].multiplier) << i;
  const double last_ns = t[127].multiplier * packet_time_ns(edr) / 8;
  EXPECT_NEAR(last_ns, 100'000, packet_time_ns(edr) / 8);
  // 5 ms does not fit shift 3, 2 or 1: shift 0; 100 ms does not fit at all: 0x3FFF.
  EXPECT_EQ(generate_cct(5'000'000, 10, packet_time_ns(edr))[10], (CctEntry{0, 15111}));
  EXPECT_EQ(generate_cct(100'000'000, 10, packet_time_ns(edr))[10], (CctEntry{0, 0x3FFF}));

  auto o = load("cc_cct_max_delay_ns 100000\n");
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->generates_cct());
  const auto blocks = o->cct_blocks(4, packet_time_ns(edr));
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1].ccti_limit, 127);
  EXPECT_EQ(blocks[1].entries[63], (CctEntry{3, 2418}));
  // A port whose table holds one block: the whole delay over its 64 entries.
  const auto one = o->cct_blocks(1, packet_time_ns(qdr));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].ccti_limit, 63);
  EXPECT_EQ(one[0].entries[63], (CctEntry{3, 774}));  // 100000 * 8 / 1034
  // Without a packet time: OpenSM's one block with CCTI_Limit 0.
  EXPECT_EQ(o->cct_blocks(4).size(), 1u);
  // A table given wins.
  auto given = load("cc_cct_max_delay_ns 100000\ncc_cct 0:1,0:2\n");
  ASSERT_TRUE(given);
  EXPECT_FALSE(given->generates_cct());
  EXPECT_EQ(given->cct_blocks(4, packet_time_ns(edr))[0].entries[1], (CctEntry{0, 2}));
}
