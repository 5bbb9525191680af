#include "ftree.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "parallel.hpp"
#include "switch_graph.hpp"
#include "weft/routing/analysis.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {
constexpr uint32_t kInf = std::numeric_limits<uint32_t>::max();

// A set of a switch's ports (0..255), as an adaptive-routing group's key.
struct PortSet {
  std::array<uint64_t, 4> bits{};
  PortSet(const PortNum* c, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) bits[c[i] >> 6] |= uint64_t{1} << (c[i] & 63);
  }
  auto operator<=>(const PortSet&) const = default;
};

struct Hop {
  PortNum port;  // on this switch
  uint32_t to;   // the switch it leads to
  PortNum back;  // that switch's port back
};

// How a switch forwards toward one target (a leaf class or a switch).
enum Kind : uint8_t {
  kNone,     // the target itself (or nothing to do)
  kUp,       // one of pool[begin, begin + count), climbing (or a turn's single port)
  kDown,     // one of pool[begin, begin + count), descending
  kToLeaf,   // a parent of the target leaf: one of its ports to that leaf
  kAllUp,    // any of the switch's up ports
  kAllDown,  // any of the switch's down ports
};
enum Turn : uint8_t { kNoTurn, kAtTurnLeaf, kWhereMet };

struct Plan {
  std::vector<uint32_t> begin;
  std::vector<uint8_t> count, kind, turn;
  std::vector<PortNum> pool;
  uint64_t turns = 0, detours = 0;
};

// A destination: a LID, its index in topology order (the d in d-mod-k), the switch
// that delivers it and that switch's port to it, and the plan that routes it.
struct Dest {
  uint16_t lid;
  uint32_t idx;
  uint32_t sw;
  PortNum exit;
  uint32_t plan;
};

// What ftree keeps beside its tables for its next repair (Tables::memo): every target's
// plan, by target, and what they depend on beyond the links: the levels, the turn leaf,
// and every switch's rank by distance from it (the valleys' bridges follow them); and
// each LID's plan. A repair takes the plans no lost link mattered to; and a switch where
// every LID's plan offers the same candidates as the memo's plan of that LID did keeps its
// row whole: each entry's port is still a candidate (the memo's tables took them all
// from their plans), so the entry-by-entry check would keep them all.
struct FatTreeMemo final : EngineMemo {
  std::vector<NodeIndex> nodes;  // the switches (their node in that fabric)
  std::vector<uint32_t> level;   // per switch (which of its links lead up, in what order)
  uint32_t turn = 0;
  std::vector<uint32_t> near_rank;
  std::vector<std::shared_ptr<const Plan>> plans;  // (shared with the repairs that took them)
  std::vector<uint32_t> plan_of_lid;               // per LID up to the top one; kInf where none
  std::map<std::vector<uint32_t>, uint32_t> class_plan;  // a leaf class's, by up-neighbours
  std::vector<uint32_t> switch_plan;                     // per switch: its own; kInf for none
};

// Whether plans a and b give switch s the same kind, turn and candidates. (kAllUp and
// kAllDown name the switch's own ports: the same where it lost no link and the levels
// stand. kToLeaf's are its ports to the destination's leaf: the same where it lost none.)
bool same_at(const Plan& a, const Plan& b, uint32_t s) {
  if (a.kind[s] != b.kind[s] || a.turn[s] != b.turn[s]) return false;
  if (a.kind[s] != kUp && a.kind[s] != kDown) return true;
  return a.count[s] == b.count[s] &&
         std::equal(a.pool.begin() + a.begin[s], a.pool.begin() + a.begin[s] + a.count[s],
                    b.pool.begin() + b.begin[s]);
}
}  // namespace

Routed FatTreeEngine::compute(const Fabric& f, const Options& o) const {
  auto st = detail::start(f);
  if (!st) return std::unexpected(st.error());
  auto& [sw, owners, out] = *st;
  const size_t ns = sw.nodes.size();
  if (ns == 0) return std::move(out);
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
      (level[n] > level[s] ? ups[s] : downs[s]).push_back({p.num, n, p.peer_port});
    }
  }
  // d-mod-k: a switch of level l picks candidate (d / W[l]) mod (its candidates), W[0] = 1
  // and W[l + 1] = W[l] * (the most up ports a level-l switch has).
  std::vector<uint64_t> W(top + 2, 1);
  for (uint32_t l = 0; l <= top; ++l) {
    size_t most = 1;
    for (uint32_t s = 0; s < ns; ++s)
      if (level[s] == l) most = std::max(most, ups[s].size());
    W[l + 1] = std::min<uint64_t>(W[l] * most, uint64_t(1) << 31);
  }
  std::vector<uint32_t> by_level(ns);
  for (uint32_t s = 0; s < ns; ++s) by_level[s] = s;
  std::stable_sort(by_level.begin(), by_level.end(),
                   [&](uint32_t a, uint32_t b) { return level[a] < level[b]; });

  // Targets: a leaf class (leaves with the same up neighbours: routing toward any of
  // them differs only in the parents' last hop) or one switch, for its own LID.
  const auto order = topology_order(f);
  const uint32_t turn_leaf =
      order.empty() ? by_level[0] : sw.of_node[f.node(order[0].first).ports[order[0].second].peer];
  // Switches' positions by hops from the turn leaf, the lower switch number first on a
  // tie (not the order a BFS meets them in: that moves when a link is lost even where
  // no distance does, and the memo's plans' bridges depend on it).
  std::vector<uint32_t> near_rank(ns, kInf);
  {
    std::vector<uint32_t> hops(ns, kInf);
    hops[turn_leaf] = 0;
    q.assign(1, turn_leaf);
    while (!q.empty()) {
      const uint32_t s = q.front();
      q.pop_front();
      for (const auto* list : {&ups[s], &downs[s]})
        for (const Hop& h : *list)
          if (hops[h.to] == kInf) hops[h.to] = hops[s] + 1, q.push_back(h.to);
    }
    std::vector<uint32_t> near(ns);
    for (uint32_t s = 0; s < ns; ++s) near[s] = s;
    std::stable_sort(near.begin(), near.end(),
                     [&](uint32_t a, uint32_t b) { return hops[a] < hops[b]; });
    for (uint32_t i = 0; i < ns; ++i) near_rank[near[i]] = i;
  }

  struct Target {
    uint32_t sw;  // a member (the switch itself for switch LIDs)
    bool leaf_class;
  };
  std::vector<Target> targets;
  std::map<std::vector<uint32_t>, uint32_t> class_of_ups;
  std::vector<uint32_t> plan_of_leaf(ns, kInf);
  std::map<std::pair<NodeIndex, PortNum>, std::vector<uint16_t>> lids_of;
  for (const LidOwner& ow : owners) lids_of[{ow.node, ow.port}].push_back(ow.lid.value);
  std::vector<Dest> dests;
  uint32_t idx = 0;
  for (auto [n, p] : order) {
    const auto& port = f.node(n).ports[p];
    const uint32_t leaf = sw.of_node[port.peer];
    if (plan_of_leaf[leaf] == kInf) {
      std::vector<uint32_t> key;
      for (const Hop& h : ups[leaf]) key.push_back(h.to);
      std::sort(key.begin(), key.end());
      auto [it, fresh] = class_of_ups.emplace(key, static_cast<uint32_t>(targets.size()));
      if (fresh) targets.push_back({leaf, true});
      plan_of_leaf[leaf] = it->second;
    }
    for (uint16_t lid : lids_of[{n, p}])
      dests.push_back({lid, idx++, leaf, port.peer_port, plan_of_leaf[leaf]});
  }
  // Switch LIDs: a leaf's is routed as its CAs are (its class's plan, exit port 0);
  // every other switch is a target of its own.
  for (uint32_t s : by_level)
    for (uint16_t lid : lids_of[{sw.nodes[s], 0}]) {
      if (plan_of_leaf[s] != kInf) {
        dests.push_back({lid, idx++, s, 0, plan_of_leaf[s]});
        continue;
      }
      dests.push_back({lid, idx++, s, 0, static_cast<uint32_t>(targets.size())});
      targets.push_back({s, false});
    }

  // A repair of the previous tables, when only links went away (below). Its memo serves
  // where its switches and their levels stand; its plans where the turn leaf and the
  // ranks stand too.
  const std::optional<std::vector<NodeIndex>> was = detail::repairable(o, name(), f, owners);
  const FatTreeMemo* memo = nullptr;
  if (was && o.previous.tables->memo) {
    const auto* m = dynamic_cast<const FatTreeMemo*>(o.previous.tables->memo.get());
    bool same = m && m->nodes.size() == ns && m->level == level;
    for (uint32_t s = 0; same && s < ns; ++s) same = m->nodes[s] == (*was)[sw.nodes[s]];
    if (same) memo = m;
  }
  const bool memo_plans = memo && memo->turn == turn_leaf && memo->near_rank == near_rank;
  const auto lost_ends = memo ? detail::lost_link_ends(*o.previous.fabric, f, sw, *was)
                              : std::vector<std::pair<uint32_t, PortNum>>{};

  // A repair takes from the memo the plan of the same target (the same switch; a leaf
  // class with the same up-neighbours) where no lost link mattered to it: the upper end
  // of every lost link was in its valley (climbing never reached it, nor did a descent
  // from where climbing reached: so neither the climb, the distances, nor any switch's
  // candidates used the link), and its valley's way to the turn took no lost link (the
  // same valley, bridged again, takes the same way: detail::bridge_each's memo). Every
  // part of it is then as a fresh plan would have it.
  std::vector<uint32_t> taken_from(targets.size(), kInf);  // the memo's plan taken
  if (memo_plans) {
    std::vector<uint32_t> sw_of_was(o.previous.fabric->size(), kInf);
    for (uint32_t s = 0; s < ns; ++s) sw_of_was[memo->nodes[s]] = s;
    std::vector<uint32_t> upper;  // the upper ends of the lost links
    for (auto [s, port] : lost_ends) {
      const uint32_t peer = sw_of_was[o.previous.fabric->node(memo->nodes[s]).ports[port].peer];
      if (level[s] > level[peer]) upper.push_back(s);
    }
    detail::parallel_for(targets.size(), [&](size_t ti) {
      uint32_t mp = kInf;
      if (targets[ti].leaf_class) {
        std::vector<uint32_t> key;
        for (const Hop& h : ups[targets[ti].sw]) key.push_back(h.to);
        std::sort(key.begin(), key.end());
        if (auto it = memo->class_plan.find(key); it != memo->class_plan.end()) mp = it->second;
      } else {
        mp = memo->switch_plan[targets[ti].sw];
      }
      if (mp == kInf) return;
      const Plan& m = *memo->plans[mp];
      for (uint32_t s : upper)
        if (m.turn[s] == kNoTurn) return;
      for (auto [s, port] : lost_ends)
        if (m.turn[s] != kNoTurn && m.pool[m.begin[s]] == port) return;
      taken_from[ti] = mp;
    });
  }

  // One plan per target; targets are independent, so they are built in parallel.
  std::vector<std::shared_ptr<Plan>> building(targets.size());
  std::vector<std::vector<uint32_t>> valleys(targets.size());  // per plan: no up-then-down path
  detail::parallel_for(targets.size(), [&](size_t ti) {
    if (taken_from[ti] != kInf) return;
    const uint32_t t = targets[ti].sw;
    const bool leaf_class = targets[ti].leaf_class;
    building[ti] = std::make_shared<Plan>();
    Plan& pl = *building[ti];
    pl.begin.assign(ns, 0);
    pl.count.assign(ns, 0);
    pl.kind.assign(ns, kNone);
    pl.turn.assign(ns, kNoTurn);
    std::vector<uint8_t> ancestor(ns, 0);
    std::vector<uint32_t> updist(ns, kInf);
    // Ancestors: what climbing reaches from the target. For a leaf class that starts at
    // the shared parents, so every leaf of the class (t too) is a climber here, and the
    // destination's own leaf delivers.
    std::vector<uint32_t> bq;
    if (leaf_class) {
      for (const Hop& h : ups[t])
        if (!ancestor[h.to]) ancestor[h.to] = 1, bq.push_back(h.to);
    } else {
      ancestor[t] = 1;
      bq.push_back(t);
    }
    for (size_t i = 0; i < bq.size(); ++i)
      for (const Hop& h : ups[bq[i]])
        if (!ancestor[h.to]) ancestor[h.to] = 1, bq.push_back(h.to);
    // Hops up to the nearest ancestor: a BFS from the ancestors down, which touches only
    // the switches that climb to them (for a switch's own LID, few).
    for (uint32_t a : bq) updist[a] = 0;
    for (size_t i = 0; i < bq.size(); ++i)
      for (const Hop& h : downs[bq[i]])
        if (updist[h.to] == kInf) updist[h.to] = updist[bq[i]] + 1, bq.push_back(h.to);
    // Candidates into the plan's pool, unless they are all the switch's up (or down)
    // ports, the common case, which needs no copy.
    auto set_ports = [&](uint32_t s, auto&& keep, const std::vector<Hop>& list, Kind kind) {
      const auto begin = static_cast<uint32_t>(pl.pool.size());
      for (const Hop& h : list)
        if (keep(h)) pl.pool.push_back(h.port);
      const auto n = static_cast<uint32_t>(pl.pool.size() - begin);
      if (n == list.size()) {
        pl.pool.resize(begin);
        pl.kind[s] = n ? (kind == kUp ? kAllUp : kAllDown) : kNone;
        return;
      }
      pl.begin[s] = begin;
      pl.count[s] = static_cast<uint8_t>(n);
      pl.kind[s] = n ? kind : kNone;
    };
    for (uint32_t s = 0; s < ns; ++s) {
      if (s == t && !leaf_class) continue;
      if (ancestor[s]) {
        if (leaf_class && level[s] == 1) {
          pl.kind[s] = kToLeaf;  // the parents of the target leaf: resolved per leaf
          continue;
        }
        set_ports(
            s, [&](const Hop& h) { return ancestor[h.to] && level[h.to] + 1 == level[s]; },
            downs[s], kDown);
      } else if (updist[s] != kInf) {
        set_ports(
            s, [&](const Hop& h) { return updist[h.to] + 1 == updist[s]; }, ups[s], kUp);
      }
    }
    // Switches with no up-then-down path (the valley): bridged below, to the turn leaf
    // through such switches where they can, otherwise into the routed part as near the
    // turn leaf as they can.
    for (uint32_t s = 0; s < ns; ++s)
      if ((leaf_class || s != t) && !ancestor[s] && updist[s] == kInf) valleys[ti].push_back(s);
  });
  // The valley switches' bridges (plans with the same valley share one).
  detail::bridge_each(
      valleys, ns, turn_leaf, near_rank,
      [&](uint32_t s, auto&& fn) {
        for (const auto* list : {&ups[s], &downs[s]})
          for (const Hop& h : *list) fn(h.to, h.port, h.back);
      },
      [&](size_t ti, const std::vector<detail::BridgeHop>& hops) {
        Plan& pl = *building[ti];
        for (const detail::BridgeHop& h : hops) {  // each over its one port
          pl.begin[h.sw] = static_cast<uint32_t>(pl.pool.size());
          pl.pool.push_back(h.port);
          pl.count[h.sw] = 1;
          pl.kind[h.sw] = kUp;
          pl.turn[h.sw] = h.at_turn ? kAtTurnLeaf : kWhereMet;
          ++(h.at_turn ? pl.turns : pl.detours);
        }
      });
  std::vector<std::shared_ptr<const Plan>> plans(targets.size());
  size_t plans_taken = 0;
  for (size_t ti = 0; ti < targets.size(); ++ti)
    if (taken_from[ti] != kInf)
      plans[ti] = memo->plans[taken_from[ti]], ++plans_taken;
    else
      plans[ti] = std::move(building[ti]);
  auto made = std::make_shared<FatTreeMemo>();
  made->nodes = sw.nodes;
  made->level = level;
  made->turn = turn_leaf;
  made->near_rank = near_rank;

  std::vector<std::vector<PortNum>> up_ports(ns), down_ports(ns);
  for (uint32_t s = 0; s < ns; ++s) {
    for (const Hop& h : ups[s]) up_ports[s].push_back(h.port);
    for (const Hop& h : downs[s]) down_ports[s].push_back(h.port);
  }
  // Each leaf's parents and their ports down to it.
  std::vector<std::vector<std::pair<uint32_t, PortNum>>> parents(ns);
  for (uint32_t s = 0; s < ns; ++s)
    if (level[s] == 0)
      for (const Hop& h : ups[s])
        parents[s].emplace_back(h.to, f.node(sw.nodes[s]).ports[h.port].peer_port);
  // Destinations by plan, in index order: consecutive indices let d / W be kept
  // incrementally instead of divided.
  std::vector<uint32_t> by_plan(dests.size());
  for (uint32_t i = 0; i < dests.size(); ++i) by_plan[i] = i;
  std::stable_sort(by_plan.begin(), by_plan.end(),
                   [&](uint32_t a, uint32_t b) { return dests[a].plan < dests[b].plan; });

  // Destinations grouped by plan (in index order within a plan), so that a switch
  // reads its entry of each plan once.
  std::vector<Dest> ordered;
  ordered.reserve(dests.size());
  for (uint32_t k : by_plan) ordered.push_back(dests[k]);
  std::vector<uint32_t> group_end;
  for (uint32_t i = 0; i < ordered.size(); ++i)
    if (i + 1 == ordered.size() || ordered[i + 1].plan != ordered[i].plan)
      group_end.push_back(i + 1);
  // What the common case below reads of each destination, apart: its LID (2 bytes, not
  // a Dest's 20: every switch streams them all), and where its group's indices stop
  // running consecutively (a leaf class's CAs run so; its leaves' own LIDs come later):
  // each run needs only its first index.
  std::vector<uint16_t> ord_lid(ordered.size());
  for (size_t i = 0; i < ordered.size(); ++i) ord_lid[i] = ordered[i].lid;
  std::vector<uint32_t> run_end;  // every run's end, in order; each group's end among them
  for (uint32_t i = 1, g = 0; i <= ordered.size(); ++i)
    if (i == group_end[g])
      run_end.push_back(i), ++g;
    else if (ordered[i].idx != ordered[i - 1].idx + 1)
      run_end.push_back(i);
  // Each switch's own LIDs (its own and its CAs') with their exit ports: written over
  // whatever its plans gave them.
  std::vector<std::vector<std::pair<uint16_t, PortNum>>> own(ns);
  for (const Dest& d : dests) own[d.sw].emplace_back(d.lid, d.exit);
  uint16_t max_lid = 0;
  for (const Dest& d : dests) max_lid = std::max(max_lid, d.lid);
  // Per run: whether its LIDs follow each other too (weft assigns a leaf's CAs their LIDs
  // side by side, in topology order): then a fresh row takes the run as one stretch.
  std::vector<uint8_t> run_lids_follow(run_end.size(), 1);
  for (size_t r = 0, i = 0; r < run_end.size(); i = run_end[r++])
    for (size_t k = i + 1; k < run_end[r]; ++k)
      if (ordered[k].lid != ordered[k - 1].lid + 1) {
        run_lids_follow[r] = 0;
        break;
      }
  std::vector<detail::FastDiv> mod_by;  // mod_by[n]: division by n, for n candidates
  for (uint32_t n = 0; n < 256; ++n) mod_by.emplace_back(std::max(n, 1u));

  // A repair from the memo's rows (not with adaptive routing, whose groups are not kept),
  // where the LIDs routed are the same: a switch that lost no link keeps its row whole
  // where every LID's plan stands there (same_at with the memo's plan of that LID), and
  // otherwise checks only the LIDs of the plans that changed there.
  std::vector<uint32_t> plan_of_lid(size_t(out.top_lid) + 1, kInf);
  for (const Dest& d : dests) plan_of_lid[d.lid] = d.plan;
  enum RowCheck : uint8_t { kEveryEntry, kKeepWhole, kChangedPlans };
  std::vector<uint8_t> check(ns, kEveryEntry);
  std::vector<std::vector<uint32_t>> changed_at(ns);  // kChangedPlans: the plans, ascending
  std::vector<std::vector<uint32_t>> memo_turns(ns);  // kChangedPlans: the memo's plans turning
  std::vector<uint32_t> memo_lids;                    // per memo plan: its LIDs
  bool rows_memo = memo && !o.adaptive && memo->plan_of_lid.size() == plan_of_lid.size();
  for (size_t l = 0; rows_memo && l < plan_of_lid.size(); ++l)
    rows_memo = (memo->plan_of_lid[l] == kInf) == (plan_of_lid[l] == kInf);
  size_t rows_whole = 0, rows_partly = 0;
  if (rows_memo) {
    std::vector<uint8_t> lost(ns, 0);
    for (auto [s, port] : lost_ends) lost[s] = 1;
    std::vector<std::vector<uint32_t>> olds(plans.size());  // per plan: its LIDs' memo plans
    for (const Dest& d : dests) {
      auto& v = olds[d.plan];
      if (std::find(v.begin(), v.end(), memo->plan_of_lid[d.lid]) == v.end())
        v.push_back(memo->plan_of_lid[d.lid]);
    }
    std::vector<std::vector<uint32_t>> moved(plans.size());  // per plan: where it changed
    detail::parallel_for(plans.size(), [&](size_t p) {
      for (uint32_t s = 0; s < ns; ++s)
        if (!lost[s])
          for (uint32_t op : olds[p])
            if (op != taken_from[p] && !same_at(*memo->plans[op], *plans[p], s)) {
              moved[p].push_back(s);
              break;
            }
    });
    for (uint32_t p = 0; p < plans.size(); ++p)
      for (uint32_t s : moved[p]) changed_at[s].push_back(p);
    for (uint32_t s = 0; s < ns; ++s)
      if (!lost[s]) {
        check[s] = changed_at[s].empty() ? kKeepWhole : kChangedPlans;
        ++(check[s] == kKeepWhole ? rows_whole : rows_partly);
      }
    memo_lids.assign(memo->plans.size(), 0);
    for (uint32_t op : memo->plan_of_lid)
      if (op != kInf) ++memo_lids[op];
    for (uint32_t op = 0; op < memo->plans.size(); ++op) {
      const Plan& mp = *memo->plans[op];
      if (mp.turns || mp.detours)
        for (uint32_t s = 0; s < ns; ++s)
          if (mp.turn[s] && check[s] == kChangedPlans) memo_turns[s].push_back(op);
    }
  }

  // Every switch's row, in parallel: rows are independent. With adaptive routing, an
  // entry's group is its candidates: climbing, every port nearer the ancestors;
  // descending, every port toward ancestors of the destination; so any per-packet
  // choice stays up-then-down and minimal. Turns keep their one port.
  if (o.adaptive) {
    out.ar_group.assign(f.size(), {});
    out.ar_sets.assign(f.size(), {});
  }
  // A repair of the previous tables, when only links went away (as minhop's and
  // updn's): an entry whose previous port is still one of its candidates (up-then-down
  // and minimal) keeps it, so d-mod-k's spread stays where the tree still allows it;
  // the others go to their least used candidate. Turns are planned afresh.
  const Tables* prev_tables = o.previous.tables;
  detail::parallel_for(ns, [&](size_t si) {
    const auto s = static_cast<uint32_t>(si);
    auto& row = out.lft[sw.nodes[s]];
    const std::vector<PortNum>* before = was ? &prev_tables->lft[(*was)[sw.nodes[s]]] : nullptr;
    if (check[s] == kKeepWhole) {
      std::copy(before->begin(), before->end(), row.begin());
      return;
    }
    // Repair: an entry keeps its previous port where that is one of its candidates and
    // counts on it; the others are placed after, each on its least used candidate, as
    // minhop's repair balances them against the kept ones.
    std::array<uint32_t, 256> used{};
    struct Redo {
      uint16_t lid;
      std::vector<PortNum> cand;
    };
    std::vector<Redo> redo;
    auto keep = [&](uint16_t lid, const PortSet& c, const PortNum* cand, uint32_t n, PortNum pick) {
      const PortNum p = lid < before->size() ? (*before)[lid] : kDropPort;
      if (c.bits[p >> 6] >> (p & 63) & 1) {
        ++used[p];
        return p;
      }
      redo.push_back({lid, std::vector<PortNum>(cand, cand + n)});
      return pick;
    };
    std::vector<uint16_t>* ar = nullptr;
    // A group is a set of ports: the first candidate list seen with those ports names it.
    std::map<PortSet, uint16_t> known;
    auto group_of = [&](const PortNum* c, uint32_t n) -> uint16_t {
      if (n < 2) return Tables::kNoArGroup;
      auto& sets = out.ar_sets[sw.nodes[s]];
      auto [it, fresh] = known.emplace(PortSet(c, n), uint16_t(sets.size()));
      if (fresh) {
        if (sets.size() == Tables::kNoArGroup) return Tables::kNoArGroup;
        sets.emplace_back(c, c + n);
      }
      return it->second;
    };
    if (o.adaptive) {
      ar = &out.ar_group[sw.nodes[s]];
      ar->assign(row.size(), Tables::kNoArGroup);
    }
    // Raw pointers: the byte stores into the row could alias any vector's insides,
    // which would be reloaded after each one.
    PortNum* const rowp = row.data();
    uint16_t* const arp = ar ? ar->data() : nullptr;
    const Dest* const dp = ordered.data();
    // Climbing, d-mod-k. Descending (parallel links, or several children on the way),
    // the divisor of the level below: the destinations that reach s and go down to one
    // child were spread over s's links by the level below, so that level's quotient
    // spreads them over the parallel links too.
    const auto w_up = static_cast<uint32_t>(W[level[s]]),
               w_down = static_cast<uint32_t>(W[level[s] ? level[s] - 1 : 0]);
    const detail::FastDiv by_up(w_up), by_down(w_down);
    PortNum to_leaf[64];
    // A repair's: s's own LIDs, a bit each.
    std::vector<uint64_t> own_bits;
    if (before) {
      own_bits.assign(size_t(max_lid) / 64 + 1, 0);
      for (auto [lid, exit] : own[s]) own_bits[lid >> 6] |= uint64_t{1} << (lid & 63);
    }
    // Checking only the changed plans' LIDs: the row starts as the memo's, and the ports'
    // counts as the entry-by-entry check would have them from the entries it keeps: every
    // entry of the memo's row but those that turned at s. (Also s's own LIDs and the LIDs
    // it has no route to, whose ports, to CAs, 0 and kDropPort, are no one's candidates.)
    const std::vector<uint32_t>* only = nullptr;
    size_t next_changed = 0;
    if (check[s] == kChangedPlans) {
      only = &changed_at[s];
      std::copy(before->begin(), before->end(), row.begin());
      for (PortNum p : *before) ++used[p];
      for (uint32_t op : memo_turns[s]) {
        const Plan& mp = *memo->plans[op];
        used[mp.pool[mp.begin[s]]] -= memo_lids[op];  // (s's own LIDs never turn at s)
      }
    }
    uint32_t first = 0;
    size_t next_run = 0;  // run_end's first run of this group
    for (const uint32_t end : group_end) {
      const uint32_t plan = ordered[first].plan;
      if (only) {
        if (next_changed == only->size() || (*only)[next_changed] != plan) {
          while (run_end[next_run] < end) ++next_run;
          ++next_run;
          first = end;
          continue;
        }
        ++next_changed;
        // Its LIDs' entries as the check would find them: not yet written, not counted.
        for (uint32_t i = first; i < end; ++i) {
          const uint16_t l = ordered[i].lid;
          if (own_bits[l >> 6] >> (l & 63) & 1) continue;
          if (!memo->plans[memo->plan_of_lid[l]]->turn[s]) --used[(*before)[l]];
          row[l] = kDropPort;
        }
      }
      const Plan& pl = *plans[plan];
      const Kind kind = static_cast<Kind>(pl.kind[s]);
      const PortNum* cand = kind == kAllUp     ? up_ports[s].data()
                            : kind == kAllDown ? down_ports[s].data()
                                               : pl.pool.data() + pl.begin[s];
      const uint32_t count = kind == kAllUp     ? static_cast<uint32_t>(up_ports[s].size())
                             : kind == kAllDown ? static_cast<uint32_t>(down_ports[s].size())
                                                : pl.count[s];
      const bool climbing = kind == kUp || kind == kAllUp;
      const detail::FastDiv& by = climbing ? by_up : by_down;
      const uint32_t w = climbing ? w_up : w_down;
      // (idx / w) mod count, kept incrementally while indices run consecutively.
      uint32_t prev = ~0u - 1, rem = 0, r = 0;
      auto pick = [&](uint32_t idx) {
        if (idx == prev + 1) {
          if (++rem == w) {
            rem = 0;
            if (++r == count) r = 0;
          }
        } else {
          const uint32_t q = by.div(idx);
          rem = idx - q * w;
          r = mod_by[count].mod(q);
        }
        prev = idx;
        return r;
      };
      const uint16_t plan_group = ar && kind != kToLeaf && kind != kNone && !pl.turn[s]
                                      ? group_of(cand, count)
                                      : Tables::kNoArGroup;
      const bool repair = before && kind != kNone && kind != kToLeaf && !pl.turn[s];
      const PortSet cands = repair ? PortSet(cand, count) : PortSet(nullptr, 0);
      // The common case: every test above is the same for the whole group. put(i, port)
      // for each destination with its d-mod-k port, a run of consecutive indices at a time.
      auto each_pick = [&](auto&& put) {
        for (uint32_t i = first; i < end;) {
          const uint32_t stop = run_end[next_run++];
          const uint32_t q = by.div(dp[i].idx);
          uint32_t rem = dp[i].idx - q * w, r = mod_by[count].mod(q);
          for (; i < stop; ++i) {
            put(i, cand[r]);
            if (++rem == w) {
              rem = 0;
              if (++r == count) r = 0;
            }
          }
        }
        first = end;
      };
      const uint16_t* const lid = ord_lid.data();
      if (repair && !arp) {
        // A repair's: each entry keeps its previous port where that is a candidate, else
        // takes its d-mod-k one until the redos. s's own LIDs are left to their exits (and
        // counted nowhere).
        const PortNum* const bp = before->data();
        const size_t bn = before->size();
        each_pick([&](uint32_t i, PortNum pick) {
          const uint16_t l = lid[i];
          if (own_bits[l >> 6] >> (l & 63) & 1) return;
          const PortNum p = l < bn ? bp[l] : kDropPort;
          if (cands.bits[p >> 6] >> (p & 63) & 1) {
            rowp[l] = p;
            ++used[p];
          } else {
            rowp[l] = pick;
            redo.push_back({l, std::vector<PortNum>(cand, cand + count)});
          }
        });
        continue;
      }
      if (kind != kNone && kind != kToLeaf && !repair && !arp) {
        // A fresh computation's (s's own LIDs too: they are written over below). A run
        // whose LIDs follow each other is a stretch of the row: the candidates in turn
        // (one destination each), or each candidate's w destinations at once; a short
        // one (a switch's own LID alone) costs less entry by entry.
        constexpr uint32_t kStretch = 8;
        for (uint32_t i = first; i < end;) {
          const size_t run = next_run++;
          const uint32_t stop = run_end[run];
          const uint32_t q = by.div(dp[i].idx);
          uint32_t rem = dp[i].idx - q * w, r = mod_by[count].mod(q);
          if (!run_lids_follow[run] || stop - i < kStretch) {
            for (; i < stop; ++i) {
              rowp[lid[i]] = cand[r];
              if (++rem == w) {
                rem = 0;
                if (++r == count) r = 0;
              }
            }
            continue;
          }
          PortNum* to = rowp + lid[i];
          for (uint32_t n = stop - i; n;) {
            const uint32_t k = w == 1 ? std::min(n, count - r) : std::min(n, w - rem);
            if (w == 1)
              detail::copy_short(to, cand + r, k, true);
            else {
              PortNum same[16];
              std::memset(same, cand[r], sizeof same);
              detail::copy_short(to, same, k, false);
            }
            to += k;
            n -= k;
            if (w == 1) {
              r += k;
            } else {
              rem = 0;
              ++r;
            }
            if (r == count) r = 0;
          }
          i = stop;
        }
        first = end;
        continue;
      }
      for (uint32_t i = first; i < end; ++i) {
        const Dest& d = dp[i];
        if (d.sw == s) {
          rowp[d.lid] = d.exit;
          continue;
        }
        if (kind == kNone) continue;
        if (kind == kToLeaf) {
          uint32_t n = 0;
          for (auto [u, port] : parents[d.sw])
            if (u == s && n < 64) to_leaf[n++] = port;
          if (n)
            rowp[d.lid] = before ? keep(d.lid, PortSet(to_leaf, n), to_leaf, n,
                                        to_leaf[mod_by[n].mod(by.div(d.idx))])
                                 : to_leaf[mod_by[n].mod(by.div(d.idx))];
          if (arp) arp[d.lid] = group_of(to_leaf, n);
          continue;
        }
        const uint32_t r = pick(d.idx);
        rowp[d.lid] = repair ? keep(d.lid, cands, cand, count, cand[r]) : cand[r];
        if (arp) arp[d.lid] = plan_group;
      }
      while (run_end[next_run] < end) ++next_run;
      ++next_run;  // (the group's last run ends at its end)
      first = end;
    }
    for (auto [lid, exit] : own[s]) rowp[lid] = exit;
    for (const Redo& x : redo) {
      PortNum best = x.cand.front();
      for (PortNum c : x.cand)
        if (used[c] < used[best]) best = c;
      rowp[x.lid] = best;
      ++used[best];
    }
  });

  // The turns: check the dependency graph; move what closes a cycle to SL 1 (turns
  // not at the turn leaf first), and check again.
  uint64_t turns = 0, detours = 0;
  for (const auto& pl : plans) turns += pl->turns, detours += pl->detours;
  int on_sl1 = 0;
  // Up-then-down routes follow the levels, so a cycle needs a turning route and stays
  // above its turn: the first check searches only there.
  std::vector<uint32_t> height(f.size(), 0);
  for (uint32_t s = 0; s < ns; ++s) height[sw.nodes[s]] = level[s];
  std::vector<uint16_t> turning;
  for (const Dest& d : dests)
    if (plans[d.plan]->turns || plans[d.plan]->detours) turning.push_back(d.lid);
  if (turns || detours) {
    auto move = [&](Turn which) {
      if (out.path_sl.empty()) {
        out.path_sl.assign(f.size(), {});
        for (NodeIndex n : sw.nodes) out.path_sl[n].assign(size_t(out.top_lid) + 1, 0);
      }
      for (const Dest& d : dests) {
        const Plan& pl = *plans[d.plan];
        for (uint32_t s = 0; s < ns; ++s)
          if (pl.turn[s] == which) out.path_sl[sw.nodes[s]][d.lid] = 1;
      }
    };
    // (Its own check: every other route was built up-then-down; the chain checks them all.)
    bool acyclic = updown_dependencies(f, out, height, turning, TurnScan::kTurningOnly).acyclic;
    while (!acyclic) {
      if (on_sl1 == 2)
        return refuse(Refusal::kTopology,
                      "ftree: degraded fat tree: the paths of switches without an up-then-down "
                      "path close a dependency cycle even on a VL of their own");
      move(++on_sl1 == 1 ? kWhereMet : kAtTurnLeaf);
      acyclic = channel_dependencies(f, out).acyclic;
    }
  }
  if (!out.path_sl.empty()) {
    if (o.max_vls < 2)
      return refuse(Refusal::kVirtualLanes,
                    "ftree: the paths of switches without an up-then-down path need a second "
                    "VL; 1 allowed");
    out.vls = 2;
  }
  std::vector<uint32_t> per_level(top + 1, 0);
  for (uint32_t s = 0; s < ns; ++s) ++per_level[level[s]];
  std::string shape;
  for (uint32_t l = 0; l <= top; ++l) shape += (l ? "/" : "") + std::to_string(per_level[l]);
  out.notes.push_back("ftree: " + std::to_string(top + 1) + " levels, switches per level " + shape +
                      " (leaves first)");
  // Per-target counts are of switches; a leaf class's plan serves all its LIDs.
  uint64_t turn_pairs = 0, detour_pairs = 0;
  std::vector<uint32_t> lids_per_plan(plans.size(), 0);
  for (const Dest& d : dests) ++lids_per_plan[d.plan];
  for (size_t i = 0; i < plans.size(); ++i)
    turn_pairs += plans[i]->turns * lids_per_plan[i],
        detour_pairs += plans[i]->detours * lids_per_plan[i];
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
  if (was) {
    out.repaired = true;
    out.rerouted = detail::changed_entries(sw, out, *prev_tables, *was, owners);
    out.notes.push_back(
        "ftree: only links went away since the previous tables: " + std::to_string(out.rerouted) +
        " (switch, LID) entries changed, each whose port is still a candidate "
        "kept" +
        (plans_taken ? "; " + std::to_string(plans_taken) +
                           " targets' plans as the previous tables' were (of " +
                           std::to_string(targets.size()) + ")"
                     : std::string()) +
        (rows_memo ? "; of " + std::to_string(ns) + " switches, " + std::to_string(rows_whole) +
                         " switches' rows kept whole (every LID's candidates there as before) "
                         "and " +
                         std::to_string(rows_partly) +
                         " checked only for the LIDs whose candidates changed there"
                   : std::string()));
  }
  made->plans = std::move(plans);
  made->class_plan = std::move(class_of_ups);
  made->switch_plan.assign(ns, kInf);
  for (uint32_t ti = 0; ti < targets.size(); ++ti)
    if (!targets[ti].leaf_class) made->switch_plan[targets[ti].sw] = ti;
  made->plan_of_lid = std::move(plan_of_lid);
  out.memo = std::move(made);
  out.deadlock_free = true;
  out.updown_height = std::move(height);
  out.updown_turning = std::move(turning);
  return std::move(out);
}

}  // namespace weft::routing
