// For each destination LID the tables form a forwarding function on switches.
// Hop counts to the destination come from a memoised walk (cycles are found on
// the way); then, visiting switches from the farthest, each passes the number
// of sources routed through it on to its next hop, which gives every directed
// link's all-to-all load in O(switches) per destination.
#include "weft/routing/analysis.hpp"

#include <algorithm>
#include <unordered_set>

#include "switch_graph.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

RouteMetrics analyze(const Fabric& f, const Tables& t) {
  RouteMetrics m;
  const detail::Switches sw = detail::index_switches(f);
  const size_t ns = sw.nodes.size();
  const std::vector<uint8_t> dist = detail::switch_distances(f, sw);
  // CA ports attached to each switch: they are the traffic sources.
  std::vector<uint32_t> cas_at(ns, 0);
  for (auto [n, p] : f.lid_ports()) {
    const auto& port = f.node(n).ports[p];
    if (f.node(n).is_switch() || !f.node(port.peer).is_switch()) continue;
    ++cas_at[sw.of_node[port.peer]];
  }
  // Load per directed inter-switch link, indexed by (switch, port).
  std::vector<std::vector<uint64_t>> load(ns);
  for (uint32_t s = 0; s < ns; ++s) {
    load[s].assign(f.node(sw.nodes[s]).ports.size(), 0);
    for (const auto& p : f.node(sw.nodes[s]).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch()) ++m.isl_count;
  }
  constexpr uint32_t kUnknown = ~0u, kOnStack = ~0u - 1, kDead = ~0u - 2, kLoop = ~0u - 3;
  std::vector<uint32_t> hops(ns);
  std::vector<uint32_t> next(ns);  // next switch toward the destination, or ~0 at the exit switch
  std::vector<uint32_t> order, stack;
  std::vector<uint64_t> weight(ns);
  for (const LidOwner& o : lid_owners(f)) {
    const auto& nd = f.node(o.node);
    if (nd.is_switch()) continue;  // all-to-all among CAs
    const auto& dport = nd.ports[o.port];
    if (!dport.linked() || !f.node(dport.peer).is_switch()) continue;
    const uint32_t dsw = sw.of_node[dport.peer];
    std::fill(hops.begin(), hops.end(), kUnknown);
    // Memoised walk from every switch.
    for (uint32_t s0 = 0; s0 < ns; ++s0) {
      stack.clear();
      uint32_t cur = s0, end = kUnknown;
      while (true) {
        if (hops[cur] != kUnknown && hops[cur] != kOnStack) {
          end = hops[cur];
          break;
        }
        if (hops[cur] == kOnStack) {
          end = kLoop;
          break;
        }
        hops[cur] = kOnStack;
        stack.push_back(cur);
        const NodeIndex cn = sw.nodes[cur];
        const auto& lft = t.lft.at(cn);
        const PortNum out = o.lid.value < lft.size() ? lft[o.lid.value] : kDropPort;
        const auto& cnode = f.node(cn);
        if (out == 0 || out > cnode.num_ports || !cnode.ports[out].linked()) {
          end = kDead;
          break;
        }
        const auto& p = cnode.ports[out];
        if (!f.node(p.peer).is_switch()) {
          end = (p.peer == o.node && p.peer_port == o.port) ? 0 : kDead;
          next[cur] = ~0u;
          stack.pop_back();
          hops[cur] = end;
          break;
        }
        next[cur] = sw.of_node[p.peer];
        cur = next[cur];
      }
      // Unwind the walk: each switch on it is one hop farther than the one after it.
      uint32_t h = end;
      while (!stack.empty()) {
        uint32_t s = stack.back();
        stack.pop_back();
        if (h < kLoop - 1) ++h;
        hops[s] = h;
      }
    }
    // Pairs: every CA at switch s (but the destination itself) sends to o.
    order.clear();
    for (uint32_t s = 0; s < ns; ++s) {
      uint64_t sources = cas_at[s] - (s == dsw ? 1 : 0);
      if (!sources) continue;
      m.ca_pairs += sources;
      if (hops[s] == kLoop) {
        m.looping += sources;
        continue;
      }
      if (hops[s] == kDead) continue;
      m.reachable += sources;
      m.max_hops = std::max(m.max_hops, hops[s]);
      const uint8_t dmin = dist[size_t(dsw) * ns + s];
      if (dmin != detail::kFar && hops[s] > dmin) {
        m.stretched_pairs += sources;
        m.stretch_max = std::max(m.stretch_max, double(hops[s] + 1) / double(dmin + 1));
      }
    }
    // Loads: farthest first, each switch hands its traffic to its next hop.
    for (uint32_t s = 0; s < ns; ++s) {
      weight[s] = cas_at[s] - (s == dsw ? 1 : 0);
      if (hops[s] < kLoop - 1 && hops[s] > 0) order.push_back(s);
    }
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return hops[a] > hops[b]; });
    for (uint32_t s : order) {
      if (!weight[s]) continue;
      const NodeIndex sn = sw.nodes[s];
      const PortNum out = t.lft[sn][o.lid.value];
      load[s][out] += weight[s];
      weight[next[s]] += weight[s];
    }
  }
  m.reachable_pct = m.ca_pairs ? 100.0 * double(m.reachable) / double(m.ca_pairs) : 100.0;
  uint64_t sum = 0;
  for (uint32_t s = 0; s < ns; ++s)
    for (const auto& p : f.node(sw.nodes[s]).ports) {
      if (!p.num || !p.linked() || !f.node(p.peer).is_switch()) continue;
      const uint64_t l = load[s][p.num];
      sum += l;
      m.max_link_load = std::max(m.max_link_load, l);
      m.unused_links += l == 0;
    }
  m.mean_link_load = m.isl_count ? double(sum) / double(m.isl_count) : 0;
  return m;
}

CdgReport channel_dependencies(const Fabric& f, const Tables& t) {
  CdgReport rep;
  // Channel ids: one per directed inter-switch link (node, port).
  std::vector<uint32_t> base(f.size() + 1, 0);
  for (NodeIndex n = 0; n < f.size(); ++n)
    base[n + 1] = base[n] + static_cast<uint32_t>(f.node(n).ports.size());
  auto channel = [&](NodeIndex n, PortNum p) { return base[n] + p; };
  auto is_isl = [&](NodeIndex n, PortNum p) {
    const auto& nd = f.node(n);
    return nd.is_switch() && p != 0 && p <= nd.num_ports && nd.ports[p].linked() &&
           f.node(nd.ports[p].peer).is_switch();
  };
  std::vector<std::vector<uint32_t>> adj(base.back());
  std::unordered_set<uint64_t> seen;
  for (const LidOwner& o : lid_owners(f)) {
    for (NodeIndex n = 0; n < f.size(); ++n) {
      if (!f.node(n).is_switch() || t.lft[n].size() <= o.lid.value) continue;
      const PortNum out = t.lft[n][o.lid.value];
      if (!is_isl(n, out)) continue;
      const auto& p = f.node(n).ports[out];
      const NodeIndex m = p.peer;
      if (t.lft[m].size() <= o.lid.value) continue;
      const PortNum next = t.lft[m][o.lid.value];
      if (!is_isl(m, next)) continue;
      const uint32_t a = channel(n, out), b = channel(m, next);
      if (seen.insert(uint64_t(a) << 32 | b).second) adj[a].push_back(b);
    }
  }
  for (NodeIndex n = 0; n < f.size(); ++n)
    for (const auto& p : f.node(n).ports) rep.channels += is_isl(n, p.num);
  rep.dependencies = seen.size();
  // Iterative DFS for a cycle: 0 new, 1 on the stack, 2 done.
  std::vector<uint8_t> state(adj.size(), 0);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t s0 = 0; s0 < adj.size() && rep.acyclic; ++s0) {
    if (state[s0] || adj[s0].empty()) continue;
    stack.assign(1, {s0, 0});
    state[s0] = 1;
    while (!stack.empty() && rep.acyclic) {
      auto& [v, i] = stack.back();
      if (i < adj[v].size()) {
        const uint32_t w = adj[v][i++];
        if (state[w] == 1) {
          rep.acyclic = false;
          size_t len = 1;
          for (auto it = stack.rbegin(); it != stack.rend() && it->first != w; ++it) ++len;
          rep.cycle_length = len;
        } else if (state[w] == 0) {
          state[w] = 1;
          stack.emplace_back(w, 0);
        }
      } else {
        state[v] = 2;
        stack.pop_back();
      }
    }
  }
  return rep;
}

}  // namespace weft::routing
