#include "jobs.hpp"

#include "thread_priority.hpp"

#include <fmt/format.h>
#include <chrono>

namespace weft::rest {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Jobs::Jobs(size_t keep, size_t queue)
    : keep_(keep), queue_(queue), worker_([this](std::stop_token st) { run(st); }) {}

Jobs::~Jobs() {
  worker_.request_stop();
  cv_.notify_all();
}

std::optional<std::string> Jobs::submit(std::string kind,
                                        std::function<Result<nlohmann::json>()> work) {
  std::lock_guard lk(mu_);
  if (waiting_.size() >= queue_) return std::nullopt;
  Job j;
  j.id = fmt::format("{}-{}", kind, next_++);
  j.kind = std::move(kind);
  j.work = std::move(work);
  j.queued_ms = now_ms();
  const std::string id = j.id;
  jobs_[id] = std::move(j);
  waiting_.push_back(id);
  cv_.notify_all();
  return id;
}

std::optional<nlohmann::json> Jobs::status(const std::string& id) const {
  std::lock_guard lk(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  const Job& j = it->second;
  nlohmann::json out = {
      {"id", j.id}, {"kind", j.kind}, {"state", j.state}, {"queued_ms", j.queued_ms}};
  if (j.started_ms) out["started_ms"] = j.started_ms;
  if (j.finished_ms) out["finished_ms"] = j.finished_ms;
  if (j.state == "done") out["result"] = j.result;
  if (j.state == "failed") out["error"] = {{"code", "job_failed"}, {"message", j.error}};
  return out;
}

void Jobs::run(std::stop_token st) {
  lower_thread_priority(10);  // what-ifs and RoCE checks: whatever CPU the SM leaves
  while (true) {
    std::string id;
    std::function<Result<nlohmann::json>()> work;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, st, [&] { return !waiting_.empty(); });
      if (st.stop_requested()) return;
      id = waiting_.front();
      waiting_.pop_front();
      Job& j = jobs_.at(id);
      j.state = "running";
      j.started_ms = now_ms();
      work = std::move(j.work);
    }
    Result<nlohmann::json> r = fail(Errc::kInternal, "the job did not run");
    try {
      r = work();
    } catch (const std::exception& e) {
      r = fail(Errc::kInternal, e.what());
    }
    std::lock_guard lk(mu_);
    Job& j = jobs_.at(id);
    j.finished_ms = now_ms();
    if (r) {
      j.state = "done";
      j.result = std::move(*r);
    } else {
      j.state = "failed";
      j.error = r.error().message;
    }
    finished_.push_back(id);
    while (finished_.size() > keep_) {
      jobs_.erase(finished_.front());
      finished_.pop_front();
    }
  }
}

}  // namespace weft::rest
