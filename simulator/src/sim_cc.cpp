#include "weft/simulator/sim_cc.hpp"

#include <chrono>

namespace weft::simulator {

namespace {

constexpr uint16_t kStatusBadClass = 0x0004;   // class or version unsupported
constexpr uint16_t kStatusBadMethod = 0x000C;  // method / attribute unsupported
constexpr uint16_t kStatusBadValue = 0x001C;   // invalid attribute value or modifier

}  // namespace

CcDevice& SimCc::add(uint32_t node, uint8_t port, bool is_switch, uint8_t ports, CcSupport s,
                     uint8_t table_cap) {
  CcDevice& d = dev_[{node, is_switch ? uint8_t(0) : port}];
  d = CcDevice{};
  d.support = s;
  d.is_switch = is_switch;
  d.ports = ports;
  if (is_switch) {
    d.port_blocks.resize(cc::port_blocks(ports));
    d.log.log_type = cc::kLogSwitch;
  } else {
    d.info.control_table_cap = table_cap;
    d.cct.resize(table_cap);
    d.log.log_type = cc::kLogCa;
  }
  return d;
}

CcDevice* SimCc::find(uint32_t node, uint8_t port) {
  auto it = dev_.find({node, port});
  return it == dev_.end() ? nullptr : &it->second;
}

const CcDevice* SimCc::find(uint32_t node, uint8_t port) const {
  auto it = dev_.find({node, port});
  return it == dev_.end() ? nullptr : &it->second;
}

std::optional<mad::Gmp> SimCc::handle(uint32_t node, uint8_t port, const mad::Gmp& req,
                                      mad::TimePoint now) {
  CcDevice* d = find(node, port);
  if (!d || d->support == CcSupport::kNone) return std::nullopt;
  ++mads_;
  mad::Gmp r = req;
  r.method = mad::kMethodGetResp;
  auto answer = [&](uint16_t status) {
    r.status = status;
    return std::optional<mad::Gmp>(r);
  };
  if (d->support == CcSupport::kRefuses || req.class_version != cc::kClassVersion)
    return answer(kStatusBadClass);
  if (d->support == CcSupport::kMisdispatch) {
    // ibsim 0.10 copies no data in or out for class 0x21: every answer is the request
    // itself, turned round with status 0 (a Set lands in an SMP handler's table).
    if (req.method == mad::kMethodSet) ++d->sets;
    return r;
  }
  // The CC_Key: a lease that ran out leaves the key unprotected.
  if (d->lease_end && now >= *d->lease_end) {
    d->key.cc_key = 0;
    d->lease_end.reset();
  }
  if (d->key.cc_key != 0 && cc::key_of(req) != d->key.cc_key) {
    ++d->key.violations;
    if (d->key.protect && d->key.lease_period && !d->lease_end)
      d->lease_end = now + std::chrono::seconds(d->key.lease_period);
    return std::nullopt;
  }
  d->lease_end.reset();
  if (req.method != mad::kMethodSet && req.method != mad::kMethodGet)
    return answer(kStatusBadMethod);
  // `set`: a Set, refused where the attribute is read-only; `store`: one that is kept (a
  // forgetful device answers it with what it held).
  const bool set = req.method == mad::kMethodSet;
  const bool store = set && d->support != CcSupport::kForgetful;
  const cc::Data in = cc::data_of(req);
  cc::Data out{};
  cc::LogData log_out{};
  switch (req.attr_id) {
    case cc::kAttrCongestionInfo:
      if (set) return answer(kStatusBadMethod);
      out = cc::encode(d->info);
      break;
    case cc::kAttrCongestionKeyInfo:
      if (store) {
        d->key = cc::decode_congestion_key_info(in);
        d->lease_end.reset();
      }
      out = cc::encode(d->key);
      break;
    case cc::kAttrCongestionLog:
      if (set) return answer(kStatusBadMethod);
      log_out = cc::encode(d->log);
      d->log.event_counter = 0;
      d->log.threshold_event_map = 0;
      d->log.switch_entries.clear();
      d->log.ca_entries.clear();
      d->log.port_map = {};
      break;
    case cc::kAttrSwitchCongestionSetting:
      if (!d->is_switch) return answer(kStatusBadMethod);
      if (store) {
        d->sw = cc::decode_switch_congestion_setting(in);
        if (d->normalises)
          for (unsigned p = d->ports + 1u; p < 256; ++p) {
            cc::set_port_bit(d->sw.victim_mask, p, false);
            cc::set_port_bit(d->sw.credit_mask, p, false);
          }
      }
      out = set && d->normalises ? in : cc::encode(d->sw);
      break;
    case cc::kAttrSwitchPortCongestionSetting:
      if (!d->is_switch) return answer(kStatusBadMethod);
      if (req.attr_mod >= d->port_blocks.size()) return answer(kStatusBadValue);
      if (store) d->port_blocks[req.attr_mod] = cc::decode_switch_port_congestion_block(in);
      out = cc::encode(d->port_blocks[req.attr_mod]);
      break;
    case cc::kAttrCaCongestionSetting:
      if (d->is_switch) return answer(kStatusBadMethod);
      if (store) d->ca = cc::decode_ca_congestion_setting(in);
      out = cc::encode(d->ca);
      break;
    case cc::kAttrCongestionControlTable:
      if (d->is_switch) return answer(kStatusBadMethod);
      if (req.attr_mod >= d->cct.size()) return answer(kStatusBadValue);
      if (store) d->cct[req.attr_mod] = cc::decode_cct_block(in);
      out = cc::encode(d->cct[req.attr_mod]);
      break;
    case cc::kAttrTimeStamp:
      if (set) return answer(kStatusBadMethod);
      out = cc::encode_time_stamp(time_stamp(now));
      break;
    default:
      return answer(kStatusBadMethod);
  }
  ++(set ? d->sets : d->gets);
  if (req.attr_id == cc::kAttrCongestionLog)
    r = cc::request(r.method, r.attr_id, r.attr_mod, cc::key_of(req), log_out);
  else
    r = cc::request(r.method, r.attr_id, r.attr_mod, cc::key_of(req), out);
  r.tid = req.tid;
  return r;
}

bool SimCc::marks(uint32_t node, uint8_t port) const {
  const CcDevice* d = find(node, 0);
  if (!d || d->support != CcSupport::kAgent || !d->is_switch) return false;
  const size_t b = port / cc::kPortsPerBlock;
  if (b < d->port_blocks.size()) {
    const auto& e = d->port_blocks[b][port % cc::kPortsPerBlock];
    if (e.valid && !e.control_type) return e.threshold != 0;
  }
  return d->sw.threshold != 0;
}

namespace {

// Appends `e`, keeping the last `cap`.
template <class E>
void keep_last(std::vector<E>& v, const E& e, size_t cap) {
  v.push_back(e);
  if (v.size() > cap) v.erase(v.begin(), v.begin() + static_cast<long>(v.size() - cap));
}

}  // namespace

void SimCc::log_switch(uint32_t node, uint8_t port, const cc::SwitchLogEntry& e) {
  CcDevice* d = find(node, 0);
  if (!d) return;
  d->log.event_counter = static_cast<uint16_t>(d->log.event_counter + 1);
  cc::set_port_bit(d->log.port_map, port);
  d->log.time_stamp = e.timestamp;
  keep_last(d->log.switch_entries, e, cc::kSwitchLogEntries);
}

bool SimCc::reacts(uint32_t node, uint8_t port, uint8_t sl) const {
  const CcDevice* d = find(node, port);
  return d && d->support == CcSupport::kAgent && !d->is_switch && sl < 16 &&
         (d->ca.control_map >> sl & 1);
}

void SimCc::log_ca(uint32_t node, uint8_t port, const cc::CaLogEntry& e) {
  CcDevice* d = find(node, port);
  if (!d) return;
  d->log.event_counter = static_cast<uint16_t>(d->log.event_counter + 1);
  d->log.threshold_event_map = static_cast<uint16_t>(d->log.threshold_event_map | 1u << e.sl);
  d->log.time_stamp = e.timestamp;
  keep_last(d->log.ca_entries, e, cc::kCaLogEntries);
}

}  // namespace weft::simulator
