#include "dfsssp.hpp"

#include <chrono>
#include <optional>
#include <string>

#include "balanced.hpp"
#include "layering.hpp"
#include "parallel.hpp"
#include "switch_graph.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {
// Per LID up to out.top_lid: the switches (numbers, ascending) whose path to it takes a
// hop unlike the previous tables' (`was`: each node's there). Only the LIDs some entry
// changed for are walked: each switch's path down the LID's in-tree, once per switch
// (a path is as before when its first hop is and the rest, from the next switch, is).
std::vector<std::vector<uint32_t>> changed_paths(const Fabric& f, const detail::Switches& sw,
                                                 const Tables& out, const Tables& prev,
                                                 const std::vector<NodeIndex>& was,
                                                 const std::vector<LidOwner>& owners) {
  const size_t ns = sw.nodes.size(), nl = size_t(out.top_lid) + 1;
  auto before = [&](uint32_t s, uint16_t lid) {
    const auto& row = prev.lft[was[sw.nodes[s]]];
    return lid < row.size() ? row[lid] : kDropPort;
  };
  const std::vector<uint16_t> lids = detail::changed_lids(sw, out, prev, was, owners);
  std::vector<std::vector<uint32_t>> changed(nl);
  detail::parallel_for(lids.size(), [&](size_t i) {
    const uint16_t lid = lids[i];
    enum : uint8_t { kUnknown, kSame, kChanged, kOnPath };
    std::vector<uint8_t> state(ns, kUnknown);
    std::vector<uint32_t> path;
    for (uint32_t s = 0; s < ns; ++s) {
      path.clear();
      uint8_t result = kSame;
      for (uint32_t u = s; u != ~0u;) {
        if (state[u] != kUnknown) {
          result = state[u] == kOnPath ? uint8_t{kChanged} : state[u];  // (a loop: not as before)
          break;
        }
        state[u] = kOnPath;
        path.push_back(u);
        const PortNum p = out.lft[sw.nodes[u]][lid];
        if (p != before(u, lid)) {
          result = kChanged;
          break;
        }
        const auto& nd = f.node(sw.nodes[u]);
        u = ~0u;
        if (p != 0 && p != kDropPort && p <= nd.num_ports && nd.ports[p].linked() &&
            f.node(nd.ports[p].peer).is_switch())
          u = sw.of_node[nd.ports[p].peer];
      }
      for (const uint32_t v : path) state[v] = result;
    }
    for (uint32_t s = 0; s < ns; ++s)
      if (state[s] == kChanged) changed[lid].push_back(s);
  });
  return changed;
}
}  // namespace

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
  // A repair of the previous tables, when only links went away (as minhop's and
  // updn's): an entry whose previous hop still leads one step nearer keeps it (any mix
  // of such hops is loop-free and minimal) and weighs on the loads as the balancing
  // counts them; only the others are balanced, against those loads (balanced_routes'
  // keep_set: one pass over the destinations in the balancing's order). Every path whose
  // hops are all as before keeps its SL (detail::KeptLayers: its layer is re-checked, not
  // assumed); the changed paths are placed afresh into the layers the kept ones leave
  // acyclic. (A path that changed cannot simply keep its SL: that closed a cycle on every
  // fabric and cut tried, tori, random graphs and dragonflies.) Should the kept layers
  // leave no room within o.max_vls, every path is layered afresh.
  const std::optional<std::vector<NodeIndex>> was =
      detail::repairable(o, name(), f, st->owners, /*layered=*/true);
  const std::vector<uint8_t> dist = detail::switch_distances(f, sw);
  const detail::LidsBySwitch lids_at = detail::lids_by_switch(f, sw, st->owners);
  if (was) {
    const Tables& prev = *o.previous.tables;
    const size_t ns = sw.nodes.size();
    // Each switch's row on its own, in parallel; distances are symmetric, so d(x, t) is
    // read from x's row.
    detail::parallel_for(ns, [&](size_t si) {
      const auto s = static_cast<uint32_t>(si);
      const NodeIndex n = sw.nodes[s];
      const auto& nd = f.node(n);
      const auto& before = prev.lft[(*was)[n]];
      auto& row = out.lft[n];
      for (uint32_t t = 0; t < ns; ++t) {
        if (s == t) continue;
        for (auto [lid, exit] : lids_at[t]) {
          const PortNum p = lid < before.size() ? before[lid] : kDropPort;
          if (p == 0 || p > nd.num_ports || !nd.ports[p].linked()) continue;
          const NodeIndex m = nd.ports[p].peer;
          if (!f.node(m).is_switch()) continue;
          if (size_t(dist[size_t(sw.of_node[m]) * ns + t]) + 1 == dist[size_t(s) * ns + t])
            row[lid] = p;
        }
      }
    });
  }
  const auto t_balance = std::chrono::steady_clock::now();
  detail::balanced_routes(f, sw, st->owners, dist, lids_at, out, o.large_fabric,
                          /*keep_set=*/bool(was));
  if (o.progress)
    o.progress("dfsssp: balanced routes computed in " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - t_balance)
                                  .count()) +
               " ms; checking dependencies");

  std::optional<detail::KeptLayers> keep;
  if (was) {
    keep.emplace();
    keep->prev = o.previous.tables;
    keep->was = &*was;
    keep->changed = changed_paths(f, sw, out, *o.previous.tables, *was, st->owners);
  }
  std::string sls = "; the routes layered afresh";
  auto repaired = [&] {
    if (!was) return;
    out.repaired = true;
    out.rerouted = detail::changed_entries(sw, out, *o.previous.tables, *was, st->owners);
    out.notes.push_back(
        "dfsssp: only links went away since the previous tables: " + std::to_string(out.rerouted) +
        " (switch, LID) entries changed, each whose hop still leads one step "
        "nearer kept" +
        sls);
  };
  // The layering's first step (its initial order) finds whether the routes need it
  // (a repair of layered tables keeps their layers even so).
  const bool was_layered = was && !o.previous.tables->path_sl.empty();
  auto layered = detail::layer_paths(f, sw, st->owners, out, o, "dfsssp", "balanced routes", {},
                                     /*stop_if_acyclic=*/!was_layered, keep ? &*keep : nullptr);
  if (!layered && keep && layered.error().kind == Refusal::kVirtualLanes) {
    sls = "; the kept SLs left too few VLs, so the routes layered afresh";
    out.path_sl.clear();  // (the try's; an acyclic answer leaves it as it finds it)
    out.vls = 1;
    layered = detail::layer_paths(f, sw, st->owners, out, o, "dfsssp", "balanced routes", {},
                                  /*stop_if_acyclic=*/true);
  } else if (layered && keep && !layered->acyclic) {
    sls =
        "; the LIDs on VL 0 alone kept there whole, the others' paths kept their SL where every "
        "hop stayed (" +
        std::to_string(layered->kept) + " paths), " + std::to_string(layered->afresh) +
        " paths placed afresh";
  }
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
