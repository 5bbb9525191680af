// Password guessing slowed per source address (see throttle.hpp).
#include "weft/rest/throttle.hpp"

#include <algorithm>

namespace weft::rest {

LoginThrottle::LoginThrottle(Clock now) : now_(std::move(now)) {}

std::chrono::steady_clock::time_point LoginThrottle::now() const {
  return now_ ? now_() : std::chrono::steady_clock::now();
}

uint32_t LoginThrottle::blocked_for(const std::string& source) {
  std::lock_guard lk(mu_);
  auto it = sources_.find(source);
  if (it == sources_.end()) return 0;
  const auto t = now();
  if (it->second.until <= t) return 0;
  const auto left = std::chrono::ceil<std::chrono::seconds>(it->second.until - t).count();
  return uint32_t(std::max<int64_t>(left, 1));
}

bool LoginThrottle::failed(const std::string& source) {
  std::lock_guard lk(mu_);
  const auto t = now();
  auto it = sources_.find(source);
  if (it == sources_.end()) {
    if (sources_.size() >= kMaxSources) {
      // Room for it: never by unblocking a source that is blocked now (an attacker with
      // many addresses would free its own), unless every one is; then the one whose
      // block ends first.
      auto worst = std::min_element(sources_.begin(), sources_.end(), [&](auto& a, auto& b) {
        const bool ab = a.second.until > t, bb = b.second.until > t;
        if (ab != bb) return !ab;
        return ab ? a.second.until < b.second.until : a.second.last < b.second.last;
      });
      sources_.erase(worst);
    }
    it = sources_.emplace(source, Source{}).first;
  }
  Source& s = it->second;
  if (s.failures && t - s.last > kForget) s = Source{};
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
