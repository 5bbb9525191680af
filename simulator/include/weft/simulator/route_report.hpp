// weft/simulator/route_report.hpp — one routing engine (or fallback chain) run on a
// fabric and graded by the analyzer, as the JSON object `weft route --json` prints per
// engine and POST /api/v1/whatif answers: status, reachability, loops, link loads,
// stretch, VLs and the channel-dependency check, eBB and shift all-to-all.
//
//   auto j = route_one(fabric, "ftree,updn", routing::Options{}, Grading{}, nullptr);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "weft/fabric/fabric.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/engine.hpp"
#include "weft/routing/traffic.hpp"

namespace weft::simulator {

struct Grading {
  bool any = true;       // false: compute only (timing and memory runs)
  bool patterns = true;  // eBB and shift
  // compute_cpu_ms: the process's CPU over the computation, every thread's, and its
  // user and system parts (compute_user_ms, compute_sys_ms); only where nothing else
  // runs in the process (weft route), not beside an SM and REST.
  bool process_cpu = true;
  routing::PatternOptions pattern;
  // Flow-level traffic (routing/traffic.hpp), static beside adaptive, per pattern:
  // "traffic": {P: {"static": {...}, "adaptive": {...}}}.
  std::vector<routing::Pattern> traffic;
  uint64_t traffic_seed = 1;
  routing::ArRule ar_rule = routing::ArRule::kSplit;
};

// The analyzer's grades of one set of tables, as JSON fields of `j`.
void grade(const fabric::Fabric& f, const routing::Tables& t, const Grading& g, nlohmann::json& j);
// Flow-level traffic through tables `t` (static beside adaptive), per pattern `g` asks
// for: the "traffic" object of grade().
nlohmann::json traffic(const fabric::Fabric& f, const routing::Tables& t, const Grading& g);
// Flow-level traffic on `broken` (links failed, node indices as in `intact`) through the
// tables `spec` computes on `intact`: what the traffic meets after the failure, until the
// SM reroutes. The same shape as grade()'s "traffic".
nlohmann::json traffic_until_reroute(const fabric::Fabric& intact, const fabric::Fabric& broken,
                                     const std::string& spec, const routing::Options& ro,
                                     const Grading& g);
// Routes `f` with the chain `spec` and grades the result; `keep` gets the tables.
nlohmann::json route_one(const fabric::Fabric& f, const std::string& spec,
                         const routing::Options& ro, const Grading& g, routing::Tables* keep);

}  // namespace weft::simulator
