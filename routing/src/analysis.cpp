// For each destination LID the tables form a forwarding function on switches.
// Hop counts to the destination come from a memoised walk (cycles are found on
// the way); then, visiting switches from the farthest, each passes the number
// of sources routed through it on to its next hop, which gives every directed
// link's all-to-all load in O(switches) per destination.
#include "weft/routing/analysis.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

#include "parallel.hpp"
#include "switch_graph.hpp"
#include "weft/routing/walk.hpp"
#include "weft/splitmix.hpp"

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
        const Step st = step(f, t.lft, sw.nodes[cur], o.lid.value);
        if (st.kind != Step::kForward) {
          end = kDead;
          break;
        }
        const auto& p = st;
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

namespace {

using Mask = std::array<uint64_t, 4>;  // ports 0..255

template <class Fn>
void each_port(const Mask& m, Fn fn) {
  for (unsigned w = 0; w < 4; ++w)
    for (uint64_t bits = m[w]; bits; bits &= bits - 1)
      fn(static_cast<PortNum>(w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits))));
}

// The VLs layered tables' paths use (1 for single-VL tables).
uint32_t path_vls(const Tables& t, const detail::Switches& sw) {
  uint32_t vls = 1;
  if (!t.path_sl.empty())
    for (NodeIndex n : sw.nodes)
      for (uint8_t v : t.path_sl.at(n)) vls = std::max<uint32_t>(vls, v + 1u);
  return vls;
}

// Single-VL dependencies among the channels whose two ends are both kept (`keep`,
// per node; every switch when empty), deduplicated, into adj[0]: channel (n, p)
// depends on (m, q) exactly when n sends some LID in use over p to m and m sends it
// on over q (every switch is a source).
void single_vl_dependencies(const Fabric& f, const Tables& t, const detail::Channels& ch,
                            const std::vector<NodeIndex>& switches,
                            const std::vector<uint8_t>& keep, const std::vector<LidOwner>& owners,
                            std::vector<std::vector<uint32_t>>& adj, CdgReport& rep) {
  const auto& base = ch.base;
  const auto& isl_peer = ch.isl_peer;
  auto kept = [&](NodeIndex n) { return keep.empty() || keep[n]; };
  std::vector<uint8_t> in_use(size_t(t.top_lid) + 1, 0);
  for (const LidOwner& o : owners)
    if (o.lid.value < in_use.size()) in_use[o.lid.value] = 1;
  std::vector<std::array<uint64_t, 4>> next(base.back(), std::array<uint64_t, 4>{});
  // Row pointers, so the inner loop reads no vector headers; a switch left out has
  // none, so nothing is routed into it.
  std::vector<const PortNum*> rowp(f.size(), nullptr);
  std::vector<size_t> rown(f.size(), 0);
  for (NodeIndex n : switches)
    if (kept(n)) rowp[n] = t.lft[n].data(), rown[n] = t.lft[n].size();
  // Per switch, its ports into kept switches, the only entries that make dependencies
  // here: up to kFew of them found 16 entries at a time (most of the largest tree's rows
  // send a LID into the up/down check's part over one port, or none); more, one by one.
  constexpr size_t kFew = 8;
  struct Into {
    uint32_t count = 0;  // ports into kept switches
    std::array<PortNum, kFew> ports{};
  };
  std::vector<Into> into(switches.size());
  for (size_t i = 0; i < switches.size(); ++i) {
    const NodeIndex n = switches[i];
    for (uint32_t c = base[n]; c < base[n + 1]; ++c)
      if (isl_peer[c] != fabric::kNoNode && rowp[isl_peer[c]]) {
        if (into[i].count < kFew) into[i].ports[into[i].count] = static_cast<PortNum>(c - base[n]);
        ++into[i].count;
      }
  }
  // Each switch owns its channels' masks of next ports; rows in parallel, in blocks
  // of LIDs, so that the neighbours' rows a switch reads stay in cache while the
  // switches around it (which share those neighbours) read them too. Next ports that
  // are no inter-switch link are dropped afterwards, not here.
  constexpr size_t kBlock = 4096;
  for (size_t first = 1; first < in_use.size(); first += kBlock)
    detail::parallel_for(switches.size(), [&](size_t i) {
      const NodeIndex n = switches[i];
      const PortNum* row = rowp[n];
      if (!row || into[i].count == 0) return;
      const uint32_t b0 = base[n], nports = base[n + 1] - base[n];
      const size_t end = std::min({rown[n], in_use.size(), first + kBlock});
      auto one = [&](size_t lid) {
        const PortNum p = row[lid];
        if (p >= nports || !in_use[lid]) return;  // drop (0xFF) or no such port
        const NodeIndex m = isl_peer[b0 + p];
        if (m == fabric::kNoNode || rown[m] <= lid) return;
        const PortNum q = rowp[m][lid];
        next[b0 + p][q >> 6] |= uint64_t(1) << (q & 63);
      };
      size_t lid = first;
      if (into[i].count <= kFew) {
        using Bytes = uint8_t __attribute__((vector_size(16)));
        Bytes want[kFew];
        for (uint32_t k = 0; k < into[i].count; ++k)
          std::memset(&want[k], into[i].ports[k], sizeof(Bytes));
        for (; lid + 16 <= end; lid += 16) {
          Bytes v, hit = {};
          std::memcpy(&v, row + lid, 16);
          for (uint32_t k = 0; k < into[i].count; ++k) hit |= (Bytes)(v == want[k]);
          uint64_t any;
          std::memcpy(&any, &hit, 8);
          uint64_t rest;
          std::memcpy(&rest, reinterpret_cast<const char*>(&hit) + 8, 8);
          if (!(any | rest)) continue;
          for (size_t k = 0; k < 16; ++k)
            if (hit[k]) one(lid + k);
        }
      }
      for (; lid < end; ++lid) one(lid);
    });
  for (uint32_t a = 0; a < next.size(); ++a) {
    if (isl_peer[a] == fabric::kNoNode) continue;
    const NodeIndex m = isl_peer[a];
    const uint32_t mb = base[m];
    for (unsigned w = 0; w < 4; ++w)
      for (uint64_t bits = next[a][w]; bits; bits &= bits - 1) {
        const uint32_t q = w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
        if (q == 0 || mb + q >= base[m + 1] || isl_peer[mb + q] == fabric::kNoNode ||
            !kept(isl_peer[mb + q]))
          continue;
        adj[a].push_back(mb + q);
        ++rep.dependencies;
      }
  }
}

// Layered tables: per destination and VL, paths are walked from every switch; a walk
// stops at a switch an earlier walk on the same VL passed, whose onward path is
// recorded. LIDs go in blocks of 64, in parallel: a block's entries are first gathered
// switch by switch (a cache line of each row, not a miss per switch and LID), then
// walked there. Each slice of the blocks marks its dependencies in masks of its own
// (per VL and channel, the next ports: out-degree <= ports), merged at the end.
void layered_dependencies(const Tables& t, const detail::Channels& ch, const detail::Switches& sw,
                          const std::vector<LidOwner>& owners, uint32_t vls,
                          std::vector<std::vector<std::vector<uint32_t>>>& adj, CdgReport& rep) {
  const auto& base = ch.base;
  const size_t ns = sw.nodes.size(), nch = base.back();
  std::vector<uint16_t> lids;
  for (const LidOwner& o : owners) lids.push_back(o.lid.value);
  std::sort(lids.begin(), lids.end());
  lids.erase(std::unique(lids.begin(), lids.end()), lids.end());
  constexpr size_t kB = 64;
  constexpr uint8_t kEvery = 0xFF;  // a switch without an SL row walks on every VL
  constexpr uint32_t kNone = ~0u;
  const size_t blocks = (lids.size() + kB - 1) / kB;
  const size_t slices = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  // masks[slice]: [(v * nch + channel) * 4 + word]; calloc'd, so that the pages of
  // channels no route uses are never touched.
  struct Free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<uint64_t[], Free>> masks(slices);
  for (auto& m : masks) {
    m.reset(static_cast<uint64_t*>(std::calloc(size_t(vls) * nch * 4, sizeof(uint64_t))));
    if (!m) throw std::bad_alloc();
  }
  std::vector<uint32_t> sbase(ns);
  for (size_t i = 0; i < ns; ++i) sbase[i] = base[sw.nodes[i]];
  detail::parallel_for(
      slices,
      [&](size_t slice) {
        uint64_t* const mask = masks[slice].get();
        std::vector<uint32_t> nxt(ns * kB), seen(ns, 0);
        std::vector<PortNum> port(ns * kB);
        std::vector<uint8_t> sl(ns * kB);
        std::array<uint32_t, kB> used{};  // per LID of the block: the VLs its sources take
        uint32_t stamp = 0;
        for (size_t b = slice; b < blocks; b += slices) {
          const size_t l0 = b * kB, nl = std::min(kB, lids.size() - l0);
          used.fill(0);
          for (size_t i = 0; i < ns; ++i) {
            const NodeIndex n = sw.nodes[i];
            const auto& row = t.lft[n];
            const auto& slr = t.path_sl[n];
            for (size_t k = 0; k < nl; ++k) {
              const uint16_t lid = lids[l0 + k];
              const PortNum p = row.size() > lid ? row[lid] : kDropPort;
              const uint32_t c = ch.isl(n, p);
              nxt[i * kB + k] = c == kNone ? kNone : sw.of_node[ch.isl_peer[c]];
              port[i * kB + k] = p;
              sl[i * kB + k] = slr.size() > lid ? slr[lid] : kEvery;
              used[k] |= sl[i * kB + k] == kEvery ? ~0u : 1u << (sl[i * kB + k] & 31);
            }
          }
          // A LID whose sources all take one VL v: every switch u that routes it to a
          // switch routing it on adds (u's port) -> (that switch's port) on v, which is what
          // the walks below would find. Marked switch by switch, so that the masks a
          // switch owns stay in cache over the block (walking them by LID missed the cache
          // at every switch).
          const uint32_t in_vls = vls >= 32 ? ~0u : (1u << vls) - 1;
          std::array<uint8_t, kB> one_vl{};  // per LID of the block: v + 1, or 0 for walks
          bool any_one = false;
          for (size_t k = 0; k < nl; ++k)
            if (const uint32_t u = used[k] & in_vls; u && !(u & (u - 1)))
              one_vl[k] = static_cast<uint8_t>(__builtin_ctz(u) + 1), any_one = true;
          if (any_one)
            for (size_t i = 0; i < ns; ++i)
              for (size_t k = 0; k < nl; ++k) {
                const uint32_t cur = nxt[i * kB + k];
                if (!one_vl[k] || cur == kNone || nxt[cur * kB + k] == kNone) continue;
                const PortNum out = port[cur * kB + k];
                const size_t in = sbase[i] + port[i * kB + k];
                mask[((one_vl[k] - 1u) * nch + in) * 4 + (out >> 6)] |= uint64_t(1) << (out & 63);
              }
          for (size_t k = 0; k < nl; ++k)
            for (uint32_t v = 0; v < vls; ++v) {
              if (!(used[k] >> v & 1) || one_vl[k]) continue;
              ++stamp;
              uint64_t* const mv = mask + size_t(v) * nch * 4;
              for (size_t src = 0; src < ns; ++src) {
                const uint8_t s = sl[src * kB + k];
                if (s != kEvery && s != v) continue;
                size_t cur = src;
                uint32_t in = kNone;  // the channel the walk arrived on
                for (size_t hop = 0; hop <= ns; ++hop) {
                  const uint32_t next = nxt[cur * kB + k];
                  if (next == kNone) break;
                  const PortNum out = port[cur * kB + k];
                  if (in != kNone) mv[size_t(in) * 4 + (out >> 6)] |= uint64_t(1) << (out & 63);
                  if (seen[cur] == stamp) break;
                  seen[cur] = stamp;
                  in = sbase[cur] + out;
                  cur = next;
                }
              }
            }
        }
      },
      1);
  for (uint32_t v = 0; v < vls; ++v)
    for (uint32_t a = 0; a < nch; ++a) {
      const NodeIndex m = ch.isl_peer[a];
      if (m == fabric::kNoNode) continue;
      for (unsigned w = 0; w < 4; ++w) {
        uint64_t bits = 0;
        for (const auto& mk : masks) bits |= mk[(size_t(v) * nch + a) * 4 + w];
        for (; bits; bits &= bits - 1) {
          adj[v][a].push_back(base[m] + w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits)));
          ++rep.dependencies;
        }
      }
    }
}

// Iterative DFS for a cycle in one graph (0 new, 1 on the stack, 2 done); on a cycle,
// clears rep.acyclic, sets rep.cycle_length and returns a node on it (else ~0u).
uint32_t find_cycle_in(const std::vector<std::vector<uint32_t>>& g, CdgReport& rep) {
  std::vector<uint8_t> state(g.size(), 0);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t s0 = 0; s0 < g.size(); ++s0) {
    if (state[s0] || g[s0].empty()) continue;
    stack.assign(1, {s0, 0});
    state[s0] = 1;
    while (!stack.empty()) {
      auto& [x, i] = stack.back();
      if (i < g[x].size()) {
        const uint32_t w = g[x][i++];
        if (state[w] == 1) {
          rep.acyclic = false;
          size_t len = 1;
          for (auto it = stack.rbegin(); it != stack.rend() && it->first != w; ++it) ++len;
          rep.cycle_length = len;
          return w;
        }
        if (state[w] == 0) {
          state[w] = 1;
          stack.emplace_back(w, 0);
        }
      } else {
        state[x] = 2;
        stack.pop_back();
      }
    }
  }
  return ~0u;
}

// The same per VL; fills the report's acyclic, cyclic_vl and cycle_length.
void find_cycle(const std::vector<std::vector<std::vector<uint32_t>>>& adj, CdgReport& rep) {
  for (uint32_t v = 0; v < adj.size() && rep.acyclic; ++v)
    if (find_cycle_in(adj[v], rep) != ~0u) rep.cyclic_vl = static_cast<int>(v);
}

// Tables whose VL changes per hop (Tables::hop_vl): one graph over (VL, channel), node
// v * channels + c, where a dependency may lead from one VL to another. Per LID and SL
// the onward path from a channel does not depend on the VL it was entered on, so a walk
// goes on from a channel only the first time that LID and SL reach it (the channel's
// dependencies are added for every VL it is reached on). A path's first hop takes the
// VL its switch gives an entry from an end port or port 0. `outs(n, lid, mask)` gives
// the ports a packet to `lid` may leave n by (the static one; under adaptive routing
// its group's too). LIDs in parallel, each slice into masks of its own (per pair of
// VLs and channel: the next ports), merged at the end.
template <class Outs>
void hop_vl_dependencies(const Fabric& f, const Tables& t, const detail::Channels& ch,
                         const detail::Switches& sw, const std::vector<LidOwner>& owners,
                         const Outs& outs, std::vector<std::vector<uint32_t>>& g, CdgReport& rep) {
  const size_t nch = ch.count();
  // A hop's VL: the switch's map, or SL i on VL i where it has none (or none for the SL).
  auto vl_at = [&](NodeIndex n, PortNum in, PortNum out, unsigned sl) -> uint32_t {
    const auto map = t.hop_map(f, n, in, out);
    const uint8_t v = map ? Tables::hop_vl_of(*map, sl) : Tables::kNoHopVl;
    return v == Tables::kNoHopVl ? sl : v;
  };
  const uint32_t sls = path_vls(t, sw);  // SLs in use: 0 .. the highest path SL
  uint32_t vls = sls;
  for (NodeIndex n : sw.nodes)
    if (n < t.hop_vl.size())
      for (uint64_t m : t.hop_vl[n])
        for (unsigned s = 0; s < 16; ++s)
          if (const uint8_t v = Tables::hop_vl_of(m, s); v != Tables::kNoHopVl)
            vls = std::max<uint32_t>(vls, v + 1u);
  // Per channel: the port it enters its head by; per switch: the ports a path enters by.
  std::vector<PortNum> head_in(nch, 0);
  std::vector<std::vector<PortNum>> entries(f.size());
  for (NodeIndex n : sw.nodes) {
    entries[n].push_back(0);
    for (const auto& p : f.node(n).ports) {
      if (p.num == 0 || !p.linked()) continue;
      if (const uint32_t c = ch.isl(n, p.num); c != ~0u)
        head_in[c] = p.peer_port;
      else
        entries[n].push_back(p.num);
    }
  }
  std::vector<uint16_t> lids;
  for (const LidOwner& o : owners) lids.push_back(o.lid.value);
  std::sort(lids.begin(), lids.end());
  lids.erase(std::unique(lids.begin(), lids.end()), lids.end());
  const size_t slices = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  struct Free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  // masks[slice]: [((from VL * vls + to VL) * nch + channel) * 4 + word]: next ports.
  std::vector<std::unique_ptr<uint64_t[], Free>> masks(slices);
  for (auto& m : masks) {
    m.reset(static_cast<uint64_t*>(std::calloc(size_t(vls) * vls * nch * 4, sizeof(uint64_t))));
    if (!m) throw std::bad_alloc();
  }
  std::vector<uint32_t> top(slices, 0);  // per slice: the highest VL a hop took
  detail::parallel_for(
      slices,
      [&](size_t slice) {
        uint64_t* const mask = masks[slice].get();
        std::vector<uint32_t> seen(16 * nch, 0);
        std::vector<std::pair<uint32_t, uint32_t>> stack;  // (channel, its VL)
        uint32_t stamp = 0;
        Mask m, mm;
        for (size_t i = slice; i < lids.size(); i += slices) {
          const uint16_t lid = lids[i];
          ++stamp;
          for (NodeIndex src : sw.nodes)
            for (unsigned sl = 0; sl < sls; ++sl) {
              // The path's SL (0 without path_sl; a switch without an SL row: every SL in
              // use, as the layered walk takes it).
              const bool every = !t.path_sl.empty() && lid >= t.path_sl[src].size();
              if (!every && sl != (t.path_sl.empty() ? 0u : t.path_sl[src][lid] & 15u)) continue;
              if (!outs(src, lid, m)) continue;
              stack.clear();
              each_port(m, [&](PortNum out) {
                const uint32_t c = ch.isl(src, out);
                if (c == ~0u) return;
                uint32_t pushed = 0;  // VLs already pushed for this channel
                for (PortNum in : entries[src])
                  if (const uint32_t v = vl_at(src, in, out, sl); !(pushed >> v & 1))
                    pushed |= 1u << v, stack.emplace_back(c, v);
              });
              while (!stack.empty()) {
                const auto [c, v] = stack.back();
                stack.pop_back();
                top[slice] = std::max(top[slice], v);
                const NodeIndex head = ch.isl_peer[c];
                if (!outs(head, lid, mm)) continue;
                const bool first = seen[sl * nch + c] != stamp;
                seen[sl * nch + c] = stamp;
                each_port(mm, [&](PortNum q) {
                  const uint32_t d = ch.isl(head, q);
                  if (d == ~0u) return;
                  const uint32_t w = vl_at(head, head_in[c], q, sl);
                  mask[((size_t(v) * vls + w) * nch + c) * 4 + (q >> 6)] |= uint64_t(1) << (q & 63);
                  if (first) stack.emplace_back(d, w);
                });
              }
            }
        }
      },
      1);
  g.assign(size_t(vls) * nch, {});
  for (uint32_t v = 0; v < vls; ++v)
    for (uint32_t w = 0; w < vls; ++w)
      for (uint32_t c = 0; c < nch; ++c) {
        const NodeIndex head = ch.isl_peer[c];
        if (head == fabric::kNoNode) continue;
        Mask bits{};
        for (const auto& mk : masks)
          for (unsigned k = 0; k < 4; ++k) bits[k] |= mk[((size_t(v) * vls + w) * nch + c) * 4 + k];
        each_port(bits, [&](PortNum q) {
          g[size_t(v) * nch + c].push_back(uint32_t(w * nch + ch.isl(head, q)));
          ++rep.dependencies;
        });
      }
  rep.vls = *std::max_element(top.begin(), top.end()) + 1;
}

}  // namespace

CdgReport channel_dependencies(const Fabric& f, const Tables& t) {
  CdgReport rep;
  // Channel ids: one per (node, port); only inter-switch links carry dependencies.
  const detail::Channels ch = detail::channels(f);
  const auto& base = ch.base;
  auto is_isl = [&](NodeIndex n, PortNum p) { return ch.isl(n, p) != ~0u; };
  const detail::Switches sw = detail::index_switches(f);
  for (NodeIndex n = 0; n < f.size(); ++n)
    for (const auto& p : f.node(n).ports) rep.channels += is_isl(n, p.num);
  if (!t.hop_vl.empty()) {
    std::vector<std::vector<uint32_t>> g;
    auto outs = [&](NodeIndex n, size_t lid, Mask& m) {
      if (n >= t.lft.size() || lid >= t.lft[n].size() || t.lft[n][lid] == kDropPort) return false;
      m = Mask{};
      m[t.lft[n][lid] >> 6] |= uint64_t(1) << (t.lft[n][lid] & 63);
      return true;
    };
    hop_vl_dependencies(f, t, ch, sw, lid_owners(f), outs, g, rep);
    if (const uint32_t w = find_cycle_in(g, rep); w != ~0u)
      rep.cyclic_vl = static_cast<int>(w / ch.count());
    return rep;
  }
  const bool layered = !t.path_sl.empty();
  const uint32_t vls = path_vls(t, sw);
  rep.vls = vls;
  // adj[v][a]: channels that a leads to on VL v (deduplicated: out-degree <= ports).
  std::vector<std::vector<std::vector<uint32_t>>> adj(
      vls, std::vector<std::vector<uint32_t>>(base.back()));
  const auto owners = lid_owners(f);
  if (!layered) single_vl_dependencies(f, t, ch, sw.nodes, {}, owners, adj[0], rep);
  if (layered) layered_dependencies(t, ch, sw, owners, vls, adj, rep);
  find_cycle(adj, rep);
  return rep;
}

namespace {

// Adaptive routing's choices, per switch and LID: the static port and its group's.
struct Choices {
  std::vector<std::vector<Mask>> groups;  // [node][group]: the group's ports
  std::vector<const PortNum*> lftp;       // row pointers, so inner loops read no headers
  std::vector<const uint16_t*> grpp;
  std::vector<size_t> lftn, grpn;
  std::vector<uint8_t> in_use;  // [lid]
  Choices(const Fabric& f, const Tables& t, const detail::Switches& sw,
          const std::vector<LidOwner>& owners)
      : groups(f.size()),
        lftp(f.size(), nullptr),
        grpp(f.size(), nullptr),
        lftn(f.size(), 0),
        grpn(f.size(), 0),
        in_use(size_t(t.top_lid) + 1, 0) {
    for (const LidOwner& o : owners)
      if (o.lid.value < in_use.size()) in_use[o.lid.value] = 1;
    for (NodeIndex n : sw.nodes) {
      if (n < t.lft.size()) lftp[n] = t.lft[n].data(), lftn[n] = t.lft[n].size();
      if (n < t.ar_group.size()) grpp[n] = t.ar_group[n].data(), grpn[n] = t.ar_group[n].size();
      if (n >= t.ar_sets.size()) continue;
      for (const auto& set : t.ar_sets[n]) {
        Mask m{};
        for (PortNum p : set) m[p >> 6] |= uint64_t(1) << (p & 63);
        groups[n].push_back(m);
      }
    }
  }
  // The ports a packet to `lid` may leave switch n by; false where it is not routed.
  bool of(NodeIndex n, size_t lid, Mask& m) const {
    if (lid >= lftn[n] || lftp[n][lid] == kDropPort) return false;
    const PortNum p = lftp[n][lid];
    const uint16_t g = lid < grpn[n] ? grpp[n][lid] : Tables::kNoArGroup;
    if (g != Tables::kNoArGroup && g < groups[n].size())
      m = groups[n][g];
    else
      m = Mask{};
    m[p >> 6] |= uint64_t(1) << (p & 63);
    return true;
  }
};

// The single-VL dependency graph over every port a packet may take, built on `switches`
// (into switches `keep` marks, or all when it is empty), as single_vl_dependencies
// builds it for the static ports.
void adaptive_graph(const Choices& cs, const detail::Channels& ch,
                    const std::vector<NodeIndex>& switches, const std::vector<uint8_t>& keep,
                    std::vector<std::vector<uint32_t>>& adj, CdgReport& rep) {
  const auto& base = ch.base;
  auto kept = [&](NodeIndex n) { return keep.empty() || keep[n]; };
  // next[a]: the ports at channel a's head a packet may take next (each switch fills its
  // own channels'), in blocks of LIDs so that the neighbours' rows stay in cache.
  std::vector<Mask> next(base.back(), Mask{});
  constexpr size_t kBlock = 2048;
  for (size_t first = 1; first < cs.in_use.size(); first += kBlock)
    detail::parallel_for(switches.size(), [&](size_t i) {
      const NodeIndex n = switches[i];
      if (!kept(n)) return;
      const size_t end = std::min(cs.in_use.size(), first + kBlock);
      const uint32_t b0 = base[n], nports = base[n + 1] - base[n];
      Mask here, there;
      for (size_t lid = first; lid < end; ++lid) {
        if (!cs.in_use[lid] || !cs.of(n, lid, here)) continue;
        each_port(here, [&](PortNum p) {
          if (p >= nports) return;
          const NodeIndex m = ch.isl_peer[b0 + p];
          if (m == fabric::kNoNode || !kept(m) || !cs.of(m, lid, there)) return;
          Mask& into = next[b0 + p];
          for (unsigned k = 0; k < 4; ++k) into[k] |= there[k];
        });
      }
    });
  for (uint32_t a = 0; a < next.size(); ++a) {
    const NodeIndex m = ch.isl_peer[a];
    if (m == fabric::kNoNode) continue;
    each_port(next[a], [&](PortNum q) {
      const uint32_t d = ch.isl(m, q);
      if (d == ~0u || !kept(ch.isl_peer[d])) return;
      adj[a].push_back(d);
      ++rep.dependencies;
    });
  }
}

// The same for layered tables, per VL: a packet keeps the SL it entered the switches with
// (path_sl of its first switch), so on VL v it may reach every switch that some choice
// leads to from a switch whose SL to the LID is v, and each of those switches' choices
// adds its dependencies to VL v's graph. LIDs in parallel, each slice into masks of its
// own (per VL and channel: the ports at the channel's head), merged at the end.
void layered_adaptive_graph(const Choices& cs, const Tables& t, const detail::Channels& ch,
                            const detail::Switches& sw, uint32_t vls,
                            std::vector<std::vector<std::vector<uint32_t>>>& adj, CdgReport& rep) {
  const auto& base = ch.base;
  const size_t nch = base.back(), nodes = base.size() - 1;
  std::vector<uint16_t> lids;
  for (size_t lid = 1; lid < cs.in_use.size(); ++lid)
    if (cs.in_use[lid]) lids.push_back(static_cast<uint16_t>(lid));
  const size_t slices = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  std::vector<std::vector<Mask>> next(slices);  // [slice][v * nch + channel]
  detail::parallel_for(
      slices,
      [&](size_t slice) {
        auto& into = next[slice];
        into.assign(size_t(vls) * nch, Mask{});
        std::vector<uint32_t> seen(nodes, 0);
        std::vector<NodeIndex> queue;
        uint32_t stamp = 0;
        Mask here, there;
        for (size_t i = slice; i < lids.size(); i += slices) {
          const uint16_t lid = lids[i];
          for (uint32_t v = 0; v < vls; ++v) {
            ++stamp;
            queue.clear();
            for (const NodeIndex n : sw.nodes) {
              const auto& slr = t.path_sl[n];  // a switch without an SL walks on every VL
              if (lid < slr.size() && slr[lid] != v) continue;
              seen[n] = stamp;
              queue.push_back(n);
            }
            Mask* const mv = into.data() + size_t(v) * nch;
            for (size_t k = 0; k < queue.size(); ++k) {
              const NodeIndex n = queue[k];
              if (!cs.of(n, lid, here)) continue;
              const uint32_t b0 = base[n], nports = base[n + 1] - base[n];
              each_port(here, [&](PortNum p) {
                if (p >= nports) return;
                const NodeIndex m = ch.isl_peer[b0 + p];
                if (m == fabric::kNoNode || !cs.of(m, lid, there)) return;
                Mask& to = mv[b0 + p];
                for (unsigned w = 0; w < 4; ++w) to[w] |= there[w];
                if (seen[m] != stamp) seen[m] = stamp, queue.push_back(m);
              });
            }
          }
        }
      },
      1);
  for (uint32_t v = 0; v < vls; ++v)
    for (uint32_t a = 0; a < nch; ++a) {
      const NodeIndex m = ch.isl_peer[a];
      if (m == fabric::kNoNode) continue;
      Mask bits{};
      for (const auto& s : next)
        for (unsigned w = 0; w < 4; ++w) bits[w] |= s[size_t(v) * nch + a][w];
      each_port(bits, [&](PortNum q) {
        const uint32_t d = ch.isl(m, q);
        if (d == ~0u) return;
        adj[v][a].push_back(d);
        ++rep.dependencies;
      });
    }
}

// Whether every inter-switch link joins two heights, leading up one way and down the
// other: the ground the up/down order argument stands on.
bool heights_order(const detail::Channels& ch, const detail::Switches& sw,
                   const std::vector<uint32_t>& height) {
  for (NodeIndex n : sw.nodes)
    for (uint32_t c = ch.base[n]; c < ch.base[n + 1]; ++c)
      if (ch.isl_peer[c] != fabric::kNoNode && height[ch.isl_peer[c]] == height[n]) return false;
  return true;
}

// A mark per LID for the LIDs whose routes may turn from down to up.
std::vector<uint8_t> lid_marks(const std::vector<uint16_t>& lids) {
  std::vector<uint8_t> marks;
  for (const uint16_t lid : lids) {
    if (marks.size() <= lid) marks.resize(size_t(lid) + 1, 0);
    marks[lid] = 1;
  }
  return marks;
}

// The switches a cycle can pass once only turns break the up/down order: those where
// routes turn (`turns`) and every switch above them, marked in `keep` (none: no turn);
// their channels into kept switches are counted in rep.channels.
std::vector<NodeIndex> turn_closure(const detail::Channels& ch, const detail::Switches& sw,
                                    const std::vector<std::atomic<uint8_t>>& turns,
                                    const std::vector<uint32_t>& height, std::vector<uint8_t>& keep,
                                    CdgReport& rep) {
  keep.assign(height.size(), 0);
  std::vector<NodeIndex> q;
  for (const NodeIndex m : sw.nodes)
    if (turns[m].load(std::memory_order_relaxed)) keep[m] = 1, q.push_back(m);
  for (size_t i = 0; i < q.size(); ++i)
    for (uint32_t c = ch.base[q[i]]; c < ch.base[q[i] + 1]; ++c) {
      const NodeIndex m = ch.isl_peer[c];
      if (m != fabric::kNoNode && height[m] > height[q[i]] && !keep[m]) keep[m] = 1, q.push_back(m);
    }
  for (const NodeIndex n : q)
    for (uint32_t c = ch.base[n]; c < ch.base[n + 1]; ++c)
      rep.channels += ch.isl_peer[c] != fabric::kNoNode && keep[ch.isl_peer[c]];
  return q;
}

}  // namespace

CdgReport adaptive_dependencies(const Fabric& f, const Tables& t) {
  if (t.ar_group.empty()) return channel_dependencies(f, t);
  CdgReport rep;
  const detail::Channels ch = detail::channels(f);
  const detail::Switches sw = detail::index_switches(f);
  const Choices cs(f, t, sw, lid_owners(f));
  if (!t.hop_vl.empty()) {
    for (NodeIndex n = 0; n < f.size(); ++n)
      for (const auto& p : f.node(n).ports) rep.channels += ch.isl(n, p.num) != ~0u;
    std::vector<std::vector<uint32_t>> g;
    auto outs = [&](NodeIndex n, size_t lid, Mask& m) { return cs.of(n, lid, m); };
    hop_vl_dependencies(f, t, ch, sw, lid_owners(f), outs, g, rep);
    if (const uint32_t w = find_cycle_in(g, rep); w != ~0u)
      rep.cyclic_vl = static_cast<int>(w / ch.count());
    return rep;
  }
  rep.vls = path_vls(t, sw);
  std::vector<std::vector<std::vector<uint32_t>>> adj(
      rep.vls, std::vector<std::vector<uint32_t>>(ch.count()));
  if (t.path_sl.empty())
    adaptive_graph(cs, ch, sw.nodes, {}, adj[0], rep);
  else
    layered_adaptive_graph(cs, t, ch, sw, rep.vls, adj, rep);
  for (NodeIndex n = 0; n < f.size(); ++n)
    for (const auto& p : f.node(n).ports) rep.channels += ch.isl(n, p.num) != ~0u;
  find_cycle(adj, rep);
  return rep;
}

CdgReport adaptive_updown_dependencies(const Fabric& f, const Tables& t,
                                       const std::vector<uint32_t>& height,
                                       const std::vector<uint16_t>& turning) {
  if (!t.path_sl.empty() || !t.hop_vl.empty() || t.ar_group.empty() || height.size() != f.size())
    return adaptive_dependencies(f, t);
  const detail::Channels ch = detail::channels(f);
  const detail::Switches sw = detail::index_switches(f);
  if (!heights_order(ch, sw, height)) return adaptive_dependencies(f, t);
  // Each switch's ports that lead down (to a lower height), and up.
  std::vector<Mask> down(f.size(), Mask{}), up(f.size(), Mask{});
  for (NodeIndex n : sw.nodes)
    for (uint32_t c = ch.base[n]; c < ch.base[n + 1]; ++c) {
      const NodeIndex m = ch.isl_peer[c];
      if (m == fabric::kNoNode) continue;
      const PortNum p = ch.port[c];
      (height[m] < height[n] ? down : up)[n][p >> 6] |= uint64_t(1) << (p & 63);
    }
  const std::vector<uint8_t> may_turn = lid_marks(turning);
  const Choices cs(f, t, sw, lid_owners(f));
  // Where some choice arrives going down and some choice leaves going up: only on the
  // way to a turning LID, else the promise is broken (the full check).
  std::vector<std::atomic<uint8_t>> turns(f.size());
  std::atomic<bool> broken{false};
  detail::parallel_for(sw.nodes.size(), [&](size_t i) {
    const NodeIndex n = sw.nodes[i];
    Mask here, there;
    for (size_t lid = 1; lid < cs.in_use.size() && !broken.load(std::memory_order_relaxed); ++lid) {
      if (!cs.in_use[lid] || !cs.of(n, lid, here)) continue;
      Mask d;
      bool any = false;
      for (unsigned w = 0; w < 4; ++w) any |= (d[w] = here[w] & down[n][w]) != 0;
      if (!any) continue;
      each_port(d, [&](PortNum p) {
        const NodeIndex m = ch.isl_peer[ch.base[n] + p];
        if (!cs.of(m, lid, there)) return;
        bool turn = false;
        for (unsigned w = 0; w < 4; ++w) turn |= (there[w] & up[m][w]) != 0;
        if (!turn) return;
        if (lid < may_turn.size() && may_turn[lid])
          turns[m].store(1, std::memory_order_relaxed);
        else
          broken.store(true, std::memory_order_relaxed);
      });
    }
  });
  if (broken.load()) return adaptive_dependencies(f, t);
  // The turning switches and every switch above them: all a cycle can pass.
  CdgReport rep;
  rep.part = true;
  std::vector<uint8_t> keep;
  const std::vector<NodeIndex> q = turn_closure(ch, sw, turns, height, keep, rep);
  if (q.empty()) return rep;  // no turn: every dependency follows the order
  std::vector<std::vector<std::vector<uint32_t>>> adj(
      1, std::vector<std::vector<uint32_t>>(ch.count()));
  adaptive_graph(cs, ch, q, keep, adj[0], rep);
  find_cycle(adj, rep);
  return rep;
}

CdgReport updown_dependencies(const Fabric& f, const Tables& t, const std::vector<uint32_t>& height,
                              const std::vector<uint16_t>& turning, TurnScan scan) {
  if (!t.path_sl.empty() || !t.hop_vl.empty() || height.size() != f.size())
    return channel_dependencies(f, t);
  const detail::Channels ch = detail::channels(f);
  const detail::Switches sw = detail::index_switches(f);
  // The order argument needs every link to lead up one way and down the other.
  if (!heights_order(ch, sw, height)) return channel_dependencies(f, t);
  // Per channel: it leads up (to a greater height).
  std::vector<uint8_t> leads_up(ch.count(), 0);
  for (const NodeIndex n : sw.nodes)
    for (uint32_t c = ch.base[n]; c < ch.base[n + 1]; ++c)
      leads_up[c] = ch.isl_peer[c] != fabric::kNoNode && height[ch.isl_peer[c]] > height[n];
  // The switches where a route arrives going down and leaves going up (marked from any
  // thread: relaxed atomic stores of the same value). Only routes to turning LIDs may:
  // a turn on the way to any other LID breaks the promise, and gets the full check.
  const std::vector<uint8_t> may_turn = lid_marks(turning);
  std::vector<std::atomic<uint8_t>> turns(f.size());
  std::atomic<bool> broken{false};
  // Per node: its row, and how long it is.
  std::vector<const PortNum*> row_of(f.size(), nullptr);
  std::vector<size_t> size_of(f.size(), 0);
  for (const NodeIndex n : sw.nodes) row_of[n] = t.lft[n].data(), size_of[n] = t.lft[n].size();
  detail::parallel_for(sw.nodes.size(), [&](size_t i) {
    const NodeIndex w = sw.nodes[i];
    const auto& row = t.lft[w];
    // Per port of w: the switch it leads down to (kNoNode: none). Entries are bytes, so
    // 256 covers every one, the drop port too.
    std::array<NodeIndex, 256> down_to;
    down_to.fill(fabric::kNoNode);
    bool any_down = false;
    for (uint32_t c = ch.base[w]; c < ch.base[w + 1]; ++c)
      if (ch.isl_peer[c] != fabric::kNoNode && !leads_up[c])
        down_to[ch.port[c]] = ch.isl_peer[c], any_down = true;
    if (!any_down) return;  // (a leaf: no route leaves it going down to a switch)
    // One entry: does the route to `lid` arrive at its next switch going down and leave
    // it going up?
    auto turns_at = [&](size_t lid, NodeIndex& m) {
      m = down_to[row[lid]];
      if (m == fabric::kNoNode || size_of[m] <= lid) return false;
      const uint32_t c = ch.base[m] + row_of[m][lid];
      return c < ch.base[m + 1] && leads_up[c];
    };
    if (scan == TurnScan::kTurningOnly) {
      for (const uint16_t lid : turning)
        if (NodeIndex m; lid < row.size() && turns_at(lid, m))
          turns[m].store(1, std::memory_order_relaxed);
      return;
    }
    constexpr size_t kSpan = 4096;  // entries between looks at `broken`
    for (size_t b = 1; b < row.size() && !broken.load(std::memory_order_relaxed); b += kSpan)
      for (size_t lid = b, e = std::min(row.size(), b + kSpan); lid < e; ++lid) {
        NodeIndex m;
        if (!turns_at(lid, m)) continue;
        if (lid < may_turn.size() && may_turn[lid])
          turns[m].store(1, std::memory_order_relaxed);
        else
          broken.store(true, std::memory_order_relaxed);
      }
  });
  if (broken.load()) return channel_dependencies(f, t);
  // They and every switch above them: all a cycle can pass.
  CdgReport rep;
  rep.part = true;
  std::vector<uint8_t> keep;
  const std::vector<NodeIndex> q = turn_closure(ch, sw, turns, height, keep, rep);
  if (q.empty()) return rep;  // no turn: every dependency follows the order
  std::vector<std::vector<std::vector<uint32_t>>> adj(
      1, std::vector<std::vector<uint32_t>>(ch.count()));
  single_vl_dependencies(f, t, ch, q, keep, lid_owners(f), adj[0], rep);
  find_cycle(adj, rep);
  return rep;
}

PatternMetrics traffic_patterns(const Fabric& f, const Tables& t, const PatternOptions& o) {
  PatternMetrics m;
  const auto ranks = o.order.empty() ? topology_order(f) : o.order;
  const size_t n = ranks.size();
  if (n < 2) return m;
  const std::vector<uint32_t> base = detail::channels(f).base;
  // Per rank: the switch its traffic enters, and its LID.
  struct End {
    NodeIndex sw;
    uint16_t lid;
  };
  std::vector<End> ends(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& port = f.node(ranks[i].first).ports.at(ranks[i].second);
    ends[i] = {port.linked() ? port.peer : ranks[i].first, port.attrs.lid.value};
  }
  // A flow's inter-switch channels, or false when it does not arrive.
  std::vector<uint32_t> flow_ch;  // all flows' channels, back to back
  std::vector<uint32_t> flow_begin, load(base.back(), 0);
  std::vector<uint8_t> arrived;
  const size_t max_hops = f.size();
  auto add_flow = [&](size_t src, size_t dst) {
    flow_begin.push_back(static_cast<uint32_t>(flow_ch.size()));
    const NodeIndex from = ends[src].sw;
    bool ok = false;
    if (f.node(from).is_switch()) {
      const auto end = walk(
          f, t.lft, from, 0, ends[dst].lid,
          [&](NodeIndex n, PortNum in) {  // arrived at the destination's end port
            return n == ranks[dst].first && in == ranks[dst].second && !f.node(n).is_switch();
          },
          [&](NodeIndex n, PortNum, PortNum out) {
            if (f.node(f.node(n).ports[out].peer).is_switch()) flow_ch.push_back(base[n] + out);
          },
          max_hops + 1);
      ok = end.kind == WalkEnd::kArrived;
    }
    arrived.push_back(ok);
  };
  // Runs the flows added since `first`: loads, then per-flow worst link; clears loads.
  auto run = [&](size_t first, auto&& per_flow) {
    flow_begin.push_back(static_cast<uint32_t>(flow_ch.size()));
    for (size_t k = first; k + 1 < flow_begin.size(); ++k)
      if (arrived[k])
        for (uint32_t c = flow_begin[k]; c < flow_begin[k + 1]; ++c) ++load[flow_ch[c]];
    for (size_t k = first; k + 1 < flow_begin.size(); ++k) {
      uint32_t worst = 0;
      for (uint32_t c = flow_begin[k]; c < flow_begin[k + 1]; ++c)
        worst = std::max(worst, load[flow_ch[c]]);
      per_flow(arrived[k] != 0, worst);
    }
    for (size_t k = first; k + 1 < flow_begin.size(); ++k)
      for (uint32_t c = flow_begin[k]; c < flow_begin[k + 1]; ++c) load[flow_ch[c]] = 0;
    flow_ch.clear();
    flow_begin.clear();
    arrived.clear();
  };

  // Bisections, from SplitMix64 so that a seed means the same patterns everywhere.
  SplitMix64 rng(o.seed);
  std::vector<uint32_t> perm(n);
  double bw_sum = 0;
  uint64_t flows = 0;
  for (uint32_t b = 0; b < o.bisections; ++b) {
    for (uint32_t i = 0; i < n; ++i) perm[i] = i;
    for (size_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.next() % (i + 1)]);
    for (size_t i = 0; i + 1 < n; i += 2) {
      add_flow(perm[i], perm[i + 1]);
      add_flow(perm[i + 1], perm[i]);
    }
    run(0, [&](bool ok, uint32_t worst) {
      bw_sum += !ok ? 0.0 : worst == 0 ? 1.0 : 1.0 / worst;
      ++flows;
    });
    ++m.bisections;
  }
  m.ebb = flows ? bw_sum / double(flows) : 0;

  // Shifts.
  const size_t rounds = std::min<size_t>(n - 1, o.max_shifts);
  double worst_sum = 0;
  for (size_t r = 0; r < rounds; ++r) {
    const size_t c = 1 + r * (n - 1) / rounds;
    for (size_t i = 0; i < n; ++i) add_flow(i, (i + c) % n);
    uint32_t round_worst = 0;
    run(0, [&](bool, uint32_t worst) { round_worst = std::max(round_worst, worst); });
    m.shift_max_congestion = std::max(m.shift_max_congestion, round_worst);
    m.shift_congested_rounds += round_worst > 1;
    worst_sum += round_worst;
    ++m.shifts;
  }
  m.shift_mean_congestion = m.shifts ? worst_sum / m.shifts : 0;
  return m;
}

}  // namespace weft::routing
