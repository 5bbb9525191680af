#include "ftree.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>

#include "switch_graph.hpp"
#include "weft/routing/analysis.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {
constexpr uint32_t kInf = std::numeric_limits<uint32_t>::max();

struct Hop {
  PortNum port;
  uint32_t to;
};

struct Dest {
  uint16_t lid;
  uint32_t sw;   // the switch that delivers it
  PortNum exit;  // that switch's port to it (0 for its own LID)
  bool ca;
};
}  // namespace

Routed FatTreeEngine::compute(const Fabric& f, const Options& o) const {
  const detail::Switches sw = detail::index_switches(f);
  const size_t ns = sw.nodes.size();
  const auto owners = lid_owners(f);
  auto tables = detail::empty_tables(f, sw, owners);
  if (!tables) return tables;
  Tables out = std::move(*tables);
  if (ns == 0) return out;
  auto name_of = [&](uint32_t s) { return fabric::port_ref(f, sw.nodes[s], 0); };

  // Levels by BFS from the leaves.
  std::vector<uint32_t> level(ns, kInf);
  std::deque<uint32_t> q;
  for (uint32_t s = 0; s < ns; ++s)
    if (sw.sources[s] > 1) level[s] = 0, q.push_back(s);
  if (q.empty())
    return refuse(Refusal::kTopology, "ftree: no switch has CAs, so there are no leaves");
  std::vector<std::vector<Hop>> ups(ns), downs(ns);
  while (!q.empty()) {
    const uint32_t s = q.front();
    q.pop_front();
    for (const auto& p : f.node(sw.nodes[s]).ports) {
      if (!p.num || !p.linked() || !f.node(p.peer).is_switch()) continue;
      const uint32_t n = sw.of_node[p.peer];
      if (level[n] == kInf) level[n] = level[s] + 1, q.push_back(n);
    }
  }
  uint32_t top = 0;
  for (uint32_t s = 0; s < ns; ++s) {
    if (level[s] == kInf)
      return refuse(Refusal::kDisconnected,
                    "ftree: switch " + name_of(s) + " is not connected to any switch with CAs");
    top = std::max(top, level[s]);
    for (const auto& p : f.node(sw.nodes[s]).ports) {
      if (!p.num || !p.linked() || !f.node(p.peer).is_switch()) continue;
      const uint32_t n = sw.of_node[p.peer];
      if (level[n] == level[s])
        return refuse(Refusal::kTopology,
                      "ftree: not a fat tree: " + fabric::port_ref(f, sw.nodes[s], p.num) +
                          " links two switches of level " + std::to_string(level[s]) +
                          " (level = hops from the nearest switch with CAs)");
      (level[n] > level[s] ? ups[s] : downs[s]).push_back({p.num, n});
    }
  }

  // Destinations: CAs in topology order, then switch LIDs by level.
  std::map<std::pair<NodeIndex, PortNum>, std::vector<uint16_t>> lids_of;
  for (const LidOwner& o : owners) lids_of[{o.node, o.port}].push_back(o.lid.value);
  std::vector<Dest> dests;
  for (auto [n, p] : topology_order(f)) {
    const auto& port = f.node(n).ports[p];
    for (uint16_t lid : lids_of[{n, p}])
      dests.push_back({lid, sw.of_node[port.peer], port.peer_port, true});
  }
  std::vector<uint32_t> by_level(ns);
  for (uint32_t s = 0; s < ns; ++s) by_level[s] = s;
  std::stable_sort(by_level.begin(), by_level.end(),
                   [&](uint32_t a, uint32_t b) { return level[a] < level[b]; });
  for (uint32_t s : by_level)
    for (uint16_t lid : lids_of[{sw.nodes[s], 0}]) dests.push_back({lid, s, 0, false});

  // Per (switch, port): CA destinations whose traffic passed (the balance), and all
  // destinations routed (the tie-break).
  std::vector<std::vector<uint32_t>> busy(ns), routed(ns);
  for (uint32_t s = 0; s < ns; ++s) {
    busy[s].assign(f.node(sw.nodes[s]).ports.size(), 0);
    routed[s].assign(f.node(sw.nodes[s]).ports.size(), 0);
  }
  // Where traffic passes, the least busy port, ties to the first: a strict round robin,
  // which is what keeps d-mod-k's pattern. Elsewhere (the entry is never used by CA
  // traffic), spread by what is routed, so the round robin is not disturbed.
  auto pick = [&](uint32_t s, const Hop* best, const Hop& h, bool traffic) {
    if (!best) return true;
    const auto& first = traffic ? busy : routed;
    const auto& second = traffic ? routed : busy;
    if (first[s][h.port] != first[s][best->port]) return first[s][h.port] < first[s][best->port];
    return !traffic && second[s][h.port] < second[s][best->port];
  };

  // Switches that have no up-then-down path to a LID turn at one leaf where they can.
  const uint32_t turn_leaf = dests.empty() ? by_level[0] : dests.front().sw;
  const size_t stride = size_t(out.top_lid) + 1;
  std::vector<bool> turned(ns * stride, false), detoured(ns * stride, false);
  std::vector<uint32_t> near_turn_leaf;  // switches by hops from the turn leaf
  {
    std::vector<uint32_t> hops(ns, kInf);
    hops[turn_leaf] = 0;
    q.assign(1, turn_leaf);
    while (!q.empty()) {
      const uint32_t s = q.front();
      q.pop_front();
      near_turn_leaf.push_back(s);
      for (const auto* list : {&ups[s], &downs[s]})
        for (const Hop& h : *list)
          if (hops[h.to] == kInf) hops[h.to] = hops[s] + 1, q.push_back(h.to);
    }
  }
  uint64_t turn_pairs = 0, detour_pairs = 0;
  auto second_vl = [&](uint32_t s, uint16_t lid) {
    if (out.path_sl.empty()) {
      out.path_sl.assign(f.size(), {});
      for (NodeIndex n : sw.nodes) out.path_sl[n].assign(stride, 0);
    }
    out.path_sl[sw.nodes[s]][lid] = 1;
  };
  std::vector<uint8_t> ancestor(ns);
  std::vector<uint32_t> updist(ns), valley_dist(ns);
  std::vector<uint64_t> weight(ns);
  uint32_t cached = kInf;
  for (const Dest& d : dests) {
    const uint32_t t = d.sw;
    if (t != cached) {
      cached = t;
      // Ancestors: climbing from t.
      std::fill(ancestor.begin(), ancestor.end(), 0);
      ancestor[t] = 1;
      q.assign(1, t);
      while (!q.empty()) {
        const uint32_t s = q.front();
        q.pop_front();
        for (const Hop& h : ups[s])
          if (!ancestor[h.to]) ancestor[h.to] = 1, q.push_back(h.to);
      }
      // Climbing distance to the nearest ancestor, top level first.
      for (auto it = by_level.rbegin(); it != by_level.rend(); ++it) {
        const uint32_t s = *it;
        updist[s] = ancestor[s] ? 0 : kInf;
        if (ancestor[s]) continue;
        for (const Hop& h : ups[s])
          if (updist[h.to] != kInf) updist[s] = std::min(updist[s], updist[h.to] + 1);
      }
    }
    out.lft[sw.nodes[t]][d.lid] = d.exit;
    for (uint32_t s = 0; s < ns; ++s)
      weight[s] = d.ca ? sw.sources[s] - 1 - (s == t && d.exit != 0 ? 1 : 0) : 0;
    auto take = [&](uint32_t s, const Hop& h) {
      out.lft[sw.nodes[s]][d.lid] = h.port;
      ++(weight[s] ? busy : routed)[s][h.port];
      weight[h.to] += weight[s];
    };
    // Climbers, lowest level first: each hands its traffic to a parent nearer the ancestors.
    for (uint32_t s : by_level) {
      if (ancestor[s] || updist[s] == kInf) continue;
      const Hop* best = nullptr;
      for (const Hop& h : ups[s])
        if (updist[h.to] + 1 == updist[s] && pick(s, best, h, weight[s] > 0)) best = &h;
      take(s, *best);
    }
    // Ancestors, top level first: each hands its traffic down toward t.
    for (auto it = by_level.rbegin(); it != by_level.rend(); ++it) {
      const uint32_t s = *it;
      if (!ancestor[s] || s == t) continue;
      const Hop* best = nullptr;
      for (const Hop& h : downs[s])
        if (ancestor[h.to] && level[h.to] + 1 == level[s] && pick(s, best, h, weight[s] > 0))
          best = &h;
      take(s, *best);
    }
    // The rest has no up-then-down path: they take a down-up turn (checked below).
    bool any_valley = false;
    for (uint32_t s = 0; s < ns; ++s) any_valley |= !ancestor[s] && updist[s] == kInf;
    if (!any_valley) continue;
    auto port_to = [&](uint32_t from, uint32_t to) {
      for (const auto* list : {&ups[from], &downs[from]})
        for (const Hop& h : *list)
          if (h.to == to) return h.port;
      return kDropPort;
    };
    auto is_valley = [&](uint32_t s) { return !ancestor[s] && updist[s] == kInf; };
    // First, valley switches go, through valley switches only, to the turn leaf, and
    // take its up-then-down route from there: every down-up turn is at that leaf.
    std::fill(valley_dist.begin(), valley_dist.end(), kInf);
    q.clear();
    if (!is_valley(turn_leaf)) valley_dist[turn_leaf] = 0, q.push_back(turn_leaf);
    while (!q.empty()) {
      const uint32_t s = q.front();
      q.pop_front();
      for (const auto* list : {&ups[s], &downs[s]})
        for (const Hop& h : *list)
          if (is_valley(h.to) && valley_dist[h.to] == kInf) {
            valley_dist[h.to] = valley_dist[s] + 1;
            q.push_back(h.to);
            out.lft[sw.nodes[h.to]][d.lid] = port_to(h.to, s);
            turned[size_t(h.to) * stride + d.lid] = true;
            ++turn_pairs;
          }
    }
    // The rest (cores, toward another core's LID; and degraded trees) take a shortest way
    // into the routed part, entering it as near the turn leaf as they can.
    q.clear();
    for (uint32_t s : near_turn_leaf)
      if (!is_valley(s) || valley_dist[s] != kInf) valley_dist[s] = 0, q.push_back(s);
    while (!q.empty()) {
      const uint32_t s = q.front();
      q.pop_front();
      for (const auto* list : {&ups[s], &downs[s]})
        for (const Hop& h : *list)
          if (valley_dist[h.to] == kInf) {
            valley_dist[h.to] = valley_dist[s] + 1;
            q.push_back(h.to);
            out.lft[sw.nodes[h.to]][d.lid] = port_to(h.to, s);
            detoured[size_t(h.to) * stride + d.lid] = true;
            ++detour_pairs;
          }
    }
  }
  std::vector<uint32_t> per_level(top + 1, 0);
  for (uint32_t s = 0; s < ns; ++s) ++per_level[level[s]];
  std::string shape;
  for (uint32_t l = 0; l <= top; ++l) shape += (l ? "/" : "") + std::to_string(per_level[l]);
  out.notes.push_back("ftree: " + std::to_string(top + 1) + " levels, switches per level " + shape +
                      " (leaves first)");
  // Turns at one leaf add no cycle on a tree whose up-then-down routes never leave a
  // pod to come back into it. Check; move what closes a cycle to SL 1 (the other
  // turns first, then those at the leaf), and check again.
  int on_sl1 = 0;  // 0 nothing, 1 the other turns, 2 all turns
  if (turn_pairs || detour_pairs) {
    auto move = [&](const std::vector<bool>& which) {
      for (uint32_t s = 0; s < ns; ++s)
        for (size_t lid = 0; lid < stride; ++lid)
          if (which[size_t(s) * stride + lid]) second_vl(s, static_cast<uint16_t>(lid));
    };
    while (!channel_dependencies(f, out).acyclic) {
      if (on_sl1 == 2)
        return refuse(Refusal::kTopology,
                      "ftree: degraded fat tree: the paths of switches without an up-then-down "
                      "path close a dependency cycle even on a VL of their own");
      move(++on_sl1 == 1 ? detoured : turned);
    }
  }
  if (!out.path_sl.empty()) {
    if (o.max_vls < 2)
      return refuse(Refusal::kVirtualLanes,
                    "ftree: the paths of switches without an up-then-down path need a second "
                    "VL; 1 allowed");
    out.vls = 2;
  }
  if (turn_pairs)
    out.notes.push_back("ftree: " + std::to_string(turn_pairs) +
                        " (switch, LID) pairs have no up-then-down path; they go to the leaf " +
                        name_of(turn_leaf) + " and turn there" +
                        (on_sl1 == 2 ? ", on SL 1" : ", on SL 0 (dependency graph checked)"));
  if (detour_pairs)
    out.notes.push_back("ftree: " + std::to_string(detour_pairs) +
                        (turn_pairs ? " more such pairs" : " (switch, LID) pairs") +
                        " (top switch to top switch, or in a degraded tree) turn where they "
                        "meet the up-then-down routes, on SL " +
                        (on_sl1 ? "1" : "0 (dependency graph checked)"));
  return out;
}

}  // namespace weft::routing
