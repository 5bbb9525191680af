#include "weft/perf/counters.hpp"

#include <infiniband/mad.h>

#include <algorithm>

namespace weft::perf {

namespace {

// libibmad's PerfMgt fields (IB_PC_*, IB_CPI_*) address the PMA data area itself, as
// perfquery and ibsim's PMA use them. Its getters take a non-const pointer: reads go
// through a copy.
PmaData copy_of(std::span<const uint8_t, kPmaDataSize> data) {
  PmaData c;
  std::copy(data.begin(), data.end(), c.begin());
  return c;
}

struct Field {
  CounterInfo info;
  enum MAD_FIELDS field;
};
// Widths from IBTA 16.1.3.5 (PortCounters) and 16.1.4.11 (PortCountersExtended).
const Field kPc[kCounters] = {
    {{"SymbolErrorCounter", 16, true}, IB_PC_ERR_SYM_F},
    {{"LinkErrorRecoveryCounter", 8, true}, IB_PC_LINK_RECOVERS_F},
    {{"LinkDownedCounter", 8, true}, IB_PC_LINK_DOWNED_F},
    {{"PortRcvErrors", 16, true}, IB_PC_ERR_RCV_F},
    {{"PortRcvRemotePhysicalErrors", 16, true}, IB_PC_ERR_PHYSRCV_F},
    {{"PortRcvSwitchRelayErrors", 16, true}, IB_PC_ERR_SWITCH_REL_F},
    {{"PortXmitDiscards", 16, true}, IB_PC_XMT_DISCARDS_F},
    {{"PortXmitConstraintErrors", 8, true}, IB_PC_ERR_XMTCONSTR_F},
    {{"PortRcvConstraintErrors", 8, true}, IB_PC_ERR_RCVCONSTR_F},
    {{"LocalLinkIntegrityErrors", 4, true}, IB_PC_ERR_LOCALINTEG_F},
    {{"ExcessiveBufferOverrunErrors", 4, true}, IB_PC_ERR_EXCESS_OVR_F},
    {{"VL15Dropped", 16, true}, IB_PC_VL15_DROPPED_F},
    {{"PortXmitData", 32, false}, IB_PC_XMT_BYTES_F},
    {{"PortRcvData", 32, false}, IB_PC_RCV_BYTES_F},
    {{"PortXmitPkts", 32, false}, IB_PC_XMT_PKTS_F},
    {{"PortRcvPkts", 32, false}, IB_PC_RCV_PKTS_F},
    {{"PortXmitWait", 32, false}, IB_PC_XMT_WAIT_F},
};
const Field kExt[kExtCounters] = {
    {{"PortXmitData", 64, false}, IB_PC_EXT_XMT_BYTES_F},
    {{"PortRcvData", 64, false}, IB_PC_EXT_RCV_BYTES_F},
    {{"PortXmitPkts", 64, false}, IB_PC_EXT_XMT_PKTS_F},
    {{"PortRcvPkts", 64, false}, IB_PC_EXT_RCV_PKTS_F},
    {{"PortUnicastXmitPkts", 64, false}, IB_PC_EXT_XMT_UPKTS_F},
    {{"PortUnicastRcvPkts", 64, false}, IB_PC_EXT_RCV_UPKTS_F},
    {{"PortMulticastXmitPkts", 64, false}, IB_PC_EXT_XMT_MPKTS_F},
    {{"PortMulticastRcvPkts", 64, false}, IB_PC_EXT_RCV_MPKTS_F},
};

template <size_t N>
std::array<unsigned, N> widths(const Field (&f)[N]) {
  std::array<unsigned, N> w{};
  for (size_t i = 0; i < N; ++i) w[i] = f[i].info.bits;
  return w;
}

}  // namespace

const CounterInfo& info(Counter c) {
  return kPc[size_t(c)].info;
}
const CounterInfo& info(ExtCounter c) {
  return kExt[size_t(c)].info;
}

namespace {

// One attribute's counters, read or written through its field table: 64-bit fields by
// libibmad's 64-bit accessors, narrower ones saturated at their width.
template <size_t N>
uint8_t read(std::span<const uint8_t, kPmaDataSize> data, enum MAD_FIELDS port_select,
             const Field (&fields)[N], std::array<uint64_t, N>& value) {
  PmaData c = copy_of(data);
  for (size_t i = 0; i < N; ++i)
    value[i] = fields[i].info.bits == 64 ? mad_get_field64(c.data(), 0, fields[i].field)
                                         : mad_get_field(c.data(), 0, fields[i].field);
  return static_cast<uint8_t>(mad_get_field(c.data(), 0, port_select));
}

template <size_t N>
void write(uint8_t select, const std::array<uint64_t, N>& value, enum MAD_FIELDS port_select,
           const Field (&fields)[N], std::span<uint8_t, kPmaDataSize> data) {
  mad_set_field(data.data(), 0, port_select, select);
  for (size_t i = 0; i < N; ++i) {
    if (fields[i].info.bits == 64)
      mad_set_field64(data.data(), 0, fields[i].field, value[i]);
    else
      mad_set_field(data.data(), 0, fields[i].field,
                    static_cast<uint32_t>(std::min(value[i], max_of(fields[i].info.bits))));
  }
}

}  // namespace

PortCounters decode_port_counters(std::span<const uint8_t, kPmaDataSize> data) {
  PortCounters pc;
  pc.port_select = read(data, IB_PC_PORT_SELECT_F, kPc, pc.value);
  return pc;
}

void encode_port_counters(const PortCounters& pc, std::span<uint8_t, kPmaDataSize> data) {
  write(pc.port_select, pc.value, IB_PC_PORT_SELECT_F, kPc, data);
}

PortCountersExt decode_port_counters_ext(std::span<const uint8_t, kPmaDataSize> data) {
  PortCountersExt pc;
  pc.port_select = read(data, IB_PC_EXT_PORT_SELECT_F, kExt, pc.value);
  return pc;
}

void encode_port_counters_ext(const PortCountersExt& pc, std::span<uint8_t, kPmaDataSize> data) {
  write(pc.port_select, pc.value, IB_PC_EXT_PORT_SELECT_F, kExt, data);
}

PmaData clear_request(uint8_t port, uint32_t mask) {
  // As libibmad's performance_reset_via writes it: CounterSelect the low 16 bits,
  // CounterSelect2 the rest (PortXmitWait).
  PmaData d{};
  uint8_t* mad = d.data();
  mask &= kAllCounters;
  mad_set_field(mad, 0, IB_PC_PORT_SELECT_F, port);
  mad_set_field(mad, 0, IB_PC_COUNTER_SELECT_F, mask & 0xFFFF);
  mad_set_field(mad, 0, IB_PC_COUNTER_SELECT2_F, mask >> 16);
  return d;
}

uint32_t cleared_by(std::span<const uint8_t, kPmaDataSize> data) {
  PmaData c = copy_of(data);
  uint8_t* mad = c.data();
  const uint32_t select = mad_get_field(mad, 0, IB_PC_COUNTER_SELECT_F);
  const uint32_t select2 = mad_get_field(mad, 0, IB_PC_COUNTER_SELECT2_F);
  return select | (select2 ? bit(Counter::kXmitWait) : 0);
}

PmaCapabilities decode_class_port_info(std::span<const uint8_t, kPmaDataSize> data) {
  PmaData c = copy_of(data);
  return {static_cast<uint16_t>(mad_get_field(c.data(), 0, IB_CPI_CAPMASK_F))};
}

void encode_class_port_info(PmaCapabilities caps, std::span<uint8_t, kPmaDataSize> data) {
  std::fill(data.begin(), data.end(), uint8_t{0});
  mad_set_field(data.data(), 0, IB_CPI_BASEVER_F, 1);
  mad_set_field(data.data(), 0, IB_CPI_CLASSVER_F, 1);
  mad_set_field(data.data(), 0, IB_CPI_CAPMASK_F, caps.mask);
  mad_set_field(data.data(), 0, IB_CPI_RESP_TIME_VALUE_F, 18);
}

template <size_t N>
Delta<N> Series<N>::add(const std::array<uint64_t, N>& now, uint32_t cleared) {
  Delta<N> d;
  if (!last_) {
    d.baseline = true;
    last_ = now;
    return d;
  }
  for (size_t i = 0; i < N; ++i) {
    const uint64_t top = max_of(bits_[i]);
    const uint64_t was = (cleared >> i & 1) ? 0 : (*last_)[i];
    const uint64_t is = std::min(now[i], top);
    if (is >= was) {
      d.counted[i] = is - was;
    } else {  // lower than before and not ours to clear: cleared elsewhere, or reset
      d.counted[i] = is;
      d.reset |= 1u << i;
    }
    if (bits_[i] < 64 && is == top) d.saturated |= 1u << i;
    totals_[i] += d.counted[i];
  }
  last_ = now;
  return d;
}

template <size_t N>
uint32_t Series<N>::due_for_clear(unsigned percent) const {
  uint32_t due = 0;
  if (!last_) return due;
  for (size_t i = 0; i < N; ++i) {
    if (bits_[i] >= 64) continue;  // 2^64 four-octet words: never in a port's life
    const uint64_t top = max_of(bits_[i]);
    if ((*last_)[i] >= top / 100 * percent + top % 100 * percent / 100) due |= 1u << i;
  }
  return due;
}

template class Series<kCounters>;
template class Series<kExtCounters>;

CounterSeries::CounterSeries() : Series(widths(kPc)) {}
ExtCounterSeries::ExtCounterSeries() : Series(widths(kExt)) {}

}  // namespace weft::perf
