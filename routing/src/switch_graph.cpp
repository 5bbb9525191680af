#include "switch_graph.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/range/iterator_range.hpp>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

namespace weft::routing::detail {

using fabric::Fabric;
using fabric::NodeIndex;
using SwitchGraph = boost::compressed_sparse_row_graph<boost::directedS>;

Switches index_switches(const Fabric& f) {
  Switches s;
  s.of_node.assign(f.size(), ~0u);
  for (NodeIndex n = 0; n < f.size(); ++n) {
    if (!f.node(n).is_switch()) continue;
    s.of_node[n] = static_cast<uint32_t>(s.nodes.size());
    s.nodes.push_back(n);
  }
  s.sources.assign(s.nodes.size(), 1);  // the switch's own port 0
  for (uint32_t i = 0; i < s.nodes.size(); ++i)
    for (const auto& p : f.node(s.nodes[i]).ports)
      if (p.linked() && !f.node(p.peer).is_switch()) ++s.sources[i];
  return s;
}

// All-pairs switch hop distances, row-major [from * n + to].
std::vector<uint8_t> switch_distances(const Fabric& f, const Switches& sw) {
  const size_t n = sw.nodes.size();
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t i = 0; i < n; ++i)
    for (const auto& p : f.node(sw.nodes[i]).ports)
      if (p.num != 0 && p.linked() && f.node(p.peer).is_switch())
        edges.emplace_back(i, sw.of_node[p.peer]);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  SwitchGraph g(boost::edges_are_sorted, edges.begin(), edges.end(), n);
  std::vector<uint8_t> dist(n * n, kFar);
  // Breadth-first from 64 sources at once, a bit per source (a hand-written
  // traversal over the Boost.Graph CSR adjacency: Boost's BFS runs one source at a
  // time, which at 3,920 switches is six times slower). Batches run in parallel.
  parallel_for((n + 63) / 64,
               [&](size_t batch) {
                 const size_t first = batch * 64, count = std::min<size_t>(64, n - first);
                 std::vector<uint64_t> seen(n, 0), frontier(n, 0), next(n, 0);
                 for (size_t k = 0; k < count; ++k) {
                   seen[first + k] = frontier[first + k] = uint64_t(1) << k;
                   dist[(first + k) * n + first + k] = 0;
                 }
                 for (uint8_t level = 1; level < kFar; ++level) {
                   bool any = false;
                   for (uint32_t v = 0; v < n; ++v) {
                     uint64_t x = 0;
                     for (auto u : boost::make_iterator_range(
                              boost::adjacent_vertices(SwitchGraph::vertex_descriptor{v}, g)))
                       x |= frontier[u];
                     x &= ~seen[v];
                     next[v] = x;
                     if (!x) continue;
                     any = true;
                     seen[v] |= x;
                     for (uint64_t bits = x; bits; bits &= bits - 1)
                       dist[(first + static_cast<size_t>(__builtin_ctzll(bits))) * n + v] = level;
                   }
                   if (!any) break;
                   frontier.swap(next);
                 }
               },
               1);
  return dist;
}

std::expected<Start, Failure> start(const Fabric& f) {
  Start st{index_switches(f), lid_owners(f), {}};
  const auto& owners = st.owners;
  for (size_t i = 1; i < owners.size(); ++i)
    if (owners[i].lid == owners[i - 1].lid)
      return refuse(Refusal::kInvalidInput,
                    "LID " + std::to_string(owners[i].lid.value) + " is held by two ports: " +
                        fabric::port_ref(f, owners[i - 1].node, owners[i - 1].port) + " and " +
                        fabric::port_ref(f, owners[i].node, owners[i].port));
  Tables& out = st.tables;
  out.top_lid = owners.empty() ? 0 : owners.back().lid.value;
  out.lft.resize(f.size());
  // Rows filled in parallel: on the largest fabrics this is hundreds of megabytes.
  parallel_for(st.sw.nodes.size(), [&](size_t i) {
    out.lft[st.sw.nodes[i]].assign(size_t(out.top_lid) + 1, kDropPort);
  });
  return st;
}

Channels channels(const Fabric& f) {
  Channels c;
  c.base.assign(f.size() + 1, 0);
  for (NodeIndex n = 0; n < f.size(); ++n)
    c.base[n + 1] = c.base[n] + static_cast<uint32_t>(f.node(n).ports.size());
  c.isl_peer.assign(c.count(), fabric::kNoNode);
  c.port.assign(c.count(), 0);
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    for (const auto& p : nd.ports) {
      c.port[c.base[n] + p.num] = p.num;
      if (nd.is_switch() && p.num && p.linked() && f.node(p.peer).is_switch())
        c.isl_peer[c.base[n] + p.num] = p.peer;
    }
  }
  return c;
}

std::optional<std::vector<NodeIndex>> removal_only(const Fabric& prev, const Fabric& f,
                                                   const std::vector<LidOwner>& owners) {
  std::vector<NodeIndex> was(f.size(), fabric::kNoNode);
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    auto p = prev.find(nd.guid);
    if (!p || prev.node(*p).type != nd.type || prev.node(*p).num_ports != nd.num_ports)
      return std::nullopt;
    was[n] = *p;
  }
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (!nd.is_switch()) continue;
    for (const auto& port : nd.ports) {
      if (port.num == 0 || !port.linked() || !f.node(port.peer).is_switch()) continue;
      const auto& before = prev.node(was[n]).ports[port.num];
      if (before.peer != was[port.peer] || before.peer_port != port.peer_port) return std::nullopt;
    }
  }
  const std::vector<LidOwner> held = lid_owners(prev);
  std::vector<const LidOwner*> by_lid;
  for (const LidOwner& o : held) {
    if (by_lid.size() <= o.lid.value) by_lid.resize(o.lid.value + 1, nullptr);
    by_lid[o.lid.value] = &o;
  }
  for (const LidOwner& o : owners) {
    const LidOwner* b = o.lid.value < by_lid.size() ? by_lid[o.lid.value] : nullptr;
    if (!b || b->node != was[o.node] || b->port != o.port) return std::nullopt;
  }
  return was;
}

std::vector<std::pair<uint32_t, PortNum>> lost_link_ends(const Fabric& prev, const Fabric& f,
                                                         const Switches& sw,
                                                         const std::vector<NodeIndex>& was) {
  std::vector<std::pair<uint32_t, PortNum>> out;
  for (uint32_t s = 0; s < sw.nodes.size(); ++s) {
    const auto& now = f.node(sw.nodes[s]);
    for (const auto& p : prev.node(was[sw.nodes[s]]).ports)
      if (p.num && p.linked() && prev.node(p.peer).is_switch() && !now.ports[p.num].linked())
        out.emplace_back(s, p.num);
  }
  return out;
}

std::optional<std::vector<NodeIndex>> repairable(const Options& o, std::string_view engine,
                                                 const Fabric& f,
                                                 const std::vector<LidOwner>& owners,
                                                 bool layered) {
  const Tables* prev = o.previous.tables;
  if (!prev || !o.previous.fabric || o.previous.engine != engine ||
      (!prev->path_sl.empty() && !layered) || !prev->hop_vl.empty())
    return std::nullopt;
  return removal_only(*o.previous.fabric, f, owners);
}

namespace {
// Per switch number: the owned LIDs (ascending) whose entry in `now` differs from the
// previous tables' (LIDs past either row's end count as differing). The owned LIDs as
// runs of consecutive ones (owners come sorted by LID); each run's entries compared a
// 64-byte block at a time, the few that differ taken one by one (the radix-56 tree's
// 187 M entries, a few thousand of them changed).
std::vector<std::vector<uint16_t>> differing_entries(const Switches& sw, const Tables& now,
                                                     const Tables& prev,
                                                     const std::vector<NodeIndex>& was,
                                                     const std::vector<LidOwner>& owners) {
  std::vector<std::pair<uint32_t, uint32_t>> runs;  // [first, end)
  for (const LidOwner& o : owners) {
    const uint32_t lid = o.lid.value;
    if (!runs.empty() && runs.back().second == lid)
      ++runs.back().second;
    else if (runs.empty() || runs.back().second < lid)
      runs.emplace_back(lid, lid + 1);
  }
  std::vector<std::vector<uint16_t>> differ(sw.nodes.size());
  parallel_for(sw.nodes.size(), [&](size_t s) {
    const auto& row = now.lft[sw.nodes[s]];
    const auto& before = prev.lft[was[sw.nodes[s]]];
    const size_t both = std::min(row.size(), before.size());
    auto& d = differ[s];
    for (auto [a, b] : runs) {
      for (size_t i = a, end = std::min<size_t>(b, both); i < end;) {
        const size_t step = std::min<size_t>(64, end - i);
        if (std::memcmp(row.data() + i, before.data() + i, step) != 0)
          for (size_t k = i; k < i + step; ++k)
            if (row[k] != before[k]) d.push_back(static_cast<uint16_t>(k));
        i += step;
      }
      for (size_t k = std::max<size_t>(a, both); k < b; ++k) d.push_back(static_cast<uint16_t>(k));
    }
  });
  return differ;
}
}  // namespace

uint64_t changed_entries(const Switches& sw, const Tables& now, const Tables& prev,
                         const std::vector<NodeIndex>& was, const std::vector<LidOwner>& owners) {
  uint64_t total = 0;
  for (const auto& d : differing_entries(sw, now, prev, was, owners)) total += d.size();
  return total;
}

std::vector<uint16_t> changed_lids(const Switches& sw, const Tables& now, const Tables& prev,
                                   const std::vector<NodeIndex>& was,
                                   const std::vector<LidOwner>& owners) {
  std::vector<uint8_t> any(size_t(now.top_lid) + 1, 0);
  for (const auto& d : differing_entries(sw, now, prev, was, owners))
    for (const uint16_t lid : d)
      if (lid < any.size()) any[lid] = 1;
  std::vector<uint16_t> lids;
  for (size_t lid = 0; lid < any.size(); ++lid)
    if (any[lid]) lids.push_back(static_cast<uint16_t>(lid));
  return lids;
}

LidsBySwitch lids_by_switch(const Fabric& f, const Switches& sw,
                            const std::vector<LidOwner>& owners) {
  LidsBySwitch at(sw.nodes.size());
  for (const LidOwner& o : owners) {
    const auto& nd = f.node(o.node);
    if (nd.is_switch()) {
      at[sw.of_node[o.node]].emplace_back(o.lid.value, 0);
      continue;
    }
    const auto& port = nd.ports[o.port];
    if (!port.linked() || !f.node(port.peer).is_switch()) continue;  // CA-to-CA link: no switch
    at[sw.of_node[port.peer]].emplace_back(o.lid.value, port.peer_port);
  }
  return at;
}

void parallel_link_groups(const Fabric& f, const Switches& sw, Tables& t) {
  t.ar_group.assign(f.size(), {});
  t.ar_sets.assign(f.size(), {});
  parallel_for(sw.nodes.size(), [&](size_t si) {
    const NodeIndex n = sw.nodes[si];
    const auto& nd = f.node(n);
    // Port -> its group: the ports to one next switch, when there are two or more.
    std::vector<uint16_t> of_port(nd.ports.size(), Tables::kNoArGroup);
    std::map<NodeIndex, std::vector<PortNum>> to_peer;
    for (const auto& p : nd.ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch()) to_peer[p.peer].push_back(p.num);
    for (auto& [peer, ports] : to_peer) {
      if (ports.size() < 2) continue;
      for (PortNum p : ports) of_port[p] = static_cast<uint16_t>(t.ar_sets[n].size());
      t.ar_sets[n].push_back(ports);
    }
    const auto& row = t.lft[n];
    auto& group = t.ar_group[n];
    group.assign(row.size(), Tables::kNoArGroup);
    for (size_t lid = 1; lid < row.size(); ++lid)
      if (row[lid] < of_port.size()) group[lid] = of_port[row[lid]];
  });
}

void updown_groups(const Fabric& f, const Switches& sw, Tables& t) {
  const auto& h = t.updown_height;
  if (h.size() != f.size()) return parallel_link_groups(f, sw, t);
  for (const NodeIndex n : sw.nodes)
    for (const auto& p : f.node(n).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch() && h[p.peer] == h[n])
        return parallel_link_groups(f, sw, t);
  t.ar_group.assign(f.size(), {});
  t.ar_sets.assign(f.size(), {});
  for (const NodeIndex n : sw.nodes) t.ar_group[n].assign(t.lft[n].size(), Tables::kNoArGroup);
  // The CA LIDs by the switch they hang on (a switch's own LID carries management
  // traffic only: it keeps its static route). LIDs whose routes may turn (some switch
  // without CAs has no up*down* way to them and was bridged) get groups too, only on
  // the switches that have an up*down* way; the chain's check judges the turns.
  std::vector<std::vector<uint16_t>> lids_at(f.size());
  std::vector<NodeIndex> dests;
  for (const LidOwner& o : lid_owners(f)) {
    const auto& nd = f.node(o.node);
    if (nd.is_switch()) continue;
    const NodeIndex s = nd.ports[o.port].peer;
    if (s == fabric::kNoNode || !f.node(s).is_switch() || o.lid.value > t.top_lid) continue;
    if (lids_at[s].empty()) dests.push_back(s);
    lids_at[s].push_back(o.lid.value);
  }
  std::vector<NodeIndex> by_height = sw.nodes;  // highest first
  std::sort(by_height.begin(), by_height.end(),
            [&h](NodeIndex a, NodeIndex b) { return h[a] > h[b]; });
  // Each switch's groups, by their ports; destinations in parallel, a switch's groups
  // behind one of a few locks.
  // Port sets keyed by their bitset (GCC 12 at -O3 warns falsely on comparing byte
  // vectors, -Wstringop-overread).
  using PortMask = std::array<uint64_t, 4>;
  auto mask_of = [](const std::vector<PortNum>& ports) {
    PortMask m{};
    for (PortNum p : ports) m[p >> 6] |= uint64_t(1) << (p & 63);
    return m;
  };
  std::vector<std::map<PortMask, uint16_t>> ids(f.size());
  std::array<std::mutex, 64> locks;
  constexpr uint32_t kFar = ~0u;
  parallel_for(
      dests.size(),
      [&](size_t di) {
        const NodeIndex s = dests[di];
        thread_local std::vector<uint32_t> down, any;
        thread_local std::vector<NodeIndex> queue;
        down.resize(f.size());
        any.resize(f.size());
        // Hops to s going down only, and by any up*down* way.
        std::fill(down.begin(), down.end(), kFar);
        down[s] = 0;
        queue.assign(1, s);
        for (size_t i = 0; i < queue.size(); ++i)
          for (const auto& p : f.node(queue[i]).ports)
            if (p.num && p.linked() && f.node(p.peer).is_switch() && h[p.peer] > h[queue[i]] &&
                down[p.peer] == kFar)
              down[p.peer] = down[queue[i]] + 1, queue.push_back(p.peer);
        for (const NodeIndex n : by_height) {
          any[n] = down[n];
          for (const auto& p : f.node(n).ports)
            if (p.num && p.linked() && f.node(p.peer).is_switch() && h[p.peer] > h[n] &&
                any[p.peer] != kFar)
              any[n] = std::min(any[n], any[p.peer] + 1);
        }
        for (const NodeIndex n : sw.nodes) {
          if (n == s || any[n] == kFar) continue;
          const auto& nd = f.node(n);
          std::vector<PortNum> ups, downs;
          for (const auto& p : nd.ports) {
            if (!p.num || !p.linked() || !f.node(p.peer).is_switch()) continue;
            if (h[p.peer] > h[n] && any[p.peer] != kFar && any[p.peer] + 1 == any[n])
              ups.push_back(p.num);
            if (h[p.peer] < h[n] && down[n] != kFar && down[p.peer] != kFar &&
                down[p.peer] + 1 == down[n])
              downs.push_back(p.num);
          }
          if (ups.size() < 2 && downs.size() < 2) continue;
          const auto& row = t.lft[n];
          std::vector<PortNum> set;
          PortMask last{};
          uint16_t last_id = Tables::kNoArGroup;
          for (const uint16_t lid : lids_at[s]) {
            if (lid >= row.size()) continue;
            const PortNum st = row[lid];
            if (st == 0 || st > nd.num_ports || !nd.ports[st].linked()) continue;
            const bool up = h[nd.ports[st].peer] > h[n];
            set.clear();
            if (up) {
              set = ups;
            } else {
              // Only switches that go on down for this LID: a packet that came down stays down.
              for (const PortNum q : downs) {
                const NodeIndex m = nd.ports[q].peer;
                const auto& mrow = t.lft[m];
                const bool goes_down = m == s || (lid < mrow.size() && mrow[lid] != 0 &&
                                                  mrow[lid] <= f.node(m).num_ports &&
                                                  f.node(m).ports[mrow[lid]].linked() &&
                                                  h[f.node(m).ports[mrow[lid]].peer] < h[m]);
                if (goes_down) set.push_back(q);
              }
            }
            if (set.size() < 2 || std::find(set.begin(), set.end(), st) == set.end()) continue;
            // The LIDs of one switch mostly share their group: looked up once.
            if (const PortMask key = mask_of(set); key != last) {
              std::lock_guard<std::mutex> hold(locks[n % locks.size()]);
              auto [it, fresh] = ids[n].emplace(key, uint16_t(t.ar_sets[n].size()));
              if (fresh) t.ar_sets[n].push_back(set);
              last = key;
              last_id = it->second;
            }
            t.ar_group[n][lid] = last_id;
          }
        }
      },
      1);
  // Numbered in port order, not in the order the threads came by: the same fabric gets
  // the same group numbers every time (their writes stay diff-only).
  parallel_for(sw.nodes.size(), [&](size_t si) {
    const NodeIndex n = sw.nodes[si];
    auto& sets = t.ar_sets[n];
    std::vector<PortMask> keys;
    for (const auto& set : sets) keys.push_back(mask_of(set));
    std::vector<uint16_t> order(sets.size());
    std::iota(order.begin(), order.end(), uint16_t(0));
    std::sort(order.begin(), order.end(),
              [&keys](uint16_t a, uint16_t b) { return keys[a] < keys[b]; });
    std::vector<uint16_t> renumber(sets.size());
    std::vector<std::vector<PortNum>> sorted(sets.size());
    for (size_t k = 0; k < order.size(); ++k) {
      renumber[order[k]] = uint16_t(k);
      sorted[k] = std::move(sets[order[k]]);
    }
    sets = std::move(sorted);
    for (uint16_t& g : t.ar_group[n])
      if (g != Tables::kNoArGroup) g = renumber[g];
  });
}

}  // namespace weft::routing::detail
