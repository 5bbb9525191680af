// weft/sm/path_query.hpp — a route as the switches will forward it: the hops from one
// end port to another through the programmed forwarding tables of a snapshot, and the
// PathRecord the SA answers for the pair (SL, MTU, rate, P_Key), asked of a real SA
// agent so that the two can never disagree.
//
//   auto hops = trace_route(*snap, src, dst);           // hops.hops, hops.problem
//   auto pr = path_record(*snap, sa_context, src, dst); // nullopt: the SA has no path
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/sm/sa.hpp"
#include "weft/sm/snapshot.hpp"

namespace weft::sm {

using EndPort = std::pair<fabric::NodeIndex, PortNum>;

struct RouteHop {
  fabric::NodeIndex node;
  PortNum in = 0, out = 0;  // 0: where the route starts or ends
};

struct TracedRoute {
  std::vector<RouteHop> hops;  // the source's node first, the destination's last
  bool complete = false;
  std::string problem;  // why not, when not complete: a drop, a loop, a dead end
};

// Follows the tables of `snap` toward `dst`'s base LID.
TracedRoute trace_route(const SubnetSnapshot& snap, EndPort src, EndPort dst);

// The PathRecord weft's SA gives from `src` to `dst` (base LIDs), from `ctx` (its
// snapshot and QoS settings).
std::optional<PathInfo> path_record(const SaContext& ctx, EndPort src, EndPort dst);

}  // namespace weft::sm
