// weft/perf/view.hpp — the PerfMgr as others see it, by value: its options, the
// counters of every port as the last counter sweep read them (PerfView, published with
// the SM's snapshot), the unhealthy marks and what one sweep found. No MADs, no store:
// REST and the daemon read these; weft/perf/manager.hpp is the PerfMgr itself.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/mad/clock.hpp"
#include "weft/perf/counters.hpp"
#include "weft/result.hpp"
#include "weft/types.hpp"

namespace weft::perf {

// Errors counted within PerfOptions::health_window at or past which a port is
// unhealthy, by counter (0: not checked). The defaults are infiniband-diags' (its
// error_thresholds file, which ibqueryerrors reads).
using Thresholds = std::array<uint64_t, kCounters>;
Thresholds default_thresholds();
// The error_thresholds file's grammar: "Name=value" lines (PortRcvErrors=10), '#'
// comments; names as info(Counter).name. Lines override `base`. PortXmitWait is
// accepted and ignored (congestion is perfmgr_xmit_wait_threshold, per interval).
Result<Thresholds> parse_thresholds(const std::string& text, const std::string& origin,
                                    Thresholds base = default_thresholds());

// What the SM does with a port marked unhealthy (unhealthy_port_policy): report it only,
// route around it (a switch-to-switch link), or leave its link down at the switch end.
enum class UnhealthyPolicy : uint8_t { kReport, kReroute, kIsolate };
// "report", "reroute", "isolate": the option's words, and the marks file's.
const char* policy_name(UnhealthyPolicy p);
std::optional<UnhealthyPolicy> unhealthy_policy_named(std::string_view word);

struct PerfOptions {
  bool enabled = false;                                  // perfmgr
  mad::Duration sweep_time = std::chrono::seconds(180);  // perfmgr_sweep_time_s
  bool ignore_cas = false;                               // perfmgr_ignore_cas: switch ports only
  bool log_errors = true;                        // perfmgr_log_errors: each error count logged
  bool xmit_wait_log = false;                    // perfmgr_xmit_wait_log
  uint64_t xmit_wait_threshold = 65535;          // perfmgr_xmit_wait_threshold, per interval
  Thresholds thresholds = default_thresholds();  // perfmgr_error_thresholds_file
  mad::Duration health_window = std::chrono::seconds(3600);     // perfmgr_health_window_s
  UnhealthyPolicy unhealthy_policy = UnhealthyPolicy::kReport;  // unhealthy_port_policy
  bool metrics_ca_ports = true;  // perfmgr_metrics_ca_ports: CA ports' series on /metrics
};

// One port as the last counter sweep saw it.
struct PortStats {
  uint64_t node_guid = 0, port_guid = 0;
  PortNum port = 0;
  Lid lid;  // where its PMA was asked (a switch: port 0's LID)
  bool is_switch = false;
  std::string node_desc;
  PmaCapabilities caps;
  bool read = false;                          // the last sweep read its PortCounters
  std::string error;                          // why not
  bool baseline = false;                      // its first read: no counts yet
  std::array<uint64_t, kCounters> current{};  // as read
  Delta<kCounters> delta;                     // since the read before
  std::array<uint64_t, kCounters> totals{};   // since its series started
  std::array<uint64_t, kCounters> window{};   // within health_window
  bool has_ext = false;
  std::array<uint64_t, kExtCounters> ext_current{};
  Delta<kExtCounters> ext_delta;
  std::array<uint64_t, kExtCounters> ext_totals{};
  double interval_s = 0;  // between the last two reads (0: baseline)
  int64_t read_unix_s = 0;
  int64_t series_unix_s = 0;  // when its series started (a restart, a port that returned)
  uint64_t clears = 0;        // Sets that zeroed counters near saturation
  bool congested = false;     // PortXmitWait past the threshold in the last interval
  // Counts per second over the last interval (0 without one).
  double rate(Counter c) const {
    return interval_s > 0 ? double(delta.counted[size_t(c)]) / interval_s : 0;
  }
  double rate(ExtCounter c) const {
    return interval_s > 0 ? double(ext_delta.counted[size_t(c)]) / interval_s : 0;
  }
};

// A port marked unhealthy: by which counter, why, since when, and what the policy did.
struct Unhealthy {
  std::string reason;
  std::string counter;
  int64_t since_unix_s = 0;
  UnhealthyPolicy policy = UnhealthyPolicy::kReport;  // as it was when marked
};
using PortKey = std::pair<uint64_t, PortNum>;  // (node GUID, port number)

struct PerfView {
  std::vector<PortStats> ports;     // by (node GUID, port)
  std::map<PortKey, size_t> index;  // into ports
  std::map<PortKey, Unhealthy> unhealthy;
  uint64_t sweeps = 0;
  double last_sweep_ms = 0;
  uint64_t last_sweep_mads = 0;    // GMPs the last sweep sent (retries included)
  uint64_t last_sweep_failed = 0;  // ports it could not read
  int64_t last_sweep_unix_s = 0;
  const PortStats* find(uint64_t node_guid, PortNum port) const {
    auto it = index.find({node_guid, port});
    return it == index.end() ? nullptr : &ports[it->second];
  }
};

// What a finished counter sweep found.
struct PerfSweep {
  size_t ports = 0, read = 0, failed = 0;
  uint64_t mads = 0;
  double ms = 0;
  std::vector<std::pair<PortKey, Unhealthy>> unhealthy;  // newly past a threshold
  std::vector<PortKey> congested;                        // past xmit_wait_threshold
};

}  // namespace weft::perf
