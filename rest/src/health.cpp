// Port counters and link health over REST: the PerfMgr's view (perf/manager.hpp) as
// /api/v1/ports/{guid}/{num}/counters and /api/v1/health, marks cleared by
// POST /api/v1/ports/{guid}/{num}/healthy, and UFM's app/unhealthy_ports on the facade.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <ctime>

#include "handlers.hpp"
#include "views.hpp"
#include "weft/perf/view.hpp"
#include "weft/sm/options.hpp"

namespace weft::rest {

namespace {

using nlohmann::json;

std::shared_ptr<const perf::PerfView> perf_view(const sm::Published& p) {
  return p.perf ? p.perf : std::make_shared<perf::PerfView>();
}

// {guid} (node or port GUID) and {num} as a node and one of its ports.
ApiResult<std::pair<fabric::NodeIndex, PortNum>> port_param(const Ctx& c,
                                                            const sm::SubnetSnapshot& s) {
  auto g = daemon::parse_port_guid(c.param("guid"));
  if (!g) return api_error(400, "bad_guid", "\"" + c.param("guid") + "\" is not a GUID");
  auto n = find_node(s, *g);
  if (!n) return api_error(404, "not_found", "no node or port " + g->str());
  unsigned num = 0;
  const std::string& ps = c.param("num");
  auto [ptr, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), num);
  const auto& nd = s.fabric.node(*n);
  if (ec != std::errc() || ptr != ps.data() + ps.size() || num == 0 || num > nd.num_ports)
    return api_error(404, "not_found", fmt::format("{} has ports 1-{}", g->str(), nd.num_ports));
  return std::pair{*n, PortNum(num)};
}

template <class Series>
json counters_json(const std::array<uint64_t, Series::kN>& current, const auto& delta,
                   const std::array<uint64_t, Series::kN>& totals, double interval_s) {
  json out = json::object();
  for (size_t i = 0; i < Series::kN; ++i) {
    const auto& ci = perf::info(typename Series::Id(i));
    json c = {{"value", current[i]},
              {"delta", delta.counted[i]},
              {"total", totals[i]},
              {"rate", interval_s > 0 ? double(delta.counted[i]) / interval_s : 0.0}};
    if (ci.bits < 64) c["saturated"] = (delta.saturated >> i & 1) != 0;
    if (delta.reset >> i & 1) c["reset"] = true;
    out[std::string(ci.name)] = std::move(c);
  }
  return out;
}
struct Pc {
  static constexpr size_t kN = perf::kCounters;
  using Id = perf::Counter;
};
struct Pce {
  static constexpr size_t kN = perf::kExtCounters;
  using Id = perf::ExtCounter;
};

json unhealthy_json(const perf::PortKey& key, const perf::Unhealthy& u) {
  return {{"guid", guid_hex(key.first)}, {"port", key.second},
          {"reason", u.reason},          {"counter", u.counter},
          {"since_s", u.since_unix_s},   {"policy", perf::policy_name(u.policy)}};
}

json port_counters_json(const perf::PortStats& st, const perf::PerfView& v) {
  json j = {{"node_guid", guid_hex(st.node_guid)},
            {"port_guid", guid_hex(st.port_guid)},
            {"port", st.port},
            {"name", st.node_desc},
            {"lid", st.lid.value},
            {"read", st.read},
            {"baseline", st.baseline},
            {"read_s", st.read_unix_s},
            {"interval_s", st.interval_s},
            {"series_started_s", st.series_unix_s},
            {"clears", st.clears},
            {"congested", st.congested},
            {"counters", counters_json<Pc>(st.current, st.delta, st.totals, st.interval_s)}};
  if (!st.error.empty()) j["error"] = st.error;
  j["extended"] =
      st.has_ext ? counters_json<Pce>(st.ext_current, st.ext_delta, st.ext_totals, st.interval_s)
                 : json(nullptr);
  // Bytes per second, from the extended counters where the port has them.
  const double words =
      st.has_ext ? st.rate(perf::ExtCounter::kXmitData) : st.rate(perf::Counter::kXmitData);
  const double rwords =
      st.has_ext ? st.rate(perf::ExtCounter::kRcvData) : st.rate(perf::Counter::kRcvData);
  j["xmit_bytes_per_s"] = 4 * words;
  j["rcv_bytes_per_s"] = 4 * rwords;
  json window = json::object();
  for (size_t i = 0; i < perf::kCounters; ++i)
    if (perf::info(perf::Counter(i)).error)
      window[std::string(perf::info(perf::Counter(i)).name)] = st.window[i];
  j["errors_in_window"] = std::move(window);
  auto u = v.unhealthy.find({st.node_guid, st.port});
  j["unhealthy"] = u == v.unhealthy.end() ? json(nullptr) : unhealthy_json(u->first, u->second);
  return j;
}

void get_counters(Ctx& c) {
  auto p = c.backend.published();
  if (!p->subnet) return c.fail({503, "no_fabric", "the SM has not finished a sweep yet"});
  auto at = port_param(c, *p->subnet);
  if (!at) return c.fail(at.error());
  const auto& nd = p->subnet->fabric.node(at->first);
  auto v = perf_view(*p);
  const auto* st = v->find(nd.guid.value, at->second);
  if (!st) {
    const bool on = p->options && p->options->perf.enabled;
    return c.fail({404, "no_counters",
                   on ? fmt::format("{} port {}: not read yet (counter sweeps: {})",
                                    guid_hex(nd.guid.value), at->second, v->sweeps)
                      : std::string("the PerfMgr is off (perfmgr FALSE)")});
  }
  c.ok(port_counters_json(*st, *v));
}

uint64_t window_errors(const perf::PortStats& st) {
  uint64_t n = 0;
  for (size_t i = 0; i < perf::kCounters; ++i)
    if (perf::info(perf::Counter(i)).error) n += st.window[i];
  return n;
}

void get_health(Ctx& c) {
  auto p = c.backend.published();
  auto v = perf_view(*p);
  auto top_q = query_count(c, "top", 10, 10000);
  if (!top_q) return c.fail(top_q.error());
  const size_t top = *top_q;
  json unhealthy = json::array();
  for (const auto& [key, u] : v->unhealthy) {
    json j = unhealthy_json(key, u);
    if (const auto* st = v->find(key.first, key.second)) j["name"] = st->node_desc;
    unhealthy.push_back(std::move(j));
  }
  std::vector<const perf::PortStats*> ports;
  for (const auto& st : v->ports) ports.push_back(&st);
  auto brief = [&](const perf::PortStats& st) {
    json j = {{"node_guid", guid_hex(st.node_guid)},
              {"port", st.port},
              {"name", st.node_desc},
              {"errors_in_window", window_errors(st)},
              {"xmit_wait_per_s", st.rate(perf::Counter::kXmitWait)},
              {"congested", st.congested}};
    return j;
  };
  auto top_by = [&](auto key) {
    std::vector<const perf::PortStats*> sorted = ports;
    const size_t n = std::min(top, sorted.size());
    std::partial_sort(sorted.begin(), sorted.begin() + n, sorted.end(),
                      [&](const auto* a, const auto* b) {
                        const auto ka = key(*a), kb = key(*b);
                        if (ka != kb) return ka > kb;
                        return std::pair(a->node_guid, a->port) < std::pair(b->node_guid, b->port);
                      });
    json out = json::array();
    for (size_t i = 0; i < n && key(*sorted[i]) > 0; ++i) out.push_back(brief(*sorted[i]));
    return out;
  };
  size_t failed = 0, congested = 0;
  for (const auto* st : ports) {
    failed += !st->read;
    congested += st->congested;
  }
  const bool on = p->options && p->options->perf.enabled;
  c.ok({{"perfmgr", on},
        {"policy", perf::policy_name(p->options ? p->options->perf.unhealthy_policy
                                                : perf::UnhealthyPolicy::kReport)},
        {"counter_sweeps", v->sweeps},
        {"last_sweep",
         {{"at_s", v->last_sweep_unix_s},
          {"ms", v->last_sweep_ms},
          {"mads", v->last_sweep_mads},
          {"ports", v->ports.size()},
          {"unread", failed}}},
        {"congested", congested},
        {"unhealthy", std::move(unhealthy)},
        {"top_errors", top_by([](const perf::PortStats& st) { return double(window_errors(st)); })},
        {"top_xmit_wait",
         top_by([](const perf::PortStats& st) { return st.rate(perf::Counter::kXmitWait); })}});
}

// Clears marks one by one, then answers with what it cleared or the first failure.
void mark_all(Backend& b, std::vector<std::pair<Guid, PortNum>> todo, json done_so_far,
              std::function<void(Result<json>)> finish) {
  if (todo.empty()) return finish(done_so_far);
  const auto [g, p] = todo.front();
  todo.erase(todo.begin());
  b.submit(daemon::MarkHealthy{
      g, p,
      [&b, g, p, todo = std::move(todo), done_so_far = std::move(done_so_far),
       finish = std::move(finish)](Result<perf::Unhealthy> r) mutable {
        if (!r) return finish(std::unexpected(r.error()));
        done_so_far.push_back(
            {{"guid", guid_hex(g.value)}, {"port", p}, {"was", r->reason}, {"policy", r->policy}});
        mark_all(b, std::move(todo), std::move(done_so_far), std::move(finish));
      }});
}

void post_healthy(Ctx& c) {
  auto p = c.backend.published();
  if (!p->subnet) return c.fail({503, "no_fabric", "the SM has not finished a sweep yet"});
  auto at = port_param(c, *p->subnet);
  if (!at) return c.fail(at.error());
  const Guid node = p->subnet->fabric.node(at->first).guid;
  Reply reply = c.reply;
  mark_all(c.backend, {{node, at->second}}, json::array(), [reply](Result<json> r) {
    if (!r) {
      const bool io = r.error().code == Errc::kIo;
      return reply(
          error_response(io ? 503 : 404, io ? "not_saved" : "not_found", r.error().message));
    }
    reply(json_response(200, (*r)[0]));
  });
}

std::string status_time(int64_t unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a %b %d %H:%M:%S %Y", &tm);
  return buf;
}

// UFM's shape of one unhealthy port (its REST API guide, "Unhealthy Ports REST API").
json ufm_unhealthy(const sm::SubnetSnapshot* s, const perf::PortKey& key,
                   const perf::Unhealthy& u) {
  json j = {{"UnhealthyGUID", guid_ufm(key.first)},
            {"UnhealthyPortNumber", key.second},
            {"UnhealthyPortDname", std::to_string(key.second)},
            {"Condition", u.counter.empty() ? "MANUAL" : u.counter},
            {"State", "Warning"},
            {"StatusTime", status_time(u.since_unix_s)},
            {"Reason", u.reason},
            {"Policy", perf::policy_name(u.policy)}};
  std::string node = guid_ufm(key.first);
  if (s)
    if (auto n = s->fabric.find(Guid{key.first})) {
      const auto& nd = s->fabric.node(*n);
      if (!nd.description.empty()) node = nd.description;
      j["UnhealthyNodeType"] = nd.is_switch() ? "switch" : "host";
      if (key.second <= nd.num_ports && nd.ports[key.second].linked()) {
        const auto& port = nd.ports[key.second];
        const auto& peer = s->fabric.node(port.peer);
        const std::string pname =
            peer.description.empty() ? guid_ufm(peer.guid.value) : peer.description;
        j["PeerGUID"] = guid_ufm(peer.guid.value);
        j["PeerNode"] = pname;
        j["PeerNodeType"] = peer.is_switch() ? "switch" : "host";
        j["PeerPortNumber"] = port.peer_port;
        j["PeerPortDname"] = std::to_string(port.peer_port);
        j["PeerPort"] = pname + "/" + std::to_string(port.peer_port);
        const Lid plid =
            peer.is_switch() ? peer.ports[0].attrs.lid : peer.ports[port.peer_port].attrs.lid;
        j["PeerLID"] = std::to_string(plid.value);
      }
    }
  j["UnhealthyNode"] = node;
  j["UnhealthyPort"] = node + "/" + std::to_string(key.second);
  return j;
}

void ufm_get_unhealthy(Ctx& c) {
  auto p = c.backend.published();
  auto v = perf_view(*p);
  json out = json::array();
  for (const auto& [key, u] : v->unhealthy) out.push_back(ufm_unhealthy(p->subnet.get(), key, u));
  c.ok(out);
}

// PUT {"ports": ["GUID_PORT", ...], "devices": ["GUID", ...], "ports_policy": "HEALTHY"}.
void ufm_put_unhealthy(Ctx& c) {
  auto b = body_object(c.req, {"ports", "devices", "ports_policy"});
  if (!b) return c.fail(b.error());
  const auto pol = b->find("ports_policy");
  if (pol == b->end() || !pol->is_string())
    return c.fail({400, "bad_value", "\"ports_policy\" is required: \"HEALTHY\""});
  if (*pol != "HEALTHY")
    return c.fail({400, "unsupported",
                   "\"ports_policy\": only \"HEALTHY\" is served (weft marks ports unhealthy from "
                   "their counters)"});
  auto v = perf_view(*c.backend.published());
  std::vector<std::pair<Guid, PortNum>> todo;
  if (auto ports = b->find("ports"); ports != b->end()) {
    if (!ports->is_array()) return c.fail({400, "bad_value", "\"ports\" wants a list"});
    for (const auto& e : *ports) {
      const std::string s = e.is_string() ? e.get<std::string>() : "";
      const auto us = s.rfind('_');
      unsigned num = 0;
      auto g = us == std::string::npos ? std::nullopt : daemon::parse_port_guid(s.substr(0, us));
      const char* first = s.data() + (us == std::string::npos ? 0 : us + 1);
      auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), num);
      if (!g || ec != std::errc() || ptr != s.data() + s.size() || num == 0 || num > 254)
        return c.fail(
            {400, "bad_value", "\"ports\": \"" + s + "\" is not GUID_PORT (0002c9030060dc20_10)"});
      if (!v->unhealthy.count({g->value, PortNum(num)}))
        return c.fail({400, "bad_value", "\"ports\": " + s + " is not unhealthy"});
      todo.push_back({*g, PortNum(num)});
    }
  }
  if (auto devs = b->find("devices"); devs != b->end()) {
    if (!devs->is_array()) return c.fail({400, "bad_value", "\"devices\" wants a list"});
    for (const auto& e : *devs) {
      auto g = e.is_string() ? daemon::parse_port_guid(e.get<std::string>()) : std::nullopt;
      if (!g) return c.fail({400, "bad_value", "\"devices\": " + e.dump() + " is not a GUID"});
      for (const auto& [key, u] : v->unhealthy)
        if (key.first == g->value) todo.push_back({*g, key.second});
    }
  }
  std::sort(todo.begin(), todo.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.value, a.second) < std::pair(b.first.value, b.second);
  });
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  if (todo.empty()) return c.fail({400, "bad_value", "no \"ports\" or \"devices\" to mark"});
  Reply reply = c.reply;
  mark_all(c.backend, std::move(todo), json::array(), [reply](Result<json> r) {
    if (!r)
      return reply(
          error_response(r.error().code == Errc::kIo ? 503 : 400, "bad_value", r.error().message));
    reply(json_response(200, json::object()));
  });
}

}  // namespace

void register_health(std::vector<Api::Route>& r) {
  const auto kMon = Role::kMonitor, kOp = Role::kOperator;
  add_route(r, "GET", "/api/v1/ports/{guid}/{num}/counters", kMon,
            "a port's PerfMgt counters as the last counter sweep read them: values, counts since "
            "the read before, totals, rates, errors within the health window, its health",
            get_counters,
            {{"responses", {{"404", {{"description", "no such port, or not read (perfmgr)"}}}}}});
  add_route(r, "POST", "/api/v1/ports/{guid}/{num}/healthy", kOp,
            "clears a port's unhealthy mark (on disk before the answer); the next sweep routes "
            "over it again or enables it",
            post_healthy,
            {{"responses",
              {{"200", {{"description", "cleared"}}},
               {"404", {{"description", "not marked unhealthy"}}}}}});
  add_route(r, "GET", "/api/v1/health", kMon,
            "link health: unhealthy ports and why, the last counter sweep, top ports by errors "
            "within the window and by PortXmitWait, ?top=N",
            get_health, {{"query", {{"top", "how many ports each top list holds (10)"}}}});
  add_ufm_route(r, "GET", "/app/unhealthy_ports", kMon,
                "UFM: the ports marked unhealthy, in UFM's shape", ufm_get_unhealthy);
  add_ufm_route(r, "PUT", "/app/unhealthy_ports", kOp,
                "UFM: {\"ports\": [\"GUID_PORT\"], \"devices\": [\"GUID\"], \"ports_policy\": "
                "\"HEALTHY\"} marks them healthy",
                ufm_put_unhealthy);
}

}  // namespace weft::rest
