#include "weft/sm/sa.hpp"

#include <infiniband/mad.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "weft/log.hpp"
#include "weft/routing/walk.hpp"

namespace weft::sm {

using fabric::NodeIndex;
using fabric::NodeType;

namespace {

constexpr size_t kMaxRecords = size_t(1) << 20;     // a GetTable larger than this: NO_RESOURCES
constexpr size_t kMaxMultiPathRequest = 64 * 1024;  // what the transport takes whole

// A record field as the bytes it covers and the bits it uses in each: found by
// asking libibmad to set the field to all ones (its tables know the IBTA layouts;
// weft does not restate them).
struct Span {
  std::vector<std::pair<uint16_t, uint8_t>> bytes;
};

Span probe(MAD_FIELDS f, int base, bool wide = false) {
  std::array<uint8_t, 256> buf{};
  if (wide)
    mad_set_field64(buf.data(), base, f, ~uint64_t(0));
  else
    mad_set_field(buf.data(), base, f, ~uint32_t(0));
  Span s;
  for (size_t i = 0; i < buf.size(); ++i)
    if (buf[i]) s.bytes.push_back({uint16_t(i), buf[i]});
  return s;
}

Span bytes(uint16_t from, uint16_t to, uint8_t mask = 0xff) {
  Span s;
  for (uint16_t i = from; i < to; ++i) s.bytes.push_back({i, mask});
  return s;
}

bool same(const uint8_t* a, const uint8_t* b, const Span& s) {
  for (auto [i, m] : s.bytes)
    if ((a[i] & m) != (b[i] & m)) return false;
  return true;
}

// Component bit -> the field it selects, per record (IBTA 15.2.5).
struct Layout {
  size_t size;               // record bytes
  std::vector<Span> fields;  // index = component bit; empty Span = reserved / ignored
};

const Layout& node_record() {
  static const Layout l = [] {
    Layout l{108, {}};
    l.fields = {probe(IB_SA_NR_LID_F, 0),
                bytes(2, 4),
                probe(IB_SA_NR_BASEVER_F, 0),
                probe(IB_SA_NR_CLASSVER_F, 0),
                probe(IB_SA_NR_TYPE_F, 0),
                probe(IB_SA_NR_NPORTS_F, 0),
                probe(IB_SA_NR_SYSTEM_GUID_F, 0, true),
                probe(IB_SA_NR_GUID_F, 0, true),
                probe(IB_SA_NR_PORT_GUID_F, 0, true),
                probe(IB_SA_NR_PARTITION_CAP_F, 0),
                probe(IB_SA_NR_DEVID_F, 0),
                probe(IB_SA_NR_REVISION_F, 0),
                probe(IB_SA_NR_LOCAL_PORT_F, 0),
                probe(IB_SA_NR_VENDORID_F, 0),
                bytes(44, 108)};
    return l;
  }();
  return l;
}

constexpr int kPiBase = 4;  // PortInfo's offset in a PortInfoRecord (EndportLID, PortNum, Options)
const Layout& port_info_record() {
  static const Layout l = [] {
    Layout l{68, {}};
    l.fields = {bytes(0, 2), bytes(2, 3), bytes(3, 4)};
    // Bits 3-18: PortInfo's fields in IBTA order, MKey to MKeyProtectBits.
    const std::pair<MAD_FIELDS, bool> pi[] = {
        {IB_PORT_MKEY_F, true},
        {IB_PORT_GID_PREFIX_F, true},
        {IB_PORT_LID_F, false},
        {IB_PORT_SMLID_F, false},
        {IB_PORT_CAPMASK_F, false},
        {IB_PORT_DIAG_F, false},
        {IB_PORT_MKEY_LEASE_F, false},
        {IB_PORT_LOCAL_PORT_F, false},
        {IB_PORT_LINK_WIDTH_ENABLED_F, false},
        {IB_PORT_LINK_WIDTH_SUPPORTED_F, false},
        {IB_PORT_LINK_WIDTH_ACTIVE_F, false},
        {IB_PORT_LINK_SPEED_SUPPORTED_F, false},
        {IB_PORT_STATE_F, false},
        {IB_PORT_PHYS_STATE_F, false},
        {IB_PORT_LINK_DOWN_DEF_F, false},
        {IB_PORT_MKEY_PROT_BITS_F, false},
    };
    for (auto [f, wide] : pi) l.fields.push_back(probe(f, kPiBase, wide));
    return l;
  }();
  return l;
}
constexpr int kPirCapMaskBit = 7;

const Layout& sm_info_record() {
  static const Layout l = [] {
    Layout l{28, {}};
    l.fields = {bytes(0, 2),
                bytes(2, 4),
                probe(IB_SMINFO_GUID_F, 4, true),
                probe(IB_SMINFO_KEY_F, 4, true),
                probe(IB_SMINFO_ACT_F, 4),
                probe(IB_SMINFO_PRIO_F, 4),
                probe(IB_SMINFO_STATE_F, 4)};
    return l;
  }();
  return l;
}

const Layout& link_record() {
  static const Layout l{8, {bytes(0, 2), bytes(2, 3), bytes(3, 4), bytes(4, 6)}};
  return l;
}

const Layout& pkey_table_record() {
  static const Layout l{72, {bytes(0, 2), bytes(2, 4), bytes(4, 5)}};
  return l;
}

// PathRecord (IBTA 15.2.5.16): libibmad knows only a few of its fields, so the
// layout is spelled out here. Component bits:
enum PrBit : int {
  kPrDgid = 2,
  kPrSgid = 3,
  kPrDlid = 4,
  kPrSlid = 5,
  kPrRaw = 6,
  kPrFlow = 8,
  kPrHop = 9,
  kPrTclass = 10,
  kPrReversible = 11,
  kPrNumbPath = 12,
  kPrPkey = 13,
  kPrQos = 14,
  kPrSl = 15,
  kPrMtuSel = 16,
  kPrMtu = 17,
  kPrRateSel = 18,
  kPrRate = 19,
  kPrLifeSel = 20,
  kPrLife = 21,
  kPrPreference = 22
};
constexpr size_t kPathRecordSize = 64;

uint16_t be16(const uint8_t* p) {
  return uint16_t(p[0] << 8 | p[1]);
}
uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
uint64_t be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i) p[i] = uint8_t(v), v >>= 8;
}

bool bit(uint64_t mask, int b) {
  return (mask >> b) & 1;
}

// IBTA rate codes and their nominal Gb/s.
struct RateCode {
  uint8_t code;
  double gbps;
};
constexpr RateCode kRates[] = {{2, 2.5},  {5, 5},    {3, 10},   {11, 14},  {6, 20},
                               {15, 25},  {4, 30},   {7, 40},   {20, 50},  {12, 56},
                               {8, 60},   {9, 80},   {16, 100}, {13, 112}, {10, 120},
                               {14, 168}, {17, 200}, {18, 300}, {21, 400}, {22, 600}};
double rate_gbps(uint8_t code) {
  for (auto r : kRates)
    if (r.code == code) return r.gbps;
  return 0;
}
// The fastest code not above `gbps`.
uint8_t rate_code(double gbps) {
  uint8_t best = 2;
  double bg = 0;
  for (auto r : kRates)
    if (r.gbps <= gbps + 1e-9 && r.gbps > bg) best = r.code, bg = r.gbps;
  return best;
}
// A link's MTU: the neighbour MTU the SM set, else the port's own cap.
uint8_t link_mtu(const fabric::PortAttrs& a) {
  return a.neighbor_mtu ? a.neighbor_mtu : a.mtu_cap;
}

}  // namespace

double link_gbps(const fabric::PortAttrs& a) {
  double lanes = 1;
  switch (a.width_active) {
    case 1:
      lanes = 1;
      break;
    case 2:
      lanes = 4;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
    default:
      lanes = 1;
  }
  double lane = 2.5;
  switch (a.speed_ext_active) {
    case 1:
      lane = 14;
      break;
    case 2:
      lane = 25;
      break;
    case 4:
      lane = 50;
      break;
    case 8:
      lane = 100;
      break;
    default:
      lane = a.speed_active >= 4 ? 10 : a.speed_active >= 2 ? 5 : 2.5;
  }
  return lanes * lane;
}

namespace {

struct Answer {
  uint16_t status = 0;
  size_t rec_size = 0;
  std::vector<uint8_t> records;
  size_t count = 0;
};

}  // namespace

const SaAgent::Index& SaAgent::index(const SaContext& ctx) {
  if (idx_.snap == ctx.snap.get()) return idx_;
  idx_ = Index{};
  idx_.snap = ctx.snap.get();
  if (!ctx.snap) return idx_;
  const auto& f = ctx.snap->fabric;
  idx_.lid_of.resize(f.size());
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    idx_.lid_of[n].assign(nd.ports.size(), 0);
    for (PortNum p = 0; p < nd.ports.size(); ++p) {
      const bool end = nd.is_switch() ? p == 0 : (p > 0 && nd.ports[p].linked());
      if (!end) continue;
      const auto& a = nd.ports[p].attrs;
      if (!a.lid.is_unicast()) continue;
      idx_.lid_of[n][p] = a.lid.value;
      const size_t top = size_t(a.lid.value) + (size_t(1) << a.lmc);
      if (idx_.by_lid.size() < top) idx_.by_lid.resize(top, {fabric::kNoNode, 0});
      for (size_t l = a.lid.value; l < top; ++l) idx_.by_lid[l] = {n, p};
      idx_.by_guid[nd.ports[p].guid.value] = {n, p};
    }
  }
  return idx_;
}

namespace {

// Everything one request needs, so the record builders stay small.
struct Query {
  const SaContext& ctx;
  const SaAgent::Index& idx;
  const uint8_t* rec;  // the request's record (200 bytes after the SA header)
  uint64_t mask;
  bool table;  // GetTable: every match; Get: exactly one
};

bool add(Answer& a, const Layout& l, const uint8_t* cand, const Query& q) {
  for (size_t b = 0; b < l.fields.size(); ++b)
    if (bit(q.mask, int(b)) && !same(cand, q.rec, l.fields[b])) return false;
  if (a.count >= kMaxRecords) {
    a.status = kSaStatusNoResources;
    return false;
  }
  const size_t padded = (l.size + 7) / 8 * 8;
  a.records.insert(a.records.end(), cand, cand + l.size);
  a.records.resize(a.records.size() + (padded - l.size), 0);
  ++a.count;
  return true;
}

// Components beyond a record's known fields make a request this SA cannot honour.
bool mask_ok(const Layout& l, uint64_t mask) {
  return l.fields.size() >= 64 || (mask >> l.fields.size()) == 0;
}

void node_records(const Query& q, Answer& a) {
  const auto& f = q.ctx.snap->fabric;
  const Layout& l = node_record();
  auto one = [&](NodeIndex n, PortNum p) {
    const auto& nd = f.node(n);
    std::array<uint8_t, 112> r{};
    mad_set_field(r.data(), 0, IB_SA_NR_LID_F, q.idx.lid_of[n][p]);
    mad_set_field(r.data(), 0, IB_SA_NR_BASEVER_F, 1);
    mad_set_field(r.data(), 0, IB_SA_NR_CLASSVER_F, 1);
    mad_set_field(r.data(), 0, IB_SA_NR_TYPE_F, static_cast<uint32_t>(nd.type));
    mad_set_field(r.data(), 0, IB_SA_NR_NPORTS_F, nd.num_ports);
    mad_set_field64(r.data(), 0, IB_SA_NR_SYSTEM_GUID_F, nd.system_guid.value);
    mad_set_field64(r.data(), 0, IB_SA_NR_GUID_F, nd.guid.value);
    mad_set_field64(r.data(), 0, IB_SA_NR_PORT_GUID_F, nd.ports[p].guid.value);
    mad_set_field(r.data(), 0, IB_SA_NR_PARTITION_CAP_F, nd.partition_cap);
    mad_set_field(r.data(), 0, IB_SA_NR_DEVID_F, nd.device_id);
    mad_set_field(r.data(), 0, IB_SA_NR_REVISION_F, nd.revision);
    mad_set_field(r.data(), 0, IB_SA_NR_LOCAL_PORT_F, p);
    mad_set_field(r.data(), 0, IB_SA_NR_VENDORID_F, nd.vendor_id);
    std::memcpy(r.data() + 44, nd.description.data(), std::min<size_t>(64, nd.description.size()));
    add(a, l, r.data(), q);
  };
  if (bit(q.mask, 0)) {  // by LID: one port at most
    const uint16_t lid = be16(q.rec);
    if (auto at = q.idx.at(lid); at && q.idx.lid_of[at->first][at->second] == lid)
      one(at->first, at->second);
    return;
  }
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n)
    for (PortNum p = 0; p < f.node(n).ports.size(); ++p)
      if (q.idx.lid_of[n][p]) one(n, p);
}

void port_info_records(const Query& q, Answer& a) {
  const auto& f = q.ctx.snap->fabric;
  const Layout& l = port_info_record();
  // CapabilityMask matches when the port has every bit asked for (as OpenSM matches
  // it: `saquery -s` finds SMs this way), not by equality.
  Query eq = q;
  eq.mask &= ~(uint64_t(1) << kPirCapMaskBit);
  const uint32_t want_cap = bit(q.mask, kPirCapMaskBit) ? mad_get_field(const_cast<uint8_t*>(q.rec),
                                                                        kPiBase, IB_PORT_CAPMASK_F)
                                                        : 0;
  auto node_ports = [&](NodeIndex n, uint16_t lid) {
    const auto& nd = f.node(n);
    for (PortNum p = 0; p < nd.ports.size(); ++p) {
      if (!nd.is_switch() && (p == 0 || q.idx.lid_of[n][p] != lid)) continue;
      const auto& port = nd.ports[p];
      mad::PortInfo pi;
      pi.attrs = port.attrs;
      if (nd.is_switch()) {
        pi.attrs.lid = nd.ports[0].attrs.lid;
        pi.attrs.sm_lid = nd.ports[0].attrs.sm_lid;
        pi.attrs.lmc = nd.ports[0].attrs.lmc;
      }
      pi.local_port = nd.is_switch() ? 0 : p;
      pi.gid_prefix = q.ctx.subnet_prefix;
      if (nd.ports[0].guid == q.ctx.sm_guid || port.guid == q.ctx.sm_guid)
        pi.attrs.capability_mask |= (!nd.is_switch() || p == 0) ? mad::kCapIsSm : 0;
      if ((pi.attrs.capability_mask & want_cap) != want_cap) continue;
      std::array<uint8_t, 72> r{};
      put16(r.data(), lid);
      r[2] = p;
      const mad::SmpData d =
          mad::encode_port_info(pi);  // 64 bytes at kPiBase; the record pads to 72
      std::memcpy(r.data() + kPiBase, d.data(), 64);
      if (add(a, l, r.data(), eq) && a.status) return;
    }
  };
  if (bit(q.mask, 0)) {
    const uint16_t lid = be16(q.rec);
    if (auto at = q.idx.at(lid); at && q.idx.lid_of[at->first][at->second] == lid)
      node_ports(at->first, lid);
    return;
  }
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n) {
    const auto& nd = f.node(n);
    for (PortNum p = 0; p < nd.ports.size(); ++p)
      if (q.idx.lid_of[n][p] && (nd.is_switch() ? p == 0 : true)) node_ports(n, q.idx.lid_of[n][p]);
  }
}

void sm_info_records(const Query& q, Answer& a) {
  std::array<uint8_t, 32> r{};
  put16(r.data(), q.ctx.snap->sm_lid.value);
  mad::SmInfo si;
  si.guid = q.ctx.sm_guid;
  si.act_count = q.ctx.sm_act_count;
  si.priority = q.ctx.sm_priority;
  si.state = mad::SmState::kMaster;
  const mad::SmpData d = mad::encode_sm_info(si);
  std::memcpy(r.data() + 4, d.data(), 24);
  add(a, sm_info_record(), r.data(), q);
}

void link_records(const Query& q, Answer& a) {
  const auto& f = q.ctx.snap->fabric;
  auto lid_for = [&](NodeIndex n, PortNum p) {
    return f.node(n).is_switch() ? q.idx.lid_of[n][0] : q.idx.lid_of[n][p];
  };
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n) {
    const auto& nd = f.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      const auto& port = nd.ports[p];
      if (!port.linked()) continue;
      std::array<uint8_t, 8> r{};
      put16(r.data(), lid_for(n, p));
      r[2] = p;
      r[3] = port.peer_port;
      put16(r.data() + 4, lid_for(port.peer, port.peer_port));
      add(a, link_record(), r.data(), q);
    }
  }
}

void pkey_table_records(const Query& q, Answer& a) {
  const auto& snap = *q.ctx.snap;
  const auto& f = snap.fabric;
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n) {
    const auto& nd = f.node(n);
    if (n >= snap.pkey_tables.size()) break;
    for (PortNum p = 0; p < nd.ports.size() && p < snap.pkey_tables[n].size(); ++p) {
      const auto& t = snap.pkey_tables[n][p];
      if (t.empty()) continue;
      const uint16_t lid = nd.is_switch() ? q.idx.lid_of[n][0] : q.idx.lid_of[n][p];
      for (size_t b = 0; b * 32 < t.size(); ++b) {
        std::array<uint8_t, 72> r{};
        put16(r.data(), lid);
        put16(r.data() + 2, uint16_t(b));
        r[4] = p;
        for (size_t i = 0; i < 32 && b * 32 + i < t.size(); ++i)
          put16(r.data() + 8 + 2 * i, t[b * 32 + i]);
        add(a, pkey_table_record(), r.data(), q);
      }
    }
  }
}

// --- SwitchInfo, LFT, SL2VL and VLArb records ------------------------------------------

const Layout& switch_info_record() {
  static const Layout l{24, {bytes(0, 2)}};
  return l;
}
const Layout& lft_record() {
  static const Layout l{72, {bytes(0, 2), bytes(2, 4)}};
  return l;
}
const Layout& sl2vl_record() {
  static const Layout l{16, {bytes(0, 2), bytes(2, 3), bytes(3, 4)}};
  return l;
}
const Layout& vlarb_record() {
  static const Layout l{72, {bytes(0, 2), bytes(2, 3), bytes(3, 4)}};
  return l;
}

// Switches by LID when the request names one (component bit 0), else all of them.
template <class F>
void each_switch(const Query& q, F&& f) {
  const auto& fab = q.ctx.snap->fabric;
  if (bit(q.mask, 0)) {
    const uint16_t lid = be16(q.rec);
    if (auto at = q.idx.at(lid); at && fab.node(at->first).is_switch()) f(at->first, lid);
    return;
  }
  for (NodeIndex n = 0; n < fab.size(); ++n)
    if (fab.node(n).is_switch() && q.idx.lid_of[n][0]) f(n, q.idx.lid_of[n][0]);
}

void switch_info_records(const Query& q, Answer& a) {
  each_switch(q, [&](NodeIndex n, uint16_t lid) {
    const auto& sw = q.ctx.snap->fabric.node(n).sw;
    mad::SwitchInfo si;
    si.lft_cap = sw.lft_cap;
    si.mft_cap = sw.mft_cap;
    si.lft_top = n < q.ctx.snap->tables.lft.size() ? q.ctx.snap->tables.top_lid : sw.lft_top;
    si.lifetime = sw.lifetime;
    si.enhanced_port0 = sw.enhanced_port0;
    std::array<uint8_t, 24> r{};
    put16(r.data(), lid);
    const mad::SmpData d = mad::encode_switch_info(si);
    std::memcpy(r.data() + 4, d.data(), 20);
    add(a, switch_info_record(), r.data(), q);
  });
}

void lft_records(const Query& q, Answer& a) {
  const auto& t = q.ctx.snap->tables;
  each_switch(q, [&](NodeIndex n, uint16_t lid) {
    if (n >= t.lft.size()) return;
    const auto& row = t.lft[n];
    for (size_t b = 0; b * 64 <= t.top_lid && !a.status; ++b) {
      std::array<uint8_t, 72> r{};
      put16(r.data(), lid);
      put16(r.data() + 2, uint16_t(b));
      for (size_t i = 0; i < 64; ++i)
        r[8 + i] = b * 64 + i < row.size() ? row[b * 64 + i] : kDropPort;
      add(a, lft_record(), r.data(), q);
    }
  });
}

void sl2vl_records(const Query& q, Answer& a) {
  const auto& snap = *q.ctx.snap;
  if (!q.ctx.qos_cfg || !(q.ctx.qos_cfg->enabled || snap.tables.vls > 1)) return;  // not weft's
  const auto& f = snap.fabric;
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n) {
    const auto& nd = f.node(n);
    // `port`: whose operational VLs mask the table (a CA's own port; a switch's output).
    auto emit = [&](uint16_t lid, PortNum in, PortNum out, PortNum port) {
      const auto t = qos::port_sl2vl(q.ctx.qos_cfg->for_port(nd, port),
                                     nd.ports[port].attrs.oper_vls, snap.tables.vls);
      std::array<uint8_t, 16> r{};
      put16(r.data(), lid);
      r[2] = in;
      r[3] = out;
      const mad::SmpData d = mad::encode_sl2vl(t);
      std::memcpy(r.data() + 8, d.data(), 8);
      add(a, sl2vl_record(), r.data(), q);
    };
    if (!nd.is_switch()) {
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        if (q.idx.lid_of[n][p]) emit(q.idx.lid_of[n][p], 0, 0, p);
      continue;
    }
    const uint16_t lid = q.idx.lid_of[n][0];
    if (!lid) continue;
    for (PortNum out = nd.sw.enhanced_port0 ? 0 : 1; out <= nd.num_ports; ++out) {
      if (out && !nd.ports[out].linked()) continue;
      for (PortNum in = 0; in <= nd.num_ports; ++in)
        if (!in || nd.ports[in].linked()) emit(lid, in, out, out);
    }
  }
}

void vlarb_records(const Query& q, Answer& a) {
  const auto& snap = *q.ctx.snap;
  if (!q.ctx.qos_cfg || !q.ctx.qos_cfg->enabled) return;  // arbitration is QoS's
  const auto& f = snap.fabric;
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n) {
    const auto& nd = f.node(n);
    const uint16_t sw_lid = nd.is_switch() ? q.idx.lid_of[n][0] : 0;
    for (PortNum p = nd.is_switch() ? 0 : 1; p <= nd.num_ports; ++p) {
      if (p == 0 && !nd.sw.enhanced_port0) continue;
      if (p && !nd.ports[p].linked()) continue;
      const uint16_t lid = nd.is_switch() ? sw_lid : q.idx.lid_of[n][p];
      if (!lid) continue;
      const auto& cfg = q.ctx.qos_cfg->for_port(nd, p);
      const auto caps = n < snap.vlarb_caps.size() && p < snap.vlarb_caps[n].size()
                            ? snap.vlarb_caps[n][p]
                            : std::pair<uint8_t, uint8_t>{0, 0};
      // Blocks 1-2 low, 3-4 high, as the VLArbitrationTable modifier numbers them; each
      // holds what weft wrote: the port's capacity of entries.
      for (auto [list, cap, first] : {std::tuple{&cfg.low, caps.first, uint8_t(1)},
                                      std::tuple{&cfg.high, caps.second, uint8_t(3)}})
        for (size_t bi = 0; bi * 32 < cap; ++bi) {
          std::array<uint8_t, 72> r{};
          put16(r.data(), lid);
          r[2] = p;
          r[3] = uint8_t(first + bi);
          const mad::SmpData d =
              mad::encode_vlarb(qos::vlarb_block(*list, bi, cap, nd.ports[p].attrs.oper_vls));
          std::memcpy(r.data() + 8, d.data(), 64);
          add(a, vlarb_record(), r.data(), q);
        }
    }
  }
}

// --- PathRecord ------------------------------------------------------------------------

struct PathEnd {
  NodeIndex n;
  PortNum p;
  uint16_t lid;
};

// MTU and rate selectors (0 greater than, 1 less than, 2 exactly, 3 largest): the
// value to answer, or nullopt when the path cannot meet the request. `rank` orders
// values (MTU codes rank as they are; rates by Gb/s).
template <class Rank>
std::optional<uint8_t> select(uint8_t have, bool given_sel, uint8_t sel, bool given_val,
                              uint8_t want, Rank rank) {
  if (!given_val) return have;
  if (!given_sel) sel = 2;
  switch (sel) {
    case 0:
      return rank(have) > rank(want) ? std::optional<uint8_t>(have) : std::nullopt;
    case 1:
      return rank(have) < rank(want) ? std::optional<uint8_t>(have) : std::nullopt;
    case 2:
      return rank(have) >= rank(want) ? std::optional<uint8_t>(want) : std::nullopt;
    default:
      return have;
  }
}

// One PathRecord from `s` to `d`, or nothing when no path meets the request.
bool path_record(const Query& q, const PathEnd& s, const PathEnd& d, Answer& a) {
  const auto& snap = *q.ctx.snap;
  const auto& f = snap.fabric;
  const auto& t = snap.tables;
  // P_Key: one the two ports share with a full member among them.
  const uint16_t want_pkey = bit(q.mask, kPrPkey) ? be16(q.rec + 50) : 0;
  if (bit(q.mask, kPrPkey) && !(want_pkey & 0x7fff)) return false;
  // The QoS policy (under QoS): the level of the first rule the query matches.
  std::optional<qos::QosDecision> level;
  if (q.ctx.qos && snap.qos_policy) {
    const auto& fs = snap.fabric.node(s.n).ports[s.p];
    const auto& fd = snap.fabric.node(d.n).ports[d.p];
    std::optional<uint64_t> sid;
    if (bit(q.mask, 0) || bit(q.mask, 1)) sid = be64(q.rec);
    std::optional<uint16_t> pkq;
    if (bit(q.mask, kPrPkey)) pkq = want_pkey;
    std::optional<uint16_t> qc;
    if (bit(q.mask, kPrQos)) qc = uint16_t(be16(q.rec + 52) >> 4);
    level = snap.qos_policy->decide(fs.guid.value, fd.guid.value, sid, pkq, qc);
  }
  // P_Key: one the two ports share (a full member among them), within the level's.
  std::optional<uint16_t> pk;
  for (uint16_t k : snap.partitions.pkeys[s.n][s.p]) {
    if (want_pkey && (k & 0x7fff) != (want_pkey & 0x7fff)) continue;
    if (level && !level->pkeys.empty() &&
        std::none_of(level->pkeys.begin(), level->pkeys.end(),
                     [&](const config::Range64& r) { return r.contains(k & 0x7fff); }))
      continue;
    if ((pk = snap.partitions.common_pkey(s.n, s.p, d.n, d.p, k))) break;
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
  if (!have_sl || t.vls <= 1) {
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
  const auto& sp = f.node(s.n).ports[s.p];  // end ports: a switch's is port 0
  const auto& dp = f.node(d.n).ports[d.p];
  put64(r.data() + 8, q.ctx.subnet_prefix);
  put64(r.data() + 16, dp.guid.value);
  put64(r.data() + 24, q.ctx.subnet_prefix);
  put64(r.data() + 32, sp.guid.value);
  put16(r.data() + 40, d.lid);
  put16(r.data() + 42, s.lid);
  // FlowLabel, HopLimit and TClass: what the requester gave (one subnet: no routing).
  if (bit(q.mask, kPrFlow)) {
    r[44] = q.rec[44] & 0x0f;
    r[45] = q.rec[45];
    r[46] = q.rec[46];
  }
  if (bit(q.mask, kPrHop)) r[47] = q.rec[47];
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
  // An end given by GID (subnet prefix + port GUID) or by LID; nullopt = not given.
  auto end = [&](int gid_bit, size_t gid_off, int lid_bit, size_t lid_off,
                 uint16_t* status) -> std::optional<std::vector<PathEnd>> {
    std::vector<PathEnd> v;
    if (bit(q.mask, gid_bit)) {
      const uint64_t prefix = be64(q.rec + gid_off), guid = be64(q.rec + gid_off + 8);
      auto it = idx.by_guid.find(guid);
      if (prefix != q.ctx.subnet_prefix || it == idx.by_guid.end()) {
        *status = kSaStatusInvalidGid;
        return v;
      }
      const uint16_t base = idx.lid_of[it->second.first][it->second.second];
      if (bit(q.mask, lid_bit)) {
        const uint16_t lid = be16(q.rec + lid_off);
        if (idx.at(lid) != it->second) return v;  // GID and LID disagree
        v.push_back({it->second.first, it->second.second, lid});
      } else {
        v.push_back({it->second.first, it->second.second, base});
      }
      return v;
    }
    if (bit(q.mask, lid_bit)) {
      const uint16_t lid = be16(q.rec + lid_off);
      if (auto at = idx.at(lid)) v.push_back({at->first, at->second, lid});
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
    std::vector<PathEnd> v;
    const auto& f = q.ctx.snap->fabric;
    for (NodeIndex n = 0; n < f.size(); ++n)
      for (PortNum p = 0; p < f.node(n).ports.size(); ++p)
        if (idx.lid_of[n][p]) v.push_back({n, p, idx.lid_of[n][p]});
    return v;
  };
  const std::vector<PathEnd> ss = src ? *src : all();
  const std::vector<PathEnd> ds = dst ? *dst : all();
  for (const auto& s : ss)
    for (const auto& d : ds) {
      path_record(q, s, d, a);
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
  auto end_of = [&](size_t i) -> std::optional<PathEnd> {
    const uint8_t* g = rec.data() + kMprGids + 16 * i;
    auto it = idx.by_guid.find(be64(g + 8));
    if (be64(g) != ctx.subnet_prefix || it == idx.by_guid.end()) return std::nullopt;
    return PathEnd{it->second.first, it->second.second,
                   idx.lid_of[it->second.first][it->second.second]};
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
          cand.push_back(
              {PathEnd{s.n, s.p, uint16_t(s.lid + i)}, PathEnd{d.n, d.p, uint16_t(d.lid + j)}});
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
  auto it = q.idx.by_guid.find(be64(q.rec + 24));
  if (be64(q.rec + 16) != q.ctx.subnet_prefix || it == q.idx.by_guid.end()) {
    a.status = kSaStatusInvalidGid;
    return std::nullopt;
  }
  const auto [n, p] = it->second;
  const uint64_t port_guid = be64(q.rec + 24);
  const auto& snap = *q.ctx.snap;
  auto [pmtu, prate] = port_limits(snap.fabric, n, p);
  auto holds_pkey = [&](uint16_t pkey) {
    for (uint16_t k : snap.partitions.pkeys[n][p])
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
  auto mlid = db.create(ng, q.ctx.mft_cap);
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

}  // namespace

void SaAgent::forget_ports(const std::function<bool(uint64_t)>& alive) {
  std::erase_if(services_, [&](const Service& s) { return !alive(be64(s.rec.data() + 16)); });
  std::erase_if(subs_, [&](const Subscription& s) { return !alive(be64(s.info.data() + 8)); });
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

namespace {
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
  const Index& idx = index(ctx);
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
  const Index& idx = index(ctx);
  Query q{ctx, idx, rec.data(), be64(hdr.data() + 48), method == kMethodGetTable};
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
  a.rec_size = layout ? (layout->size + 7) / 8 * 8 : route->rec_size;
  if (!a.status && method != kMethodGetTable && method != kMethodGetMulti) {
    if (a.count == 0)
      a.status = kSaStatusNoRecords;
    else if (a.count > 1)
      a.status = kSaStatusTooManyRecords;
  }
  return respond(resp);
}

}  // namespace weft::sm
