#include "weft/daemon/events.hpp"

#include <chrono>

namespace weft::daemon {

nlohmann::json Event::to_json() const {
  return {{"id", id}, {"time_ms", unix_ms}, {"type", type}, {"data", data}};
}

uint64_t EventLog::append(std::string type, nlohmann::json data) {
  Event e;
  e.type = std::move(type);
  e.data = std::move(data);
  e.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  uint64_t id;
  {
    std::lock_guard lk(mu_);
    id = e.id = next_++;
    ring_.push_back(std::move(e));
    while (ring_.size() > cap_) ring_.pop_front();
  }
  cv_.notify_all();
  return id;
}

EventLog::Page EventLog::since(uint64_t after, size_t max) const {
  std::lock_guard lk(mu_);
  Page p;
  p.last_id = next_ - 1;
  if (ring_.empty()) {
    p.lost = after < p.last_id;
    return p;
  }
  // Ids are consecutive in the ring: the first one wanted is at a known offset.
  const uint64_t first = ring_.front().id;
  p.lost = after + 1 < first;
  size_t i = after + 1 <= first ? 0 : size_t(after + 1 - first);
  for (; i < ring_.size() && p.events.size() < max; ++i) p.events.push_back(ring_[i]);
  return p;
}

bool EventLog::wait_after(uint64_t after, std::chrono::milliseconds timeout) const {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, timeout, [&] { return stopped_ || next_ - 1 > after; });
  return next_ - 1 > after;
}

void EventLog::stop() {
  {
    std::lock_guard lk(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

uint64_t EventLog::last_id() const {
  std::lock_guard lk(mu_);
  return next_ - 1;
}

}  // namespace weft::daemon
