// The SA's PathRecord and MultiPathRecord: one LFT walk per path (routing::walk) for MTU,
// rate and SL; P_Key from the partitions both ends share; the QoS policy's level.
#include <algorithm>
#include <cstring>

#include "weft/routing/walk.hpp"

#include "records.hpp"

namespace weft::sa::detail {

namespace {

// The port GUID a path end answers for, and the P_Keys it holds.
uint64_t guid_of(const SubnetSnapshot& snap, const PathEnd& e) {
  return e.vport != SIZE_MAX ? snap.fabric.vports()[e.vport].guid.value
                             : snap.fabric.node(e.n).ports[e.p].guid.value;
}

const std::vector<uint16_t>& pkeys_of(const SubnetSnapshot& snap, const PathEnd& e) {
  static const std::vector<uint16_t> none;
  if (e.vport == SIZE_MAX) return snap.partitions.pkeys[e.n][e.p];
  return e.vport < snap.partitions.vport_pkeys.size() ? snap.partitions.vport_pkeys[e.vport] : none;
}

}  // namespace

bool path_record(const Query& q, const PathEnd& s, const PathEnd& d, Answer& a) {
  const auto& snap = *q.ctx.snap;
  const auto& f = snap.fabric;
  const auto& t = snap.tables;
  const uint64_t sguid = guid_of(snap, s), dguid = guid_of(snap, d);
  // P_Key: one the two ports share with a full member among them.
  const uint16_t want_pkey = bit(q.mask, kPrPkey) ? be16(q.rec + 50) : 0;
  if (bit(q.mask, kPrPkey) && !(want_pkey & 0x7fff)) return false;
  // The QoS policy (under QoS): the level of the first rule the query matches.
  std::optional<qos::QosDecision> level;
  if (q.ctx.qos && snap.qos_policy) {
    std::optional<uint64_t> sid;
    if (bit(q.mask, 0) || bit(q.mask, 1)) sid = be64(q.rec);
    std::optional<uint16_t> pkq;
    if (bit(q.mask, kPrPkey)) pkq = want_pkey;
    std::optional<uint16_t> qc;
    if (bit(q.mask, kPrQos)) qc = uint16_t(be16(q.rec + 52) >> 4);
    level = snap.qos_policy->decide(sguid, dguid, sid, pkq, qc);
  }
  // P_Key: one the two ports share (a full member among them), within the level's.
  std::optional<uint16_t> pk;
  const auto& dkeys = pkeys_of(snap, d);
  for (uint16_t k : pkeys_of(snap, s)) {
    if (want_pkey && (k & 0x7fff) != (want_pkey & 0x7fff)) continue;
    if (level && !level->pkeys.empty() &&
        std::none_of(level->pkeys.begin(), level->pkeys.end(),
                     [&](const config::Range64& r) { return r.contains(k & 0x7fff); }))
      continue;
    // The same partition, a full member among the two (IBTA 10.9.3).
    for (uint16_t m : dkeys)
      if ((m & 0x7fff) == (k & 0x7fff) && ((k | m) & qos::kFullMember)) {
        pk = k;
        break;
      }
    if (pk) break;
  }
  if (!pk) return false;
  // Walk the forwarding tables: MTU and rate are the least of the links crossed.
  uint8_t mtu = 5;
  double gbps = 1e9;
  uint8_t sl = 0;
  bool have_sl = false;
  auto take_link = [&](const fabric::Port& port) {
    const auto& at = port.attrs;
    mtu = std::min(mtu, link_mtu(at));
    gbps = std::min(gbps, link_gbps(at));
  };
  if (!(s.n == d.n && s.p == d.p)) {
    const auto end = routing::walk(
        f, t.lft, s.n, s.p, d.lid,
        [&](NodeIndex n, PortNum in) { return n == d.n && (f.node(n).is_switch() || in == d.p); },
        [&](NodeIndex n, PortNum, PortNum out) {
          // The SL is the engine's at the first switch.
          if (f.node(n).is_switch() && !have_sl && n < t.path_sl.size() &&
              d.lid < t.path_sl[n].size()) {
            sl = t.path_sl[n][d.lid];
            have_sl = true;
          }
          take_link(f.node(n).ports[out]);
        });
    if (end.kind != routing::WalkEnd::kArrived) return false;
  }
  if (gbps > 1e8) gbps = link_gbps(f.node(s.n).ports[s.p].attrs);
  // SL: the routing engine's layer (deadlock freedom comes first); without layers, the
  // QoS level's, else the partition's under QoS.
  if (!have_sl || (t.vls <= 1 && t.hop_vl.empty())) {
    sl = 0;
    if (level && level->level != "none")
      sl = level->sl;
    else if (q.ctx.qos)
      for (const auto& part : snap.partitions.partitions)
        if (part.pkey == (*pk & 0x7fff)) sl = part.flags.sl;
  }
  if (level && level->mtu_limit) mtu = std::min(mtu, *level->mtu_limit);
  if (level && level->rate_limit) gbps = std::min(gbps, rate_gbps(*level->rate_limit));
  if (bit(q.mask, kPrSl) && (q.rec[53] & 0x0f) != sl) return false;
  auto mtu_ans = select(mtu, bit(q.mask, kPrMtuSel), q.rec[54] >> 6, bit(q.mask, kPrMtu),
                        q.rec[54] & 0x3f, [](uint8_t m) { return double(m); });
  if (!mtu_ans) return false;
  const uint8_t rate = rate_code(gbps);
  auto rate_ans = select(rate, bit(q.mask, kPrRateSel), q.rec[55] >> 6, bit(q.mask, kPrRate),
                         q.rec[55] & 0x3f, [](uint8_t r) { return rate_gbps(r); });
  if (!rate_ans) return false;
  const uint8_t life = level && level->packet_life ? *level->packet_life : q.ctx.packet_life;
  auto life_ans = select(life, bit(q.mask, kPrLifeSel), q.rec[56] >> 6, bit(q.mask, kPrLife),
                         q.rec[56] & 0x3f, [](uint8_t l) { return double(l); });
  if (!life_ans) return false;
  if (bit(q.mask, kPrRaw) && (q.rec[44] & 0x80)) return false;  // raw packets: not a path
  if (a.count >= kMaxRecords) {
    a.status = kSaStatusNoResources;
    return false;
  }
  std::array<uint8_t, kPathRecordSize> r{};
  put64(r.data() + 8, q.ctx.subnet_prefix);
  put64(r.data() + 16, dguid);
  put64(r.data() + 24, q.ctx.subnet_prefix);
  put64(r.data() + 32, sguid);
  put16(r.data() + 40, d.lid);
  put16(r.data() + 42, s.lid);
  // FlowLabel, HopLimit and TClass: what the requester gave (one subnet: no routing);
  // with a VF at either end, HopLimit virt_default_hop_limit unless given (NVIDIA's
  // option: above 1 the requester sends a GRH, by whose GID the CA finds the VF).
  if (bit(q.mask, kPrFlow)) {
    r[44] = q.rec[44] & 0x0f;
    r[45] = q.rec[45];
    r[46] = q.rec[46];
  }
  if (bit(q.mask, kPrHop))
    r[47] = q.rec[47];
  else if (s.vport != SIZE_MAX || d.vport != SIZE_MAX)
    r[47] = q.ctx.vport_hop_limit;
  if (bit(q.mask, kPrTclass)) r[48] = q.rec[48];
  r[49] = 0x80;  // reversible: the tables route both ways
  put16(r.data() + 50, *pk);
  r[53] = sl & 0x0f;
  r[54] = uint8_t(2 << 6 | *mtu_ans);
  r[55] = uint8_t(2 << 6 | *rate_ans);
  r[56] = uint8_t(2 << 6 | *life_ans);
  if (bit(q.mask, kPrTclass) && r[48] != q.rec[48]) return false;
  if (bit(q.mask, kPrReversible) && (q.rec[49] & 0x80) && !(r[49] & 0x80)) return false;
  a.records.insert(a.records.end(), r.begin(), r.end());
  ++a.count;
  return true;
}

void path_records(const Query& q, Answer& a) {
  const auto& idx = q.idx;
  const auto& f = q.ctx.snap->fabric;
  // An end: a port and the LIDs asked of it (the one LID given, else all 2^LMC of them).
  struct Ends {
    NodeIndex n;
    PortNum p;
    uint16_t first, count;
    size_t vport = SIZE_MAX;
  };
  auto lids_of = [&](NodeIndex n, PortNum p) {
    return uint16_t(1u << (f.node(n).ports[p].attrs.lmc & 7));
  };
  // A virtual port by its GUID or its own LID; a VF without one answers at its port's.
  const auto& vps = f.vports();
  auto vport_lid = [&](const SaAgent::Index::VPortAt& v) {
    return vps[v.index].lid.value ? vps[v.index].lid.value : idx.lid_of[v.node][v.port];
  };
  // An end given by GID (subnet prefix + port GUID) or by LID; nullopt = not given.
  auto end = [&](int gid_bit, size_t gid_off, int lid_bit, size_t lid_off,
                 uint16_t* status) -> std::optional<std::vector<Ends>> {
    std::vector<Ends> v;
    if (bit(q.mask, gid_bit)) {
      const uint64_t prefix = be64(q.rec + gid_off), guid = be64(q.rec + gid_off + 8);
      auto it = idx.by_guid.find(guid);
      if (prefix == q.ctx.subnet_prefix && it == idx.by_guid.end())
        if (const auto* vp = idx.vport(guid)) {
          const uint16_t base = vport_lid(*vp);
          if (bit(q.mask, lid_bit)) {
            const uint16_t lid = be16(q.rec + lid_off);
            if (lid < base || lid >= base + lids_of(vp->node, vp->port)) return v;
            v.push_back({vp->node, vp->port, lid, 1, vp->index});
          } else if (base) {
            v.push_back({vp->node, vp->port, base, lids_of(vp->node, vp->port), vp->index});
          }
          return v;
        }
      if (prefix != q.ctx.subnet_prefix || it == idx.by_guid.end()) {
        *status = kSaStatusInvalidGid;
        return v;
      }
      const auto [n, p] = it->second;
      if (bit(q.mask, lid_bit)) {
        const uint16_t lid = be16(q.rec + lid_off);
        if (idx.at(lid) != it->second) return v;  // GID and LID disagree
        v.push_back({n, p, lid, 1});
      } else {
        v.push_back({n, p, idx.lid_of[n][p], lids_of(n, p)});
      }
      return v;
    }
    if (bit(q.mask, lid_bit)) {
      const uint16_t lid = be16(q.rec + lid_off);
      if (auto at = idx.at(lid))
        v.push_back({at->first, at->second, lid, 1});
      else if (const auto* vp = idx.vport_at(lid))
        v.push_back({vp->node, vp->port, lid, 1, vp->index});
      return v;
    }
    return std::nullopt;
  };
  uint16_t status = 0;
  auto src = end(kPrSgid, 24, kPrSlid, 42, &status);
  if (status) return void(a.status = status);
  auto dst = end(kPrDgid, 8, kPrDlid, 40, &status);
  if (status) return void(a.status = status);
  if (!q.table && (!src || !dst)) return void(a.status = kSaStatusInsufficientComponents);
  if (!src && !dst) return void(a.status = kSaStatusInsufficientComponents);
  auto all = [&] {
    std::vector<Ends> v;
    for (NodeIndex n = 0; n < f.size(); ++n)
      for (PortNum p = 0; p < f.node(n).ports.size(); ++p)
        if (idx.lid_of[n][p]) v.push_back({n, p, idx.lid_of[n][p], lids_of(n, p)});
    return v;
  };
  const std::vector<Ends> ss = src ? *src : all();
  const std::vector<Ends> ds = dst ? *dst : all();
  // Per pair of ports, as OpenSM orders them (IBTA 15.2.5.16 Preference): first the
  // "fully redundant" LID pairs, the i-th LID of each end (preference 0), then every
  // other pair, source LID outer (preference 2); at most NumbPath of them when the
  // mask gives it, one for a Get.
  const size_t cap = !q.table                   ? 1
                     : bit(q.mask, kPrNumbPath) ? size_t(q.rec[49] & 0x7f)
                                                : ~size_t(0);
  for (const auto& s : ss)
    for (const auto& d : ds) {
      size_t got = 0;
      auto one = [&](uint16_t i, uint16_t j, uint8_t preference) {
        if (path_record(q, {s.n, s.p, uint16_t(s.first + i), s.vport},
                        {d.n, d.p, uint16_t(d.first + j), d.vport}, a)) {
          a.records[a.records.size() - kPathRecordSize + 57] = preference;
          ++got;
        }
        return !a.status && got < cap;
      };
      bool more = got < cap;
      for (uint16_t i = 0; more && i < std::min(s.count, d.count); ++i) more = one(i, i, 0);
      for (uint16_t i = 0; more && i < s.count; ++i)
        for (uint16_t j = 0; more && j < d.count; ++j)
          if (i != j) more = one(i, j, 2);
      if (a.status) return;
    }
}

// --- MultiPathRecord -------------------------------------------------------------------
// Layout (IBTA 15.2.5.20): RawTraffic/FlowLabel/HopLimit 0, TClass 4, Reversible/NumbPath 5,
// P_Key 6, QoSClass/SL 8, MTU 10, Rate 11, PacketLifeTime 12, ServiceID[63:56] 13,
// IndependenceSelector 14, SGIDCount 15, DGIDCount 16, ServiceID[55:0] 17, then SGIDCount
// + DGIDCount GIDs from 24. Component bits, and the PathRecord bit each one stands for:
enum MprBit : int { kMprNumbPath = 6, kMprSgidCount = 19, kMprDgidCount = 20 };
constexpr std::pair<int, int> kMprToPr[] = {
    {0, kPrRaw},        {2, kPrFlow},  {3, kPrHop},      {4, kPrTclass},
    {5, kPrReversible}, {7, kPrPkey},  {8, kPrQos},      {9, kPrSl},
    {10, kPrMtuSel},    {11, kPrMtu},  {12, kPrRateSel}, {13, kPrRate},
    {14, kPrLifeSel},   {15, kPrLife}, {16, 0},          {21, 1}};
constexpr size_t kMprGids = 24;
constexpr size_t kMaxMprCandidates = 64;  // LID pairs weighed per SGID-DGID pair

// The links a path from `s` to `dlid` crosses, as (node << 8 | out port); empty if none.
std::vector<uint64_t> path_links(const SubnetSnapshot& snap, const PathEnd& s, uint16_t dlid) {
  std::vector<uint64_t> links;
  const auto end = routing::walk(
      snap.fabric, snap.tables.lft, s.n, s.p, dlid, [](NodeIndex, PortNum) { return false; },
      [&](NodeIndex n, PortNum, PortNum out) { links.push_back(uint64_t(n) << 8 | out); });
  // Delivered to an end port, or to the switch itself.
  if (end.kind == routing::WalkEnd::kAtEndPort || end.kind == routing::WalkEnd::kAtSwitch)
    return links;
  return {};
}

void multipath_records(const SaContext& ctx, const SaAgent::Index& idx,
                       std::span<const uint8_t> rec, uint64_t mask, Answer& a) {
  if (mask >> 22 || bit(mask, 1) || bit(mask, 18)) return void(a.status = kSaStatusReqInvalid);
  if (!bit(mask, kMprSgidCount) || !bit(mask, kMprDgidCount))
    return void(a.status = kSaStatusInsufficientComponents);
  if (rec.size() < kMprGids) return void(a.status = kSaStatusReqInvalid);
  const size_t sc = rec[15], dc = rec[16];
  if (sc == 0 || dc == 0) return void(a.status = kSaStatusInsufficientComponents);
  if (kMprGids + 16 * (sc + dc) > rec.size()) return void(a.status = kSaStatusReqInvalid);
  // The request as a PathRecord query, so one builder answers both.
  std::array<uint8_t, kPathRecordSize> pr{};
  uint64_t pr_mask = 0;
  for (auto [m, b] : kMprToPr)
    if (bit(mask, m)) pr_mask |= uint64_t(1) << b;
  pr[0] = rec[13];
  std::memcpy(pr.data() + 1, rec.data() + 17, 7);  // ServiceID
  std::memcpy(pr.data() + 44, rec.data() + 0, 4);  // RawTraffic, FlowLabel, HopLimit
  pr[48] = rec[4];
  pr[49] = rec[5];
  std::memcpy(pr.data() + 50, rec.data() + 6, 4);  // P_Key, QoSClass/SL
  pr[54] = rec[10];
  pr[55] = rec[11];
  pr[56] = rec[12];
  const Query q{ctx, idx, pr.data(), pr_mask, true};
  const size_t per_pair = bit(mask, kMprNumbPath) ? std::max<size_t>(1, rec[5] & 0x7f) : 1;
  // An end port by its GID, or an SR-IOV VF (its own LID, else its port's).
  auto end_of = [&](size_t i) -> std::optional<PathEnd> {
    const uint8_t* g = rec.data() + kMprGids + 16 * i;
    if (be64(g) != ctx.subnet_prefix) return std::nullopt;
    if (auto it = idx.by_guid.find(be64(g + 8)); it != idx.by_guid.end())
      return PathEnd{it->second.first, it->second.second,
                     idx.lid_of[it->second.first][it->second.second]};
    const auto* v = idx.vport(be64(g + 8));
    if (!v) return std::nullopt;
    const uint16_t own = ctx.snap->fabric.vports()[v->index].lid.value;
    const uint16_t lid = own ? own : idx.lid_of[v->node][v->port];
    if (!lid) return std::nullopt;
    return PathEnd{v->node, v->port, lid, v->index};
  };
  std::vector<PathEnd> srcs, dsts;
  for (size_t i = 0; i < sc + dc; ++i) {
    auto e = end_of(i);
    if (!e) return void(a.status = kSaStatusInvalidGid);
    (i < sc ? srcs : dsts).push_back(*e);
  }
  const auto& f = ctx.snap->fabric;
  auto lids = [&](const PathEnd& e) { return size_t(1) << f.node(e.n).ports[e.p].attrs.lmc; };
  for (const PathEnd& s : srcs)
    for (const PathEnd& d : dsts) {
      // Every LID pair the LMCs give (bounded); the first path, then each next one the
      // one sharing the fewest links with those already chosen.
      std::vector<std::pair<PathEnd, PathEnd>> cand;
      for (size_t i = 0; i < lids(s) && cand.size() < kMaxMprCandidates; ++i)
        for (size_t j = 0; j < lids(d) && cand.size() < kMaxMprCandidates; ++j)
          cand.push_back({PathEnd{s.n, s.p, uint16_t(s.lid + i), s.vport},
                          PathEnd{d.n, d.p, uint16_t(d.lid + j), d.vport}});
      std::vector<std::vector<uint64_t>> links(cand.size());
      for (size_t c = 0; c < cand.size(); ++c) {
        links[c] = path_links(*ctx.snap, cand[c].first, cand[c].second.lid);
        std::sort(links[c].begin(), links[c].end());
      }
      std::vector<uint64_t> used;
      std::vector<char> taken(cand.size(), 0);
      for (size_t got = 0; got < per_pair;) {
        size_t best = cand.size(), best_shared = SIZE_MAX;
        for (size_t c = 0; c < cand.size(); ++c) {
          if (taken[c]) continue;
          size_t shared = 0;
          for (uint64_t l : links[c]) shared += std::binary_search(used.begin(), used.end(), l);
          if (shared < best_shared) best = c, best_shared = shared;
        }
        if (best == cand.size()) break;
        taken[best] = 1;
        if (!path_record(q, cand[best].first, cand[best].second, a)) {
          if (a.status) return;
          continue;
        }
        ++got;
        used.insert(used.end(), links[best].begin(), links[best].end());
        std::sort(used.begin(), used.end());
      }
    }
}

}  // namespace weft::sa::detail
