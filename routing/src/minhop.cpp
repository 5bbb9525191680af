#include "minhop.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "parallel.hpp"
#include "switch_graph.hpp"
#include "weft/splitmix.hpp"

namespace weft::routing {

using detail::index_switches;
using detail::kFar;
using detail::switch_distances;
using detail::Switches;
using fabric::Fabric;
using fabric::NodeIndex;

Routed MinHopEngine::compute(const Fabric& f, const Options& o) const {
  auto st = detail::start(f);
  if (!st) return std::unexpected(st.error());
  auto& [sw, owners, out] = *st;
  const size_t ns = sw.nodes.size();
  if (ns == 0) return std::move(out);
  const std::vector<uint8_t> dist = switch_distances(f, sw);

  // Destinations grouped by the switch that delivers them, with the exit port there.
  const detail::LidsBySwitch at = detail::lids_by_switch(f, sw, owners);

  // Every switch's row on its own, in parallel.
  detail::parallel_for(ns, [&](size_t si) {
    const auto s = static_cast<uint32_t>(si);
    const NodeIndex sn = sw.nodes[s];
    auto& row = out.lft[sn];
    for (auto [lid, exit] : at[s]) row[lid] = exit;
    struct Link {
      PortNum port;
      const uint8_t* dist;  // the neighbour's distances (row = column: symmetric)
    };
    std::vector<Link> links;
    for (const auto& p : f.node(sn).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch())
        links.push_back({p.num, &dist[size_t(sw.of_node[p.peer]) * ns]});
    const uint8_t* mine = &dist[size_t(s) * ns];
    // Targets in an order of this switch's own: neighbours that take the same order
    // would pile their choices onto the same next switches (the per-port-counter
    // collapse of upper tree levels); independent orders spread them.
    // The order: a Fisher-Yates shuffle seeded by this switch.
    std::vector<uint32_t> order(ns);
    for (uint32_t t = 0; t < ns; ++t) order[t] = t;
    uint64_t state = mix64(s + 1);
    for (size_t i = ns - 1; i > 0; --i) {
      state = mix64(state + SplitMix64::kGolden);
      std::swap(order[i], order[state % (i + 1)]);
    }
    // Candidates toward every target at once, link by link (contiguous distance rows):
    // bit k of next[t] says link k is one hop nearer to t.
    const size_t words = (links.size() + 63) / 64;
    std::vector<uint64_t> next(ns * words, 0);
    for (size_t k = 0; k < links.size(); ++k) {
      const uint8_t* d = links[k].dist;
      const uint64_t bit = uint64_t(1) << (k & 63);
      uint64_t* col = next.data() + k / 64;
      for (uint32_t t = 0; t < ns; ++t)
        if (d[t] + 1 == mine[t]) col[size_t(t) * words] |= bit;
    }
    std::vector<uint32_t> used(links.size(), 0);  // LIDs routed per link
    std::vector<uint32_t> cand(links.size());     // link numbers
    for (const uint32_t t : order) {
      if (t == s || at[t].empty() || mine[t] == kFar) continue;
      // The target's LIDs round robin over the candidates, from the least used.
      size_t n = 0, start = 0;
      for (size_t w = 0; w < words; ++w)
        for (uint64_t bits = next[t * words + w]; bits; bits &= bits - 1) {
          const auto k = static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
          if (used[k] < used[cand[start]] || n == 0) start = n;
          cand[n++] = k;
        }
      if (n == 0) continue;
      const auto& lids = at[t];
      for (size_t j = 0, c = start; j < lids.size(); ++j, c = c + 1 == n ? 0 : c + 1) {
        row[lids[j].first] = links[cand[c]].port;
        ++used[cand[c]];
      }
    }
  });
  if (o.adaptive) detail::parallel_link_groups(f, sw, out);
  return std::move(out);
}

}  // namespace weft::routing
