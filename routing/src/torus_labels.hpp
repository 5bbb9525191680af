// Internal to routing/: a torus or mesh labelled switch by switch, for dor's routes
// and torus_coordinates (weft/routing/torus.hpp).
#pragma once

#include <cstdint>
#include <expected>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "switch_graph.hpp"
#include "weft/routing/torus.hpp"

namespace weft::routing::detail {

constexpr uint32_t kNoSwitch = std::numeric_limits<uint32_t>::max();

struct TorusLabels {
  std::vector<std::vector<uint32_t>> nbrs;                       // distinct switch neighbours
  std::vector<std::vector<std::pair<uint32_t, PortNum>>> ports;  // (neighbour, port) per link
  // lab[s][2d] = the +d neighbour, lab[s][2d+1] = the -d one (kNoSwitch: none).
  std::vector<std::vector<uint32_t>> lab;
  std::vector<std::vector<int>> coord;  // per switch number
  uint32_t seed = kNoSwitch;
  std::string shape;            // "5x5 torus"
  size_t missing_links = 0;     // links of the shape between two switches it has (failed)
  size_t missing_switches = 0;  // places of the shape no switch holds (failed)
};

// The place of coordinates `c` in the shape, x fastest: 0 .. product of the radices - 1.
inline size_t place_of(const TorusSpec& T, const std::vector<int>& c) {
  size_t i = 0;
  for (size_t d = c.size(); d-- > 0;) i = i * size_t(T.radix[d]) + size_t(c[d]);
  return i;
}

std::expected<TorusLabels, Failure> label_torus(const fabric::Fabric& f, const Switches& sw,
                                                const TorusSpec& T);

}  // namespace weft::routing::detail
