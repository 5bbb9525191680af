// weft/routing/torus.hpp — where each switch of a torus or mesh sits. The dor engine
// routes by these coordinates, and the topology page draws tori on their grid.
//
//   // From a torus description (torus_config; OpenSM's torus-2QoS.conf):
//   auto c = weft::routing::torus_coordinates(fabric, spec);
//   c->of_node[n];  // {x, y, z} of switch n (empty for CAs)
//   // Or with no description, from the links alone:
//   if (auto spec = weft::routing::detect_torus(fabric)) ...
#pragma once

#include <expected>
#include <optional>
#include <vector>

#include "weft/routing/engine.hpp"

namespace weft::routing {

struct TorusCoordinates {
  TorusSpec spec;
  std::vector<std::vector<int>> of_node;  // per node index: one coordinate per dimension
};

// Every switch labelled from the description's seed (see dor.hpp for how), checked:
// every switch once, coordinates unique, every switch-to-switch link explained. Fewer
// switches than the shape has places: the places of the missing (failed) ones stay
// empty.
// Refuses (kTopology, kInvalidInput) naming the switch where the fabric and the
// description part ways.
std::expected<TorusCoordinates, Failure> torus_coordinates(const fabric::Fabric& f,
                                                           const TorusSpec& spec);

// The description of a torus or mesh read off the switch graph, when it is one:
// a torus whose rings all have radix 5 or more, or a mesh (every radix 2 or more),
// in 1 to 3 dimensions, with no switch off the grid. Walks go straight ahead from a
// seed (a corner for a mesh; the lowest GUID): the next switch is the neighbour that
// closes no square with the one behind. The result is then checked whole by
// torus_coordinates. Radix-3 and radix-4 rings close squares of their own (a 4x4
// torus is a 4-cube) and are not detected: give torus_config for them; nor is a shape
// with a switch missing.
std::optional<TorusSpec> detect_torus(const fabric::Fabric& f);

}  // namespace weft::routing
