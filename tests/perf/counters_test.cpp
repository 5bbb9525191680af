#include "weft/perf/counters.hpp"

#include <gtest/gtest.h>

using namespace weft::perf;

namespace {

void put(PmaData& d, size_t at, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) d[at + i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}

}  // namespace

// The PMA data area written byte by byte as IBTA 16.1.3.5 lays PortCounters out
// (big-endian; LocalLinkIntegrity and ExcessiveBufferOverrun share byte 19), not with
// libibmad: the decode through libibmad's field table must read it back.
TEST(PerfCounters, PortCountersDecodeTheIbtaLayout) {
  PmaData d{};
  d[1] = 7;                   // PortSelect
  put(d, 4, 0x1234, 2);       // SymbolErrorCounter
  d[6] = 0x56;                // LinkErrorRecoveryCounter
  d[7] = 0x78;                // LinkDownedCounter
  put(d, 8, 0x9abc, 2);       // PortRcvErrors
  put(d, 10, 0x0102, 2);      // PortRcvRemotePhysicalErrors
  put(d, 12, 0x0304, 2);      // PortRcvSwitchRelayErrors
  put(d, 14, 0x0506, 2);      // PortXmitDiscards
  d[16] = 0x07;               // PortXmitConstraintErrors
  d[17] = 0x08;               // PortRcvConstraintErrors
  d[19] = 0xA5;               // LocalLinkIntegrity 0xA, ExcessiveBufferOverrun 0x5
  put(d, 22, 0xBEEF, 2);      // VL15Dropped
  put(d, 24, 0x11223344, 4);  // PortXmitData
  put(d, 28, 0x55667788, 4);  // PortRcvData
  put(d, 32, 0x99aabbcc, 4);  // PortXmitPkts
  put(d, 36, 0xddeeff00, 4);  // PortRcvPkts
  put(d, 40, 0x0badcafe, 4);  // PortXmitWait
  const PortCounters pc = decode_port_counters(d);
  EXPECT_EQ(pc.port_select, 7);
  EXPECT_EQ(pc[Counter::kSymbolErrors], 0x1234u);
  EXPECT_EQ(pc[Counter::kLinkErrorRecovery], 0x56u);
  EXPECT_EQ(pc[Counter::kLinkDowned], 0x78u);
  EXPECT_EQ(pc[Counter::kRcvErrors], 0x9abcu);
  EXPECT_EQ(pc[Counter::kRcvRemotePhysicalErrors], 0x0102u);
  EXPECT_EQ(pc[Counter::kRcvSwitchRelayErrors], 0x0304u);
  EXPECT_EQ(pc[Counter::kXmitDiscards], 0x0506u);
  EXPECT_EQ(pc[Counter::kXmitConstraintErrors], 0x07u);
  EXPECT_EQ(pc[Counter::kRcvConstraintErrors], 0x08u);
  EXPECT_EQ(pc[Counter::kLocalLinkIntegrityErrors], 0xAu);
  EXPECT_EQ(pc[Counter::kExcessiveBufferOverrunErrors], 0x5u);
  EXPECT_EQ(pc[Counter::kVl15Dropped], 0xBEEFu);
  EXPECT_EQ(pc[Counter::kXmitData], 0x11223344u);
  EXPECT_EQ(pc[Counter::kRcvData], 0x55667788u);
  EXPECT_EQ(pc[Counter::kXmitPkts], 0x99aabbccu);
  EXPECT_EQ(pc[Counter::kRcvPkts], 0xddeeff00u);
  EXPECT_EQ(pc[Counter::kXmitWait], 0x0badcafeu);
  // And written back the same, byte for byte.
  PmaData back{};
  encode_port_counters(pc, back);
  EXPECT_EQ(back, d);
}

TEST(PerfCounters, ExtendedCountersAndCapabilitiesDecodeTheIbtaLayout) {
  PmaData d{};
  d[1] = 3;
  for (size_t i = 0; i < kExtCounters; ++i) put(d, 8 + 8 * i, 0x0102030405060700ull + i, 8);
  const PortCountersExt pc = decode_port_counters_ext(d);
  EXPECT_EQ(pc.port_select, 3);
  EXPECT_EQ(pc[ExtCounter::kXmitData], 0x0102030405060700ull);
  EXPECT_EQ(pc[ExtCounter::kRcvPkts], 0x0102030405060703ull);
  EXPECT_EQ(pc[ExtCounter::kMulticastRcvPkts], 0x0102030405060707ull);
  PmaData back{};
  encode_port_counters_ext(pc, back);
  EXPECT_EQ(back, d);

  PmaData cpi{};
  put(cpi, 2, (1u << 9) | (1u << 12), 2);  // CapabilityMask: extended counters, XmitWait
  const PmaCapabilities caps = decode_class_port_info(cpi);
  EXPECT_TRUE(caps.extended());
  EXPECT_TRUE(caps.xmit_wait());
  EXPECT_FALSE(caps.extended_data_only());
  EXPECT_FALSE(caps.all_port_select());
}

// A Set that clears SymbolErrorCounter and PortXmitWait: CounterSelect bit 0, and
// CounterSelect2 (byte 18) for PortXmitWait, as libibmad's performance_reset_via
// writes it.
TEST(PerfCounters, AClearRequestSelectsItsCounters) {
  const PmaData d = clear_request(5, bit(Counter::kSymbolErrors) | bit(Counter::kXmitWait));
  EXPECT_EQ(d[1], 5);
  EXPECT_EQ(d[2], 0x00);
  EXPECT_EQ(d[3], 0x01);
  EXPECT_EQ(d[18], 0x01);
  EXPECT_EQ(cleared_by(d), bit(Counter::kSymbolErrors) | bit(Counter::kXmitWait));
  EXPECT_EQ(cleared_by(clear_request(1, kAllCounters)), kAllCounters);
  EXPECT_EQ(cleared_by(clear_request(1, bit(Counter::kRcvPkts))), bit(Counter::kRcvPkts));
}

TEST(PerfCounters, ValuesPastAWidthAreWrittenSaturated) {
  PortCounters pc;
  pc.value[size_t(Counter::kLocalLinkIntegrityErrors)] = 99;  // 4 bits
  pc.value[size_t(Counter::kSymbolErrors)] = 70000;           // 16 bits
  PmaData d{};
  encode_port_counters(pc, d);
  const PortCounters back = decode_port_counters(d);
  EXPECT_EQ(back[Counter::kLocalLinkIntegrityErrors], 15u);
  EXPECT_EQ(back[Counter::kSymbolErrors], 65535u);
  EXPECT_EQ(back[Counter::kExcessiveBufferOverrunErrors], 0u);  // its nibble untouched
}

// Deltas with the counters' semantics: a baseline first, plain differences, a
// saturated counter as a lower bound, a clear before saturation counted across, a
// counter that went down without a clear (someone else's, or a reset) counted from
// zero and flagged, and a new series after restart().
TEST(PerfCounters, SeriesCountAcrossClearsSaturationAndResets) {
  CounterSeries s;
  PortCounters pc;
  auto at = [&](Counter c) -> uint64_t& { return pc.value[size_t(c)]; };
  at(Counter::kSymbolErrors) = 100;
  at(Counter::kXmitData) = 1000;
  EXPECT_TRUE(s.add(pc).baseline);

  at(Counter::kSymbolErrors) = 150;
  at(Counter::kXmitData) = 5000;
  auto d = s.add(pc);
  EXPECT_FALSE(d.baseline);
  EXPECT_EQ(d.counted[size_t(Counter::kSymbolErrors)], 50u);
  EXPECT_EQ(d.counted[size_t(Counter::kXmitData)], 4000u);
  EXPECT_EQ(d.saturated, 0u);
  EXPECT_EQ(d.reset, 0u);
  EXPECT_EQ(s.due_for_clear(), 0u);

  // Past 75 % of 16 bits: due for a clear; weft clears it, the next read counts from 0.
  at(Counter::kSymbolErrors) = 50000;
  s.add(pc);
  EXPECT_EQ(s.due_for_clear(), bit(Counter::kSymbolErrors));
  at(Counter::kSymbolErrors) = 7;
  d = s.add(pc, bit(Counter::kSymbolErrors));
  EXPECT_EQ(d.counted[size_t(Counter::kSymbolErrors)], 7u);
  EXPECT_EQ(d.reset, 0u);
  EXPECT_EQ(s.totals()[size_t(Counter::kSymbolErrors)], 50u + 49850u + 7u);

  // Saturated: a lower bound, and flagged.
  at(Counter::kLinkDowned) = 255;
  d = s.add(pc);
  EXPECT_EQ(d.counted[size_t(Counter::kLinkDowned)], 255u);
  EXPECT_EQ(d.saturated, bit(Counter::kLinkDowned));
  d = s.add(pc);
  EXPECT_EQ(d.counted[size_t(Counter::kLinkDowned)], 0u);
  EXPECT_EQ(d.saturated, bit(Counter::kLinkDowned));

  // Down without a clear of weft's: counted from zero, flagged.
  at(Counter::kXmitData) = 300;
  d = s.add(pc);
  EXPECT_EQ(d.counted[size_t(Counter::kXmitData)], 300u);
  EXPECT_EQ(d.reset, bit(Counter::kXmitData));

  // The port vanished and came back: a new series.
  s.restart();
  EXPECT_TRUE(s.add(pc).baseline);
  EXPECT_EQ(s.totals()[size_t(Counter::kSymbolErrors)], 0u);
}

TEST(PerfCounters, ExtendedSeriesNeverNeedAClear) {
  ExtCounterSeries s;
  PortCountersExt pc;
  pc.value[0] = ~0ull - 10;
  s.add(pc);
  EXPECT_EQ(s.due_for_clear(0), 0u);
  pc.value[0] = ~0ull;
  const auto d = s.add(pc);
  EXPECT_EQ(d.counted[0], 10u);
  EXPECT_EQ(d.saturated, 0u);  // 64 bits: the maximum is a value, not a cap
}
