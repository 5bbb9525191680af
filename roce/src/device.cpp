#include "weft/roce/device.hpp"

#include "weft/roce/check.hpp"

#include <fmt/format.h>
#include <cstdio>

namespace weft::roce {

using roce::DeviceKind;
using roce::RoceMode;

namespace {

std::string dscp_text(const DscpMap& m) {
  std::string s;
  for (int d = 0; d < 64; ++d)
    if (m[d]) fmt::format_to(std::back_inserter(s), "{}{}:{}", s.empty() ? "" : " ", d, m[d]);
  return s.empty() ? "all:0" : s;
}

}  // namespace

uint8_t lossless_priorities(const RoceProfile& p) {
  return p.mode == RoceMode::kLossless ? p.pfc_mask : 0;
}

std::string priority_list(uint8_t mask, const char* none) {
  std::string s;
  for (int i = 0; i < 8; ++i)
    if (mask >> i & 1) fmt::format_to(std::back_inserter(s), "{}{}", s.empty() ? "" : ",", i);
  return s.empty() ? none : s;
}

std::string prio_map_text(const PrioMap& m) {
  std::string s;
  for (int i = 0; i < 8; ++i)
    fmt::format_to(std::back_inserter(s), "{}{}:{}", i ? " " : "", i, m[i]);
  return s;
}

PrioMap intended_tc_pg(const RoceProfile& p) {
  PrioMap pg{};
  const uint8_t pfc = lossless_priorities(p);
  for (int i = 0; i < 8; ++i) pg[i] = (pfc >> i & 1) ? static_cast<uint8_t>(i) : 0;
  return pg;
}

HostConfig intend_host(const RoceProfile& p, const std::string& host, const std::string& ifname) {
  HostConfig h;
  h.device = host;
  h.port = ifname;
  h.trust = p.trust;
  h.dscp_prio = p.dscp_prio;
  h.pfc_mask = lossless_priorities(p);
  h.prio_tc = p.prio_tc;
  h.ets = p.ets;
  PrioMap buf{};
  for (int i = 0; i < 8; ++i) buf[i] = (lossless_priorities(p) >> i & 1) ? 1 : 0;
  h.prio_buffer = buf;
  h.np_mask = p.dcqcn_mask;
  h.rp_mask = p.dcqcn_mask;
  h.cnp_dscp = p.cnp_dscp;
  h.cnp_prio = p.cnp_prio;
  h.dcqcn = p.dcqcn;
  h.tos = p.tos;
  h.roce_mode = p.roce_version;
  h.mtu = p.mtu;
  return h;
}

HostConfig intend_host(const RoceProfile& p, const RoceFabric* f, int device, int port) {
  const auto& d = f->devices[device];
  HostConfig h = intend_host(p, d.name, d.ports[port].name);
  if (const int l = d.ports[port].link; l >= 0 && lossless_priorities(p))
    h.pfc_delay = static_cast<int>(std::min<uint64_t>(f->links[l].length_m, 65535));
  return h;
}

SwitchConfig intend_switch(const RoceProfile& p, const RoceFabric* f, int device) {
  const auto& d = f->devices[device];
  SwitchConfig s;
  s.device = d.name;
  const uint8_t pfc = lossless_priorities(p);
  const PrioMap tc_pg = intended_tc_pg(p);
  for (const auto& port : d.ports) {
    SwitchPort sp;
    sp.name = port.name;
    sp.trust = p.trust;
    if (p.trust == Trust::kDscp) sp.dscp_tc = p.dscp_prio;  // under PCP trust, 802.1p picks the TC
    sp.tc_queue = p.prio_tc;
    sp.tc_pg = tc_pg;
    sp.pfc_queue = p.prio_tc;
    sp.pfc_mask = pfc;
    for (int q = 0; q < 8; ++q) {
      sp.sched[q] = QueueSched{p.ets[q].tsa, p.ets[q].tsa == Tsa::kStrict ? 0 : p.ets[q].bw};
      if (auto it = p.ecn.find(q); it != p.ecn.end()) {
        sp.wred[q] = it->second;
        sp.wred_ecn[q] = true;
      }
    }
    sp.pgs[0] = BufferPg{};
    sp.mtu = p.mtu;
    if (port.link >= 0) {
      const auto& link = f->links[port.link];
      sp.speed_mbps = link.speed_mbps;
      if (pfc) {
        sp.cable_m = link.length_m;
        const int lanes = port.lanes ? port.lanes : (link.speed_mbps >= 400000 ? 8 : 4);
        const Headroom h = sonic_headroom(link.speed_mbps, link.length_m,
                                          static_cast<uint64_t>(p.mtu), lanes, d.asic);
        for (int i = 0; i < 8; ++i)
          if (pfc >> i & 1) sp.pgs[tc_pg[i]] = BufferPg{true, h.size, h.xon, h.xoff};
      }
    }
    if (pfc && p.watchdog.enable) sp.watchdog = p.watchdog;
    s.ports.push_back(std::move(sp));
  }
  return s;
}

RoceFabric roce_fabric_from_topology(const fabric::Fabric& t, uint64_t speed_mbps,
                                     uint64_t length_m) {
  RoceFabric f;
  f.source = "topology";
  std::vector<int> dev(t.size(), -1);
  for (fabric::NodeIndex i = 0; i < t.size(); ++i) {
    const auto& n = t.node(i);
    roce::RoceDevice d;
    d.kind = n.is_switch() ? DeviceKind::kSwitch : DeviceKind::kHost;
    char guid[24];
    std::snprintf(guid, sizeof guid, "%016llx", static_cast<unsigned long long>(n.guid.value));
    d.name = !n.name.empty() && n.name.find(':') == std::string::npos
                 ? n.name
                 : (n.is_switch() ? "sw-" : "host-") + std::string(guid);
    if (f.device(d.name) >= 0) fmt::format_to(std::back_inserter(d.name), "-{}", guid);
    dev[i] = f.add_device(std::move(d));
  }
  auto port_name = [&](fabric::NodeIndex n, PortNum p) {
    return t.node(n).is_switch() ? "Ethernet" + std::to_string(4 * (p - 1))
                                 : "eth" + std::to_string(p - 1);
  };
  for (const auto& l : t.links()) {
    const roce::PortRef a{dev[l.a], f.add_port(dev[l.a], port_name(l.a, l.pa))};
    const roce::PortRef b{dev[l.b], f.add_port(dev[l.b], port_name(l.b, l.pb))};
    (void)f.add_link(a, b, speed_mbps, length_m,
                     0);  // each port once: a topology's links are distinct
  }
  return f;
}

std::string dcqcn_field(const roce::DcqcnKnob& k) {
  return std::string(k.rp ? "ecn.roce_rp." : "ecn.roce_np.") + k.name;
}

Fields flatten(const HostConfig& h) {
  Fields f;
  auto add = [&](std::string k, std::string v) { f.emplace_back(std::move(k), std::move(v)); };
  if (h.trust) add("apptrust.order", roce::trust_name(*h.trust));
  if (h.dscp_prio) add("app.dscp-prio", dscp_text(*h.dscp_prio));
  if (h.pfc_mask) add("pfc.prio-pfc", priority_list(*h.pfc_mask));
  if (h.pfc_delay) add("pfc.delay", std::to_string(*h.pfc_delay));
  if (h.prio_tc) add("ets.prio-tc", prio_map_text(*h.prio_tc));
  if (h.ets) {
    std::string s;
    for (int i = 0; i < 8; ++i) {
      const EtsTc& e = (*h.ets)[i];
      if (e.tsa != Tsa::kEts)
        fmt::format_to(std::back_inserter(s), "{}{}:{}", i ? " " : "", i, roce::tsa_name(e.tsa));
      else
        fmt::format_to(std::back_inserter(s), "{}{}:ets/{}", i ? " " : "", i, e.bw);
    }
    add("ets.tc-tsa/tc-bw", s);
  }
  if (h.prio_buffer) add("buffer.prio-buffer", prio_map_text(*h.prio_buffer));
  if (h.np_mask) add("ecn.roce_np.enable", priority_list(*h.np_mask));
  if (h.rp_mask) add("ecn.roce_rp.enable", priority_list(*h.rp_mask));
  if (h.cnp_dscp) add("ecn.roce_np.cnp_dscp", std::to_string(*h.cnp_dscp));
  if (h.cnp_prio) add("ecn.roce_np.cnp_802p_prio", std::to_string(*h.cnp_prio));
  for (const auto& k : roce::dcqcn_knobs())
    if (auto it = h.dcqcn.find(k.name); it != h.dcqcn.end())
      add(dcqcn_field(k), std::to_string(it->second));
  if (h.tos) add("rdma_cm.default_roce_tos", std::to_string(*h.tos));
  if (h.roce_mode) add("rdma_cm.default_roce_mode", *h.roce_mode == 2 ? "RoCE v2" : "IB/RoCE v1");
  if (h.mtu) add("mtu", std::to_string(*h.mtu));
  return f;
}

Fields flatten(const SwitchPort& p) {
  Fields f;
  auto add = [&](std::string k, std::string v) { f.emplace_back(std::move(k), std::move(v)); };
  if (p.trust) add("trust", roce::trust_name(*p.trust));
  if (p.dscp_tc) add("dscp_to_tc", dscp_text(*p.dscp_tc));
  if (p.tc_queue) add("tc_to_queue", prio_map_text(*p.tc_queue));
  if (p.tc_pg) add("tc_to_pg", prio_map_text(*p.tc_pg));
  if (p.pfc_queue) add("pfc_priority_to_queue", prio_map_text(*p.pfc_queue));
  if (p.pfc_mask) add("pfc_enable", priority_list(*p.pfc_mask));
  for (const auto& [q, s] : p.sched)
    add("queue[" + std::to_string(q) + "].scheduler",
        s.tsa == Tsa::kStrict ? std::string("strict") : "dwrr/" + std::to_string(s.weight));
  for (const auto& [q, w] : p.wred) {
    auto e = p.wred_ecn.find(q);
    add("queue[" + std::to_string(q) + "].wred",
        std::string(e != p.wred_ecn.end() && e->second ? "ecn" : "drop") +
            " min=" + std::to_string(w.kmin) + " max=" + std::to_string(w.kmax) +
            " p=" + std::to_string(w.pmax));
  }
  for (const auto& [g, b] : p.pgs)
    add("pg[" + std::to_string(g) + "]",
        b.lossless && p.headroom_by_device ? std::string("lossless (sized by the switch)")
        : b.lossless ? "lossless size=" + std::to_string(b.size) + " xon=" + std::to_string(b.xon) +
                           " xoff=" + std::to_string(b.xoff)
                     : std::string("lossy"));
  if (p.cable_m) add("cable_length", std::to_string(*p.cable_m) + "m");
  if (p.mtu) add("mtu", std::to_string(*p.mtu));
  if (p.speed_mbps) add("speed", std::to_string(*p.speed_mbps));
  if (p.watchdog && p.watchdog_timing_by_device)
    add("pfc_wd", p.watchdog->enable ? "on" : "off");
  else if (p.watchdog)
    add("pfc_wd", p.watchdog->enable
                      ? p.watchdog->action + " detect=" + std::to_string(p.watchdog->detection_ms) +
                            "ms restore=" + std::to_string(p.watchdog->restoration_ms) + "ms"
                      : std::string("off"));
  return f;
}

}  // namespace weft::roce
