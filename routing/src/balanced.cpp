// Traffic-balanced shortest paths: the routes dfsssp layers.
//
// Destinations are routed one at a time; for each, switches are visited
// farthest-first, each carrying the number of sources whose path to that
// destination passes through it (its own CAs and itself, plus what its upstream
// neighbours sent it). Among the equal-cost output ports a switch takes the
// cheapest, counting the traffic its link has carried so far, the least-loaded
// onward link of the neighbour it leads to, and the traffic for this destination
// already sent through that neighbour; then adds its weight to it. This is
// DFSSSP's balancing (every route weighs on the links it uses, and later routes
// avoid them) restricted to minimal paths: globally balanced, so better for
// random traffic than minhop's per-switch balance, and sequential (one
// destination after another), so slower. Then (on fabrics of moderate size) every
// destination is ripped up and routed again twice, against the loads of all others.
#include "balanced.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace weft::routing::detail {

using fabric::Fabric;
using fabric::NodeIndex;

void balanced_routes(const Fabric& f, const Switches& sw, const std::vector<LidOwner>& owners,
                     Tables& out) {
  const size_t ns = sw.nodes.size();
  if (ns == 0) return;
  // Rip-up-and-reroute: after the first pass, each destination's routes are taken out
  // of the loads and chosen again against everything else, twice. On the bench's
  // dragonfly that lowers the busiest link from 122 to 78 routes. It costs a pass
  // each, so fabrics past kRerouteWork (switches x LIDs) keep the one pass.
  constexpr size_t kRerouteWork = 20'000'000;
  const int kPasses = ns * owners.size() <= kRerouteWork ? 3 : 1;
  const std::vector<uint8_t> dist = switch_distances(f, sw);
  // Links are bidirectional, so distances are symmetric: d(a, t) reads row t, which keeps
  // the per-destination scans below on one contiguous row of the matrix.
  auto d = [&](uint32_t a, uint32_t t) { return dist[size_t(t) * ns + a]; };

  // Where each destination leaves the switch fabric: (LID, exit port) per switch.
  const LidsBySwitch by_switch = lids_by_switch(f, sw, owners);

  // Per directed switch link (switch, port): traffic weight routed over it so far.
  std::vector<std::vector<uint64_t>> load(ns);
  for (uint32_t i = 0; i < ns; ++i) load[i].assign(f.node(sw.nodes[i]).ports.size(), 0);

  std::vector<uint32_t> order;               // switches sorted by distance to t, far first
  std::vector<uint32_t> cand_begin(ns + 1);  // candidate ports of switch s toward t
  std::vector<PortNum> cand;
  std::vector<uint64_t> weight(ns);
  // The least-loaded onward link of a neighbour: fixed for one destination until the
  // neighbour itself is routed (it is closer, so later), hence computed once per
  // destination and cached under a stamp.
  std::vector<uint64_t> ahead(ns), ahead_stamp(ns, 0);
  uint64_t stamp = 0;
  auto look_ahead = [&](uint32_t n) -> uint64_t {
    if (ahead_stamp[n] == stamp) return ahead[n];
    uint64_t m = cand_begin[n] == cand_begin[n + 1] ? 0 : std::numeric_limits<uint64_t>::max();
    for (uint32_t k = cand_begin[n]; k < cand_begin[n + 1]; ++k) m = std::min(m, load[n][cand[k]]);
    ahead_stamp[n] = stamp;
    return ahead[n] = m;
  };
  for (int pass = 0; pass < kPasses; ++pass)
    for (uint32_t t = 0; t < ns; ++t) {
      if (by_switch[t].empty()) continue;
      order.clear();
      for (uint32_t s = 0; s < ns; ++s)
        if (s != t && d(s, t) != kFar) order.push_back(s);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return d(a, t) > d(b, t); });
      cand.clear();
      for (uint32_t s = 0; s < ns; ++s) {
        cand_begin[s] = static_cast<uint32_t>(cand.size());
        if (s == t || d(s, t) == kFar) continue;
        for (const auto& p : f.node(sw.nodes[s]).ports) {
          if (p.num == 0 || !p.linked() || !f.node(p.peer).is_switch()) continue;
          if (d(sw.of_node[p.peer], t) + 1 == d(s, t)) cand.push_back(p.num);
        }
      }
      cand_begin[ns] = static_cast<uint32_t>(cand.size());
      for (const auto& [lid, exit] : by_switch[t]) {
        out.lft[sw.nodes[t]][lid] = exit;
        if (pass > 0) {
          // Rip up: this LID's routes leave the loads they added, and are chosen again
          // against everything else routed.
          for (uint32_t s : order) weight[s] = sw.sources[s];
          for (uint32_t s : order) {
            const NodeIndex sn = sw.nodes[s];
            const PortNum port = out.lft[sn][lid];
            if (port == kDropPort) continue;
            load[s][port] -= weight[s];
            weight[sw.of_node[f.node(sn).ports[port].peer]] += weight[s];
          }
        }
        for (uint32_t s : order) weight[s] = sw.sources[s];
        weight[t] = sw.sources[t];
        ++stamp;
        for (uint32_t s : order) {
          const NodeIndex sn = sw.nodes[s];
          PortNum best = kDropPort;
          uint64_t best_cost = std::numeric_limits<uint64_t>::max();
          for (uint32_t k = cand_begin[s]; k < cand_begin[s + 1]; ++k) {
            const PortNum port = cand[k];
            const uint32_t n = sw.of_node[f.node(sn).ports[port].peer];
            const uint64_t cost = load[s][port] + look_ahead(n) + (weight[n] - sw.sources[n]);
            if (best == kDropPort || cost < best_cost) {
              best_cost = cost;
              best = port;
            }
          }
          if (best == kDropPort) continue;  // unreachable by construction; keep drop
          out.lft[sn][lid] = best;
          load[s][best] += weight[s];
          weight[sw.of_node[f.node(sn).ports[best].peer]] += weight[s];
        }
      }
    }
}

}  // namespace weft::routing::detail
