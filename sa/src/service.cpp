// The SA's ServiceRecord (with leases), InformInfo subscriptions and their records.
#include <algorithm>
#include <cstring>

#include "records.hpp"

namespace weft::sa::detail {

// ServiceData16 128 (8 x 2), ServiceData32 144 (4 x 4), ServiceData64 160 (2 x 8).
constexpr size_t kServiceRecordSize = 176;
const Layout& service_record() {
  static const Layout l = [] {
    Layout l{kServiceRecordSize,
             {bytes(0, 8), bytes(8, 24), bytes(24, 26), bytes(26, 28), bytes(28, 32), bytes(32, 48),
              bytes(48, 112)}};
    for (uint16_t i = 0; i < 16; ++i) l.fields.push_back(bytes(112 + i, 113 + i));
    for (uint16_t i = 0; i < 8; ++i) l.fields.push_back(bytes(128 + 2 * i, 130 + 2 * i));
    for (uint16_t i = 0; i < 4; ++i) l.fields.push_back(bytes(144 + 4 * i, 148 + 4 * i));
    for (uint16_t i = 0; i < 2; ++i) l.fields.push_back(bytes(160 + 8 * i, 168 + 8 * i));
    return l;
  }();
  return l;
}

// InformInfo (IBTA 13.4.8.3, 36 bytes): GID 0, LIDRangeBegin 16, LIDRangeEnd 18,
// IsGeneric 22, Subscribe 23, Type 24, TrapNumber 26, QPN 28 (24 bits), RespTime 31,
// ProducerType 33 (24 bits). InformInfoRecord: SubscriberGID 0, Enum 16, then it at 24.
constexpr size_t kInformInfoSize = 36;
const Layout& inform_info_record() {
  static const Layout l{60, {bytes(0, 16), bytes(16, 18)}};
  return l;
}

bool same_service(const uint8_t* a, const uint8_t* b) {
  return std::equal(a, a + 26, b);  // ServiceID, ServiceGID and ServiceP_Key
}

// What a requester sees of a service: the ServiceKey (bytes 32-47) only when trusted
// (IBTA 15.2.5.14; OpenSM zeroes it for a request without the SA_Key).
void add_service(Answer& a, const SaAgent::Service& sv, const Query& q) {
  if (q.trusted) return void(add(a, service_record(), sv.rec.data(), q));
  // Matched on the key held (as OpenSM matches), shown without it.
  if (bit(q.mask, 5) && !std::equal(sv.rec.begin() + 32, sv.rec.begin() + 48, q.rec + 32)) return;
  std::array<uint8_t, kServiceRecordSize> shown = sv.rec;
  std::fill(shown.begin() + 32, shown.begin() + 48, 0);
  Query without_key = q;
  without_key.mask &= ~(uint64_t(1) << 5);
  add(a, service_record(), shown.data(), without_key);
}

// ServiceRecord Set (register, with a lease), Delete, and Get/GetTable. Leases run out
// when someone looks. A registered service belongs to the port that registered it: a
// Set over it or a Delete from another port is REQ_INVALID unless trusted (the SA_Key;
// weft's choice: OpenSM lets any port replace or delete any service).
void service_request(const Query& q, Answer& a, uint8_t method,
                     std::vector<SaAgent::Service>& services) {
  using Service = SaAgent::Service;
  std::erase_if(services, [&](const Service& sv) { return sv.expires_s <= q.ctx.now_s; });
  // Partitions: a requester sees, registers and removes only services in a partition
  // its port is in (as OpenSM checks). A requester the SA cannot place is not limited.
  const auto requester = q.idx.at(q.ctx.requester.value);
  auto shares = [&](const uint8_t* rec) {
    if (!requester) return true;
    const uint16_t k = be16(rec + 24) & 0x7fff;
    const auto& mine = q.ctx.snap->partitions.pkeys;
    if (requester->first >= mine.size() || requester->second >= mine[requester->first].size())
      return true;
    const auto& keys = mine[requester->first][requester->second];
    return std::any_of(keys.begin(), keys.end(), [&](uint16_t m) { return (m & 0x7fff) == k; });
  };
  if (method != mad::kMethodSet && method != kMethodDelete) {
    for (const auto& sv : services)
      if (shares(sv.rec.data())) add_service(a, sv, q);
    return;
  }
  if (!bit(q.mask, 0) || !bit(q.mask, 1)) {
    a.status = kSaStatusInsufficientComponents;
    return;
  }
  // The service's GID: an end port's, or an SR-IOV VF's.
  if (be64(q.rec + 8) != q.ctx.subnet_prefix ||
      (!q.idx.by_guid.count(be64(q.rec + 16)) && !q.idx.vport(be64(q.rec + 16)))) {
    a.status = kSaStatusInvalidGid;
    return;
  }
  Service sv;
  std::copy(q.rec, q.rec + kServiceRecordSize, sv.rec.begin());
  if (!bit(q.mask, 2)) put16(sv.rec.data() + 24, 0xffff);  // no P_Key named: the default
  if (!shares(sv.rec.data())) {
    a.status = kSaStatusReqInvalid;  // a partition the requester's port is not in
    return;
  }
  auto it = std::find_if(services.begin(), services.end(), [&](const Service& o) {
    return same_service(o.rec.data(), sv.rec.data());
  });
  const uint64_t me =
      requester ? q.ctx.snap->fabric.node(requester->first).ports[requester->second].guid.value : 0;
  if (it != services.end() && !q.trusted && it->owner != 0 && it->owner != me) {
    a.status = kSaStatusReqInvalid;  // another port's service
    return;
  }
  // A trusted request changing another port's service leaves it that port's.
  sv.owner = it != services.end() && q.trusted && it->owner != 0 ? it->owner : me;
  if (method == kMethodDelete) {
    if (it == services.end()) {
      a.status = kSaStatusNoRecords;  // as OpenSM answers
      return;
    }
    sv = *it;
    services.erase(it);
  } else {
    const uint32_t lease = be32(sv.rec.data() + 28);
    sv.expires_s = lease == 0xffffffffu ? INT64_MAX : q.ctx.now_s + lease;
    if (it != services.end()) {
      *it = sv;
    } else if (services.size() >= kMaxRecords) {
      a.status = kSaStatusNoResources;
      return;
    } else {
      services.push_back(sv);
    }
  }
  a.count = 0;
  Query whole = q;
  whole.mask = 0;  // the record as held, whatever the request named
  add_service(a, sv, whole);
}

// InformInfo Set: subscribe (or unsubscribe) the requester to a trap. The subscriber is
// the requester's port (OpenSM: the GID of the MAD's source, ERR 4308 when unknown);
// Reports go to the QPN the InformInfo names, else to the requester's QP.
void inform_request(const Query& q, Answer& a, std::vector<SaAgent::Subscription>& subs) {
  const auto& ctx = q.ctx;
  const uint8_t* ii = q.rec;
  const auto at = q.idx.at(ctx.requester.value);
  if (ii[23] > 1 || !at) {  // Subscribe is 0 or 1; a requester the SA cannot place
    a.status = kSaStatusReqInvalid;
    return;
  }
  // The security traps (generic 256-259) are for trusted subscribers only (OpenSM: a
  // request without the SA_Key gets REQ_INVALID); a wildcard subscription made without
  // the key does not hear them (reports()).
  const uint16_t trap = be16(ii + 26);
  if (ii[23] && ii[22] && trap >= 256 && trap <= 259 && !q.trusted) {
    a.status = kSaStatusReqInvalid;
    return;
  }
  const uint32_t qpn = uint32_t(ii[28]) << 16 | uint32_t(ii[29]) << 8 | ii[30];
  SaAgent::Subscription sub{ctx.requester,
                            qpn ? qpn : ctx.requester_qpn,
                            ctx.requester_pkey_index,
                            ctx.requester_sl,
                            {},
                            {}};
  std::copy(ii, ii + kInformInfoSize, sub.info.begin());
  sub.trusted = q.trusted;
  sub.subscriber = sm::port_gid(ctx.snap->fabric.node(at->first).ports[at->second].guid.value,
                                ctx.subnet_prefix);
  // The same subscription: same subscriber and QP, and the same filter (GID, LID range,
  // IsGeneric, Type, TrapNumber or DeviceID, ProducerType or VendorID).
  auto same = [&](const SaAgent::Subscription& o) {
    const uint8_t* b = o.info.data();
    return o.subscriber == sub.subscriber && o.qpn == sub.qpn && std::equal(b, b + 20, ii) &&
           b[22] == ii[22] && std::equal(b + 24, b + 28, ii + 24) &&
           std::equal(b + 33, b + 36, ii + 33);
  };
  if (ii[23]) {  // Subscribe
    if (auto it = std::find_if(subs.begin(), subs.end(), same); it != subs.end()) {
      it->trusted = it->trusted || q.trusted;  // subscribed again with the key
    } else {
      if (subs.size() >= 65536) {
        a.status = kSaStatusNoResources;
        return;
      }
      subs.push_back(sub);
    }
  } else if (std::erase_if(subs, same) == 0) {
    a.status = kSaStatusReqInvalid;
    return;
  }
  a.records.assign(ii, ii + kInformInfoSize);
  a.records.resize(40, 0);
  a.count = 1;
}

void inform_info_records(const Query& q, Answer& a,
                         const std::vector<SaAgent::Subscription>& subs) {
  for (size_t i = 0; i < subs.size() && !a.status; ++i) {
    std::array<uint8_t, 64> r{};
    std::copy(subs[i].subscriber.begin(), subs[i].subscriber.end(), r.begin());
    put16(r.data() + 16, uint16_t(i));
    std::copy(subs[i].info.begin(), subs[i].info.end(), r.begin() + 24);
    add(a, inform_info_record(), r.data(), q);
  }
}

// Whether InformInfo `ii` asks for Notice `n` (IBTA 13.4.8.3, OpenSM's rules): a GID
// other than zero names the issuer; else a LIDRangeBegin other than 0xFFFF bounds the
// issuer's LID; IsGeneric must agree; Type, TrapNumber (DeviceID) and ProducerType
// (VendorID) match unless they are all ones.
bool asks_for(const uint8_t* ii, const sm::Notice& n) {
  if (std::any_of(ii, ii + 16, [](uint8_t b) { return b != 0; })) {
    if (!std::equal(ii, ii + 16, n.begin() + 64)) return false;
  } else if (be16(ii + 16) != 0xffff) {
    const uint16_t lid = be16(n.data() + 6);
    if (lid < be16(ii + 16) || lid > be16(ii + 18)) return false;
  }
  if ((ii[22] != 0) != ((n[0] & 0x80) != 0)) return false;
  if (be16(ii + 24) != 0xffff && be16(ii + 24) != (n[0] & 0x7f)) return false;
  if (be16(ii + 26) != 0xffff && be16(ii + 26) != be16(n.data() + 4)) return false;
  const uint32_t pv = uint32_t(ii[33]) << 16 | uint32_t(ii[34]) << 8 | ii[35];
  const uint32_t np = uint32_t(n[1]) << 16 | uint32_t(n[2]) << 8 | n[3];
  return pv == 0xffffff || pv == np;
}

// The P_Keys a port holds as weft laid them out; nullptr where the plan has none (the
// port is not limited, as ServiceRecords treat it).
const std::vector<uint16_t>* pkeys_of(const SaContext& ctx, std::pair<NodeIndex, PortNum> at) {
  const auto& all = ctx.snap->partitions.pkeys;
  if (at.first >= all.size() || at.second >= all[at.first].size()) return nullptr;
  const auto& keys = all[at.first][at.second];
  return keys.empty() ? nullptr : &keys;
}

enum class Hear : uint8_t { kYes, kNo, kNoAndDrop };

// Whether a subscriber may hear of a Notice's source (o13-17.1.1): its port and the
// source port share a partition (one of them a full member); for traps 66 and 67, its
// port is in the group's partition. A subscription with a LID range that fails the check
// goes (o13-17.1.2). weft's choices where OpenSM finds nothing to check: a port gone
// (trap 65) or a group gone (trap 67) is not asked about.
Hear may_hear(const SaContext& ctx, const SaAgent::Subscription& sub, const sm::Notice& n) {
  if (!ctx.snap) return Hear::kYes;
  const auto dest = ctx.snap->ends.at(sub.lid.value);
  if (!dest) return Hear::kNo;
  const auto* mine = pkeys_of(ctx, *dest);
  const uint16_t trap = sm::notice_trap(n);
  const bool sm_trap = (n[0] & 0x80) && trap >= kTrapGidIn && trap <= kTrapMcDeleted;
  const uint8_t* gid = n.data() + (sm_trap ? 16 : 64);
  if (sm_trap && (trap == kTrapMcCreated || trap == kTrapMcDeleted)) {
    Gid mgid;
    std::copy(gid, gid + 16, mgid.begin());
    const McGroup* g = ctx.mc ? ctx.mc->find(mgid) : nullptr;
    const bool in = !g || !mine || std::any_of(mine->begin(), mine->end(), [&](uint16_t k) {
      return (k & 0x7fff) == (g->pkey & 0x7fff);
    });
    return in ? Hear::kYes : Hear::kNo;
  }
  const auto src = ctx.snap->ends.by_guid.find(be64(gid + 8));
  if (src == ctx.snap->ends.by_guid.end())
    return sm_trap && trap == kTrapGidOut ? Hear::kYes : Hear::kNo;
  if (!mine || !pkeys_of(ctx, src->second) ||
      ctx.snap->partitions.share_partition(dest->first, dest->second, src->second.first,
                                           src->second.second))
    return Hear::kYes;
  return be16(sub.info.data() + 16) != 0xffff ? Hear::kNoAndDrop : Hear::kNo;
}

}  // namespace weft::sa::detail

namespace weft::sa {

using namespace detail;

void SaAgent::forget_ports(const std::function<bool(uint64_t)>& alive) {
  size_t gone =
      std::erase_if(services_, [&](const Service& s) { return !alive(be64(s.rec.data() + 16)); }) +
      std::erase_if(subs_,
                    [&](const Subscription& s) { return !alive(be64(s.subscriber.data() + 8)); });
  // A service whose registering port left (it registered for another port, which stays)
  // is nobody's: any port may change it.
  for (auto& s : services_)
    if (s.owner && !alive(s.owner)) s.owner = 0, ++gone;
  if (gone) records_changed_ = true;
}

std::vector<SaAgent::Report> SaAgent::reports(const sm::Notice& n, const SaContext& ctx) {
  std::vector<Report> out;
  std::vector<bool> drop(subs_.size(), false);
  for (size_t i = 0; i < subs_.size(); ++i) {
    const Subscription& sub = subs_[i];
    if (!asks_for(sub.info.data(), n)) continue;
    const uint16_t trap = be16(n.data() + 4);
    if ((n[0] & 0x80) && trap >= 256 && trap <= 259 && !sub.trusted) continue;
    const Hear h = may_hear(ctx, sub, n);
    if (h != Hear::kYes) {
      drop[i] = h == Hear::kNoAndDrop;
      continue;
    }
    std::vector<uint8_t> m(kSaHeader + n.size(), 0);
    m[0] = 1, m[1] = kClassSa, m[2] = 2, m[3] = kMethodReport;
    put16(m.data() + 16, kSaNotice);
    std::copy(n.begin(), n.end(), m.begin() + kSaHeader);
    out.push_back({std::move(m), sub.lid, sub.qpn, sub.pkey_index, sub.sl, sub.subscriber});
  }
  size_t i = 0;
  if (std::erase_if(subs_, [&](const Subscription&) { return drop[i++]; })) records_changed_ = true;
  return out;
}

size_t SaAgent::report_unanswered(const Report& r) {
  const size_t gone = std::erase_if(subs_, [&](const Subscription& s) {
    return s.subscriber == r.subscriber && s.lid == r.lid && s.qpn == r.qpn;
  });
  if (gone) records_changed_ = true;
  return gone;
}

}  // namespace weft::sa
