#include "dfsssp.hpp"

#include <chrono>
#include <string>

#include "balanced.hpp"
#include "layering.hpp"
#include "switch_graph.hpp"
#include "weft/routing/analysis.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

Routed DfssspEngine::compute(const Fabric& f, const Options& o) const {
  // Paths: traffic-balanced minimal routes (balanced.cpp). Adaptive groups: the parallel
  // links to each route's next switch. The balancing may have kept each VL acyclic only
  // by spreading LIDs over distinct parallel links, so the chain checks every layer over
  // the groups' ports, and drops all of them if a cycle closes anywhere.
  auto st = detail::start(f);
  if (!st) {
    st.error().message = "dfsssp: " + st.error().message;
    return std::unexpected(st.error());
  }
  Tables out = std::move(st->tables);
  const auto t_balance = std::chrono::steady_clock::now();
  detail::balanced_routes(f, st->sw, st->owners, out, o.large_fabric);
  if (o.progress)
    o.progress("dfsssp: balanced routes computed in " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - t_balance)
                                  .count()) +
               " ms; checking dependencies");
  if (channel_dependencies(f, out).acyclic) {
    out.notes.push_back("dfsssp: the balanced routes have no dependency cycle: 1 VL");
    out.deadlock_free = true;
    if (o.adaptive) detail::parallel_link_groups(f, st->sw, out);
    return out;
  }

  const auto layered =
      detail::layer_paths(f, st->sw, st->owners, out, o, "dfsssp", "balanced routes");
  if (!layered) return std::unexpected(layered.error());
  out.notes.push_back(
      "dfsssp: " + std::to_string(layered->whole) + " LIDs whole on VL 0; of the other " +
      std::to_string(layered->deferred) + ", " + std::to_string(layered->branches) +
      " branches whole, then " + std::to_string(layered->paths) + " paths one by one; " +
      std::to_string(int(out.vls)) + " VLs, each acyclic; SL i must map to VL i on every port");
  out.deadlock_free = true;
  if (o.adaptive) detail::parallel_link_groups(f, st->sw, out);
  return out;
}

}  // namespace weft::routing
