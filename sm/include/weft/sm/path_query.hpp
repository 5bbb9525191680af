// weft/sm/path_query.hpp — a route as the switches will forward it: the hops from one
// end port to another through the programmed forwarding tables of a snapshot (the
// PathRecord the SA answers for the pair is sa::path_record, weft/sa/sa.hpp).
//
//   auto hops = trace_route(*snap, src, dst);           // hops.hops, hops.problem
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// The LID packets to an end port are sent to: a switch's port 0's, else the port's own.
uint16_t base_lid(const fabric::Fabric& f, EndPort e);

// Follows the tables of `snap` toward `dst`'s base LID.
TracedRoute trace_route(const SubnetSnapshot& snap, EndPort src, EndPort dst);

}  // namespace weft::sm
