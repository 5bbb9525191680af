#include "updn.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>

#include "layering.hpp"
#include "parallel.hpp"
#include "shuffled_orders.hpp"
#include "switch_graph.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/splitmix.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {
constexpr uint32_t kInf = std::numeric_limits<uint32_t>::max();
constexpr uint16_t kFar16 = 0xffff;  // a path is shorter than the 49,151 unicast LIDs

// Whether a hop toward a group is a legal one, one at a time (route() takes eight groups
// a vector where it can): down, when it shortens the down-only distance `dd` where
// there is one; up, when it shortens the up/down cost `c` where there is none. `to`:
// the far end's down-only distance (down) or cost (up).
inline bool legal_hop(bool down, uint16_t to, uint16_t dd, uint16_t c) {
  return down ? dd != kFar16 && to + 1u == dd : dd == kFar16 && c != kFar16 && to + 1u == c;
}

// What route() left, kept with the tables it made (Tables::memo) for the next repair.
// A switch that lost no link, and whose up/down distances and its neighbours' are all
// as they were, has the legal hops it had toward every group: a repair keeps its whole
// row (every entry was a legal hop, or one the bridging writes again) and deals
// nothing there, without checking its entries one by one (the radix-56 tree's 187 M
// entries: a third of the repair's CPU).
struct UpDownMemo final : EngineMemo {
  bool down_up = false;
  std::vector<NodeIndex> nodes;            // the switches (their node in that fabric)
  std::vector<uint32_t> part, rank, hops;  // per switch; hops: its switch links
  std::vector<uint32_t> group_key;         // per group: its switch, its LID count, LID << 8 | exit
  std::vector<uint16_t> dd_at, c_at;       // [switch * groups + group]
  // Per switch, as route() left them: LIDs routed over each port (the balance), and the
  // groups it had no legal hop to.
  std::vector<std::vector<uint32_t>> used, missed;
  std::vector<uint32_t> down_short;
  std::vector<uint64_t> missing;
  // The bridges of the pairs no up*down* path joins (bridged()), by list of unrouted
  // switches; the turn switch and its distances, which they depend on.
  uint32_t bridge_turn = 0;
  std::vector<uint32_t> bridge_from_turn;
  detail::Bridges bridges;
};
}  // namespace

Routed UpDownEngine::compute(const Fabric& f, const Options& o) const {
  auto st = detail::start(f);
  if (!st) return std::unexpected(st.error());
  auto& [sw, owners, out] = *st;
  const size_t ns = sw.nodes.size();
  if (ns == 0) return std::move(out);
  // Switch links, in port order (which decides ties), flat: switch s's are
  // [link_begin[s], link_begin[s + 1]).
  struct Link {
    uint32_t to;
    PortNum port, back;
  };
  std::vector<Link> links;
  std::vector<uint32_t> link_begin(ns + 1, 0);
  std::vector<std::vector<uint32_t>> nbrs(ns);
  for (uint32_t s = 0; s < ns; ++s) {
    for (const auto& p : f.node(sw.nodes[s]).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch()) {
        nbrs[s].push_back(sw.of_node[p.peer]);
        links.push_back({sw.of_node[p.peer], p.num, p.peer_port});
      }
    link_begin[s + 1] = static_cast<uint32_t>(links.size());
  }
  // Hops from a set of switches, by one BFS.
  auto hops_from = [&](const std::vector<uint32_t>& from) {
    std::vector<uint32_t> h(ns, kInf);
    std::deque<uint32_t> q;
    for (uint32_t s : from)
      if (h[s] == kInf) h[s] = 0, q.push_back(s);
    while (!q.empty()) {
      const uint32_t s = q.front();
      q.pop_front();
      for (uint32_t n : nbrs[s])
        if (h[n] == kInf) h[n] = h[s] + 1, q.push_back(n);
    }
    return h;
  };
  // Connected parts: a pair in different parts is unreachable, not a routing failure.
  std::vector<uint32_t> part(ns, kInf);
  for (uint32_t s = 0; s < ns; ++s) {
    if (part[s] != kInf) continue;
    const auto h = hops_from({s});
    for (uint32_t x = 0; x < ns; ++x)
      if (h[x] != kInf) part[x] = s;
  }

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
    std::vector<uint32_t> leaves;
    for (uint32_t s = 0; s < ns; ++s)
      if (sw.sources[s] > 1) leaves.push_back(s);
    const auto leaf_dist = hops_from(leaves);
    uint32_t best = 0;
    for (uint32_t s = 0; s < ns; ++s)
      if (leaf_dist[s] != kInf) best = std::max(best, leaf_dist[s]);
    if (best > 0) {
      // updn: the switches farthest from the CAs (a tree's spines). dnup ranks from the
      // other end, as OpenSM's does: rank 0 is every switch with CAs, so that its
      // reversed links still climb a tree toward its spines (from the spines, every
      // route of a tree would have to descend and climb back, which down*up* forbids).
      for (uint32_t s = 0; s < ns; ++s)
        if (down_up_ ? leaf_dist[s] == 0 : leaf_dist[s] == best) roots.push_back(s);
    } else {
      // Every switch has CAs: one root at the centre (least eccentricity, lowest GUID).
      const std::vector<uint8_t> dist = detail::switch_distances(f, sw);
      uint32_t centre = 0, ecc_best = kInf;
      for (uint32_t s = 0; s < ns; ++s) {
        uint32_t ecc = 0;
        for (uint32_t t = 0; t < ns; ++t)
          if (dist[size_t(t) * ns + s] != detail::kFar)
            ecc = std::max<uint32_t>(ecc, dist[size_t(t) * ns + s]);
        if (ecc < ecc_best ||
            (ecc == ecc_best && f.node(sw.nodes[s]).guid < f.node(sw.nodes[centre]).guid))
          ecc_best = ecc, centre = s;
      }
      roots.push_back(centre);
    }
  }

  // A repair of the previous tables, when only links went away (as minhop's): an entry
  // whose port is still a legal up*down* hop one step nearer keeps it; only the others
  // are routed again, balanced against the kept ones. The guarantees are a fresh
  // computation's (every hop legal and shortest among legal ones); only the choice
  // among equal hops is the previous one.
  const std::optional<std::vector<NodeIndex>> was = detail::repairable(o, name(), f, owners);
  const Tables* prev = o.previous.tables;

  // Destinations grouped by the switch that delivers them: every LID of a group has the
  // same up/down distances, so they are computed once per group.
  struct Group {
    uint32_t t;
    std::vector<std::pair<uint16_t, PortNum>> lids;  // (LID, exit port at t)
  };
  std::vector<Group> groups;
  {
    // In the order of each switch's lowest LID, as the LIDs come.
    detail::LidsBySwitch at = detail::lids_by_switch(f, sw, owners);
    for (uint32_t t = 0; t < ns; ++t)
      if (!at[t].empty()) groups.push_back({t, std::move(at[t])});
    std::sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
      return a.lids.front().first < b.lids.front().first;
    });
  }
  // The previous tables' memo, where it speaks of these switches and these groups
  // (route() also asks for the same ranks, and all groups' distances at once).
  std::vector<uint32_t> group_key;
  for (const Group& g : groups) {
    group_key.push_back(g.t);
    group_key.push_back(uint32_t(g.lids.size()));
    for (auto [lid, exit] : g.lids) group_key.push_back(uint32_t(lid) << 8 | exit);
  }
  const UpDownMemo* memo = nullptr;
  if (was && prev->memo) {
    const auto* m = dynamic_cast<const UpDownMemo*>(prev->memo.get());
    bool same = m && m->down_up == down_up_ && m->nodes.size() == ns && m->part == part &&
                m->group_key == group_key;
    for (uint32_t s = 0; same && s < ns; ++s) same = m->nodes[s] == (*was)[sw.nodes[s]];
    if (same) memo = m;
  }
  std::shared_ptr<UpDownMemo> made;  // the last route()'s, for these tables
  // The last route()'s switches the memo kept whole, and those it checked only toward
  // the groups whose distances moved there or next door.
  size_t rows_whole = 0, rows_partly = 0;
  // The last bridged()'s distinct lists of switches to bridge, and those it took from
  // the memo.
  size_t bridge_lists = 0, reused_bridges = 0;

  std::vector<uint32_t> height;  // per node, of the last route()'s order
  // Per switch, of the last route(): destination switches with CAs (of its part) it
  // does not reach going only down. A root with none is a whole one.
  std::vector<uint32_t> down_short(ns, 0);
  // Per group: the switches (of its part of the fabric) the last route() left without
  // an up*down* path to it, in switch order.
  std::vector<std::vector<uint32_t>> unrouted(groups.size());
  // Routes every LID into `tables` with the given roots; returns the number of
  // (switch, LID) pairs left without an up*down* path and one example.
  // `no_ca_traffic`: set to whether every pair left without a path starts at a switch
  // without CAs or leads to one (a switch's own LID): no CA-to-CA route needs it.
  auto route = [&](const std::vector<uint32_t>& root_set, Tables& tables, std::string& example,
                   bool* no_ca_traffic = nullptr) -> size_t {
    for (auto& u : unrouted) u.clear();
    std::fill(down_short.begin(), down_short.end(), 0);
    rows_whole = rows_partly = 0;
    const std::vector<uint32_t> rank = hops_from(root_set);
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
    height.assign(f.size(), 0);  // up leads to the greater height
    for (uint32_t i = 0; i < ns; ++i) height[sw.nodes[topo[i]]] = static_cast<uint32_t>(ns - i);
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
    // Per switch, per port: LIDs routed there, the balance. (Each counts the switch's
    // sources, the same for all its ports, so plain counts compare the same.)
    std::vector<std::vector<uint32_t>> used(ns);
    for (uint32_t s = 0; s < ns; ++s) used[s].assign(f.node(sw.nodes[s]).ports.size(), 0);
    std::vector<uint64_t> missing(ns, 0);
    std::vector<uint32_t> first_missing(ns, kInf);  // (group index) of a switch's first

    // Groups in blocks: their distances in parallel (groups are independent), kept per
    // switch ([switch][group], so that a switch and its neighbours read rows of their
    // own); then every switch's entries in parallel (a switch's balance is its own).
    // All groups at once when their distances fit the budget (the radix-56 tree's
    // 3,920 groups take 61 MB); past it, in spans of groups that do.
    constexpr size_t kBlock = 64;
    const size_t budget = o.updown_distance_budget;  // (Options)
    const size_t span =
        std::max(kBlock, std::min(groups.size(), budget / (ns * 2 * sizeof(uint16_t))));
    std::vector<uint32_t> hops(ns);
    for (uint32_t s = 0; s < ns; ++s) hops[s] = uint32_t(ups[s].size() + downs[s].size());
    const UpDownMemo* const m =
        memo && span >= groups.size() && memo->rank == rank ? memo : nullptr;
    std::vector<uint16_t> dd_at, c_at;              // [switch * span + group in span]
    std::vector<std::vector<uint32_t>> missed(ns);  // per switch: groups it has no path to
    for (size_t g0 = 0; g0 < groups.size(); g0 += span) {
      const size_t gn = std::min(groups.size(), g0 + span) - g0;
      dd_at.assign(ns * gn, kFar16);
      c_at.resize(ns * gn);  // every entry written below
      // kBlock groups at a time, the blocks in parallel, straight into the rows.
      detail::parallel_for(
          (gn + kBlock - 1) / kBlock,
          [&](size_t blk) {
            const size_t b0 = blk * kBlock, bn = std::min(gn, b0 + kBlock) - b0;
            // Down-only distance to each t: BFS from t backwards over down-links (n -> m
            // is down when m -> n is up). It reaches only t's ancestors.
            std::vector<uint32_t> q;
            for (size_t k = 0; k < bn; ++k) {
              uint16_t* const dd = &dd_at[b0 + k];  // dd[s * gn]: switch s
              const uint32_t t = groups[g0 + b0 + k].t;
              dd[t * gn] = 0;
              q.assign(1, t);
              for (size_t i = 0; i < q.size(); ++i)
                for (const Hop& h : ups[q[i]])
                  if (dd[h.to * gn] == kFar16)
                    dd[h.to * gn] = static_cast<uint16_t>(dd[q[i] * gn] + 1), q.push_back(h.to);
            }
            // Up/down cost, highest switches first: the down-only distance where there is
            // one, else one more than the cheapest up neighbour's. Eight groups a vector
            // (GCC vector extensions, plain SSE2); kFar16 stays far.
            using Lanes = uint16_t __attribute__((vector_size(16)));
            constexpr size_t kVecs = kBlock / 8;
            Lanes far;
            for (unsigned i = 0; i < 8; ++i) far[i] = kFar16;
            const size_t nv = bn / 8;
            for (uint32_t s : topo) {
              Lanes best[kVecs];
              for (size_t v = 0; v < nv; ++v) best[v] = far;
              uint16_t tail[8];
              std::fill(tail, tail + 8, kFar16);
              for (const Hop& h : ups[s]) {
                const uint16_t* const x = &c_at[h.to * gn + b0];
                for (size_t v = 0; v < nv; ++v) {
                  Lanes y;
                  std::memcpy(&y, x + 8 * v, 16);
                  y -= (Lanes)(y != far);  // + 1 where not far
                  best[v] = y < best[v] ? y : best[v];
                }
                for (size_t k = 8 * nv; k < bn; ++k)
                  if (x[k] != kFar16)
                    tail[k - 8 * nv] = std::min<uint16_t>(tail[k - 8 * nv], x[k] + 1);
              }
              uint16_t* const c = &c_at[s * gn + b0];
              const uint16_t* const dd = &dd_at[s * gn + b0];
              for (size_t v = 0; v < nv; ++v) {
                Lanes d;
                std::memcpy(&d, dd + 8 * v, 16);
                const Lanes out_v = d != far ? d : best[v];
                std::memcpy(c + 8 * v, &out_v, 16);
              }
              for (size_t k = 8 * nv; k < bn; ++k)
                c[k] = dd[k] != kFar16 ? dd[k] : tail[k - 8 * nv];
            }
          },
          1);
      // A repair checks the previous entries in LID order (a row read straight through,
      // not at random in the groups' shuffled order): per LID, its group in this span and
      // its exit port at the group's switch; per switch, its own group.
      std::vector<uint32_t> lid_group, own_group;
      std::vector<PortNum> lid_exit;
      // Per group of the span: its switch, that switch's part, whether it has CAs, and
      // how many LIDs it holds.
      std::vector<uint32_t> span_t(gn), span_part(gn), span_lids(gn);
      std::vector<uint8_t> span_cas(gn);
      for (size_t k = 0; k < gn; ++k) {
        const Group& grp = groups[g0 + k];
        span_t[k] = grp.t;
        span_part[k] = part[grp.t];
        span_lids[k] = uint32_t(grp.lids.size());
        span_cas[k] = sw.sources[grp.t] > 1;
      }
      // With the memo, per switch: the groups whose legal hops there may have changed
      // (`touched`: those whose distances `moved` there or at a neighbour, whose rows its
      // legal hops read), unless it lost a link (`whole_check`: every group); and the
      // LIDs below the top no group holds (a repair leaves them unrouted). A switch with
      // no group touched keeps its row whole; one with few checks only theirs.
      std::vector<std::vector<uint32_t>> touched;
      std::vector<uint8_t> whole_check;
      std::vector<uint16_t> holes;
      if (m) {
        std::vector<std::vector<uint32_t>> moved(ns);
        detail::parallel_for(ns, [&](size_t si) {
          const uint16_t *a = &dd_at[si * gn], *b = &m->dd_at[si * gn], *x = &c_at[si * gn],
                         *y = &m->c_at[si * gn];
          constexpr size_t kRun = 64;
          for (size_t k0 = 0; k0 < gn; k0 += kRun) {
            const size_t n = std::min(kRun, gn - k0);
            if (std::memcmp(a + k0, b + k0, n * 2) == 0 && std::memcmp(x + k0, y + k0, n * 2) == 0)
              continue;
            for (size_t k = k0; k < k0 + n; ++k)
              if (a[k] != b[k] || x[k] != y[k]) moved[si].push_back(uint32_t(k));
          }
        });
        touched.resize(ns);
        whole_check.assign(ns, 0);
        for (uint32_t s = 0; s < ns; ++s) {
          if (m->hops[s] != hops[s]) whole_check[s] = 1;
          if (moved[s].empty()) continue;
          auto add = [&](uint32_t to) {
            touched[to].insert(touched[to].end(), moved[s].begin(), moved[s].end());
          };
          add(s);
          for (const Hop& h : ups[s]) add(h.to);
          for (const Hop& h : downs[s]) add(h.to);
        }
        for (uint32_t s = 0; s < ns; ++s) {
          auto& t = touched[s];
          std::sort(t.begin(), t.end());
          t.erase(std::unique(t.begin(), t.end()), t.end());
          // Past an eighth of the groups (and 64) the whole check is as cheap.
          if (t.size() > std::max<size_t>(gn / 8, 64)) whole_check[s] = 1;
          if (whole_check[s]) continue;
          ++(t.empty() ? rows_whole : rows_partly);
        }
      }
      if (was) {
        own_group.assign(ns, kInf);
        for (size_t k = 0; k < gn; ++k) {
          const Group& grp = groups[g0 + k];
          own_group[grp.t] = uint32_t(k);
          for (size_t i = 0; i < grp.lids.size(); ++i) {
            const uint16_t lid = grp.lids[i].first;
            if (lid >= lid_group.size()) lid_group.resize(lid + 1, kInf), lid_exit.resize(lid + 1);
            lid_group[lid] = uint32_t(k);
            lid_exit[lid] = grp.lids[i].second;
          }
        }
        if (m)
          for (size_t lid = 0; lid <= size_t(tables.top_lid); ++lid)
            if (lid >= lid_group.size() || lid_group[lid] == kInf) holes.push_back(uint16_t(lid));
      }
      // Each switch's order of the span's groups (a repair's switches, few of which deal,
      // take theirs one at a time).
      const detail::ShuffledOrders orders(uint32_t(gn), /*ahead=*/!was);
      detail::parallel_for(ns, [&](size_t si) {
        const auto s = static_cast<uint32_t>(si);
        // Raw pointers: the byte stores into the row could alias any vector's insides,
        // which would be reloaded after each one.
        PortNum* const row = tables.lft[sw.nodes[s]].data();
        if (!touched.empty() && !whole_check[s]) {
          // As it was: the previous row whole, its counts, and the groups it had no legal
          // hop to (their LIDs left to the bridging, as a full repair leaves them).
          const auto& before = prev->lft[(*was)[sw.nodes[s]]];
          const size_t n = std::min(tables.lft[sw.nodes[s]].size(), before.size());
          std::memcpy(row, before.data(), n);
          for (const uint16_t lid : holes)
            if (lid < n) row[lid] = kDropPort;
          for (const uint32_t g : m->missed[s])
            for (auto [lid, exit] : groups[g].lids) row[lid] = kDropPort;
          used[s] = m->used[s];
          missed[s] = m->missed[s];
          missing[s] = m->missing[s];
          down_short[s] = m->down_short[s];
          if (touched[s].empty()) return;
          // Then the groups touched here, as the whole check takes each one: their
          // entries out of the counts and the tallies, checked again, the broken ones
          // dealt in this switch's order of groups.
          const std::vector<uint32_t>& tk = touched[s];
          const uint32_t own = own_group[s], ps = part[s];
          const uint16_t *const dd = &dd_at[si * gn], *const c = &c_at[si * gn];
          const uint16_t* const dd_was = &m->dd_at[si * gn];
          const size_t nd = downs[s].size(), nh = nd + ups[s].size();
          const size_t words = (nh + 63) / 64;
          std::vector<PortNum> hop_port(nh);
          for (size_t j = 0; j < nh; ++j)
            hop_port[j] = (j < nd ? downs[s][j] : ups[s][j - nd]).port;
          std::vector<int32_t> hop_of(f.node(sw.nodes[s]).ports.size(), -1);
          for (size_t j = 0; j < nh; ++j) hop_of[hop_port[j]] = int32_t(j);
          std::vector<uint64_t> legal(tk.size() * words, 0);
          std::vector<uint8_t> was_missed(tk.size(), 0), now_missed(tk.size(), 0);
          for (const uint32_t g : m->missed[s])
            if (auto at = std::lower_bound(tk.begin(), tk.end(), g); at != tk.end() && *at == g)
              was_missed[at - tk.begin()] = 1;
          uint32_t* const cnt = used[s].data();
          std::vector<uint32_t> broken_at(tk.size() + 1, 0);
          std::vector<std::pair<uint16_t, PortNum>> broken;
          for (size_t i = 0; i < tk.size(); ++i) {
            const uint32_t k = tk[i];
            broken_at[i] = uint32_t(broken.size());
            if (k == own || span_part[k] != ps) continue;  // (the own group's exits stand)
            uint64_t* const lg = &legal[i * words];
            for (size_t j = 0; j < nh; ++j) {
              const Hop& h = j < nd ? downs[s][j] : ups[s][j - nd];
              const bool hit =
                  legal_hop(j < nd, (j < nd ? dd_at : c_at)[h.to * gn + k], dd[k], c[k]);
              lg[j / 64] |= uint64_t(hit) << (j % 64);
            }
            if (dd_was[k] == kFar16 && span_cas[k]) --down_short[s];
            if (dd[k] == kFar16 && span_cas[k]) ++down_short[s];
            uint64_t any = 0;
            for (size_t w = 0; w < words; ++w) any |= lg[w];
            now_missed[i] = !any;
            for (auto [lid, exit] : groups[k].lids) {
              const PortNum p = lid < n ? before[lid] : kDropPort;
              if (!was_missed[i] && p < used[s].size()) --cnt[p];
              const int32_t j = p < hop_of.size() ? hop_of[p] : -1;
              if (j >= 0 && lg[size_t(j) / 64] >> (size_t(j) % 64) & 1) {
                row[lid] = p;
                ++cnt[p];
              } else {
                row[lid] = kDropPort;
                broken.emplace_back(lid, exit);
              }
            }
          }
          broken_at[tk.size()] = uint32_t(broken.size());
          // The tallies of groups with no legal hop.
          if (std::any_of(was_missed.begin(), was_missed.end(), [](uint8_t x) { return x; }) ||
              std::any_of(now_missed.begin(), now_missed.end(), [](uint8_t x) { return x; })) {
            std::vector<uint32_t> left;
            size_t i = 0;
            for (const uint32_t g : m->missed[s]) {
              for (; i < tk.size() && tk[i] < g; ++i)
                if (now_missed[i]) left.push_back(tk[i]);
              if (i < tk.size() && tk[i] == g) {
                if (now_missed[i]) left.push_back(g);
                ++i;
              } else {
                left.push_back(g);
              }
            }
            for (; i < tk.size(); ++i)
              if (now_missed[i]) left.push_back(tk[i]);
            missed[s] = std::move(left);
            missing[s] = 0;
            for (const uint32_t g : missed[s]) missing[s] += span_lids[g];
          }
          if (broken.empty()) return;
          std::vector<uint32_t> hop_uses(nh);
          for (size_t j = 0; j < nh; ++j) hop_uses[j] = cnt[hop_port[j]];
          detail::Dealer dealer(hop_port, hop_uses);
          std::vector<uint32_t> slot(gn, kInf);
          for (size_t i = 0; i < tk.size(); ++i) slot[tk[i]] = uint32_t(i);
          for (const uint32_t k : shuffled_order(uint32_t(gn), s + 1 + g0)) {
            const uint32_t i = slot[k];
            if (i == kInf || broken_at[i + 1] == broken_at[i]) continue;
            if (!dealer.take(&legal[i * words], words)) continue;
            dealer.deal(row, broken.data() + broken_at[i], broken_at[i + 1] - broken_at[i],
                        detail::Dealer::NoSkip{});
          }
          for (size_t j = 0; j < nh; ++j) cnt[hop_port[j]] = dealer.uses(j);
          return;
        }
        uint32_t* const cnt = used[s].data();
        const uint16_t* const dd = &dd_at[si * gn];
        const uint16_t* const c = &c_at[si * gn];
        // Destinations in an order of this switch's own, as minhop takes them:
        // neighbours that took the same order would pile their choices onto the same
        // next switches (an upper tree level's busiest link grows several times);
        // independent orders spread them. A shuffle seeded by the switch (and span).
        const std::vector<uint32_t>& order = orders.get(s + 1 + g0);
        // The legal hops toward every group at once, link by link, each link's
        // neighbour row read straight through (in the shuffled order below, each
        // neighbour's row would be read at random, once per switch that has it): bit j
        // of legal[k] says hop j (downs first, then ups) is one: a down hop that shortens
        // the down-only distance where there is one, else an up hop that shortens the
        // up/down cost.
        const size_t nd = downs[s].size(), nh = nd + ups[s].size();
        const size_t words = (nh + 63) / 64;
        std::vector<uint64_t> legal(gn * words, 0);
        std::vector<PortNum> hop_port(nh);
        // Eight hops at a time, eight groups at a time: a 16-bit lane per group gathers
        // the eight hops' bits (GCC vector extensions, plain SSE2), then lands in the
        // masks.
        using Lanes = uint16_t __attribute__((vector_size(16)));
        Lanes far, one;
        for (unsigned i = 0; i < 8; ++i) far[i] = kFar16, one[i] = 1;
        for (size_t j = 0; j < nh; ++j) hop_port[j] = (j < nd ? downs[s][j] : ups[s][j - nd]).port;
        // Per hop: the row it reads (its neighbour's down-only distances for a down hop,
        // its up/down costs for an up hop).
        thread_local std::vector<const uint16_t*> hop_row;
        thread_local std::vector<uint8_t> hop_down;
        hop_row.resize(nh);
        hop_down.resize(nh);
        for (size_t j = 0; j < nh; ++j) {
          const Hop& h = j < nd ? downs[s][j] : ups[s][j - nd];
          hop_down[j] = j < nd;
          hop_row[j] = hop_down[j] ? &dd_at[h.to * gn] : &c_at[h.to * gn];
        }
        // Hops j0 .. j0 + 7 (of those there are), groups k .. k + 7: a lane per group.
        auto gather = [&](size_t j0, size_t k) {
          const size_t jn = std::min<size_t>(8, nh - j0);
          Lanes d, x, acc = {};
          std::memcpy(&d, dd + k, 16);
          std::memcpy(&x, c + k, 16);
          const Lanes down_ok = (Lanes)(d != far), up_ok = (Lanes)(d == far) & (Lanes)(x != far);
          for (size_t j = 0; j < jn; ++j) {
            Lanes n;
            std::memcpy(&n, hop_row[j0 + j] + k, 16);
            const Lanes hit =
                hop_down[j0 + j] ? (Lanes)(n + one == d) & down_ok : (Lanes)(n + one == x) & up_ok;
            acc |= hit & (Lanes)(one << j);
          }
          return acc;
        };
        size_t k8 = 0;  // the groups done eight at a time
        if (words == 1) {
          // Up to 64 hops: each group's eight bytes (one per eight hops) put side by side
          // by shifts and 16-bit and 32-bit interleaves (a transpose), not OR-ed into its
          // mask byte by byte.
          using Pairs = uint32_t __attribute__((vector_size(16)));
          for (; k8 + 8 <= gn; k8 += 8) {
            Lanes g[8] = {};  // g[q]: hops 8q .. 8q + 7, a byte's worth in each lane
            for (size_t j0 = 0; j0 < nh; j0 += 8) g[j0 / 8] = gather(j0, k8);
            Lanes w[4];  // w[q]: hops 16q .. 16q + 15
            for (unsigned q = 0; q < 4; ++q) w[q] = g[2 * q] | (Lanes)(g[2 * q + 1] << 8);
            const Lanes lo01 = __builtin_shuffle(w[0], w[1], Lanes{0, 8, 1, 9, 2, 10, 3, 11}),
                        hi01 = __builtin_shuffle(w[0], w[1], Lanes{4, 12, 5, 13, 6, 14, 7, 15}),
                        lo23 = __builtin_shuffle(w[2], w[3], Lanes{0, 8, 1, 9, 2, 10, 3, 11}),
                        hi23 = __builtin_shuffle(w[2], w[3], Lanes{4, 12, 5, 13, 6, 14, 7, 15});
            const Pairs m0 = __builtin_shuffle((Pairs)lo01, (Pairs)lo23, Pairs{0, 4, 1, 5}),
                        m1 = __builtin_shuffle((Pairs)lo01, (Pairs)lo23, Pairs{2, 6, 3, 7}),
                        m2 = __builtin_shuffle((Pairs)hi01, (Pairs)hi23, Pairs{0, 4, 1, 5}),
                        m3 = __builtin_shuffle((Pairs)hi01, (Pairs)hi23, Pairs{2, 6, 3, 7});
            std::memcpy(&legal[k8], &m0, 16);  // groups k8, k8 + 1
            std::memcpy(&legal[k8 + 2], &m1, 16);
            std::memcpy(&legal[k8 + 4], &m2, 16);
            std::memcpy(&legal[k8 + 6], &m3, 16);
          }
        } else {
          for (; k8 + 8 <= gn; k8 += 8)
            for (size_t j0 = 0; j0 < nh; j0 += 8) {
              const Lanes acc = gather(j0, k8);
              for (unsigned i = 0; i < 8; ++i)
                legal[(k8 + i) * words + j0 / 64] |= uint64_t(acc[i]) << (j0 & 63);
            }
        }
        for (size_t k = k8; k < gn; ++k)
          for (size_t j = 0; j < nh; ++j) {
            const bool hit = legal_hop(hop_down[j], hop_row[j][k], dd[k], c[k]);
            legal[k * words + j / 64] |= uint64_t(hit) << (j % 64);
          }
        // Repair: the entries whose previous port is still a legal hop keep it and
        // count as used, before the others are balanced against them. The others, in
        // their group's order, are all a group then deals (a kept LID takes no turn):
        // group k's are broken[broken_at[k], broken_end[k]).
        // (Buffers each thread keeps from switch to switch: a tree's top switches have
        // a thousand or more entries to deal again, the bridged ones.)
        using Lid = std::pair<uint16_t, PortNum>;
        thread_local std::vector<Lid> broken;
        thread_local std::vector<uint32_t> broken_at, broken_end;
        broken.clear();
        if (was) {
          const auto& before = prev->lft[(*was)[sw.nodes[s]]];
          std::vector<int32_t> hop_of(f.node(sw.nodes[s]).ports.size(), -1);
          for (size_t j = 0; j < nh; ++j) hop_of[hop_port[j]] = int32_t(j);
          // The entries not kept, in LID order: in each group's own order (a group's
          // LIDs come sorted), then bucketed in the order the groups deal.
          thread_local std::vector<uint16_t> brk;
          brk.clear();
          const uint32_t own = own_group[s];
          for (size_t lid = 0; lid < lid_group.size(); ++lid) {
            const uint32_t k = lid_group[lid];
            if (k == kInf || k == own) continue;
            const PortNum p = lid < before.size() ? before[lid] : kDropPort;
            const int32_t j = p < hop_of.size() ? hop_of[p] : -1;
            if (j < 0 || !(legal[k * words + size_t(j) / 64] >> (size_t(j) % 64) & 1)) {
              brk.push_back(uint16_t(lid));
              continue;
            }
            row[lid] = p;
            ++cnt[p];
          }
          broken_at.assign(gn, 0);
          broken_end.assign(gn, 0);
          for (const uint16_t lid : brk) ++broken_end[lid_group[lid]];
          uint32_t at = 0;
          for (const uint32_t k : order) {
            broken_at[k] = at;
            at += broken_end[k];
            broken_end[k] = broken_at[k];
          }
          broken.resize(brk.size());
          for (const uint16_t lid : brk)
            broken[broken_end[lid_group[lid]]++] = {lid, lid_exit[lid]};
        }
        // The groups this switch does not reach going only down, and those it has no
        // legal hop to (of its part of the fabric), in group order: these counts need no
        // shuffled order, and read each group's facts from dense arrays.
        {
          const uint32_t ps = part[s];
          for (size_t k = 0; k < gn; ++k) {
            if (span_t[k] == s || span_part[k] != ps) continue;
            if (dd[k] == kFar16 && span_cas[k]) ++down_short[s];
            uint64_t any = 0;
            for (size_t w = 0; w < words; ++w) any |= legal[k * words + w];
            if (!any) {
              missed[s].push_back(uint32_t(g0 + k));
              missing[s] += span_lids[k];
            }
          }
        }
        // The groups' LIDs round robin over the candidates (ports), from the least used.
        std::vector<uint32_t> hop_uses(nh);
        for (size_t j = 0; j < nh; ++j) hop_uses[j] = cnt[hop_port[j]];
        detail::Dealer dealer(hop_port, hop_uses);
        for (const uint32_t k : order) {
          const Group& grp = groups[g0 + k];
          const uint32_t t = grp.t;
          const auto* const lids = grp.lids.data();
          const size_t nl = grp.lids.size();
          if (s == t) {
            for (size_t i = 0; i < nl; ++i) row[lids[i].first] = lids[i].second;
            continue;
          }
          if (!dealer.take(legal.data() + k * words, words)) continue;  // (counted above)
          // A repair deals only the entries it did not keep (a group with none takes no
          // turn either way).
          if (was) {
            if (broken_end[k] > broken_at[k])
              dealer.deal(row, broken.data() + broken_at[k], broken_end[k] - broken_at[k],
                          detail::Dealer::NoSkip{});
          } else
            dealer.deal(row, lids, nl, detail::Dealer::NoSkip{});
        }
        for (size_t j = 0; j < nh; ++j) cnt[hop_port[j]] = dealer.uses(j);
      });
    }
    // (Each unrouted[g] comes out in switch order as switches are taken in order; a
    // switch's list itself, in its shuffled order, needs no sorting.)
    for (uint32_t s = 0; s < ns; ++s) {
      if (!missed[s].empty())
        first_missing[s] = *std::min_element(missed[s].begin(), missed[s].end());
      for (uint32_t g : missed[s]) unrouted[g].push_back(s);
    }
    size_t unreachable = 0;
    uint32_t ex_group = kInf, ex_switch = 0;
    for (uint32_t s = 0; s < ns; ++s) {
      unreachable += missing[s];
      if (first_missing[s] < ex_group) ex_group = first_missing[s], ex_switch = s;
    }
    if (unreachable)
      example = fabric::port_ref(f, sw.nodes[ex_switch], 0) + " to LID " +
                std::to_string(groups[ex_group].lids.front().first);
    if (no_ca_traffic) {
      *no_ca_traffic = true;
      for (uint32_t s = 0; s < ns && *no_ca_traffic; ++s)
        if (sw.sources[s] > 1)
          for (uint32_t g : missed[s])
            if (sw.sources[groups[g].t] > 1) *no_ca_traffic = false;
    }
    // What the next repair may start from, when all groups' distances were held at once.
    made.reset();
    if (span >= groups.size()) {
      made = std::make_shared<UpDownMemo>();
      made->down_up = down_up_;
      made->nodes = sw.nodes;
      made->part = part;
      made->rank = rank;
      made->hops = std::move(hops);
      made->group_key = group_key;
      made->dd_at = std::move(dd_at);
      made->c_at = std::move(c_at);
      made->used = std::move(used);
      made->missed = std::move(missed);
      made->down_short = down_short;
      made->missing = std::move(missing);
    }
    return unreachable;
  };
  // Every route up*down* along `height`; those to `turning` may turn anywhere.
  auto promise = [&](std::vector<uint16_t> turning) {
    out.deadlock_free = true;
    out.updown_height = height;
    out.updown_turning = std::move(turning);
  };
  // The pairs the last route() left without a path, when no CA-to-CA route needs them
  // (typically a tree's top switches toward each other's LIDs, and on a degraded tree
  // a leaf cut from an aggregation switch toward that switch's LID): each takes a
  // shortest way into the routed switches. True, with the promise made, when the
  // dependency graph stays acyclic.
  std::optional<detail::Layering> layered;  // how the last bridged() layered, if it did
  auto bridged = [&]() -> bool {
    std::vector<size_t> todo;
    for (size_t g = 0; g < groups.size(); ++g)
      if (!unrouted[g].empty()) todo.push_back(g);
    // As ftree does: first through unrouted switches only, to one turn switch (the
    // first with CAs), so that most turns are at one place; then the rest from the
    // routed switches nearest it.
    uint32_t turn = 0;
    while (turn + 1 < ns && sw.sources[turn] <= 1) ++turn;
    const std::vector<uint32_t> from_turn = hops_from({turn});
    std::vector<uint32_t> near(ns), rank_near(ns);
    for (uint32_t s = 0; s < ns; ++s) near[s] = s;
    std::stable_sort(near.begin(), near.end(),
                     [&](uint32_t a, uint32_t b) { return from_turn[a] < from_turn[b]; });
    for (uint32_t i = 0; i < ns; ++i) rank_near[near[i]] = i;
    // Those of the previous tables' memo where nothing they depend on changed
    // (detail::bridge_each). Switches of other parts count as routed: no link leads there.
    const UpDownMemo* const bm =
        memo && memo->bridge_turn == turn && memo->bridge_from_turn == from_turn ? memo : nullptr;
    detail::Bridges bridges = detail::bridge_each(
        unrouted, ns, turn, rank_near,
        [&](uint32_t s, auto&& fn) {
          for (uint32_t l = link_begin[s]; l < link_begin[s + 1]; ++l)
            fn(links[l].to, links[l].port, links[l].back);
        },
        [&](size_t g, const std::vector<detail::BridgeHop>& hops) {
          for (const detail::BridgeHop& h : hops) {
            auto& row = out.lft[sw.nodes[h.sw]];
            for (auto [lid, exit] : groups[g].lids) row[lid] = h.port;
          }
        },
        bm ? &bm->bridges : nullptr,
        bm ? detail::lost_link_ends(*o.previous.fabric, f, sw, *was)
           : std::vector<std::pair<uint32_t, PortNum>>{},
        &reused_bridges);
    bridge_lists = bridges.size();
    if (made) {
      made->bridge_turn = turn;
      made->bridge_from_turn = from_turn;
      made->bridges = std::move(bridges);
    }
    // The up*down* routes follow the order; only routes to bridged LIDs turn.
    std::vector<uint16_t> turning;
    for (size_t g : todo)
      for (auto [lid, exit] : groups[g].lids) turning.push_back(lid);
    layered.reset();
    // (Its own check: every other route was built up*down*; the chain checks them all.)
    if (!updown_dependencies(f, out, height, turning, TurnScan::kTurningOnly).acyclic) {
      // The turns close a cycle on one VL. As dfsssp does, the routes are spread over
      // layers, each acyclic: the up*down* LIDs' whole trees stay on VL 0 together;
      // the bridged LIDs' trees go there whole where they fit, else a branch or a path
      // at a time onto the lowest layer that stays acyclic (on degraded trees, VL 1).
      // Dropping the roots that no longer reach every leaf instead (below) costs their
      // transit: the busiest link 1.5-2.3x minhop's on the 6-ary 3-tree with 6 failed
      // links, where the layers hold it within 1.02x on a second VL (which carries only
      // routes toward the bridged LIDs: those are tried last).
      // Past Options::large_fabric (switches x LIDs) the layering and the check of its
      // layers take too long for a sweep (24 s on the radix-56 tree with 20 failed
      // links): the roots are left out instead.
      if (o.max_vls < 2 || ns * owners.size() > o.large_fabric) return false;
      auto l = detail::layer_paths(f, sw, owners, out, o, name(), "bridged routes", turning);
      if (!l) {
        out.path_sl.clear();
        out.vls = 1;
        return false;
      }
      layered = *l;
    }
    // Groups for the CA LIDs where a switch has an up*down* way to them; none for the
    // bridged (switch, LID) pairs.
    promise(std::move(turning));
    if (o.adaptive) detail::updown_groups(f, sw, out);
    if (layered) {
      // Layered routes no longer follow one order: the chain checks them in full, and
      // their groups per VL over every port a packet may take.
      out.updown_height.clear();
      out.updown_turning.clear();
    }
    return true;
  };
  auto describe = [&](size_t missing, size_t n_roots, const std::string& example) {
    return std::to_string(missing) +
           (down_up_ ? " (switch, LID) pairs have no down*up* path with "
                     : " (switch, LID) pairs have no up*down* path with ") +
           std::to_string(n_roots) + " root(s), e.g. " + example;
  };
  auto bridged_note = [&] {
    std::string n =
        ", all from or to switches without CAs: they take a shortest way into the routed "
        "switches (" +
        (reused_bridges
             ? std::to_string(reused_bridges) + " of the " + std::to_string(bridge_lists) +
                   " ways, one per set of such switches, as the previous tables' "
                   "were; "
             : std::string()) +
        "dependency graph checked";
    if (!layered) return n + ")";
    return n + "; their turns close a cycle on one VL: " + std::to_string(layered->whole) +
           " LIDs whole on VL 0; of the other " + std::to_string(layered->deferred) + ", " +
           std::to_string(layered->branches) + " branches whole, then " +
           std::to_string(layered->paths) + " paths one by one; " + std::to_string(int(out.vls)) +
           " VLs, each acyclic; SL i must map to VL i on every port)";
  };
  // After the last route(): what the repair kept and routed again.
  // (Counted as the entries that changed: those routed again, and the bridged ones a
  // shortest way into the routed switches moved.)
  auto repaired = [&] {
    if (!was) return;
    out.repaired = true;
    out.rerouted = detail::changed_entries(sw, out, *prev, *was, owners);
    out.notes.push_back(
        std::string(name()) +
        ": only links went away since the previous tables: " + std::to_string(out.rerouted) +
        " (switch, LID) entries changed, each whose hop is still a legal one "
        "kept" +
        (rows_whole || rows_partly
             ? "; " + std::to_string(rows_whole) + " of " + std::to_string(ns) +
                   " switches' rows kept whole (their distances, and their neighbours', as "
                   "they were), " +
                   std::to_string(rows_partly) +
                   " checked only toward the groups whose distances moved there or next door"
             : std::string()));
  };
  std::string example;
  bool no_ca_traffic = false;
  const size_t missing = route(roots, out, example, &no_ca_traffic);
  if (missing == 0) {
    out.notes.push_back(std::string(name()) + ": " + std::to_string(roots.size()) + " root(s)");
    promise({});
    if (o.adaptive) detail::updown_groups(f, sw, out);
    repaired();
    out.memo = made;
    return std::move(out);
  }
  const std::string why = describe(missing, roots.size(), example);
  if (no_ca_traffic && bridged()) {
    out.notes.push_back(std::string(name()) + ": " + std::to_string(roots.size()) + " root(s); " +
                        why + bridged_note());
    repaired();
    out.memo = made;
    return std::move(out);
  }
  // Detected roots of a degraded tree: a spine that lost a link, and every spine above
  // an aggregation switch that lost a leaf, no longer reach every leaf going down, and
  // the turns their pairs need can close a cycle. Left out of the roots they rank
  // below the others (they carry their own traffic, not transit), and the whole ones
  // route as before.
  if (o.roots.empty()) {
    std::vector<uint32_t> whole;
    for (uint32_t r : roots)
      if (down_short[r] == 0) whole.push_back(r);
    if (!whole.empty() && whole.size() < roots.size()) {
      std::string example2;
      bool no_ca2 = false;
      const size_t missing2 = route(whole, out, example2, &no_ca2);
      const std::string kept = std::to_string(whole.size()) + " of the " +
                               std::to_string(roots.size()) +
                               " detected roots that reach every switch with CAs going down";
      if (missing2 == 0) {
        out.notes.push_back(std::string(name()) + ": " + why + "; routed with the " + kept);
        promise({});
        if (o.adaptive) detail::updown_groups(f, sw, out);
        repaired();
        out.memo = made;
        return std::move(out);
      }
      if (no_ca2 && bridged()) {
        out.notes.push_back(std::string(name()) + ": " + why + "; with the " + kept + ", " +
                            describe(missing2, whole.size(), example2) + bridged_note());
        repaired();
        out.memo = made;
        return std::move(out);
      }
    }
  }
  if (!o.roots.empty()) return refuse(Refusal::kTopology, std::string(name()) + ": " + why);
  // For updn, one root reaches every switch going down and every switch reaches it
  // going up, so a connected fabric is always complete with a single root. dnup's
  // mirror image has no such guarantee, and may still refuse.
  std::vector<uint32_t> one{*std::min_element(
      roots.begin(), roots.end(),
      [&](uint32_t x, uint32_t y) { return f.node(sw.nodes[x]).guid < f.node(sw.nodes[y]).guid; })};
  std::string example1;
  if (const size_t left = route(one, out, example1); left)
    return refuse(down_up_ ? Refusal::kTopology : Refusal::kDisconnected,
                  std::string(name()) + ": " + why + "; with the single root " +
                      f.node(sw.nodes[one[0]]).guid.str() + " still " + std::to_string(left) +
                      ", e.g. " + example1);
  out.notes.push_back(std::string(name()) + ": " + why + "; routed with the single root " +
                      f.node(sw.nodes[one[0]]).guid.str());
  promise({});
  if (o.adaptive) detail::updown_groups(f, sw, out);
  repaired();
  out.memo = made;
  return std::move(out);
}

}  // namespace weft::routing
