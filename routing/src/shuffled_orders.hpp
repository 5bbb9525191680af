// Internal to routing/: shuffled_order (weft/splitmix.hpp) for the switches of one
// computation, four seeds at a time. minhop and up/down give every switch an order of
// its own over the same n destinations (3,920 x 3,920 steps on the radix-56 tree); one
// shuffle is a chain of dependent steps (each state from the last), so four run side by
// side in one loop, and each step's remainder is taken by multiplication, not by a
// divide instruction. The orders are shuffled_order's exactly (the tables are the same).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <vector>

#include "weft/splitmix.hpp"

namespace weft::routing::detail {

// x mod d for every 64-bit x and divisor 2 <= d < 2^32, without a divide instruction
// (Lemire, Kaser, Kurz, "Faster remainder by direct computation", 2019): with
// c = ceil(2^128 / d), x mod d = ((c * x mod 2^128) * d) >> 128, exact since the 128 bits
// cover x's 64 and d's 32.
class Mod64 {
 public:
  explicit Mod64(uint32_t d) : c_(~static_cast<unsigned __int128>(0) / d + 1), d_(d) {}
  uint64_t mod(uint64_t x) const {
    const unsigned __int128 low = c_ * x;  // mod 2^128
    const unsigned __int128 bottom =
        static_cast<unsigned __int128>(static_cast<uint64_t>(low)) * d_ >> 64;
    const unsigned __int128 top =
        static_cast<unsigned __int128>(static_cast<uint64_t>(low >> 64)) * d_;
    return static_cast<uint64_t>((top + bottom) >> 64);
  }

 private:
  unsigned __int128 c_;
  uint64_t d_;
};

class ShuffledOrders {
 public:
  static constexpr size_t kAtOnce = 4;

  // ahead: each order asked for is made with the three after it (a fresh computation,
  // where every switch deals); else alone (a repair, where few switches deal and their
  // seeds do not follow each other).
  explicit ShuffledOrders(uint32_t n, bool ahead = true)
      : n_(n), id_(next_id()), at_once_(ahead ? kAtOnce : 1) {
    if (!ahead) return;
    by_.reserve(n + 1);
    for (uint64_t d = 0; d <= n; ++d)  // (0 and 1: unused)
      by_.emplace_back(static_cast<uint32_t>(d < 2 ? 2 : d));
  }

  // shuffled_order(n, seed), kept for this thread (with the three seeds after it, when
  // made ahead): the reference stays valid until this thread asks any ShuffledOrders
  // for a seed outside those kept.
  const std::vector<uint32_t>& get(uint64_t seed) const {
    thread_local Kept kept;
    if (kept.id != id_ || seed < kept.first || seed - kept.first >= at_once_) {
      kept.id = id_;
      kept.first = seed;
      if (at_once_ == 1)
        kept.orders[0] = shuffled_order(n_, seed);
      else
        fill(kept);
    }
    return kept.orders[seed - kept.first];
  }

 private:
  struct Kept {
    uint64_t id = 0;  // the ShuffledOrders they are of (0: none)
    uint64_t first = 0;
    std::array<std::vector<uint32_t>, kAtOnce> orders;
  };

  static uint64_t next_id() {
    static std::atomic<uint64_t> last{0};
    return ++last;
  }

  // shuffled_order's Fisher-Yates steps for seeds first .. first + 3, side by side.
  void fill(Kept& k) const {
    uint64_t state[kAtOnce];
    for (size_t j = 0; j < kAtOnce; ++j) {
      k.orders[j].resize(n_);
      std::iota(k.orders[j].begin(), k.orders[j].end(), 0u);
      state[j] = mix64(k.first + j);
    }
    for (uint32_t i = n_; i-- > 1;) {
      const Mod64& by = by_[i + 1];
      for (size_t j = 0; j < kAtOnce; ++j) {
        state[j] = mix64(state[j] + SplitMix64::kGolden);
        uint32_t* const o = k.orders[j].data();
        const auto r = static_cast<uint32_t>(by.mod(state[j]));
        const uint32_t x = o[i];
        o[i] = o[r];
        o[r] = x;
      }
    }
  }

  uint32_t n_;
  uint64_t id_;
  size_t at_once_;         // orders made at once: kAtOnce, or 1
  std::vector<Mod64> by_;  // by_[d]: remainders by d (made ahead only)
};

}  // namespace weft::routing::detail
