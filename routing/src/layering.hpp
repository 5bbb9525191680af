// routing/src/layering.hpp — fixed routes spread over virtual layers so that each
// layer's channel dependency graph is acyclic (DFSSSP's layering: Domke, Hoefler,
// Nagel). dfsssp layers its balanced routes with it; updn the routes of a degraded
// tree whose bridged pairs close a cycle on one VL.
//
// Each LID's whole in-tree goes to layer 0 when it fits there (the CAs' LIDs first);
// the paths of the LIDs that do not fit go a branch, then a path at a time, longest
// first, into the lowest layer their dependencies leave acyclic. Each layer keeps a
// topological order of its channels, maintained incrementally (dependency_layer.hpp):
// a new dependency a->b that agrees with it costs nothing, one that does not searches
// forward from b among the channels ordered before a and either finds a (a cycle:
// refused, and remembered) or moves what it found to just after a. Searches are
// bounded (short first, long before a new layer is opened); an abandoned search
// refuses the dependency, which is always safe. A path's layer is its SL, and SL i
// travels on VL i.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "switch_graph.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/engine.hpp"

namespace weft::routing::detail {

// A repair's previous layers: the path from each switch to each LID whose hops are all
// as in the previous tables keeps its previous SL (every hop it kept is in that SL's
// layer already, and a layer that loses paths stays acyclic; it is re-checked all the
// same, and a path that no longer fits is placed afresh); the others are placed afresh.
struct KeptLayers {
  const Tables* prev = nullptr;                         // their path_sl (empty: all on SL 0)
  const std::vector<fabric::NodeIndex>* was = nullptr;  // per node: its node in prev's fabric
  // Per LID (up to out.top_lid): the switches (numbers, ascending) whose path to it took
  // a hop unlike the previous tables'.
  std::vector<std::vector<uint32_t>> changed;
};

struct Layering {
  uint64_t whole = 0;     // LIDs whose whole in-tree went to layer 0
  uint64_t deferred = 0;  // LIDs layered a branch or a path at a time
  uint64_t branches = 0;  // branches placed whole
  uint64_t paths = 0;     // paths placed one by one
  // With KeptLayers: the paths of the mixed LIDs (a path changed, or one not on SL 0)
  // that kept their previous SL; the changed paths, and kept ones a layer refused,
  // placed afresh.
  uint64_t kept = 0;
  uint64_t afresh = 0;
  // The routes' dependencies on one VL close no cycle (only with stop_if_acyclic: then
  // nothing was layered, and out is untouched).
  bool acyclic = false;
};

// Sets out.path_sl (every switch's path to every LID) and out.vls. Refuses
// (Refusal::kVirtualLanes) when more layers than o.max_vls would be needed: "`who`:
// the `what` need more than N VLs". `who` also prefixes o.progress's reports.
// The LIDs in `later` are tried after all others (updn: those whose routes turn). With
// stop_if_acyclic, routes whose dependencies on one VL close no cycle are left as they
// are (Layering::acyclic): the check costs nothing beyond the layers' initial order.
// With `keep` (a repair), the LIDs none of whose paths changed and all of whose paths
// were on SL 0 go whole to layer 0 first, as fresh ones do; then each other LID's kept
// paths go to their previous layers, a layer's at once; then the changed paths (and
// any kept ones a layer refused) one by one, as the deferred paths are.
std::expected<Layering, Failure> layer_paths(const fabric::Fabric& f, const Switches& sw,
                                             const std::vector<LidOwner>& owners, Tables& out,
                                             const Options& o, std::string_view who,
                                             std::string_view what,
                                             const std::vector<uint16_t>& later = {},
                                             bool stop_if_acyclic = false,
                                             const KeptLayers* keep = nullptr);

}  // namespace weft::routing::detail
