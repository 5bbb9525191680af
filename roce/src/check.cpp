#include "weft/roce/check.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <unordered_map>
#include <unordered_set>

namespace weft::roce {

using roce::DeviceKind;
using roce::RoceMode;

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

size_t errors(const std::vector<Finding>& f) {
  return static_cast<size_t>(
      std::count_if(f.begin(), f.end(), [](auto& x) { return x.severity == Severity::kError; }));
}

std::string to_text(const Finding& f) {
  std::string s = std::string(severity_name(f.severity)) + " [" + f.check + "] " + f.device;
  if (!f.port.empty()) s += " " + f.port;
  s += ": " + f.field;
  if (!f.expected.empty() || !f.observed.empty())
    s += ": expected " + (f.expected.empty() ? "-" : f.expected) + ", observed " +
         (f.observed.empty() ? "-" : f.observed);
  if (!f.message.empty()) s += " (" + f.message + ")";
  return s;
}

Headroom sonic_headroom(uint64_t speed_mbps, uint64_t cable_m, uint64_t port_mtu, int lanes,
                        const roce::AsicParams& a) {
  // IEEE 802.3 31B.3.7: the pause quanta a MAC may take to act on PAUSE, per speed (Mb/s).
  static const std::pair<uint64_t, double> kPauseQuanta[] = {
      {800000, 905}, {400000, 905}, {200000, 453}, {100000, 394}, {50000, 147},
      {40000, 118},  {25000, 80},   {10000, 67},   {1000, 2},     {100, 1}};
  double peer_response = static_cast<double>(a.peer_response_time);
  for (const auto& [s, q] : kPauseQuanta)
    if (s == speed_mbps) peer_response = q * 512 / 8;
  double pipeline = static_cast<double>(a.pipeline_latency);
  double speed_overhead = 0;
  if (lanes == 8) {
    pipeline = pipeline * 2 - 1024;
    speed_overhead = static_cast<double>(port_mtu);
  }
  const double cell = static_cast<double>(a.cell_size);
  const double worst = cell > 2 * 64 ? cell / 64 : 2 * cell / (1 + cell);
  const double small = static_cast<double>(a.small_packet_percentage);
  const double occupancy = (100 - small + small * worst) / 100;
  const double on_cable = 2.0 * static_cast<double>(cable_m) * static_cast<double>(speed_mbps) *
                          1e9 / 198000000.0 / (8 * 1024);
  const double propagation = static_cast<double>(port_mtu) + on_cable +
                             static_cast<double>(a.mac_phy_delay) + peer_response;
  auto round_kib = [](double x) { return static_cast<uint64_t>(std::ceil(x / 1024) * 1024); };
  Headroom h;
  h.xoff = round_kib(static_cast<double>(a.lossless_mtu) + propagation * occupancy);
  h.xon = round_kib(pipeline);
  h.size = round_kib(static_cast<double>(h.xoff + h.xon) + speed_overhead);
  return h;
}

FabricView intended(const RoceProfile& p, const RoceFabric* f) {
  FabricView v;
  if (!f) return v;
  for (int d = 0; d < static_cast<int>(f->devices.size()); ++d) {
    const auto& dev = f->devices[d];
    if (dev.kind == DeviceKind::kSwitch) {
      v.switches.push_back(intend_switch(p, f, d));
    } else {
      for (int i = 0; i < static_cast<int>(dev.ports.size()); ++i)
        v.hosts.push_back(intend_host(p, f, d, i));
    }
  }
  return v;
}

namespace {

struct Out {
  std::vector<Finding>& list;
  std::string device, port;
  void add(Severity s, std::string check, std::string field, std::string expected,
           std::string observed, std::string message) {
    list.push_back(Finding{device, port, std::move(field), std::move(expected), std::move(observed),
                           s, std::move(check), std::move(message)});
  }
};

std::string n2s(int64_t x) {
  return std::to_string(x);
}

// Trust, the DSCP map and the PFC set: the same rules on hosts and switch ports.
void check_classification(const RoceProfile& p, Out& o, const std::optional<Trust>& trust,
                          const std::optional<DscpMap>& map, const char* map_field,
                          const char* what, const std::optional<uint8_t>& pfc,
                          const char* pfc_field) {
  if (trust && *trust != p.trust)
    o.add(Severity::kError, "trust", "trust", roce::trust_name(p.trust), roce::trust_name(*trust),
          std::string("the port classifies by ") + roce::trust_name(*trust) + ", the fabric by " +
              roce::trust_name(p.trust));
  if (map && p.trust == Trust::kDscp) {
    const DscpMap& m = *map;
    if (m[p.roce_dscp] != p.roce_prio)
      o.add(Severity::kError, "dscp-map", std::string(map_field) + "[" + n2s(p.roce_dscp) + "]",
            n2s(p.roce_prio), n2s(m[p.roce_dscp]),
            "RoCE DSCP " + n2s(p.roce_dscp) + " goes to " + what + " " + n2s(m[p.roce_dscp]) +
                ", not " + n2s(p.roce_prio));
    if (m[p.cnp_dscp] != p.cnp_prio)
      o.add(Severity::kError, "dscp-map", std::string(map_field) + "[" + n2s(p.cnp_dscp) + "]",
            n2s(p.cnp_prio), n2s(m[p.cnp_dscp]),
            "CNP DSCP " + n2s(p.cnp_dscp) + " goes to " + what + " " + n2s(m[p.cnp_dscp]) +
                ", not " + n2s(p.cnp_prio));
    std::string other;
    for (int d = 0; d < 64; ++d)
      if (d != p.roce_dscp && d != p.cnp_dscp && m[d] != p.dscp_prio[d])
        other += (other.empty() ? "" : " ") + n2s(d) + ":" + n2s(m[d]);
    if (!other.empty())
      o.add(Severity::kWarning, "mapping", map_field, "the fabric's map", other,
            "DSCPs mapped unlike the rest of the fabric");
  }
  if (pfc && p.mode == RoceMode::kLossless && !(*pfc >> p.roce_prio & 1)) {
    uint8_t want = static_cast<uint8_t>(lossless_priorities(p) | 1u << p.roce_prio);
    o.add(Severity::kError, "pfc", pfc_field, priority_list(want), priority_list(*pfc),
          "PFC is off on the RoCE priority " + n2s(p.roce_prio) + ": RoCE traffic is lossy here");
  } else if (pfc && *pfc != lossless_priorities(p)) {
    std::string why = "PFC set differs from the fabric's";
    if (*pfc >> p.cnp_prio & 1 && p.cnp_prio != p.roce_prio)
      why = "PFC on the CNP priority " + n2s(p.cnp_prio);
    o.add(Severity::kError, "pfc", pfc_field, priority_list(lossless_priorities(p)),
          priority_list(*pfc), why);
  }
}

void check_host(const RoceProfile& p, const HostConfig& h, std::vector<Finding>& list) {
  Out o{list, h.device, h.port};
  check_classification(p, o, h.trust, h.dscp_prio, "app.dscp-prio", "priority", h.pfc_mask,
                       "pfc.prio-pfc");
  const PrioMap& tc = h.prio_tc ? *h.prio_tc : p.prio_tc;
  if (h.prio_tc && *h.prio_tc != p.prio_tc) {
    std::string s;
    for (int i = 0; i < 8; ++i) s += (i ? " " : "") + n2s(i) + ":" + n2s(tc[i]);
    o.add(Severity::kWarning, "mapping", "ets.prio-tc", "the fabric's map", s,
          "priorities mapped to other TCs");
  }
  if (h.ets) {
    const auto& ets = *h.ets;
    int sum = 0, n = 0;
    for (const auto& e : ets)
      if (e.tsa == Tsa::kEts) sum += e.bw, ++n;
    if (n && sum != 100)
      o.add(Severity::kError, "ets", "ets.tc-bw", "100 (sum over ETS TCs)", n2s(sum),
            "ETS bandwidth shares must sum to 100");
    const int ctc = tc[p.cnp_prio], rtc = tc[p.roce_prio];
    if (ets[ctc].tsa != Tsa::kStrict)
      o.add(Severity::kError, "cnp", "ets.tc-tsa[" + n2s(ctc) + "]", "strict",
            ets[ctc].tsa == Tsa::kEts ? "ets/" + n2s(ets[ctc].bw) : roce::tsa_name(ets[ctc].tsa),
            "CNPs (priority " + n2s(p.cnp_prio) + ") wait behind data in a non-strict TC");
    if (ets[rtc].tsa == Tsa::kEts && ets[rtc].bw == 0)
      o.add(Severity::kError, "ets", "ets.tc-bw[" + n2s(rtc) + "]", "> 0", "0",
            "the RoCE TC gets no bandwidth");
  }
  const PrioMap& t = tc;
  if (t[p.cnp_prio] == t[0] && p.cnp_prio != 0 && h.prio_tc)
    o.add(Severity::kError, "cnp", "ets.prio-tc[" + n2s(p.cnp_prio) + "]", "a TC of its own",
          n2s(t[p.cnp_prio]), "CNPs share the best-effort TC");
  for (auto [mask, field, side] :
       {std::tuple{h.np_mask, "ecn.roce_np.enable", "notification point"},
        std::tuple{h.rp_mask, "ecn.roce_rp.enable", "reaction point"}})
    if (mask && !(*mask >> p.roce_prio & 1))
      o.add(Severity::kError, "ecn", std::string(field) + "[" + n2s(p.roce_prio) + "]", "1", "0",
            std::string("DCQCN ") + side + " is off on the RoCE priority: ECN off on the host");
  if (h.cnp_dscp && *h.cnp_dscp != p.cnp_dscp)
    o.add(Severity::kError, "cnp", "ecn.roce_np.cnp_dscp", n2s(p.cnp_dscp), n2s(*h.cnp_dscp),
          "the NIC sends CNPs with another DSCP than the fabric expects");
  if (h.cnp_prio && *h.cnp_prio != p.cnp_prio)
    o.add(Severity::kError, "cnp", "ecn.roce_np.cnp_802p_prio", n2s(p.cnp_prio), n2s(*h.cnp_prio),
          "the NIC sends CNPs on another priority");
  if (h.tos) {
    if ((*h.tos >> 2) != p.roce_dscp)
      o.add(Severity::kError, "tos", "rdma_cm.default_roce_tos",
            n2s(p.roce_dscp << 2 | (*h.tos & 3)), n2s(*h.tos),
            "rdma_cm connections carry DSCP " + n2s(*h.tos >> 2) + ", not the RoCE DSCP " +
                n2s(p.roce_dscp));
    else if ((*h.tos & 3) == 0) {
      // 104 or 106 is a choice only for UD: mlx5 hands a connected QP (RC, UC, XRC) just
      // the DSCP, ToS >> 2 (mlx5_set_path in drivers/infiniband/hw/mlx5/qp.c), and the
      // NIC sets the ECN field itself when DCQCN is on; a UD address handle (ah.c) takes
      // the whole byte, ECN bits included.
      const bool rp_on = h.rp_mask && (*h.rp_mask >> p.roce_prio & 1);
      o.add(rp_on ? Severity::kInfo : Severity::kWarning, "tos", "rdma_cm.default_roce_tos",
            n2s(*h.tos | 2), n2s(*h.tos),
            rp_on ? "ECT bits 0: connected QPs are unaffected (mlx5 gives the QP only the DSCP "
                    "and the NIC sets ECN), but rdma_cm UD traffic goes Not-ECT, and switches "
                    "drop it where they would mark"
                  : "ToS is not ECN-capable (ECT bits 0) and DCQCN is off on the RoCE "
                    "priority: switches cannot mark, they drop");
    }
  }
}

void check_switch_port(const RoceProfile& p, const std::string& device, const SwitchPort& sp,
                       std::vector<Finding>& list) {
  Out o{list, device, sp.name};
  check_classification(p, o, sp.trust, sp.dscp_tc, "dscp_to_tc", "TC", sp.pfc_mask, "pfc_enable");
  const PrioMap& queue = sp.tc_queue ? *sp.tc_queue : p.prio_tc;
  if (sp.pfc_mask) {
    for (int pr = 0; pr < 8; ++pr) {
      if (!(*sp.pfc_mask >> pr & 1)) continue;
      if (sp.tc_pg) {
        const int pg = (*sp.tc_pg)[pr];
        auto it = sp.pgs.find(pg);
        if (it == sp.pgs.end() || !it->second.lossless ||
            (it->second.xoff == 0 && !sp.headroom_by_device))
          o.add(Severity::kError, "headroom", "pg[" + n2s(pg) + "]",
                "a lossless profile with headroom",
                it == sp.pgs.end()    ? "none"
                : it->second.lossless ? "xoff 0"
                                      : "lossy",
                "PFC priority " + n2s(pr) + " is buffered in PG " + n2s(pg) +
                    " without headroom: packets drop");
      }
      if (sp.pfc_queue && sp.tc_queue && (*sp.pfc_queue)[pr] != (*sp.tc_queue)[pr])
        o.add(Severity::kError, "pfc", "pfc_priority_to_queue[" + n2s(pr) + "]",
              n2s((*sp.tc_queue)[pr]), n2s((*sp.pfc_queue)[pr]),
              "PFC pauses another queue than the one the priority's traffic is in");
    }
    if (*sp.pfc_mask && (!sp.watchdog || !sp.watchdog->enable) && p.watchdog.enable)
      o.add(Severity::kError, "watchdog", "pfc_wd", "on for " + priority_list(*sp.pfc_mask), "off",
            "no PFC watchdog on the PFC priorities: a pause storm stalls the fabric");
  }
  if (sp.tc_queue || !sp.wred.empty() || !sp.sched.empty()) {
    const int rq = queue[p.roce_prio];
    auto w = sp.wred.find(rq);
    auto e = sp.wred_ecn.find(rq);
    if (w == sp.wred.end() || e == sp.wred_ecn.end() || !e->second)
      o.add(Severity::kError, "ecn", "queue[" + n2s(rq) + "].wred", "ecn",
            w == sp.wred.end() ? "none" : "drop",
            "ECN off on the switch's RoCE queue: DCQCN never slows senders");
    else if (w->second.kmin >= w->second.kmax)
      o.add(Severity::kError, "ecn", "queue[" + n2s(rq) + "].wred", "min < max",
            "min=" + n2s(static_cast<int64_t>(w->second.kmin)) +
                " max=" + n2s(static_cast<int64_t>(w->second.kmax)),
            "ECN thresholds out of order");
    const int cq = queue[p.cnp_prio];
    if (auto s = sp.sched.find(cq); s != sp.sched.end() && s->second.tsa != Tsa::kStrict)
      o.add(Severity::kError, "cnp", "queue[" + n2s(cq) + "].scheduler", "strict",
            "dwrr/" + n2s(s->second.weight), "CNPs wait behind data in a non-strict queue");
    const int best_effort = queue[sp.dscp_tc ? (*sp.dscp_tc)[0] : p.dscp_prio[0]];
    if (cq == best_effort && p.cnp_prio != 0)
      o.add(Severity::kError, "cnp", "tc_to_queue[" + n2s(p.cnp_prio) + "]", "a queue of its own",
            n2s(cq), "CNPs share the best-effort queue");
    if (auto s = sp.sched.find(rq);
        s != sp.sched.end() && s->second.tsa == Tsa::kEts && s->second.weight == 0)
      o.add(Severity::kError, "ets", "queue[" + n2s(rq) + "].scheduler", "weight > 0", "dwrr/0",
            "the RoCE queue gets no bandwidth");
  }
}

// One port's configuration, whichever side it is on.
struct PortView {
  const HostConfig* host = nullptr;
  const SwitchPort* sw = nullptr;
  std::optional<uint8_t> pfc() const { return host ? host->pfc_mask : sw->pfc_mask; }
  std::optional<int> mtu() const { return host ? host->mtu : sw->mtu; }
  std::optional<Trust> trust() const { return host ? host->trust : sw->trust; }
};

void check_links(const RoceProfile& p, const RoceFabric& f, const FabricView& v,
                 std::vector<Finding>& list) {
  // Each fabric port's configuration in the view, found through the fabric's own indexes.
  std::vector<std::vector<PortView>> ports(f.devices.size());
  for (size_t d = 0; d < f.devices.size(); ++d) ports[d].resize(f.devices[d].ports.size());
  auto slot = [&](const std::string& dev, const std::string& port) -> PortView* {
    const int d = f.device(dev);
    const int p = d < 0 ? -1 : f.devices[d].port(port);
    return p < 0 ? nullptr : &ports[d][p];
  };
  for (const auto& h : v.hosts)
    if (PortView* pv = slot(h.device, h.port)) pv->host = &h;
  for (const auto& s : v.switches) {
    const int d = f.device(s.device);
    for (const auto& sp : s.ports) {
      const int p = d < 0 ? -1 : f.devices[d].port(sp.name);
      if (p >= 0) ports[d][p].sw = &sp;
    }
  }
  auto find = [&](roce::PortRef r) -> const PortView* {
    const PortView& pv = ports[r.device][r.port];
    return pv.host || pv.sw ? &pv : nullptr;
  };
  for (const auto& link : f.links) {
    const PortView* a = find(link.a);
    const PortView* b = find(link.b);
    const std::string an = f.port_name(link.a), bn = f.port_name(link.b);
    Out o{list, f.devices[link.a.device].name, f.devices[link.a.device].ports[link.a.port].name};
    if (a && b) {
      if (a->pfc() && b->pfc() && *a->pfc() != *b->pfc())
        o.add(Severity::kError, "pfc", "pfc", priority_list(*b->pfc()) + " (as " + bn + ")",
              priority_list(*a->pfc()), "PFC priorities differ across the link " + an + " - " + bn);
      if (a->mtu() && b->mtu() && *a->mtu() != *b->mtu())
        o.add(Severity::kError, "mtu", "mtu", n2s(*b->mtu()) + " (as " + bn + ")", n2s(*a->mtu()),
              "MTU differs across the link " + an + " - " + bn);
      if (a->trust() && b->trust() && *a->trust() != *b->trust())
        o.add(Severity::kError, "trust", "trust",
              std::string(roce::trust_name(*b->trust())) + " (as " + bn + ")",
              roce::trust_name(*a->trust()), "trust differs across the link " + an + " - " + bn);
    }
    for (auto [end, view] : {std::pair{link.a, a}, std::pair{link.b, b}}) {
      if (!view) continue;
      const auto& dev = f.devices[end.device];
      Out e{list, dev.name, dev.ports[end.port].name};
      if (view->host) {
        if (view->host->pfc_delay &&
            static_cast<uint64_t>(*view->host->pfc_delay) < link.length_m &&
            view->host->pfc_mask.value_or(0))
          e.add(Severity::kWarning, "headroom", "pfc.delay",
                ">= " + n2s(static_cast<int64_t>(link.length_m)), n2s(*view->host->pfc_delay),
                "the NIC sizes its lossless buffer for a shorter cable than the real one");
        continue;
      }
      const SwitchPort& sp = *view->sw;
      if (!sp.pfc_mask.value_or(0)) continue;
      if (sp.cable_m && *sp.cable_m < link.length_m)
        e.add(Severity::kError, "headroom", "cable_length",
              ">= " + n2s(static_cast<int64_t>(link.length_m)) + "m",
              n2s(static_cast<int64_t>(*sp.cable_m)) + "m",
              "the configured cable length is shorter than the real one");
      const uint64_t speed = sp.speed_mbps.value_or(link.speed_mbps);
      const int lanes =
          dev.ports[end.port].lanes ? dev.ports[end.port].lanes : (speed >= 400000 ? 8 : 4);
      const Headroom need = sonic_headroom(
          speed, link.length_m, static_cast<uint64_t>(sp.mtu.value_or(p.mtu)), lanes, dev.asic);
      uint64_t total = 0;
      for (const auto& [pg, b] : sp.pgs) {
        if (!b.lossless || sp.headroom_by_device) continue;
        total += need.size;
        if (b.size < need.size || b.xoff < need.xoff)
          e.add(Severity::kError, "headroom", "pg[" + n2s(pg) + "].size",
                ">= " + n2s(static_cast<int64_t>(need.size)) + " (xoff " +
                    n2s(static_cast<int64_t>(need.xoff)) + ")",
                n2s(static_cast<int64_t>(b.size)) + " (xoff " + n2s(static_cast<int64_t>(b.xoff)) +
                    ")",
                "headroom too small for " + n2s(static_cast<int64_t>(link.length_m)) + " m at " +
                    n2s(static_cast<int64_t>(speed / 1000)) + "G: in-flight data drops");
      }
      if (dev.asic.max_headroom && total > dev.asic.max_headroom)
        e.add(Severity::kError, "headroom", "headroom",
              "<= " + n2s(static_cast<int64_t>(dev.asic.max_headroom)),
              n2s(static_cast<int64_t>(total)),
              "the lossless PGs need more headroom than the port has (" + dev.asic.name + ")");
    }
  }
}

}  // namespace

std::vector<Finding> check(const RoceProfile& p, const RoceFabric* f, const FabricView& v) {
  std::vector<Finding> out;
  for (const auto& h : v.hosts) check_host(p, h, out);
  for (const auto& s : v.switches)
    for (const auto& sp : s.ports) check_switch_port(p, s.device, sp, out);
  if (f) {
    check_links(p, *f, v, out);
    auto dl = check_buffer_dependencies(p, *f);
    out.insert(out.end(), dl.begin(), dl.end());
  }
  return out;
}

std::vector<Finding> check_profile(const RoceProfile& p) {
  std::vector<Finding> out;
  check_host(p, intend_host(p, "profile", ""), out);
  // One switch port with a 100G, 3 m link to a host, so that its headroom is sized.
  RoceFabric one;
  roce::RoceDevice d;
  d.name = "profile";
  d.kind = DeviceKind::kSwitch;
  const int dev = one.add_device(d);
  d.name = "host";
  d.kind = DeviceKind::kHost;
  const int host = one.add_device(d);
  (void)one.add_link({dev, one.add_port(dev, "")}, {host, one.add_port(host, "")}, 100000, 3, 0);
  for (const auto& sp : intend_switch(p, &one, dev).ports) check_switch_port(p, "profile", sp, out);
  std::vector<Finding> unique;
  for (auto& f : out) {
    // The profile key the field comes from.
    const std::string& fd = f.field;
    const std::string key =
        fd.starts_with("app.dscp-prio") || fd.starts_with("dscp_to_tc")  ? "dscp_to_priority"
        : fd.starts_with("ets.prio-tc") || fd.starts_with("tc_to_queue") ? "priority_to_tc"
        : fd.starts_with("ets.") || fd.ends_with(".scheduler")           ? "ets"
        : fd.ends_with(".wred")                                          ? "ecn"
        : fd.starts_with("ecn.")                                         ? "dcqcn"
        : fd.starts_with("pfc_wd")                                       ? "pfc_watchdog"
        : fd.starts_with("pfc") || fd.starts_with("pg[")                 ? "pfc"
        : fd.starts_with("rdma_cm")                                      ? "rdma_cm"
                                                                         : f.check;
    f.device = p.where(key);
    f.port.clear();
    // The same rule broken on the host side and on the switch side is one mistake in the file.
    const bool dup = std::any_of(unique.begin(), unique.end(), [&](const Finding& u) {
      return u.message == f.message || (u.check == f.check && u.device == f.device &&
                                        u.expected == f.expected && u.observed == f.observed);
    });
    if (!dup) unique.push_back(std::move(f));
  }
  if (p.mode == RoceMode::kLossy && p.pfc_mask)
    unique.push_back(Finding{p.where("pfc"), "", "pfc.priorities", "none",
                             priority_list(p.pfc_mask), Severity::kWarning, "pfc",
                             "mode is lossy: the PFC priorities are not configured"});
  return unique;
}

std::vector<Finding> check_buffer_dependencies(const RoceProfile& p, const RoceFabric& f) {
  std::vector<Finding> out;
  if (!lossless_priorities(p)) return out;
  // Switches and their switch neighbours (one channel per ordered pair).
  std::vector<int> sw_of(f.devices.size(), -1), dev_of;
  for (int d = 0; d < static_cast<int>(f.devices.size()); ++d)
    if (f.devices[d].kind == DeviceKind::kSwitch)
      sw_of[d] = static_cast<int>(dev_of.size()), dev_of.push_back(d);
  const int n = static_cast<int>(dev_of.size());
  std::vector<std::vector<int>> adj(n);
  std::vector<char> leaf(n, 0);
  std::unordered_map<uint64_t, int> port_to;  // (s, t) -> s's port toward t
  auto key = [](int a, int b) { return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b); };
  for (const auto& l : f.links) {
    const int a = sw_of[l.a.device], b = sw_of[l.b.device];
    if (a >= 0 && b >= 0 && a != b) {
      if (port_to.emplace(key(a, b), l.a.port).second) adj[a].push_back(b);
      if (port_to.emplace(key(b, a), l.b.port).second) adj[b].push_back(a);
    } else if (a >= 0 && b < 0) {
      leaf[a] = 1;
    } else if (b >= 0 && a < 0) {
      leaf[b] = 1;
    }
  }
  // Tiers: hops from the nearest switch with hosts. A link points up toward the higher
  // (tier, index); routes that only go up then down cannot close a cycle.
  std::vector<int> tier(n, -1);
  std::deque<int> q;
  for (int s = 0; s < n; ++s)
    if (leaf[s]) tier[s] = 0, q.push_back(s);
  while (!q.empty()) {
    const int s = q.front();
    q.pop_front();
    for (int t : adj[s])
      if (tier[t] < 0) tier[t] = tier[s] + 1, q.push_back(t);
  }

  // Neighbours flat, for the per-destination passes.
  std::vector<int> off(n + 1, 0), nb;
  for (int s = 0; s < n; ++s) off[s + 1] = off[s] + static_cast<int>(adj[s].size());
  nb.reserve(static_cast<size_t>(off[n]));
  for (int s = 0; s < n; ++s) nb.insert(nb.end(), adj[s].begin(), adj[s].end());

  std::vector<int> dist(n), order;
  std::vector<char> active(n);
  std::vector<int> dests;
  for (int s = 0; s < n; ++s)
    if (leaf[s]) dests.push_back(s);
  // For each destination: its shortest-path DAG, farthest switches first, marking the
  // switches traffic from hosts crosses (a leaf, or fed by one farther away); on_switch(s)
  // sees each of them, when its in-neighbours are marked.
  auto walk = [&](int d, auto&& on_switch) {
    std::fill(dist.begin(), dist.end(), -1);
    order.clear();
    dist[d] = 0;
    order.push_back(d);
    for (size_t i = 0; i < order.size(); ++i) {
      const int u = order[i];
      for (int k = off[u]; k < off[u + 1]; ++k)
        if (dist[nb[k]] < 0) dist[nb[k]] = dist[u] + 1, order.push_back(nb[k]);
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int s = *it;
      bool act = leaf[s] && s != d;
      for (int k = off[s]; k < off[s + 1] && !act; ++k)
        act = active[nb[k]] && dist[nb[k]] == dist[s] + 1;
      active[s] = act;
      if (act && s != d) on_switch(s);
    }
  };
  // The fast proof: a switch that some route enters going down and leaves going up.
  std::vector<int64_t> rank(n);
  for (int s = 0; s < n; ++s) rank[s] = static_cast<int64_t>(tier[s]) * n + s;
  size_t violations = 0;
  std::string example;
  for (int d : dests)
    walk(d, [&](int s) {
      bool down_in = false, up_out = false;
      for (int k = off[s]; k < off[s + 1]; ++k) {
        const int t = nb[k];
        if (dist[t] == dist[s] + 1 && active[t]) down_in |= rank[t] > rank[s];
        if (dist[t] == dist[s] - 1) up_out |= rank[t] > rank[s];
      }
      if (down_in && up_out) {
        if (!violations) example = f.devices[dev_of[s]].name;
        ++violations;
      }
    });
  if (!violations) return out;

  // Some routes turn down then up: build the channel dependency graph and search it.
  std::unordered_map<uint64_t, int> chan;
  std::vector<std::pair<int, int>> chan_ends;
  for (int a = 0; a < n; ++a)
    for (int b : adj[a])
      chan.emplace(key(a, b), static_cast<int>(chan_ends.size())), chan_ends.emplace_back(a, b);
  constexpr size_t kMaxTurns = 20'000'000;
  std::vector<uint64_t> turns;
  bool too_big = false;
  for (int d : dests) {
    if (too_big) break;
    walk(d, [&](int s) {
      if (too_big) return;
      for (int i = off[s]; i < off[s + 1]; ++i) {
        const int u = nb[i];
        if (!active[u] || dist[u] != dist[s] + 1) continue;
        const int in = chan.at(key(u, s));
        for (int k = off[s]; k < off[s + 1]; ++k)
          if (dist[nb[k]] == dist[s] - 1) turns.push_back(key(in, chan.at(key(s, nb[k]))));
      }
      if (turns.size() > kMaxTurns) {
        std::sort(turns.begin(), turns.end());
        turns.erase(std::unique(turns.begin(), turns.end()), turns.end());
        too_big = turns.size() > kMaxTurns / 2;
      }
    });
  }
  if (too_big) {
    out.push_back(Finding{example, "", "buffer-dependency", "no cycle", "not searched",
                          Severity::kWarning, "deadlock",
                          std::to_string(violations) + " route turns go down then up (first at " +
                              example + "); the graph is too large to search for a cycle exactly"});
    return out;
  }
  std::sort(turns.begin(), turns.end());
  turns.erase(std::unique(turns.begin(), turns.end()), turns.end());
  const int nc = static_cast<int>(chan_ends.size());
  std::vector<size_t> first(nc + 1, 0);
  for (uint64_t t : turns) ++first[(t >> 32) + 1];
  for (int c = 0; c < nc; ++c) first[c + 1] += first[c];
  // Iterative DFS; a grey successor closes a cycle, read back off the stack.
  std::vector<char> colour(nc, 0);
  std::vector<std::pair<int, size_t>> stack;
  for (int root = 0; root < nc; ++root) {
    if (colour[root]) continue;
    stack.emplace_back(root, first[root]);
    colour[root] = 1;
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      if (next == first[c + 1]) {
        colour[c] = 2;
        stack.pop_back();
        continue;
      }
      const int t = static_cast<int>(turns[next++] & 0xffffffffu);
      if (colour[t] == 0) {
        colour[t] = 1;
        stack.emplace_back(t, first[t]);
      } else if (colour[t] == 1) {
        size_t i = stack.size();
        while (i > 0 && stack[i - 1].first != t) --i;
        std::string cycle;
        for (size_t j = i - 1; j < stack.size(); ++j) {
          const auto [a, b] = chan_ends[stack[j].first];
          cycle += (cycle.empty() ? "" : " -> ") + f.devices[dev_of[a]].name + ":" +
                   f.devices[dev_of[a]].ports[port_to.at(key(a, b))].name;
        }
        const auto [a, b] = chan_ends[t];
        cycle += " -> " + f.devices[dev_of[a]].name + ":" +
                 f.devices[dev_of[a]].ports[port_to.at(key(a, b))].name;
        out.push_back(Finding{
            f.devices[dev_of[a]].name, f.devices[dev_of[a]].ports[port_to.at(key(a, b))].name,
            "buffer-dependency", "no cycle", cycle, Severity::kError, "deadlock",
            "lossless buffers wait on each other in a cycle over the routes: a PFC deadlock risk"});
        return out;
      }
    }
  }
  out.push_back(Finding{example, "", "buffer-dependency", "up*/down* routes",
                        std::to_string(violations) + " down-up turns", Severity::kInfo, "deadlock",
                        "routes turn down then up, but the buffer-dependency graph has no cycle"});
  return out;
}

namespace {

template <class Config>
void diff_fields(const Config& want, const Config& have, const std::string& device,
                 const std::string& port, std::vector<Finding>& out) {
  const Fields w = flatten(want), h = flatten(have);
  std::unordered_map<std::string, const std::string*> hv;
  for (const auto& [k, v] : h) hv.emplace(k, &v);
  std::unordered_set<std::string> wanted;
  for (const auto& [k, v] : w) {
    wanted.insert(k);
    auto it = hv.find(k);
    if (it == hv.end())
      out.push_back(Finding{device, port, k, v, "", Severity::kWarning, "diff",
                            "not reported by the device"});
    else if (*it->second != v)
      out.push_back(Finding{device, port, k, v, *it->second, Severity::kError, "diff", ""});
  }
  for (const auto& [k, v] : h)
    if (!wanted.count(k))
      out.push_back(
          Finding{device, port, k, "", v, Severity::kWarning, "diff", "not in the profile"});
}

}  // namespace

std::vector<Finding> diff(const HostConfig& want, const HostConfig& have) {
  std::vector<Finding> out;
  diff_fields(want, have, have.device, have.port, out);
  return out;
}

std::vector<Finding> diff(const SwitchConfig& want, const SwitchConfig& have) {
  std::vector<Finding> out;
  for (const auto& wp : want.ports) {
    if (const SwitchPort* hp = have.port(wp.name)) {
      if ((hp->headroom_by_device && !wp.headroom_by_device) ||
          (hp->watchdog_timing_by_device && !wp.watchdog_timing_by_device)) {
        SwitchPort w = wp;  // what the switch works out itself: compare what it is told
        w.headroom_by_device |= hp->headroom_by_device;
        w.watchdog_timing_by_device |= hp->watchdog_timing_by_device;
        diff_fields(w, *hp, have.device, wp.name, out);
      } else {
        diff_fields(wp, *hp, have.device, wp.name, out);
      }
    } else
      out.push_back(Finding{have.device, wp.name, "port", "configured", "absent", Severity::kError,
                            "diff", "the device holds no RoCE configuration for this port"});
  }
  for (const auto& hp : have.ports)
    if (!want.port(hp.name))
      out.push_back(Finding{have.device, hp.name, "port", "", "configured", Severity::kInfo, "diff",
                            "port not in the fabric"});
  return out;
}

}  // namespace weft::roce
