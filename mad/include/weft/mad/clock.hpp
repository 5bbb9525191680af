// weft/mad/clock.hpp — injected time. The SM never reads the system clock
// directly: the real daemon runs on SteadyClock, tests and the in-process
// simulator on ManualClock, which only moves when told to.
//
//   weft::mad::ManualClock clock;
//   clock.advance(std::chrono::milliseconds(200));   // a MAD timeout passes, instantly
#pragma once

#include <chrono>

namespace weft::mad {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::nanoseconds;  // since the clock's epoch

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  TimePoint now() const override {
    return std::chrono::duration_cast<TimePoint>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
};

class ManualClock final : public Clock {
 public:
  TimePoint now() const override { return now_; }
  void advance(Duration d) { now_ += d; }
  void advance_to(TimePoint t) {
    if (t > now_) now_ = t;
  }

 private:
  TimePoint now_{0};
};

}  // namespace weft::mad
