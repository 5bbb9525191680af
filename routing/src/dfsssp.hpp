// Deadlock-free routing on any topology (DFSSSP-style: Domke, Hoefler, Nagel).
//
// Paths: minimal routes balanced by the traffic each carries, destination by
// destination (balanced.cpp; DFSSSP's balancing, kept to minimal paths).
//
// Layers: when the channel dependency graph of all routes has a cycle, the
// paths (one per source switch and destination LID) are spread over virtual
// layers so that each layer's dependency graph is acyclic. Each LID's whole
// in-tree goes to layer 0 when it fits there; the paths of the LIDs that do not
// fit go one at a time, longest first, into the lowest layer their dependencies
// leave acyclic. Each layer keeps a topological order of its channels,
// maintained incrementally (dependency_layer.hpp): a new dependency a->b that
// agrees with it costs nothing, one that does not searches forward from b among
// the channels ordered before a and either finds a (a cycle: refused, and
// remembered) or moves what it found to just after a. Searches are bounded
// (short first, long before a new layer is opened); an abandoned search refuses
// the dependency, which is always safe. A path's layer is its SL, and SL i
// travels on VL i, so the SA answers path queries with it. The engine refuses
// when more layers than Options::max_vls would be needed.
#pragma once

#include "weft/routing/engine.hpp"

namespace weft::routing {

class DfssspEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "dfsssp"; }
  Routed compute(const fabric::Fabric& f, const Options& o) const override;
};

}  // namespace weft::routing
