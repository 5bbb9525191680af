// Virtual-port attributes, byte by byte (layouts: weft/mad/vport.hpp). libibmad has no
// field tables for NVIDIA's vendor attributes, so they are encoded here by hand.
#include "weft/mad/vport.hpp"

#include <boost/endian/conversion.hpp>

namespace weft::mad {

namespace {

// Big-endian fields (the wire order) through Boost.Endian.
using boost::endian::load_big_u16;
using boost::endian::load_big_u64;
using boost::endian::store_big_u16;
using boost::endian::store_big_u64;

void put_bit(uint8_t& b, uint8_t mask, bool on) {
  b = uint8_t(on ? b | mask : b & ~mask);
}

}  // namespace

bool general_info_cap(const SmpData& d, uint32_t bit) {
  if (bit >= 128) return false;
  const uint8_t* word = d.data() + 4 * (bit / 32);
  const uint32_t in = bit % 32;
  return (word[3 - in / 8] >> (in % 8)) & 1;
}

bool port_info_virtualization(const PortInfo& pi) {
  constexpr uint32_t kCapMask2Supported = 0x8000;
  return (pi.attrs.capability_mask & kCapMask2Supported) &&
         (load_big_u16(pi.raw.data() + 60) & 0x0004);
}

VirtualizationInfo decode_virtualization_info(const SmpData& d) {
  VirtualizationInfo v;
  v.raw = d;
  v.vport_cap = load_big_u16(&d[0]);
  v.vport_index_top = load_big_u16(&d[2]);
  v.enabled = d[4] & 0x80;
  v.client_reregister = d[4] & 0x40;
  v.state_change = d[4] & 0x20;
  v.revision = d[6];
  v.cap_mask = d[7];
  return v;
}

SmpData encode_virtualization_info(const VirtualizationInfo& v) {
  SmpData d = v.raw;
  store_big_u16(&d[0], v.vport_cap);
  store_big_u16(&d[2], v.vport_index_top);
  put_bit(d[4], 0x80, v.enabled);
  put_bit(d[4], 0x40, v.client_reregister);
  put_bit(d[4], 0x20, v.state_change);
  d[6] = v.revision;
  d[7] = v.cap_mask;
  return d;
}

VPortInfo decode_vport_info(const SmpData& d) {
  VPortInfo v;
  v.raw = d;
  v.state = d[0] >> 4;
  v.client_reregister = d[0] & 0x08;
  v.lid_required = d[0] & 0x04;
  v.guid_cap = d[1];
  v.cap_mask = load_big_u16(&d[2]);
  v.pkey_violations = load_big_u16(&d[4]);
  v.qkey_violations = load_big_u16(&d[6]);
  v.lid = load_big_u16(&d[8]);
  v.lid_by_vport_index = load_big_u16(&d[10]);
  v.port_guid = Guid{load_big_u64(&d[12])};
  v.port_profile = load_big_u64(&d[20]);
  return v;
}

SmpData encode_vport_info(const VPortInfo& v) {
  SmpData d = v.raw;
  d[0] = uint8_t((v.state & 0x0f) << 4 | (d[0] & 0x03));
  put_bit(d[0], 0x08, v.client_reregister);
  put_bit(d[0], 0x04, v.lid_required);
  d[1] = v.guid_cap;
  store_big_u16(&d[2], v.cap_mask);
  store_big_u16(&d[4], v.pkey_violations);
  store_big_u16(&d[6], v.qkey_violations);
  store_big_u16(&d[8], v.lid);
  store_big_u16(&d[10], v.lid_by_vport_index);
  store_big_u64(&d[12], v.port_guid.value);
  store_big_u64(&d[20], v.port_profile);
  return d;
}

VNodeInfo decode_vnode_info(const SmpData& d) {
  VNodeInfo v;
  v.partition_cap = load_big_u16(&d[0]);
  v.local_port = d[2];
  v.num_ports = d[3];
  v.node_guid = Guid{load_big_u64(&d[4])};
  return v;
}

SmpData encode_vnode_info(const VNodeInfo& v) {
  SmpData d{};
  store_big_u16(&d[0], v.partition_cap);
  d[2] = v.local_port;
  d[3] = v.num_ports;
  store_big_u64(&d[4], v.node_guid.value);
  return d;
}

VPortStateBlock decode_vport_state_block(const SmpData& d) {
  VPortStateBlock b{};
  for (size_t i = 0; i < kVPortStatesPerBlock; ++i)
    b[i] = i % 2 == 0 ? d[i / 2] >> 4 : d[i / 2] & 0x0f;
  return b;
}

SmpData encode_vport_state_block(const VPortStateBlock& b) {
  SmpData d{};
  for (size_t i = 0; i < kVPortStatesPerBlock; ++i)
    d[i / 2] |= i % 2 == 0 ? uint8_t((b[i] & 0x0f) << 4) : uint8_t(b[i] & 0x0f);
  return d;
}

VPortGuidBlock decode_vport_guid_block(const SmpData& d) {
  VPortGuidBlock b{};
  for (size_t i = 0; i < kVPortGuidsPerBlock; ++i) b[i] = Guid{load_big_u64(&d[8 * i])};
  return b;
}

SmpData encode_vport_guid_block(const VPortGuidBlock& b) {
  SmpData d{};
  for (size_t i = 0; i < kVPortGuidsPerBlock; ++i) store_big_u64(&d[8 * i], b[i].value);
  return d;
}

}  // namespace weft::mad
