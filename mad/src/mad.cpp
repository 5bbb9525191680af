#include "weft/mad/mad.hpp"

#include <infiniband/mad.h>

#include <fmt/format.h>
#include <boost/endian/conversion.hpp>
#include <cstring>

#include "weft/mad/ar.hpp"
#include "weft/mad/vport.hpp"

namespace weft::mad {
namespace {

// libibmad's getters take non-const pointers but only read through them (a copy of the
// 64 bytes per field was most of an attribute's decoding).
uint32_t get(const SmpData& d, MAD_FIELDS f) {
  return mad_get_field(const_cast<uint8_t*>(d.data()), 0, f);
}
uint64_t get64(const SmpData& d, MAD_FIELDS f) {
  return mad_get_field64(const_cast<uint8_t*>(d.data()), 0, f);
}
void put(SmpData& d, MAD_FIELDS f, uint32_t v) {
  mad_set_field(d.data(), 0, f, v);
}
void put64(SmpData& d, MAD_FIELDS f, uint64_t v) {
  mad_set_field64(d.data(), 0, f, v);
}

}  // namespace

const char* attr_name(uint16_t attr) {
  switch (attr) {
    case kAttrNotice:
      return "Notice";
    case kAttrNodeDesc:
      return "NodeDescription";
    case kAttrNodeInfo:
      return "NodeInfo";
    case kAttrSwitchInfo:
      return "SwitchInfo";
    case kAttrPortInfo:
      return "PortInfo";
    case kAttrPkeyTable:
      return "P_KeyTable";
    case kAttrSl2Vl:
      return "SLtoVLMappingTable";
    case kAttrVlArb:
      return "VLArbitrationTable";
    case kAttrLft:
      return "LinearForwardingTable";
    case kAttrMft:
      return "MulticastForwardingTable";
    case kAttrSmInfo:
      return "SMInfo";
    case kAttrArInfo:
      return "AdaptiveRoutingInfo";
    case kAttrArGroupTable:
      return "AdaptiveRoutingGroupTable";
    case kAttrArLft:
      return "AdaptiveRoutingLFT";
    case kAttrGeneralInfo:
      return "GeneralInfo";
    case kAttrVirtualizationInfo:
      return "VirtualizationInfo";
    case kAttrVPortInfo:
      return "VPortInfo";
    case kAttrVNodeInfo:
      return "VNodeInfo";
    case kAttrVPortState:
      return "VPortState";
    case kAttrVNodeDesc:
      return "VNodeDescription";
    case kAttrVPortGuidInfo:
      return "VPortGUIDInfo";
    case kAttrVPortPkeyTable:
      return "VPortPKeyTable";
  }
  return "attribute";
}

std::string DrPath::str() const {
  std::string s = "0";
  for (int i = 1; i <= hops; ++i) fmt::format_to(std::back_inserter(s), ",{}", ports[i]);
  return s;
}

std::string SmpRequest::target() const {
  return directed ? "DR " + path.str() : "LID " + std::to_string(dlid.value);
}

// The MAD and SMP headers are written and read at their fixed offsets (IBTA 13.4.3,
// 14.2.1.1-2) with Boost.Endian, not field by field through libibmad: at millions of
// SMPs a sweep its generic bit-field accessors cost more than the rest of the codec. A
// test holds both to libibmad's field tables. Attribute payloads still go through them.
namespace {
constexpr size_t kOffStatus = 4, kOffHopPtr = 6, kOffHopCnt = 7, kOffTid = 8, kOffAttrId = 16,
                 kOffAttrMod = 20, kOffMKey = 24, kOffDrSlid = 32, kOffDrDlid = 34,
                 kOffInitPath = 128, kOffRetPath = 192;
}  // namespace

MadBuf encode_smp(const Smp& s) {
  using namespace boost::endian;
  MadBuf b{};
  uint8_t* p = b.data();
  p[0] = 1;  // BaseVersion
  p[1] = s.mgmt_class;
  p[2] = 1;  // ClassVersion
  p[3] = static_cast<uint8_t>((s.method & 0x7F) | (s.is_response() ? 0x80 : 0));
  if (s.mgmt_class == kClassSmiDirect) {
    store_big_u16(p + kOffStatus,
                  static_cast<uint16_t>((s.direction ? 0x8000 : 0) | (s.status & 0x7FFF)));
    p[kOffHopPtr] = s.hop_ptr;
    p[kOffHopCnt] = s.hop_count;
    store_big_u16(p + kOffDrSlid, s.dr_slid.value);
    store_big_u16(p + kOffDrDlid, 0xFFFF);
    std::memcpy(p + kOffInitPath, s.path.ports.data(), 64);
    std::memcpy(p + kOffRetPath, s.return_path.ports.data(), 64);
  } else {
    store_big_u16(p + kOffStatus, s.status);
  }
  store_big_u64(p + kOffTid, s.tid);
  store_big_u64(p + kOffMKey, s.m_key);
  store_big_u16(p + kOffAttrId, s.attr_id);
  store_big_u32(p + kOffAttrMod, s.attr_mod);
  static_assert(IB_SMP_DATA_SIZE == kSmpDataSize);
  std::memcpy(p + IB_SMP_DATA_OFFS, s.data.data(), IB_SMP_DATA_SIZE);
  return b;
}

MadBuf encode_smp(const SmpRequest& req, uint64_t tid) {
  Smp s;
  s.mgmt_class = req.directed ? kClassSmiDirect : kClassSmiLid;
  s.method = req.method;
  s.tid = tid;
  s.attr_id = req.attr_id;
  s.attr_mod = req.attr_mod;
  s.data = req.data;
  s.m_key = req.m_key.value_or(0);
  if (req.directed) {
    s.hop_count = req.path.hops;
    s.hop_ptr = 0;
    s.path = req.path;
  }
  return encode_smp(s);
}

Result<Smp> decode_smp(const uint8_t* buf, size_t len) {
  using namespace boost::endian;
  if (len < kMadSize)
    return fail(Errc::kBadReply, "SMP of " + std::to_string(len) + " bytes (expected 256)");
  const uint8_t* p = buf;
  Smp s;
  if (p[0] != 1) return fail(Errc::kBadReply, "MAD base version " + std::to_string(p[0]));
  s.mgmt_class = p[1];
  if (s.mgmt_class != kClassSmiLid && s.mgmt_class != kClassSmiDirect)
    return fail(Errc::kBadReply, "not an SMP: management class " + std::to_string(s.mgmt_class));
  if (p[2] != 1) return fail(Errc::kBadReply, "SMP class version " + std::to_string(p[2]));
  s.method = p[3];  // R in bit 7, as Smp keeps it
  const uint16_t status = load_big_u16(p + kOffStatus);
  if (s.mgmt_class == kClassSmiDirect) {
    s.status = status & 0x7FFF;
    s.direction = (status & 0x8000) != 0;
    s.hop_ptr = p[kOffHopPtr];
    s.hop_count = p[kOffHopCnt];
    s.dr_slid = Lid{load_big_u16(p + kOffDrSlid)};
    if (s.hop_count > kMaxDrHops)
      return fail(Errc::kBadReply,
                  "directed-route hop count " + std::to_string(s.hop_count) + " > 63");
    std::memcpy(s.path.ports.data(), p + kOffInitPath, 64);
    std::memcpy(s.return_path.ports.data(), p + kOffRetPath, 64);
    s.path.hops = s.return_path.hops = s.hop_count;
  } else {
    s.status = status;
  }
  s.tid = load_big_u64(p + kOffTid);
  s.m_key = load_big_u64(p + kOffMKey);
  s.attr_id = load_big_u16(p + kOffAttrId);
  s.attr_mod = load_big_u32(p + kOffAttrMod);
  std::memcpy(s.data.data(), p + IB_SMP_DATA_OFFS, IB_SMP_DATA_SIZE);
  return s;
}

MadBuf encode_gmp(const Gmp& g) {
  MadBuf b{};
  uint8_t* p = b.data();
  mad_set_field(p, 0, IB_MAD_BASEVER_F, 1);
  mad_set_field(p, 0, IB_MAD_MGMTCLASS_F, g.mgmt_class);
  mad_set_field(p, 0, IB_MAD_CLASSVER_F, g.class_version);
  mad_set_field(p, 0, IB_MAD_METHOD_F, g.method & 0x7F);
  mad_set_field(p, 0, IB_MAD_RESPONSE_F, g.is_response() ? 1 : 0);
  mad_set_field(p, 0, IB_MAD_STATUS_F, g.status);
  mad_set_field64(p, 0, IB_MAD_TRID_F, g.tid);
  mad_set_field(p, 0, IB_MAD_ATTRID_F, g.attr_id);
  mad_set_field(p, 0, IB_MAD_ATTRMOD_F, g.attr_mod);
  std::memcpy(p + kMadHeaderSize, g.payload.data(), g.payload.size());
  return b;
}

Result<Gmp> decode_gmp(const uint8_t* buf, size_t len, bool sa_ok) {
  if (len < kMadSize)
    return fail(Errc::kBadReply, "GMP of " + std::to_string(len) + " bytes (expected 256)");
  MadBuf b;
  std::memcpy(b.data(), buf, kMadSize);
  uint8_t* p = b.data();
  if (mad_get_field(p, 0, IB_MAD_BASEVER_F) != 1)
    return fail(Errc::kBadReply,
                "MAD base version " + std::to_string(mad_get_field(p, 0, IB_MAD_BASEVER_F)));
  Gmp g;
  g.mgmt_class = static_cast<uint8_t>(mad_get_field(p, 0, IB_MAD_MGMTCLASS_F));
  if (g.mgmt_class == kClassSmiLid || g.mgmt_class == kClassSmiDirect ||
      (g.mgmt_class == 0x03 && !sa_ok))
    return fail(Errc::kBadReply, "not a GMP: management class " + std::to_string(g.mgmt_class));
  g.class_version = static_cast<uint8_t>(mad_get_field(p, 0, IB_MAD_CLASSVER_F));
  g.method = static_cast<uint8_t>(mad_get_field(p, 0, IB_MAD_METHOD_F) |
                                  (mad_get_field(p, 0, IB_MAD_RESPONSE_F) << 7));
  g.status = static_cast<uint16_t>(mad_get_field(p, 0, IB_MAD_STATUS_F));
  g.tid = mad_get_field64(p, 0, IB_MAD_TRID_F);
  g.attr_id = static_cast<uint16_t>(mad_get_field(p, 0, IB_MAD_ATTRID_F));
  g.attr_mod = mad_get_field(p, 0, IB_MAD_ATTRMOD_F);
  std::memcpy(g.payload.data(), p + kMadHeaderSize, g.payload.size());
  return g;
}

std::string mad_status_str(uint16_t status) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%04x", status);
  std::string s = hex;
  switch ((status >> 2) & 0x7) {
    case 0:
      break;
    case 1:
      s += " (bad version)";
      break;
    case 2:
      s += " (method not supported)";
      break;
    case 3:
      s += " (method/attribute not supported)";
      break;
    case 7:
      s += " (invalid attribute value or modifier)";
      break;
    default:
      s += " (error)";
      break;
  }
  if (status & 0x1) s += " (busy)";
  return s;
}

// --- NodeInfo -------------------------------------------------------------------

Result<NodeInfo> decode_node_info(const SmpData& d) {
  NodeInfo n;
  n.base_version = static_cast<uint8_t>(get(d, IB_NODE_BASE_VERS_F));
  n.class_version = static_cast<uint8_t>(get(d, IB_NODE_CLASS_VERS_F));
  uint32_t type = get(d, IB_NODE_TYPE_F);
  if (type < 1 || type > 3)
    return fail(Errc::kBadReply, "NodeInfo: node type " + std::to_string(type));
  n.type = static_cast<fabric::NodeType>(type);
  n.num_ports = static_cast<uint8_t>(get(d, IB_NODE_NPORTS_F));
  if (n.num_ports == 0 || n.num_ports == 0xFF)
    return fail(Errc::kBadReply, "NodeInfo: NumPorts " + std::to_string(n.num_ports));
  n.system_guid = Guid{get64(d, IB_NODE_SYSTEM_GUID_F)};
  n.node_guid = Guid{get64(d, IB_NODE_GUID_F)};
  n.port_guid = Guid{get64(d, IB_NODE_PORT_GUID_F)};
  if (n.node_guid.value == 0) return fail(Errc::kBadReply, "NodeInfo: NodeGUID is 0");
  n.partition_cap = static_cast<uint16_t>(get(d, IB_NODE_PARTITION_CAP_F));
  n.device_id = static_cast<uint16_t>(get(d, IB_NODE_DEVID_F));
  n.revision = get(d, IB_NODE_REVISION_F);
  n.local_port = static_cast<uint8_t>(get(d, IB_NODE_LOCAL_PORT_F));
  if (n.local_port > n.num_ports)
    return fail(Errc::kBadReply, "NodeInfo: LocalPortNum " + std::to_string(n.local_port) +
                                     " > NumPorts " + std::to_string(n.num_ports));
  n.vendor_id = get(d, IB_NODE_VENDORID_F);
  return n;
}

SmpData encode_node_info(const NodeInfo& n) {
  SmpData d{};
  put(d, IB_NODE_BASE_VERS_F, n.base_version);
  put(d, IB_NODE_CLASS_VERS_F, n.class_version);
  put(d, IB_NODE_TYPE_F, static_cast<uint32_t>(n.type));
  put(d, IB_NODE_NPORTS_F, n.num_ports);
  put64(d, IB_NODE_SYSTEM_GUID_F, n.system_guid.value);
  put64(d, IB_NODE_GUID_F, n.node_guid.value);
  put64(d, IB_NODE_PORT_GUID_F, n.port_guid.value);
  put(d, IB_NODE_PARTITION_CAP_F, n.partition_cap);
  put(d, IB_NODE_DEVID_F, n.device_id);
  put(d, IB_NODE_REVISION_F, n.revision);
  put(d, IB_NODE_LOCAL_PORT_F, n.local_port);
  put(d, IB_NODE_VENDORID_F, n.vendor_id);
  return d;
}

// --- NodeDescription ----------------------------------------------------------------

std::string decode_node_desc(const SmpData& d) {
  SmpData c = d;
  char text[kSmpDataSize + 1] = {};
  mad_decode_field(c.data(), IB_NODE_DESC_F, text);
  std::string s(text, strnlen(text, kSmpDataSize));
  for (char& ch : s)
    if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) > 0x7E) ch = '?';
  return s;
}

SmpData encode_node_desc(const std::string& desc) {
  SmpData d{};
  char text[kSmpDataSize] = {};
  std::memcpy(text, desc.data(), std::min(desc.size(), kSmpDataSize));
  mad_encode_field(d.data(), IB_NODE_DESC_F, text);
  return d;
}

// --- SwitchInfo ----------------------------------------------------------------------

SwitchInfo decode_switch_info(const SmpData& d) {
  SwitchInfo s;
  s.raw = d;
  s.lft_cap = static_cast<uint16_t>(get(d, IB_SW_LINEAR_FDB_CAP_F));
  s.rft_cap = static_cast<uint16_t>(get(d, IB_SW_RANDOM_FDB_CAP_F));
  s.mft_cap = static_cast<uint16_t>(get(d, IB_SW_MCAST_FDB_CAP_F));
  s.lft_top = static_cast<uint16_t>(get(d, IB_SW_LINEAR_FDB_TOP_F));
  s.default_port = static_cast<uint8_t>(get(d, IB_SW_DEF_PORT_F));
  s.lifetime = static_cast<uint8_t>(get(d, IB_SW_LIFE_TIME_F));
  s.port_state_change = get(d, IB_SW_STATE_CHANGE_F) != 0;
  s.lids_per_port = static_cast<uint16_t>(get(d, IB_SW_LIDS_PER_PORT_F));
  s.partition_enforce_cap = static_cast<uint16_t>(get(d, IB_SW_PARTITION_ENFORCE_CAP_F));
  s.inbound_enforce_cap = get(d, IB_SW_PARTITION_ENF_INB_F) != 0;
  s.outbound_enforce_cap = get(d, IB_SW_PARTITION_ENF_OUTB_F) != 0;
  s.enhanced_port0 = get(d, IB_SW_ENHANCED_PORT0_F) != 0;
  // A 2-bit field in libibmad; OpenSM reads its low bit as the capability.
  s.optimized_sl2vl = (get(d, IB_SW_OPT_SLTOVL_MAPPING_F) & 1) != 0;
  s.mft_top = static_cast<uint16_t>(get(d, IB_SW_MCAST_FDB_TOP_F));
  return s;
}

SmpData encode_switch_info(const SwitchInfo& s) {
  SmpData d = s.raw;
  put(d, IB_SW_LINEAR_FDB_CAP_F, s.lft_cap);
  put(d, IB_SW_RANDOM_FDB_CAP_F, s.rft_cap);
  put(d, IB_SW_MCAST_FDB_CAP_F, s.mft_cap);
  put(d, IB_SW_LINEAR_FDB_TOP_F, s.lft_top);
  put(d, IB_SW_DEF_PORT_F, s.default_port);
  put(d, IB_SW_LIFE_TIME_F, s.lifetime);
  put(d, IB_SW_STATE_CHANGE_F, s.port_state_change ? 1 : 0);
  put(d, IB_SW_LIDS_PER_PORT_F, s.lids_per_port);
  put(d, IB_SW_PARTITION_ENFORCE_CAP_F, s.partition_enforce_cap);
  put(d, IB_SW_PARTITION_ENF_INB_F, s.inbound_enforce_cap ? 1 : 0);
  put(d, IB_SW_PARTITION_ENF_OUTB_F, s.outbound_enforce_cap ? 1 : 0);
  put(d, IB_SW_ENHANCED_PORT0_F, s.enhanced_port0 ? 1 : 0);
  put(d, IB_SW_OPT_SLTOVL_MAPPING_F,
      (get(d, IB_SW_OPT_SLTOVL_MAPPING_F) & 2) | (s.optimized_sl2vl ? 1 : 0));
  put(d, IB_SW_MCAST_FDB_TOP_F, s.mft_top);
  return d;
}

// --- PortInfo ------------------------------------------------------------------------

PortInfo decode_port_info(const SmpData& d) {
  PortInfo p;
  p.raw = d;
  auto& a = p.attrs;
  p.gid_prefix = get64(d, IB_PORT_GID_PREFIX_F);
  a.lid = Lid{static_cast<uint16_t>(get(d, IB_PORT_LID_F))};
  a.sm_lid = Lid{static_cast<uint16_t>(get(d, IB_PORT_SMLID_F))};
  a.capability_mask = get(d, IB_PORT_CAPMASK_F);
  p.local_port = static_cast<uint8_t>(get(d, IB_PORT_LOCAL_PORT_F));
  a.width_enabled = static_cast<uint8_t>(get(d, IB_PORT_LINK_WIDTH_ENABLED_F));
  a.width_supported = static_cast<uint8_t>(get(d, IB_PORT_LINK_WIDTH_SUPPORTED_F));
  a.width_active = static_cast<uint8_t>(get(d, IB_PORT_LINK_WIDTH_ACTIVE_F));
  a.speed_supported = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_SUPPORTED_F));
  uint32_t st = get(d, IB_PORT_STATE_F);
  a.state = st <= 4 ? static_cast<fabric::PortState>(st) : fabric::PortState::kDown;
  a.phys_state = static_cast<uint8_t>(get(d, IB_PORT_PHYS_STATE_F));
  a.lmc = static_cast<uint8_t>(get(d, IB_PORT_LMC_F));
  a.speed_active = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_ACTIVE_F));
  a.speed_enabled = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_ENABLED_F));
  a.neighbor_mtu = static_cast<uint8_t>(get(d, IB_PORT_NEIGHBOR_MTU_F));
  p.sm_sl = static_cast<uint8_t>(get(d, IB_PORT_SMSL_F));
  a.vl_cap = static_cast<uint8_t>(get(d, IB_PORT_VL_CAP_F));
  p.vl_high_limit = static_cast<uint8_t>(get(d, IB_PORT_VL_HIGH_LIMIT_F));
  p.vl_arb_high_cap = static_cast<uint8_t>(get(d, IB_PORT_VL_ARBITRATION_HIGH_CAP_F));
  p.vl_arb_low_cap = static_cast<uint8_t>(get(d, IB_PORT_VL_ARBITRATION_LOW_CAP_F));
  a.mtu_cap = static_cast<uint8_t>(get(d, IB_PORT_MTU_CAP_F));
  p.hoq_life = static_cast<uint8_t>(get(d, IB_PORT_HOQ_LIFE_F));
  p.vl_stall_count = static_cast<uint8_t>(get(d, IB_PORT_VL_STALL_COUNT_F));
  a.oper_vls = static_cast<uint8_t>(get(d, IB_PORT_OPER_VLS_F));
  p.subnet_timeout = static_cast<uint8_t>(get(d, IB_PORT_SUBN_TIMEOUT_F));
  p.part_enf_in = get(d, IB_PORT_PART_EN_INB_F) != 0;
  p.part_enf_out = get(d, IB_PORT_PART_EN_OUTB_F) != 0;
  // Extended speeds (FDR and up) are only meaningful when CapabilityMask says so;
  // ibsim leaves the field 0, which reads as "no extended speed".
  a.speed_ext_active = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_EXT_ACTIVE_F));
  p.m_key = get64(d, IB_PORT_MKEY_F);
  p.m_key_protect = static_cast<uint8_t>(get(d, IB_PORT_MKEY_PROT_BITS_F));
  p.m_key_lease = static_cast<uint16_t>(get(d, IB_PORT_MKEY_LEASE_F));
  p.m_key_violations = static_cast<uint16_t>(get(d, IB_PORT_MKEY_VIOL_F));
  return p;
}

SmpData encode_port_info(const PortInfo& p) {
  SmpData d = p.raw;
  const auto& a = p.attrs;
  put64(d, IB_PORT_GID_PREFIX_F, p.gid_prefix);
  put64(d, IB_PORT_MKEY_F, p.m_key);
  put(d, IB_PORT_MKEY_PROT_BITS_F, p.m_key_protect);
  put(d, IB_PORT_MKEY_LEASE_F, p.m_key_lease);
  put(d, IB_PORT_MKEY_VIOL_F, p.m_key_violations);
  put(d, IB_PORT_LID_F, a.lid.value);
  put(d, IB_PORT_SMLID_F, a.sm_lid.value);
  put(d, IB_PORT_CAPMASK_F, a.capability_mask);
  put(d, IB_PORT_LOCAL_PORT_F, p.local_port);
  put(d, IB_PORT_LINK_WIDTH_ENABLED_F, a.width_enabled);
  put(d, IB_PORT_LINK_WIDTH_SUPPORTED_F, a.width_supported);
  put(d, IB_PORT_LINK_WIDTH_ACTIVE_F, a.width_active);
  put(d, IB_PORT_LINK_SPEED_SUPPORTED_F, a.speed_supported);
  put(d, IB_PORT_STATE_F, static_cast<uint32_t>(a.state));
  put(d, IB_PORT_PHYS_STATE_F, a.phys_state);
  put(d, IB_PORT_LMC_F, a.lmc);
  put(d, IB_PORT_LINK_SPEED_ACTIVE_F, a.speed_active);
  put(d, IB_PORT_LINK_SPEED_ENABLED_F, a.speed_enabled);
  put(d, IB_PORT_NEIGHBOR_MTU_F, a.neighbor_mtu);
  put(d, IB_PORT_SMSL_F, p.sm_sl);
  put(d, IB_PORT_VL_CAP_F, a.vl_cap);
  put(d, IB_PORT_VL_HIGH_LIMIT_F, p.vl_high_limit);
  put(d, IB_PORT_VL_ARBITRATION_HIGH_CAP_F, p.vl_arb_high_cap);
  put(d, IB_PORT_VL_ARBITRATION_LOW_CAP_F, p.vl_arb_low_cap);
  put(d, IB_PORT_MTU_CAP_F, a.mtu_cap);
  put(d, IB_PORT_HOQ_LIFE_F, p.hoq_life);
  put(d, IB_PORT_VL_STALL_COUNT_F, p.vl_stall_count);
  put(d, IB_PORT_OPER_VLS_F, a.oper_vls);
  put(d, IB_PORT_SUBN_TIMEOUT_F, p.subnet_timeout);
  put(d, IB_PORT_CLIENT_REREG_F, p.client_reregister ? 1 : 0);
  put(d, IB_PORT_PART_EN_INB_F, p.part_enf_in ? 1 : 0);
  put(d, IB_PORT_PART_EN_OUTB_F, p.part_enf_out ? 1 : 0);
  put(d, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, a.speed_ext_active);
  return d;
}

bool client_reregister_asked(const SmpData& d) {
  return get(d, IB_PORT_CLIENT_REREG_F) != 0;
}

// --- P_KeyTable, SLtoVLMappingTable, VLArbitrationTable ---------------------------------

PkeyBlock decode_pkey_block(const SmpData& d) {
  PkeyBlock b{};
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint16_t>(d[2 * i] << 8 | d[2 * i + 1]);
  return b;
}

SmpData encode_pkey_block(const PkeyBlock& b) {
  SmpData d{};
  for (size_t i = 0; i < b.size(); ++i) {
    d[2 * i] = static_cast<uint8_t>(b[i] >> 8);
    d[2 * i + 1] = static_cast<uint8_t>(b[i] & 0xff);
  }
  return d;
}

// The same layout as a P_Key block: 32 big-endian 16-bit words.
MftBlock decode_mft_block(const SmpData& d) {
  return decode_pkey_block(d);
}
SmpData encode_mft_block(const MftBlock& b) {
  return encode_pkey_block(b);
}

// Byte i holds SL 2i in its high nibble and SL 2i+1 in its low nibble.
qos::Sl2Vl decode_sl2vl(const SmpData& d) {
  qos::Sl2Vl t{};
  for (size_t i = 0; i < 8; ++i) {
    t[2 * i] = d[i] >> 4;
    t[2 * i + 1] = d[i] & 0x0f;
  }
  return t;
}

SmpData encode_sl2vl(const qos::Sl2Vl& t) {
  SmpData d{};
  for (size_t i = 0; i < 8; ++i)
    d[i] = static_cast<uint8_t>((t[2 * i] & 0x0f) << 4 | (t[2 * i + 1] & 0x0f));
  return d;
}

// Entry i: byte 2i holds the VL in its low nibble (high nibble reserved), byte 2i+1 the weight.
qos::VlArbBlock decode_vlarb(const SmpData& d) {
  qos::VlArbBlock t{};
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = {static_cast<uint8_t>(d[2 * i] & 0x0f), d[2 * i + 1]};
  return t;
}

SmpData encode_vlarb(const qos::VlArbBlock& t) {
  SmpData d{};
  for (size_t i = 0; i < t.size(); ++i) {
    d[2 * i] = t[i].vl & 0x0f;
    d[2 * i + 1] = t[i].weight;
  }
  return d;
}

// --- LinearForwardingTable -------------------------------------------------------------

LftBlock decode_lft_block(const SmpData& d) {
  LftBlock b{};
  SmpData c = d;
  mad_get_array(c.data(), 0, IB_LINEAR_FORW_TBL_F, b.data());
  return b;
}

SmpData encode_lft_block(const LftBlock& b) {
  SmpData d{};
  LftBlock c = b;
  mad_set_array(d.data(), 0, IB_LINEAR_FORW_TBL_F, c.data());
  return d;
}

// --- SMInfo ------------------------------------------------------------------------------

const char* sm_state_name(SmState s) {
  switch (s) {
    case SmState::kNotActive:
      return "NOTACTIVE";
    case SmState::kDiscovering:
      return "DISCOVERING";
    case SmState::kStandby:
      return "STANDBY";
    case SmState::kMaster:
      return "MASTER";
  }
  return "UNKNOWN";
}

SmInfo decode_sm_info(const SmpData& d) {
  SmInfo s;
  s.guid = Guid{get64(d, IB_SMINFO_GUID_F)};
  s.sm_key = get64(d, IB_SMINFO_KEY_F);
  s.act_count = get(d, IB_SMINFO_ACT_F);
  s.priority = static_cast<uint8_t>(get(d, IB_SMINFO_PRIO_F));
  s.state = static_cast<SmState>(get(d, IB_SMINFO_STATE_F) & 0x3);
  return s;
}

SmpData encode_sm_info(const SmInfo& s) {
  SmpData d{};
  put64(d, IB_SMINFO_GUID_F, s.guid.value);
  put64(d, IB_SMINFO_KEY_F, s.sm_key);
  put(d, IB_SMINFO_ACT_F, s.act_count);
  put(d, IB_SMINFO_PRIO_F, s.priority);
  put(d, IB_SMINFO_STATE_F, static_cast<uint32_t>(s.state));
  return d;
}

}  // namespace weft::mad
