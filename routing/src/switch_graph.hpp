// Internal to routing/: the switches of a fabric as a compact graph, and all-pairs
// switch hop distances by bit-parallel BFS (64 sources per pass) over a Boost.Graph
// compressed_sparse_row_graph. Shared by the engines and the analyzer.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "parallel.hpp"
#include "weft/fabric/fabric.hpp"
#include "weft/routing/engine.hpp"

namespace weft::routing::detail {

constexpr uint8_t kFar = std::numeric_limits<uint8_t>::max();

struct Switches {
  std::vector<fabric::NodeIndex> nodes;  // switch number -> node index
  std::vector<uint32_t> of_node;         // node index -> switch number (or ~0)
  std::vector<uint32_t> sources;         // per switch: LID-holding ports it carries traffic from
};

Switches index_switches(const fabric::Fabric& f);

// Row-major [t * n + a]; symmetric, since links are bidirectional. kFar = unreachable.
std::vector<uint8_t> switch_distances(const fabric::Fabric& f, const Switches& sw);

// What every engine starts from: the switches, the LIDs in use, and tables sized for
// them with every entry dropped, after checking that no LID is held twice.
struct Start {
  Switches sw;
  std::vector<LidOwner> owners;  // lid_owners(f)
  Tables tables;
};
std::expected<Start, Failure> start(const fabric::Fabric& f);

// Channels: one number per (node, port), base[node] + port. The directed
// inter-switch links, which carry routing dependencies, are the channels whose
// isl_peer is a switch (kNoNode for every other channel).
struct Channels {
  std::vector<uint32_t> base;               // per node, then the total
  std::vector<fabric::NodeIndex> isl_peer;  // per channel
  std::vector<PortNum> port;                // per channel: its port number
  uint32_t count() const { return base.back(); }
  // The channel of (n, p) when it is an inter-switch link, else ~0u.
  uint32_t isl(fabric::NodeIndex n, PortNum p) const {
    const uint32_t c = base[n] + p;
    return c < base[n + 1] && isl_peer[c] != fabric::kNoNode ? c : ~0u;
  }
};
Channels channels(const fabric::Fabric& f);

// Routes, toward one destination, the switches that have no route to it yet: first
// the ones reachable from `turn` (when it has a route) through unrouted switches
// only, each toward the switch that reached it, so that their paths turn at `turn`;
// then, layer by layer, each one left toward its routed neighbour of lowest `rank`.
// `routed` (per switch number) is updated. `neighbours(s, fn)` calls fn(to, port,
// back) for each switch link of s: the neighbour, s's port to it, and its port back;
// the order it gives decides ties. Returns the hops chosen, in the order chosen;
// switches that never meet a routed one (another part of the fabric) stay unrouted.
struct BridgeHop {
  uint32_t sw;
  PortNum port;
  bool at_turn;  // found from `turn` (the first stage)
};
template <class Neighbours>
std::vector<BridgeHop> bridge(std::vector<uint8_t>& routed, uint32_t turn,
                              const std::vector<uint32_t>& rank, Neighbours&& neighbours) {
  std::vector<BridgeHop> hops;
  std::vector<uint32_t> q;
  if (routed[turn]) q.push_back(turn);
  for (size_t i = 0; i < q.size(); ++i)
    neighbours(q[i], [&](uint32_t to, PortNum, PortNum back) {
      if (routed[to]) return;
      routed[to] = 1;
      q.push_back(to);
      hops.push_back({to, back, true});
    });
  std::vector<uint32_t> left, still;
  for (uint32_t s = 0; s < routed.size(); ++s)
    if (!routed[s]) left.push_back(s);
  while (!left.empty()) {
    still.clear();
    const size_t before = hops.size();
    for (uint32_t v : left) {
      uint32_t best_rank = ~0u;
      PortNum best = 0;
      neighbours(v, [&](uint32_t to, PortNum port, PortNum) {
        if (routed[to] && rank[to] < best_rank) best_rank = rank[to], best = port;
      });
      if (best_rank == ~0u)
        still.push_back(v);
      else
        hops.push_back({v, best, false});
    }
    if (hops.size() == before) break;  // cut off from every routed switch
    for (size_t k = before; k < hops.size(); ++k) routed[hops[k].sw] = 1;
    left.swap(still);
  }
  return hops;
}

// Bridges by the list of switches they route (each sorted), as bridge_each gives them
// and an engine keeps them with its tables for its next repair.
using Bridges = std::map<std::vector<uint32_t>, std::vector<BridgeHop>>;

// The ends of the switch links `prev` had that f has lost, f being prev with only links
// taken away (removal_only's `was`): (switch number, its port), each end once.
std::vector<std::pair<uint32_t, PortNum>> lost_link_ends(const fabric::Fabric& prev,
                                                         const fabric::Fabric& f,
                                                         const Switches& sw,
                                                         const std::vector<fabric::NodeIndex>& was);

// bridge() for many destinations at once: unrouted[i] lists destination i's switches
// without a route to it (empty: nothing to bridge); every other switch counts as
// routed. Destinations with the same list get the same bridge, so it is computed once
// per distinct list (on a 3-level tree once per aggregation index, not once per
// aggregation switch), the lists in parallel; apply(i, hops) is then called for each
// destination i of the list, on the thread that computed it. Returns the bridges by
// list.
//
// `known`: the bridges of the previous tables, on the same switches with the same turn
// and ranks (and, for ftree, levels), of which `lost` are the link ends lost since. A
// list among them takes its bridge when no hop of it is over a lost link (bridge()
// reaches the list's switches from the turn through each other, each by the link it was
// first reached over, then the rest each by its routed neighbour of least rank: a link
// it did not take was either met when its far end was already reached, or lost to a
// neighbour of lesser rank, and without it each choice stays the same). `taken` counts
// them.
template <class Neighbours, class Apply>
Bridges bridge_each(const std::vector<std::vector<uint32_t>>& unrouted, size_t switches,
                    uint32_t turn, const std::vector<uint32_t>& rank, Neighbours&& neighbours,
                    Apply&& apply, const Bridges* known = nullptr,
                    const std::vector<std::pair<uint32_t, PortNum>>& lost = {},
                    size_t* taken = nullptr) {
  std::map<std::vector<uint32_t>, size_t> set_of;
  std::vector<std::vector<size_t>> sharing;  // per distinct list: its destinations
  for (size_t i = 0; i < unrouted.size(); ++i) {
    if (unrouted[i].empty()) continue;
    auto [it, fresh] = set_of.emplace(unrouted[i], sharing.size());
    if (fresh) sharing.emplace_back();
    sharing[it->second].push_back(i);
  }
  std::vector<std::vector<BridgeHop>> hops(sharing.size());
  std::vector<uint8_t> took(sharing.size(), 0);
  parallel_for(
      sharing.size(),
      [&](size_t k) {
        const std::vector<uint32_t>& list = unrouted[sharing[k].front()];
        if (known) {
          const auto it = known->find(list);
          bool stands = it != known->end();
          for (size_t c = 0; stands && c < lost.size(); ++c)
            if (std::binary_search(list.begin(), list.end(), lost[c].first))
              for (const BridgeHop& h : it->second)
                if (h.sw == lost[c].first && h.port == lost[c].second) stands = false;
          if (stands) hops[k] = it->second, took[k] = 1;
        }
        if (!took[k]) {
          std::vector<uint8_t> routed(switches, 1);
          for (uint32_t s : list) routed[s] = 0;
          hops[k] = bridge(routed, turn, rank, neighbours);
        }
        for (const size_t i : sharing[k]) apply(i, hops[k]);
      },
      1);
  if (taken) *taken = size_t(std::count(took.begin(), took.end(), 1));
  Bridges out;
  while (!set_of.empty()) {
    auto node = set_of.extract(set_of.begin());
    out.emplace_hint(out.end(), std::move(node.key()), std::move(hops[node.mapped()]));
  }
  return out;
}

// Whether two masks of n words are equal: a plain loop for the one or two words of a
// switch's links (std::equal calls memcmp).
inline bool same_mask(const uint64_t* a, const uint64_t* b, size_t n) {
  uint64_t diff = 0;
  for (size_t i = 0; i < n; ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// Copies n bytes to `to` from `from` (step: from[0, n); else from[0] to each) in 16-,
// 8- and 4-byte moves, the last ending at n: a call to memcpy costs more than these
// short copies. Reads from[0, n) only (step), or from[0, 16) (not).
inline void copy_short(PortNum* to, const PortNum* from, size_t n, bool step) {
  const auto at = [&](size_t i) { return step ? from + i : from; };
  if (n >= 16) {
    for (size_t i = 0; i + 16 < n; i += 16) std::memcpy(to + i, at(i), 16);
    std::memcpy(to + n - 16, at(n - 16), 16);
  } else if (n >= 8) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, at(n - 8), 8);
  } else if (n >= 4) {
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, at(n - 4), 4);
  } else {
    for (size_t i = 0; i < n; ++i) to[i] = *at(i);
  }
}

// Deals destinations' LIDs round robin over their candidate choices, starting at the
// least used candidate (the first in bit order on a tie), as minhop and up/down balance
// a switch's row. Choice j (bit j of a destination's mask) deals out[j] into the row;
// its count of LIDs dealt lives here, densely, in choice order.
//
// Why not a scan of a candidate list (cost, on the radix-56 tree's 15 M (switch,
// destination) pairs, 187 M entries): a switch of at most 64 choices (inter-switch
// links; a 64-port switch's most) finds its least used candidate by a vector scan over
// the dense counts with the mask's bits as lane masks, and deals by stepping through
// the mask's bits; no list of candidates is built, whatever the order of masks (in a
// tree a switch interleaves its up links, its down links, both, and single links).
// Switches of more choices take a plain scan.
class Dealer {
 public:
  // out[j]: what a LID dealt to choice j gets; uses[j]: its count so far.
  Dealer(const std::vector<PortNum>& out, const std::vector<uint32_t>& uses)
      : out_(out), uses_((out.size() + kLanes - 1) / kLanes * kLanes, 0) {
    for (size_t j = 0; j < uses.size(); ++j)
      uses_[j] = static_cast<int16_t>(int32_t(uses[j]) - kBias);
  }

  // Takes the candidates of `mask` (`words` words, bit j: choice j); false when it has
  // none.
  bool take(const uint64_t* mask, size_t words) {
    mask_ = mask;
    words_ = words;
    uint64_t any = 0;
    for (size_t w = 0; w < words; ++w) any |= mask[w];
    return any_ = any != 0;
  }

  // Deals lids[0, m) (pairs whose .first is the LID) round robin over the candidates
  // taken last, from the least used: row[lid] = its out value. A LID with skip(lid) is
  // passed over without taking a turn.
  template <class Pair, class Skip>
  [[gnu::always_inline]] void deal(PortNum* row, const Pair* lids, size_t m, Skip skip) {
    if (!any_) return;
    int16_t* const uses = uses_.data();
    const PortNum* const out = out_.data();
    if (words_ == 1) {
      const uint64_t mk = mask_[0];
      if constexpr (std::is_same_v<Skip, NoSkip>) {
        if (!(mk & (mk - 1))) {  // one candidate: every LID to it
          const auto k = static_cast<size_t>(__builtin_ctzll(mk));
          const PortNum p = out[k];
          const size_t run = m ? run_prefix(lids, m) : 0;
          if (run) {
            PortNum same[16];
            std::memset(same, p, sizeof same);
            copy_short(row + lids[0].first, same, run, false);
          }
          for (size_t i = run; i < m; ++i) row[lids[i].first] = p;
          add_lanes(uint64_t(1) << k, static_cast<int16_t>(m));
          return;
        }
        // A cycle is written out for a destination of many LIDs (kept for those after).
        if (m >= kCycleFrom)
          if (const Cycle* cy = kept_cycle(mk); cy || m >= kCycleWritten)
            return deal_cycle(row, lids, m, mk, cy ? *cy : cycle(mk));
      }
      const size_t first = least(mk);
      uint64_t rest = mk >> first << first;  // the candidates from the next one's turn on
      uint64_t dealt = 0;                    // the candidates that took a turn this round
      for (size_t i = 0; i < m; ++i) {
        if (skip(lids[i].first)) continue;
        const auto k = static_cast<size_t>(__builtin_ctzll(rest));
        row[lids[i].first] = out[k];
        dealt |= rest & -rest;
        rest &= rest - 1;
        if (!rest) rest = mk, add_lanes(dealt, 1), dealt = 0;
      }
      add_lanes(dealt, 1);
      return;
    }
    std::vector<uint32_t>& cand = cand_;
    cand.clear();
    for (size_t w = 0; w < words_; ++w)
      for (uint64_t b = mask_[w]; b; b &= b - 1)
        cand.push_back(static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(b))));
    size_t c = 0;
    for (size_t i = 1; i < cand.size(); ++i)
      if (uses[cand[i]] < uses[cand[c]]) c = i;
    for (size_t i = 0; i < m; ++i) {
      if (skip(lids[i].first)) continue;
      row[lids[i].first] = out[cand[c]];
      ++uses[cand[c]];
      if (++c == cand.size()) c = 0;
    }
  }
  // Every LID takes its turn (deal's Skip).
  struct NoSkip {
    bool operator()(uint16_t) const { return false; }
  };

  // Choice j's count.
  uint32_t uses(size_t j) const { return static_cast<uint32_t>(uses_[j] + kBias); }

 private:
  // Counts as 16 bits less 32768, compared signed (SSE2's 16-bit minimum): a row holds at
  // most 49,151 unicast LIDs, so no count reaches 65,536.
  static constexpr int32_t kBias = 32768;
  static constexpr size_t kLanes = 8;
  using Lanes = int16_t __attribute__((vector_size(kLanes * sizeof(int16_t))));

  // Lane j of cut(b) is all ones where bit j of b is set: eight choices' lanes cut to
  // the candidates by eight bits of a mask.
  static Lanes cut(uint64_t b8) {
    static constexpr std::array<Lanes, 256> kCut = [] {
      std::array<Lanes, 256> c{};
      constexpr int16_t k1 = -1;
      for (unsigned b = 0; b < 256; ++b)
        c[b] = Lanes{int16_t(b & 1 ? k1 : 0),  int16_t(b & 2 ? k1 : 0),  int16_t(b & 4 ? k1 : 0),
                     int16_t(b & 8 ? k1 : 0),  int16_t(b & 16 ? k1 : 0), int16_t(b & 32 ? k1 : 0),
                     int16_t(b & 64 ? k1 : 0), int16_t(b & 128 ? k1 : 0)};
      return c;
    }();
    return kCut[b8];
  }

  // The first candidate of one-word mask mk (not 0) of the least count: from the set of
  // those kept for mk (least_), else found by least_set and kept.
  size_t least(uint64_t mk) {
    Least* slot = nullptr;
    for (Least& e : least_)
      if (e.mask == mk) {
        if (e.at) return static_cast<size_t>(__builtin_ctzll(e.at));
        slot = &e;
      }
    if (!slot) slot = &least_[next_least_++ % least_.size()];
    slot->mask = mk;
    slot->at = least_set(mk);
    return static_cast<size_t>(__builtin_ctzll(slot->at));
  }

  // The candidates of one-word mask mk (not 0) that hold its least count: a vector scan
  // over the vectors from the first candidate's to the last's, each eight choices' lanes
  // cut to the candidates (the others read as the largest count, which no count
  // reaches), then the lanes equal to it, eight bits a vector.
  uint64_t least_set(uint64_t mk) const {
    const Lanes top = Lanes{} + std::numeric_limits<int16_t>::max();
    const size_t i0 = static_cast<size_t>(__builtin_ctzll(mk)) / kLanes,
                 nv = (64 - static_cast<size_t>(__builtin_clzll(mk)) + kLanes - 1) / kLanes;
    Lanes low = top, cut_v[64 / kLanes];
    for (size_t i = i0; i < nv; ++i) {
      Lanes v;
      std::memcpy(&v, uses_.data() + i * kLanes, sizeof v);
      const Lanes c = cut(mk >> (i * kLanes) & 255);
      cut_v[i] = v = (v & c) | (top & ~c);
      low = v < low ? v : low;
    }
    // Every lane the least of all: halves, quarters, pairs.
    low = low < __builtin_shuffle(low, Lanes{4, 5, 6, 7, 0, 1, 2, 3})
              ? low
              : __builtin_shuffle(low, Lanes{4, 5, 6, 7, 0, 1, 2, 3});
    low = low < __builtin_shuffle(low, Lanes{2, 3, 0, 1, 6, 7, 4, 5})
              ? low
              : __builtin_shuffle(low, Lanes{2, 3, 0, 1, 6, 7, 4, 5});
    low = low < __builtin_shuffle(low, Lanes{1, 0, 3, 2, 5, 4, 7, 6})
              ? low
              : __builtin_shuffle(low, Lanes{1, 0, 3, 2, 5, 4, 7, 6});
    uint64_t at = 0;
    for (size_t i = i0; i < nv; ++i) {
      const Lanes hit = cut_v[i] == low;  // all ones where it holds the least
      // Each lane's sign bit, lanes 0-7 to bits 0-7 (SSE2: signed pack to bytes, byte
      // sign bits).
      using Bytes = char __attribute__((vector_size(16)));
      const auto bits = static_cast<unsigned>(__builtin_ia32_pmovmskb128(
          reinterpret_cast<Bytes>(__builtin_ia32_packsswb128(hit, Lanes{}))));
      at |= uint64_t(bits & 255) << (i * kLanes);
    }
    return at & mk;
  }

  // How many of lids[0, m) (m > 0, ascending) from the first are consecutive LIDs, one
  // stretch of the row: all m, or all but the last (a leaf's CAs, their LIDs assigned
  // side by side, and the leaf's own LID after them), else 0.
  template <class Pair>
  static size_t run_prefix(const Pair* lids, size_t m) {
    assert(std::is_sorted(lids, lids + m,
                          [](const Pair& a, const Pair& b) { return a.first < b.first; }));
    if (size_t(lids[m - 1].first - lids[0].first) == m - 1) return m;
    if (m > 1 && size_t(lids[m - 2].first - lids[0].first) == m - 2) return m - 1;
    return 0;
  }

  // A destination of this many LIDs or more, every one taking its turn, is dealt from its
  // mask's cycle (deal_cycle) when the cycle is kept, or of kCycleWritten LIDs or more
  // (then written out); fewer, bit by bit. Either way the same rows and counts.
  static constexpr size_t kCycleFrom = 4, kCycleWritten = 16;
  // A one-word mask's candidates in bit order, the cycle written out over 128 positions
  // (twice at least: a candidate's position plus up to 64 more stay inside).
  struct Cycle {
    uint64_t mask = 0;             // 0: not yet filled
    size_t size = 0;               // its candidates
    std::array<uint8_t, 64> at{};  // per choice of the mask: its position in the cycle
    std::array<uint8_t, 128> choice{};
    std::array<PortNum, 128> port{};  // out_[choice[i]]
    uint32_t magic = 0;               // ceil(2^22 / size): x / size = x * magic >> 22
    // x modulo size, for x < 65,536 (size <= 64: the error of the product, under
    // x / 2^22 < 1 / 64, never carries the quotient over), without a division.
    size_t mod(size_t x) const { return x - (x * magic >> 22) * size; }
    size_t div(size_t x) const { return x * magic >> 22; }
  };

  // The cycle of mask mk when it is one of the last few written out, else null.
  const Cycle* kept_cycle(uint64_t mk) const {
    for (const Cycle& c : cycles_)
      if (c.mask == mk) return &c;
    return nullptr;
  }

  // Writes out the cycle of mask mk (not 0) over the oldest kept (a switch deals from a
  // few masks over and over: a tree's up links, its down links, both).
  const Cycle& cycle(uint64_t mk) {
    Cycle& c = cycles_[next_cycle_++ % cycles_.size()];
    c.mask = mk;
    size_t n = 0;
    for (uint64_t b = mk; b; b &= b - 1, ++n) {
      const auto k = static_cast<size_t>(__builtin_ctzll(b));
      c.at[k] = static_cast<uint8_t>(n);
      c.choice[n] = static_cast<uint8_t>(k);
      c.port[n] = out_[k];
    }
    c.size = n;
    c.magic = static_cast<uint32_t>(((uint64_t(1) << 22) + n - 1) / n);
    for (size_t i = n; i < c.choice.size(); ++i) {
      c.choice[i] = c.choice[i - n];
      c.port[i] = c.port[i - n];
    }
    return c;
  }

  // deal() of m LIDs, every one taking its turn, over one-word mask mk: LID i goes to the
  // candidate i places after the least used in the cycle; so each candidate takes m / c
  // turns (c candidates), and the m % c from the least used on one more.
  template <class Pair>
  void deal_cycle(PortNum* row, const Pair* lids, size_t m, uint64_t mk, const Cycle& cy) {
    const size_t c = cy.size;
    const size_t from = cy.at[least(mk)];
    const PortNum* const port = cy.port.data();
    // The stretch of consecutive LIDs first (whole vectors of the cycle), then the rest.
    const size_t run = run_prefix(lids, m);
    size_t at = from;
    for (size_t i = 0; i < run;) {
      const size_t n = std::min(run - i, cy.port.size() - at);
      copy_short(row + lids[0].first + i, port + at, n, true);
      i += n;
      at = cy.mod(at + n);
    }
    for (size_t i = run; i < m;) {
      const size_t n = std::min(m - i, cy.port.size() - at);
      const Pair* const l = lids + i;
      for (size_t j = 0; j < n; ++j) row[l[j].first] = port[at + j];
      i += n;
      at = cy.mod(at + n);
    }
    const size_t rounds = cy.div(m);
    const uint8_t* const choice = cy.choice.data() + from;
    uint64_t more = 0;
    for (size_t j = 0, e = m - rounds * c; j < e; ++j) more |= uint64_t(1) << choice[j];
    if (rounds)
      add_lanes(mk, static_cast<int16_t>(rounds), more);
    else
      add_lanes(more, 1);
  }

  // Adds x to the count of every choice of mask b, and 1 more to those of `more` (inside
  // b), in one pass.
  void add_lanes(uint64_t b, int16_t x, uint64_t more) {
    int16_t* const uses = uses_.data();
    const Lanes add = Lanes{} + x, one = Lanes{} + 1;
    const size_t i0 = static_cast<size_t>(__builtin_ctzll(b)) / kLanes,
                 nv = (64 - static_cast<size_t>(__builtin_clzll(b)) + kLanes - 1) / kLanes;
    for (size_t i = i0; i < nv; ++i) {
      Lanes v;
      std::memcpy(&v, uses + i * kLanes, sizeof v);
      v += (add & cut(b >> (i * kLanes) & 255)) + (one & cut(more >> (i * kLanes) & 255));
      std::memcpy(uses + i * kLanes, &v, sizeof v);
    }
    // A kept set inside b loses the lanes that took one more; any other, those of b.
    for (Least& e : least_) e.at &= ~(e.mask & ~b ? b : more);
  }

  // Adds x to the count of every choice of mask b, a vector at a time: scalar stores
  // into the counts stall least()'s vector loads of them (a store forwards only to a load
  // of its own size), on every destination dealt.
  void add_lanes(uint64_t b, int16_t x) {
    const uint64_t grew = b;
    int16_t* const uses = uses_.data();
    const Lanes add = Lanes{} + x;
    while (b) {
      const size_t i = static_cast<size_t>(__builtin_ctzll(b)) / kLanes;
      Lanes v;
      std::memcpy(&v, uses + i * kLanes, sizeof v);
      v += add & cut(b >> (i * kLanes) & 255);
      std::memcpy(uses + i * kLanes, &v, sizeof v);
      b &= ~(uint64_t(255) << (i * kLanes));
    }
    // A kept set loses the lanes that grew, unless all its candidates grew alike.
    if (x != 0)
      for (Least& e : least_)
        if (e.mask & ~grew) e.at &= ~grew;
  }

  const std::vector<PortNum>& out_;
  std::vector<int16_t> uses_;  // per choice, count - kBias, padded to whole vectors
  std::array<Cycle, 8> cycles_;
  size_t next_cycle_ = 0;
  const uint64_t* mask_ = nullptr;
  size_t words_ = 0;
  bool any_ = false;
  std::vector<uint32_t> cand_;  // more than 64 choices: the candidates of the mask taken last
  // For the last few one-word masks found by least_set: the candidates holding the least
  // count, kept as counts grow (add_lanes); 0: not known. A switch interleaves few masks
  // (a tree's up links, its down links, both, single links), and between two scans of
  // one its least count is held by many candidates, each taking a turn before it moves.
  struct Least {
    uint64_t mask = 0, at = 0;
  };
  std::array<Least, 4> least_{};
  size_t next_least_ = 0;
};

// Where each LID leaves the switch fabric: per switch number, its (LID, exit port)
// pairs in LID order; a switch's own LID exits on port 0. LIDs of CAs linked to no
// switch are left out.
using LidsBySwitch = std::vector<std::vector<std::pair<uint16_t, PortNum>>>;
LidsBySwitch lids_by_switch(const fabric::Fabric& f, const Switches& sw,
                            const std::vector<LidOwner>& owners);

// Whether `f` is `prev` with only links taken away (and the nodes they cut off): every
// switch and every inter-switch link of f was in prev, and every LID in use is held by
// the port that held it there. Then: per node of f, its index in prev. An engine
// repairs its previous tables (Options::previous) only then.
std::optional<std::vector<fabric::NodeIndex>> removal_only(const fabric::Fabric& prev,
                                                           const fabric::Fabric& f,
                                                           const std::vector<LidOwner>& owners);

// The previous tables an engine may repair (Options::previous): its own, on one VL
// (or layered, when `layered`: the engine re-checks the layers), of a fabric that `f`
// is with only links taken away (removal_only). Then: per node of f, its index in the
// previous fabric; else nullopt (route afresh).
std::optional<std::vector<fabric::NodeIndex>> repairable(const Options& o, std::string_view engine,
                                                         const fabric::Fabric& f,
                                                         const std::vector<LidOwner>& owners,
                                                         bool layered = false);
// The (switch, LID) entries of `now` that differ from the previous tables, over the
// LIDs in use, switch by switch in parallel.
uint64_t changed_entries(const Switches& sw, const Tables& now, const Tables& prev,
                         const std::vector<fabric::NodeIndex>& was,
                         const std::vector<LidOwner>& owners);
// The LIDs in use (ascending) for which some switch's entry in `now` differs from the
// previous tables' (the same comparison).
std::vector<uint16_t> changed_lids(const Switches& sw, const Tables& now, const Tables& prev,
                                   const std::vector<fabric::NodeIndex>& was,
                                   const std::vector<LidOwner>& owners);

// Adaptive-routing groups of the parallel links: each entry whose static port has
// siblings to the same next switch gets them as its group (Tables::ar_*).
void parallel_link_groups(const fabric::Fabric& f, const Switches& sw, Tables& t);

// Adaptive-routing groups for tables that route up*/down* (Tables::updown_height): an
// entry whose static port leads up gets every up port to a switch one hop nearer the
// LID's switch by an up*down* way; one that leads down, every down port to a switch
// one hop nearer going down whose own entry for the LID leads down too (or that holds
// the LID). Any mix of choices stays up*down* and minimal. Switch LIDs get none, nor
// does a switch without an up*down* way to a LID (its route there is bridged, and may
// turn: the chain's check judges those turns against the groups). Without heights, or
// with a link joining equal heights: parallel_link_groups.
void updown_groups(const fabric::Fabric& f, const Switches& sw, Tables& t);

}  // namespace weft::routing::detail
