#include "minhop.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include "parallel.hpp"
#include "switch_graph.hpp"
#include "weft/splitmix.hpp"

namespace weft::routing {

using detail::index_switches;
using detail::kFar;
using detail::switch_distances;
using detail::Switches;
using fabric::Fabric;
using fabric::NodeIndex;

Routed MinHopEngine::compute(const Fabric& f, const Options& o) const {
  auto st = detail::start(f);
  if (!st) return std::unexpected(st.error());
  auto& [sw, owners, out] = *st;
  const size_t ns = sw.nodes.size();
  if (ns == 0) return std::move(out);
  const std::vector<uint8_t> dist = switch_distances(f, sw);

  // A repair of the previous tables, when only links went away.
  const std::optional<std::vector<NodeIndex>> was = detail::repairable(o, name(), f, owners);
  const Tables* prev = o.previous.tables;

  // Destinations grouped by the switch that delivers them, with the exit port there.
  const detail::LidsBySwitch at = detail::lids_by_switch(f, sw, owners);

  // The entries a change broke: at each switch, the LIDs whose previous entry no longer
  // leads one hop nearer (their routes crossed a lost link). Only they are routed again.
  std::vector<std::vector<uint16_t>> broken(was ? ns : 0);
  if (was) {
    detail::parallel_for(ns, [&](size_t si) {
      const auto s = static_cast<uint32_t>(si);
      const NodeIndex sn = sw.nodes[s];
      const auto& before = prev->lft[(*was)[sn]];
      // Per port: the distances of the switch it leads to (null: none; rows are columns,
      // the distances being symmetric).
      std::array<const uint8_t*, 256> peer{};
      for (const auto& p : f.node(sn).ports)
        if (p.num && p.linked() && f.node(p.peer).is_switch())
          peer[p.num] = &dist[size_t(sw.of_node[p.peer]) * ns];
      const uint8_t* const mine = &dist[size_t(s) * ns];
      for (uint32_t t = 0; t < ns; ++t) {
        const uint8_t here = mine[t];
        if (t == s || at[t].empty() || here == kFar) continue;
        for (auto [lid, exit] : at[t]) {
          const uint8_t* const next = peer[lid < before.size() ? before[lid] : kDropPort];
          if (!next || next[t] + 1 != here) broken[s].push_back(lid);
        }
      }
    });
    for (const auto& b : broken) out.rerouted += b.size();
  }
  // Per LID in use, the switch that delivers it (a repair routes only the broken ones').
  std::vector<uint32_t> target_of(was ? size_t(out.top_lid) + 1 : 0, 0);
  if (was)
    for (uint32_t t = 0; t < ns; ++t)
      for (auto [lid, exit] : at[t]) target_of[lid] = t;

  // Every switch's row on its own, in parallel.
  detail::parallel_for(ns, [&](size_t si) {
    const auto s = static_cast<uint32_t>(si);
    const NodeIndex sn = sw.nodes[s];
    auto& row = out.lft[sn];
    for (auto [lid, exit] : at[s]) row[lid] = exit;
    if (was && broken[s].empty()) {
      // A repair that broke nothing here: every entry the previous one (what the full
      // pass below gives such a switch, without its candidates and turns).
      const auto& before = prev->lft[(*was)[sn]];
      const uint8_t* const mine = &dist[size_t(s) * ns];
      PortNum* const rowp = row.data();
      for (uint32_t t = 0; t < ns; ++t)
        if (t != s && mine[t] != kFar)
          for (auto [lid, exit] : at[t]) rowp[lid] = before[lid];
      return;
    }
    struct Link {
      PortNum port;
      const uint8_t* dist;  // the neighbour's distances (row = column: symmetric)
    };
    std::vector<Link> links;
    for (const auto& p : f.node(sn).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch())
        links.push_back({p.num, &dist[size_t(sw.of_node[p.peer]) * ns]});
    const uint8_t* mine = &dist[size_t(s) * ns];
    // Targets in an order of this switch's own: neighbours that take the same order
    // would pile their choices onto the same next switches (the per-port-counter
    // collapse of upper tree levels); independent orders spread them.
    // The order: a shuffle seeded by this switch.
    const std::vector<uint32_t> order = shuffled_order(uint32_t(ns), s + 1);
    // A raw pointer: the byte stores into the row could alias any vector's insides,
    // which would be reloaded after each one.
    PortNum* const rowp = row.data();
    std::vector<PortNum> link_port(links.size());
    for (size_t k = 0; k < links.size(); ++k) link_port[k] = links[k].port;
    const size_t words = (links.size() + 63) / 64;
    if (was) {
      // Repair: every entry the change did not break keeps its port, and counts as
      // used; the broken ones are dealt as afresh, against them, in this switch's order
      // of their targets (the targets without one would deal nothing).
      const auto& before = prev->lft[(*was)[sn]];
      std::vector<uint32_t> link_k(f.node(sn).ports.size(), 0);
      for (size_t k = 0; k < links.size(); ++k) link_k[links[k].port] = static_cast<uint32_t>(k);
      std::vector<uint8_t> redo(row.size(), 0), needs(ns, 0);
      for (uint16_t lid : broken[s]) redo[lid] = 1, needs[target_of[lid]] = 1;
      std::vector<uint32_t> used(links.size(), 0);  // LIDs routed per link
      for (uint32_t t = 0; t < ns; ++t) {
        if (t == s || mine[t] == kFar) continue;
        for (auto [lid, exit] : at[t])
          if (!redo[lid]) {
            rowp[lid] = before[lid];
            ++used[link_k[before[lid]]];
          }
      }
      detail::Dealer dealer(link_port, used);
      std::vector<uint64_t> mask(words);
      for (const uint32_t t : order) {
        if (!needs[t] || t == s || mine[t] == kFar) continue;
        std::fill(mask.begin(), mask.end(), 0);
        for (size_t k = 0; k < links.size(); ++k)
          if (links[k].dist[t] + 1 == mine[t]) mask[k / 64] |= uint64_t(1) << (k % 64);
        if (!dealer.take(mask.data(), words)) continue;
        dealer.deal(rowp, at[t].data(), at[t].size(),
                    [r = redo.data()](uint16_t lid) { return !r[lid]; });
      }
      return;
    }
    // Candidates toward every target at once, link by link (contiguous distance rows):
    // bit k of next[t] says link k is one hop nearer to t.
    // Eight links at a time, sixteen targets at a time: a byte per target gathers the
    // eight links' bits (GCC vector extensions, plain SSE2), then lands in the masks.
    std::vector<uint64_t> next(ns * words, 0);
    using Bytes = uint8_t __attribute__((vector_size(16)));
    Bytes kOne, lane_bit[8];  // every byte 1; every byte 1 << j
    std::memset(&kOne, 1, sizeof kOne);
    for (unsigned j = 0; j < 8; ++j) std::memset(&lane_bit[j], 1 << j, sizeof(Bytes));
    for (size_t k0 = 0; k0 < links.size(); k0 += 8) {
      const size_t kn = std::min<size_t>(8, links.size() - k0);
      uint64_t* col = next.data() + k0 / 64;
      const unsigned shift = k0 & 63;
      uint32_t t = 0;
      for (; t + 16 <= ns; t += 16) {
        Bytes m, acc = {};
        std::memcpy(&m, mine + t, 16);
        for (size_t j = 0; j < kn; ++j) {
          Bytes d;
          std::memcpy(&d, links[k0 + j].dist + t, 16);
          const Bytes nearer = (Bytes)(d + kOne == m) & (Bytes)(d != kFar);
          acc |= nearer & lane_bit[j];
        }
        for (unsigned i = 0; i < 16; ++i) col[size_t(t + i) * words] |= uint64_t(acc[i]) << shift;
      }
      for (; t < ns; ++t)
        for (size_t j = 0; j < kn; ++j)
          col[size_t(t) * words] |= uint64_t(links[k0 + j].dist[t] + 1 == mine[t]) << (shift + j);
    }
    // The target's LIDs round robin over the candidates (links), from the least used.
    detail::Dealer dealer(link_port, std::vector<uint32_t>(links.size(), 0));
    for (const uint32_t t : order) {
      if (t == s || at[t].empty() || mine[t] == kFar) continue;
      if (dealer.take(next.data() + t * words, words))
        dealer.deal(rowp, at[t].data(), at[t].size(), detail::Dealer::NoSkip{});
    }
  });
  if (was) {
    out.repaired = true;
    out.notes.push_back(
        "minhop: only links went away since the previous tables: " + std::to_string(out.rerouted) +
        " (switch, LID) entries whose routes crossed them routed again, every "
        "other entry kept");
  }
  if (o.adaptive) detail::parallel_link_groups(f, sw, out);
  return std::move(out);
}

}  // namespace weft::routing
