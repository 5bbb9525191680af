#include "weft/sm/trap_book.hpp"

#include <algorithm>

namespace weft::sm {

bool TrapBook::hold(uint16_t lid, mad::TimePoint now, mad::Duration holdoff) {
  auto& last = sweeps_[lid];
  if (last.count() != 0 && now - last < holdoff) return true;
  last = now;
  return false;
}

TrapBook::Flap TrapBook::link_changed(const PortKey& key, mad::TimePoint now, int threshold,
                                      mad::Duration window) {
  auto& times = flaps_[key];
  times.push_back(now);
  std::erase_if(times, [&](mad::TimePoint t) { return now - t > window; });
  const bool started = int(times.size()) >= threshold && flapping_.insert(key).second;
  return {times.size(), started};
}

std::vector<TrapBook::PortKey> TrapBook::calmed(mad::TimePoint now, mad::Duration window) {
  std::vector<PortKey> out;
  for (auto it = flapping_.begin(); it != flapping_.end();) {
    auto& times = flaps_[*it];
    std::erase_if(times, [&](mad::TimePoint t) { return now - t > window; });
    if (times.empty()) {
      out.push_back(*it);
      it = flapping_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace weft::sm
