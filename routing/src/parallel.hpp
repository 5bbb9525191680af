// Internal to routing/: a parallel for over an index range on the machine's cores,
// for work whose items are independent (one switch's LFT row, one target's plan).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace weft::routing::detail {

// Calls fn(i) for every i in [0, n), spread over up to hardware_concurrency
// threads in chunks; returns when all are done. fn must not throw.
template <class Fn>
void parallel_for(size_t n, Fn&& fn, size_t chunk = 16) {
  const size_t threads =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), (n + chunk - 1) / chunk);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t b; (b = next.fetch_add(chunk)) < n;)
      for (size_t i = b; i < std::min(n, b + chunk); ++i) fn(i);
  };
  std::vector<std::jthread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
}

// Division and remainder by a divisor fixed at run time, without a divide
// instruction (Lemire, Kaser, Kurz: "Faster remainder by direct computation").
// Exact for every 32-bit dividend and divisor >= 1.
class FastDiv {
 public:
  explicit FastDiv(uint32_t d) : d_(d), m_(d == 1 ? 0 : ~uint64_t(0) / d + 1) {}
  uint32_t div(uint32_t a) const {
    return d_ == 1 ? a : static_cast<uint32_t>((static_cast<unsigned __int128>(m_) * a) >> 64);
  }
  uint32_t mod(uint32_t a) const {
    if (d_ == 1) return 0;
    const uint64_t low = m_ * a;
    return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * d_) >> 64);
  }

 private:
  uint32_t d_;
  uint64_t m_;
};

}  // namespace weft::routing::detail
