// Internal to routing/: traffic-balanced minimal routes (see balanced.cpp).
#pragma once

#include "switch_graph.hpp"

namespace weft::routing::detail {

// Fills out.lft (sized by start()) with traffic-balanced shortest-path routes.
// `large_fabric`: switches x LIDs past which one pass is made, destinations in pairs.
void balanced_routes(const fabric::Fabric& f, const Switches& sw,
                     const std::vector<LidOwner>& owners, Tables& out, size_t large_fabric);

}  // namespace weft::routing::detail
