// weft/mad/ar.hpp — adaptive routing on the wire: NVIDIA's vendor-specific SMP
// attributes AdaptiveRoutingInfo (0xFF20), AdaptiveRoutingGroupTable (0xFF21) and the
// AR linear forwarding table (0xFF23, 16 LIDs a block), encoded field by field.
//
//   ArInfo ai = decode_ar_info(smp.data);       // what the switch can do and does
//   ai.enabled = true; ai.group_top = 12;
//   SmpData d = encode_ar_info(ai);             // over ai.raw: unknown bits kept
//   uint32_t mod = ar_lft_modifier(lid / kArLftLids);
//
// Layouts, IDs and field meanings are the public facts of the GPL/BSD ib_types.h that
// NVIDIA's OFED ships (ib_ar_info_t, ib_ar_group_table_t, ib_ar_lft_entry_t). What
// the attribute modifiers carry is not in those headers: the choices are weft's and
// live in ar_group_modifier() and ar_lft_modifier() only.
#pragma once

#include <array>
#include <cstdint>

#include "weft/mad/mad.hpp"

namespace weft::mad {

constexpr uint16_t kAttrArInfo = 0xFF20;
constexpr uint16_t kAttrArGroupTable = 0xFF21;
constexpr uint16_t kAttrArLft = 0xFF23;

// AdaptiveRoutingInfo: capability bits (read-only) and the settings an SM writes.
struct ArInfo {
  // Byte 0: capabilities and the fallback setting.
  bool no_fallback = false;          // settable: never fall back to the static port
  bool is4_mode = false;             // capability
  bool glb_groups = false;           // groups are global (not per pLFT)
  bool by_sl_cap = false;            // AR can be enabled per SL
  bool by_sl_en = false;             // settable: enable_by_sl_mask is in force
  bool by_transport_cap = false;     // AR can be disabled per transport
  bool dyn_cap_calc = false;         // dynamic capability calculation supported
  uint8_t direction_num_sup = 0;     // byte 1
  uint8_t sub_grps_active = 0;       // byte 2 bits 0-3 (settable): sub-groups per group - 1
  uint8_t group_table_copy_sup = 0;  // byte 2 bits 4-7
  // Byte 3: enable and features.
  bool enabled = false;  // E, settable
  bool arn_sup = false, frn_sup = false, fr_sup = false;
  bool fr_enabled = false;       // settable: fast recovery
  bool rn_xmit_enabled = false;  // settable: routing notifications sent
  // Bytes 4-7 (one big-endian word): GroupCap [11:0], GroupTop [23:12] (settable),
  // GroupTableCap [27:24], StringWidthCap [31:28].
  uint16_t group_cap = 0;
  uint16_t group_top = 0;
  uint8_t group_table_cap = 0;
  uint8_t string_width_cap = 0;
  uint16_t enable_by_sl_mask = 0;    // bytes 8-9, settable
  uint8_t sub_grps_supported = 0;    // byte 10
  uint8_t ar_version_cap = 0;        // byte 11 bits 0-3
  uint8_t rn_version_cap = 0;        // byte 11 bits 4-7
  uint8_t by_transport_disable = 0;  // byte 15, settable: bit 0 UD, 1 RC, 2 UC, 3 DC
  uint32_t ageing_time_us = 0;       // bytes 16-19, settable
  SmpData raw{};                     // as read: a Set writes the fields above over it
  bool operator==(const ArInfo&) const = default;
};
ArInfo decode_ar_info(const SmpData& d);
SmpData encode_ar_info(const ArInfo& ai);

// AdaptiveRoutingGroupTable: a block holds two entries (sub-groups), each a 256-bit
// port mask, big-endian: port p is bit p % 8 of byte 31 - p / 8 of its entry.
constexpr uint32_t kArGroupsPerBlock = 2;
constexpr uint32_t kArMaxPort = 255;
using ArPortMask = std::array<uint8_t, 32>;
using ArGroupBlock = std::array<ArPortMask, kArGroupsPerBlock>;
inline void ar_mask_set(ArPortMask& m, uint32_t port, bool on = true) {
  if (port > kArMaxPort) return;
  uint8_t& b = m[31 - port / 8];
  b = uint8_t(on ? b | (1u << (port % 8)) : b & ~(1u << (port % 8)));
}
inline bool ar_mask_has(const ArPortMask& m, uint32_t port) {
  return port <= kArMaxPort && (m[31 - port / 8] >> (port % 8)) & 1;
}
ArGroupBlock decode_ar_group_block(const SmpData& d);
SmpData encode_ar_group_block(const ArGroupBlock& b);

// The AR LFT: 16 LIDs a block (block b: LIDs 16b .. 16b+15), each entry 4 bytes: byte 0
// LID state [7:6] and table number [3:0], byte 1 the default (static) port, bytes 2-3
// the group number [11:0].
constexpr uint32_t kArLftLids = 16;
enum class ArLidState : uint8_t { kBounded = 0, kFree = 1, kStatic = 2, kReserved = 3 };
struct ArLftEntry {
  ArLidState state = ArLidState::kStatic;
  uint8_t table = 0;         // 0-15
  uint8_t default_port = 0;  // the static port
  uint16_t group = 0;        // 0-4095
  bool operator==(const ArLftEntry&) const = default;
};
using ArLftBlock = std::array<ArLftEntry, kArLftLids>;
ArLftBlock decode_ar_lft_block(const SmpData& d);
SmpData encode_ar_lft_block(const ArLftBlock& b);

// The attribute modifiers (weft's choice, see above): the block number in the low bits
// (12 for the group table, 24 for the AR LFT), group table 0 and pLFT 0 above them.
inline uint32_t ar_group_modifier(uint32_t block) {
  return block & 0xfff;
}
inline uint32_t ar_lft_modifier(uint32_t block) {
  return block & 0xffffff;
}

}  // namespace weft::mad
