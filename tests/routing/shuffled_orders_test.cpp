// ShuffledOrders and Mod64 (routing/src/shuffled_orders.hpp, internal to routing/)
// against what they stand in for: shuffled_order (weft/splitmix.hpp), which fixes every
// switch's order in minhop and up/down, and the % operator.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "../../routing/src/shuffled_orders.hpp"
#include "weft/splitmix.hpp"

namespace weft::routing {
namespace {

TEST(Mod64, GivesTheRemainderOfEverySixtyFourBitValue) {
  SplitMix64 rng(3);
  std::vector<uint32_t> divisors = {2, 3, 5, 7, 64, 65535, 65536, 65537, 1u << 31, ~0u, ~0u - 1};
  for (int k = 0; k < 200; ++k) divisors.push_back(2 + static_cast<uint32_t>(rng.next() % 100000));
  for (int k = 0; k < 50; ++k)
    divisors.push_back(2 + static_cast<uint32_t>(rng.next() % (~0u - 2)));
  for (const uint32_t d : divisors) {
    const detail::Mod64 by(d);
    std::vector<uint64_t> xs = {0,
                                1,
                                d - 1,
                                d,
                                uint64_t(d) + 1,
                                ~uint64_t(0),
                                ~uint64_t(0) - 1,
                                uint64_t(d) * (~uint64_t(0) / d),
                                uint64_t(d) * (~uint64_t(0) / d) - 1};
    for (int k = 0; k < 2000; ++k) xs.push_back(rng.next());
    for (const uint64_t x : xs) ASSERT_EQ(by.mod(x), x % d) << x << " mod " << d;
  }
}

TEST(ShuffledOrders, AreShuffledOrderForEverySeedInAnyOrderOfAsking) {
  for (const bool ahead : {true, false})
    for (const uint32_t n : {0u, 1u, 2u, 3u, 17u, 1000u, 3920u}) {
      const detail::ShuffledOrders orders(n, ahead);
      // Seeds in order (four at a time, made ahead), then back and forth, skipping some.
      for (uint64_t seed = 1; seed <= 9; ++seed)
        ASSERT_EQ(orders.get(seed), shuffled_order(n, seed))
            << "n " << n << " seed " << seed << " ahead " << ahead;
      for (const uint64_t seed : {5ull, 2ull, 40ull, 39ull, 41ull, 0ull, 1000003ull})
        ASSERT_EQ(orders.get(seed), shuffled_order(n, seed))
            << "n " << n << " seed " << seed << " ahead " << ahead;
    }
  // Two at once on one thread: each answers for its own n.
  const detail::ShuffledOrders a(50), b(60);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    ASSERT_EQ(a.get(seed), shuffled_order(50, seed));
    ASSERT_EQ(b.get(seed), shuffled_order(60, seed));
  }
  // From two threads: each keeps its own.
  const detail::ShuffledOrders c(300);
  std::vector<int> wrong(2, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t seed = 1 + t; seed <= 40; seed += 2)
        wrong[t] += c.get(seed) != shuffled_order(300, seed);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, (std::vector<int>{0, 0}));
}

}  // namespace
}  // namespace weft::routing
