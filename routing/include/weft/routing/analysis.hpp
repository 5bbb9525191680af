// weft/routing/analysis.hpp — grades a set of LFTs on a fabric, whoever wrote
// them (a weft engine, or tables read back from devices): reachability of every
// CA-to-CA pair, forwarding loops, path stretch against the minimum hop count,
// and the load on every directed inter-switch link when every CA sends to every
// other CA once (all-to-all).
//
//   auto m = weft::routing::analyze(fabric, tables);
//   m.reachable_pct; m.max_link_load; m.stretch_max;
#pragma once

#include <cstdint>

#include "weft/routing/engine.hpp"

namespace weft::routing {

struct RouteMetrics {
  uint64_t ca_pairs = 0;   // (source CA port, destination CA LID) pairs, source != destination
  uint64_t reachable = 0;  // pairs whose path ends at the destination
  uint64_t looping = 0;    // pairs whose path cycles
  double reachable_pct = 0;
  uint64_t isl_count = 0;      // directed inter-switch links
  uint64_t max_link_load = 0;  // routes over the busiest directed inter-switch link
  double mean_link_load = 0;
  uint64_t unused_links = 0;     // directed inter-switch links no route uses
  uint32_t max_hops = 0;         // longest path, in switch-to-switch hops
  double stretch_max = 1.0;      // max over reachable pairs of (hops taken + 1) / (min hops + 1)
  uint64_t stretched_pairs = 0;  // pairs that take more than the minimum
};

RouteMetrics analyze(const fabric::Fabric& f, const Tables& t);

// The channel dependency graph on one VL: a channel is a directed inter-switch
// link; channel a depends on channel b when some route (from any switch, to any
// LID in use) leaves a's far end through b. Routes are deadlock-free on one VL
// when this graph has no cycle (Dally and Seitz).
struct CdgReport {
  uint64_t channels = 0;
  uint64_t dependencies = 0;
  bool acyclic = true;
  size_t cycle_length = 0;  // of one cycle found, when not acyclic
};
CdgReport channel_dependencies(const fabric::Fabric& f, const Tables& t);

}  // namespace weft::routing
