// weft/routing/traffic.hpp — a flow-level traffic model: a pattern of flows among the CA
// ports, each flow routed hop by hop, statically by the LFTs or adaptively over the AR
// port groups (spread over the group's ports, or by the least loaded: ArRule), then
// max-min fair rates over links of capacity 1. It judges adaptive routing by its effect: the
// busiest link and the rate of the slowest flow, static beside adaptive, on the same tables.
//
//   auto s = weft::routing::run_traffic(fabric, tables, Pattern::kPermutation, false);
//   auto a = weft::routing::run_traffic(fabric, tables, Pattern::kPermutation, true);
//   a.max_link_flows <= s.max_link_flows;
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "weft/result.hpp"
#include "weft/routing/engine.hpp"

namespace weft::routing {

// In rank order (topology_order() unless given), N ranks:
//  shift        rank i sends to rank (i + N/2) mod N (every flow leaves its half)
//  permutation  a random derangement (seeded)
//  all-to-all   every rank to every other
//  allreduce    a ring: rank i to rank i + 1 mod N
//  hotspot      every rank to rank 0 (many-to-one)
enum class Pattern : uint8_t { kShift, kPermutation, kAllToAll, kAllreduce, kHotspot };
Result<Pattern> parse_pattern(std::string_view name);
const char* pattern_name(Pattern p);

// How a switch uses a flow's AR group: kSplit sends each packet by another port, so the
// flow is spread evenly over the group's ports (NVIDIA's per-packet AR); kLeastLoaded
// sends the whole flow by the port carrying the least placed so far (the static port
// on a tie). Either way a dead port is left for the group's others at once (SHIELD).
enum class ArRule : uint8_t { kSplit, kLeastLoaded };

struct TrafficOptions {
  uint64_t seed = 1;
  std::vector<std::pair<fabric::NodeIndex, PortNum>> order;  // rank -> CA port; empty = topology
  ArRule rule = ArRule::kSplit;
};

struct TrafficResult {
  uint64_t flows = 0;
  uint64_t blackholed = 0;  // flows all or part of which never arrive (rate 0)
  // The most flows on one directed link (CA links included); a split flow counts by the
  // share of it the link carries.
  double max_link_flows = 0;
  double min_flow_throughput = 0;   // max-min fair rates, a link's capacity 1
  double mean_flow_throughput = 0;  // over every flow, blackholed ones at 0
};

// Adaptive needs the tables' AR groups (Options::adaptive); without them it is static.
TrafficResult run_traffic(const fabric::Fabric& f, const Tables& t, Pattern p, bool adaptive,
                          const TrafficOptions& o = {});

}  // namespace weft::routing
