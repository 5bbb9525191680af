// Deadlock-free routing on any topology (DFSSSP-style: Domke, Hoefler, Nagel).
//
// Paths: minimal routes balanced by the traffic each carries, destination by
// destination (balanced.cpp; DFSSSP's balancing, kept to minimal paths).
//
// Layers: when the channel dependency graph of all routes has a cycle, the
// paths (one per source switch and destination LID) are spread over virtual
// layers so that each layer's dependency graph is acyclic. Paths are placed
// longest first, each into the lowest layer that its dependencies leave acyclic
// (checked incrementally: a new dependency a->b closes a cycle exactly when b
// already reaches a in that layer). A path's layer is its SL, and SL i travels
// on VL i, so the SA answers path queries with it. The engine refuses when more
// layers than Options::max_vls would be needed.
#pragma once

#include "weft/routing/engine.hpp"

namespace weft::routing {

class DfssspEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "dfsssp"; }
  Routed compute(const fabric::Fabric& f, const Options& o) const override;
};

}  // namespace weft::routing
