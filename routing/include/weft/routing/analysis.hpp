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

// The channel dependency graph, one per VL: a channel is a directed
// inter-switch link; on VL v, channel a depends on channel b when some path on v
// (from any switch, to any LID in use) enters b straight from a. A path's VL is
// its SL (Tables::path_sl; SL i on VL i), 0 for single-VL tables; with hop_vl, each
// hop's VL is its switch's map of the SL, the input and the output port, and a
// dependency may lead from one VL to another (one graph over VL and channel). Routes are
// deadlock-free when every VL's graph has no cycle (Dally and Seitz).
struct CdgReport {
  uint64_t channels = 0;
  uint64_t dependencies = 0;  // summed over VLs
  bool acyclic = true;        // every VL's graph
  uint32_t vls = 1;           // VLs the paths use
  bool part = false;          // the up/down checks' cheaper part, not every channel
  int cyclic_vl = -1;         // a VL with a cycle, when not acyclic
  size_t cycle_length = 0;    // of one cycle found, when not acyclic
};
CdgReport channel_dependencies(const fabric::Fabric& f, const Tables& t);
// The same over every port a packet may take under adaptive routing: on each switch, to
// each LID, the static port and every port of its AR group (Tables::ar_*). Layered
// tables: per VL, every switch a packet that entered on that VL may reach by any choice.
CdgReport adaptive_dependencies(const fabric::Fabric& f, const Tables& t);
// The same, exact and cheaper, for tables that route up*/down* (as updown_dependencies):
// a cycle must pass a switch where some choice arrives going down and some choice
// leaves going up, which only routes to `turning` may do; only the turning switches
// and those above them are built and searched. Anything else gets the full check.
CdgReport adaptive_updown_dependencies(const fabric::Fabric& f, const Tables& t,
                                       const std::vector<uint32_t>& height,
                                       const std::vector<uint16_t>& turning);

// channel_dependencies, exact and cheaper, for single-VL tables that route
// up*/down*: `height` (per node) orders the switches, a link leading up toward the
// greater height (no link may join equal heights), and a route leaves a switch going
// up only if it did not arrive going down, except the routes to the LIDs in
// `turning`, which may turn anywhere. Every dependency that does not turn from down
// to up follows one order of the channels (up channels by rising head, then down
// channels by falling head), so a cycle passes a turn; from one turn to the next it
// climbs, then descends, so it stays among the switches where routes to `turning`
// turn and the switches above them. Only their channels are built and searched, and
// `channels` and `dependencies` count that part. The promise is checked, not
// trusted (one look at every entry's next hop): layered tables, heights equal across
// a link, and a route to any other LID that turns from down to up get the full check.
// kTurningOnly is for an engine's own check of tables it built (it decides there
// whether to layer): every route to a LID outside `turning` was built up*down*, so
// only routes to `turning` are looked at for turns. The chain's check before
// programming is always kEveryEntry.
enum class TurnScan : uint8_t { kEveryEntry, kTurningOnly };
CdgReport updown_dependencies(const fabric::Fabric& f, const Tables& t,
                              const std::vector<uint32_t>& height,
                              const std::vector<uint16_t>& turning,
                              TurnScan scan = TurnScan::kEveryEntry);

// Flow-level grades under traffic patterns among CA ports (one flow per source
// and destination; a flow's path follows the tables from the source's switch).
//  - Effective bisection bandwidth (the ORCS method, Hoefler et al.): random
//    bisections, each a random perfect matching of the CAs in which both ends of
//    each pair send to each other; a flow gets 1 / (the most flows on any link of
//    its path), 0 when it never arrives; eBB is the mean over flows and patterns,
//    1.0 being full bandwidth for every flow.
//  - Shift all-to-all: in rank order (topology_order() unless given), round c has
//    rank i send to rank (i + c) mod N; its congestion is the most flows on one
//    link. Every round is run when N - 1 <= max_shifts, else max_shifts rounds
//    spread evenly.
struct PatternOptions {
  uint32_t bisections = 100;
  uint64_t seed = 1;
  uint32_t max_shifts = 1024;
  std::vector<std::pair<fabric::NodeIndex, PortNum>> order;  // rank -> CA port; empty = topology
};
struct PatternMetrics {
  double ebb = 0;
  uint32_t bisections = 0;
  uint32_t shifts = 0;                  // rounds run
  uint32_t shift_max_congestion = 0;    // over the rounds
  double shift_mean_congestion = 0;     // mean over the rounds of each round's worst link
  uint32_t shift_congested_rounds = 0;  // rounds where some link carries two flows or more
};
PatternMetrics traffic_patterns(const fabric::Fabric& f, const Tables& t,
                                const PatternOptions& o = {});

}  // namespace weft::routing
