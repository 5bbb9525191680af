// Password guessing slowed per source address (see throttle.hpp).
#include "weft/rest/throttle.hpp"

#include <algorithm>

namespace weft::rest {

LoginThrottle::LoginThrottle(Clock now) : now_(std::move(now)) {}

std::chrono::steady_clock::time_point LoginThrottle::now() const {
  return now_ ? now_() : std::chrono::steady_clock::now();
}

LoginThrottle::Source& LoginThrottle::entry(const std::string& source,
                                            std::chrono::steady_clock::time_point t) {
  auto it = sources_.find(source);
  if (it != sources_.end()) return it->second;
  if (sources_.size() >= kMaxSources) {
    // Room for it: never by unblocking a source that is blocked now (an attacker with
    // many addresses would free its own), unless every one is; then the one whose block
    // ends first.
    auto worst = std::min_element(sources_.begin(), sources_.end(), [&](auto& a, auto& b) {
      const bool ab = a.second.until > t, bb = b.second.until > t;
      if (ab != bb) return !ab;
      return ab ? a.second.until < b.second.until : a.second.last < b.second.last;
    });
    sources_.erase(worst);
  }
  return sources_.emplace(source, Source{}).first->second;
}

uint32_t LoginThrottle::admit(const std::string& source) {
  std::lock_guard lk(mu_);
  const auto t = now();
  Source& s = entry(source, t);
  if (s.failures && t - s.last > kForget) s.failures = 0;
  if (s.until > t) {
    const auto left = std::chrono::ceil<std::chrono::seconds>(s.until - t).count();
    return uint32_t(std::max<int64_t>(left, 1));
  }
  // Tries at once: the free ones left, or one once they are spent.
  const uint32_t at_once = s.failures < kFree ? kFree - s.failures : 1;
  if (s.trying >= at_once) return 1;
  ++s.trying;
  s.last = t;
  return 0;
}

bool LoginThrottle::failed(const std::string& source) {
  std::lock_guard lk(mu_);
  const auto t = now();
  Source& s = entry(source, t);
  if (s.trying) --s.trying;
  if (s.failures && t - s.last > kForget) s.failures = 0;
  s.last = t;
  if (++s.failures <= kFree) return false;
  const uint32_t doublings = std::min<uint32_t>(s.failures - kFree - 1, 9);
  s.until = t + std::min<std::chrono::seconds>(std::chrono::seconds(1u << doublings), kMaxBlock);
  return s.failures == kFree + 1;
}

void LoginThrottle::succeeded(const std::string& source) {
  std::lock_guard lk(mu_);
  sources_.erase(source);
}

}  // namespace weft::rest
