// weft/rest/throttle.hpp — password guessing slowed per source address.
//
// After kFree failed logins from one source (each within kForget of the one before), every
// further failure blocks that source for a time that doubles (1 s, 2 s, 4 s ... 256 s,
// then kMaxBlock): while blocked, its requests that carry credentials are answered 429
// with Retry-After, their credentials not tried. A login that succeeds clears its source;
// other sources are never affected (the right password from elsewhere works at once).
// At most kMaxSources sources are tracked; past that the stalest one not blocked now is
// dropped (a blocked one only when all are: the one whose block ends first). weft's own
// choice of numbers: an admin's typo or a client with a stale password gets through
// kFree tries unslowed, a guesser gets about 15 tries in the first 10 minutes.
// Checking and counting are one step: admit() counts the try it lets through until
// failed() or succeeded() ends it, so concurrent requests from one source get no more
// tries than sequential ones (at most its free tries left at once; once they are spent,
// one at a time).
//
//   LoginThrottle t;
//   if (auto s = t.admit(src)) return reply_429(s);
//   ok ? t.succeeded(src) : (void)t.failed(src);
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace weft::rest {

class LoginThrottle {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  static constexpr uint32_t kFree = 5;
  static constexpr std::chrono::seconds kForget{600};
  static constexpr std::chrono::seconds kMaxBlock{300};
  static constexpr size_t kMaxSources = 4096;

  explicit LoginThrottle(Clock now = {});
  // Whole seconds `source` must still wait (at least 1); 0 when it may try now, and the
  // try is counted until failed() or succeeded() ends it.
  uint32_t admit(const std::string& source);
  // A failed login from `source`. True when it is the one that first blocks the source in
  // its run of failures (the caller says so once, as a security event).
  bool failed(const std::string& source);
  void succeeded(const std::string& source);

 private:
  struct Source {
    uint32_t failures = 0;
    uint32_t trying = 0;  // admitted, not yet failed or succeeded
    std::chrono::steady_clock::time_point last{}, until{};
  };
  std::chrono::steady_clock::time_point now() const;
  // The entry of `source`, made when missing (another dropped when kMaxSources are held).
  Source& entry(const std::string& source, std::chrono::steady_clock::time_point t);
  Clock now_;
  std::mutex mu_;
  std::unordered_map<std::string, Source> sources_;
};

}  // namespace weft::rest
