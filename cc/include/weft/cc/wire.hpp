// weft/cc/wire.hpp — Congestion Control (management class 0x21, IBTA vol. 1 Annex A10) on
// the wire: the CC MAD's layout (CC_Key, the log data area, the data area) and its
// attributes, field by field through libibmad's field tables (IB_CC_*), the ones
// ibccquery and ibccconfig use.
//
//   mad::Gmp req = cc::request(mad::kMethodSet, cc::kAttrCaCongestionSetting, 0, key,
//                              cc::encode(setting));
//   auto reply = mad::decode_gmp(buf, len);              // the engine matches it
//   auto got = cc::decode_ca_congestion_setting(cc::data_of(*reply));
//
// Every attribute but CongestionLog lives in the 192-byte data area at MAD byte 64;
// CongestionLog in the 224-byte log data area at byte 32. The CC_Key is at byte 24.
// 256-bit masks (VictimMask, CreditMask, PortMap) are kept as their 32 wire bytes, a
// big-endian number whose bit i stands for port i (as OpenSM's 256-bit hex options
// write them); port_bit / set_port_bit read and write them.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "weft/mad/mad.hpp"
#include "weft/result.hpp"

namespace weft::cc {

constexpr uint8_t kClassCc = 0x21;
constexpr uint8_t kClassVersion = 2;  // Annex A10's class version
constexpr uint16_t kAttrClassPortInfo = 0x0001;
constexpr uint16_t kAttrCongestionInfo = 0x0011;
constexpr uint16_t kAttrCongestionKeyInfo = 0x0012;
constexpr uint16_t kAttrCongestionLog = 0x0013;
constexpr uint16_t kAttrSwitchCongestionSetting = 0x0014;
constexpr uint16_t kAttrSwitchPortCongestionSetting = 0x0015;
constexpr uint16_t kAttrCaCongestionSetting = 0x0016;
constexpr uint16_t kAttrCongestionControlTable = 0x0017;
constexpr uint16_t kAttrTimeStamp = 0x0018;
const char* attr_name(uint16_t attr);

constexpr size_t kKeyOffset = 24;  // CC_Key, in the MAD
constexpr size_t kLogDataOffset = 32, kLogDataSize = 224;
constexpr size_t kDataOffset = 64, kDataSize = 192;
using Data = std::array<uint8_t, kDataSize>;
using LogData = std::array<uint8_t, kLogDataSize>;

// A CC GMP: class 0x21, version 2, the key in its place, `area` (Data or LogData, by the
// attribute) in its area.
mad::Gmp request(uint8_t method, uint16_t attr, uint32_t mod, uint64_t cc_key,
                 std::span<const uint8_t> area);
uint64_t key_of(const mad::Gmp& g);
Data data_of(const mad::Gmp& g);
LogData log_of(const mad::Gmp& g);

using Mask256 = std::array<uint8_t, 32>;
bool port_bit(const Mask256& m, unsigned port);
void set_port_bit(Mask256& m, unsigned port, bool on = true);

// CongestionInfo (A10.4.3.3): Get only.
struct CongestionInfo {
  uint16_t info = 0;              // CongestionInfo's flags as the device gives them
  uint8_t control_table_cap = 0;  // CongestionControlTable blocks (64 entries each)
  bool operator==(const CongestionInfo&) const = default;
};
CongestionInfo decode_congestion_info(const Data& d);
Data encode(const CongestionInfo& v);

// CongestionKeyInfo (A10.4.3.4).
struct CongestionKeyInfo {
  uint64_t cc_key = 0;
  bool protect = false;       // CC_KeyProtectBit
  uint16_t lease_period = 0;  // seconds; 0: infinite
  uint16_t violations = 0;    // CC_KeyViolations
  bool operator==(const CongestionKeyInfo&) const = default;
};
CongestionKeyInfo decode_congestion_key_info(const Data& d);
Data encode(const CongestionKeyInfo& v);

// SwitchCongestionSetting (A10.4.3.6).
struct SwitchCongestionSetting {
  uint32_t control_map = 0;  // which of the fields below the Set applies
  Mask256 victim_mask{};
  Mask256 credit_mask{};
  uint8_t threshold = 0;     // 4 bits
  uint8_t packet_size = 0;   // credits (64 bytes)
  uint8_t cs_threshold = 0;  // 4 bits
  uint16_t cs_return_delay = 0;
  uint16_t marking_rate = 0;
  bool operator==(const SwitchCongestionSetting&) const = default;
};
SwitchCongestionSetting decode_switch_congestion_setting(const Data& d);
Data encode(const SwitchCongestionSetting& v);

// SwitchPortCongestionSetting (A10.4.3.7): 32 ports a block, the modifier the block.
struct SwitchPortCongestionElement {
  bool valid = false;
  bool control_type = false;  // 0: congestion parameters, 1: credit starvation
  uint8_t threshold = 0;      // 4 bits
  uint8_t packet_size = 0;
  uint16_t marking_rate = 0;
  bool operator==(const SwitchPortCongestionElement&) const = default;
};
constexpr size_t kPortsPerBlock = 32;
// The blocks a switch of `ports` ports holds (block 0: ports 0-31, port 0 included).
constexpr size_t port_blocks(unsigned ports) {
  return ports / kPortsPerBlock + 1;
}
using SwitchPortCongestionBlock = std::array<SwitchPortCongestionElement, kPortsPerBlock>;
SwitchPortCongestionBlock decode_switch_port_congestion_block(const Data& d);
Data encode(const SwitchPortCongestionBlock& v);

// CACongestionSetting (A10.4.3.8): an entry per SL.
struct CaCongestionEntry {
  uint16_t ccti_timer = 0;
  uint8_t ccti_increase = 0;
  uint8_t trigger_threshold = 0;
  uint8_t ccti_min = 0;
  bool operator==(const CaCongestionEntry&) const = default;
};
struct CaCongestionSetting {
  uint16_t port_control = 0;
  uint16_t control_map = 0;  // bit i: SL i's entry applies
  std::array<CaCongestionEntry, 16> sl{};
  bool operator==(const CaCongestionSetting&) const = default;
};
CaCongestionSetting decode_ca_congestion_setting(const Data& d);
Data encode(const CaCongestionSetting& v);

// CongestionControlTable (A10.4.3.9): 64 entries a block, the modifier the block.
struct CctEntry {
  uint8_t shift = 0;        // 2 bits
  uint16_t multiplier = 0;  // 14 bits
  bool operator==(const CctEntry&) const = default;
};
constexpr size_t kCctEntriesPerBlock = 64;
struct CongestionControlTableBlock {
  uint16_t ccti_limit = 0;  // the highest CCTI in use (the table's last entry)
  std::array<CctEntry, kCctEntriesPerBlock> entries{};
  bool operator==(const CongestionControlTableBlock&) const = default;
};
CongestionControlTableBlock decode_cct_block(const Data& d);
Data encode(const CongestionControlTableBlock& v);

// CongestionLog (A10.4.3.5): a switch's (LogType 1) or a CA's (LogType 2). Reading it
// clears it on the device. Empty (all-zero) entries are left out.
constexpr uint8_t kLogSwitch = 1, kLogCa = 2;
struct SwitchLogEntry {
  uint16_t slid = 0, dlid = 0;
  uint8_t sl = 0;
  uint32_t timestamp = 0;
  bool operator==(const SwitchLogEntry&) const = default;
};
struct CaLogEntry {
  uint32_t local_qp = 0;  // 24 bits
  uint8_t sl = 0;
  uint8_t service_type = 0;
  uint32_t remote_qp = 0;  // 24 bits
  uint16_t local_lid = 0, remote_lid = 0;
  uint32_t timestamp = 0;
  bool operator==(const CaLogEntry&) const = default;
};
constexpr size_t kSwitchLogEntries = 15, kCaLogEntries = 13;
struct CongestionLog {
  uint8_t log_type = kLogSwitch;
  uint8_t congestion_flags = 0;
  uint16_t event_counter = 0;        // switch: LogEventsCounter; CA: ThresholdEventCounter
  uint16_t threshold_event_map = 0;  // CA: ThresholdCongestionEventMap (per SL)
  uint32_t time_stamp = 0;           // CurrentTimeStamp
  Mask256 port_map{};                // switch: the ports that marked
  std::vector<SwitchLogEntry> switch_entries;
  std::vector<CaLogEntry> ca_entries;
  bool operator==(const CongestionLog&) const = default;
};
// Fails on a LogType that is neither.
Result<CongestionLog> decode_congestion_log(const LogData& d);
// At most 15 (switch) or 13 (CA) entries are encoded.
LogData encode(const CongestionLog& v);

// TimeStamp (A10.4.3.10).
uint32_t decode_time_stamp(const Data& d);
Data encode_time_stamp(uint32_t ts);

}  // namespace weft::cc
