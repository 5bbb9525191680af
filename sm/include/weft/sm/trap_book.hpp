// weft/sm/trap_book.hpp — what the SM remembers of traps and link changes between sweeps:
// traps by number, link-integrity errors by port, each trapping LID's last trap-driven
// sweep (trap_holdoff), and the link changes of each port, from which a port is flapping
// (flap_threshold changes within flap_window) until it has had none for a window.
//
//   book.count(trap_number);                                  // 0: vendor traps
//   if (book.hold(lid, now, holdoff)) ...;                    // folded into the next sweep
//   if (book.link_changed(key, now, 6, 60s).started) ...;     // a port began flapping
//   for (auto key : book.calmed(now, 60s)) ...;               // and stopped
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "weft/mad/clock.hpp"
#include "weft/types.hpp"

namespace weft::sm {

// What asks for a heavy sweep: a full one at once (`now`: a trap, another SM's SMInfo, a
// port released or marked healthy), a full one at the next interval (`deferred`: a trap
// held back by trap_holdoff, a port left down), or only the switches whose trap 128
// said a link changed (`dirty_lids`: read again on the last model).
struct SweepAsks {
  bool now = false;
  bool deferred = false;
  std::set<uint16_t> dirty_lids;
  bool due() const { return now || !dirty_lids.empty(); }
  bool full() const { return now || deferred; }
  void clear() {
    now = deferred = false;
    dirty_lids.clear();
  }
};

class TrapBook {
 public:
  using PortKey = std::pair<uint64_t, PortNum>;  // (node GUID, port)

  void count(uint16_t number) { ++counts_[number]; }
  const std::map<uint16_t, uint64_t>& counts() const { return counts_; }
  // A link-integrity trap (129-131) about `lid`/`port`: how many there were so far.
  uint64_t port_error(uint16_t lid, PortNum port) {
    return ++port_errors_[uint32_t(lid) << 8 | port];
  }
  // Whether a trap from `lid` at `now` is held back: its last trap-driven sweep was
  // within `holdoff`. When it is not, this trap's sweep is the last from now on.
  bool hold(uint16_t lid, mad::TimePoint now, mad::Duration holdoff);

  // A link change of `key` at `now`: the changes within `window`, and whether the port
  // began flapping with it (`threshold` reached, and it was not flapping before).
  struct Flap {
    size_t changes = 0;
    bool started = false;
  };
  Flap link_changed(const PortKey& key, mad::TimePoint now, int threshold, mad::Duration window);
  // Flapping ports with no change within `window` at `now`: no longer flapping.
  std::vector<PortKey> calmed(mad::TimePoint now, mad::Duration window);
  // A port released by an admin starts over.
  void forget(const PortKey& key) {
    flaps_.erase(key);
    flapping_.erase(key);
  }
  const std::set<PortKey>& flapping() const { return flapping_; }

 private:
  std::map<uint16_t, uint64_t> counts_;        // by trap number (0: vendor)
  std::map<uint32_t, uint64_t> port_errors_;   // traps 129-131 by LID << 8 | port
  std::map<uint16_t, mad::TimePoint> sweeps_;  // by trapping LID: its last trap-driven sweep
  std::map<PortKey, std::vector<mad::TimePoint>> flaps_;  // link changes within the window
  std::set<PortKey> flapping_;
};

}  // namespace weft::sm
