#include "minhop.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include "parallel.hpp"
#include "shuffled_orders.hpp"
#include "switch_graph.hpp"
#include "weft/splitmix.hpp"

namespace weft::routing {

using detail::index_switches;
using detail::kFar;
using detail::switch_distances;
using detail::Switches;
using fabric::Fabric;
using fabric::NodeIndex;

namespace {
constexpr uint32_t kNoTarget = ~0u;

// What minhop keeps beside its tables for its next repair (Tables::memo): the distances
// they were routed on, each LID's switch, and per switch the LIDs each port carries (of
// the other switches' reachable LIDs: those the dealing counts). A repair's switch that
// lost no link checks only the LIDs of the switches whose distance from it, or from a
// neighbour, moved: every other entry still leads one hop nearer. Those with none keep
// their row whole; the others start the dealing from the memo's counts, not from a pass
// over their rows.
struct MinHopMemo final : EngineMemo {
  std::vector<NodeIndex> nodes;                 // the switches (their node in that fabric)
  std::vector<uint8_t> dist;                    // switch_distances
  std::vector<uint32_t> target_of;              // per LID up to the top one: its switch; kNoTarget
  std::vector<std::array<uint32_t, 256>> used;  // per switch, per port
};
}  // namespace

Routed MinHopEngine::compute(const Fabric& f, const Options& o) const {
  auto st = detail::start(f);
  if (!st) return std::unexpected(st.error());
  auto& [sw, owners, out] = *st;
  const size_t ns = sw.nodes.size();
  if (ns == 0) return std::move(out);
  std::vector<uint8_t> dist = switch_distances(f, sw);

  // A repair of the previous tables, when only links went away.
  const std::optional<std::vector<NodeIndex>> was = detail::repairable(o, name(), f, owners);
  const Tables* prev = o.previous.tables;

  // Destinations grouped by the switch that delivers them, with the exit port there.
  const detail::LidsBySwitch at = detail::lids_by_switch(f, sw, owners);
  // Per LID in use, the switch that delivers it (a repair routes only the broken ones').
  std::vector<uint32_t> target_of(size_t(out.top_lid) + 1, kNoTarget);
  for (uint32_t t = 0; t < ns; ++t)
    for (auto [lid, exit] : at[t]) target_of[lid] = t;

  // The memo serves where its switches and each LID's switch stand.
  const MinHopMemo* memo = nullptr;
  if (was && prev->memo) {
    const auto* m = dynamic_cast<const MinHopMemo*>(prev->memo.get());
    bool same = m && m->nodes.size() == ns && m->target_of == target_of;
    for (uint32_t s = 0; same && s < ns; ++s) same = m->nodes[s] == (*was)[sw.nodes[s]];
    if (same) memo = m;
  }
  // With the memo: the switches that lost a link (checked whole), and per other switch
  // the switches whose distance from it or from a neighbour moved (checked only those).
  std::vector<uint8_t> lost(memo ? ns : 0, 0);
  std::vector<std::vector<uint32_t>> check(memo ? ns : 0);
  size_t rows_whole = 0, rows_partly = 0;
  if (memo) {
    for (auto [s, port] : detail::lost_link_ends(*o.previous.fabric, f, sw, *was)) lost[s] = 1;
    std::vector<std::vector<uint32_t>> moved(ns);  // per switch: where its distances moved
    detail::parallel_for(ns, [&](size_t s) {
      const uint8_t* const a = &memo->dist[s * ns];
      const uint8_t* const b = &dist[s * ns];
      if (std::memcmp(a, b, ns) != 0)
        for (uint32_t t = 0; t < ns; ++t)
          if (a[t] != b[t]) moved[s].push_back(t);
    });
    detail::parallel_for(ns, [&](size_t s) {
      if (lost[s]) return;
      auto& c = check[s];
      c = moved[s];
      for (const auto& p : f.node(sw.nodes[s]).ports)
        if (p.num && p.linked() && f.node(p.peer).is_switch()) {
          const auto& m = moved[sw.of_node[p.peer]];
          c.insert(c.end(), m.begin(), m.end());
        }
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
    });
  }

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
      auto check_target = [&](uint32_t t) {
        const uint8_t here = mine[t];
        if (t == s || at[t].empty() || here == kFar) return;
        for (auto [lid, exit] : at[t]) {
          const uint8_t* const next = peer[lid < before.size() ? before[lid] : kDropPort];
          if (!next || next[t] + 1 != here) broken[s].push_back(lid);
        }
      };
      if (memo && !lost[s])
        for (uint32_t t : check[s]) check_target(t);
      else
        for (uint32_t t = 0; t < ns; ++t) check_target(t);
    });
    for (const auto& b : broken) out.rerouted += b.size();
  }
  // The same, flat (per switch [lid_from[t], lid_from[t + 1])): the dealing below reads
  // every switch's LIDs at every switch, in an order of its own.
  std::vector<uint32_t> lid_from(ns + 1, 0);
  for (uint32_t t = 0; t < ns; ++t) lid_from[t + 1] = lid_from[t] + uint32_t(at[t].size());
  std::vector<std::pair<uint16_t, PortNum>> lids_flat;
  lids_flat.reserve(lid_from[ns]);
  for (uint32_t t = 0; t < ns; ++t) lids_flat.insert(lids_flat.end(), at[t].begin(), at[t].end());
  auto made = std::make_shared<MinHopMemo>();
  made->used.assign(ns, {});

  // Every switch's row on its own, in parallel.
  const detail::ShuffledOrders orders(uint32_t(ns), /*ahead=*/!was);
  detail::parallel_for(ns, [&](size_t si) {
    const auto s = static_cast<uint32_t>(si);
    const NodeIndex sn = sw.nodes[s];
    auto& row = out.lft[sn];
    auto& used_at = made->used[s];  // (the new memo's)
    // Its count from the memo's: its row as the memo's, less the entries that went to
    // no switch (now unreachable) and the broken ones, which are dropped to be dealt.
    if (memo && !lost[s]) {
      const auto& before = prev->lft[(*was)[sn]];
      std::copy(before.begin(), before.end(), row.begin());
      used_at = memo->used[s];
      const uint8_t* const mine = &dist[size_t(s) * ns];
      auto forget = [&](uint16_t lid) {
        if (row[lid] != kDropPort) --used_at[row[lid]];
        row[lid] = kDropPort;
      };
      for (uint32_t t : check[s])
        if (t != s && mine[t] == kFar)
          for (auto [lid, exit] : at[t]) forget(lid);
      if (broken[s].empty()) return;
      for (uint16_t lid : broken[s]) forget(lid);
    }
    for (auto [lid, exit] : at[s]) row[lid] = exit;
    if (was && !memo && broken[s].empty()) {
      // A repair that broke nothing here: every entry the previous one (what the full
      // pass below gives such a switch, without its candidates and turns).
      const auto& before = prev->lft[(*was)[sn]];
      const uint8_t* const mine = &dist[size_t(s) * ns];
      PortNum* const rowp = row.data();
      for (uint32_t t = 0; t < ns; ++t)
        if (t != s && mine[t] != kFar)
          for (auto [lid, exit] : at[t]) rowp[lid] = before[lid], ++used_at[before[lid]];
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
    // The order: a shuffle seeded by this switch (a fresh computation's four switches at
    // a time; a repair's, where few switches deal, one at a time).
    const std::vector<uint32_t>& order = orders.get(s + 1);
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
      if (memo && !lost[s]) {
        for (size_t k = 0; k < links.size(); ++k) used[k] = used_at[links[k].port];
      } else {
        for (uint32_t t = 0; t < ns; ++t) {
          if (t == s || mine[t] == kFar) continue;
          for (auto [lid, exit] : at[t])
            if (!redo[lid]) {
              rowp[lid] = before[lid];
              ++used[link_k[before[lid]]];
            }
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
      used_at.fill(0);
      for (size_t k = 0; k < links.size(); ++k) used_at[links[k].port] = dealer.uses(k);
      return;
    }
    // Candidates toward every target at once (contiguous distance rows): bit k of
    // next[t] says link k is one hop nearer to t. Sixteen targets at a time: a byte per
    // target gathers eight links' bits (GCC vector extensions, plain SSE2); up to 64
    // links, the eight bytes of each target are then put side by side by byte, 16-bit
    // and 32-bit interleaves (a transpose: three rounds of eight), more links land in
    // the masks byte by byte.
    std::vector<uint64_t> next(ns * words, 0);
    using Bytes = uint8_t __attribute__((vector_size(16)));
    Bytes kOne, lane_bit[8];  // every byte 1; every byte 1 << j
    std::memset(&kOne, 1, sizeof kOne);
    for (unsigned j = 0; j < 8; ++j) std::memset(&lane_bit[j], 1 << j, sizeof(Bytes));
    // The byte per target of links k0 .. k0 + 7 (of those there are), targets t .. t + 15.
    auto gather = [&](size_t k0, uint32_t t) {
      const size_t kn = std::min<size_t>(8, links.size() - k0);
      Bytes m, acc = {};
      std::memcpy(&m, mine + t, 16);
      for (size_t j = 0; j < kn; ++j) {
        Bytes d;
        std::memcpy(&d, links[k0 + j].dist + t, 16);
        const Bytes nearer = (Bytes)(d + kOne == m) & (Bytes)(d != kFar);
        acc |= nearer & lane_bit[j];
      }
      return acc;
    };
    uint32_t t16 = 0;  // the targets done sixteen at a time
    if (words == 1) {
      // Interleaves of two vectors: byte pairs, 16-bit pairs, 32-bit pairs; of the low
      // halves (lo) or the high (hi).
      static constexpr Bytes kLo8 = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23},
                             kHi8 = kLo8 + 8,
                             kLo16 = {0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23},
                             kHi16 = kLo16 + 8,
                             kLo32 = {0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23},
                             kHi32 = kLo32 + 8;
      for (; t16 + 16 <= ns; t16 += 16) {
        Bytes g[8] = {};  // g[k]: links 8k .. 8k + 7
        for (size_t k0 = 0; k0 < links.size(); k0 += 8) g[k0 / 8] = gather(k0, t16);
        Bytes pair[8], quad[8];
        for (unsigned k = 0; k < 4; ++k) {  // targets 0-7 and 8-15 of links 16k .. 16k + 15
          pair[2 * k] = __builtin_shuffle(g[2 * k], g[2 * k + 1], kLo8);
          pair[2 * k + 1] = __builtin_shuffle(g[2 * k], g[2 * k + 1], kHi8);
        }
        for (unsigned k = 0; k < 2; ++k)  // targets 0-3, 4-7, 8-11, 12-15 of 32 links
          for (unsigned h = 0; h < 2; ++h) {
            quad[4 * k + 2 * h] = __builtin_shuffle(pair[4 * k + h], pair[4 * k + 2 + h], kLo16);
            quad[4 * k + 2 * h + 1] =
                __builtin_shuffle(pair[4 * k + h], pair[4 * k + 2 + h], kHi16);
          }
        for (unsigned q = 0; q < 4; ++q) {  // targets 4q, 4q + 1; 4q + 2, 4q + 3
          const Bytes a = __builtin_shuffle(quad[q], quad[4 + q], kLo32),
                      b = __builtin_shuffle(quad[q], quad[4 + q], kHi32);
          std::memcpy(&next[t16 + 4 * q], &a, sizeof a);
          std::memcpy(&next[t16 + 4 * q + 2], &b, sizeof b);
        }
      }
    } else {
      for (; t16 + 16 <= ns; t16 += 16)
        for (size_t k0 = 0; k0 < links.size(); k0 += 8) {
          const Bytes acc = gather(k0, t16);
          for (unsigned i = 0; i < 16; ++i)
            next[size_t(t16 + i) * words + k0 / 64] |= uint64_t(acc[i]) << (k0 & 63);
        }
    }
    for (uint32_t t = t16; t < ns; ++t)
      for (size_t k = 0; k < links.size(); ++k)
        next[size_t(t) * words + k / 64] |= uint64_t(links[k].dist[t] + 1 == mine[t]) << (k % 64);
    // The target's LIDs round robin over the candidates (links), from the least used.
    detail::Dealer dealer(link_port, std::vector<uint32_t>(links.size(), 0));
    for (const uint32_t t : order) {
      const uint32_t l0 = lid_from[t], l1 = lid_from[t + 1];
      if (t == s || l0 == l1 || mine[t] == kFar) continue;
      if (dealer.take(next.data() + t * words, words))
        dealer.deal(rowp, lids_flat.data() + l0, l1 - l0, detail::Dealer::NoSkip{});
    }
    for (size_t k = 0; k < links.size(); ++k) used_at[links[k].port] = dealer.uses(k);
  });
  for (uint32_t s = 0; memo && s < ns; ++s)
    if (!lost[s]) ++(check[s].empty() ? rows_whole : rows_partly);
  if (was) {
    out.repaired = true;
    out.notes.push_back(
        "minhop: only links went away since the previous tables: " + std::to_string(out.rerouted) +
        " (switch, LID) entries whose routes crossed them routed again, every "
        "other entry kept" +
        (memo ? "; of " + std::to_string(ns) + " switches, " + std::to_string(rows_whole) +
                    " switches' rows kept whole (no link lost, no distance moved there or "
                    "next door) and " +
                    std::to_string(rows_partly) +
                    " checked only toward the switches whose distances moved"
              : std::string()));
  }
  made->nodes = sw.nodes;
  made->dist = std::move(dist);
  made->target_of = std::move(target_of);
  out.memo = std::move(made);
  if (o.adaptive) detail::parallel_link_groups(f, sw, out);
  return std::move(out);
}

}  // namespace weft::routing
