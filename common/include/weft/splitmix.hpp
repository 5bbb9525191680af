// weft/splitmix.hpp — SplitMix64 (Steele, Lea, Flood): a tiny generator whose
// stream a seed fixes on every platform, unlike std::mt19937 + distributions.
// Used where a seed must mean the same choices everywhere (random failures,
// bisection patterns, per-switch orders).
//
//   weft::SplitMix64 rng(seed);
//   uint64_t r = rng.next();
#pragma once

#include <cstdint>

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

}  // namespace weft
