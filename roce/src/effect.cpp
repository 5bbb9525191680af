// The RoCE diff by effect: what traffic meets, not how a table is spelled.
//
// For each value traffic can carry (the 64 DSCPs under DSCP trust, the 8 PCPs under PCP
// trust), on the side the profile asks for and on the side the device holds: the
// priority, TC, queue and priority group it lands in (numbers: spellings, never
// compared themselves), and what that means for it: lossless or not (PFC on its
// priority, and on a switch a headroom-backed PG and a PFC that pauses its own queue),
// ECN (the queue's WRED marking; the host's notification and reaction points), and its
// scheduler (strict, or its share of the ETS/DWRR weights among the TCs or queues
// traffic uses). The RoCE value and the CNP path differing, or another value turned
// lossy or starved, are errors; another value scheduled differently a warning; and a
// table entry that differs without changing any value's treatment (no traffic reaches
// it, or it means the same) is info, kept apart (DiffReport::unreached).
#include <algorithm>
#include <map>
#include <set>

#include "weft/roce/check.hpp"

namespace weft::roce {

namespace {

std::string n2s(int64_t x) {
  return std::to_string(x);
}

// What one value meets. An empty text: the device does not report what decides it.
struct Aspect {
  std::string text, field;  // the treatment, and the observed entry that decides it
};
struct Treatment {
  Aspect lossless, ecn, sched;
  Aspect np, rp;  // hosts: DCQCN's notification and reaction points on its priority
  // The mapping entries along its path (field -> value), to name the first that differs.
  std::vector<std::pair<std::string, int>> path;
  // The schedulers its share is reckoned against (field -> "ets/50"), its own first: a
  // share that moved because another TC or queue in use changed names that one.
  std::vector<std::pair<std::string, std::string>> weights;
};

std::string share(int weight, int total) {
  if (weight <= 0 || total <= 0) return "starved (weight 0)";
  return "share " + n2s((weight * 100 + total / 2) / total) + "%";
}

// ---- hosts ----

struct HostView {
  const HostConfig& h;
  Trust trust;
  int prio_of(int v) const {
    if (trust == Trust::kPcp) return v;
    return h.dscp_prio ? (*h.dscp_prio)[v] : -1;
  }
  int tc_of(int prio) const { return prio >= 0 && h.prio_tc ? (*h.prio_tc)[prio] : -1; }
};

Treatment host_treatment(const HostView& hv, int prio, const std::set<int>& tcs_used);

// A value's treatment: its priority from the DSCP map (under DSCP trust), then on.
Treatment host_value(const HostView& hv, int v, const std::set<int>& tcs_used) {
  Treatment t = host_treatment(hv, hv.prio_of(v), tcs_used);
  if (hv.trust == Trust::kDscp)
    t.path.insert(t.path.begin(), {"app.dscp-prio[" + n2s(v) + "]", hv.prio_of(v)});
  return t;
}

Treatment host_treatment(const HostView& hv, int prio, const std::set<int>& tcs_used) {
  const HostConfig& h = hv.h;
  Treatment t;
  if (prio < 0) return t;
  const int tc = hv.tc_of(prio);
  t.path.emplace_back("ets.prio-tc[" + n2s(prio) + "]", tc);
  if (h.pfc_mask) t.lossless = {(*h.pfc_mask >> prio & 1) ? "lossless" : "lossy", "pfc.prio-pfc"};
  if (h.ets && tc >= 0) {
    const EtsTc& e = (*h.ets)[tc];
    int total = 0;
    for (int u : tcs_used)
      if ((*h.ets)[u].tsa == Tsa::kEts) total += (*h.ets)[u].bw;
    t.sched = {e.tsa == Tsa::kStrict   ? std::string("strict")
               : e.tsa == Tsa::kVendor ? std::string("vendor")
                                       : share(e.bw, total),
               "ets.tc-tsa[" + n2s(tc) + "]"};
    auto raw = [&](int u) {
      const EtsTc& x = (*h.ets)[u];
      return std::string(roce::tsa_name(x.tsa)) + "/" + n2s(x.bw);
    };
    t.weights.emplace_back(t.sched.field, raw(tc));
    for (int u : tcs_used)
      if (u != tc) t.weights.emplace_back("ets.tc-tsa[" + n2s(u) + "]", raw(u));
  }
  if (h.np_mask)
    t.np = {(*h.np_mask >> prio & 1) ? "on" : "off", "ecn.roce_np.enable[" + n2s(prio) + "]"};
  if (h.rp_mask)
    t.rp = {(*h.rp_mask >> prio & 1) ? "on" : "off", "ecn.roce_rp.enable[" + n2s(prio) + "]"};
  return t;
}

std::set<int> host_tcs_used(const HostView& hv, int values, int cnp_prio) {
  std::set<int> s;
  for (int v = 0; v < values; ++v)
    if (const int tc = hv.tc_of(hv.prio_of(v)); tc >= 0) s.insert(tc);
  if (const int tc = hv.tc_of(cnp_prio); tc >= 0) s.insert(tc);
  return s;
}

// ---- switch ports ----

struct SwitchView {
  const SwitchPort& p;
  Trust trust;
  int tc_of(int v) const {
    if (trust == Trust::kPcp) return v;  // 802.1p picks the TC
    return p.dscp_tc ? (*p.dscp_tc)[v] : -1;
  }
  int queue_of(int tc) const { return tc >= 0 && p.tc_queue ? (*p.tc_queue)[tc] : -1; }
};

std::set<int> switch_queues_used(const SwitchView& sv, int values) {
  std::set<int> s;
  for (int v = 0; v < values; ++v)
    if (const int q = sv.queue_of(sv.tc_of(v)); q >= 0) s.insert(q);
  return s;
}

Treatment switch_treatment(const SwitchView& sv, int v, const std::set<int>& queues_used) {
  const SwitchPort& p = sv.p;
  Treatment t;
  const int tc = sv.tc_of(v);
  if (tc < 0) return t;
  if (sv.trust == Trust::kDscp) t.path.emplace_back("dscp_to_tc[" + n2s(v) + "]", tc);
  const int q = sv.queue_of(tc);
  t.path.emplace_back("tc_to_queue[" + n2s(tc) + "]", q);
  if (p.pfc_mask) {
    if (!(*p.pfc_mask >> tc & 1)) {
      t.lossless = {"lossy", "pfc_enable"};
    } else if (p.tc_pg) {
      const int pg = (*p.tc_pg)[tc];
      t.path.emplace_back("tc_to_pg[" + n2s(tc) + "]", pg);
      auto it = p.pgs.find(pg);
      const bool backed =
          it != p.pgs.end() && it->second.lossless && (it->second.xoff > 0 || p.headroom_by_device);
      if (!backed)
        t.lossless = {"lossy (no headroom)", "pg[" + n2s(pg) + "]"};
      else if (p.pfc_queue && q >= 0 && (*p.pfc_queue)[tc] != q)
        t.lossless = {"lossy (PFC pauses queue " + n2s((*p.pfc_queue)[tc]) + ")",
                      "pfc_priority_to_queue[" + n2s(tc) + "]"};
      else
        t.lossless = {"lossless", "pfc_enable"};
    } else {
      t.lossless = {"lossless", "pfc_enable"};
    }
  }
  if (q < 0) return t;
  const std::string qf = "queue[" + n2s(q) + "]";
  if (auto w = p.wred.find(q); w != p.wred.end()) {
    auto e = p.wred_ecn.find(q);
    const bool marks = e != p.wred_ecn.end() && e->second;
    t.ecn = {(marks ? "marks min=" : "drops min=") + n2s(int64_t(w->second.kmin)) +
                 " max=" + n2s(int64_t(w->second.kmax)) + " p=" + n2s(int64_t(w->second.pmax)),
             qf + ".wred"};
  } else if (p.tc_queue || !p.sched.empty()) {
    t.ecn = {"no ECN marking", qf + ".wred"};
  }
  if (auto s = p.sched.find(q); s != p.sched.end()) {
    int total = 0;
    for (int u : queues_used)
      if (auto x = p.sched.find(u); x != p.sched.end() && x->second.tsa == Tsa::kEts)
        total += x->second.weight;
    t.sched = {
        s->second.tsa == Tsa::kStrict ? std::string("strict") : share(s->second.weight, total),
        qf + ".scheduler"};
    auto raw = [&](int u) {
      auto x = p.sched.find(u);
      return x == p.sched.end()
                 ? std::string("none")
                 : std::string(roce::tsa_name(x->second.tsa)) + "/" + n2s(x->second.weight);
    };
    t.weights.emplace_back(t.sched.field, raw(q));
    for (int u : queues_used)
      if (u != q) t.weights.emplace_back("queue[" + n2s(u) + "].scheduler", raw(u));
  }
  return t;
}

// ---- comparing ----

enum class Flow { kRoce, kCnp, kOther };

struct Differ {
  const std::string& device;
  const std::string& port;
  std::vector<Finding>& out;
  // Other values' differences, gathered per (aspect field, expected, observed).
  std::map<std::tuple<std::string, std::string, std::string, bool>, std::vector<int>> others;

  // The first mapping entry along the observed path that differs from the expected one
  // (a different TC, queue or PG for this value), else the aspect's own field.
  static std::string cause(const Treatment& w, const Treatment& h, const Aspect& aspect) {
    for (const auto& [field, value] : h.path)
      for (const auto& [wf, wv] : w.path)
        if (wf == field && wv != value) return field;
    return aspect.field;
  }

  void compare(Flow flow, const std::string& what, int value, const Treatment& w,
               const Treatment& h) {
    struct Pair {
      const Aspect *want, *have;
      const char* check;
    };
    const Pair pairs[] = {{&w.lossless, &h.lossless, "pfc"},
                          {&w.ecn, &h.ecn, "ecn"},
                          {&w.np, &h.np, "ecn"},
                          {&w.rp, &h.rp, "ecn"},
                          {&w.sched, &h.sched, "ets"}};
    std::map<std::string, Finding> by_field;  // one finding per deciding field
    for (const Pair& x : pairs) {
      if (x.want->text.empty() || x.have->text.empty() || x.want->text == x.have->text) continue;
      std::string field = cause(w, h, *x.have);
      if (x.have == &h.sched && field == h.sched.field && !h.weights.empty() &&
          !w.weights.empty() && h.weights[0].second == w.weights[0].second) {
        // Its own scheduler is as asked: the share moved with another one in use.
        for (const auto& [f2, v2] : h.weights) {
          auto it = std::find_if(w.weights.begin(), w.weights.end(),
                                 [&](const auto& e) { return e.first == f2; });
          if (it == w.weights.end() || it->second != v2) {
            field = f2;
            break;
          }
        }
      }
      if (flow == Flow::kOther) {
        // Lossy where it should not be, or starved: that traffic suffers; else a note.
        // Gathered per table (a value's own map entry stands for its map) and treatment.
        const bool hurts =
            (x.want->text == "lossless" && x.have->text != "lossless") ||
            (x.have->text.starts_with("starved") && !x.want->text.starts_with("starved"));
        const bool own_entry =
            field.ends_with("[" + n2s(value) + "]") &&
            (field.starts_with("app.dscp-prio") || field.starts_with("dscp_to_tc"));
        others[{own_entry ? field.substr(0, field.find('[')) : field, x.want->text, x.have->text,
                hurts}]
            .push_back(value);
        continue;
      }
      auto [it, fresh] = by_field.try_emplace(field);
      Finding& f = it->second;
      if (fresh) {
        f = Finding{device,       port,
                    field,        x.want->text,
                    x.have->text, Severity::kError,
                    x.check,      what + " traffic is treated differently: "};
      } else {
        f.expected += "; " + x.want->text;
        f.observed += "; " + x.have->text;
      }
      const std::string check = x.check;
      const char* meaning = check == "pfc"   ? (x.have->text == "lossless" ? "lossless where "
                                                                             "the profile is lossy"
                                                                           : "lossy")
                            : check == "ets" ? "scheduled differently"
                            : x.have->text.starts_with("drops") ||
                                    x.have->text.starts_with("no ECN") || x.have->text == "off"
                                ? "unmarked"
                                : "marked differently";
      if (!f.message.ends_with(": ")) f.message += ", ";
      f.message += meaning;
    }
    for (auto& [field, f] : by_field) out.push_back(std::move(f));
  }

  void flush(const char* kind) {
    for (const auto& [key, values] : others) {
      const auto& [field, want, have, hurts] = key;
      std::string list;  // "24-25,27-31"
      for (size_t a = 0; a < values.size();) {
        size_t b = a;
        while (b + 1 < values.size() && values[b + 1] == values[b] + 1) ++b;
        if (!list.empty()) list += ',';
        list += n2s(values[a]);
        if (b > a) list.append(1, '-').append(n2s(values[b]));
        a = b + 1;
      }
      out.push_back(Finding{device, port, field, want, have,
                            hurts ? Severity::kError : Severity::kWarning, "effect",
                            std::string(kind) + " " + list +
                                (hurts ? ": that traffic is lossy or starved here"
                                       : ": other traffic than RoCE and CNPs is treated "
                                         "differently")});
    }
    others.clear();
  }
};

// Literal differences (diff_fields' findings) that no value's treatment shows: info,
// apart; the port-wide facts that change behaviour keep a severity of their own.
void sort_literal(bool host, std::vector<Finding>& literal, const std::vector<Finding>& effect,
                  std::vector<Finding>& out, std::vector<Finding>& unreached) {
  for (Finding& l : literal) {
    const std::string& k = l.field;
    if (k == "rdma_cm.default_roce_mode" && !l.expected.empty() && !l.observed.empty()) {
      l.severity = Severity::kError;
      l.message = "another RoCE mode than the fabric's: v1 is not routable and carries no DSCP";
      out.push_back(std::move(l));
      continue;
    }
    if (k == "mtu" && !l.expected.empty() && !l.observed.empty()) {
      // A switch port below the fabric's MTU drops the frames the fabric may carry; a
      // host above it sends frames the switches drop. The other way round is a note.
      const bool drops = host ? std::stoll(l.observed) > std::stoll(l.expected)
                              : std::stoll(l.observed) < std::stoll(l.expected);
      l.severity = drops ? Severity::kError : Severity::kWarning;
      l.message = drops ? (host ? "the host sends frames larger than the fabric's MTU: they drop"
                                : "frames of the fabric's MTU are dropped on this port")
                        : "MTU differs from the fabric's, but no frame is dropped for it";
      out.push_back(std::move(l));
      continue;
    }
    const bool knob = std::ranges::any_of(
        roce::dcqcn_knobs(), [&](const roce::DcqcnKnob& d) { return dcqcn_field(d) == k; });
    if ((k == "speed" || knob) && !l.expected.empty() && !l.observed.empty()) {
      l.severity = Severity::kWarning;
      l.message = k == "speed" ? "the port runs at another speed than the fabric says"
                               : "DCQCN is tuned otherwise";
      out.push_back(std::move(l));
      continue;
    }
    if (k == "port") {  // a port the device does not configure, or one not in the fabric
      out.push_back(std::move(l));
      continue;
    }
    const bool shown = std::any_of(effect.begin(), effect.end(), [&](const Finding& e) {
      return e.field == k || e.field.starts_with(k + "[");
    });
    if (shown) continue;
    l.severity = Severity::kInfo;
    l.check = "spelling";
    l.message = l.observed.empty()   ? "not reported by the device: not compared"
                : l.expected.empty() ? "not in the profile"
                                     : "differs, but no value traffic can carry is treated "
                                       "differently (no traffic reaches the entries that "
                                       "differ, or they mean the same)";
    unreached.push_back(std::move(l));
  }
}

}  // namespace

EffectDiff diff_effect(const RoceProfile& p, const HostConfig& want, const HostConfig& have) {
  EffectDiff r;
  const Trust trust = have.trust.value_or(p.trust);
  const int values = trust == Trust::kDscp ? 64 : 8;
  const HostView wv{want, want.trust.value_or(p.trust)}, hv{have, trust};
  const int cnp_w = want.cnp_prio.value_or(p.cnp_prio), cnp_h = have.cnp_prio.value_or(cnp_w);
  const std::set<int> wu = host_tcs_used(wv, values, cnp_w), hu = host_tcs_used(hv, values, cnp_h);
  Differ d{have.device, have.port, r.findings, {}};
  const int roce_v = trust == Trust::kDscp ? p.roce_dscp : p.roce_prio;
  // The RoCE flow: the DSCP its connections carry (rdma_cm's ToS; the check names a
  // wrong one), on the expected side the profile's.
  const int carried = trust == Trust::kDscp && have.tos ? (*have.tos >> 2) : roce_v;
  d.compare(Flow::kRoce, "RoCE", roce_v, host_value(wv, roce_v, wu), host_value(hv, carried, hu));
  // CNPs leave on their own priority (ecn/roce_np/cnp_802p_prio), whatever their DSCP;
  // DCQCN's points act on RoCE traffic only.
  Treatment cw = host_treatment(wv, cnp_w, wu), ch = host_treatment(hv, cnp_h, hu);
  cw.np = cw.rp = ch.np = ch.rp = {};
  d.compare(Flow::kCnp, "CNP", p.cnp_dscp, cw, ch);
  for (int v = 0; v < values; ++v) {
    if (v == roce_v || (trust == Trust::kDscp && v == p.cnp_dscp)) continue;
    Treatment w = host_value(wv, v, wu), h = host_value(hv, v, hu);
    w.np = w.rp = h.np = h.rp = {};
    d.compare(Flow::kOther, "", v, w, h);
  }
  d.flush(trust == Trust::kDscp ? "DSCP" : "PCP");
  std::vector<Finding> literal = diff(want, have);
  sort_literal(true, literal, r.findings, r.findings, r.unreached);
  return r;
}

EffectDiff diff_effect(const RoceProfile& p, const SwitchConfig& want, const SwitchConfig& have) {
  EffectDiff r;
  std::vector<Finding> literal = diff(want, have);
  std::vector<Finding> effect;
  for (const auto& wp : want.ports) {
    const SwitchPort* hp = have.port(wp.name);
    if (!hp) continue;
    const Trust trust = hp->trust.value_or(p.trust);
    const int values = trust == Trust::kDscp ? 64 : 8;
    SwitchPort w = wp;  // what a switch sizes itself (headroom) is not the profile's to ask
    w.headroom_by_device |= hp->headroom_by_device;
    const SwitchView wv{w, wp.trust.value_or(p.trust)}, hv{*hp, trust};
    const std::set<int> wu = switch_queues_used(wv, values), hu = switch_queues_used(hv, values);
    Differ d{have.device, wp.name, effect, {}};
    const int roce_v = trust == Trust::kDscp ? p.roce_dscp : p.roce_prio;
    const int cnp_v = trust == Trust::kDscp ? p.cnp_dscp : p.cnp_prio;
    d.compare(Flow::kRoce, "RoCE", roce_v, switch_treatment(wv, roce_v, wu),
              switch_treatment(hv, roce_v, hu));
    d.compare(Flow::kCnp, "CNP", cnp_v, switch_treatment(wv, cnp_v, wu),
              switch_treatment(hv, cnp_v, hu));
    for (int v = 0; v < values; ++v)
      if (v != roce_v && v != cnp_v)
        d.compare(Flow::kOther, "", v, switch_treatment(wv, v, wu), switch_treatment(hv, v, hu));
    d.flush(trust == Trust::kDscp ? "DSCP" : "PCP");
  }
  // Literal differences per port, sorted against that port's effect findings.
  std::map<std::string, std::vector<Finding>> lit_by_port, eff_by_port;
  for (auto& l : literal) lit_by_port[l.port].push_back(std::move(l));
  for (const auto& e : effect) eff_by_port[e.port].push_back(e);
  r.findings = std::move(effect);
  for (auto& [port, ls] : lit_by_port)
    sort_literal(false, ls, eff_by_port[port], r.findings, r.unreached);
  return r;
}

}  // namespace weft::roce
