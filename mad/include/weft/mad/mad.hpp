// weft/mad/mad.hpp — SMP encoding and decoding through libibmad's field tables
// (mad_set_field / mad_get_field), never hand-packed structs. This is the only
// place in weft that knows MAD layouts.
//
//   weft::mad::SmpRequest req = weft::mad::SmpRequest::get(kAttrNodeInfo, 0, path);
//   weft::mad::MadBuf wire = weft::mad::encode_smp(req, tid);
//   auto reply = weft::mad::decode_smp(wire_back);          // checks the header
//   auto ni = weft::mad::decode_node_info(reply->data);     // typed attribute
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "weft/fabric/fabric.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/result.hpp"

namespace weft::mad {

constexpr size_t kMadSize = 256;
constexpr size_t kSmpDataSize = 64;
using MadBuf = std::array<uint8_t, kMadSize>;
using SmpData = std::array<uint8_t, kSmpDataSize>;

// Management classes and methods (IBTA 13.4.4, 14.2.1).
constexpr uint8_t kClassSmiLid = 0x01;
constexpr uint8_t kClassSmiDirect = 0x81;
constexpr uint8_t kClassSa = 0x03;  // SubnAdm (weft/sa/sa.hpp answers it)
constexpr size_t kSaHeader = 56;    // MAD + RMPP + SA headers (IBTA 15.2.1.1)
constexpr uint8_t kMethodGet = 0x01;
constexpr uint8_t kMethodSet = 0x02;
constexpr uint8_t kMethodGetResp = 0x81;
constexpr uint8_t kMethodTrap = 0x05;
constexpr uint8_t kMethodTrapRepress = 0x07;
constexpr uint8_t kMethodReport = 0x06;  // the SA's Report(Notice) to a subscriber
constexpr uint8_t kMethodReportResp = 0x86;

// SMP attribute ids (IBTA 14.2.5).
constexpr uint16_t kAttrNotice = 0x0002;
constexpr uint16_t kAttrNodeDesc = 0x0010;
constexpr uint16_t kAttrNodeInfo = 0x0011;
constexpr uint16_t kAttrSwitchInfo = 0x0012;
constexpr uint16_t kAttrPortInfo = 0x0015;
constexpr uint16_t kAttrPkeyTable = 0x0016;
constexpr uint16_t kAttrSl2Vl = 0x0017;
constexpr uint16_t kAttrVlArb = 0x0018;
constexpr uint16_t kAttrLft = 0x0019;
constexpr uint16_t kAttrMft = 0x001B;
constexpr uint16_t kAttrSmInfo = 0x0020;

const char* attr_name(uint16_t attr);

// A directed route: ports[1..hops] are the output ports at each hop; ports[0] is unused.
struct DrPath {
  uint8_t hops = 0;
  std::array<uint8_t, 64> ports{};
  DrPath extended(uint8_t port) const {
    DrPath p = *this;
    p.ports[++p.hops] = port;
    return p;
  }
  std::string str() const;  // "0,1,3"
  bool operator==(const DrPath&) const = default;
};

struct SmpRequest {
  uint8_t method = kMethodGet;
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
  bool directed = true;  // directed route (path) or LID routed (dlid)
  DrPath path;
  Lid dlid;
  SmpData data{};
  int retries = -1;  // attempts after a timeout; -1: the engine's transaction_retries
  // A Set the device takes long to carry out (an SLtoVLMappingTable Set naming every
  // input port): each attempt waits the engine's long_timeout (OpenSM:
  // long_transaction_timeout), or its timeout where that is longer.
  bool long_transaction = false;
  // A probe of an attribute a device may not implement (a vendor attribute ibsim drops):
  // no answer is an answer, counted apart (EngineStats::probes_unanswered), not as a
  // loss or a timeout, and not warned about.
  bool probe = false;
  // The M_Key the SMP carries; nullopt: the engine's key source chooses (0 without one).
  std::optional<uint64_t> m_key;

  static SmpRequest get(uint16_t attr, uint32_t mod, const DrPath& p) {
    SmpRequest r;
    r.attr_id = attr;
    r.attr_mod = mod;
    r.path = p;
    return r;
  }
  static SmpRequest set(uint16_t attr, uint32_t mod, const DrPath& p, const SmpData& d) {
    SmpRequest r = get(attr, mod, p);
    r.method = kMethodSet;
    r.data = d;
    return r;
  }
  std::string target() const;  // "DR 0,1,3" or "LID 12"
};

// A decoded MAD header and SMP payload.
struct Smp {
  uint8_t mgmt_class = 0;
  uint8_t method = 0;
  uint16_t status = 0;     // MAD status (the D bit is apart)
  bool direction = false;  // DR only: D bit, set on responses
  uint8_t hop_ptr = 0;
  uint8_t hop_count = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
  uint64_t m_key = 0;
  Lid dr_slid{Lid::kPermissive};  // DR: DrSLID (permissive when the route starts at the sender)
  DrPath path;                    // DR: initial path
  DrPath return_path;             // DR: return path
  SmpData data{};
  bool is_response() const { return (method & 0x80) != 0; }
};

MadBuf encode_smp(const SmpRequest& req, uint64_t tid);
// Encodes any Smp (the simulator builds responses with it).
MadBuf encode_smp(const Smp& smp);
// Decodes an SMP; refuses anything that is not a well-formed SMP of class 0x01/0x81.
Result<Smp> decode_smp(const uint8_t* buf, size_t len);
// Human-readable MAD status, e.g. "0x001c (unsupported attribute/modifier)".
std::string mad_status_str(uint16_t status);

// A GMP: a MAD of a GSI class, carried on QP1 and LID routed (performance management
// so far). Its payload is everything after the 24-byte common header; a class's own
// header (PerfMgt: 40 reserved bytes) is the payload's start.
constexpr size_t kMadHeaderSize = 24;
struct Gmp {
  uint8_t mgmt_class = 0;
  uint8_t class_version = 1;
  uint8_t method = kMethodGet;
  uint16_t status = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
  std::array<uint8_t, kMadSize - kMadHeaderSize> payload{};
  bool is_response() const { return (method & 0x80) != 0; }
};
MadBuf encode_gmp(const Gmp& g);
// Decodes a GMP's common header; refuses SMPs, the SA's class (weft/sa/sa.hpp) unless
// `sa_ok` (the SA's Reports and their ReportResponses travel as GMPs) and anything that
// is not a whole version-1 MAD.
Result<Gmp> decode_gmp(const uint8_t* buf, size_t len, bool sa_ok = false);

struct GmpRequest {
  Gmp mad;  // its TID is the engine's
  Lid dlid;
  int retries = -1;    // as SmpRequest's
  bool probe = false;  // as SmpRequest's: a class a device may not implement
  // Where on `dlid` it goes: QP1 (a PMA), or the QP, P_Key index and SL a subscriber
  // gave the SA (a Report).
  uint32_t qpn = 1;
  uint16_t pkey_index = 0;
  uint8_t sl = 0;
  std::string target() const { return "LID " + std::to_string(dlid.value); }
};

// --- attributes ---------------------------------------------------------------

struct NodeInfo {
  fabric::NodeType type = fabric::NodeType::kCa;
  uint8_t num_ports = 0;
  Guid system_guid;
  Guid node_guid;
  Guid port_guid;
  uint16_t partition_cap = 0;
  uint16_t device_id = 0;
  uint32_t revision = 0;
  uint8_t local_port = 0;
  uint32_t vendor_id = 0;
  uint8_t base_version = 1;
  uint8_t class_version = 1;
};
// Fails on values outside the IBTA ranges (node type, port counts).
Result<NodeInfo> decode_node_info(const SmpData& d);
SmpData encode_node_info(const NodeInfo& ni);

std::string decode_node_desc(const SmpData& d);
SmpData encode_node_desc(const std::string& desc);

struct SwitchInfo {
  uint16_t lft_cap = 0;
  uint16_t rft_cap = 0;
  uint16_t mft_cap = 0;
  uint16_t lft_top = 0;
  uint8_t default_port = 0;
  uint8_t lifetime = 0;
  bool port_state_change = false;
  uint16_t lids_per_port = 0;
  uint16_t partition_enforce_cap = 0;
  bool inbound_enforce_cap = false;   // the switch can filter P_Keys on input
  bool outbound_enforce_cap = false;  // ... and on output
  bool enhanced_port0 = false;
  // OptimizedSLtoVLMappingProgramming: an SL2VL Set may name all input ports (modifier
  // bit 17) and all output ports (bit 16) at once.
  bool optimized_sl2vl = false;
  uint16_t mft_top = 0;
  SmpData raw{};  // as read: a Set changes the fields above and keeps the rest
};
SwitchInfo decode_switch_info(const SmpData& d);
SmpData encode_switch_info(const SwitchInfo& si);

// PortInfo keeps the raw 64 bytes next to the decoded attributes, so a Set can
// change a few fields and leave the rest as the device reported them.
struct PortInfo {
  fabric::PortAttrs attrs;
  uint8_t local_port = 0;
  uint64_t gid_prefix = 0;
  uint8_t vl_high_limit = 0;
  uint8_t vl_arb_high_cap = 0;
  uint8_t vl_arb_low_cap = 0;
  uint8_t subnet_timeout = 0;
  uint8_t hoq_life = 0;        // HOQLife: 4.096 us * 2^x a packet may wait at a port's head
  uint8_t vl_stall_count = 0;  // VLStallCount: drops in a row before a VL stalls
  uint8_t sm_sl = 0;
  bool part_enf_in = false;   // PartitionEnforcementInbound (switch external ports)
  bool part_enf_out = false;  // PartitionEnforcementOutbound
  // M_Key (IBTA 14.2.4): the key (0 when a Get without it hides it), its protection
  // level, the lease period in seconds (0 = forever) and the violations counted.
  uint64_t m_key = 0;
  uint8_t m_key_protect = 0;
  uint16_t m_key_lease = 0;
  uint16_t m_key_violations = 0;
  // ClientReregister (IBTA 14.4.11): a request, not state. Set in a PortInfo Set, it
  // tells the port's clients to re-join their multicast groups, re-register services
  // and re-subscribe to traps. Decoding leaves it false (a device may echo it), so a
  // PortInfo read and sent back never asks again.
  bool client_reregister = false;
  SmpData raw{};
};
PortInfo decode_port_info(const SmpData& d);
// Writes attrs (and the other named fields) over `base.raw`.
SmpData encode_port_info(const PortInfo& pi);
// Whether a PortInfo Set's payload asks for ClientReregister (what a port's SMA sees).
bool client_reregister_asked(const SmpData& d);

// Capability mask bits (PortInfo:CapabilityMask).
constexpr uint32_t kCapIsSm = 1u << 1;
constexpr uint32_t kCapSlMap = 1u << 6;         // IsSLMappingSupported
constexpr uint32_t kCapClientRereg = 1u << 25;  // IsClientReregistrationSupported

// P_KeyTable (IBTA 14.2.5.7), SLtoVLMappingTable (14.2.5.8) and VLArbitrationTable
// (14.2.5.9). libibmad has no field tables for these arrays; each is a plain
// big-endian byte layout, encoded here byte by byte.
using PkeyBlock = std::array<uint16_t, 32>;  // attribute modifier: (switch port << 16) | block
PkeyBlock decode_pkey_block(const SmpData& d);
SmpData encode_pkey_block(const PkeyBlock& b);
// MulticastForwardingTable (IBTA 14.2.5.12): 32 MLIDs' port masks of 16 ports each;
// modifier: position (ports 16*pos .. 16*pos+15) << 28 | block (MLIDs 0xC000 + 32*block ..).
using MftBlock = std::array<uint16_t, 32>;
MftBlock decode_mft_block(const SmpData& d);
SmpData encode_mft_block(const MftBlock& b);
// SL2VL modifier: in port << 8 | out port. VLArb modifier: block (1-2 low, 3-4 high) << 16 | port.
qos::Sl2Vl decode_sl2vl(const SmpData& d);
SmpData encode_sl2vl(const qos::Sl2Vl& t);
qos::VlArbBlock decode_vlarb(const SmpData& d);
SmpData encode_vlarb(const qos::VlArbBlock& t);

// 64 LFT entries; block b covers LIDs 64b .. 64b+63.
using LftBlock = std::array<uint8_t, 64>;
LftBlock decode_lft_block(const SmpData& d);
SmpData encode_lft_block(const LftBlock& b);

enum class SmState : uint8_t { kNotActive = 0, kDiscovering = 1, kStandby = 2, kMaster = 3 };
const char* sm_state_name(SmState s);  // "MASTER", ...
struct SmInfo {
  Guid guid;
  uint64_t sm_key = 0;
  uint32_t act_count = 0;
  uint8_t priority = 0;
  SmState state = SmState::kNotActive;
};
SmInfo decode_sm_info(const SmpData& d);
SmpData encode_sm_info(const SmInfo& si);

}  // namespace weft::mad
