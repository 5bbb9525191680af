#include "weft/cc/wire.hpp"

#include <infiniband/mad.h>

#include <algorithm>
#include <cstring>

namespace weft::cc {

namespace {

// libibmad's CC fields address the data (or log data) area itself, each entry's fields
// its own entry; its getters take a non-const pointer, so reads go through a copy.
template <size_t N>
uint32_t get(std::array<uint8_t, N>& a, size_t at, enum MAD_FIELDS f) {
  return mad_get_field(a.data() + at, 0, f);
}
template <size_t N>
void put(std::array<uint8_t, N>& a, size_t at, enum MAD_FIELDS f, uint32_t v) {
  mad_set_field(a.data() + at, 0, f, v);
}
template <size_t N>
Mask256 get_mask(std::array<uint8_t, N>& a, enum MAD_FIELDS f) {
  Mask256 m{};
  mad_get_array(a.data(), 0, f, m.data());
  return m;
}
template <size_t N>
void put_mask(std::array<uint8_t, N>& a, enum MAD_FIELDS f, Mask256 m) {
  mad_set_array(a.data(), 0, f, m.data());
}

// Entry layouts inside their attribute (A10.4.3): where the first entry starts, and
// each entry's size.
constexpr size_t kCaEntryAt = 4, kCaEntrySize = 8;
constexpr size_t kCctEntryAt = 4, kCctEntrySize = 2;
constexpr size_t kPortElementSize = 4;
constexpr size_t kSwitchLogEntryAt = 40, kSwitchLogEntrySize = 12;
constexpr size_t kCaLogEntryAt = 12, kCaLogEntrySize = 16;

template <size_t N>
bool zero(const std::array<uint8_t, N>& a, size_t at, size_t n) {
  return std::all_of(a.begin() + long(at), a.begin() + long(at + n),
                     [](uint8_t b) { return b == 0; });
}

}  // namespace

const char* attr_name(uint16_t attr) {
  switch (attr) {
    case kAttrClassPortInfo:
      return "ClassPortInfo";
    case kAttrCongestionInfo:
      return "CongestionInfo";
    case kAttrCongestionKeyInfo:
      return "CongestionKeyInfo";
    case kAttrCongestionLog:
      return "CongestionLog";
    case kAttrSwitchCongestionSetting:
      return "SwitchCongestionSetting";
    case kAttrSwitchPortCongestionSetting:
      return "SwitchPortCongestionSetting";
    case kAttrCaCongestionSetting:
      return "CACongestionSetting";
    case kAttrCongestionControlTable:
      return "CongestionControlTable";
    case kAttrTimeStamp:
      return "TimeStamp";
    default:
      return "unknown CC attribute";
  }
}

mad::Gmp request(uint8_t method, uint16_t attr, uint32_t mod, uint64_t cc_key,
                 std::span<const uint8_t> area) {
  mad::Gmp g;
  g.mgmt_class = kClassCc;
  g.class_version = kClassVersion;
  g.method = method;
  g.attr_id = attr;
  g.attr_mod = mod;
  mad::MadBuf b{};
  mad_set_field64(b.data(), 0, IB_CC_CCKEY_F, cc_key);
  const size_t at = attr == kAttrCongestionLog ? kLogDataOffset : kDataOffset;
  const size_t room = attr == kAttrCongestionLog ? kLogDataSize : kDataSize;
  std::memcpy(b.data() + at, area.data(), std::min(area.size(), room));
  std::memcpy(g.payload.data(), b.data() + mad::kMadHeaderSize, g.payload.size());
  return g;
}

uint64_t key_of(const mad::Gmp& g) {
  mad::MadBuf b{};
  std::memcpy(b.data() + mad::kMadHeaderSize, g.payload.data(), g.payload.size());
  return mad_get_field64(b.data(), 0, IB_CC_CCKEY_F);
}

Data data_of(const mad::Gmp& g) {
  Data d;
  std::memcpy(d.data(), g.payload.data() + (kDataOffset - mad::kMadHeaderSize), d.size());
  return d;
}

LogData log_of(const mad::Gmp& g) {
  LogData d;
  std::memcpy(d.data(), g.payload.data() + (kLogDataOffset - mad::kMadHeaderSize), d.size());
  return d;
}

bool port_bit(const Mask256& m, unsigned port) {
  return port < 256 && (m[31 - port / 8] >> (port % 8) & 1);
}

void set_port_bit(Mask256& m, unsigned port, bool on) {
  if (port >= 256) return;
  const auto bit = static_cast<uint8_t>(1u << (port % 8));
  m[31 - port / 8] = static_cast<uint8_t>(on ? m[31 - port / 8] | bit : m[31 - port / 8] & ~bit);
}

CongestionInfo decode_congestion_info(const Data& d) {
  Data c = d;
  return {static_cast<uint16_t>(get(c, 0, IB_CC_CONGESTION_INFO_F)),
          static_cast<uint8_t>(get(c, 0, IB_CC_CONGESTION_INFO_CONTROL_TABLE_CAP_F))};
}

Data encode(const CongestionInfo& v) {
  Data d{};
  put(d, 0, IB_CC_CONGESTION_INFO_F, v.info);
  put(d, 0, IB_CC_CONGESTION_INFO_CONTROL_TABLE_CAP_F, v.control_table_cap);
  return d;
}

CongestionKeyInfo decode_congestion_key_info(const Data& d) {
  Data c = d;
  CongestionKeyInfo v;
  v.cc_key = mad_get_field64(c.data(), 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_F);
  v.protect = get(c, 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_PROTECT_BIT_F) != 0;
  v.lease_period =
      static_cast<uint16_t>(get(c, 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_LEASE_PERIOD_F));
  v.violations = static_cast<uint16_t>(get(c, 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_VIOLATIONS_F));
  return v;
}

Data encode(const CongestionKeyInfo& v) {
  Data d{};
  mad_set_field64(d.data(), 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_F, v.cc_key);
  put(d, 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_PROTECT_BIT_F, v.protect);
  put(d, 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_LEASE_PERIOD_F, v.lease_period);
  put(d, 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_VIOLATIONS_F, v.violations);
  return d;
}

SwitchCongestionSetting decode_switch_congestion_setting(const Data& d) {
  Data c = d;
  SwitchCongestionSetting v;
  v.control_map = get(c, 0, IB_CC_SWITCH_CONGESTION_SETTING_CONTROL_MAP_F);
  v.victim_mask = get_mask(c, IB_CC_SWITCH_CONGESTION_SETTING_VICTIM_MASK_F);
  v.credit_mask = get_mask(c, IB_CC_SWITCH_CONGESTION_SETTING_CREDIT_MASK_F);
  v.threshold = static_cast<uint8_t>(get(c, 0, IB_CC_SWITCH_CONGESTION_SETTING_THRESHOLD_F));
  v.packet_size = static_cast<uint8_t>(get(c, 0, IB_CC_SWITCH_CONGESTION_SETTING_PACKET_SIZE_F));
  v.cs_threshold = static_cast<uint8_t>(get(c, 0, IB_CC_SWITCH_CONGESTION_SETTING_CS_THRESHOLD_F));
  v.cs_return_delay =
      static_cast<uint16_t>(get(c, 0, IB_CC_SWITCH_CONGESTION_SETTING_CS_RETURN_DELAY_F));
  v.marking_rate = static_cast<uint16_t>(get(c, 0, IB_CC_SWITCH_CONGESTION_SETTING_MARKING_RATE_F));
  return v;
}

Data encode(const SwitchCongestionSetting& v) {
  Data d{};
  put(d, 0, IB_CC_SWITCH_CONGESTION_SETTING_CONTROL_MAP_F, v.control_map);
  put_mask(d, IB_CC_SWITCH_CONGESTION_SETTING_VICTIM_MASK_F, v.victim_mask);
  put_mask(d, IB_CC_SWITCH_CONGESTION_SETTING_CREDIT_MASK_F, v.credit_mask);
  put(d, 0, IB_CC_SWITCH_CONGESTION_SETTING_THRESHOLD_F, v.threshold);
  put(d, 0, IB_CC_SWITCH_CONGESTION_SETTING_PACKET_SIZE_F, v.packet_size);
  put(d, 0, IB_CC_SWITCH_CONGESTION_SETTING_CS_THRESHOLD_F, v.cs_threshold);
  put(d, 0, IB_CC_SWITCH_CONGESTION_SETTING_CS_RETURN_DELAY_F, v.cs_return_delay);
  put(d, 0, IB_CC_SWITCH_CONGESTION_SETTING_MARKING_RATE_F, v.marking_rate);
  return d;
}

SwitchPortCongestionBlock decode_switch_port_congestion_block(const Data& d) {
  Data c = d;
  SwitchPortCongestionBlock v;
  for (size_t i = 0; i < kPortsPerBlock; ++i) {
    const size_t at = i * kPortElementSize;
    auto& e = v[i];
    e.valid = get(c, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_VALID_F) != 0;
    e.control_type = get(c, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONTROL_TYPE_F) != 0;
    e.threshold =
        static_cast<uint8_t>(get(c, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_THRESHOLD_F));
    e.packet_size = static_cast<uint8_t>(
        get(c, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_PACKET_SIZE_F));
    e.marking_rate = static_cast<uint16_t>(
        get(c, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONG_PARM_MARKING_RATE_F));
  }
  return v;
}

Data encode(const SwitchPortCongestionBlock& v) {
  Data d{};
  for (size_t i = 0; i < kPortsPerBlock; ++i) {
    const size_t at = i * kPortElementSize;
    const auto& e = v[i];
    put(d, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_VALID_F, e.valid);
    put(d, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONTROL_TYPE_F, e.control_type);
    put(d, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_THRESHOLD_F, e.threshold);
    put(d, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_PACKET_SIZE_F, e.packet_size);
    put(d, at, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONG_PARM_MARKING_RATE_F,
        e.marking_rate);
  }
  return d;
}

CaCongestionSetting decode_ca_congestion_setting(const Data& d) {
  Data c = d;
  CaCongestionSetting v;
  v.port_control = static_cast<uint16_t>(get(c, 0, IB_CC_CA_CONGESTION_SETTING_PORT_CONTROL_F));
  v.control_map = static_cast<uint16_t>(get(c, 0, IB_CC_CA_CONGESTION_SETTING_CONTROL_MAP_F));
  for (size_t i = 0; i < v.sl.size(); ++i) {
    const size_t at = kCaEntryAt + i * kCaEntrySize;
    auto& e = v.sl[i];
    e.ccti_timer = static_cast<uint16_t>(get(c, at, IB_CC_CA_CONGESTION_ENTRY_CCTI_TIMER_F));
    e.ccti_increase = static_cast<uint8_t>(get(c, at, IB_CC_CA_CONGESTION_ENTRY_CCTI_INCREASE_F));
    e.trigger_threshold =
        static_cast<uint8_t>(get(c, at, IB_CC_CA_CONGESTION_ENTRY_TRIGGER_THRESHOLD_F));
    e.ccti_min = static_cast<uint8_t>(get(c, at, IB_CC_CA_CONGESTION_ENTRY_CCTI_MIN_F));
  }
  return v;
}

Data encode(const CaCongestionSetting& v) {
  Data d{};
  put(d, 0, IB_CC_CA_CONGESTION_SETTING_PORT_CONTROL_F, v.port_control);
  put(d, 0, IB_CC_CA_CONGESTION_SETTING_CONTROL_MAP_F, v.control_map);
  for (size_t i = 0; i < v.sl.size(); ++i) {
    const size_t at = kCaEntryAt + i * kCaEntrySize;
    const auto& e = v.sl[i];
    put(d, at, IB_CC_CA_CONGESTION_ENTRY_CCTI_TIMER_F, e.ccti_timer);
    put(d, at, IB_CC_CA_CONGESTION_ENTRY_CCTI_INCREASE_F, e.ccti_increase);
    put(d, at, IB_CC_CA_CONGESTION_ENTRY_TRIGGER_THRESHOLD_F, e.trigger_threshold);
    put(d, at, IB_CC_CA_CONGESTION_ENTRY_CCTI_MIN_F, e.ccti_min);
  }
  return d;
}

CongestionControlTableBlock decode_cct_block(const Data& d) {
  Data c = d;
  CongestionControlTableBlock v;
  v.ccti_limit = static_cast<uint16_t>(get(c, 0, IB_CC_CONGESTION_CONTROL_TABLE_CCTI_LIMIT_F));
  for (size_t i = 0; i < kCctEntriesPerBlock; ++i) {
    const size_t at = kCctEntryAt + i * kCctEntrySize;
    v.entries[i].shift =
        static_cast<uint8_t>(get(c, at, IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_SHIFT_F));
    v.entries[i].multiplier =
        static_cast<uint16_t>(get(c, at, IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_MULTIPLIER_F));
  }
  return v;
}

Data encode(const CongestionControlTableBlock& v) {
  Data d{};
  put(d, 0, IB_CC_CONGESTION_CONTROL_TABLE_CCTI_LIMIT_F, v.ccti_limit);
  for (size_t i = 0; i < kCctEntriesPerBlock; ++i) {
    const size_t at = kCctEntryAt + i * kCctEntrySize;
    put(d, at, IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_SHIFT_F, v.entries[i].shift);
    put(d, at, IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_MULTIPLIER_F, v.entries[i].multiplier);
  }
  return d;
}

Result<CongestionLog> decode_congestion_log(const LogData& d) {
  LogData c = d;
  CongestionLog v;
  v.log_type = static_cast<uint8_t>(get(c, 0, IB_CC_CONGESTION_LOG_LOGTYPE_F));
  v.congestion_flags = static_cast<uint8_t>(get(c, 0, IB_CC_CONGESTION_LOG_CONGESTION_FLAGS_F));
  if (v.log_type == kLogSwitch) {
    v.event_counter =
        static_cast<uint16_t>(get(c, 0, IB_CC_CONGESTION_LOG_SWITCH_LOG_EVENTS_COUNTER_F));
    v.time_stamp = get(c, 0, IB_CC_CONGESTION_LOG_SWITCH_CURRENT_TIME_STAMP_F);
    v.port_map = get_mask(c, IB_CC_CONGESTION_LOG_SWITCH_PORTMAP_F);
    for (size_t i = 0; i < kSwitchLogEntries; ++i) {
      const size_t at = kSwitchLogEntryAt + i * kSwitchLogEntrySize;
      if (zero(c, at, kSwitchLogEntrySize)) continue;
      SwitchLogEntry e;
      e.slid = static_cast<uint16_t>(get(c, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_SLID_F));
      e.dlid = static_cast<uint16_t>(get(c, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_DLID_F));
      e.sl = static_cast<uint8_t>(get(c, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_SL_F));
      e.timestamp = get(c, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_TIMESTAMP_F);
      v.switch_entries.push_back(e);
    }
    return v;
  }
  if (v.log_type == kLogCa) {
    v.event_counter =
        static_cast<uint16_t>(get(c, 0, IB_CC_CONGESTION_LOG_CA_THRESHOLD_EVENT_COUNTER_F));
    v.threshold_event_map =
        static_cast<uint16_t>(get(c, 0, IB_CC_CONGESTION_LOG_CA_THRESHOLD_CONGESTION_EVENT_MAP_F));
    v.time_stamp = get(c, 0, IB_CC_CONGESTION_LOG_CA_CURRENT_TIMESTAMP_F);
    for (size_t i = 0; i < kCaLogEntries; ++i) {
      const size_t at = kCaLogEntryAt + i * kCaLogEntrySize;
      if (zero(c, at, kCaLogEntrySize)) continue;
      CaLogEntry e;
      e.local_qp = get(c, at, IB_CC_CONGESTION_LOG_ENTRY_CA_LOCAL_QP_CN_ENTRY_F);
      e.sl = static_cast<uint8_t>(get(c, at, IB_CC_CONGESTION_LOG_ENTRY_CA_SL_CN_ENTRY_F));
      e.service_type =
          static_cast<uint8_t>(get(c, at, IB_CC_CONGESTION_LOG_ENTRY_CA_SERVICE_TYPE_CN_ENTRY_F));
      e.remote_qp = get(c, at, IB_CC_CONGESTION_LOG_ENTRY_CA_REMOTE_QP_NUMBER_CN_ENTRY_F);
      e.local_lid = static_cast<uint16_t>(get(c, at, IB_CC_CONGESTION_LOG_ENTRY_CA_LOCAL_LID_CN_F));
      e.remote_lid =
          static_cast<uint16_t>(get(c, at, IB_CC_CONGESTION_LOG_ENTRY_CA_REMOTE_LID_CN_ENTRY_F));
      e.timestamp = get(c, at, IB_CC_CONGESTION_LOG_ENTRY_CA_TIMESTAMP_CN_ENTRY_F);
      v.ca_entries.push_back(e);
    }
    return v;
  }
  return fail(Errc::kBadReply,
              "CongestionLog of LogType " + std::to_string(v.log_type) + " (1: switch, 2: CA)");
}

LogData encode(const CongestionLog& v) {
  LogData d{};
  put(d, 0, IB_CC_CONGESTION_LOG_LOGTYPE_F, v.log_type);
  put(d, 0, IB_CC_CONGESTION_LOG_CONGESTION_FLAGS_F, v.congestion_flags);
  if (v.log_type == kLogSwitch) {
    put(d, 0, IB_CC_CONGESTION_LOG_SWITCH_LOG_EVENTS_COUNTER_F, v.event_counter);
    put(d, 0, IB_CC_CONGESTION_LOG_SWITCH_CURRENT_TIME_STAMP_F, v.time_stamp);
    put_mask(d, IB_CC_CONGESTION_LOG_SWITCH_PORTMAP_F, v.port_map);
    for (size_t i = 0; i < std::min(kSwitchLogEntries, v.switch_entries.size()); ++i) {
      const size_t at = kSwitchLogEntryAt + i * kSwitchLogEntrySize;
      const auto& e = v.switch_entries[i];
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_SLID_F, e.slid);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_DLID_F, e.dlid);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_SL_F, e.sl);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_TIMESTAMP_F, e.timestamp);
    }
  } else if (v.log_type == kLogCa) {
    put(d, 0, IB_CC_CONGESTION_LOG_CA_THRESHOLD_EVENT_COUNTER_F, v.event_counter);
    put(d, 0, IB_CC_CONGESTION_LOG_CA_THRESHOLD_CONGESTION_EVENT_MAP_F, v.threshold_event_map);
    put(d, 0, IB_CC_CONGESTION_LOG_CA_CURRENT_TIMESTAMP_F, v.time_stamp);
    for (size_t i = 0; i < std::min(kCaLogEntries, v.ca_entries.size()); ++i) {
      const size_t at = kCaLogEntryAt + i * kCaLogEntrySize;
      const auto& e = v.ca_entries[i];
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_CA_LOCAL_QP_CN_ENTRY_F, e.local_qp);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_CA_SL_CN_ENTRY_F, e.sl);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_CA_SERVICE_TYPE_CN_ENTRY_F, e.service_type);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_CA_REMOTE_QP_NUMBER_CN_ENTRY_F, e.remote_qp);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_CA_LOCAL_LID_CN_F, e.local_lid);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_CA_REMOTE_LID_CN_ENTRY_F, e.remote_lid);
      put(d, at, IB_CC_CONGESTION_LOG_ENTRY_CA_TIMESTAMP_CN_ENTRY_F, e.timestamp);
    }
  }
  return d;
}

uint32_t decode_time_stamp(const Data& d) {
  Data c = d;
  return get(c, 0, IB_CC_TIMESTAMP_F);
}

Data encode_time_stamp(uint32_t ts) {
  Data d{};
  put(d, 0, IB_CC_TIMESTAMP_F, ts);
  return d;
}

}  // namespace weft::cc
