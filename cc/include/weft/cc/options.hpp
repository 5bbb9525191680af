// weft/cc/options.hpp — what congestion control programs, from OpenSM's options read as
// OpenSM reads them (osm_subnet.c's parsers): congestion_control, cc_key,
// cc_max_outstanding_mads, cc_sw_cong_setting_* (the 256-bit masks as big hex numbers,
// the return delay SHIFT:MULTIPLIER), cc_ca_cong_setting_* (the per-SL four one line
// per SL, "SL VALUE") and cc_cct (SHIFT:MULTIPLIER,...). Bad values are errors naming
// where they were set; OpenSM logs and ignores them.
//
//   auto o = cc::cc_from_options(values);   // Result<CcOptions>
//   cc::SwitchCongestionSetting s = o->sw;  // as the Set carries it
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "weft/cc/wire.hpp"
#include "weft/config/options.hpp"
#include "weft/fabric/fabric.hpp"
#include "weft/result.hpp"

namespace weft::cc {

struct CcOptions {
  bool enabled = false;
  uint64_t key = 0;  // 0: no CC_Key set
  // The key's protection as weft sets it with a key: protect bit on, a 60 s lease
  // (NVIDIA's SM's defaults for cc_key_protect_bit and cc_key_lease_period).
  bool key_protect = true;
  uint16_t key_lease_period = 60;
  uint32_t max_outstanding = 500;
  // cc_log_interval_s (weft's own): how often the logs are read; 0: never.
  std::chrono::seconds log_interval{60};
  SwitchCongestionSetting sw;  // Control_Map and every field as OpenSM sends them
  CaCongestionSetting ca;      // Port_Control, Control_Map and the per-SL entries
  std::vector<CctEntry> cct;   // cc_cct; empty: one block with CCTI_Limit 0, as OpenSM
  // cc_cct_max_delay_ns and cc_cct_limit (weft's own): with cc_cct empty and a delay set,
  // each CA port gets a table made for its link (generate_cct).
  uint32_t cct_max_delay_ns = 0;
  uint16_t cct_limit = 127;
  bool generates_cct() const { return cct.empty() && cct_max_delay_ns != 0; }
  // The CongestionControlTable blocks a CA port gets: ceil(entries / 64), at least one,
  // their CCTI_Limit the last entry's index (0 without entries); for a port whose
  // ControlTableCap is `cap` blocks, cut to them (and the limit to their last entry).
  // A generated table is made for `packet_ns` (packet_time_ns; 0: not known, and then
  // OpenSM's one block with CCTI_Limit 0) with its limit within the cap, so that its
  // last entry is the whole delay.
  std::vector<CongestionControlTableBlock> cct_blocks(size_t cap = SIZE_MAX,
                                                      double packet_ns = 0) const;
  // Every switch port's SwitchPortCongestionSetting element (weft's choice: OpenSM sends
  // none): valid, congestion parameters (not credit starvation), the switch-wide
  // threshold, packet size and marking rate.
  SwitchPortCongestionElement port_element() const;
};

Result<CcOptions> cc_from_options(const config::Values& v);

// The time a port takes to send one packet of its MTU (fabric::link_mtu) with 40 bytes of
// headers at its data rate (fabric::data_gbps), in ns; 0 when the port does not say.
double packet_time_ns(const fabric::PortAttrs& a);
// A congestion control table of limit + 1 entries whose inter-packet delay rises evenly
// from none (entry 0) to `max_delay_ns` (the last). An entry's delay is its multiplier
// times the packet time, shifted right by its shift (the reading Cornelis' fabric manager
// gives the same two fields of its CCT, STL vol. 1 17.3.12); every entry has the largest
// shift (at most 3) that keeps the last multiplier within 14 bits; a delay too long for
// shift 0 gets the largest multiplier (0x3FFF).
std::vector<CctEntry> generate_cct(uint32_t max_delay_ns, uint16_t limit, double packet_ns);

// The parsers, for their tests: a 256-bit mask as a big hex number ("0x" optional, up
// to 64 digits); SHIFT:MULTIPLIER (shift 0..3, multiplier 0..16383); a table of them
// separated by commas (at most 128 entries).
Result<Mask256> parse_mask256(const std::string& s);
Result<CctEntry> parse_cct_entry(const std::string& s);
Result<std::vector<CctEntry>> parse_cct(const std::string& s);

}  // namespace weft::cc
