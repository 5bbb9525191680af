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

#include "parallel.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace weft::routing::detail {

using fabric::Fabric;
using fabric::NodeIndex;

void balanced_routes(const Fabric& f, const Switches& sw, const std::vector<LidOwner>& owners,
                     Tables& out, size_t large_fabric) {
  const size_t ns = sw.nodes.size();
  if (ns == 0) return;
  // Rip-up-and-reroute: after the first pass, each destination's routes are taken out
  // of the loads and chosen again against everything else, twice. On the bench's
  // dragonfly that lowers the busiest link from 122 to 78 routes. It costs a pass
  // each, so fabrics past Options::large_fabric (switches x LIDs) keep the one pass.
  const int kPasses = ns * owners.size() <= large_fabric ? 3 : 1;
  const std::vector<uint8_t> dist = switch_distances(f, sw);
  // Links are bidirectional, so distances are symmetric: d(a, t) reads row t, which keeps
  // the per-destination scans below on one contiguous row of the matrix.
  auto d = [&](uint32_t a, uint32_t t) { return dist[size_t(t) * ns + a]; };

  // Where each destination leaves the switch fabric: (LID, exit port) per switch.
  const LidsBySwitch by_switch = lids_by_switch(f, sw, owners);

  // Switch links in port order (the order decides ties), flat: switch s's are
  // [link_begin[s], link_begin[s + 1]); each with the switch it leads to.
  struct Link {
    PortNum port;
    uint32_t to;
  };
  std::vector<Link> links;
  std::vector<uint32_t> link_begin(ns + 1, 0);
  for (uint32_t s = 0; s < ns; ++s) {
    for (const auto& p : f.node(sw.nodes[s]).ports)
      if (p.num != 0 && p.linked() && f.node(p.peer).is_switch())
        links.push_back({p.num, sw.of_node[p.peer]});
    link_begin[s + 1] = static_cast<uint32_t>(links.size());
  }
  // Per switch, per port: the switch it leads to (~0 for none).
  std::vector<std::vector<uint32_t>> peer_sw(ns);
  for (uint32_t s = 0; s < ns; ++s) {
    peer_sw[s].assign(f.node(sw.nodes[s]).ports.size(), ~0u);
    for (uint32_t l = link_begin[s]; l < link_begin[s + 1]; ++l)
      peer_sw[s][links[l].port] = links[l].to;
  }

  // Per directed switch link (switch, port): traffic weight routed over it so far.
  std::vector<std::vector<uint64_t>> load(ns);
  for (uint32_t i = 0; i < ns; ++i) load[i].assign(f.node(sw.nodes[i]).ports.size(), 0);

  // On large fabrics (one pass) destinations go in fixed pairs, the two of a pair on two
  // cores: each reads the loads as they were before the pair and keeps its own
  // additions apart, merged once both are done (radix-56 tree: 29 -> 19 s). A fixed
  // pair size keeps the tables the same on any machine; smaller fabrics go one by one.
  const size_t kBatch = kPasses == 1 ? 2 : 1;
  struct Worker {
    std::vector<uint32_t> order;       // switches sorted by distance to t, far first
    std::vector<uint32_t> cand_begin;  // candidate links of switch s toward t
    std::vector<Link> cand;
    // This destination's choices, [LID of t][switch], written to the rows at its end:
    // row by row, the destination's (mostly consecutive) LIDs share cache lines, where
    // writing each LID down every row missed the cache at every switch.
    std::vector<PortNum> choice;
    std::vector<uint64_t> weight;
    // The least-loaded onward link of a neighbour: fixed for one destination until the
    // neighbour itself is routed (it is closer, so later), hence computed once per
    // destination and cached under a stamp.
    std::vector<uint64_t> ahead, ahead_stamp;
    uint64_t stamp = 0;
    std::vector<std::vector<int64_t>> delta;  // this destination's additions to `load`
    std::vector<std::pair<uint32_t, PortNum>> touched;
  };
  std::vector<Worker> workers(kBatch);
  for (Worker& w : workers) {
    w.cand_begin.assign(ns + 1, 0);
    w.weight.assign(ns, 0);
    w.ahead.assign(ns, 0);
    w.ahead_stamp.assign(ns, 0);
    w.delta.resize(ns);
    for (uint32_t i = 0; i < ns; ++i) w.delta[i].assign(load[i].size(), 0);
  }
  auto route = [&](uint32_t t, int pass, Worker& w) {
    auto cur = [&](uint32_t s, PortNum p) { return uint64_t(int64_t(load[s][p]) + w.delta[s][p]); };
    auto add = [&](uint32_t s, PortNum p, int64_t x) {
      if (w.delta[s][p] == 0) w.touched.emplace_back(s, p);
      w.delta[s][p] += x;
    };
    auto look_ahead = [&](uint32_t n) -> uint64_t {
      if (w.ahead_stamp[n] == w.stamp) return w.ahead[n];
      uint64_t m =
          w.cand_begin[n] == w.cand_begin[n + 1] ? 0 : std::numeric_limits<uint64_t>::max();
      for (uint32_t k = w.cand_begin[n]; k < w.cand_begin[n + 1]; ++k)
        m = std::min(m, cur(n, w.cand[k].port));
      w.ahead_stamp[n] = w.stamp;
      return w.ahead[n] = m;
    };
    auto& order = w.order;
    auto& cand = w.cand;
    auto& cand_begin = w.cand_begin;
    auto& weight = w.weight;
    order.clear();
    for (uint32_t s = 0; s < ns; ++s)
      if (s != t && d(s, t) != kFar) order.push_back(s);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return d(a, t) > d(b, t); });
    cand.clear();
    const uint8_t* const dt = &dist[size_t(t) * ns];  // d(., t)
    for (uint32_t s = 0; s < ns; ++s) {
      cand_begin[s] = static_cast<uint32_t>(cand.size());
      if (s == t || dt[s] == kFar) continue;
      for (uint32_t l = link_begin[s]; l < link_begin[s + 1]; ++l)
        if (dt[links[l].to] + 1 == dt[s]) cand.push_back(links[l]);
    }
    cand_begin[ns] = static_cast<uint32_t>(cand.size());
    const auto& lids = by_switch[t];
    w.choice.assign(lids.size() * ns, kDropPort);
    for (size_t j = 0; j < lids.size(); ++j) {
      const auto [lid, exit] = lids[j];
      PortNum* const chosen = &w.choice[j * ns];
      out.lft[sw.nodes[t]][lid] = exit;
      if (pass > 0) {
        // Rip up: this LID's routes leave the loads they added, and are chosen again
        // against everything else routed.
        for (uint32_t s : order) weight[s] = sw.sources[s];
        for (uint32_t s : order) {
          const PortNum port = out.lft[sw.nodes[s]][lid];
          if (port == kDropPort) continue;
          add(s, port, -int64_t(weight[s]));
          weight[peer_sw[s][port]] += weight[s];
        }
      }
      for (uint32_t s : order) weight[s] = sw.sources[s];
      weight[t] = sw.sources[t];
      ++w.stamp;
      for (uint32_t s : order) {
        PortNum best = kDropPort;
        uint32_t best_to = 0;
        uint64_t best_cost = std::numeric_limits<uint64_t>::max();
        for (uint32_t k = cand_begin[s]; k < cand_begin[s + 1]; ++k) {
          const auto [port, n] = cand[k];
          const uint64_t cost = cur(s, port) + look_ahead(n) + (weight[n] - sw.sources[n]);
          if (best == kDropPort || cost < best_cost) {
            best_cost = cost;
            best = port;
            best_to = n;
          }
        }
        if (best == kDropPort) continue;  // unreachable by construction; keep drop
        chosen[s] = best;
        add(s, best, int64_t(weight[s]));
        weight[best_to] += weight[s];
      }
    }
    for (uint32_t s = 0; s < ns; ++s) {
      if (s == t) continue;
      PortNum* const row = out.lft[sw.nodes[s]].data();
      for (size_t j = 0; j < lids.size(); ++j) row[lids[j].first] = w.choice[j * ns + s];
    }
  };
  std::vector<uint32_t> dests;
  for (uint32_t t = 0; t < ns; ++t)
    if (!by_switch[t].empty()) dests.push_back(t);
  for (int pass = 0; pass < kPasses; ++pass)
    for (size_t b = 0; b < dests.size(); b += kBatch) {
      const size_t n = std::min(kBatch, dests.size() - b);
      parallel_for(
          n, [&](size_t i) { route(dests[b + i], pass, workers[i]); }, 1);
      for (size_t i = 0; i < n; ++i) {  // merged in a fixed order
        Worker& w = workers[i];
        for (auto [s, p] : w.touched) {
          load[s][p] = uint64_t(int64_t(load[s][p]) + w.delta[s][p]);
          w.delta[s][p] = 0;
        }
        w.touched.clear();
      }
    }
}

}  // namespace weft::routing::detail
