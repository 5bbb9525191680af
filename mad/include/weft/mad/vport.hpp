// weft/mad/vport.hpp — SR-IOV virtual ports on the wire: NVIDIA's vendor-specific SMP
// attributes GeneralInfo (0xFF17), VirtualizationInfo (0xFFB0), VPortInfo (0xFFB1),
// VNodeInfo (0xFFB2), VPortState (0xFFB3), VNodeDescription (0xFFB4), VPortGUIDInfo
// (0xFFB5) and VPortPKeyTable (0xFFB6), encoded field by field (big-endian).
//
//   if (general_info_virtualization(smp.data)) ...       // GeneralInfo, modifier 4
//   VirtualizationInfo vi = decode_virtualization_info(smp.data);
//   vi.enabled = true;
//   SmpData d = encode_virtualization_info(vi);          // over vi.raw: unknown bits kept
//   uint32_t mod = vport_modifier(vport_index);          // VPortInfo, VNodeInfo, ...
//
// Layouts, IDs and field meanings are the public facts of the GPL/BSD headers NVIDIA's
// OFED ships (iba/ib_types.h of its OpenSM: ib_virtualization_info_t, ib_vport_info_t,
// ib_vnode_info_t, ib_vport_state_t, ib_general_info_smp_t; ibis.h for which attributes
// take a vport index and a block). How the attribute modifier packs the vport index and
// the block is in none of them: the choice is weft's and lives in vport_modifier(),
// vport_block_modifier() and vport_state_modifier() only.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "weft/mad/mad.hpp"

namespace weft::mad {

constexpr uint16_t kAttrGeneralInfo = 0xFF17;
constexpr uint16_t kAttrVirtualizationInfo = 0xFFB0;
constexpr uint16_t kAttrVPortInfo = 0xFFB1;
constexpr uint16_t kAttrVNodeInfo = 0xFFB2;
constexpr uint16_t kAttrVPortState = 0xFFB3;
constexpr uint16_t kAttrVNodeDesc = 0xFFB4;
constexpr uint16_t kAttrVPortGuidInfo = 0xFFB5;
constexpr uint16_t kAttrVPortPkeyTable = 0xFFB6;

// GeneralInfo read with this modifier answers its capability mask: four big-endian
// words, capability bit n in word n / 32 at bit n % 32 from that word's LSB.
constexpr uint32_t kGeneralInfoCapabilities = 4;
constexpr uint32_t kGeneralCapVirtualization = 15;  // IsVirtualizationSupported
constexpr uint32_t kGeneralCapSlaveVirtualSwitch = 14;
constexpr uint32_t kGeneralCapVPortGuidInfo = 22;  // IsVPortGUIDInfoSupported
bool general_info_cap(const SmpData& d, uint32_t bit);
inline bool general_info_virtualization(const SmpData& d) {
  return general_info_cap(d, kGeneralCapVirtualization);
}
// PortInfo's own flag: CapabilityMask2 (bytes 60-61) IsVirtualizationSupported, valid
// where CapabilityMask says IsCapabilityMask2Supported (0x8000).
bool port_info_virtualization(const PortInfo& pi);

// VirtualizationInfo of a CA port.
struct VirtualizationInfo {
  uint16_t vport_cap = 0;          // bytes 0-1: the most vports the port supports
  uint16_t vport_index_top = 0;    // bytes 2-3: the highest index of an enabled vport
  bool enabled = false;            // byte 4 0x80, settable: VirtualizationEnable
  bool client_reregister = false;  // byte 4 0x40, settable: VClientReregister
  bool state_change = false;       // byte 4 0x20: VPortStateChange (written 1 to clear it)
  uint8_t revision = 0;            // byte 6
  uint8_t cap_mask = 0;            // byte 7
  SmpData raw{};                   // as read: a Set writes the fields above over it
  bool operator==(const VirtualizationInfo&) const = default;
};
VirtualizationInfo decode_virtualization_info(const SmpData& d);
SmpData encode_virtualization_info(const VirtualizationInfo& v);

// A vport's state (VPortInfo's and VPortState's 4-bit values): PortInfo's PortState
// encoding, named by fabric::port_state_name.
using VPortState = fabric::PortState;

struct VPortInfo {
  uint8_t state = 0;                // byte 0 [7:4], settable (a VPortState value)
  bool client_reregister = false;   // byte 0 0x08, settable
  bool lid_required = false;        // byte 0 0x04: the vport wants a LID of its own
  uint8_t guid_cap = 0;             // byte 1: entries of its VPortGUIDInfo
  uint16_t cap_mask = 0;            // bytes 2-3
  uint16_t pkey_violations = 0;     // bytes 4-5
  uint16_t qkey_violations = 0;     // bytes 6-7
  uint16_t lid = 0;                 // bytes 8-9, settable: the vport's own LID
  uint16_t lid_by_vport_index = 0;  // bytes 10-11: the vport whose LID it uses otherwise
  Guid port_guid;                   // bytes 12-19: the vport's GUID
  uint64_t port_profile = 0;        // bytes 20-27
  SmpData raw{};
  bool operator==(const VPortInfo&) const = default;
};
VPortInfo decode_vport_info(const SmpData& d);
SmpData encode_vport_info(const VPortInfo& v);

struct VNodeInfo {
  uint16_t partition_cap = 0;  // bytes 0-1: P_Keys of each of its vports' tables
  uint8_t local_port = 0;      // byte 2
  uint8_t num_ports = 0;       // byte 3
  Guid node_guid;              // bytes 4-11
  bool operator==(const VNodeInfo&) const = default;
};
VNodeInfo decode_vnode_info(const SmpData& d);
SmpData encode_vnode_info(const VNodeInfo& v);

// VPortState: 128 vports a block, 4 bits each; vport 2k is the high nibble of byte k.
constexpr uint32_t kVPortStatesPerBlock = 128;
using VPortStateBlock = std::array<uint8_t, kVPortStatesPerBlock>;
VPortStateBlock decode_vport_state_block(const SmpData& d);
SmpData encode_vport_state_block(const VPortStateBlock& b);

// VPortGUIDInfo: 8 GUIDs a block. VPortPKeyTable: 32 P_Keys a block, as P_KeyTable
// (encode_pkey_block / decode_pkey_block).
constexpr uint32_t kVPortGuidsPerBlock = 8;
using VPortGuidBlock = std::array<Guid, kVPortGuidsPerBlock>;
VPortGuidBlock decode_vport_guid_block(const SmpData& d);
SmpData encode_vport_guid_block(const VPortGuidBlock& b);

// VNodeDescription: as NodeDescription (decode_node_desc).

// The attribute modifiers (weft's choice, see above), for the physical port the SMP is
// routed to: the vport index in the low 16 bits (VPortInfo, VNodeInfo,
// VNodeDescription), the block number above it (VPortGUIDInfo, VPortPKeyTable), and
// VPortState's block number alone.
inline uint32_t vport_modifier(uint16_t vport) {
  return vport;
}
inline uint32_t vport_block_modifier(uint16_t vport, uint16_t block) {
  return uint32_t(block) << 16 | vport;
}
inline uint32_t vport_state_modifier(uint16_t block) {
  return block;
}

}  // namespace weft::mad
