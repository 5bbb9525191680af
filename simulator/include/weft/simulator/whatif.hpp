// weft/simulator/whatif.hpp — failures for offline what-ifs: take links or
// switches out of a fabric (by name, or links at random with a seed) and keep
// what an SM would still see: the largest connected part. LIDs already assigned
// stay as they were, as a running SM keeps them.
//
//   weft::simulator::Failures fl{.random_links = 4, .seed = 7};
//   auto r = weft::simulator::apply_failures(fabric, fl);  // fabric now degraded
//   r->failed;  // "leaf3" (0x...) port 19 -- "spine2" (0x...) port 4, ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/fabric/fabric.hpp"

namespace weft::simulator {

struct Failures {
  std::vector<std::string> links;     // "NAME:PORT" (either end of the link)
  std::vector<std::string> switches;  // node names or GUIDs (0x...)
  uint32_t random_links = 0;          // inter-switch links, chosen with `seed`
  uint64_t seed = 1;
  // Keep the nodes a failure cuts off (without links or LIDs), so that node indices stay
  // those of the fabric before it (traffic on the tables routed before the failure).
  bool keep_cut_off = false;
};

struct FailureReport {
  std::vector<std::string> failed;  // what was taken out, one line each
  size_t cut_off_nodes = 0;         // nodes no longer connected to the largest part
};

// Modifies `f`: failed links are disconnected, failed switches lose every link,
// and nodes outside the largest connected part are dropped. Names that match
// nothing, ports without a link, and more random failures than inter-switch links
// are errors that say which.
Result<FailureReport> apply_failures(fabric::Fabric& f, const Failures& fl);

}  // namespace weft::simulator
