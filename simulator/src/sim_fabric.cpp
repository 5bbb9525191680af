#include "weft/simulator/sim_fabric.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

namespace weft::simulator {

using fabric::NodeIndex;
using fabric::NodeType;
using fabric::PortState;
using namespace weft::mad;

namespace {
constexpr uint16_t kStatusUnsupported = 0x000C;  // method/attribute not supported
constexpr uint16_t kStatusInvalid = 0x001C;      // invalid attribute value or modifier

uint8_t top_bit(uint8_t mask, std::initializer_list<uint8_t> order) {
  for (uint8_t b : order)
    if (mask & b) return b;
  return 0;
}
}  // namespace

SimFabric::SimFabric(fabric::Fabric f, SimDefaults d) : f_(std::move(f)), d_(d) {
  const size_t n = f_.size();
  lft_.resize(n);
  top_.assign(n, 0);
  lifetime_.assign(n, 0);
  psc_.assign(n, 0);
  dead_.assign(n, 0);
  subnet_timeout_.resize(n);
  pkeys_.resize(n);
  sl2vl_.resize(n);
  vlarb_.resize(n);
  extras_.resize(n);
  mkey_.resize(n);
  pc_.resize(n);
  pce_.resize(n);
  pma_caps_.assign(n, 0x1300);
  ar_.resize(n);
  for (NodeIndex i = 0; i < n; ++i) set_cc(i, d_.cc_agents ? CcSupport::kAgent : CcSupport::kNone);
  // ibsim's power-on tables: 0xffff at P_Key index 0; SL2VL 0-14 and 15 -> 7; arbitration
  // low VL0:0 VL1..:4, high VL0:4 VL1..:0.
  // A device's SL2VL and arbitration tables are its own only once something sets them
  // (a 3,920-switch radix-56 fabric's SL2VL alone would otherwise hold 200 MB).
  for (uint8_t s = 0; s < 16; ++s) sl2vl0_[s] = s == 15 ? 7 : s;
  for (uint8_t i = 0; i < std::min<uint8_t>(d_.vl_arb_cap, 32); ++i) {
    arb0_[0][i] = {i, static_cast<uint8_t>(i == 0 ? 0 : 4)};
    arb0_[2][i] = {i, static_cast<uint8_t>(i == 0 ? 4 : 0)};
  }
  for (NodeIndex i = 0; i < n; ++i) {
    auto& nd = f_.node(i);
    subnet_timeout_[i].assign(nd.ports.size(), 0);
    pkeys_[i].resize(nd.ports.size());
    for (PortNum p = 0; p < nd.ports.size(); ++p) {
      const size_t cap = nd.is_switch() && p != 0 ? d_.partition_enforce_cap
                                                  : (nd.partition_cap ? nd.partition_cap : 64);
      pkeys_[i][p].assign(cap, 0);
      if (cap) pkeys_[i][p][0] = 0xffff;
    }
    extras_[i].assign(nd.ports.size(), {});
    mkey_[i].assign(nd.ports.size(), {});
    pc_[i].assign(nd.ports.size(), {});
    pce_[i].assign(nd.ports.size(), {});
    if (nd.is_switch())
      mft_.push_back(std::vector<std::vector<uint16_t>>((nd.num_ports + 1 + 15) / 16,
                                                        std::vector<uint16_t>(d_.mft_cap, 0)));
    else
      mft_.emplace_back();
    if (nd.is_switch()) {
      lft_[i].assign(d_.lft_cap, kDropPort);
      nd.sw.lft_cap = d_.lft_cap;
      nd.sw.mft_cap = d_.mft_cap;
      psc_[i] = 1;  // links came up
      set_ar_cap(i, d_.ar_group_cap);
    }
    for (auto& p : nd.ports) {
      auto& a = p.attrs;
      a.lid = (nd.is_switch() && p.num != 0) ? Lid{} : a.lid;
      a.sm_lid = Lid{};
      a.width_supported = 0x1F;
      a.speed_supported = 0x7;
      if (!a.width_enabled) a.width_enabled = 2;
      if (!a.speed_enabled) a.speed_enabled = 1;
      a.mtu_cap = d_.mtu_cap;
      a.vl_cap = d_.vl_cap;
      a.oper_vls = d_.vl_cap;
      a.neighbor_mtu = d_.mtu_cap;
      a.capability_mask = nd.is_switch() ? kCapSlMap : kCapSlMap | kCapClientRereg;
      if (nd.is_switch() && p.num == 0) {
        a.state = PortState::kActive;
        a.phys_state = 5;
        a.width_active = 2;
        a.speed_active = 1;
      } else if (p.linked()) {
        a.state = PortState::kInit;
        a.phys_state = 5;
      } else {
        a.state = PortState::kDown;
        a.phys_state = 2;
        a.width_active = 2;
        a.speed_active = 1;
      }
    }
  }
  // Active width and speed: the best both ends enable (unless a dump said otherwise).
  for (const auto& l : f_.links()) {
    auto& a = f_.node(l.a).ports[l.pa].attrs;
    auto& b = f_.node(l.b).ports[l.pb].attrs;
    if (!a.width_active || !b.width_active) {
      uint8_t w = top_bit(a.width_enabled & b.width_enabled, {8, 4, 2, 16, 1});
      a.width_active = b.width_active = w ? w : 1;
    }
    if (!a.speed_active || !b.speed_active) {
      uint8_t s = top_bit(a.speed_enabled & b.speed_enabled, {4, 2, 1});
      a.speed_active = b.speed_active = s ? s : 1;
    }
  }
}

size_t SimFabric::sl2vl_index(NodeIndex n, PortNum in, PortNum out) const {
  const auto& nd = f_.node(n);
  if (out >= nd.ports.size() || (nd.is_switch() && in >= nd.ports.size()))
    throw std::out_of_range("SimFabric::sl2vl: no such port");  // a CA's `in` is not used
  return nd.is_switch() ? size_t(in) * nd.ports.size() + out : out;
}

const qos::Sl2Vl& SimFabric::sl2vl(NodeIndex n, PortNum in, PortNum out) const {
  const size_t idx = sl2vl_index(n, in, out);
  const auto& t = sl2vl_.at(n);
  return t.empty() ? sl2vl0_ : t[idx];
}

const qos::VlArbBlock& SimFabric::vlarb(NodeIndex n, PortNum p, size_t block) const {
  const auto& t = vlarb_.at(n);
  if (p >= f_.node(n).ports.size()) throw std::out_of_range("SimFabric::vlarb: no such port");
  return t.empty() ? arb0_.at(block) : t[p].at(block);
}

std::vector<std::pair<NodeIndex, PortNum>> SimFabric::mcast_reach(uint16_t mlid, NodeIndex n,
                                                                  PortNum p) const {
  std::vector<std::pair<NodeIndex, PortNum>> out;
  if (mlid < 0xC000 || size_t(mlid - 0xC000) >= d_.mft_cap) return out;
  const size_t idx = mlid - 0xC000;
  // (switch, port it came in on); a switch forwards to its mask minus the input port.
  std::vector<std::pair<NodeIndex, PortNum>> todo;
  std::vector<uint8_t> seen(f_.size(), 0);
  if (f_.node(n).is_switch()) {
    todo.push_back({n, 0});
  } else {
    const auto& port = f_.node(n).ports[p];
    if (!port.linked()) return out;
    todo.push_back({port.peer, port.peer_port});
  }
  while (!todo.empty()) {
    auto [sw, in] = todo.back();
    todo.pop_back();
    if (seen[sw]++) continue;  // a loop in the tables: each switch counts once
    const auto& nd = f_.node(sw);
    for (PortNum q = 0; q <= nd.num_ports; ++q) {
      if (q == in && q != 0) continue;
      if (!(mft_[sw][q / 16][idx] & (1u << (q % 16)))) continue;
      if (q == 0) {
        if (!(f_.node(n).is_switch() && sw == n)) out.push_back({sw, 0});
        continue;
      }
      const auto& port = nd.ports[q];
      if (!port.linked()) continue;
      if (f_.node(port.peer).is_switch())
        todo.push_back({port.peer, port.peer_port});
      else if (!(port.peer == n && port.peer_port == p))
        out.push_back({port.peer, port.peer_port});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t SimFabric::lid_routed_sets(uint16_t attr) const {
  auto it = lid_sets_.find(attr);
  return it == lid_sets_.end() ? 0 : it->second;
}

size_t SimFabric::sets(uint16_t attr) const {
  auto it = sets_.find(attr);
  return it == sets_.end() ? 0 : it->second;
}

routing::Tables SimFabric::held_tables() const {
  routing::Tables held;
  held.lft.resize(f_.size());
  for (NodeIndex n = 0; n < f_.size(); ++n) {
    if (!f_.node(n).is_switch()) continue;
    const auto& l = lft_[n];
    held.lft[n].assign(l.begin(), l.begin() + std::min<size_t>(l.size(), size_t(top_[n]) + 1));
    held.top_lid = std::max(held.top_lid, top_[n]);
  }
  // Adaptive routing where a switch has it on: each AR LFT entry's group (its ports, as
  // ar_choices gives them) as the tables' AR groups.
  bool any = false;
  for (NodeIndex n = 0; n < f_.size() && !any; ++n)
    any = !ar_[n].lft.empty() && ar_[n].info.enabled;
  if (!any) return held;
  held.ar_group.assign(f_.size(), {});
  held.ar_sets.assign(f_.size(), {});
  std::vector<PortNum> ports;
  for (NodeIndex n = 0; n < f_.size(); ++n) {
    if (!f_.node(n).is_switch() || !ar_[n].info.enabled) continue;
    held.ar_group[n].assign(held.lft[n].size(), routing::Tables::kNoArGroup);
    std::map<uint16_t, uint16_t> index;  // AR group number -> ar_sets[n] index
    for (size_t lid = 0; lid < held.lft[n].size(); ++lid) {
      ports.clear();
      ar_choices(n, uint16_t(lid), ports);
      if (ports.empty()) continue;
      auto [it, fresh] = index.emplace(ar_[n].lft[lid].group, uint16_t(held.ar_sets[n].size()));
      if (fresh) held.ar_sets[n].push_back(ports);
      held.ar_group[n][lid] = it->second;
    }
  }
  return held;
}

namespace {

uint64_t add_saturating(uint64_t v, uint64_t by, unsigned bits) {
  const uint64_t top = perf::max_of(bits);
  return v >= top || by > top - v ? top : v + by;
}

}  // namespace

void SimFabric::count(NodeIndex n, PortNum p, perf::Counter c, uint64_t by) {
  uint64_t& v = pc_.at(n).at(p).value[size_t(c)];
  v = add_saturating(v, by, perf::info(c).bits);
}

void SimFabric::count(NodeIndex n, PortNum p, perf::ExtCounter c, uint64_t by) {
  uint64_t& v = pce_.at(n).at(p).value[size_t(c)];
  v = add_saturating(v, by, 64);
}

void SimFabric::reset_counters(NodeIndex n, PortNum p) {
  pc_.at(n).at(p) = {};
  pce_.at(n).at(p) = {};
}

uint16_t SimFabric::pma(bool set, uint16_t attr, NodeIndex n, PortNum in_port,
                        perf::PmaData& data) {
  constexpr uint16_t kUnsupported = 0x0C, kInvalidField = 0x1C;
  if (attr != perf::kAttrPortCounters && attr != perf::kAttrPortCountersExt) return kUnsupported;
  const auto& nd = f_.node(n);
  const bool ext = attr == perf::kAttrPortCountersExt;
  const uint8_t select = ext ? perf::decode_port_counters_ext(data).port_select
                             : perf::decode_port_counters(data).port_select;
  std::vector<PortNum> ports;
  if (nd.is_switch() && select == 0xFF) {
    for (PortNum p = 0; p < nd.ports.size(); ++p) ports.push_back(p);
  } else if (nd.is_switch() ? select < nd.ports.size() : select == in_port) {
    ports.push_back(select);
  } else {
    return kInvalidField;
  }
  // CounterSelect is the same field in both attributes; PortCountersExtended's clears
  // its 64-bit counters in the same order (IBTA 16.1.4.11).
  const uint32_t clear = !set ? 0 : ext ? perf::cleared_by(data) & 0xFFFF : perf::cleared_by(data);
  perf::PortCounters sum;
  perf::PortCountersExt sum_ext;
  for (PortNum p : ports) {
    auto& pc = pc_.at(n).at(p);
    auto& pce = pce_.at(n).at(p);
    for (size_t i = 0; i < perf::kCounters; ++i) {
      if (!ext && (clear >> i & 1)) pc.value[i] = 0;
      sum.value[i] = add_saturating(sum.value[i], pc.value[i], perf::info(perf::Counter(i)).bits);
    }
    for (size_t i = 0; i < perf::kExtCounters; ++i) {
      if (ext && (clear >> i & 1)) pce.value[i] = 0;
      sum_ext.value[i] = add_saturating(sum_ext.value[i], pce.value[i], 64);
    }
  }
  data = {};
  if (ext) {
    sum_ext.port_select = select;
    perf::encode_port_counters_ext(sum_ext, data);
  } else {
    sum.port_select = select;
    perf::encode_port_counters(sum, data);
  }
  return 0;
}

void SimFabric::unlink(NodeIndex n, PortNum p) {
  auto& port = f_.node(n).ports.at(p);
  if (!port.linked()) return;
  NodeIndex m = port.peer;
  PortNum q = port.peer_port;
  f_.disconnect(n, p);
  for (auto [x, y] : {std::pair{n, p}, std::pair{m, q}}) {
    auto& a = f_.node(x).ports[y].attrs;
    a.state = PortState::kDown;
    a.phys_state = 2;
    if (f_.node(x).is_switch()) psc_[x] = 1;
  }
}

bool SimFabric::relink(NodeIndex n, PortNum p, NodeIndex m, PortNum q) {
  for (auto [x, y, ox, oy] : {std::tuple{n, p, m, q}, std::tuple{m, q, n, p}})
    if (f_.node(x).ports.at(y).attrs.phys_state == 3) {
      disabled_[{x, y}] = {ox, oy};  // the cable is back; the port stays disabled
      return !f_.node(x).ports[y].linked() && !f_.node(ox).ports.at(oy).linked();
    }
  if (!f_.connect(n, p, m, q)) return false;
  for (auto [x, y] : {std::pair{n, p}, std::pair{m, q}}) {
    auto& a = f_.node(x).ports[y].attrs;
    a.state = PortState::kInit;
    a.phys_state = 5;
    if (f_.node(x).is_switch()) psc_[x] = 1;
  }
  return true;
}

void SimFabric::reset_switch(NodeIndex n, bool keep_top) {
  auto& nd = f_.node(n);
  std::fill(lft_.at(n).begin(), lft_.at(n).end(), uint8_t(0xff));
  if (!keep_top) top_.at(n) = 0;
  for (auto& m : mft_.at(n)) std::fill(m.begin(), m.end(), uint16_t(0));
  set_ar_cap(n, ar_.at(n).info.group_cap);  // AR off, no groups, every LID static
  // Its ports' P_Key, SL2VL and arbitration tables are back to their power-on state.
  for (auto& t : pkeys_.at(n)) {
    std::fill(t.begin(), t.end(), uint16_t(0));
    if (!t.empty()) t[0] = 0xffff;
  }
  sl2vl_.at(n).clear();
  vlarb_.at(n).clear();
  psc_.at(n) = 1;
  // Its links retrain: both ends back to INIT (the peers' switches see the change too).
  for (PortNum p = 1; p <= nd.num_ports; ++p) {
    auto& port = nd.ports[p];
    if (!port.linked()) continue;
    port.attrs.state = PortState::kInit;
    auto& peer = f_.node(port.peer);
    peer.ports[port.peer_port].attrs.state = PortState::kInit;
    if (peer.is_switch()) psc_[port.peer] = 1;
  }
}

bool SimFabric::owns_lid(NodeIndex n, PortNum p, uint16_t lid) const {
  const auto& nd = f_.node(n);
  const auto& a = nd.ports[nd.is_switch() ? 0 : p].attrs;
  if (!a.lid.is_unicast()) return false;
  return lid >= a.lid.value && lid < a.lid.value + (1u << a.lmc);
}

std::optional<SimFabric::Hop> SimFabric::lid_route(
    NodeIndex src, PortNum src_port, uint16_t dlid, int* hops,
    const std::function<void(NodeIndex, PortNum)>& egress) const {
  NodeIndex n = src;
  PortNum p = src_port;
  int h = 0;
  if (owns_lid(n, p, dlid)) return Hop{n, p};
  if (!f_.node(n).is_switch()) {
    const auto& port = f_.node(n).ports.at(p);
    if (!port.linked() || port.attrs.state != PortState::kActive) return std::nullopt;
    n = port.peer;
    p = port.peer_port;
    ++h;
  }
  for (int guard = 0; guard < 64; ++guard) {
    if (owns_lid(n, p, dlid)) {
      if (hops) *hops = h;
      return Hop{n, p};
    }
    const auto& nd = f_.node(n);
    if (!nd.is_switch()) return std::nullopt;
    if (dlid > top_[n] || dlid >= lft_[n].size()) return std::nullopt;
    PortNum out = lft_[n][dlid];
    if (out == 0 || out > nd.num_ports) return std::nullopt;
    const auto& port = nd.ports[out];
    if (!port.linked() || port.attrs.state != PortState::kActive) return std::nullopt;
    const auto& back = f_.node(port.peer).ports[port.peer_port];
    if (back.attrs.state != PortState::kActive) return std::nullopt;
    if (egress) egress(n, out);
    n = port.peer;
    p = port.peer_port;
    ++h;
  }
  return std::nullopt;
}

SimFabric::Outcome SimFabric::process(const MadBuf& req, NodeIndex sm_node, PortNum sm_port,
                                      Lid dlid) {
  if (req[1] == perf::kClassPerf || req[1] == cc::kClassCc)
    return process_gmp(req, sm_node, sm_port, dlid);
  Outcome out;
  auto dec = decode_smp(req.data(), req.size());
  if (!dec || dec->is_response()) return out;
  Smp s = *dec;
  NodeIndex n = sm_node;
  PortNum in_port = sm_port;
  if (s.mgmt_class == kClassSmiDirect) {
    if (s.hop_ptr != 0) return out;
    for (int i = 1; i <= s.hop_count; ++i) {
      const auto& nd = f_.node(n);
      if (i > 1 && !nd.is_switch()) return out;  // CAs do not forward
      if (dead_[n]) return out;
      PortNum op = s.path.ports[i];
      if (op == 0 || op > nd.num_ports) return out;
      const auto& port = nd.ports[op];
      if (!port.linked() || port.attrs.phys_state != 5) return out;
      s.return_path.ports[i] = port.peer_port;
      n = port.peer;
      in_port = port.peer_port;
      ++out.hops;
    }
    s.hop_ptr = s.hop_count;
  } else {
    // LID routed: through the LFTs the SM programmed, ACTIVE ports only.
    auto hop = lid_route(sm_node, sm_port, dlid.value, &out.hops);
    if (!hop) return out;
    n = hop->node;
    in_port = hop->port;
  }
  if (dead_[n]) return out;
  SmpData data = s.data;
  uint16_t status = 0;
  bool hide = false;
  if (auto a = agents_.find({n, f_.node(n).is_switch() ? PortNum(0) : in_port});
      a != agents_.end() && (s.attr_id == kAttrSmInfo || s.method == kMethodTrap)) {
    auto r = a->second(s);
    if (!r || s.method == kMethodTrap) return out;
    status = r->status;
    data = r->data;
  } else {
    if (!mkey_check(s, n, in_port, hide)) return out;
    status = handle(s, n, in_port, data);
    if (d_.drops_unknown_attrs && s.attr_id >= 0xFF00 && status == kStatusUnsupported) return out;
    if (hide && s.attr_id == kAttrPortInfo && status == 0) {
      PortInfo pi = decode_port_info(data);
      pi.m_key = 0;
      data = encode_port_info(pi);
    }
  }
  Smp r = s;
  r.method = kMethodGetResp;
  r.direction = true;
  r.status = status;
  r.data = data;
  out.reply = encode_smp(r);
  return out;
}

SimFabric::Outcome SimFabric::process_gmp(const MadBuf& req, NodeIndex sm_node, PortNum sm_port,
                                          Lid dlid) {
  Outcome out;
  auto dec = decode_gmp(req.data(), req.size());
  if (!dec || dec->is_response()) return out;
  // LID routed to the PMA of the port that owns `dlid` (a switch's: port 0's LID).
  auto hop = lid_route(sm_node, sm_port, dlid.value, &out.hops);
  if (!hop || dead_[hop->node]) return out;
  if (dec->mgmt_class == cc::kClassCc) {
    const PortNum at = f_.node(hop->node).is_switch() ? PortNum(0) : hop->port;
    if (auto r = cc_.handle(hop->node, at, *dec, clock_ ? clock_->now() : mad::TimePoint{0}))
      out.reply = encode_gmp(*r);
    return out;
  }
  ++pma_queries_;
  Gmp r = *dec;
  r.method = kMethodGetResp;
  perf::PmaData data;
  std::copy_n(r.payload.begin() + (perf::kPmaDataOffset - kMadHeaderSize), data.size(),
              data.begin());
  if (dec->method != kMethodGet && dec->method != kMethodSet) {
    r.status = 0x0C;  // unsupported method
  } else if (dec->attr_id == perf::kAttrClassPortInfo) {
    if (dec->method == kMethodSet)
      r.status = 0x0C;
    else
      perf::encode_class_port_info({pma_caps_[hop->node]}, data);
  } else {
    r.status = pma(dec->method == kMethodSet, dec->attr_id, hop->node, hop->port, data);
  }
  std::copy(data.begin(), data.end(), r.payload.begin() + (perf::kPmaDataOffset - kMadHeaderSize));
  out.reply = encode_gmp(r);
  return out;
}

bool SimFabric::mkey_check(const Smp& s, NodeIndex n, PortNum in_port, bool& hide) {
  const auto& nd = f_.node(n);
  MKeyState& m = mkey_[n][nd.is_switch() ? 0 : in_port];
  const mad::TimePoint now = clock_ ? clock_->now() : mad::TimePoint{0};
  if (m.deadline && now >= *m.deadline) {  // the lease ran out: protection off
    m.deadline.reset();
    m.protect = 0;
  }
  const bool checked =
      s.method == kMethodGet || s.method == kMethodSet || s.method == kMethodTrapRepress;
  const bool valid = m.key == 0 || s.m_key == m.key;
  if (valid) {
    if (checked) m.deadline.reset();
    return true;
  }
  if (s.method == kMethodGet && m.protect < 2) {
    hide = m.protect == 1;
    return true;
  }
  if (!checked) return true;
  if (m.violations != 0xffff) ++m.violations;
  if (!m.deadline && m.lease) m.deadline = now + std::chrono::seconds(m.lease);
  // Trap 256 (bad M_Key, IBTA 14.2.5.1) to the port's SM, naming the SMP and, for a
  // directed-route one, the way back to its sender.
  const auto& lp = nd.ports[nd.is_switch() ? 0 : in_port].attrs;
  Smp t;
  t.mgmt_class = kClassSmiLid;
  t.method = kMethodTrap;
  t.attr_id = kAttrNotice;
  t.tid = 0x5600000000ull | m.violations;
  t.m_key = m.key;  // a trap carries its port's M_Key; the TrapRepress must too
  auto& d = t.data;
  auto be16 = [&d](size_t at, uint32_t v) {
    d[at] = uint8_t(v >> 8);
    d[at + 1] = uint8_t(v);
  };
  d[0] = 0x80 | 2;  // generic, security
  d[3] = nd.is_switch() ? 2 : 1;
  be16(4, 256);
  be16(6, lp.lid.value);
  const size_t x = 10;
  be16(x + 2, lp.lid.value);
  be16(x + 4, s.mgmt_class == kClassSmiDirect ? s.dr_slid.value : 0);
  d[x + 6] = s.method;
  be16(x + 8, s.attr_id);
  for (int i = 0; i < 4; ++i) d[x + 10 + i] = uint8_t(s.attr_mod >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) d[x + 14 + i] = uint8_t(s.m_key >> (56 - 8 * i));
  if (s.mgmt_class == kClassSmiDirect) {
    const uint8_t hops = std::min<uint8_t>(s.hop_count, 30);
    d[x + 22] = uint8_t(0x80 | (s.hop_count > 30 ? 0x40 : 0) | hops);
    // The way back from this port: the return path the SMP recorded, last hop first.
    for (uint8_t i = 1; i <= hops; ++i) d[x + 22 + i] = s.return_path.ports[s.hop_count + 1 - i];
  }
  if (lp.sm_lid.is_unicast()) traps_.push_back({lp.sm_lid.value, encode_smp(t)});
  return false;
}

std::vector<MadBuf> SimFabric::take_traps(Lid sm_lid) {
  std::vector<MadBuf> out;
  std::erase_if(traps_, [&](const auto& t) {
    if (t.first != sm_lid.value) return false;
    out.push_back(t.second);
    return true;
  });
  return out;
}

void SimFabric::attach_sm(NodeIndex n, PortNum p, SmAgent agent) {
  f_.node(n).ports.at(p).attrs.capability_mask |= kCapIsSm;
  agents_[{n, p}] = std::move(agent);
}

uint16_t SimFabric::handle(const Smp& s, NodeIndex n, PortNum in_port, SmpData& data) {
  auto& nd = f_.node(n);
  // A Set the device ignores is answered as a Get: with what it still holds.
  const bool set = s.method == kMethodSet && !ignored_.count({n, s.attr_id});
  if (s.method != kMethodGet && s.method != kMethodSet) return 0x0008;  // method not supported
  if (set) ++sets_[s.attr_id];
  if (set && s.mgmt_class == kClassSmiLid) ++lid_sets_[s.attr_id];
  if (set && refused_.count({n, s.attr_id})) return kStatusInvalid;
  if (!set && refused_gets_.count({n, s.attr_id})) return kStatusInvalid;
  switch (s.attr_id) {
    case kAttrPkeyTable: {
      const PortNum p = nd.is_switch() ? static_cast<PortNum>(s.attr_mod >> 16) : in_port;
      const size_t block = s.attr_mod & 0xffff;
      if (p > nd.num_ports) return kStatusInvalid;
      auto& t = pkeys_[n][p];
      if ((block + 1) * 32 > ((t.size() + 31) / 32) * 32 || t.empty()) return kStatusInvalid;
      if (set) {
        PkeyBlock b = decode_pkey_block(data);
        for (size_t i = 0; i < 32 && block * 32 + i < t.size(); ++i) t[block * 32 + i] = b[i];
      }
      PkeyBlock b{};
      for (size_t i = 0; i < 32 && block * 32 + i < t.size(); ++i) b[i] = t[block * 32 + i];
      data = encode_pkey_block(b);
      return 0;
    }
    case kAttrSl2Vl: {
      size_t idx = in_port;
      auto& t = sl2vl_[n];
      if (nd.is_switch()) {
        const size_t in = (s.attr_mod >> 8) & 0xff, out = s.attr_mod & 0xff;
        // Bit 17: every input port; bit 16: every output port (a Set only, and only
        // where SwitchInfo says the switch takes them).
        const bool all_in = s.attr_mod >> 17 & 1, all_out = s.attr_mod >> 16 & 1;
        const bool a_set = s.method == kMethodSet;  // (ignored or not)
        if ((s.attr_mod >> 18) ||
            ((all_in || all_out) &&
             !(a_set && d_.optimized_sl2vl && !refused_all_sl2vl_.count(n))) ||
            (!all_in && in > nd.num_ports) || (!all_out && out > nd.num_ports))
          return kStatusInvalid;
        if (all_in || all_out) {
          if (!set) {  // ignored: answered with what the first port it names holds
            const size_t i0 = all_in ? 0 : in, o0 = all_out ? 0 : out;
            data = encode_sl2vl(t.empty() ? sl2vl0_ : t[i0 * nd.ports.size() + o0]);
            return 0;
          }
          if (t.empty()) t.assign(nd.ports.size() * nd.ports.size(), sl2vl0_);
          const qos::Sl2Vl table = decode_sl2vl(data);
          for (size_t i = 0; i < nd.ports.size(); ++i)
            for (size_t o = 0; o < nd.ports.size(); ++o)
              if ((all_in || i == in) && (all_out || o == out)) t[i * nd.ports.size() + o] = table;
          data = encode_sl2vl(table);
          return 0;
        }
        idx = in * nd.ports.size() + out;
      }
      if (set && t.empty())
        t.assign(nd.is_switch() ? nd.ports.size() * nd.ports.size() : nd.ports.size(), sl2vl0_);
      if (set) t[idx] = decode_sl2vl(data);
      data = encode_sl2vl(t.empty() ? sl2vl0_ : t[idx]);
      return 0;
    }
    case kAttrMft: {
      if (!nd.is_switch()) return kStatusUnsupported;
      const size_t pos = s.attr_mod >> 28, block = s.attr_mod & 0x1ff;
      if (pos >= mft_[n].size() || (block + 1) * 32 > d_.mft_cap || (s.attr_mod & 0x0ffffe00))
        return kStatusInvalid;
      auto& t = mft_[n][pos];
      if (set) {
        const MftBlock b = decode_mft_block(data);
        std::copy(b.begin(), b.end(), t.begin() + block * 32);
      }
      MftBlock b{};
      std::copy(t.begin() + block * 32, t.begin() + block * 32 + 32, b.begin());
      data = encode_mft_block(b);
      return 0;
    }
    case kAttrVlArb: {
      const size_t block = s.attr_mod >> 16;
      const PortNum p = nd.is_switch() ? static_cast<PortNum>(s.attr_mod & 0xff) : in_port;
      if (block < 1 || block > 4 || p > nd.num_ports) return kStatusInvalid;
      if ((block == 2 || block == 4) && d_.vl_arb_cap <= 32) return kStatusInvalid;
      auto& t = vlarb_[n];
      if (set && t.empty()) t.assign(nd.ports.size(), arb0_);
      if (set) t[p][block - 1] = decode_vlarb(data);
      data = encode_vlarb(t.empty() ? arb0_[block - 1] : t[p][block - 1]);
      return 0;
    }
    case kAttrNodeInfo: {
      if (set) return kStatusUnsupported;
      NodeInfo ni;
      ni.type = nd.type;
      ni.num_ports = nd.num_ports;
      ni.system_guid = nd.system_guid;
      ni.node_guid = nd.guid;
      ni.port_guid = nd.ports[nd.is_switch() ? 0 : in_port].guid;
      ni.partition_cap = nd.partition_cap ? nd.partition_cap : 64;
      ni.device_id = nd.device_id;
      ni.revision = nd.revision;
      ni.local_port = in_port;
      ni.vendor_id = nd.vendor_id;
      data = encode_node_info(ni);
      return 0;
    }
    case kAttrNodeDesc:
      if (set) return kStatusUnsupported;
      data = encode_node_desc(nd.description);
      return 0;
    case kAttrSwitchInfo: {
      if (!nd.is_switch()) return kStatusUnsupported;
      if (set) {
        SwitchInfo in = decode_switch_info(data);
        top_[n] = in.lft_top;
        lifetime_[n] = in.lifetime;
        if (in.port_state_change) psc_[n] = 0;
      }
      SwitchInfo si;
      si.lft_cap = static_cast<uint16_t>(lft_[n].size());
      si.mft_cap = d_.mft_cap;
      si.lft_top = top_[n];
      si.lifetime = lifetime_[n];
      si.port_state_change = psc_[n] != 0;
      si.enhanced_port0 = nd.sw.enhanced_port0;
      si.optimized_sl2vl = d_.optimized_sl2vl;
      si.partition_enforce_cap = d_.partition_enforce_cap;
      si.inbound_enforce_cap = si.outbound_enforce_cap = d_.partition_enforce_cap > 0;
      data = encode_switch_info(si);
      return 0;
    }
    case kAttrPortInfo:
      return port_info(set, n, in_port, s.attr_mod, data);
    case kAttrLft: {
      if (!nd.is_switch()) return kStatusUnsupported;
      const size_t base = size_t(s.attr_mod) * 64;
      if (base + 64 > lft_[n].size()) return kStatusInvalid;
      if (set) {
        LftBlock b = decode_lft_block(data);
        std::copy(b.begin(), b.end(), lft_[n].begin() + base);
      }
      LftBlock b;
      std::copy(lft_[n].begin() + base, lft_[n].begin() + base + 64, b.begin());
      data = encode_lft_block(b);
      return 0;
    }
    case kAttrArInfo:
    case kAttrArGroupTable:
    case kAttrArLft:
      return ar_attr(s, n, data);
    case kAttrGeneralInfo:
    case kAttrVirtualizationInfo:
    case kAttrVPortInfo:
    case kAttrVNodeInfo:
    case kAttrVPortState:
    case kAttrVNodeDesc:
    case kAttrVPortGuidInfo:
    case kAttrVPortPkeyTable:
      if (nd.is_switch()) return kStatusUnsupported;
      return vports_.handle(s, n, in_port, nd.ports[in_port].attrs.lid.value, data);
    default:
      return kStatusUnsupported;
  }
}

void SimFabric::set_ar_cap(NodeIndex sw, uint16_t group_cap) {
  ArState& a = ar_.at(sw);
  a = {};
  if (!f_.node(sw).is_switch() || group_cap == 0) return;
  // A switch as it powers up: AR off, no groups, every LID static; the capabilities of a
  // current NVIDIA switch (by-SL AR, fast recovery) and the GroupCap asked for.
  a.info.group_cap = uint16_t(std::min<uint32_t>(group_cap, 0xfff));
  a.info.sub_grps_supported = std::max<uint8_t>(d_.ar_sub_groups, 1);
  a.info.by_sl_cap = true;
  a.info.fr_sup = true;
  a.info.group_table_cap = 1;
  a.info.ar_version_cap = 2;
  a.info.raw = encode_ar_info(a.info);
  // GroupCap entries of each sub-group: a block past them (the second half of an odd
  // cap's last block) is refused.
  a.groups.assign(size_t(a.info.group_cap) * a.info.sub_grps_supported, ArPortMask{});
  a.lft.assign(d_.lft_cap, ArLftEntry{});
}

void SimFabric::ar_choices(NodeIndex sw, uint16_t lid, std::vector<PortNum>& out) const {
  const ArState& a = ar_.at(sw);
  if (!a.info.enabled || lid >= a.lft.size()) return;
  const ArLftEntry& e = a.lft[lid];
  const size_t entry = size_t(e.group) * (a.info.sub_grps_active + 1u);
  if (e.state == ArLidState::kStatic || e.group > a.info.group_top || entry >= a.groups.size())
    return;
  for (PortNum p = 1; p <= f_.node(sw).num_ports; ++p)
    if (ar_mask_has(a.groups[entry], p)) out.push_back(p);
}

// The AR attributes of switch n: Get answers what it holds; Set takes what an SM may set
// (enable, GroupTop, sub-groups in use, by-SL, ageing, fast recovery, transports) and
// keeps the capabilities; a modifier naming another group table or pLFT is invalid.
uint16_t SimFabric::ar_attr(const Smp& s, NodeIndex n, SmpData& data) {
  ArState& a = ar_[n];
  if (a.info.group_cap == 0) return kStatusUnsupported;
  const bool set = s.method == kMethodSet;
  if (s.attr_id == kAttrArInfo) {
    if (s.attr_mod != 0) return kStatusInvalid;
    if (set) {
      const ArInfo want = decode_ar_info(data);
      if (want.group_top > a.info.group_cap || want.sub_grps_active >= a.info.sub_grps_supported ||
          (want.by_sl_en && !a.info.by_sl_cap) || (want.fr_enabled && !a.info.fr_sup))
        return kStatusInvalid;
      a.info.enabled = want.enabled;
      a.info.group_top = want.group_top;
      a.info.sub_grps_active = want.sub_grps_active;
      a.info.by_sl_en = want.by_sl_en;
      a.info.enable_by_sl_mask = want.enable_by_sl_mask;
      a.info.no_fallback = want.no_fallback;
      a.info.fr_enabled = want.fr_enabled;
      a.info.by_transport_disable = want.by_transport_disable;
      a.info.ageing_time_us = want.ageing_time_us;
      a.info.raw = encode_ar_info(a.info);
    }
    data = encode_ar_info(a.info);
    return 0;
  }
  if (s.attr_id == kAttrArGroupTable) {
    const uint32_t block = s.attr_mod & 0xfff;
    if (s.attr_mod != ar_group_modifier(block) ||
        size_t(block + 1) * kArGroupsPerBlock > a.groups.size())
      return kStatusInvalid;
    if (set) {
      const ArGroupBlock b = decode_ar_group_block(data);
      for (uint32_t i = 0; i < kArGroupsPerBlock; ++i)
        a.groups[block * kArGroupsPerBlock + i] = b[i];
    }
    ArGroupBlock b{};
    for (uint32_t i = 0; i < kArGroupsPerBlock; ++i) b[i] = a.groups[block * kArGroupsPerBlock + i];
    data = encode_ar_group_block(b);
    return 0;
  }
  const uint32_t block = s.attr_mod & 0xffffff;
  if (s.attr_mod != ar_lft_modifier(block) || size_t(block + 1) * kArLftLids > a.lft.size())
    return kStatusInvalid;
  if (set) {
    const ArLftBlock b = decode_ar_lft_block(data);
    for (uint32_t i = 0; i < kArLftLids; ++i) {
      if (b[i].state == ArLidState::kReserved || b[i].table != 0) return kStatusInvalid;
      if (b[i].state != ArLidState::kStatic &&
          size_t(b[i].group) * (a.info.sub_grps_active + 1u) >= a.groups.size())
        return kStatusInvalid;
    }
    for (uint32_t i = 0; i < kArLftLids; ++i) a.lft[block * kArLftLids + i] = b[i];
  }
  ArLftBlock b{};
  for (uint32_t i = 0; i < kArLftLids; ++i) b[i] = a.lft[block * kArLftLids + i];
  data = encode_ar_lft_block(b);
  return 0;
}

uint64_t SimFabric::client_reregisters() const {
  uint64_t total = 0;
  for (const auto& node : extras_)
    for (const auto& port : node) total += port.client_reregisters;
  return total;
}

PortInfo SimFabric::make_port_info(NodeIndex n, PortNum p) const {
  const auto& nd = f_.node(n);
  PortInfo pi;
  pi.attrs = nd.ports[p].attrs;
  if (nd.is_switch() && p != 0) {
    // Switch external ports report the switch's LID and SM LID (port 0 holds them).
    pi.attrs.lid = nd.ports[0].attrs.lid;
    pi.attrs.sm_lid = nd.ports[0].attrs.sm_lid;
    pi.attrs.lmc = nd.ports[0].attrs.lmc;
  }
  pi.local_port = nd.is_switch() ? 0 : p;
  pi.gid_prefix = 0xfe80000000000000ull;
  pi.subnet_timeout = subnet_timeout_[n][p];
  pi.vl_arb_high_cap = pi.vl_arb_low_cap = d_.vl_arb_cap;
  pi.part_enf_in = extras_[n][p].part_enf_in;
  pi.part_enf_out = extras_[n][p].part_enf_out;
  pi.vl_high_limit = extras_[n][p].vl_high_limit;
  pi.hoq_life = extras_[n][p].hoq_life;
  pi.vl_stall_count = extras_[n][p].vl_stall_count;
  if (!nd.is_switch() || p == 0) {
    const MKeyState& m = mkey_[n][p];
    pi.m_key = m.key;
    pi.m_key_protect = m.protect;
    pi.m_key_lease = m.lease;
    pi.m_key_violations = m.violations;
  }
  return pi;
}

uint16_t SimFabric::port_info(bool set, NodeIndex n, PortNum in_port, uint32_t mod, SmpData& data) {
  auto& nd = f_.node(n);
  if (mod > nd.num_ports) return kStatusInvalid;
  PortNum p = static_cast<PortNum>(mod);
  if (!nd.is_switch() && p == 0) p = in_port;
  if (set) {
    if (!nd.is_switch() && p != in_port) return kStatusInvalid;
    PortInfo in = decode_port_info(data);
    auto& a = nd.ports[p].attrs;
    if (in.attrs.oper_vls > a.vl_cap) return kStatusInvalid;
    if (in.attrs.neighbor_mtu > a.mtu_cap) return kStatusInvalid;
    const PortState want = in.attrs.state;
    // PortPhysicalState: 3 disables the port (its link goes down, the cable stays), 2
    // (Polling) lets a disabled one train again.
    if (in.attrs.phys_state == 3 && p != 0 && a.phys_state != 3) {
      if (nd.ports[p].linked()) {
        disabled_[{n, p}] = {nd.ports[p].peer, nd.ports[p].peer_port};
        unlink(n, p);
      }
      a.phys_state = 3;
    } else if (in.attrs.phys_state == 2 && p != 0 && a.phys_state == 3) {
      a.phys_state = 2;
      if (auto it = disabled_.find({n, p}); it != disabled_.end()) {
        const auto [m, q] = it->second;
        disabled_.erase(it);
        if (!nd.ports[p].linked() && !f_.node(m).ports.at(q).linked()) relink(n, p, m, q);
      }
    }
    if (want != PortState::kNoChange) {
      const auto& port = nd.ports[p];
      if (!port.linked()) {
        if (!(nd.is_switch() && p == 0 && want == PortState::kActive)) return kStatusInvalid;
      } else if (want == PortState::kDown) {
        a.state = PortState::kInit;  // link retrains
      } else if (want == PortState::kArmed) {
        if (a.state != PortState::kInit && a.state != PortState::kArmed) return kStatusInvalid;
        if (d_.strict_state_steps && a.state == PortState::kArmed) return kStatusInvalid;
        a.state = PortState::kArmed;
      } else if (want == PortState::kActive) {
        const auto& peer = f_.node(port.peer).ports[port.peer_port].attrs;
        if (a.state != PortState::kArmed && a.state != PortState::kActive) return kStatusInvalid;
        if (d_.strict_state_steps && a.state == PortState::kActive) return kStatusInvalid;
        if (peer.state != PortState::kArmed && peer.state != PortState::kActive)
          return kStatusInvalid;
        a.state = PortState::kActive;
      } else {
        return kStatusInvalid;
      }
    }
    if (!nd.is_switch() || p == 0) {
      a.lid = in.attrs.lid;
      a.sm_lid = in.attrs.sm_lid;
      a.lmc = in.attrs.lmc;
      MKeyState& m = mkey_[n][p];
      m.key = in.m_key;
      m.protect = in.m_key_protect;
      m.lease = in.m_key_lease;
      m.violations = in.m_key_violations;
    }
    if (in.attrs.neighbor_mtu) a.neighbor_mtu = in.attrs.neighbor_mtu;
    if (in.attrs.oper_vls) a.oper_vls = in.attrs.oper_vls;
    subnet_timeout_[n][p] = in.subnet_timeout;
    if (client_reregister_asked(data) && (a.capability_mask & kCapClientRereg)) {
      ++extras_[n][p].client_reregisters;
      if (on_client_reregister_) on_client_reregister_(n, p);
    }
    extras_[n][p].vl_high_limit = in.vl_high_limit;
    extras_[n][p].hoq_life = in.hoq_life;
    if (!d_.drops_vl_stall_count) extras_[n][p].vl_stall_count = in.vl_stall_count;
    if (nd.is_switch() && p != 0) {
      extras_[n][p].part_enf_in = in.part_enf_in;
      extras_[n][p].part_enf_out = in.part_enf_out;
    }
  }
  data = encode_port_info(make_port_info(n, p));
  if (!nd.is_switch() && vports_.has(n, p)) {
    // CapabilityMask.IsCapabilityMask2Supported and CapabilityMask2's
    // IsVirtualizationSupported (weft/mad/vport.hpp).
    data[22] |= 0x80;
    data[61] |= 0x04;
  }
  return 0;
}

void SimFabric::set_cc(NodeIndex n, CcSupport s) {
  const auto& nd = f_.node(n);
  if (nd.is_switch()) {
    cc_.add(n, 0, true, nd.num_ports, s, 0);
    return;
  }
  for (PortNum p = 1; p <= nd.num_ports; ++p) cc_.add(n, p, false, 0, s, d_.cc_table_cap);
}

}  // namespace weft::simulator
