#include "updn.hpp"

#include <algorithm>
#include <deque>
#include <limits>

#include "switch_graph.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {
constexpr uint32_t kInf = std::numeric_limits<uint32_t>::max();
}

Routed UpDownEngine::compute(const Fabric& f, const Options& o) const {
  const detail::Switches sw = detail::index_switches(f);
  const size_t ns = sw.nodes.size();
  const auto owners = lid_owners(f);
  auto tables = detail::empty_tables(f, sw, owners);
  if (!tables) return tables;
  Tables out = std::move(*tables);
  if (ns == 0) return out;
  const std::vector<uint8_t> dist = detail::switch_distances(f, sw);
  auto d = [&](uint32_t a, uint32_t b) { return dist[size_t(b) * ns + a]; };

  // Roots.
  std::vector<uint32_t> roots;
  if (!o.roots.empty()) {
    for (Guid g : o.roots) {
      auto n = f.find(g);
      if (!n || !f.node(*n).is_switch())
        return refuse(Refusal::kInvalidInput, std::string(name()) + ": root " + g.str() +
                                                  " is not a switch of this fabric");
      roots.push_back(sw.of_node[*n]);
    }
  } else {
    std::vector<uint32_t> leaf_dist(ns, kInf);
    std::vector<bool> has_ca(ns, false);
    for (uint32_t s = 0; s < ns; ++s) has_ca[s] = sw.sources[s] > 1;
    for (uint32_t s = 0; s < ns; ++s)
      for (uint32_t l = 0; l < ns; ++l)
        if (has_ca[l] && d(s, l) != detail::kFar)
          leaf_dist[s] = std::min<uint32_t>(leaf_dist[s], d(s, l));
    uint32_t best = 0;
    for (uint32_t s = 0; s < ns; ++s)
      if (leaf_dist[s] != kInf) best = std::max(best, leaf_dist[s]);
    if (best > 0) {
      for (uint32_t s = 0; s < ns; ++s)
        if (leaf_dist[s] == best) roots.push_back(s);
    } else {
      // Every switch has CAs: one root at the centre (least eccentricity, lowest GUID).
      uint32_t centre = 0, ecc_best = kInf;
      for (uint32_t s = 0; s < ns; ++s) {
        uint32_t ecc = 0;
        for (uint32_t t = 0; t < ns; ++t)
          if (d(s, t) != detail::kFar) ecc = std::max<uint32_t>(ecc, d(s, t));
        if (ecc < ecc_best ||
            (ecc == ecc_best && f.node(sw.nodes[s]).guid < f.node(sw.nodes[centre]).guid))
          ecc_best = ecc, centre = s;
      }
      roots.push_back(centre);
    }
  }
  // Routes every LID into `tables` with the given roots; returns the number of
  // (switch, LID) pairs left without an up*down* path and one example.
  auto route = [&](const std::vector<uint32_t>& root_set, Tables& tables,
                   std::string& example) -> size_t {
    std::vector<uint32_t> rank(ns, kInf);
    for (uint32_t r : root_set)
      for (uint32_t s = 0; s < ns; ++s)
        if (d(s, r) != detail::kFar) rank[s] = std::min<uint32_t>(rank[s], d(s, r));
    // A strict order on switches; a link is "up" toward the lesser end. dnup reverses it.
    auto before = [&](uint32_t a, uint32_t b) {
      if (down_up_) std::swap(a, b);
      if (rank[a] != rank[b]) return rank[a] < rank[b];
      return f.node(sw.nodes[a]).guid < f.node(sw.nodes[b]).guid;
    };
    auto up = [&](uint32_t from, uint32_t to) { return before(to, from); };
    // Switches in an order where every up-neighbour comes first.
    std::vector<uint32_t> topo(ns);
    for (uint32_t s = 0; s < ns; ++s) topo[s] = s;
    std::sort(topo.begin(), topo.end(), before);
    struct Hop {
      PortNum port;
      uint32_t to;
    };
    std::vector<std::vector<Hop>> ups(ns), downs(ns);
    for (uint32_t s = 0; s < ns; ++s)
      for (const auto& p : f.node(sw.nodes[s]).ports) {
        if (!p.num || !p.linked() || !f.node(p.peer).is_switch()) continue;
        const uint32_t n = sw.of_node[p.peer];
        (up(s, n) ? ups[s] : downs[s]).push_back({p.num, n});
      }
    std::vector<std::vector<uint64_t>> used(ns);
    for (uint32_t s = 0; s < ns; ++s) used[s].assign(f.node(sw.nodes[s]).ports.size(), 0);

    std::vector<uint32_t> down_dist(ns), cost(ns);
    std::deque<uint32_t> q;
    size_t unreachable = 0;
    for (const LidOwner& ow : owners) {
      const auto& nd = f.node(ow.node);
      uint32_t t;
      PortNum exit;
      if (nd.is_switch()) {
        t = sw.of_node[ow.node];
        exit = 0;
      } else {
        const auto& port = nd.ports[ow.port];
        if (!port.linked() || !f.node(port.peer).is_switch()) continue;
        t = sw.of_node[port.peer];
        exit = port.peer_port;
      }
      tables.lft[sw.nodes[t]][ow.lid.value] = exit;
      // Down-only distance to t: BFS from t backwards over down-links (n -> m is down when m -> n
      // is up).
      std::fill(down_dist.begin(), down_dist.end(), kInf);
      down_dist[t] = 0;
      q.assign(1, t);
      while (!q.empty()) {
        uint32_t m = q.front();
        q.pop_front();
        for (const Hop& h : ups[m])  // m -> h.to is up, so h.to -> m is down
          if (down_dist[h.to] == kInf) down_dist[h.to] = down_dist[m] + 1, q.push_back(h.to);
      }
      // Up/down cost, highest switches first.
      for (uint32_t s : topo) {
        cost[s] = down_dist[s];
        if (cost[s] != kInf) continue;
        for (const Hop& h : ups[s])
          if (cost[h.to] != kInf) cost[s] = std::min(cost[s], cost[h.to] + 1);
      }
      for (uint32_t s = 0; s < ns; ++s) {
        if (s == t) continue;
        PortNum best = kDropPort;
        uint64_t best_used = 0;
        auto consider = [&](const Hop& h) {
          if (best == kDropPort || used[s][h.port] < best_used)
            best = h.port, best_used = used[s][h.port];
        };
        if (down_dist[s] != kInf) {
          for (const Hop& h : downs[s])
            if (down_dist[h.to] + 1 == down_dist[s]) consider(h);
        } else if (cost[s] != kInf) {
          for (const Hop& h : ups[s])
            if (cost[h.to] + 1 == cost[s]) consider(h);
        }
        if (best == kDropPort) {
          if (d(s, t) != detail::kFar) {
            ++unreachable;
            if (example.empty())
              example =
                  fabric::port_ref(f, sw.nodes[s], 0) + " to LID " + std::to_string(ow.lid.value);
          }
          continue;
        }
        tables.lft[sw.nodes[s]][ow.lid.value] = best;
        used[s][best] += sw.sources[s];
      }
    }

    return unreachable;
  };
  std::string example;
  Tables attempt = out;
  const size_t missing = route(roots, attempt, example);
  if (missing == 0) {
    attempt.notes.push_back(std::string(name()) + ": " + std::to_string(roots.size()) + " root(s)");
    return attempt;
  }
  const std::string why = std::to_string(missing) +
                          (down_up_ ? " (switch, LID) pairs have no down*up* path with "
                                    : " (switch, LID) pairs have no up*down* path with ") +
                          std::to_string(roots.size()) + " root(s), e.g. " + example;
  if (!o.roots.empty()) return refuse(Refusal::kTopology, std::string(name()) + ": " + why);
  // For updn, one root reaches every switch going down and every switch reaches it
  // going up, so a connected fabric is always complete with a single root. dnup's
  // mirror image has no such guarantee, and may still refuse.
  std::vector<uint32_t> one{*std::min_element(
      roots.begin(), roots.end(),
      [&](uint32_t x, uint32_t y) { return f.node(sw.nodes[x]).guid < f.node(sw.nodes[y]).guid; })};
  Tables single = out;
  std::string example1;
  if (const size_t left = route(one, single, example1); left)
    // updn with one root joins every connected pair; dnup's mirror image need not.
    return refuse(down_up_ ? Refusal::kTopology : Refusal::kDisconnected,
                  std::string(name()) + ": " + why + "; with the single root " +
                      f.node(sw.nodes[one[0]]).guid.str() + " still " + std::to_string(left) +
                      ", e.g. " + example1);
  single.notes.push_back(std::string(name()) + ": " + why + "; routed with the single root " +
                         f.node(sw.nodes[one[0]]).guid.str());
  return single;
}

}  // namespace weft::routing
