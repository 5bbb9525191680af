// Balanced min-hop routing.
//
// Distances: one Boost.Graph BFS per switch over a compressed_sparse_row_graph
// of the switches.
//
// Balance: destinations are routed one at a time; for each, switches are
// visited farthest-first, each carrying the number of sources whose path to
// that destination passes through it (its own CAs and itself, plus what its
// upstream neighbours sent it). Among the equal-cost output ports a switch takes
// the cheapest, counting the traffic its link has carried so far, the
// least-loaded onward link of the neighbour it leads to, and the traffic for this
// destination already sent through that neighbour; then adds its weight to it.
// Balancing by the traffic that actually passes a switch, not by a per-port
// count of all LIDs, keeps upper tree levels from collapsing onto a few links
// when LIDs are numbered in topological order; the look-ahead keeps independent
// switches (aggregation switches of different pods) from all picking the same
// next switch and piling onto its down-link.
#pragma once

#include "weft/routing/engine.hpp"

namespace weft::routing {

class MinHopEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "minhop"; }
  Routed compute(const fabric::Fabric& f, const Options& o) const override;
};

}  // namespace weft::routing
