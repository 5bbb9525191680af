// The Dealer (routing/src/switch_graph.hpp, internal to routing/) against a plain
// reference: each destination's LIDs round robin over its mask's candidates, from the
// least used one (the first in bit order on a tie). The dealer finds the least used by
// a vector scan with the mask's bits as lane masks (up to 64 choices), keeps for its
// last four masks the candidates holding the least count as counts grow (the pool below
// has fourteen, interleaved), and steps through the bits; whatever the order of masks,
// rows and counts must come out as the reference's, on one mask word and on several. A
// destination of one candidate, or of many LIDs, takes other ways through the dealer
// (every LID to the one; the cycle of the mask's candidates written out): LID counts of
// 0 to 39 reach them all.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "../../routing/src/switch_graph.hpp"
#include "weft/splitmix.hpp"

namespace weft::routing {
namespace {

using Lids = std::vector<std::pair<uint16_t, PortNum>>;

// The reference: one destination dealt against counts held per choice.
void reference_deal(const std::vector<uint64_t>& mask, std::vector<uint32_t>& count,
                    const std::vector<PortNum>& out, const Lids& lids,
                    const std::vector<uint8_t>& skip, std::vector<PortNum>& row) {
  std::vector<uint32_t> cand;
  for (size_t j = 0; j < mask.size() * 64; ++j)
    if (mask[j / 64] >> (j % 64) & 1) cand.push_back(static_cast<uint32_t>(j));
  if (cand.empty()) return;
  size_t c = 0;
  for (size_t i = 1; i < cand.size(); ++i)
    if (count[cand[i]] < count[cand[c]]) c = i;
  for (auto [lid, exit] : lids) {
    if (skip[lid]) continue;
    row[lid] = out[cand[c]];
    ++count[cand[c]];
    if (++c == cand.size()) c = 0;
  }
}

TEST(Dealer, DealsAsThePlainRoundRobinFromTheLeastUsed) {
  SplitMix64 rng(7);
  for (int round = 0; round < 300; ++round) {
    // One mask word (the vector scan) in two rounds of three, up to three words in the
    // third (the plain scan); every seventh round exactly 64 choices (bit 63 in use).
    const size_t choices = round % 7 == 0   ? 64
                           : round % 3 == 2 ? 1 + rng.next() % 130
                                            : 1 + rng.next() % 64;
    const size_t words = (choices + 63) / 64;
    std::vector<PortNum> out(choices);
    for (size_t j = 0; j < choices; ++j) out[j] = static_cast<PortNum>(1 + rng.next() % 250);
    std::vector<uint32_t> count(choices), ref_count(choices);
    // Counts from 0, and (a switch of few links and many LIDs) about 32,768, 49,000 and
    // 57,000, up to 65,000 as the LIDs are dealt: the dealer keeps them in 16 bits less
    // 32,768.
    const uint32_t base = std::array<uint32_t, 4>{0, 32760, 49000, 57000}[round % 4];
    for (size_t j = 0; j < choices; ++j)
      count[j] = ref_count[j] = base + static_cast<uint32_t>(rng.next() % 16);
    // A pool of masks: large ones (most choices; two that share none), small ones (1 to
    // 3 bits, often inside a large one), empty ones; destinations draw from it, repeats
    // included. More than the dealer keeps the cycles of (8), so it writes them out again.
    std::vector<std::vector<uint64_t>> pool;
    for (int k = 0; k < 14; ++k) {
      std::vector<uint64_t> m(words, 0);
      const int kind = k % 3;
      if (kind == 0) {
        for (size_t j = 0; j < choices; ++j)
          if (rng.next() % 4) m[j / 64] |= uint64_t(1) << (j % 64);
      } else if (k == 2) {
        // The choices the first large mask lacks: two large masks that share none, as
        // an aggregation switch's up and down links.
        for (size_t j = 0; j < choices; ++j) m[j / 64] = ~pool[0][j / 64];
        if (choices % 64) m.back() &= (uint64_t(1) << (choices % 64)) - 1;
      } else if (kind == 1) {
        const size_t bits = 1 + rng.next() % 3;
        for (size_t b = 0; b < bits; ++b) {
          const size_t j = rng.next() % choices;
          m[j / 64] |= uint64_t(1) << (j % 64);
        }
      }
      pool.push_back(m);
    }
    const size_t destinations = 200;
    std::vector<size_t> which(destinations);
    for (auto& w : which) w = rng.next() % pool.size();
    // Every destination's own mask in one array, as the engines lay them out: equal
    // masks compare equal by content, not by address.
    std::vector<uint64_t> masks(destinations * words);
    for (size_t d = 0; d < destinations; ++d)
      for (size_t w = 0; w < words; ++w) masks[d * words + w] = pool[which[d]][w];
    const size_t lid_count = 3000;
    std::vector<PortNum> row(lid_count, 0xff), ref_row(lid_count, 0xff);
    std::vector<uint8_t> skip(lid_count, 0);
    const bool repair = round % 2;  // every other round passes over some LIDs
    if (repair)
      for (auto& x : skip) x = rng.next() % 3 == 0;
    uint16_t next_lid = 1;
    detail::Dealer dealer(out, count);
    uint16_t far_lid = static_cast<uint16_t>(lid_count - 300);
    for (size_t d = 0; d < destinations && size_t(next_lid) + 380 < lid_count; ++d) {
      Lids lids;
      const size_t nl = rng.next() % 40;
      // Consecutive LIDs (one stretch of the row); in every third round with gaps; in
      // every third round after that, the last one far beyond the others (a leaf's CAs
      // and its own LID).
      for (size_t i = 0; i < nl; ++i) {
        if (round % 3 == 2 && i + 1 == nl && nl > 1) {
          lids.emplace_back(far_lid++, PortNum(0));
          break;
        }
        lids.emplace_back(next_lid, PortNum(0));
        next_lid =
            static_cast<uint16_t>(next_lid + (round % 3 == 1 && rng.next() % 4 == 0 ? 2 : 1));
      }
      const bool any = dealer.take(&masks[d * words], words);
      size_t bits = 0;
      for (uint64_t w : pool[which[d]]) bits += static_cast<size_t>(__builtin_popcountll(w));
      ASSERT_EQ(any, bits > 0);
      if (any) {
        if (repair)
          dealer.deal(row.data(), lids.data(), lids.size(),
                      [&skip](uint16_t lid) { return skip[lid] != 0; });
        else
          dealer.deal(row.data(), lids.data(), lids.size(), detail::Dealer::NoSkip{});
      }
      reference_deal(pool[which[d]], ref_count, out, lids,
                     repair ? skip : std::vector<uint8_t>(lid_count, 0), ref_row);
    }
    for (size_t j = 0; j < choices; ++j) count[j] = dealer.uses(j);
    ASSERT_EQ(row, ref_row) << "round " << round << ", " << choices << " choices";
    ASSERT_EQ(count, ref_count) << "round " << round;
  }
}

// changed_entries (switch_graph.cpp) against a count LID by LID: it compares the rows
// in runs of the LIDs in use, 64 entries at a time. Rows of other lengths (the LIDs past
// either one's end count as changed), LIDs in use with gaps and runs that cross the
// 64-entry blocks, switches renumbered between the two tables.
TEST(ChangedEntries, CountsAsALidByLidComparisonDoes) {
  SplitMix64 rng(11);
  for (int round = 0; round < 300; ++round) {
    const size_t switches = 1 + rng.next() % 5, nodes = switches + 3;
    detail::Switches sw;
    std::vector<fabric::NodeIndex> was(nodes, 0);
    Tables now, prev;
    now.lft.resize(nodes);
    prev.lft.resize(nodes);
    for (size_t s = 0; s < switches; ++s) {
      const auto n = static_cast<fabric::NodeIndex>(s + 2);
      sw.nodes.push_back(n);
      was[n] = static_cast<fabric::NodeIndex>(nodes - 1 - s);  // renumbered
      const size_t len = 1 + rng.next() % 400,
                   len_before = rng.next() % 3 ? len : 1 + rng.next() % 400;
      auto& row = now.lft[n];
      auto& before = prev.lft[was[n]];
      row.resize(len);
      before.resize(len_before);
      for (auto& p : before) p = static_cast<PortNum>(rng.next() % 4);
      for (size_t i = 0; i < len; ++i)
        row[i] =
            i < len_before && rng.next() % 10 ? before[i] : static_cast<PortNum>(rng.next() % 4);
    }
    // LIDs in use: runs with gaps, some past every row's end.
    std::vector<LidOwner> owners;
    for (uint16_t lid = 1; lid < 450;) {
      const uint16_t run = static_cast<uint16_t>(1 + rng.next() % 150);
      for (uint16_t k = 0; k < run && lid < 450; ++k, ++lid) owners.push_back({Lid{lid}, 0, 0});
      lid = static_cast<uint16_t>(lid + rng.next() % 40);
    }
    uint64_t want = 0;
    for (const fabric::NodeIndex n : sw.nodes) {
      const auto& row = now.lft[n];
      const auto& before = prev.lft[was[n]];
      for (const LidOwner& o : owners) {
        const uint16_t lid = o.lid.value;
        want += lid >= row.size() || lid >= before.size() || row[lid] != before[lid];
      }
    }
    ASSERT_EQ(detail::changed_entries(sw, now, prev, was, owners), want) << "round " << round;
  }
}

}  // namespace
}  // namespace weft::routing
