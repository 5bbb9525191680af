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
                     const std::vector<uint8_t>& dist, const LidsBySwitch& by_switch, Tables& out,
                     size_t large_fabric, bool keep_set) {
  const size_t ns = sw.nodes.size();
  if (ns == 0) return;
  // Rip-up-and-reroute: after the first pass, each destination's routes are taken out
  // of the loads and chosen again against everything else, twice. On the bench's
  // dragonfly that lowers the busiest link from 122 to 78 routes. It costs a pass
  // each, so fabrics past Options::large_fabric (switches x LIDs) keep the one pass.
  const int kPasses = ns * owners.size() <= large_fabric && !keep_set ? 3 : 1;
  // Links are bidirectional, so distances are symmetric: d(a, t) reads row t, which keeps
  // the per-destination scans below on one contiguous row of the matrix.
  auto d = [&](uint32_t a, uint32_t t) { return dist[size_t(t) * ns + a]; };

  // by_switch: where each destination leaves the switch fabric, (LID, exit port) per switch.

  // Every switch port's slot in one flat array: switch s's port p is port_base[s] + p.
  std::vector<uint32_t> port_base(ns + 1, 0);
  for (uint32_t s = 0; s < ns; ++s)
    port_base[s + 1] = port_base[s] + static_cast<uint32_t>(f.node(sw.nodes[s]).ports.size());
  // Switch links in port order (the order decides ties), flat: switch s's are
  // [link_begin[s], link_begin[s + 1]); each with its port's slot and the switch it
  // leads to.
  struct Link {
    PortNum port;
    uint32_t slot;
    uint32_t to;
  };
  std::vector<Link> links;
  std::vector<uint32_t> link_begin(ns + 1, 0);
  std::vector<uint32_t> peer_sw(port_base[ns], ~0u);  // per port slot: the switch it leads to
  for (uint32_t s = 0; s < ns; ++s) {
    for (const auto& p : f.node(sw.nodes[s]).ports)
      if (p.num != 0 && p.linked() && f.node(p.peer).is_switch()) {
        links.push_back({p.num, port_base[s] + p.num, sw.of_node[p.peer]});
        peer_sw[port_base[s] + p.num] = sw.of_node[p.peer];
      }
    link_begin[s + 1] = static_cast<uint32_t>(links.size());
  }

  // On large fabrics (one pass) destinations go in fixed pairs, the two of a pair on two
  // cores: each reads the loads as they were before the pair plus its own additions,
  // and takes the other's once both are done (radix-56 tree: 29 -> 19 s). A fixed pair
  // size keeps the tables the same on any machine; smaller fabrics go one by one.
  const size_t kBatch = kPasses == 1 ? 2 : 1;
  struct Worker {
    // Per port slot: the traffic weight routed over the link so far, as this worker
    // sees it (every destination merged, and its own additions of the batch). 32 bits
    // hold it: at most every source (LID-holding port) toward every LID, under 49,152^2
    // < 2^32; half the bytes every LID reads through (on the radix-56 tree the loads
    // are read once per LID, and the reads were the time).
    std::vector<uint32_t> load;
    std::vector<std::pair<uint32_t, int64_t>> added;  // this batch's additions, for the others
    std::vector<uint32_t> order;                      // switches sorted by distance to t, far first
    std::vector<uint32_t> cand_begin;                 // candidate links of switch s toward t
    std::vector<uint32_t> cand_slot, cand_to;         // each candidate's port slot and switch
    std::vector<PortNum> cand_port;
    // This destination's choices, [LID of t][switch], written to the rows at its end:
    // row by row, the destination's (mostly consecutive) LIDs share cache lines, where
    // writing each LID down every row missed the cache at every switch.
    std::vector<PortNum> choice;
    uint32_t t = 0;  // the destination they are for
    // Per switch, for the LID being routed: the load of its least-loaded onward link
    // (fixed until the switch itself chooses: it is closer, so later), and that plus the
    // weight its upstream neighbours have sent it so far. A candidate's cost is its
    // link's load plus the second at the switch it leads to.
    std::vector<uint64_t> ahead, base;
    std::vector<uint32_t> at_least;  // per switch: its onward links whose load is `ahead`
    std::vector<uint64_t> weight;    // a rip-up's weights
  };
  std::vector<Worker> workers(kBatch);
  for (Worker& w : workers) {
    w.load.assign(port_base[ns], 0);
    w.cand_begin.assign(ns + 1, 0);
    w.weight.assign(ns, 0);
    w.ahead.assign(ns, 0);
    w.base.assign(ns, 0);
    w.at_least.assign(ns, 0);
  }
  auto route = [&](uint32_t t, int pass, Worker& w) {
    auto add = [&](uint32_t slot, int64_t x) {
      w.load[slot] = static_cast<uint32_t>(int64_t(w.load[slot]) + x);
      if (kBatch > 1) w.added.emplace_back(slot, x);
    };
    auto& order = w.order;
    auto& cand_begin = w.cand_begin;
    auto& cand_slot = w.cand_slot;
    auto& cand_to = w.cand_to;
    auto& ahead = w.ahead;
    auto& base = w.base;
    auto& weight = w.weight;
    const uint32_t* const load = w.load.data();
    order.clear();
    for (uint32_t s = 0; s < ns; ++s)
      if (s != t && d(s, t) != kFar) order.push_back(s);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return d(a, t) > d(b, t); });
    const auto& lids = by_switch[t];
    w.choice.assign(lids.size() * ns, kDropPort);
    if (keep_set)  // the kept entries, row by row (the destination's LIDs share lines)
      for (uint32_t s = 0; s < ns; ++s) {
        const PortNum* const row = out.lft[sw.nodes[s]].data();
        for (size_t j = 0; j < lids.size(); ++j) w.choice[j * ns + s] = row[lids[j].first];
      }
    // A repair: the kept entries weigh on the loads as the pass below would add them (a
    // switch's own sources and what its upstream neighbours sent it); the others choose
    // as it would, their candidates' costs found when they choose. A candidate's cost is
    // its link's load, the least load of the onward links of the switch it leads to (a
    // switch nearer t; those loads move only when that switch itself adds, later, so
    // this is what the pass below keeps in `ahead`), and what that switch was sent so far.
    if (keep_set) {
      const uint8_t* const dt = &dist[size_t(t) * ns];  // d(., t)
      auto onward = [&](uint32_t u) {  // the least load of u's links one step nearer t
        uint32_t m = 0;
        bool any = false;
        for (uint32_t l = link_begin[u]; l < link_begin[u + 1]; ++l)
          if (dt[links[l].to] + 1 == dt[u] && (!any || load[links[l].slot] < m))
            m = load[links[l].slot], any = true;
        return uint64_t(m);
      };
      for (size_t j = 0; j < lids.size(); ++j) {
        out.lft[sw.nodes[t]][lids[j].first] = lids[j].second;
        PortNum* const chosen = &w.choice[j * ns];
        for (const uint32_t s : order) weight[s] = sw.sources[s];
        weight[t] = 0;
        for (const uint32_t s : order) {
          uint32_t slot = ~0u;
          if (chosen[s] != kDropPort) {
            slot = port_base[s] + chosen[s];
          } else {
            uint64_t best_cost = std::numeric_limits<uint64_t>::max();
            for (uint32_t l = link_begin[s]; l < link_begin[s + 1]; ++l) {
              const uint32_t to = links[l].to;
              if (dt[to] + 1 != dt[s]) continue;
              const uint64_t cost = uint64_t(load[links[l].slot]) +
                                    (to == t ? 0 : onward(to) + weight[to] - sw.sources[to]) +
                                    (to == t ? weight[t] : 0);
              if (cost < best_cost)
                best_cost = cost, slot = links[l].slot, chosen[s] = links[l].port;
            }
            if (slot == ~0u) continue;  // unreachable by construction; keep drop
          }
          add(slot, int64_t(weight[s]));
          weight[peer_sw[slot]] += weight[s];
        }
      }
      w.t = t;
      return;
    }
    cand_slot.clear(), cand_to.clear(), w.cand_port.clear();
    const uint8_t* const dt = &dist[size_t(t) * ns];  // d(., t)
    for (uint32_t s = 0; s < ns; ++s) {
      cand_begin[s] = static_cast<uint32_t>(cand_slot.size());
      if (s == t || dt[s] == kFar) continue;
      for (uint32_t l = link_begin[s]; l < link_begin[s + 1]; ++l)
        if (dt[links[l].to] + 1 == dt[s]) {
          cand_slot.push_back(links[l].slot);
          cand_to.push_back(links[l].to);
          w.cand_port.push_back(links[l].port);
        }
    }
    cand_begin[ns] = static_cast<uint32_t>(cand_slot.size());
    auto& at_least = w.at_least;
    // ahead[s] and at_least[s] from s's links' loads (0 for none: the destination).
    auto least_load = [&](uint32_t s) {
      uint64_t m = cand_begin[s] == cand_begin[s + 1] ? 0 : std::numeric_limits<uint64_t>::max();
      uint32_t c = 0;
      for (uint32_t k = cand_begin[s]; k < cand_begin[s + 1]; ++k) {
        const uint64_t l = load[cand_slot[k]];
        const bool less = l < m;  // selects, not branches (as the choice's minimum)
        c = less ? 1 : c + (l == m);
        m = less ? l : m;
      }
      ahead[s] = m;
      at_least[s] = c;
    };
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
          add(port_base[s] + port, -int64_t(weight[s]));
          weight[peer_sw[port_base[s] + port]] += weight[s];
        }
      }
      // A switch that has just chosen knows its least-loaded link for the next LID of the
      // same destination: nothing else moves its links' loads in between, but a rip-up.
      if (j == 0 || pass > 0)
        for (uint32_t s : order) least_load(s);
      for (uint32_t s : order) base[s] = ahead[s];
      base[t] = 0;  // no onward link
      const bool keep_ahead = pass == 0 && j + 1 < lids.size();
      for (uint32_t s : order) {
        const uint32_t k0 = cand_begin[s], k1 = cand_begin[s + 1];
        if (k0 == k1) continue;  // unreachable by construction; keep drop
        const uint64_t ws = sw.sources[s] + (base[s] - ahead[s]);  // its own and what it got
        // The first candidate of least cost, as one minimum over (cost, candidate) keys:
        // no branch on the comparison, which the balanced loads make unpredictable (a
        // switch has under 256 candidates, one per port at most; costs stay far below
        // 2^56: loads under 2^32, plus at most every source's weight).
        uint64_t best_key = std::numeric_limits<uint64_t>::max();
        for (uint32_t k = k0; k < k1; ++k) {
          const uint64_t cost = uint64_t(load[cand_slot[k]]) + base[cand_to[k]];
          best_key = std::min(best_key, cost << 8 | (k - k0));
        }
        const uint32_t best = k0 + static_cast<uint32_t>(best_key & 0xff);
        chosen[s] = w.cand_port[best];
        // Its least load moves only when the last link that held it takes the weight.
        const bool was_least = load[cand_slot[best]] == ahead[s];
        add(cand_slot[best], int64_t(ws));
        base[cand_to[best]] += ws;
        if (keep_ahead && ws != 0 && was_least && --at_least[s] == 0) least_load(s);
      }
    }
    w.t = t;
  };
  // A worker's choices into the rows of switches [s0, s1): done after a batch, each core
  // its own rows (the two destinations of a pair often share a cache line of every row,
  // which the cores writing at once took from each other at every switch).
  auto write_rows = [&](const Worker& w, uint32_t s0, uint32_t s1) {
    const auto& lids = by_switch[w.t];
    for (uint32_t s = s0; s < s1; ++s) {
      if (s == w.t) continue;
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
      parallel_for(
          kBatch,
          [&](size_t part) {
            const auto s0 = static_cast<uint32_t>(ns * part / kBatch),
                       s1 = static_cast<uint32_t>(ns * (part + 1) / kBatch);
            for (size_t i = 0; i < n; ++i) write_rows(workers[i], s0, s1);
          },
          1);
      // Each worker takes the others' additions (integer sums: the order does not matter).
      for (size_t i = 0; i < kBatch; ++i)
        for (size_t k = 0; k < n; ++k)
          if (k != i)
            for (auto [slot, x] : workers[k].added)
              workers[i].load[slot] = static_cast<uint32_t>(int64_t(workers[i].load[slot]) + x);
      for (size_t k = 0; k < n; ++k) workers[k].added.clear();
    }
}

}  // namespace weft::routing::detail
