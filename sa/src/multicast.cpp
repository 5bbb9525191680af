// The SA's MCMemberRecord: Get/GetTable list groups and members, Set joins or creates a
// group, Delete leaves it; each change comes out as an McChange for the SM.
#include <algorithm>
#include <cstring>
#include <tuple>

#include "records.hpp"

namespace weft::sa::detail {

// --- MCMemberRecord ------------------------------------------------------------------
// Layout (IBTA 15.2.5.17): MGID 0, PortGID 16, Q_Key 32, MLID 36, MTU 38, TClass 39,
// P_Key 40, Rate 42, PacketLifeTime 43, SL/FlowLabel/HopLimit 44, Scope/JoinState 48,
// ProxyJoin 49. Component bits:
enum McBit : int {
  kMcMgid = 0,
  kMcPortGid = 1,
  kMcQkey = 2,
  kMcMlid = 3,
  kMcMtuSel = 4,
  kMcMtu = 5,
  kMcTclass = 6,
  kMcPkey = 7,
  kMcRateSel = 8,
  kMcRate = 9,
  kMcLifeSel = 10,
  kMcLife = 11,
  kMcSl = 12,
  kMcFlow = 13,
  kMcHop = 14,
  kMcScope = 15,
  kMcJoinState = 16,
  kMcProxy = 17
};
constexpr size_t kMcRecordSize = 52;

const Layout& mc_member_record() {
  static const Layout l{
      kMcRecordSize,
      {bytes(0, 16), bytes(16, 32), bytes(32, 36), bytes(36, 38), bytes(38, 39, 0xc0),
       bytes(38, 39, 0x3f), bytes(39, 40), bytes(40, 42), bytes(42, 43, 0xc0), bytes(42, 43, 0x3f),
       bytes(43, 44, 0xc0), bytes(43, 44, 0x3f), bytes(44, 45, 0xf0),
       Span{{{44, 0x0f}, {45, 0xff}, {46, 0xff}}}, bytes(47, 48), bytes(48, 49, 0xf0),
       bytes(48, 49, 0x0f), bytes(49, 50, 0x80)}};
  return l;
}

std::array<uint8_t, 56> mc_record(const McGroup& g, uint64_t prefix, uint64_t port, uint8_t state,
                                  uint8_t life) {
  std::array<uint8_t, 56> r{};
  std::copy(g.mgid.begin(), g.mgid.end(), r.begin());
  if (port) {
    put64(r.data() + 16, prefix);
    put64(r.data() + 24, port);
  }
  r[32] = uint8_t(g.qkey >> 24), r[33] = uint8_t(g.qkey >> 16), r[34] = uint8_t(g.qkey >> 8),
  r[35] = uint8_t(g.qkey);
  put16(r.data() + 36, g.mlid);
  r[38] = uint8_t(2 << 6 | g.mtu);
  r[39] = g.tclass;
  put16(r.data() + 40, g.pkey);
  r[42] = uint8_t(2 << 6 | g.rate);
  r[43] = uint8_t(2 << 6 | life);
  r[44] = uint8_t(g.sl << 4 | ((g.flow_label >> 16) & 0x0f));
  r[45] = uint8_t(g.flow_label >> 8);
  r[46] = uint8_t(g.flow_label);
  r[47] = g.hop_limit;
  r[48] = uint8_t(g.scope << 4 | (state & 0x0f));
  return r;
}

void mc_member_records(const Query& q, Answer& a, McDb& db) {
  for (const auto& [mlid, g] : db.groups()) {
    if (g.members.empty()) {
      auto r = mc_record(g, q.ctx.subnet_prefix, 0, 0, q.ctx.packet_life);
      add(a, mc_member_record(), r.data(), q);
    }
    for (const auto& [port, state] : g.members) {
      auto r = mc_record(g, q.ctx.subnet_prefix, port, state, q.ctx.packet_life);
      add(a, mc_member_record(), r.data(), q);
      if (a.status) return;
    }
  }
}

// The best MTU and rate a port's own link carries.
std::pair<uint8_t, uint8_t> port_limits(const fabric::Fabric& f, NodeIndex n, PortNum p) {
  const auto& at = f.node(n).ports[p].attrs;
  return {link_mtu(at), rate_code(link_gbps(at))};
}

// SubnAdmSet: join (creating the group if needed). Returns the member's record.
std::optional<std::array<uint8_t, 56>> mc_join(const Query& q, Answer& a, McDb& db,
                                               std::vector<McChange>& changed) {
  if (!bit(q.mask, kMcPortGid) || !bit(q.mask, kMcJoinState)) {
    a.status = kSaStatusInsufficientComponents;
    return std::nullopt;
  }
  const uint8_t state = q.rec[48] & 0x0f;
  if (!state) {
    a.status = kSaStatusReqInvalid;
    return std::nullopt;
  }
  // The member: an end port, or an SR-IOV VF behind one (its own P_Keys, its port's
  // link; the MFT forwards to that port).
  const uint64_t port_guid = be64(q.rec + 24);
  const auto& snap = *q.ctx.snap;
  static const std::vector<uint16_t> no_keys;
  const std::vector<uint16_t>* keys = nullptr;
  NodeIndex n = fabric::kNoNode;
  PortNum p = 0;
  if (auto it = q.idx.by_guid.find(port_guid); it != q.idx.by_guid.end()) {
    std::tie(n, p) = it->second;
    keys = &snap.partitions.pkeys[n][p];
  } else if (const auto* v = q.idx.vport(port_guid)) {
    n = v->node, p = v->port;
    keys = v->index < snap.partitions.vport_pkeys.size() ? &snap.partitions.vport_pkeys[v->index]
                                                         : &no_keys;
  }
  if (be64(q.rec + 16) != q.ctx.subnet_prefix || !keys) {
    a.status = kSaStatusInvalidGid;
    return std::nullopt;
  }
  auto [pmtu, prate] = port_limits(snap.fabric, n, p);
  auto holds_pkey = [&](uint16_t pkey) {
    for (uint16_t k : *keys)
      if ((k & 0x7fff) == (pkey & 0x7fff)) return true;
    return false;
  };
  Gid mgid{};
  std::copy(q.rec, q.rec + 16, mgid.begin());
  McGroup* g = (bit(q.mask, kMcMgid) && mgid != Gid{}) ? db.find(mgid) : nullptr;
  auto mtu_rank = [](uint8_t m) { return double(m); };
  auto rate_rank = [](uint8_t r) { return rate_gbps(r); };
  if (g) {
    // Join: what the requester asks must fit the group, and the group its port.
    const bool ok = (!bit(q.mask, kMcQkey) || be32(q.rec + 32) == g->qkey) &&
                    (!bit(q.mask, kMcPkey) || (be16(q.rec + 40) & 0x7fff) == (g->pkey & 0x7fff)) &&
                    select(g->mtu, bit(q.mask, kMcMtuSel), q.rec[38] >> 6, bit(q.mask, kMcMtu),
                           q.rec[38] & 0x3f, mtu_rank) == g->mtu &&
                    select(g->rate, bit(q.mask, kMcRateSel), q.rec[42] >> 6, bit(q.mask, kMcRate),
                           q.rec[42] & 0x3f, rate_rank) == g->rate &&
                    holds_pkey(g->pkey) && pmtu >= g->mtu && rate_gbps(prate) >= rate_gbps(g->rate);
    if (!ok) {
      a.status = kSaStatusReqInvalid;
      return std::nullopt;
    }
    g->members[port_guid] |= state;
    changed.push_back({McChange::kMembers, g->mgid, g->mlid});
    return mc_record(*g, q.ctx.subnet_prefix, port_guid, g->members[port_guid], q.ctx.packet_life);
  }
  // Create: the requester names the group's Q_Key, P_Key, SL, FlowLabel and TClass,
  // joins as a full member, and the group's MTU and rate must suit its port.
  for (int b : {kMcQkey, kMcPkey, kMcSl, kMcFlow, kMcTclass})
    if (!bit(q.mask, b)) {
      a.status = kSaStatusInsufficientComponents;
      return std::nullopt;
    }
  if (!(state & kJoinFull) || (bit(q.mask, kMcMgid) && mgid != Gid{} && mgid[0] != 0xff)) {
    a.status = bit(q.mask, kMcMgid) && mgid != Gid{} && mgid[0] != 0xff ? kSaStatusInvalidGid
                                                                        : kSaStatusReqInvalid;
    return std::nullopt;
  }
  McGroup ng;
  ng.mgid = bit(q.mask, kMcMgid) ? mgid : Gid{};
  ng.qkey = be32(q.rec + 32);
  ng.pkey = be16(q.rec + 40);
  ng.tclass = q.rec[39];
  ng.sl = q.rec[44] >> 4;
  ng.flow_label = uint32_t(q.rec[44] & 0x0f) << 16 | uint32_t(q.rec[45]) << 8 | q.rec[46];
  ng.hop_limit = q.rec[47];
  ng.scope = bit(q.mask, kMcScope) ? uint8_t(q.rec[48] >> 4) : uint8_t(2);
  auto mtu = select(pmtu, bit(q.mask, kMcMtuSel), q.rec[38] >> 6, bit(q.mask, kMcMtu),
                    q.rec[38] & 0x3f, mtu_rank);
  auto rate = select(prate, bit(q.mask, kMcRateSel), q.rec[42] >> 6, bit(q.mask, kMcRate),
                     q.rec[42] & 0x3f, rate_rank);
  if (!mtu || !rate || !(ng.pkey & 0x7fff) || !holds_pkey(ng.pkey)) {
    a.status = kSaStatusReqInvalid;
    return std::nullopt;
  }
  ng.mtu = *mtu;
  ng.rate = *rate;
  // An IPoIB group a host creates (signature 0x401B or 0x601B) must carry its
  // partition's broadcast group's MTU, rate and Q_Key, or IPoIB breaks on it (OpenSM's
  // ipoib_mcgroup_creation_validation, on by default). Creating the broadcast group
  // itself is the exception.
  const bool ipoib =
      ng.mgid[0] == 0xff && (ng.mgid[2] == 0x40 || ng.mgid[2] == 0x60) && ng.mgid[3] == 0x1b;
  const bool is_bcast =
      ipoib && ng.mgid[2] == 0x40 &&
      std::all_of(ng.mgid.begin() + 6, ng.mgid.begin() + 12, [](uint8_t b) { return b == 0; }) &&
      std::all_of(ng.mgid.begin() + 12, ng.mgid.end(), [](uint8_t b) { return b == 0xff; });
  if (ipoib && !is_bcast) {
    const McGroup* bc = nullptr;
    for (const auto& [m, g] : db.groups())
      if (g.mgid[2] == 0x40 && g.mgid[3] == 0x1b && (g.pkey & 0x7fff) == (ng.pkey & 0x7fff) &&
          g.mgid[12] == 0xff && g.mgid[15] == 0xff)
        bc = &g;
    const bool fits =
        bc &&
        (!bit(q.mask, kMcMtu) || select(bc->mtu, bit(q.mask, kMcMtuSel), q.rec[38] >> 6, true,
                                        q.rec[38] & 0x3f, mtu_rank) == bc->mtu) &&
        (!bit(q.mask, kMcRate) || select(bc->rate, bit(q.mask, kMcRateSel), q.rec[42] >> 6, true,
                                         q.rec[42] & 0x3f, rate_rank) == bc->rate) &&
        ng.qkey == bc->qkey && pmtu >= bc->mtu;
    if (!fits) {
      a.status = kSaStatusReqInvalid;
      return std::nullopt;
    }
    ng.mtu = bc->mtu;
    ng.rate = bc->rate;
  }
  ng.members[port_guid] = state;
  auto mlid = db.create(ng, q.ctx.mft_cap, q.ctx.mlid_free);
  if (!mlid) {
    a.status = kSaStatusNoResources;
    return std::nullopt;
  }
  const McGroup& made = *db.by_mlid(*mlid);
  changed.push_back({McChange::kCreated, made.mgid, *mlid});
  return mc_record(made, q.ctx.subnet_prefix, port_guid, state, q.ctx.packet_life);
}

// SubnAdmDelete: leave (the JoinState bits given).
std::optional<std::array<uint8_t, 56>> mc_leave(const Query& q, Answer& a, McDb& db,
                                                std::vector<McChange>& changed) {
  if (!bit(q.mask, kMcMgid) || !bit(q.mask, kMcPortGid) || !bit(q.mask, kMcJoinState)) {
    a.status = kSaStatusInsufficientComponents;
    return std::nullopt;
  }
  Gid mgid{};
  std::copy(q.rec, q.rec + 16, mgid.begin());
  const uint64_t port = be64(q.rec + 24);
  McGroup* g = db.find(mgid);
  if (!g || be64(q.rec + 16) != q.ctx.subnet_prefix) {
    a.status = kSaStatusReqInvalid;
    return std::nullopt;
  }
  const McGroup copy = *g;
  const uint8_t state = q.rec[48] & 0x0f;
  if (!db.leave(mgid, port, state)) {
    a.status = kSaStatusReqInvalid;
    return std::nullopt;
  }
  changed.push_back({db.find(mgid) ? McChange::kMembers : McChange::kDeleted, mgid, copy.mlid});
  return mc_record(copy, q.ctx.subnet_prefix, port, state, q.ctx.packet_life);
}

// --- ServiceRecord and InformInfo ------------------------------------------------------
// ServiceRecord (IBTA 15.2.5.14, 176 bytes): ServiceID 0, ServiceGID 8, ServiceP_Key 24,
// ServiceLease 28, ServiceKey 32, ServiceName 48 (64 bytes), ServiceData8 112 (16 x 1),

}  // namespace weft::sa::detail
