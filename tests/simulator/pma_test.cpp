#include <gtest/gtest.h>

#include "sim_sm.hpp"
#include "weft/perf/counters.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::perf;
using weft::testing::sim_of;

namespace {

PmaData get(uint8_t port) {
  PmaData d{};
  PortCounters pc;
  pc.port_select = port;
  encode_port_counters(pc, d);
  return d;
}

}  // namespace

// The simulator's PMA keeps saturating counters, answers a Get for one port or (on a
// switch) all of them summed, and a Set clears what CounterSelect names; a series over
// its reads counts across that clear. Errors injected past a counter's width saturate.
TEST(SimPma, CountsSaturatesClearsAndSums) {
  SimFabric sim = sim_of("ft2:leaves=2,spines=1,hosts=2");
  const auto leaf = *sim.model().find_by_name("leaf0");
  const auto host = *sim.model().find_by_name("h0-0");
  sim.count(leaf, 3, Counter::kSymbolErrors, 40);
  sim.count(leaf, 2, Counter::kSymbolErrors, 2);
  sim.count(leaf, 3, Counter::kLinkDowned, 1000);  // 8 bits: saturates at 255
  sim.count(leaf, 3, ExtCounter::kXmitData, 1ull << 40);

  PmaData d = get(3);
  ASSERT_EQ(sim.pma(false, kAttrPortCounters, leaf, 1, d), 0);
  PortCounters pc = decode_port_counters(d);
  EXPECT_EQ(pc[Counter::kSymbolErrors], 40u);
  EXPECT_EQ(pc[Counter::kLinkDowned], 255u);
  CounterSeries s;
  EXPECT_TRUE(s.add(pc).baseline);

  d = get(0xFF);  // every port of the switch, summed
  ASSERT_EQ(sim.pma(false, kAttrPortCounters, leaf, 1, d), 0);
  EXPECT_EQ(decode_port_counters(d)[Counter::kSymbolErrors], 42u);

  PmaData e{};
  PortCountersExt pce;
  pce.port_select = 3;
  encode_port_counters_ext(pce, e);
  ASSERT_EQ(sim.pma(false, kAttrPortCountersExt, leaf, 1, e), 0);
  EXPECT_EQ(decode_port_counters_ext(e)[ExtCounter::kXmitData], 1ull << 40);

  // Clear the saturated LinkDowned and SymbolErrors; the next errors count from zero.
  const uint32_t clear = bit(Counter::kLinkDowned) | bit(Counter::kSymbolErrors);
  d = clear_request(3, clear);
  ASSERT_EQ(sim.pma(true, kAttrPortCounters, leaf, 1, d), 0);
  EXPECT_EQ(decode_port_counters(d)[Counter::kLinkDowned], 0u);
  sim.count(leaf, 3, Counter::kLinkDowned, 2);
  sim.count(leaf, 3, Counter::kSymbolErrors, 5);
  d = get(3);
  ASSERT_EQ(sim.pma(false, kAttrPortCounters, leaf, 1, d), 0);
  const auto delta = s.add(decode_port_counters(d), clear);
  EXPECT_EQ(delta.counted[size_t(Counter::kLinkDowned)], 2u);
  EXPECT_EQ(delta.counted[size_t(Counter::kSymbolErrors)], 5u);
  EXPECT_EQ(delta.reset, 0u);
  EXPECT_EQ(sim.counters(leaf, 2)[Counter::kSymbolErrors], 2u);  // another port: untouched

  // A reset port: its counters read lower, and the series says so.
  sim.reset_counters(leaf, 3);
  d = get(3);
  ASSERT_EQ(sim.pma(false, kAttrPortCounters, leaf, 1, d), 0);
  EXPECT_EQ(s.add(decode_port_counters(d)).reset,
            bit(Counter::kLinkDowned) | bit(Counter::kSymbolErrors));

  // A CA answers only for the port asked on; unknown attributes are unsupported.
  d = get(2);
  EXPECT_EQ(sim.pma(false, kAttrPortCounters, host, 1, d), 0x1C);
  d = get(1);
  EXPECT_EQ(sim.pma(false, kAttrPortCounters, host, 1, d), 0);
  d = get(99);
  EXPECT_EQ(sim.pma(false, kAttrPortCounters, leaf, 1, d), 0x1C);
  EXPECT_EQ(sim.pma(false, 0x0016, leaf, 1, d), 0x0C);
}
