#include "weft/simulator/route_report.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include <sys/resource.h>

#include "weft/routing/verify.hpp"

namespace weft::simulator {

using nlohmann::json;

namespace {

// The process's user and system CPU so far, in ms (every thread's).
std::pair<double, double> process_times() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return 1e3 * double(t.tv_sec) + double(t.tv_usec) / 1e3; };
  return {ms(u.ru_utime), ms(u.ru_stime)};
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace {

// Flow-level traffic, static beside adaptive, per pattern asked for.
json traffic_of(const fabric::Fabric& f, const routing::Tables& t, const Grading& g,
                std::vector<std::pair<fabric::NodeIndex, PortNum>> order) {
  json traffic = json::object();
  routing::TrafficOptions to;
  to.seed = g.traffic_seed;
  to.order = std::move(order);
  to.rule = g.ar_rule;
  for (routing::Pattern p : g.traffic) {
    json sides = json::object();
    for (bool adaptive : {false, true}) {
      const auto r = routing::run_traffic(f, t, p, adaptive, to);
      sides[adaptive ? "adaptive" : "static"] = {{"flows", r.flows},
                                                 {"blackholed_flows", r.blackholed},
                                                 {"max_link_flows", r.max_link_flows},
                                                 {"min_flow_throughput", r.min_flow_throughput},
                                                 {"mean_flow_throughput", r.mean_flow_throughput}};
    }
    traffic[routing::pattern_name(p)] = std::move(sides);
  }
  return traffic;
}

void add_traffic(const fabric::Fabric& f, const routing::Tables& t, const Grading& g, json& j) {
  if (!g.traffic.empty()) j["traffic"] = traffic_of(f, t, g, g.pattern.order);
}

}  // namespace

json traffic(const fabric::Fabric& f, const routing::Tables& t, const Grading& g) {
  return traffic_of(f, t, g, g.pattern.order);
}

json traffic_until_reroute(const fabric::Fabric& intact, const fabric::Fabric& broken,
                           const std::string& spec, const routing::Options& ro, const Grading& g) {
  auto chain = routing::EngineChain::parse(spec);
  if (!chain) return {{"error", chain.error().message}};
  auto r = chain->compute(intact, ro);
  if (!r.tables) return {{"error", spec + " routes nothing before the failure: " + r.summary()}};
  // The ranks as on the whole fabric: the same flows before and after the failure.
  return traffic_of(broken, *r.tables, g,
                    g.pattern.order.empty() ? routing::topology_order(intact) : g.pattern.order);
}

// The analyzer's grades of one set of tables, as JSON fields.
void grade(const fabric::Fabric& f, const routing::Tables& t, const Grading& g, json& j) {
  if (!g.any) {
    j["status"] = "ok";
    j["reason"] = "not graded (--no-grade)";
    j["vls"] = std::max<int>(1, t.vls);
    add_traffic(f, t, g, j);
    return;
  }
  const auto m = routing::analyze(f, t);
  const auto v = routing::verify_lfts(f, t);
  const auto c = routing::channel_dependencies(f, t);
  j["status"] = v.ok() ? "ok" : "incomplete";
  j["reason"] = v.ok() ? "" : v.first_problem;
  j["reachable_pct"] = m.reachable_pct;
  j["loops"] = m.looping;
  j["switch_lid_pairs_unreachable"] = v.unreachable;
  j["max_link_load"] = m.max_link_load;
  j["mean_link_load"] = m.mean_link_load;
  j["unused_links"] = m.unused_links;
  j["stretch_max"] = m.stretch_max;
  j["max_hops"] = m.max_hops;
  j["vls"] = c.vls;
  if (!t.ar_group.empty()) {
    // Adaptive groups: how many distinct, and how many entries have one (and its size).
    uint64_t sets = 0, entries = 0, ports = 0;
    for (size_t n = 0; n < t.ar_group.size(); ++n) {
      sets += t.ar_sets[n].size();
      for (uint16_t g : t.ar_group[n])
        if (g != routing::Tables::kNoArGroup) ++entries, ports += t.ar_sets[n][g].size();
    }
    j["ar_groups"] = sets;
    j["ar_entries"] = entries;
    j["ar_mean_ports"] = entries ? double(ports) / double(entries) : 0.0;
  }
  j["cdg_acyclic"] = c.acyclic;
  j["cdg_dependencies"] = c.dependencies;
  if (g.patterns) {
    const auto p = routing::traffic_patterns(f, t, g.pattern);
    j["ebb"] = p.ebb;
    j["ebb_bisections"] = p.bisections;
    j["shift_max_congestion"] = p.shift_max_congestion;
    j["shift_mean_congestion"] = p.shift_mean_congestion;
    j["shift_rounds"] = p.shifts;
    j["shift_congested_rounds"] = p.shift_congested_rounds;
  }
  add_traffic(f, t, g, j);
}

json route_one(const fabric::Fabric& f, const std::string& spec, const routing::Options& ro,
               const Grading& g, routing::Tables* keep) {
  json j{{"engine", spec}, {"switches", f.num_switches()}, {"cas", f.num_endpoints()}};
  auto chain = routing::EngineChain::parse(spec);
  if (!chain) {
    j["status"] = "error";
    j["reason"] = chain.error().message;
    return j;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();  // the process's CPU, every thread's
  const auto [user0, sys0] = process_times();
  auto r = chain->compute(f, ro);
  j["compute_ms"] = ms_since(t0);
  // The same work on one core: what a busy machine or a core-bound SM pays. Apart: the
  // engine's own work (user) and the kernel's (system: mostly zeroing the pages the
  // fresh tables first touch).
  if (g.process_cpu) {
    j["compute_cpu_ms"] = 1e3 * double(std::clock() - c0) / CLOCKS_PER_SEC;
    const auto [user1, sys1] = process_times();
    j["compute_user_ms"] = user1 - user0;
    j["compute_sys_ms"] = sys1 - sys0;
  }
  json fb = json::array();
  for (const auto& x : r.fallbacks)
    fb.push_back({{"engine", x.engine},
                  {"refusal", routing::refusal_name(x.failure.kind)},
                  {"reason", x.failure.message}});
  j["fallbacks"] = fb;
  if (!r.tables) {
    j["status"] = "refused";
    j["refusal"] = routing::refusal_name(r.fallbacks.back().failure.kind);
    j["reason"] = r.fallbacks.back().failure.message;
    return j;
  }
  j["routed_by"] = r.engine;
  j["notes"] = r.tables->notes;
  grade(f, *r.tables, g, j);
  if (keep) *keep = std::move(*r.tables);
  return j;
}

}  // namespace weft::simulator
