// Adaptive routing attributes, byte by byte (layouts: weft/mad/ar.hpp). libibmad has no
// field tables for NVIDIA's vendor attributes, so they are encoded here by hand.
#include "weft/mad/ar.hpp"

#include <boost/endian/conversion.hpp>

namespace weft::mad {

namespace {

// Big-endian fields (the wire order) through Boost.Endian.
using boost::endian::load_big_u32;
using boost::endian::store_big_u32;

bool bit(uint8_t b, int i) {
  return (b >> i) & 1;
}
void put_bit(uint8_t& b, int i, bool on) {
  b = uint8_t(on ? b | (1u << i) : b & ~(1u << i));
}

// ArInfo's one-bit fields: (field, byte, bit). Decode and encode read this one list.
struct Flag {
  bool ArInfo::*field;
  int byte, bit;
};
constexpr Flag kFlags[] = {
    {&ArInfo::no_fallback, 0, 0},     {&ArInfo::is4_mode, 0, 1}, {&ArInfo::glb_groups, 0, 2},
    {&ArInfo::by_sl_cap, 0, 3},       {&ArInfo::by_sl_en, 0, 4}, {&ArInfo::by_transport_cap, 0, 5},
    {&ArInfo::dyn_cap_calc, 0, 6},    {&ArInfo::enabled, 3, 0},  {&ArInfo::arn_sup, 3, 1},
    {&ArInfo::frn_sup, 3, 2},         {&ArInfo::fr_sup, 3, 3},   {&ArInfo::fr_enabled, 3, 4},
    {&ArInfo::rn_xmit_enabled, 3, 5},
};

}  // namespace

ArInfo decode_ar_info(const SmpData& d) {
  ArInfo a;
  a.raw = d;
  for (const Flag& f : kFlags) a.*f.field = bit(d[f.byte], f.bit);
  a.direction_num_sup = d[1];
  a.sub_grps_active = d[2] & 0x0f;
  a.group_table_copy_sup = d[2] >> 4;
  const uint32_t w = load_big_u32(&d[4]);
  a.group_cap = uint16_t(w & 0xfff);
  a.group_top = uint16_t((w >> 12) & 0xfff);
  a.group_table_cap = uint8_t((w >> 24) & 0xf);
  a.string_width_cap = uint8_t(w >> 28);
  a.enable_by_sl_mask = uint16_t(d[8] << 8 | d[9]);
  a.sub_grps_supported = d[10];
  a.ar_version_cap = d[11] & 0x0f;
  a.rn_version_cap = d[11] >> 4;
  a.by_transport_disable = d[15] & 0x0f;
  a.ageing_time_us = load_big_u32(&d[16]);
  return a;
}

SmpData encode_ar_info(const ArInfo& a) {
  SmpData d = a.raw;
  for (const Flag& f : kFlags) put_bit(d[f.byte], f.bit, a.*f.field);
  d[1] = a.direction_num_sup;
  d[2] = uint8_t((a.group_table_copy_sup & 0x0f) << 4 | (a.sub_grps_active & 0x0f));
  store_big_u32(&d[4], uint32_t(a.string_width_cap & 0xf) << 28 |
                           uint32_t(a.group_table_cap & 0xf) << 24 |
                           uint32_t(a.group_top & 0xfff) << 12 | uint32_t(a.group_cap & 0xfff));
  d[8] = uint8_t(a.enable_by_sl_mask >> 8), d[9] = uint8_t(a.enable_by_sl_mask);
  d[10] = a.sub_grps_supported;
  d[11] = uint8_t((a.rn_version_cap & 0x0f) << 4 | (a.ar_version_cap & 0x0f));
  d[15] = uint8_t((d[15] & 0xf0) | (a.by_transport_disable & 0x0f));
  store_big_u32(&d[16], a.ageing_time_us);
  return d;
}

ArGroupBlock decode_ar_group_block(const SmpData& d) {
  ArGroupBlock b{};
  for (uint32_t g = 0; g < kArGroupsPerBlock; ++g)
    for (uint32_t i = 0; i < 32; ++i) b[g][i] = d[32 * g + i];
  return b;
}

SmpData encode_ar_group_block(const ArGroupBlock& b) {
  SmpData d{};
  for (uint32_t g = 0; g < kArGroupsPerBlock; ++g)
    for (uint32_t i = 0; i < 32; ++i) d[32 * g + i] = b[g][i];
  return d;
}

ArLftBlock decode_ar_lft_block(const SmpData& d) {
  ArLftBlock b{};
  for (uint32_t i = 0; i < kArLftLids; ++i) {
    const uint8_t* e = &d[4 * i];
    b[i].state = ArLidState(e[0] >> 6);
    b[i].table = e[0] & 0x0f;
    b[i].default_port = e[1];
    b[i].group = uint16_t((e[2] << 8 | e[3]) & 0xfff);
  }
  return b;
}

SmpData encode_ar_lft_block(const ArLftBlock& b) {
  SmpData d{};
  for (uint32_t i = 0; i < kArLftLids; ++i) {
    uint8_t* e = &d[4 * i];
    e[0] = uint8_t((uint8_t(b[i].state) & 3) << 6 | (b[i].table & 0x0f));
    e[1] = b[i].default_port;
    e[2] = uint8_t((b[i].group >> 8) & 0x0f);
    e[3] = uint8_t(b[i].group);
  }
  return d;
}

}  // namespace weft::mad
