#include "weft/perf/from_options.hpp"

#include <sstream>

#include "weft/config/option_files.hpp"
#include "weft/read_file.hpp"

namespace weft::perf {

Result<PerfOptions> perf_from_options(const config::Values& v) {
  PerfOptions o;
  o.enabled = v.get_bool("perfmgr");
  o.sweep_time = std::chrono::seconds(v.get_int("perfmgr_sweep_time_s"));
  o.ignore_cas = v.get_bool("perfmgr_ignore_cas");
  o.log_errors = v.get_bool("perfmgr_log_errors");
  o.xmit_wait_log = v.get_bool("perfmgr_xmit_wait_log");
  o.xmit_wait_threshold = static_cast<uint64_t>(v.get_int("perfmgr_xmit_wait_threshold"));
  o.health_window = std::chrono::seconds(v.get_int("perfmgr_health_window_s"));
  auto unhealthy = config::option_word(v, "unhealthy_port_policy", unhealthy_policy_named);
  if (!unhealthy) return std::unexpected(unhealthy.error());
  o.unhealthy_policy = *unhealthy;
  o.metrics_ca_ports = v.get_bool("perfmgr_metrics_ca_ports");
  if (const std::string path = v.get_str("perfmgr_error_thresholds_file"); !path.empty()) {
    auto t = read_file(
        path,
        [](std::istream& in, const std::string& p) {
          std::ostringstream ss;
          ss << in.rdbuf();
          return parse_thresholds(ss.str(), p);
        },
        v.origin("perfmgr_error_thresholds_file"));
    if (!t) return std::unexpected(t.error());
    o.thresholds = *t;
  }
  return o;
}

}  // namespace weft::perf
