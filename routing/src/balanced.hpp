// Internal to routing/: traffic-balanced minimal routes (see balanced.cpp).
#pragma once

#include "switch_graph.hpp"

namespace weft::routing::detail {

// Fills out.lft (sized by start()) with traffic-balanced shortest-path routes.
// `dist`: switch_distances(f, sw); `by_switch`: lids_by_switch(f, sw, owners) (the
// caller's, which a repair has computed already).
// `large_fabric`: switches x LIDs past which one pass is made, destinations in pairs.
// With `keep_set` (a repair), every entry out.lft holds already (not kDropPort; a hop
// one step nearer) is kept and weighs on the loads as a choice would; only the others
// are chosen, in one pass.
void balanced_routes(const fabric::Fabric& f, const Switches& sw,
                     const std::vector<LidOwner>& owners, const std::vector<uint8_t>& dist,
                     const LidsBySwitch& by_switch, Tables& out, size_t large_fabric,
                     bool keep_set = false);

}  // namespace weft::routing::detail
