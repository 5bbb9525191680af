#include "weft/sm/path_query.hpp"

#include "weft/routing/walk.hpp"

namespace weft::sm {

using fabric::NodeIndex;

uint16_t base_lid(const fabric::Fabric& f, EndPort e) {
  const auto& nd = f.node(e.first);
  return nd.ports[nd.is_switch() ? 0 : e.second].attrs.lid.value;
}

TracedRoute trace_route(const SubnetSnapshot& snap, EndPort src, EndPort dst) {
  TracedRoute r;
  const auto& f = snap.fabric;
  const uint16_t dlid = base_lid(f, dst);
  const auto end = routing::walk(
      f, snap.tables.lft, src.first, src.second, dlid,
      [&](NodeIndex n, PortNum in) {
        return n == dst.first && (f.node(n).is_switch() || in == dst.second);
      },
      [&](NodeIndex n, PortNum in, PortNum out) {
        r.hops.push_back({n, in, out});
      },
      f.size());
  switch (end.kind) {
    case routing::WalkEnd::kArrived:
      r.hops.push_back({end.node, end.in, 0});
      r.complete = true;
      break;
    case routing::WalkEnd::kAtEndPort:
      r.hops.push_back({end.node, end.in, 0});
      r.problem = "the route ends at another end port";
      break;
    case routing::WalkEnd::kNoLink:
      r.hops.push_back({end.node, 0, end.out});
      r.problem = "the source port has no link";
      break;
    case routing::WalkEnd::kLoop:
      r.problem = "a loop: the route comes back to " + fabric::port_ref(f, end.node, 0);
      break;
    case routing::WalkEnd::kAtSwitch:
    case routing::WalkEnd::kNoRoute:
      r.hops.push_back({end.node, end.in, 0});
      r.problem = fabric::port_ref(f, end.node, 0) + " has no route to LID " + std::to_string(dlid);
      break;
    case routing::WalkEnd::kDeadEnd:
      r.hops.push_back({end.node, end.in, end.out});
      r.problem = fabric::port_ref(f, end.node, end.out) + " leads nowhere";
      break;
  }
  return r;
}

}  // namespace weft::sm
