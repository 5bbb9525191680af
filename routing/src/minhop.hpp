// Balanced min-hop routing.
//
// Distances: all pairs of switches, by bit-parallel BFS (switch_graph.hpp).
//
// Routes: every switch fills its own row, in parallel with the others. Toward each
// destination switch its candidates are the links one hop nearer (found for all
// destinations at once from the neighbours' distance rows); the destination's
// LIDs go round robin over them, starting at the candidate that has carried the
// fewest LIDs so far. Each switch takes the destination switches in an order of
// its own (a shuffle seeded by the switch): when every switch takes them in the
// same order, per-port counters line up across a tree's levels and pile the
// traffic of whole pods onto a few upper links (OpenSM's minhop on 3-level fat
// trees); independent orders spread it. A switch's choices depend only on the
// distances, so the rows are independent, the same input gives the same tables,
// and the radix-56 3-level tree (3,920 switches, 47,824 LIDs) routes in about a
// second on two cores.
#pragma once

#include "weft/routing/engine.hpp"

namespace weft::routing {

class MinHopEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "minhop"; }
  Routed compute(const fabric::Fabric& f, const Options& o) const override;
};

}  // namespace weft::routing
