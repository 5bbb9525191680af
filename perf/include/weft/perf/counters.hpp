// weft/perf/counters.hpp — PerformanceManagement (class 0x04) port counters: the
// PortCounters and PortCountersExtended attributes and the PMA's ClassPortInfo
// capabilities through libibmad's field tables (IBTA 16.1.3), and what two reads of
// one port mean: the counts between them, with the counters' real semantics.
//
//   PortCounters pc = decode_port_counters(reply_data);      // the 192-byte PMA area
//   CounterSeries s;  Delta d = s.add(pc);                   // first read: a baseline
//   uint32_t clear = s.due_for_clear();                      // near saturation
//   PmaData set = clear_request(port, clear);                // a Set that zeroes them
//   d = s.add(next, clear);                                  // counted across the clear
//
// PortCounters' counters are 4 to 32 bits wide and saturate (they stop at their
// maximum, they never wrap): a counter at its maximum says "at least this many",
// so a series clears counters before they get there and counts on from zero.
// PortCountersExtended's are 64 bits. A counter that reads lower than before was
// cleared by someone else or the port was reset: it counts from zero, and says so.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace weft::perf {

constexpr uint8_t kClassPerf = 0x04;
constexpr uint16_t kAttrClassPortInfo = 0x0001;
constexpr uint16_t kAttrPortCounters = 0x0012;
constexpr uint16_t kAttrPortCountersExt = 0x001D;
constexpr size_t kPmaDataOffset =
    64;  // a GMP's data area: after the 24-byte header and 40 reserved
constexpr size_t kPmaDataSize = 192;
using PmaData = std::array<uint8_t, kPmaDataSize>;

// PortCounters, in the order of their CounterSelect bits (bit i clears counter i;
// PortXmitWait, the last, is cleared by CounterSelect2).
enum class Counter : uint8_t {
  kSymbolErrors,
  kLinkErrorRecovery,
  kLinkDowned,
  kRcvErrors,
  kRcvRemotePhysicalErrors,
  kRcvSwitchRelayErrors,
  kXmitDiscards,
  kXmitConstraintErrors,
  kRcvConstraintErrors,
  kLocalLinkIntegrityErrors,
  kExcessiveBufferOverrunErrors,
  kVl15Dropped,
  kXmitData,  // in units of 4 octets
  kRcvData,   // in units of 4 octets
  kXmitPkts,
  kRcvPkts,
  kXmitWait,  // ticks a port had data to send and no credit
};
constexpr size_t kCounters = 17;

// PortCountersExtended's 64-bit counters.
enum class ExtCounter : uint8_t {
  kXmitData,  // in units of 4 octets
  kRcvData,
  kXmitPkts,
  kRcvPkts,
  kUnicastXmitPkts,
  kUnicastRcvPkts,
  kMulticastXmitPkts,
  kMulticastRcvPkts,
};
constexpr size_t kExtCounters = 8;

struct CounterInfo {
  std::string_view name;  // as OpenSM's PerfMgr and perfquery name it
  unsigned bits;
  bool error;  // an error counter (link health), not a traffic one
};
const CounterInfo& info(Counter c);
const CounterInfo& info(ExtCounter c);
constexpr uint64_t max_of(unsigned bits) {
  return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

struct PortCounters {
  uint8_t port_select = 0;
  std::array<uint64_t, kCounters> value{};
  uint64_t operator[](Counter c) const { return value[size_t(c)]; }
};
struct PortCountersExt {
  uint8_t port_select = 0;
  std::array<uint64_t, kExtCounters> value{};
  uint64_t operator[](ExtCounter c) const { return value[size_t(c)]; }
};

PortCounters decode_port_counters(std::span<const uint8_t, kPmaDataSize> data);
// Values past a counter's width are stored at its maximum (it saturates).
void encode_port_counters(const PortCounters& pc, std::span<uint8_t, kPmaDataSize> data);
PortCountersExt decode_port_counters_ext(std::span<const uint8_t, kPmaDataSize> data);
void encode_port_counters_ext(const PortCountersExt& pc, std::span<uint8_t, kPmaDataSize> data);

// Bit i of a mask is Counter i (bits past kCounters are ignored).
constexpr uint32_t bit(Counter c) {
  return 1u << unsigned(c);
}
constexpr uint32_t kAllCounters = (1u << kCounters) - 1;
// The data of a PortCounters Set that zeroes `mask`'s counters of `port`.
PmaData clear_request(uint8_t port, uint32_t mask);
// The counters a PortCounters Set clears (what clear_request wrote).
uint32_t cleared_by(std::span<const uint8_t, kPmaDataSize> data);

// What a PMA says it supports (ClassPortInfo CapabilityMask; IBTA 16.1.3.1).
struct PmaCapabilities {
  uint16_t mask = 0;
  bool all_port_select() const { return mask >> 8 & 1; }
  // PortCountersExtended with all eight counters, or only the four data ones.
  bool extended() const { return mask >> 9 & 1; }
  bool extended_data_only() const { return mask >> 10 & 1; }
  bool xmit_wait() const { return mask >> 12 & 1; }
};
PmaCapabilities decode_class_port_info(std::span<const uint8_t, kPmaDataSize> data);
// A ClassPortInfo answer (base and class version 1, the capability mask, the default
// response time); the simulator's PMA gives it.
void encode_class_port_info(PmaCapabilities caps, std::span<uint8_t, kPmaDataSize> data);

// The counts between two reads of a port.
template <size_t N>
struct Delta {
  bool baseline = false;  // the first read of a series: no counts yet
  std::array<uint64_t, N> counted{};
  uint32_t saturated = 0;  // bit i: counter i is at its maximum, counted[i] a lower bound
  uint32_t reset = 0;      // bit i: counter i went down with no clear of weft's (counted from 0)
};

// The reads of one port. A port that vanishes and returns starts a new series
// (restart()): its counts before and after are not joined.
template <size_t N>
class Series {
 public:
  explicit Series(const std::array<unsigned, N>& bits) : bits_(bits) {}
  // A read; `cleared` the counters a Set zeroed since the previous read.
  Delta<N> add(const std::array<uint64_t, N>& now, uint32_t cleared = 0);
  // The counters at or past `percent` of their maximum in the last read.
  uint32_t due_for_clear(unsigned percent = 75) const;
  // Everything counted since the series started (saturated counts as their bound).
  const std::array<uint64_t, N>& totals() const { return totals_; }
  const std::optional<std::array<uint64_t, N>>& last() const { return last_; }
  void restart() { last_.reset(), totals_ = {}; }

 private:
  std::array<unsigned, N> bits_;
  std::optional<std::array<uint64_t, N>> last_;
  std::array<uint64_t, N> totals_{};
};

class CounterSeries : public Series<kCounters> {
 public:
  CounterSeries();
  Delta<kCounters> add(const PortCounters& now, uint32_t cleared = 0) {
    return Series::add(now.value, cleared);
  }
};
class ExtCounterSeries : public Series<kExtCounters> {
 public:
  ExtCounterSeries();
  Delta<kExtCounters> add(const PortCountersExt& now, uint32_t cleared = 0) {
    return Series::add(now.value, cleared);
  }
};

}  // namespace weft::perf
