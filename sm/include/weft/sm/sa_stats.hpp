// weft/sm/sa_stats.hpp — what the SA has answered, for summaries and /metrics (the SM
// publishes its SA's counts; weft/sa/sa.hpp names the attributes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace weft::sm {

struct SaStats {
  uint64_t requests = 0, answered = 0, errors = 0, dropped = 0;
  uint64_t wrong_key = 0;  // requests with a non-zero SM_Key other than sa_key (dropped)
  uint64_t path_records = 0;
  // Report(Notice)s to subscribers (the SM sends them and counts): sent (first attempts),
  // answered with a ReportResponse, unanswered after every retry, and the subscriptions
  // dropped for it.
  struct Reports {
    uint64_t sent = 0, answered = 0, unanswered = 0, subscriptions_dropped = 0;
  } reports;
  // Answers by (attribute id, MAD status): the metrics' SA queries by attribute and status.
  std::map<std::pair<uint16_t, uint16_t>, uint64_t> by_attr_status;
};

}  // namespace weft::sm
