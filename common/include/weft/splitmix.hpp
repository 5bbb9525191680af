// weft/splitmix.hpp — SplitMix64 (Steele, Lea, Flood): a tiny generator whose
// stream a seed fixes on every platform, unlike std::mt19937 + distributions.
// Used where a seed must mean the same choices everywhere (random failures,
// bisection patterns, per-switch orders).
//
//   weft::SplitMix64 rng(seed);
//   uint64_t r = rng.next();
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace weft {

// SplitMix64's finaliser: a fixed, well-mixed 64-bit hash.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() { return mix64(state_ += kGolden); }

 private:
  uint64_t state_;
};

// 0 .. n-1 in an order a seed fixes: a Fisher-Yates shuffle driven by mix64 from
// mix64(seed). The routing engines give each switch one of its own.
inline std::vector<uint32_t> shuffled_order(uint32_t n, uint64_t seed) {
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  uint64_t state = mix64(seed);
  for (uint32_t i = n; i-- > 1;) {
    state = mix64(state + SplitMix64::kGolden);
    std::swap(order[i], order[state % (i + 1)]);
  }
  return order;
}

}  // namespace weft
