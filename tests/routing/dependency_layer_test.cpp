// DependencyLayer (routing/src/dependency_layer.hpp, internal to routing/): a layer's
// channel dependency graph kept acyclic as edges come. Checked against a plain
// reachability search: it refuses exactly the edges that close a cycle, and its labels
// stay a topological order, also where insertions crowd one gap until it is relabelled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "../../routing/src/dependency_layer.hpp"
#include "weft/splitmix.hpp"

namespace weft::routing::detail {
namespace {

constexpr size_t kNoLimit = ~size_t(0);

// The edges a layer holds, searched plainly.
struct Reference {
  explicit Reference(uint32_t n) : out(n) {}
  bool reaches(uint32_t from, uint32_t to) const {
    std::vector<uint8_t> seen(out.size(), 0);
    std::vector<uint32_t> stack = {from};
    seen[from] = 1;
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      if (v == to) return true;
      for (uint32_t w : out[v])
        if (!seen[w]) seen[w] = 1, stack.push_back(w);
    }
    return false;
  }
  std::vector<std::vector<uint32_t>> out;
};

// Every edge goes from a lower label to a higher one, and no two channels share one.
void expect_topological(const DependencyLayer& layer, const Reference& ref) {
  std::set<uint64_t> labels;
  for (uint32_t c = 0; c < ref.out.size(); ++c) {
    labels.insert(layer.label(c));
    for (uint32_t d : ref.out[c])
      ASSERT_LT(layer.label(c), layer.label(d)) << "edge " << c << " -> " << d;
  }
  ASSERT_EQ(labels.size(), ref.out.size());
}

// Channel c's port: its number within 256, so that `has` tells channels apart.
std::vector<PortNum> ports(uint32_t n) {
  std::vector<PortNum> p(n);
  for (uint32_t c = 0; c < n; ++c) p[c] = static_cast<PortNum>(c);
  return p;
}

// A layer over n channels in the order of their numbers, beside the ports it reads.
struct InOrder {
  explicit InOrder(uint32_t n) : port(ports(n)), layer(identity(n), port) {}
  static std::vector<uint32_t> identity(uint32_t n) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    return order;
  }
  std::vector<PortNum> port;
  DependencyLayer layer;
};

TEST(DependencyLayer, RefusesExactlyTheEdgesThatCloseACycle) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SplitMix64 rng(seed);
    const uint32_t n = 2 + static_cast<uint32_t>(rng.next() % 120);
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    for (uint32_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.next() % (i + 1)]);
    const std::vector<PortNum> port = ports(n);
    DependencyLayer layer(order, port);
    Reference ref(n);
    uint32_t accepted = 0, refused = 0;
    for (int k = 0; k < 6 * int(n); ++k) {
      const auto a = static_cast<uint32_t>(rng.next() % n),
                 b = static_cast<uint32_t>(rng.next() % n);
      const bool closes = a == b || ref.reaches(b, a);
      const bool had = layer.has(a, b);
      ASSERT_EQ(layer.add(a, b, kNoLimit), !closes) << "seed " << seed << ": " << a << " -> " << b;
      if (closes) {
        ++refused;
        ASSERT_FALSE(layer.has(a, b));
        ASSERT_FALSE(layer.add(a, b, kNoLimit));  // and again, from what it remembers
        continue;
      }
      ++accepted;
      ASSERT_TRUE(layer.has(a, b));
      if (!had) ref.out[a].push_back(b);
      expect_topological(layer, ref);
    }
    EXPECT_GT(accepted, 0u);
    if (n > 3) {
      EXPECT_GT(refused, 0u) << "seed " << seed;
    }
  }
}

// A chain added against the initial order moves one channel to the end each time, into
// the gap before the list's end, which halves: past about 56 such moves (n = 250) the
// gap is spent and windows are relabelled.
TEST(DependencyLayer, KeepsItsOrderWhereInsertionsCrowdOneGap) {
  for (uint32_t n : {3u, 5u, 40u, 250u}) {
    InOrder in_order(n);
    DependencyLayer& layer = in_order.layer;
    Reference ref(n);
    // n-1 -> 0 -> 1 -> ... -> n-2: each edge disagrees with the order as it then stands,
    // and moves its head to the list's end.
    std::vector<std::pair<uint32_t, uint32_t>> chain = {{n - 1, 0}};
    for (uint32_t c = 0; c + 2 < n; ++c) chain.emplace_back(c, c + 1);
    for (auto [a, b] : chain) {
      ASSERT_TRUE(layer.add(a, b, kNoLimit)) << n << ": " << a << " -> " << b;
      ref.out[a].push_back(b);
      expect_topological(layer, ref);
    }
    // Closing the chain is refused.
    EXPECT_FALSE(layer.add(n - 2, n - 1, kNoLimit));
    expect_topological(layer, ref);
  }
}

// Many channels moved one after another into one place, each after the last: labels
// crowd at one spot of a long list, and its windows are relabelled again and again.
TEST(DependencyLayer, RelabelsACrowdedWindowWithoutBreakingTheOrder) {
  const uint32_t n = 3000;
  InOrder in_order(n);
  DependencyLayer& layer = in_order.layer;
  Reference ref(n);
  // Channel 1500 first leads to 0; then each channel i leads to i + 1 (for i < 1499):
  // each edge moves channel i + 1 to just after i, which sits just after 1500's chain.
  ASSERT_TRUE(layer.add(1500, 0, kNoLimit));
  ref.out[1500].push_back(0);
  for (uint32_t c = 0; c + 1 < 1500; ++c) {
    ASSERT_TRUE(layer.add(c, c + 1, kNoLimit));
    ref.out[c].push_back(c + 1);
  }
  expect_topological(layer, ref);
  EXPECT_LT(layer.label(1500), layer.label(0));
  EXPECT_LT(layer.label(1499), layer.label(1501));  // the chain sits between 1500 and 1501
}

// A search past the limit refuses an edge that closes no cycle, and does not remember
// it: with a larger limit the same edge is taken.
TEST(DependencyLayer, ForgetsWhatItRefusedForTheLimitAndUndoes) {
  InOrder in_order(10);
  DependencyLayer& layer = in_order.layer;
  for (uint32_t c = 1; c + 1 < 6; ++c) ASSERT_TRUE(layer.add(c, c + 1, kNoLimit));  // 1..5
  // 9 -> 1 must move 1..5 (five channels) past 9.
  EXPECT_FALSE(layer.add(9, 1, 4));
  EXPECT_FALSE(layer.has(9, 1));
  EXPECT_TRUE(layer.add(9, 1, 5));
  EXPECT_LT(layer.label(9), layer.label(1));
  EXPECT_LT(layer.label(6), layer.label(9)) << "6 was not moved";
  // An undone edge is gone, and may be added again.
  layer.undo(9, 1);
  EXPECT_FALSE(layer.has(9, 1));
  EXPECT_TRUE(layer.add(9, 1, kNoLimit));
  EXPECT_TRUE(layer.has(9, 1));
}

}  // namespace
}  // namespace weft::routing::detail
