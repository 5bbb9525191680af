// The congestion-control wire (issue 31, item 1): golden bytes from the layouts of IBTA
// vol. 1 Annex A10 (byte offsets in the data area, or in the MAD for the header), round
// trips, and decoding whatever a device might send.
#include <gtest/gtest.h>

#include <random>

#include "weft/cc/wire.hpp"

using namespace weft;
using namespace weft::cc;

namespace {

template <size_t N>
void expect_bytes(const std::array<uint8_t, N>& d,
                  std::initializer_list<std::pair<size_t, uint8_t>> want) {
  std::array<uint8_t, N> expected{};
  for (auto [at, b] : want) expected[at] = b;
  for (size_t i = 0; i < N; ++i) EXPECT_EQ(int(d[i]), int(expected[i])) << "byte " << i;
}

}  // namespace

TEST(CcWire, TheMadCarriesClassVersionKeyAndAreaWhereAnnexA10PutsThem) {
  Data area{};
  area[0] = 0xAB;
  area[191] = 0xCD;
  const mad::Gmp g =
      request(mad::kMethodSet, kAttrCaCongestionSetting, 3, 0x0102030405060708, area);
  const mad::MadBuf b = mad::encode_gmp(g);
  EXPECT_EQ(b[0], 1);     // BaseVersion
  EXPECT_EQ(b[1], 0x21);  // MgmtClass
  EXPECT_EQ(b[2], 2);     // ClassVersion
  EXPECT_EQ(b[3], mad::kMethodSet);
  EXPECT_EQ(b[16], 0x00);
  EXPECT_EQ(b[17], 0x16);  // AttributeID
  EXPECT_EQ(b[23], 3);     // AttributeModifier
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(b[24 + i], i + 1) << "CC_Key byte " << i;
  for (size_t i = 32; i < 64; ++i) EXPECT_EQ(b[i], 0) << "reserved byte " << i;
  EXPECT_EQ(b[64], 0xAB);
  EXPECT_EQ(b[255], 0xCD);
  auto back = mad::decode_gmp(b.data(), b.size());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->class_version, 2);
  EXPECT_EQ(key_of(*back), 0x0102030405060708u);
  EXPECT_EQ(data_of(*back), area);
  // CongestionLog's area starts at byte 32.
  LogData log{};
  log[0] = kLogSwitch;
  const mad::MadBuf lb = mad::encode_gmp(request(mad::kMethodGet, kAttrCongestionLog, 0, 0, log));
  EXPECT_EQ(lb[32], kLogSwitch);
  auto lg = mad::decode_gmp(lb.data(), lb.size());
  ASSERT_TRUE(lg);
  EXPECT_EQ(log_of(*lg), log);
}

TEST(CcWire, AttributesHaveAnnexA10sLayout) {
  // CongestionInfo: CongestionInfo (16), ControlTableCap (8).
  expect_bytes(encode(CongestionInfo{0x0001, 4}), {{1, 0x01}, {2, 4}});
  // CongestionKeyInfo: CC_Key (64), CC_KeyProtectBit (1), reserved (15),
  // CC_KeyLeasePeriod (16), CC_KeyViolations (16).
  expect_bytes(encode(CongestionKeyInfo{0x1122334455667788, true, 0x1234, 0xABCD}), {{0, 0x11},
                                                                                     {1, 0x22},
                                                                                     {2, 0x33},
                                                                                     {3, 0x44},
                                                                                     {4, 0x55},
                                                                                     {5, 0x66},
                                                                                     {6, 0x77},
                                                                                     {7, 0x88},
                                                                                     {8, 0x80},
                                                                                     {10, 0x12},
                                                                                     {11, 0x34},
                                                                                     {12, 0xAB},
                                                                                     {13, 0xCD}});
  // SwitchCongestionSetting: Control_Map (32), Victim_Mask (256), Credit_Mask (256),
  // Threshold (4), reserved (4), Packet_Size (8), CS_Threshold (4), reserved (12),
  // CS_ReturnDelay (16), Marking_Rate (16).
  SwitchCongestionSetting s;
  s.control_map = 0x0000001F;
  set_port_bit(s.victim_mask, 0);
  set_port_bit(s.victim_mask, 9);
  set_port_bit(s.credit_mask, 255);
  s.threshold = 0xF;
  s.packet_size = 8;
  s.cs_threshold = 0x7;
  s.cs_return_delay = 0x0102;
  s.marking_rate = 0x0304;
  EXPECT_TRUE(port_bit(s.victim_mask, 9));
  EXPECT_FALSE(port_bit(s.victim_mask, 8));
  EXPECT_TRUE(port_bit(decode_switch_congestion_setting(encode(s)).credit_mask, 255));
  expect_bytes(encode(s), {{3, 0x1F},
                           {35, 0x01},
                           {34, 0x02},
                           {36, 0x80},
                           {68, 0xF0},
                           {69, 8},
                           {70, 0x70},
                           {72, 1},
                           {73, 2},
                           {74, 3},
                           {75, 4}});
  // SwitchPortCongestionSetting: per port, Valid (1), Control_Type (1), reserved (2),
  // Threshold (4), Packet_Size (8), Cong_Parm.Marking_Rate (16).
  SwitchPortCongestionBlock ports{};
  ports[0] = {true, false, 0xA, 16, 0x0203};
  ports[31] = {true, true, 0x1, 0, 0};
  expect_bytes(encode(ports), {{0, 0x8A}, {1, 16}, {2, 2}, {3, 3}, {124, 0xC1}});
  // CACongestionSetting: Port_Control (16), Control_Map (16), then per SL: CCTI_Timer
  // (16), CCTI_Increase (8), Trigger_Threshold (8), CCTI_Min (8), reserved (24).
  CaCongestionSetting ca;
  ca.port_control = 1;
  ca.control_map = 0x8001;
  ca.sl[0] = {0x0A0B, 1, 2, 3};
  ca.sl[15] = {0xFFFF, 0xFF, 0xFF, 0xFF};
  expect_bytes(encode(ca), {{1, 1},
                            {2, 0x80},
                            {3, 0x01},
                            {4, 0x0A},
                            {5, 0x0B},
                            {6, 1},
                            {7, 2},
                            {8, 3},
                            {124, 0xFF},
                            {125, 0xFF},
                            {126, 0xFF},
                            {127, 0xFF},
                            {128, 0xFF}});
  // CongestionControlTable: CCTI_Limit (16), reserved (16), then per entry CCT_Shift
  // (2), CCT_Multiplier (14).
  CongestionControlTableBlock cct;
  cct.ccti_limit = 127;
  cct.entries[0] = {3, 0x3FFF};
  cct.entries[63] = {1, 0x0102};
  expect_bytes(encode(cct), {{1, 127}, {4, 0xFF}, {5, 0xFF}, {130, 0x41}, {131, 0x02}});
  // TimeStamp (32).
  expect_bytes(encode_time_stamp(0xDEADBEEF), {{0, 0xDE}, {1, 0xAD}, {2, 0xBE}, {3, 0xEF}});
}

TEST(CcWire, CongestionLogsOfBothKindsHaveTheirLayoutAndComeBack) {
  // Switch: LogType (8), CongestionFlags (8), LogEventsCounter (16), CurrentTimeStamp
  // (32), PortMap (256), then 15 entries of SLID (16), DLID (16), SL (4), reserved
  // (28), Timestamp (32).
  CongestionLog sw;
  sw.log_type = kLogSwitch;
  sw.congestion_flags = 1;
  sw.event_counter = 0x0102;
  sw.time_stamp = 0x0A0B0C0D;
  set_port_bit(sw.port_map, 3);
  sw.switch_entries = {{0x0011, 0x0022, 5, 0x01020304}};
  const LogData s = encode(sw);
  expect_bytes(s, {{0, 1},
                   {1, 1},
                   {2, 1},
                   {3, 2},
                   {4, 0x0A},
                   {5, 0x0B},
                   {6, 0x0C},
                   {7, 0x0D},
                   {39, 0x08},
                   {41, 0x11},
                   {43, 0x22},
                   {44, 0x50},
                   {48, 1},
                   {49, 2},
                   {50, 3},
                   {51, 4}});
  auto sb = decode_congestion_log(s);
  ASSERT_TRUE(sb) << sb.error().message;
  EXPECT_EQ(*sb, sw);
  // CA: LogType, CongestionFlags, ThresholdEventCounter (16), ThresholdCongestionEventMap
  // (16), reserved (16), CurrentTimeStamp (32), then 13 entries of Local_QP (24), SL (4),
  // Service_Type (4), Remote_QP (24), reserved (8), Local_LID (16), Remote_LID (16),
  // Timestamp (32).
  CongestionLog ca;
  ca.log_type = kLogCa;
  ca.event_counter = 7;
  ca.threshold_event_map = 0x8001;
  ca.time_stamp = 9;
  ca.ca_entries = {{0x123456, 3, 1, 0xABCDEF, 0x0010, 0x0020, 0x11223344}};
  const LogData c = encode(ca);
  expect_bytes(c, {{0, 2},
                   {3, 7},
                   {4, 0x80},
                   {5, 0x01},
                   {11, 9},
                   {12, 0x12},
                   {13, 0x34},
                   {14, 0x56},
                   {15, 0x31},
                   {16, 0xAB},
                   {17, 0xCD},
                   {18, 0xEF},
                   {21, 0x10},
                   {23, 0x20},
                   {24, 0x11},
                   {25, 0x22},
                   {26, 0x33},
                   {27, 0x44}});
  auto cb = decode_congestion_log(c);
  ASSERT_TRUE(cb) << cb.error().message;
  EXPECT_EQ(*cb, ca);
  // A full log: 15 and 13 entries, no more.
  sw.switch_entries.assign(20, SwitchLogEntry{1, 2, 3, 4});
  EXPECT_EQ(decode_congestion_log(encode(sw))->switch_entries.size(), kSwitchLogEntries);
  ca.ca_entries.assign(20, CaLogEntry{1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(decode_congestion_log(encode(ca))->ca_entries.size(), kCaLogEntries);
}

TEST(CcWire, EveryAttributeComesBackAsItWent) {
  std::mt19937_64 rng(7);
  auto byte = [&] { return static_cast<uint8_t>(rng()); };
  for (int round = 0; round < 50; ++round) {
    CongestionKeyInfo k{rng(), bool(rng() & 1), uint16_t(rng()), uint16_t(rng())};
    EXPECT_EQ(decode_congestion_key_info(encode(k)), k);
    SwitchCongestionSetting s;
    s.control_map = uint32_t(rng());
    for (auto& b : s.victim_mask) b = byte();
    for (auto& b : s.credit_mask) b = byte();
    s.threshold = byte() & 0xF;
    s.packet_size = byte();
    s.cs_threshold = byte() & 0xF;
    s.cs_return_delay = uint16_t(rng());
    s.marking_rate = uint16_t(rng());
    EXPECT_EQ(decode_switch_congestion_setting(encode(s)), s);
    SwitchPortCongestionBlock p;
    for (auto& e : p)
      e = {bool(rng() & 1), bool(rng() & 1), uint8_t(byte() & 0xF), byte(), uint16_t(rng())};
    EXPECT_EQ(decode_switch_port_congestion_block(encode(p)), p);
    CaCongestionSetting ca;
    ca.port_control = uint16_t(rng());
    ca.control_map = uint16_t(rng());
    for (auto& e : ca.sl) e = {uint16_t(rng()), byte(), byte(), byte()};
    EXPECT_EQ(decode_ca_congestion_setting(encode(ca)), ca);
    CongestionControlTableBlock t;
    t.ccti_limit = uint16_t(rng());
    for (auto& e : t.entries) e = {uint8_t(byte() & 3), uint16_t(rng() & 0x3FFF)};
    EXPECT_EQ(decode_cct_block(encode(t)), t);
    CongestionInfo i{uint16_t(rng()), byte()};
    EXPECT_EQ(decode_congestion_info(encode(i)), i);
  }
}

// Whatever a device sends decodes to something or to a clear error: a LogType that is
// neither a switch's nor a CA's is refused, naming it.
TEST(CcWire, AnyBytesDecodeOrFailClearly) {
  std::mt19937_64 rng(11);
  size_t refused = 0;
  for (int round = 0; round < 2000; ++round) {
    Data d;
    LogData l;
    for (auto& b : d) b = static_cast<uint8_t>(rng());
    for (auto& b : l) b = static_cast<uint8_t>(rng());
    if (round % 3 == 0) l[0] = static_cast<uint8_t>(1 + rng() % 2);
    (void)decode_congestion_info(d);
    (void)decode_congestion_key_info(d);
    (void)decode_switch_congestion_setting(d);
    (void)decode_switch_port_congestion_block(d);
    (void)decode_ca_congestion_setting(d);
    (void)decode_cct_block(d);
    (void)decode_time_stamp(d);
    auto log = decode_congestion_log(l);
    if (!log) {
      ++refused;
      EXPECT_NE(log.error().message.find("LogType " + std::to_string(l[0])), std::string::npos)
          << log.error().message;
    } else {
      EXPECT_TRUE(log->log_type == kLogSwitch || log->log_type == kLogCa);
    }
  }
  EXPECT_GT(refused, 0u);
}
