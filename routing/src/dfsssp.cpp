#include "dfsssp.hpp"

#include <chrono>
#include <string>

#include "balanced.hpp"
#include "layering.hpp"
#include "switch_graph.hpp"

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
  const auto& sw = st->sw;
  const auto t_balance = std::chrono::steady_clock::now();
  detail::balanced_routes(f, sw, st->owners, out, o.large_fabric);
  if (o.progress)
    o.progress("dfsssp: balanced routes computed in " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - t_balance)
                                  .count()) +
               " ms; checking dependencies");

  // A repair of the previous tables, when only links went away (as minhop's and
  // updn's): an entry whose previous hop still leads one step nearer keeps it (any mix
  // of such hops is loop-free and minimal); the others take the fresh balanced routes'
  // hop. The layers are not assumed: the repaired routes are checked and layered as
  // fresh ones are. (Each path keeping its previous SL closed a cycle on every fabric
  // and cut tried, tori, random graphs and dragonflies: a path-wide SL does not survive
  // a reroute; keeping them needs layering of the rerouted paths alone.)
  const std::optional<std::vector<NodeIndex>> was =
      detail::repairable(o, name(), f, st->owners, /*layered=*/true);
  if (was) {
    const Tables& prev = *o.previous.tables;
    const size_t ns = sw.nodes.size();
    const std::vector<uint8_t> dist = detail::switch_distances(f, sw);
    const detail::LidsBySwitch lids_at = detail::lids_by_switch(f, sw, st->owners);
    for (uint32_t t = 0; t < ns; ++t)
      for (uint32_t s = 0; s < ns; ++s) {
        if (s == t || lids_at[t].empty()) continue;
        const NodeIndex n = sw.nodes[s];
        const auto& nd = f.node(n);
        const auto& before = prev.lft[(*was)[n]];
        for (auto [lid, exit] : lids_at[t]) {
          const PortNum p = lid < before.size() ? before[lid] : kDropPort;
          if (p == 0 || p > nd.num_ports || !nd.ports[p].linked()) continue;
          const NodeIndex m = nd.ports[p].peer;
          if (!f.node(m).is_switch()) continue;
          if (size_t(dist[size_t(t) * ns + sw.of_node[m]]) + 1 == dist[size_t(t) * ns + s])
            out.lft[n][lid] = p;
        }
      }
  }
  auto repaired = [&] {
    if (!was) return;
    out.repaired = true;
    out.rerouted = detail::changed_entries(sw, out, *o.previous.tables, *was, st->owners);
    out.notes.push_back(
        "dfsssp: only links went away since the previous tables: " + std::to_string(out.rerouted) +
        " (switch, LID) entries changed, each whose hop still leads one step "
        "nearer kept; the routes layered afresh");
  };
  // The layering's first step (its initial order) finds whether the routes need it.
  const auto layered = detail::layer_paths(f, sw, st->owners, out, o, "dfsssp", "balanced routes",
                                           {}, /*stop_if_acyclic=*/true);
  if (!layered) return std::unexpected(layered.error());
  if (layered->acyclic) {
    out.notes.push_back("dfsssp: the balanced routes have no dependency cycle: 1 VL");
    out.deadlock_free = true;
    if (o.adaptive) detail::parallel_link_groups(f, sw, out);
    repaired();
    return out;
  }
  out.notes.push_back(
      "dfsssp: " + std::to_string(layered->whole) + " LIDs whole on VL 0; of the other " +
      std::to_string(layered->deferred) + ", " + std::to_string(layered->branches) +
      " branches whole, then " + std::to_string(layered->paths) + " paths one by one; " +
      std::to_string(int(out.vls)) + " VLs, each acyclic; SL i must map to VL i on every port");
  out.deadlock_free = true;
  if (o.adaptive) detail::parallel_link_groups(f, sw, out);
  repaired();
  return out;
}

}  // namespace weft::routing
