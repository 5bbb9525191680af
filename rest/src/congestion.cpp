// Congestion over REST: GET /api/v1/congestion, the ports and flows that congestion
// control's logs named (cc/view.hpp) beside the PerfMgr's PortXmitWait rates
// (perf/view.hpp), ranked; where adaptive routing is on (on any switch), the congested
// destinations a marking switch has no AR group for (AR off on it, or no group for the
// DLID): AR cannot spread them there.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "handlers.hpp"
#include "views.hpp"
#include "weft/cc/view.hpp"
#include "weft/perf/view.hpp"
#include "weft/sm/options.hpp"

namespace weft::rest {

namespace {

using nlohmann::json;

struct Row {
  uint64_t guid = 0;
  PortNum port = 0;
  const cc::PortCongestion* cc = nullptr;
  const perf::PortStats* perf = nullptr;
  uint64_t events() const { return cc ? cc->log_events : 0; }
  uint64_t total() const { return cc ? cc->log_events_total : 0; }
  double xmit_wait() const { return perf ? perf->rate(perf::Counter::kXmitWait) : 0; }
};

// "name" of an end port by LID, from the snapshot (empty: none).
json end_of(const sm::SubnetSnapshot* s, uint16_t lid) {
  if (!s) return nullptr;
  auto at = s->ends.at(lid);
  if (!at) return nullptr;
  const auto& nd = s->fabric.node(at->first);
  return {{"guid", guid_hex(nd.guid.value)}, {"port", at->second}, {"name", nd.description}};
}

void get_congestion(Ctx& c) {
  auto p = c.backend.published();
  auto top_q = query_count(c, "top", 20, 100000);
  if (!top_q) return c.fail(top_q.error());
  const size_t top = *top_q;
  const sm::SubnetSnapshot* snap = p->subnet.get();
  const cc::CcView empty;
  const cc::CcView& v = p->cc ? *p->cc : empty;
  // Ports: those the logs named and those that waited to send.
  std::map<std::pair<uint64_t, PortNum>, Row> rows;
  for (const auto& pc : v.ports) {
    Row& r = rows[{pc.guid, pc.port}];
    r.guid = pc.guid;
    r.port = pc.port;
    r.cc = &pc;
  }
  if (p->perf)
    for (const auto& st : p->perf->ports) {
      if (st.rate(perf::Counter::kXmitWait) <= 0) continue;
      Row& r = rows[{st.node_guid, st.port}];
      r.guid = st.node_guid;
      r.port = st.port;
      r.perf = &st;
    }
  std::vector<const Row*> ranked;
  for (const auto& [k, r] : rows) ranked.push_back(&r);
  std::stable_sort(ranked.begin(), ranked.end(), [](const Row* a, const Row* b) {
    if (a->events() != b->events()) return a->events() > b->events();
    if (a->xmit_wait() != b->xmit_wait()) return a->xmit_wait() > b->xmit_wait();
    return a->total() > b->total();
  });
  json ports = json::array();
  for (size_t i = 0; i < ranked.size() && i < top; ++i) {
    const Row& r = *ranked[i];
    json j = {{"guid", guid_hex(r.guid)},
              {"port", r.port},
              {"xmit_wait_rate", r.xmit_wait()},
              {"log_events", r.events()},
              {"log_events_total", r.total()},
              {"marking", r.cc && r.cc->marking},
              {"congested", r.perf && r.perf->congested}};
    if (snap)
      if (auto n = snap->fabric.find(Guid{r.guid})) {
        j["name"] = snap->fabric.node(*n).description;
        j["is_switch"] = snap->fabric.node(*n).is_switch();
      }
    ports.push_back(std::move(j));
  }
  // Where a switch that marked a flow has AR on and no group for its DLID, the flow
  // cannot spread there (with AR on somewhere, a switch with AR off has no group either).
  // Every flow of the last read is looked at; the top ones are listed.
  const bool ar_on = snap && std::any_of(snap->ar.begin(), snap->ar.end(),
                                         [](const auto& a) { return a.second.enabled; });
  auto grouped = [&](uint64_t g, uint16_t dlid) {
    auto ar = snap->ar.find(g);
    if (ar == snap->ar.end() || !ar->second.enabled) return false;
    const auto& e = ar->second.entries;  // ascending by LID
    auto it = std::lower_bound(e.begin(), e.end(), dlid,
                               [](const sm::ArView::Entry& x, uint16_t l) { return x.lid < l; });
    return it != e.end() && it->lid == dlid && it->group != 0;
  };
  std::map<uint16_t, std::set<std::string>> no_group;  // DLID -> the switches
  json flows = json::array();
  for (size_t i = 0; i < v.flows.size(); ++i) {
    const auto& f = v.flows[i];
    json stuck = json::array();
    if (ar_on)
      for (const auto& [g, port] : f.marked_at)
        if (!grouped(g, f.dlid)) {
          stuck.push_back({{"guid", guid_hex(g)}, {"port", port}});
          no_group[f.dlid].insert(guid_hex(g));
        }
    if (i >= top) continue;
    json j = {{"slid", f.slid},
              {"dlid", f.dlid},
              {"sl", f.sl},
              {"count", f.count},
              {"total", f.total},
              {"source", end_of(snap, f.slid)},
              {"destination", end_of(snap, f.dlid)}};
    json at = json::array(), qps = json::array();
    for (const auto& [g, port] : f.marked_at) at.push_back({{"guid", guid_hex(g)}, {"port", port}});
    for (const auto& [l, r] : f.qps) qps.push_back({{"local", l}, {"remote", r}});
    j["marked_at"] = std::move(at);
    j["qps"] = std::move(qps);
    if (!stuck.empty()) j["no_ar_group_at"] = std::move(stuck);
    flows.push_back(std::move(j));
  }
  json without = json::array();
  for (const auto& [dlid, sws] : no_group)
    without.push_back({{"dlid", dlid}, {"destination", end_of(snap, dlid)}, {"switches", sws}});
  const bool on = p->options && p->options->cc.enabled;
  json devices = {{"switches", 0},    {"cas", 0},    {"configured", 0},
                  {"unavailable", 0}, {"locked", 0}, {"failed", 0}};
  if (v.pass)
    devices = {{"switches", v.pass->switches},     {"cas", v.pass->cas},
               {"configured", v.pass->configured}, {"unavailable", v.pass->unavailable},
               {"locked", v.pass->locked},         {"failed", v.pass->failed},
               {"verified", v.pass->verified}};
  c.ok({{"congestion_control", on},
        {"log_interval_s", p->options ? p->options->cc.log_interval.count() : 0},
        {"log_reads", v.log_reads},
        {"last_read", {{"devices", v.last_read_devices}, {"failed", v.last_read_failed}}},
        {"last_read_at_s", v.last_read_unix_s},
        {"interval_s", v.interval_s},
        {"devices", std::move(devices)},
        {"ports", std::move(ports)},
        {"flows", std::move(flows)},
        {"ar_destinations_without_group", std::move(without)}});
}

}  // namespace

void register_congestion(std::vector<Api::Route>& r) {
  add_route(r, "GET", "/api/v1/congestion", Role::kMonitor,
            "congestion: ports ranked by the events congestion control logged in its last read "
            "(a switch's put on its ports by the DLIDs it forwards), then by PortXmitWait per "
            "second; the flows the logs named (SLID, DLID, SL, where marked, the QPs that "
            "reacted); with adaptive routing, congested destinations a marking switch has no "
            "group for; ?top=N",
            get_congestion,
            {{"query", {{"top", "how many ports and flows each list holds (20)"}}}});
}

}  // namespace weft::rest
