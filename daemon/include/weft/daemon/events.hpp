// weft/daemon/events.hpp — what happened, in order, for whoever watches: a bounded ring
// of events, each with an id that only grows. Readers ask for what came after the
// last id they saw (Server-Sent Events' Last-Event-ID, or ?since=N), and learn when
// the ring no longer holds some of it. Thread-safe: the SM's loop appends, the REST
// threads read and wait.
//
//   EventLog log(4096);
//   log.append("link_down", {{"a", ...}});
//   auto page = log.since(last_seen);          // page.events, page.lost
//   log.wait_after(last_seen, 15s, stop);      // a long poll / an SSE stream
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace weft::daemon {

struct Event {
  uint64_t id = 0;
  int64_t unix_ms = 0;
  std::string type;
  nlohmann::json data;
  nlohmann::json to_json() const;
};

class EventLog {
 public:
  explicit EventLog(size_t capacity = 4096) : cap_(capacity) {}
  uint64_t append(std::string type, nlohmann::json data);
  struct Page {
    std::vector<Event> events;
    bool lost = false;     // events after `after` have left the ring
    uint64_t last_id = 0;  // the newest id the log has given (0: none yet)
  };
  // Events with an id above `after`, oldest first, at most `max`.
  Page since(uint64_t after, size_t max = SIZE_MAX) const;
  // Waits until an event above `after` exists, `timeout` passes or stop() is called;
  // returns whether one exists.
  bool wait_after(uint64_t after, std::chrono::milliseconds timeout) const;
  // Wakes every waiter for good (the server is shutting down).
  void stop();
  uint64_t last_id() const;
  size_t capacity() const { return cap_; }

 private:
  const size_t cap_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<Event> ring_;
  uint64_t next_ = 1;
  bool stopped_ = false;
};

}  // namespace weft::daemon
