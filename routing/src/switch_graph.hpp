// Internal to routing/: the switches of a fabric as a compact graph, and all-pairs
// switch hop distances by bit-parallel BFS (64 sources per pass) over a Boost.Graph
// compressed_sparse_row_graph. Shared by the engines and the analyzer.
#pragma once

#include <array>
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

// bridge() for many destinations at once: unrouted[i] lists destination i's switches
// without a route to it (empty: nothing to bridge); every other switch counts as
// routed. Destinations with the same list get the same bridge, so it is computed once
// per distinct list (on a 3-level tree once per aggregation index, not once per
// aggregation switch), the lists in parallel; apply(i, hops) is then called for each
// destination i of the list, on the thread that computed it.
template <class Neighbours, class Apply>
void bridge_each(const std::vector<std::vector<uint32_t>>& unrouted, size_t switches, uint32_t turn,
                 const std::vector<uint32_t>& rank, Neighbours&& neighbours, Apply&& apply) {
  std::map<std::vector<uint32_t>, size_t> set_of;
  std::vector<std::vector<size_t>> sharing;  // per distinct list: its destinations
  for (size_t i = 0; i < unrouted.size(); ++i) {
    if (unrouted[i].empty()) continue;
    auto [it, fresh] = set_of.emplace(unrouted[i], sharing.size());
    if (fresh) sharing.emplace_back();
    sharing[it->second].push_back(i);
  }
  parallel_for(
      sharing.size(),
      [&](size_t k) {
        std::vector<uint8_t> routed(switches, 1);
        for (uint32_t s : unrouted[sharing[k].front()]) routed[s] = 0;
        const std::vector<BridgeHop> hops = bridge(routed, turn, rank, neighbours);
        for (const size_t i : sharing[k]) apply(i, hops);
      },
      1);
}

// Whether two masks of n words are equal: a plain loop for the one or two words of a
// switch's links (std::equal calls memcmp).
inline bool same_mask(const uint64_t* a, const uint64_t* b, size_t n) {
  uint64_t diff = 0;
  for (size_t i = 0; i < n; ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// Deals destinations' LIDs round robin over their candidate choices, starting at the
// least used candidate (the first in bit order on a tie), as minhop and up/down balance
// a switch's row. The choices of one mask (bit j: choice j) are taken with take(), then
// dealt with deal().
//
// Why not a plain scan (cost, on the radix-56 tree's 15 M (switch, destination) pairs):
// most destinations of a switch share one of one or two large masks (in a tree, all its
// up links; for an aggregation switch also all its down links), interleaved with
// single-choice masks (the down link to a leaf; the one up link toward a core). Each
// large mask's candidates and their counts are held densely in a slot while masks
// change; the slots' masks never share a choice, so each count lives in one place (a
// slot, else `count`), and goes back to `count` when its slot is given to another mask
// and at flush(). A small mask is dealt in place, its counts read where they live. The
// least used of a slot is a vector scan over its dense counts.
class Dealer {
 public:
  // count: per choice index, its uses so far (read by take, written back by flush).
  explicit Dealer(uint32_t* count) : count_(count) { pos_.fill(-1); }

  // The candidates of `mask` (`words` words): bit j is choice index(j) (< 256), dealt
  // as out(index(j)). Returns how many (0: none). The mask's words must stay in place
  // while the dealer is used (a slot refers to them).
  template <class Index, class Out>
  size_t take(const uint64_t* mask, size_t words, Index index, Out out) {
    small_ = 0;
    for (size_t k = 0; k < kSlots; ++k)
      if (slots_[k].mask && same_mask(mask, slots_[k].mask, words)) return cur_ = k, slots_[k].n;
    size_t bits = 0;
    for (size_t w = 0; w < words; ++w) bits += static_cast<size_t>(__builtin_popcountll(mask[w]));
    if (bits <= kSmall) {
      // Dealt in place; the slots stay.
      size_t n = 0;
      for (size_t w = 0; w < words; ++w)
        for (uint64_t m = mask[w]; m; m &= m - 1) {
          const uint32_t i = index(w * 64 + static_cast<size_t>(__builtin_ctzll(m)));
          small_out_[n] = out(i);
          small_use_[n++] = pos_[i] >= 0
                                ? &slots_[size_t(pos_[i]) / 256].uses[size_t(pos_[i]) % 256]
                                : &count_[i];
        }
      small_ = n;
      return n;
    }
    // A slot for it: the slots that share a choice with it give theirs up first, then
    // the one dealt from longer ago.
    for (size_t k = 0; k < kSlots; ++k)
      if (slots_[k].mask && overlap(mask, slots_[k].mask, words)) release(k);
    size_t k = 0;
    while (k < kSlots && slots_[k].mask) ++k;
    if (k == kSlots) release(k = 1 - cur_);
    Slot& sl = slots_[k];
    size_t n = 0;
    for (size_t w = 0; w < words; ++w)
      for (uint64_t m = mask[w]; m; m &= m - 1) {
        const uint32_t i = index(w * 64 + static_cast<size_t>(__builtin_ctzll(m)));
        sl.cand[n] = i;
        sl.out[n] = out(i);
        sl.uses[n] = count_[i];
        pos_[i] = static_cast<int16_t>(k * 256 + n++);
      }
    for (size_t i = n; i % kLanes; ++i) sl.uses[i] = std::numeric_limits<uint32_t>::max();
    sl.n = n;
    sl.mask = mask;
    cur_ = k;
    return n;
  }

  // Deals lids[0, m) (pairs whose .first is the LID) round robin over the candidates
  // taken last, from the least used: row[lid] = the candidate's out value. A LID with
  // skip(lid) is passed over without taking a turn.
  template <class Pair, class Skip>
  void deal(PortNum* row, const Pair* lids, size_t m, Skip skip) {
    if (small_) {
      const size_t n = small_;
      size_t c = 0;
      for (size_t i = 1; i < n; ++i)
        if (*small_use_[i] < *small_use_[c]) c = i;
      for (size_t i = 0; i < m; ++i) {
        if (skip(lids[i].first)) continue;
        row[lids[i].first] = small_out_[c];
        ++*small_use_[c];
        if (++c == n) c = 0;
      }
      return;
    }
    Slot& sl = slots_[cur_];
    const size_t n = sl.n;
    if (n == 0) return;
    size_t c = least(sl);
    uint32_t* const uses = sl.uses.data();
    const PortNum* const out = sl.out.data();
    if constexpr (std::is_same_v<Skip, NoSkip>) {
      // Every LID takes a turn: each candidate gets m / n, and the m % n from the
      // least used on one more.
      size_t r = m;
      if (m >= n) {
        const auto q = static_cast<uint32_t>(m / n);
        r = m % n;
        for (size_t i = 0; i < n; ++i) uses[i] += q;
      }
      for (size_t i = 0, j = c; i < r; ++i) {
        ++uses[j];
        if (++j == n) j = 0;
      }
      for (size_t i = 0; i < m; ++i) {
        row[lids[i].first] = out[c];
        if (++c == n) c = 0;
      }
    } else {
      for (size_t i = 0; i < m; ++i) {
        if (skip(lids[i].first)) continue;
        row[lids[i].first] = out[c];
        ++uses[c];
        if (++c == n) c = 0;
      }
    }
  }
  // Every LID takes its turn (deal's Skip).
  struct NoSkip {
    bool operator()(uint16_t) const { return false; }
  };

  // The slots' counts back into `count` (the dealer may be taken on afterwards).
  void flush() {
    for (const Slot& sl : slots_)
      for (size_t i = 0; i < sl.n; ++i) count_[sl.cand[i]] = sl.uses[i];
  }

 private:
  static constexpr size_t kSmall = 2;  // masks of at most this many bits are dealt in place
  static constexpr size_t kSlots = 2;
  static constexpr size_t kLanes = 4;
  using Lanes = uint32_t __attribute__((vector_size(kLanes * sizeof(uint32_t))));

  struct Slot {
    const uint64_t* mask = nullptr;  // the mask its candidates came from (none: free)
    size_t n = 0;
    std::array<uint32_t, 256> cand;           // choice index per candidate
    std::array<PortNum, 256> out;             // what a LID dealt to it gets
    std::array<uint32_t, 256 + kLanes> uses;  // its count, padded with the largest
  };

  static bool overlap(const uint64_t* a, const uint64_t* b, size_t words) {
    uint64_t both = 0;
    for (size_t i = 0; i < words; ++i) both |= a[i] & b[i];
    return both != 0;
  }

  // Slot k's counts back into `count`, and the slot freed.
  void release(size_t k) {
    Slot& sl = slots_[k];
    for (size_t i = 0; i < sl.n; ++i) {
      count_[sl.cand[i]] = sl.uses[i];
      pos_[sl.cand[i]] = -1;
    }
    sl.n = 0;
    sl.mask = nullptr;
  }

  // The first index of the least count in slot sl (sl.n >= 1).
  static size_t least(const Slot& sl) {
    const size_t nv = (sl.n + kLanes - 1) / kLanes;
    Lanes m, v;
    std::memcpy(&m, sl.uses.data(), sizeof m);
    for (size_t i = 1; i < nv; ++i) {
      std::memcpy(&v, sl.uses.data() + i * kLanes, sizeof v);
      m = v < m ? v : m;
    }
    const uint32_t low = std::min(std::min(m[0], m[1]), std::min(m[2], m[3]));
    const Lanes lows = Lanes{} + low;
    for (size_t i = 0;; ++i) {
      std::memcpy(&v, sl.uses.data() + i * kLanes, sizeof v);
      using Halves = uint64_t __attribute__((vector_size(16)));
      const auto eq = reinterpret_cast<Halves>(v == lows);
      if (eq[0]) return i * kLanes + static_cast<size_t>(__builtin_ctzll(eq[0])) / 32;
      if (eq[1]) return i * kLanes + 2 + static_cast<size_t>(__builtin_ctzll(eq[1])) / 32;
    }
  }

  uint32_t* count_;
  std::array<Slot, kSlots> slots_;
  size_t cur_ = 0;                // the slot taken last
  size_t small_ = 0;              // the small mask's candidates (0: slot cur_ deals)
  std::array<int16_t, 256> pos_;  // per choice index: slot * 256 + place, or -1
  std::array<PortNum, kSmall> small_out_;
  std::array<uint32_t*, kSmall> small_use_;  // where the small mask's counts live
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
