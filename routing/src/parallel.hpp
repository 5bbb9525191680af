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

// A second thread for fine-grained pairs of tasks: post() hands it one task, the
// caller does its own meanwhile, and wait() returns once the partner's is done. A
// task here takes microseconds, about what waking a sleeping thread costs, so the
// partner spins between tasks (yielding after a while) and should live only while
// such pairs run. Without a second core post() runs the task on the spot: the same
// work, so results never depend on the machine.
class Partner {
 public:
  Partner() {
    if (std::thread::hardware_concurrency() > 1)
      thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
  }
  Partner(const Partner&) = delete;
  Partner& operator=(const Partner&) = delete;
  ~Partner() = default;  // the jthread asks the loop to stop, then joins it

  // `fn` must stay alive until wait() returns; it must not throw.
  template <class Fn>
  void post(Fn& fn) {
    if (!thread_.joinable()) return fn();
    task_ = [](void* f) { (*static_cast<Fn*>(f))(); };
    arg_ = &fn;
    state_.store(kPosted, std::memory_order_release);
  }
  void wait() {
    if (!thread_.joinable()) return;
    for (unsigned spins = 0; state_.load(std::memory_order_acquire) != kDone; ++spins) relax(spins);
    state_.store(kIdle, std::memory_order_relaxed);
  }

 private:
  enum : int { kIdle, kPosted, kDone };
  static void relax(unsigned spins) {
    if (spins > 4096) std::this_thread::yield();
  }
  void run(std::stop_token stop) {
    for (unsigned spins = 0; !stop.stop_requested();) {
      if (state_.load(std::memory_order_acquire) != kPosted) {
        relax(spins++);
        continue;
      }
      spins = 0;
      task_(arg_);
      state_.store(kDone, std::memory_order_release);
    }
  }
  std::atomic<int> state_{kIdle};
  void (*task_)(void*) = nullptr;
  void* arg_ = nullptr;
  std::jthread thread_;  // last: started after the fields it reads
};

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
