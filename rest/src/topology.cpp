// The fabric as the topology page draws it: GET /api/v1/topology (every node with its
// tier, every link with its state, health and load), and the page itself at / with its
// assets under /ui/, compiled into weft (rest/www, embedded by CMake: it works offline
// and needs no install step of its own).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <string_view>

#include "handlers.hpp"
#include "views.hpp"
#include "weft/cc/view.hpp"
#include "weft/perf/view.hpp"
#include "weft/routing/torus.hpp"
#include "weft/sm/options.hpp"
#include "www_assets.hpp"

namespace weft::rest {

namespace {

using fabric::NodeIndex;
using nlohmann::json;

std::string link_id(uint64_t ga, PortNum pa, uint64_t gb, PortNum pb) {
  if (std::pair(gb, pb) < std::pair(ga, pa)) std::swap(ga, gb), std::swap(pa, pb);
  return fmt::format("0x{:016x}/{}-0x{:016x}/{}", ga, pa, gb, pb);
}

}  // namespace

// Switch tiers by distance from the leaves (switches with a CA; without any CA, every
// switch is a leaf). A tree when every switch is reached and every switch-to-switch
// link joins neighbouring tiers.
TopologyTiers topology_tiers(const fabric::Fabric& f) {
  TopologyTiers t;
  t.tier.assign(f.size(), -1);
  std::deque<NodeIndex> q;
  bool any_ca = false;
  for (NodeIndex n = 0; n < f.size(); ++n) any_ca |= !f.node(n).is_switch();
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (!nd.is_switch()) continue;
    bool leaf = !any_ca;
    for (const auto& p : nd.ports)
      if (p.num && p.linked() && !f.node(p.peer).is_switch()) leaf = true;
    if (leaf) t.tier[n] = 0, q.push_back(n);
  }
  while (!q.empty()) {
    const NodeIndex n = q.front();
    q.pop_front();
    for (const auto& p : f.node(n).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch() && t.tier[p.peer] < 0) {
        t.tier[p.peer] = t.tier[n] + 1;
        q.push_back(p.peer);
      }
  }
  t.tree = true;
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (!nd.is_switch()) continue;
    if (t.tier[n] < 0) {
      t.tree = false;
      continue;
    }
    t.levels = std::max(t.levels, t.tier[n] + 1);
    for (const auto& p : nd.ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch() &&
          std::abs(t.tier[p.peer] - t.tier[n]) != 1)
        t.tree = false;
  }
  return t;
}

// Where each switch of a torus or mesh sits: by the SM's torus description (dor's
// torus_config) when it fits the fabric, else as read off the links.
std::optional<routing::TorusCoordinates> topology_grid(const sm::Published& p) {
  const auto& f = p.subnet->fabric;
  if (p.options && p.options->torus)
    if (auto c = routing::torus_coordinates(f, *p.options->torus)) return std::move(*c);
  if (auto spec = routing::detect_torus(f))
    if (auto c = routing::torus_coordinates(f, *spec)) return std::move(*c);
  return std::nullopt;
}

json topology_json(const sm::Published& p) {
  const auto& s = *p.subnet;
  const auto& f = s.fabric;
  const auto tiers = topology_tiers(f);
  const auto grid = tiers.tree ? std::nullopt : topology_grid(p);
  const auto pv = p.perf;
  json nodes = json::array();
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    json j = {{"guid", guid_hex(nd.guid.value)},
              {"name", nd.description},
              {"type", nd.is_switch()                         ? "switch"
                       : nd.type == fabric::NodeType::kRouter ? "router"
                                                              : "ca"},
              {"ports", nd.num_ports}};
    if (nd.is_switch()) {
      j["lid"] = nd.ports[0].attrs.lid.value;
      j["tier"] = tiers.tier[n];
      if (grid) j["coord"] = grid->of_node[n];
    } else {
      for (PortNum q = 1; q <= nd.num_ports; ++q)
        if (nd.ports[q].linked()) {
          j["lid"] = nd.ports[q].attrs.lid.value;
          j["leaf"] = guid_hex(f.node(nd.ports[q].peer).guid.value);
          break;
        }
    }
    nodes.push_back(std::move(j));
  }
  auto stats = [&](NodeIndex n, PortNum q) -> const perf::PortStats* {
    return pv ? pv->find(f.node(n).guid.value, q) : nullptr;
  };
  auto unhealthy = [&](NodeIndex n, PortNum q) -> const perf::Unhealthy* {
    if (!pv) return nullptr;
    auto it = pv->unhealthy.find({f.node(n).guid.value, q});
    return it == pv->unhealthy.end() ? nullptr : &it->second;
  };
  // Congestion control's logs: the events each port counted in the last read, while that
  // read is recent (CC on, within two log intervals: a master that stopped reading them,
  // or a standby, paints nothing from old reads).
  std::map<std::pair<uint64_t, PortNum>, const cc::PortCongestion*> marks;
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const bool fresh = p.cc && p.options && p.options->cc.enabled &&
                     p.options->cc.log_interval.count() > 0 &&
                     now - p.cc->last_read_unix_s <= 2 * p.options->cc.log_interval.count();
  if (fresh)
    for (const auto& pc : p.cc->ports)
      if (pc.log_events) marks[{pc.guid, pc.port}] = &pc;
  json links = json::array();
  for (const auto& l : f.links()) {
    const auto& a = f.node(l.a).ports[l.pa].attrs;
    const double gbps = fabric::link_gbps(a);
    json j = {{"id", link_id(f.node(l.a).guid.value, l.pa, f.node(l.b).guid.value, l.pb)},
              {"a", guid_hex(f.node(l.a).guid.value)},
              {"pa", l.pa},
              {"b", guid_hex(f.node(l.b).guid.value)},
              {"pb", l.pb},
              {"state", fabric::port_state_name(a.state)},
              {"width", width_name(a)},
              {"speed", speed_name(a)},
              {"gbps", gbps}};
    // Health: a mark on either end, congestion (PortXmitWait past the threshold, or a
    // switch end that marked packets in the logs' last read), errors within the window.
    std::string health = "ok", why;
    uint64_t errors = 0, cc_events = 0;
    double bytes_s = 0;
    for (const auto& [n, q] : {std::pair{l.a, l.pa}, std::pair{l.b, l.pb}}) {
      if (const auto* u = unhealthy(n, q)) {
        health = "unhealthy";
        why = fabric::port_ref(f, n, q) + ": " + u->reason;
      }
      if (auto m = marks.find({f.node(n).guid.value, q});
          m != marks.end() && m->second->is_switch) {
        cc_events += m->second->log_events;
        if (health != "unhealthy") {
          health = "congested";
          why = fmt::format("{}: {} congestion events in the last read of the logs",
                            fabric::port_ref(f, n, q), m->second->log_events);
        }
      }
      if (const auto* st = stats(n, q)) {
        for (size_t i = 0; i < perf::kCounters; ++i)
          if (perf::info(perf::Counter(i)).error) errors += st->window[i];
        if (st->congested && health == "ok") health = "congested";
        bytes_s = std::max(bytes_s, 4 * (st->has_ext ? st->rate(perf::ExtCounter::kXmitData)
                                                     : st->rate(perf::Counter::kXmitData)));
      }
    }
    if (health == "ok" && errors) health = "errors";
    j["health"] = health;
    if (!why.empty()) j["why"] = why;
    j["errors"] = errors;
    j["cc_events"] = cc_events;
    j["load"] = gbps > 0 ? std::min(1.0, bytes_s * 8 / (gbps * 1e9)) : 0.0;
    links.push_back(std::move(j));
  }
  json out = {{"layout", tiers.tree ? "tiers"
                         : grid     ? "grid"
                                    : "force"},
              {"levels", tiers.levels},
              {"sweeps", p.heavy_sweeps + p.light_sweeps},
              {"counter_sweeps", pv ? pv->sweeps : 0},
              {"nodes", std::move(nodes)},
              {"links", std::move(links)}};
  if (grid) {
    // "wrap": every ring wraps; "wraps": each dimension's own (torus 5 4M: [true, false]).
    std::vector<bool> wraps;
    bool all = true;
    for (size_t d = 0; d < grid->spec.radix.size(); ++d)
      wraps.push_back(grid->spec.wraps(d)), all = all && wraps.back();
    out["grid"] = {{"radix", grid->spec.radix}, {"wrap", all}, {"wraps", wraps}};
  }
  return out;
}

namespace {

void get_topology(Ctx& c) {
  auto p = c.backend.published();
  if (!p->subnet) return c.fail({503, "no_fabric", "the SM has not finished a sweep yet"});
  c.ok(topology_json(*p));
}

void serve_asset(Ctx& c, std::string_view name) {
  const auto* a = find_asset(name);
  if (!a) return c.fail({404, "not_found", "no asset " + std::string(name)});
  Response r;
  r.content_type = std::string(a->content_type);
  r.body = std::string(a->data);
  r.headers.push_back({"Cache-Control", "no-cache"});
  c.reply(std::move(r));
}

}  // namespace

void register_topology(std::vector<Api::Route>& r) {
  add_route(r, "GET", "/api/v1/topology", Role::kMonitor,
            "the fabric for the topology page: nodes with their switch tier, links with their "
            "state, health (a mark, congestion, errors in the window) and load",
            get_topology);
  add_route(r, "GET", "/", std::nullopt,
            "the topology page (its data comes from the API, with the caller's credentials)",
            [](Ctx& c) { serve_asset(c, "index.html"); });
  add_route(r, "GET", "/ui/{file}", std::nullopt, "the topology page's script and style",
            [](Ctx& c) { serve_asset(c, c.param("file")); });
}

}  // namespace weft::rest
