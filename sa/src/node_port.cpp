// The SA's records of nodes, ports and switches, from the published snapshot: NodeRecord,
// PortInfoRecord, SMInfoRecord, LinkRecord, P_KeyTableRecord, SwitchInfoRecord,
// LinearForwardingTableRecord, SL2VLTableRecord and VLArbitrationTableRecord.
#include <algorithm>
#include <cstring>
#include <tuple>

#include "records.hpp"

namespace weft::sa::detail {

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
  // An SR-IOV VF with a LID of its own: its virtual node, one port, behind its CA (one
  // that shares its port's LID is that LID's port's record).
  auto one_vport = [&](const fabric::VPort& v) {
    const auto& nd = f.node(v.node);
    std::array<uint8_t, 112> r{};
    mad_set_field(r.data(), 0, IB_SA_NR_LID_F, v.lid.value);
    mad_set_field(r.data(), 0, IB_SA_NR_BASEVER_F, 1);
    mad_set_field(r.data(), 0, IB_SA_NR_CLASSVER_F, 1);
    mad_set_field(r.data(), 0, IB_SA_NR_TYPE_F, static_cast<uint32_t>(fabric::NodeType::kCa));
    mad_set_field(r.data(), 0, IB_SA_NR_NPORTS_F, 1);
    mad_set_field64(r.data(), 0, IB_SA_NR_SYSTEM_GUID_F, nd.system_guid.value);
    mad_set_field64(r.data(), 0, IB_SA_NR_GUID_F, v.node_guid.value);
    mad_set_field64(r.data(), 0, IB_SA_NR_PORT_GUID_F, v.guid.value);
    mad_set_field(r.data(), 0, IB_SA_NR_PARTITION_CAP_F, v.partition_cap);
    mad_set_field(r.data(), 0, IB_SA_NR_DEVID_F, nd.device_id);
    mad_set_field(r.data(), 0, IB_SA_NR_REVISION_F, nd.revision);
    mad_set_field(r.data(), 0, IB_SA_NR_LOCAL_PORT_F, 1);
    mad_set_field(r.data(), 0, IB_SA_NR_VENDORID_F, nd.vendor_id);
    std::memcpy(r.data() + 44, v.description.data(), std::min<size_t>(64, v.description.size()));
    add(a, l, r.data(), q);
  };
  if (bit(q.mask, 0)) {  // by LID: one port at most
    const uint16_t lid = be16(q.rec);
    if (auto at = q.idx.at(lid); at && q.idx.lid_of[at->first][at->second] == lid)
      one(at->first, at->second);
    else if (const auto* v = q.idx.vport_at(lid); v && f.vports()[v->index].lid.value == lid)
      one_vport(f.vports()[v->index]);
    return;
  }
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n)
    for (PortNum p = 0; p < f.node(n).ports.size(); ++p)
      if (q.idx.lid_of[n][p]) one(n, p);
  for (const auto& v : f.vports())
    if (v.lid.value && !a.status) one_vport(v);
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
  // One record of `pi`; true when the answer is full and the listing stops.
  auto add_one = [&](mad::PortInfo pi, uint16_t lid, PortNum num) {
    pi.gid_prefix = q.ctx.subnet_prefix;
    if ((pi.attrs.capability_mask & want_cap) != want_cap) return false;
    std::array<uint8_t, 72> r{};
    put16(r.data(), lid);
    r[2] = num;
    const mad::SmpData d = mad::encode_port_info(pi);  // 64 bytes at kPiBase; the record pads to 72
    std::memcpy(r.data() + kPiBase, d.data(), 64);
    add(a, l, r.data(), eq);
    return a.status != 0;  // stop: too many records
  };
  // An SR-IOV VF with a LID of its own: port 1 of its virtual node, its port's link,
  // its own LID and state (a VF sharing its port's LID is in that port's record).
  auto one_vport = [&](const fabric::VPort& v) {
    mad::PortInfo pi;
    pi.attrs = f.node(v.node).ports[v.port].attrs;
    pi.attrs.lid = v.lid;
    pi.attrs.state = v.state;
    pi.attrs.capability_mask &= ~mad::kCapIsSm;
    pi.local_port = 1;
    return add_one(pi, v.lid.value, 1);
  };
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
      if (nd.ports[0].guid == q.ctx.sm_guid || port.guid == q.ctx.sm_guid)
        pi.attrs.capability_mask |= (!nd.is_switch() || p == 0) ? mad::kCapIsSm : 0;
      if (add_one(pi, lid, p)) return;
    }
  };
  if (bit(q.mask, 0)) {
    const uint16_t lid = be16(q.rec);
    if (auto at = q.idx.at(lid); at && q.idx.lid_of[at->first][at->second] == lid)
      node_ports(at->first, lid);
    else if (const auto* v = q.idx.vport_at(lid); v && f.vports()[v->index].lid.value == lid)
      one_vport(f.vports()[v->index]);
    return;
  }
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n) {
    const auto& nd = f.node(n);
    for (PortNum p = 0; p < nd.ports.size(); ++p)
      if (q.idx.lid_of[n][p] && (nd.is_switch() ? p == 0 : true)) node_ports(n, q.idx.lid_of[n][p]);
  }
  for (const auto& v : f.vports())
    if (v.lid.value && !a.status && one_vport(v)) return;
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
  // P_KeyTableRecords are for trusted requests only (IBTA 15.2.5.11; OpenSM answers
  // others ERR_REQ_INVALID).
  if (!q.trusted) return void(a.status = kSaStatusReqInvalid);
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
  if (!q.ctx.qos_cfg ||
      !(q.ctx.qos_cfg->enabled || snap.tables.vls > 1 || !snap.tables.hop_vl.empty()))
    return;  // not weft's
  const auto& f = snap.fabric;
  for (NodeIndex n = 0; n < f.size() && !a.status; ++n) {
    const auto& nd = f.node(n);
    // `port`: whose operational VLs mask the table (a CA's own port; a switch's output).
    auto emit = [&](uint16_t lid, PortNum in, PortNum out, PortNum port) {
      const auto& cfg = q.ctx.qos_cfg->for_port(nd, port);
      const uint8_t oper = nd.ports[port].attrs.oper_vls;
      const auto hop = snap.tables.hop_map(f, n, in, out);
      const auto t =
          hop ? qos::hop_sl2vl(cfg, oper, *hop) : qos::port_sl2vl(cfg, oper, snap.tables.vls);
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

}  // namespace weft::sa::detail
