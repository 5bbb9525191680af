#include "weft/qos/vl_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>

namespace weft::qos {

const char* const kDefaultVlarbHigh =
    "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";
const char* const kDefaultVlarbLow =
    "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4";
const char* const kDefaultSl2Vl = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7";

namespace {

// One port type's options over the base ones over OpenSM's defaults.
Result<QosPortConfig> build(const config::Values& v, const std::string& type) {
  auto pick = [&](const char* key, const char* dflt) {
    const std::string own = v.get_str("qos_" + type + key);
    if (!own.empty()) return own;
    const std::string base = v.get_str(std::string("qos_") + key);
    return base.empty() ? std::string(dflt) : base;
  };
  QosPortConfig c;
  long mv = v.get_int("qos_" + type + "max_vls");
  if (mv <= 0) mv = v.get_int("qos_max_vls");
  c.max_vls = static_cast<uint8_t>(mv > 0 ? mv : 15);
  long hl = v.get_int("qos_" + type + "high_limit");
  if (hl < 0) hl = v.get_int("qos_high_limit");
  c.high_limit = static_cast<uint8_t>(hl >= 0 ? hl : 0);
  auto where = [&](const char* key) {
    const std::string own = "qos_" + type + key;
    return v.get_str(own).empty() ? std::string("qos_") + key : own;
  };
  auto hi = config::parse_vlarb(pick("vlarb_high", kDefaultVlarbHigh));
  if (!hi) return fail(Errc::kInvalidInput, where("vlarb_high") + ": " + hi.error().message);
  auto lo = config::parse_vlarb(pick("vlarb_low", kDefaultVlarbLow));
  if (!lo) return fail(Errc::kInvalidInput, where("vlarb_low") + ": " + lo.error().message);
  auto sl = config::parse_sl2vl(pick("sl2vl", kDefaultSl2Vl));
  if (!sl) return fail(Errc::kInvalidInput, where("sl2vl") + ": " + sl.error().message);
  c.high = std::move(*hi);
  c.low = std::move(*lo);
  c.sl2vl = *sl;
  return c;
}

uint8_t vl_mask(uint8_t oper_vls) {
  // OperVLs 1..5 = VL0, VL0-1, VL0-3, VL0-7, VL0-14.
  if (oper_vls < 1) oper_vls = 1;
  if (oper_vls > 5) oper_vls = 5;
  return static_cast<uint8_t>((1u << (oper_vls - 1)) - 1);
}

}  // namespace

Result<QosConfig> qos_from_options(const config::Values& v) {
  QosConfig q;
  q.enabled = v.get_bool("qos");
  for (auto [type, dst] : {std::pair{"ca_", &q.ca}, std::pair{"sw0_", &q.sw0},
                           std::pair{"swe_", &q.swe}, std::pair{"rtr_", &q.rtr}}) {
    auto c = build(v, type);
    if (!c) return std::unexpected(c.error());
    *dst = std::move(*c);
  }
  return q;
}

Sl2Vl port_sl2vl(const QosPortConfig& c, uint8_t oper_vls, uint8_t layers) {
  Sl2Vl t = c.sl2vl;
  if (layers > 1)
    for (uint8_t s = 0; s < layers && s < 15; ++s) t[s] = s;
  const uint8_t m = vl_mask(oper_vls);
  for (auto& vl : t)
    if (vl != 15) vl &= m;
  return t;
}

Sl2Vl hop_sl2vl(const QosPortConfig& c, uint8_t oper_vls, uint64_t hop_map) {
  Sl2Vl t = c.sl2vl;
  for (unsigned s = 0; s < 16; ++s)
    if (const uint8_t v = uint8_t(hop_map >> (4 * s) & 0xF); v != 0xF) t[s] = v;
  const uint8_t m = vl_mask(oper_vls);
  for (auto& vl : t)
    if (vl != 15) vl &= m;
  return t;
}

VlArbBlock vlarb_block(const std::vector<config::VlArbEntry>& list, size_t block, size_t cap,
                       uint8_t oper_vls) {
  VlArbBlock b{};
  const uint8_t m = vl_mask(oper_vls);
  for (size_t i = 0; i < 32; ++i) {
    const size_t idx = block * 32 + i;
    if (idx >= cap || idx >= list.size()) break;
    b[i] = {static_cast<uint8_t>(list[idx].vl & m), list[idx].weight};
  }
  return b;
}

uint8_t data_vls(uint8_t oper_vls) {
  static constexpr uint8_t kDataVls[] = {1, 1, 2, 4, 8, 15};
  return kDataVls[std::min<uint8_t>(oper_vls, 5)];
}

std::string sl2vl_str(const Sl2Vl& t) {
  std::string s;
  return fmt::format("{}", fmt::join(t, ","));
}

}  // namespace weft::qos
