// The SA agent: the one dispatch table of {attribute, methods, layout, handler} over the
// snapshot's end-port index, the answer's header and status, and the typed path query. The records
// themselves are built by their families (records.hpp names them).
#include "weft/sa/sa.hpp"

#include <infiniband/mad.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "records.hpp"
#include "weft/log.hpp"
#include "weft/sm/options.hpp"

namespace weft::sa {

using namespace detail;

namespace {

constexpr size_t kMaxMultiPathRequest = 64 * 1024;  // what the transport takes whole

// What a handler gets: the request, its answer, and the SA's own state it may change.
struct Call {
  const Query& q;
  Answer& a;
  uint8_t method;
  std::span<const uint8_t> req;  // the whole request, reassembled (MultiPathRecord's GIDs)
  SaStats& stats;
  std::vector<SaAgent::Service>& services;
  std::vector<SaAgent::Subscription>& subs;
  std::vector<McChange>& changed;
};

constexpr uint32_t method_bit(uint8_t method) {
  return uint32_t(1) << (method & 0x1f);
}
constexpr uint32_t kReads = method_bit(mad::kMethodGet) | method_bit(kMethodGetTable);
constexpr uint32_t kWrites = method_bit(mad::kMethodSet) | method_bit(kMethodDelete);

// The SA's one dispatch table: an attribute, the methods it answers (`writes`: those that
// change the SA's state), the record layout its component mask selects in (none: the
// handler checks its own), the record size when it has no layout, whether it needs the
// multicast groups, and its handler.
struct Route {
  uint16_t attr;
  uint32_t methods;
  uint32_t writes;
  const Layout& (*layout)();
  size_t rec_size;
  bool needs_mc;
  void (*handle)(Call&);
};

void class_port_info(Call& c) {
  std::array<uint8_t, 72> r{};
  mad_set_field(r.data(), 0, IB_CPI_BASEVER_F, 1);
  mad_set_field(r.data(), 0, IB_CPI_CLASSVER_F, 2);
  mad_set_field(r.data(), 0, IB_CPI_RESP_TIME_VALUE_F, 18);
  c.a.records.assign(r.begin(), r.end());
  c.a.count = 1;
}

void multipath(Call& c) {
  // Its GIDs may run past the first MAD: the whole (reassembled) request, bounded.
  const size_t len = std::min<size_t>(c.req.size(), kMaxMultiPathRequest) - kSaHeader;
  multipath_records(c.q.ctx, c.q.idx, c.req.subspan(kSaHeader, len), c.q.mask, c.a);
  c.stats.path_records += c.a.count;
}

void mc_member(Call& c) {
  if (c.method == mad::kMethodGet || c.method == kMethodGetTable)
    return mc_member_records(c.q, c.a, *c.q.ctx.mc);
  auto r = c.method == mad::kMethodSet ? mc_join(c.q, c.a, *c.q.ctx.mc, c.changed)
                                       : mc_leave(c.q, c.a, *c.q.ctx.mc, c.changed);
  if (r) {
    c.a.records.assign(r->begin(), r->end());
    c.a.count = 1;
  }
}

template <void (*Fill)(const Query&, Answer&)>
void from_snapshot(Call& c) {
  Fill(c.q, c.a);
}

constexpr Route kRoutes[] = {
    {kSaClassPortInfo, method_bit(mad::kMethodGet), 0, nullptr, 72, false, class_port_info},
    {kSaNodeRecord, kReads, 0, node_record, 0, false, from_snapshot<node_records>},
    {kSaPortInfoRecord, kReads, 0, port_info_record, 0, false, from_snapshot<port_info_records>},
    {kSaSmInfoRecord, kReads, 0, sm_info_record, 0, false, from_snapshot<sm_info_records>},
    {kSaSwitchInfoRecord, kReads, 0, switch_info_record, 0, false,
     from_snapshot<switch_info_records>},
    {kSaLftRecord, kReads, 0, lft_record, 0, false, from_snapshot<lft_records>},
    {kSaSl2VlRecord, kReads, 0, sl2vl_record, 0, false, from_snapshot<sl2vl_records>},
    {kSaVlArbRecord, kReads, 0, vlarb_record, 0, false, from_snapshot<vlarb_records>},
    {kSaLinkRecord, kReads, 0, link_record, 0, false, from_snapshot<link_records>},
    {kSaPkeyTableRecord, kReads, 0, pkey_table_record, 0, false, from_snapshot<pkey_table_records>},
    {kSaPathRecord, kReads, 0, nullptr, kPathRecordSize, false,
     [](Call& c) {
       path_records(c.q, c.a);
       c.stats.path_records += c.a.count;
     }},
    {kSaMultiPathRecord, method_bit(kMethodGetMulti), 0, nullptr, kPathRecordSize, false,
     multipath},
    {kSaServiceRecord, kReads | kWrites, kWrites, service_record, 0, false,
     [](Call& c) { service_request(c.q, c.a, c.method, c.services); }},
    {kSaInformInfo, method_bit(mad::kMethodSet), method_bit(mad::kMethodSet), nullptr, 40, false,
     [](Call& c) { inform_request(c.q, c.a, c.subs); }},
    {kSaInformInfoRecord, kReads, 0, inform_info_record, 0, false,
     [](Call& c) { inform_info_records(c.q, c.a, c.subs); }},
    {kSaMcMemberRecord, kReads | kWrites, kWrites, mc_member_record, 0, true, mc_member},
};

const Route* route_of(uint16_t attr) {
  for (const auto& r : kRoutes)
    if (r.attr == attr) return &r;
  return nullptr;
}

}  // namespace

std::string sa_attr_name(uint16_t attr) {
  switch (attr) {
    case kSaClassPortInfo:
      return "ClassPortInfo";
    case kSaNotice:
      return "Notice";
    case kSaInformInfo:
      return "InformInfo";
    case kSaNodeRecord:
      return "NodeRecord";
    case kSaPortInfoRecord:
      return "PortInfoRecord";
    case kSaSl2VlRecord:
      return "SL2VLTableRecord";
    case kSaSwitchInfoRecord:
      return "SwitchInfoRecord";
    case kSaLftRecord:
      return "LinearForwardingTableRecord";
    case kSaSmInfoRecord:
      return "SMInfoRecord";
    case kSaLinkRecord:
      return "LinkRecord";
    case kSaServiceRecord:
      return "ServiceRecord";
    case kSaPkeyTableRecord:
      return "P_KeyTableRecord";
    case kSaPathRecord:
      return "PathRecord";
    case kSaVlArbRecord:
      return "VLArbitrationTableRecord";
    case kSaMcMemberRecord:
      return "MCMemberRecord";
    case kSaMultiPathRecord:
      return "MultiPathRecord";
    case kSaInformInfoRecord:
      return "InformInfoRecord";
  }
  char b[16];
  std::snprintf(b, sizeof b, "0x%04x", attr);
  return b;
}

std::optional<PathInfo> SaAgent::path(const SaContext& ctx, const PathQuery& pq) {
  if (!ctx.snap) return std::nullopt;
  const Index& idx = ctx.snap->ends;
  const auto s = idx.at(pq.slid), d = idx.at(pq.dlid);
  if (!s || !d) return std::nullopt;
  // The record as a requester fills it, with the component mask it sends.
  std::array<uint8_t, mad::kMadSize - kSaHeader> rec{};
  uint64_t mask = (1ull << kPrDlid) | (1ull << kPrSlid);
  put16(rec.data() + 40, pq.dlid);
  put16(rec.data() + 42, pq.slid);
  if (pq.pkey) {
    mask |= 1ull << kPrPkey;
    put16(rec.data() + 50, *pq.pkey);
  }
  if (pq.sl) {
    mask |= 1ull << kPrSl;
    rec[53] = *pq.sl & 0x0f;
  }
  const Query q{ctx, idx, rec.data(), mask, false};
  Answer a;
  path_record(q, {s->first, s->second, pq.slid}, {d->first, d->second, pq.dlid}, a);
  if (a.status || a.count != 1 || a.records.size() < kPathRecordSize) return std::nullopt;
  const uint8_t* r = a.records.data();
  PathInfo p;
  p.dlid = be16(r + 40);
  p.slid = be16(r + 42);
  p.pkey = be16(r + 50);
  p.sl = r[53] & 0x0f;
  p.mtu = r[54] & 0x3f;
  p.rate = r[55] & 0x3f;
  p.packet_life = r[56] & 0x3f;
  return p;
}

std::optional<PathInfo> path_record(const SaContext& ctx, sm::EndPort src, sm::EndPort dst) {
  if (!ctx.snap) return std::nullopt;
  PathQuery q;
  q.slid = sm::base_lid(ctx.snap->fabric, src);
  q.dlid = sm::base_lid(ctx.snap->fabric, dst);
  return SaAgent::path(ctx, q);
}

std::optional<PathInfo> path_record(const sm::Published& pub, sm::EndPort src, sm::EndPort dst) {
  SaContext ctx;
  ctx.snap = pub.subnet;
  if (pub.options) {
    ctx.qos = pub.options->qos.enabled;
    ctx.qos_cfg = &pub.options->qos;
  }
  return path_record(ctx, src, dst);
}

std::optional<std::vector<uint8_t>> SaAgent::answer(std::span<const uint8_t> req,
                                                    const SaContext& ctx) {
  // Too short to hold a MAD header, not SubnAdm, or a response (TrapRepress, 0x07, is
  // one without the response bit): not ours to answer.
  if (req.size() < 24 || req[1] != kClassSa || (req[3] & 0x80) || req[3] == 0x07) {
    ++stats_.dropped;
    return std::nullopt;
  }
  ++stats_.requests;
  std::array<uint8_t, mad::kMadSize> hdr{};
  std::memcpy(hdr.data(), req.data(), std::min(req.size(), hdr.size()));
  const uint8_t method = hdr[3];
  const uint16_t attr = be16(hdr.data() + 16);
  Answer a;
  auto respond = [&](uint8_t resp_method) {
    const bool rmpp =
        (resp_method == kMethodGetTableResp || resp_method == kMethodGetMultiResp) && !a.status;
    std::vector<uint8_t> out(kSaHeader + (a.status ? 0 : a.records.size()), 0);
    std::memcpy(out.data(), hdr.data(), 24);
    out[3] = resp_method;
    put16(out.data() + 4, a.status);
    std::memcpy(out.data() + 36, hdr.data() + 36, 20);  // SM_Key, offset, component mask
    put16(out.data() + 44, uint16_t(a.rec_size / 8));
    if (rmpp) {
      mad_set_field(out.data(), 0, IB_SA_RMPP_VERS_F, 1);
      mad_set_field(out.data(), 0, IB_SA_RMPP_TYPE_F, 1);
      mad_set_field(out.data(), 0, IB_SA_RMPP_RESP_F, 0x1f);
      // Active: the kernel segments it and sets each segment's flags, number and
      // payload length itself. Written as one whole segment here too, so a carrier
      // without RMPP (ibsim's umad2sim) hands a short answer over as it is.
      mad_set_field(out.data(), 0, IB_SA_RMPP_FLAGS_F, 1 | 2 | 4);
      mad_set_field(out.data(), 0, IB_SA_RMPP_SEGNUM_F, 1);
      mad_set_field(out.data(), 0, IB_SA_RMPP_LEN_F,
                    uint32_t(std::min<size_t>(a.records.size() + 20, mad::kMadSize - 36)));
    }
    if (!a.status) std::copy(a.records.begin(), a.records.end(), out.begin() + kSaHeader);
    if (a.status)
      ++stats_.errors;
    else
      ++stats_.answered;
    ++stats_.by_attr_status[{attr, a.status}];
    return out;
  };
  if (hdr[0] != 1 || hdr[2] != 2) {  // base version 1, SA class version 2
    a.status = kStatusBadVersion;
    return respond(uint8_t(method | 0x80));
  }
  // The requests that change SA state: joins and leaves, service registrations,
  // subscriptions.
  // SM_Key (IBTA C15-0.1.5): 0 or the SA_Key; a request with another key is dropped,
  // unanswered, as OpenSM drops it. The SA_Key makes a request trusted.
  const uint64_t key = be64(hdr.data() + 36);
  if (key != 0 && key != ctx.sa_key) {
    ++stats_.wrong_key;
    ++stats_.dropped;
    if (stats_.wrong_key == 1 || stats_.wrong_key % 1000 == 0)
      WEFT_LOG(Warn, "SA-0008") << "SA request from LID " << ctx.requester.value
                                << " with SM_Key 0x" << std::hex << key << std::dec
                                << " (not sa_key) dropped (" << stats_.wrong_key << " so far)";
    return std::nullopt;
  }
  const Route* route = route_of(attr);
  const bool changes = route && (route->writes & method_bit(method));
  // GetMulti is MultiPathRecord's method, and MultiPathRecord has no other.
  if ((method == kMethodGetMulti) != (attr == kSaMultiPathRecord) &&
      (method == kMethodGetMulti || method == mad::kMethodGet || method == kMethodGetTable)) {
    a.status = kStatusBadMethodAttr;
    return respond(uint8_t(method | 0x80));
  }
  if (method != mad::kMethodGet && method != kMethodGetTable && method != kMethodGetMulti &&
      !changes) {
    a.status = (method == mad::kMethodSet || method == kMethodDelete) ? kStatusBadMethodAttr
                                                                      : kStatusBadMethod;
    return respond(uint8_t(method | 0x80));
  }
  const uint8_t resp = method == kMethodGetTable   ? kMethodGetTableResp
                       : method == kMethodGetMulti ? kMethodGetMultiResp
                       : method == kMethodDelete   ? kMethodDeleteResp
                                                   : mad::kMethodGetResp;
  if (req.size() < kSaHeader) {
    a.status = kSaStatusReqInvalid;
    return respond(resp);
  }
  if (!ctx.snap) {  // no sweep has completed: nothing to answer from yet
    a.status = kSaStatusNoResources;
    return respond(resp);
  }
  std::array<uint8_t, mad::kMadSize - kSaHeader> rec{};
  if (req.size() > kSaHeader)
    std::memcpy(rec.data(), req.data() + kSaHeader, std::min(rec.size(), req.size() - kSaHeader));
  const Index& idx = ctx.snap->ends;
  Query q{
      ctx, idx, rec.data(), be64(hdr.data() + 48), method == kMethodGetTable, key == ctx.sa_key};
  // An attribute the SA does not serve, or a method its attribute does not take.
  if (!route || !(route->methods & method_bit(method))) {
    a.status = kStatusBadMethodAttr;
    return respond(resp);
  }
  if (route->needs_mc && !ctx.mc) {
    a.status = kSaStatusNoResources;
    return respond(resp);
  }
  const Layout* layout = route->layout ? &route->layout() : nullptr;
  if (layout && !mask_ok(*layout, q.mask)) {
    a.status = kSaStatusReqInvalid;
    WEFT_LOG(Debug, "SA-0002") << "component mask 0x" << std::hex << q.mask << std::dec
                               << " names fields attribute 0x" << std::hex << attr << std::dec
                               << " does not have";
    return respond(resp);
  }
  Call call{q, a, method, req, stats_, services_, subs_, mc_changes_};
  route->handle(call);
  // A write to the services or subscriptions: the state store's copy is due.
  if ((route->writes & method_bit(method)) && !a.status &&
      (attr == kSaServiceRecord || attr == kSaInformInfo))
    records_changed_ = true;
  a.rec_size = layout ? (layout->size + 7) / 8 * 8 : route->rec_size;
  if (!a.status && method != kMethodGetTable && method != kMethodGetMulti) {
    if (a.count == 0)
      a.status = kSaStatusNoRecords;
    else if (a.count > 1)
      a.status = kSaStatusTooManyRecords;
  }
  return respond(resp);
}

}  // namespace weft::sa