// Internal to routing/: a parallel for over an index range on the machine's cores,
// for work whose items are independent (one switch's LFT row, one target's plan).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
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
// task here takes microseconds, about what waking a sleeping thread costs, so both
// sides spin a little before they sleep (on the atomic: a futex), which keeps a busy
// machine from losing its time slices to spinning. Without a second core post() runs
// the task on the spot: the same work, so results never depend on the machine.
class Partner {
 public:
  explicit Partner(bool threaded = std::thread::hardware_concurrency() > 1) {
    if (threaded) thread_ = std::thread([this] { run(); });
  }
  Partner(const Partner&) = delete;
  Partner& operator=(const Partner&) = delete;
  ~Partner() {
    if (!thread_.joinable()) return;
    state_.store(kStop, std::memory_order_release);
    state_.notify_one();
    thread_.join();
  }

  // `fn` must stay alive until wait() returns; it must not throw.
  template <class Fn>
  void post(Fn& fn) {
    if (!thread_.joinable()) return fn();
    task_ = [](void* f) { (*static_cast<Fn*>(f))(); };
    arg_ = &fn;
    state_.store(kPosted, std::memory_order_release);
    state_.notify_one();
  }
  void wait() {
    if (!thread_.joinable()) return;
    await([](int s) { return s == kDone; });
    state_.store(kIdle, std::memory_order_relaxed);
  }

 private:
  enum : int { kIdle, kPosted, kDone, kStop };
  // Until ready(state): spins for up to 1 ms (longer than nearly every task), then sleeps
  // until the state changes.
  template <class Ready>
  int await(Ready&& ready) {
    int s = state_.load(std::memory_order_acquire);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    bool sleep = false;
    for (unsigned spins = 0; !ready(s); s = state_.load(std::memory_order_acquire)) {
      if (sleep)
        state_.wait(s, std::memory_order_acquire);
      else if (++spins % 64 == 0)
        sleep = std::chrono::steady_clock::now() > until;
    }
    return s;
  }
  void run() {
    while (await([](int s) { return s == kPosted || s == kStop; }) == kPosted) {
      task_(arg_);
      state_.store(kDone, std::memory_order_release);
      state_.notify_one();
    }
  }
  std::atomic<int> state_{kIdle};
  void (*task_)(void*) = nullptr;
  void* arg_ = nullptr;
  std::thread thread_;  // last: started after the fields it reads
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
