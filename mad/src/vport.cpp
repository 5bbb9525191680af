// Virtual-port attributes, byte by byte (layouts: weft/mad/vport.hpp). libibmad has no
// field tables for NVIDIA's vendor attributes, so they are encoded here by hand.
#include "weft/mad/vport.hpp"

namespace weft::mad {

namespace {

uint16_t be16(const uint8_t* p) {
  return uint16_t(p[0] << 8 | p[1]);
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8), p[1] = uint8_t(v);
}
uint64_t be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = uint8_t(v);
}
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
  return (pi.attrs.capability_mask & kCapMask2Supported) && (be16(pi.raw.data() + 60) & 0x0004);
}

VirtualizationInfo decode_virtualization_info(const SmpData& d) {
  VirtualizationInfo v;
  v.raw = d;
  v.vport_cap = be16(&d[0]);
  v.vport_index_top = be16(&d[2]);
  v.enabled = d[4] & 0x80;
  v.client_reregister = d[4] & 0x40;
  v.state_change = d[4] & 0x20;
  v.revision = d[6];
  v.cap_mask = d[7];
  return v;
}

SmpData encode_virtualization_info(const VirtualizationInfo& v) {
  SmpData d = v.raw;
  put16(&d[0], v.vport_cap);
  put16(&d[2], v.vport_index_top);
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
  v.cap_mask = be16(&d[2]);
  v.pkey_violations = be16(&d[4]);
  v.qkey_violations = be16(&d[6]);
  v.lid = be16(&d[8]);
  v.lid_by_vport_index = be16(&d[10]);
  v.port_guid = Guid{be64(&d[12])};
  v.port_profile = be64(&d[20]);
  return v;
}

SmpData encode_vport_info(const VPortInfo& v) {
  SmpData d = v.raw;
  d[0] = uint8_t((v.state & 0x0f) << 4 | (d[0] & 0x03));
  put_bit(d[0], 0x08, v.client_reregister);
  put_bit(d[0], 0x04, v.lid_required);
  d[1] = v.guid_cap;
  put16(&d[2], v.cap_mask);
  put16(&d[4], v.pkey_violations);
  put16(&d[6], v.qkey_violations);
  put16(&d[8], v.lid);
  put16(&d[10], v.lid_by_vport_index);
  put64(&d[12], v.port_guid.value);
  put64(&d[20], v.port_profile);
  return d;
}

VNodeInfo decode_vnode_info(const SmpData& d) {
  VNodeInfo v;
  v.partition_cap = be16(&d[0]);
  v.local_port = d[2];
  v.num_ports = d[3];
  v.node_guid = Guid{be64(&d[4])};
  return v;
}

SmpData encode_vnode_info(const VNodeInfo& v) {
  SmpData d{};
  put16(&d[0], v.partition_cap);
  d[2] = v.local_port;
  d[3] = v.num_ports;
  put64(&d[4], v.node_guid.value);
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
  for (size_t i = 0; i < kVPortGuidsPerBlock; ++i) b[i] = Guid{be64(&d[8 * i])};
  return b;
}

SmpData encode_vport_guid_block(const VPortGuidBlock& b) {
  SmpData d{};
  for (size_t i = 0; i < kVPortGuidsPerBlock; ++i) put64(&d[8 * i], b[i].value);
  return d;
}

}  // namespace weft::mad
