// weft/sm/sa_stats.hpp — what the SA has answered, for summaries and /metrics.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace weft::sm {

struct SaStats {
  uint64_t requests = 0, answered = 0, errors = 0, dropped = 0;
  uint64_t path_records = 0;
  // Answers by (attribute id, MAD status): the metrics' SA queries by attribute and status.
  std::map<std::pair<uint16_t, uint16_t>, uint64_t> by_attr_status;
};

// "PathRecord", "NodeRecord", ... (the attribute's IBTA name; hex for others).
std::string sa_attr_name(uint16_t attr);

}  // namespace weft::sm
