// Slow requests (what-ifs, RoCE checks) run as jobs on a thread of their own: the
// request answers 202 with where to look, GET /api/v1/jobs/{id} tells how it went.
// At most `keep` finished jobs are remembered, and at most `queue` wait.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "weft/result.hpp"

namespace weft::rest {

class Jobs {
 public:
  explicit Jobs(size_t keep = 64, size_t queue = 16);
  ~Jobs();
  // Queues `work`; nullopt when the queue is full (a 503).
  std::optional<std::string> submit(std::string kind, std::function<Result<nlohmann::json>()> work);
  // {"id", "kind", "state": queued|running|done|failed, "result" | "error", times}.
  std::optional<nlohmann::json> status(const std::string& id) const;

 private:
  struct Job {
    std::string id, kind, state = "queued";
    std::function<Result<nlohmann::json>()> work;
    nlohmann::json result;
    std::string error;
    int64_t queued_ms = 0, started_ms = 0, finished_ms = 0;
  };
  void run(std::stop_token st);
  const size_t keep_, queue_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, Job> jobs_;
  std::deque<std::string> waiting_, finished_;
  uint64_t next_ = 1;
  std::jthread worker_;
};

}  // namespace weft::rest
