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

// ServiceRecord Set (register, with a lease), Delete, and Get/GetTable. Leases run out
// when someone looks.
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
      if (shares(sv.rec.data())) add(a, service_record(), sv.rec.data(), q);
    return;
  }
  if (!bit(q.mask, 0) || !bit(q.mask, 1)) {
    a.status = kSaStatusInsufficientComponents;
    return;
  }
  if (be64(q.rec + 8) != q.ctx.subnet_prefix || !q.idx.by_guid.count(be64(q.rec + 16))) {
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
  if (method == kMethodDelete) {
    if (it == services.end()) {
      a.status = kSaStatusReqInvalid;
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
  a.records.assign(sv.rec.begin(), sv.rec.end());
  a.count = 1;
}

// InformInfo Set: subscribe (or unsubscribe) the requester to a trap.
void inform_request(const Query& q, Answer& a, std::vector<SaAgent::Subscription>& subs) {
  const auto& ctx = q.ctx;
  const uint32_t qpn = uint32_t(q.rec[28]) << 16 | uint32_t(q.rec[29]) << 8 | q.rec[30];
  SaAgent::Subscription sub{
      ctx.requester, qpn ? qpn : ctx.requester_qpn, ctx.requester_pkey_index, ctx.requester_sl, {}};
  std::copy(q.rec, q.rec + kInformInfoSize, sub.info.begin());
  // Who subscribes: the GID named, else the requester's port.
  if (auto at = q.idx.at(ctx.requester.value); be64(q.rec + 8) == 0 && at) {
    auto [n, p] = *at;
    put64(sub.info.data(), ctx.subnet_prefix);
    put64(sub.info.data() + 8, ctx.snap->fabric.node(n).ports[p].guid.value);
  }
  auto same = [&](const SaAgent::Subscription& o) {
    return o.lid == sub.lid && o.qpn == sub.qpn && be16(o.info.data() + 26) == be16(q.rec + 26);
  };
  if (q.rec[23]) {  // Subscribe
    if (std::none_of(subs.begin(), subs.end(), same)) {
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
  a.records.assign(q.rec, q.rec + kInformInfoSize);
  a.records.resize(40, 0);
  a.count = 1;
}

void inform_info_records(const Query& q, Answer& a,
                         const std::vector<SaAgent::Subscription>& subs) {
  for (size_t i = 0; i < subs.size() && !a.status; ++i) {
    std::array<uint8_t, 64> r{};
    std::copy(subs[i].info.begin(), subs[i].info.begin() + 16, r.begin());
    put16(r.data() + 16, uint16_t(i));
    std::copy(subs[i].info.begin(), subs[i].info.end(), r.begin() + 24);
    add(a, inform_info_record(), r.data(), q);
  }
}

}  // namespace weft::sa::detail

namespace weft::sa {

using namespace detail;

void SaAgent::forget_ports(const std::function<bool(uint64_t)>& alive) {
  const size_t gone =
      std::erase_if(services_, [&](const Service& s) { return !alive(be64(s.rec.data() + 16)); }) +
      std::erase_if(subs_, [&](const Subscription& s) { return !alive(be64(s.info.data() + 8)); });
  if (gone) records_changed_ = true;
}

std::vector<SaAgent::Report> SaAgent::reports(uint16_t trap, const std::array<uint8_t, 16>& gid,
                                              Lid sm_lid, Guid sm_guid, uint64_t prefix) {
  std::vector<Report> out;
  for (const auto& sub : subs_) {
    const uint8_t* ii = sub.info.data();
    const uint16_t want = be16(ii + 26);
    if (!ii[22] || (want != trap && want != 0xffff)) continue;  // generic traps only
    std::vector<uint8_t> m(kSaHeader + 80, 0);
    m[0] = 1, m[1] = kClassSa, m[2] = 2, m[3] = kMethodReport;
    put64(m.data() + 8, (uint64_t(0x5a) << 56) | ++report_tid_);
    put16(m.data() + 16, kSaNotice);
    uint8_t* n = m.data() + kSaHeader;
    n[0] = 0x80 | 4;  // generic, informational
    n[3] = 4;         // producer: class manager
    put16(n + 4, trap);
    put16(n + 6, sm_lid.value);
    std::copy(gid.begin(), gid.end(), n + 16);  // DataDetails: the GID in question
    put64(n + 64, prefix);
    put64(n + 72, sm_guid.value);
    out.push_back({std::move(m), sub.lid, sub.qpn, sub.pkey_index, sub.sl});
  }
  return out;
}

}  // namespace weft::sa
