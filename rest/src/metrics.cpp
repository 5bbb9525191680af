// Prometheus text exposition (format 0.0.4): every family with HELP and TYPE, label
// values escaped, counters ending in _total, one histogram.
#include <fmt/format.h>

#include <map>

#include "handlers.hpp"
#include "weft/cc/view.hpp"
#include "weft/perf/view.hpp"
#include "weft/sa/path.hpp"
#include "weft/sm/options.hpp"
#include "weft/sm/sa_stats.hpp"

namespace weft::rest {

namespace {

std::string esc(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

struct Writer {
  std::string out;
  void family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(std::string_view name, double v, std::string_view labels = "") {
    if (labels.empty())
      fmt::format_to(std::back_inserter(out), "{} {}\n", name, v);
    else
      fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, v);
  }
  void one(std::string_view name, std::string_view type, std::string_view help, double v) {
    family(name, type, help);
    sample(name, v);
  }
};

// The PerfMgr's series: one per port and counter, labelled with the node GUID, the port
// GUID and the port number; totals since the port's series started (a restart is a
// counter reset to Prometheus).
void port_counters(Writer& w, const sm::Published& p) {
  if (!p.perf) return;
  const perf::PerfView& v = *p.perf;
  const bool cas = !p.options || p.options->perf.metrics_ca_ports;
  w.one("weft_perf_sweeps_total", "counter", "counter sweeps finished", double(v.sweeps));
  w.one("weft_perf_last_sweep_seconds", "gauge", "the last counter sweep's duration",
        v.last_sweep_ms / 1000);
  w.one("weft_perf_mads_total", "counter", "PerfMgt MADs sent, retries included",
        double(p.mad.gmps_sent));
  w.one("weft_perf_unhealthy_ports", "gauge", "ports marked unhealthy", double(v.unhealthy.size()));
  std::vector<std::pair<const perf::PortStats*, std::string>> ports;
  for (const auto& st : v.ports)
    if (st.read && !st.baseline && (cas || st.is_switch))
      ports.push_back(
          {&st, fmt::format("node_guid=\"0x{:016x}\",port_guid=\"0x{:016x}\",port=\"{}\"",
                            st.node_guid, st.port_guid, st.port)});
  w.family("weft_port_errors_total", "counter",
           "a port's error counters since its series started, by counter");
  for (const auto& [st, l] : ports)
    for (size_t i = 0; i < perf::kCounters; ++i)
      if (perf::info(perf::Counter(i)).error)
        w.sample("weft_port_errors_total", double(st->totals[i]),
                 fmt::format("{},counter=\"{}\"", l, perf::info(perf::Counter(i)).name));
  auto data = [&](const char* name, const char* help, perf::Counter c, perf::ExtCounter e,
                  double scale) {
    w.family(name, "counter", help);
    for (const auto& [st, l] : ports)
      w.sample(name,
               scale * double(st->has_ext ? st->ext_totals[size_t(e)] : st->totals[size_t(c)]), l);
  };
  data("weft_port_xmit_bytes_total", "bytes a port sent", perf::Counter::kXmitData,
       perf::ExtCounter::kXmitData, 4);
  data("weft_port_rcv_bytes_total", "bytes a port received", perf::Counter::kRcvData,
       perf::ExtCounter::kRcvData, 4);
  data("weft_port_xmit_packets_total", "packets a port sent", perf::Counter::kXmitPkts,
       perf::ExtCounter::kXmitPkts, 1);
  data("weft_port_rcv_packets_total", "packets a port received", perf::Counter::kRcvPkts,
       perf::ExtCounter::kRcvPkts, 1);
  w.family("weft_port_xmit_wait_total", "counter",
           "ticks a port had data to send and no credit (PortXmitWait)");
  for (const auto& [st, l] : ports)
    w.sample("weft_port_xmit_wait_total", double(st->totals[size_t(perf::Counter::kXmitWait)]), l);
  w.family("weft_port_unhealthy", "gauge", "1 for a port marked unhealthy, by counter");
  for (const auto& [key, u] : v.unhealthy)
    w.sample("weft_port_unhealthy", 1,
             fmt::format("node_guid=\"0x{:016x}\",port=\"{}\",counter=\"{}\"", key.first,
                         key.second, esc(u.counter)));
}

// Congestion control's series: devices by state, reads of the logs, and the events each
// port's logs counted since weft first read them.
void congestion(Writer& w, const sm::Published& p) {
  if (!p.cc) return;
  const cc::CcView& v = *p.cc;
  std::map<cc::DeviceState, size_t> by_state;
  for (const auto& [k, d] : v.devices) ++by_state[d.state];
  w.family("weft_cc_devices", "gauge", "switches and CA ports by congestion-control state");
  for (auto s : {cc::DeviceState::kConfigured, cc::DeviceState::kUnavailable,
                 cc::DeviceState::kLocked, cc::DeviceState::kFailed, cc::DeviceState::kUnknown})
    w.sample("weft_cc_devices", double(by_state[s]),
             fmt::format("state=\"{}\"", cc::state_name(s)));
  w.one("weft_cc_log_reads_total", "counter", "reads of every configured device's CongestionLog",
        double(v.log_reads));
  w.family("weft_cc_log_events_total", "counter",
           "congestion events a port's logs counted (a switch port's marks, a CA port's "
           "threshold events) since weft first read them");
  const bool cas = !p.options || p.options->perf.metrics_ca_ports;
  for (const auto& pc : v.ports)
    if (cas || pc.is_switch)
      w.sample("weft_cc_log_events_total", double(pc.log_events_total),
               fmt::format("node_guid=\"0x{:016x}\",port=\"{}\"", pc.guid, pc.port));
}

}  // namespace

std::string prometheus_text(const sm::Published& p,
                            const std::map<std::pair<std::string, int>, uint64_t>& requests,
                            uint64_t events) {
  Writer w;
  w.family("weft_sm_state", "gauge", "1 for the SM's SMInfo state");
  for (auto s : {mad::SmState::kNotActive, mad::SmState::kDiscovering, mad::SmState::kStandby,
                 mad::SmState::kMaster})
    w.sample("weft_sm_state", p.state == s ? 1 : 0,
             fmt::format("state=\"{}\"", mad::sm_state_name(s)));
  w.one("weft_subnet_up", "gauge", "1 when the last heavy sweep brought the subnet up",
        p.report && p.report->subnet_up ? 1 : 0);
  w.family("weft_sweeps_total", "counter", "sweeps finished, by kind");
  w.sample("weft_sweeps_total", double(p.heavy_sweeps), "kind=\"heavy\"");
  w.sample("weft_sweeps_total", double(p.light_sweeps), "kind=\"light\"");
  w.family("weft_drift_found_total", "counter",
           "tables found holding what weft did not write (drift_check_blocks: switches by their "
           "LFT; drift_check_table_blocks: P_Key, SL2VL and VLArb blocks), by table");
  w.sample("weft_drift_found_total", double(p.drift_lft), "table=\"lft\"");
  w.sample("weft_drift_found_total", double(p.drift_pkey), "table=\"pkey\"");
  w.sample("weft_drift_found_total", double(p.drift_sl2vl), "table=\"sl2vl\"");
  w.sample("weft_drift_found_total", double(p.drift_vlarb), "table=\"vlarb\"");
  w.sample("weft_drift_found_total", double(p.drift_ar), "table=\"ar\"");
  w.family("weft_sweep_duration_seconds", "histogram", "heavy sweeps' durations");
  for (size_t i = 0; i < p.sweep_le.size(); ++i)
    w.sample("weft_sweep_duration_seconds_bucket", double(p.sweep_le[i]),
             fmt::format("le=\"{}\"", sm::Published::kSweepBuckets[i]));
  w.sample("weft_sweep_duration_seconds_bucket", double(p.sweep_count), "le=\"+Inf\"");
  w.sample("weft_sweep_duration_seconds_sum", p.sweep_seconds);
  w.sample("weft_sweep_duration_seconds_count", double(p.sweep_count));
  w.one("weft_smps_sent_total", "counter", "SMPs put on the wire, retries included",
        double(p.mad.sent));
  w.one("weft_mad_retries_total", "counter", "SMP attempts that were retries",
        double(p.mad.retried));
  w.one("weft_mad_lost_total", "counter", "MAD attempts the carrier reported lost, resent at once",
        double(p.mad.lost));
  w.one("weft_mad_rounds_total", "counter",
        "rounds of attempts begun again by SMPs a whole round of which went unanswered",
        double(p.mad.rounds_again));
  w.one("weft_mad_timeouts_total", "counter", "SMPs that failed after every retry",
        double(p.mad.timed_out));
  w.one("weft_mad_error_status_total", "counter", "SMP replies with an error status",
        double(p.mad.error_status));
  w.one("weft_mad_malformed_total", "counter", "replies that did not decode or match",
        double(p.mad.malformed));
  w.one("weft_mad_unmatched_total", "counter", "replies for no outstanding request",
        double(p.mad.unmatched));
  w.family("weft_sa_queries_total", "counter", "SA answers by attribute and MAD status");
  for (const auto& [k, n] : p.sa.by_attr_status)
    w.sample("weft_sa_queries_total", double(n),
             fmt::format("attribute=\"{}\",status=\"0x{:04x}\"", esc(sa::sa_attr_name(k.first)),
                         k.second));
  w.one("weft_sa_dropped_total", "counter", "SA MADs that were no request", double(p.sa.dropped));
  w.family("weft_sa_reports_total", "counter",
           "Report(Notice)s to subscribers: sent, answered (ReportResponse), unanswered after "
           "every retry");
  w.sample("weft_sa_reports_total", double(p.sa.reports.sent), "outcome=\"sent\"");
  w.sample("weft_sa_reports_total", double(p.sa.reports.answered), "outcome=\"answered\"");
  w.sample("weft_sa_reports_total", double(p.sa.reports.unanswered), "outcome=\"unanswered\"");
  w.one("weft_sa_subscriptions_dropped_total", "counter",
        "InformInfo subscriptions dropped because their Reports went unanswered",
        double(p.sa.reports.subscriptions_dropped));
  w.family("weft_nodes", "gauge", "nodes on the fabric by type, from the last sweep");
  std::map<std::string, uint64_t> by_type;
  for (const char* t : {"switch", "ca", "router"}) by_type[t] = 0;
  if (p.subnet)
    for (const auto& n : p.subnet->fabric.nodes())
      ++by_type[n.is_switch() ? "switch" : n.type == fabric::NodeType::kRouter ? "router" : "ca"];
  for (const auto& [t, n] : by_type)
    w.sample("weft_nodes", double(n), fmt::format("type=\"{}\"", t));
  w.family("weft_ports", "gauge", "linked ports by logical state, from the last sweep");
  std::map<std::string, uint64_t> by_state;
  for (auto s : {fabric::PortState::kDown, fabric::PortState::kInit, fabric::PortState::kArmed,
                 fabric::PortState::kActive})
    by_state[fabric::port_state_name(s)] = 0;
  if (p.subnet)
    for (const auto& n : p.subnet->fabric.nodes())
      for (const auto& port : n.ports)
        if (port.num && port.linked()) ++by_state[fabric::port_state_name(port.attrs.state)];
  for (const auto& [s, n] : by_state)
    w.sample("weft_ports", double(n), fmt::format("state=\"{}\"", esc(s)));
  w.family("weft_vports", "gauge",
           "SR-IOV virtual ports behind CA ports by state, from the last sweep");
  for (auto& [st, n] : by_state) n = 0;
  if (p.subnet)
    for (const auto& v : p.subnet->fabric.vports()) ++by_state[fabric::port_state_name(v.state)];
  for (const auto& [s, n] : by_state)
    w.sample("weft_vports", double(n), fmt::format("state=\"{}\"", esc(s)));
  if (p.report) {
    w.one("weft_routing_compute_seconds", "gauge", "the last heavy sweep's routing time",
          p.report->ms_routing / 1000);
    w.one("weft_last_sweep_lft_blocks_written", "gauge", "LFT blocks the last heavy sweep wrote",
          double(p.report->lft_blocks_written));
    const sm::SweepReport& r = *p.report;
    w.family("weft_ar_switches", "gauge",
             "switches by adaptive routing after the last heavy sweep: enabled, or static (no "
             "AR, no answer, no group, a failed write)");
    w.sample("weft_ar_switches", double(r.ar_enabled), "state=\"enabled\"");
    w.sample("weft_ar_switches", double(r.ar_static), "state=\"static\"");
    w.family("weft_last_sweep_ar_blocks_written", "gauge",
             "adaptive-routing blocks the last heavy sweep wrote, by table");
    w.sample("weft_last_sweep_ar_blocks_written", double(r.ar_group_blocks_written),
             "table=\"group\"");
    w.sample("weft_last_sweep_ar_blocks_written", double(r.ar_lft_blocks_written), "table=\"lft\"");
  }
  w.one("weft_partitions_generation", "gauge", "the partition policy generation accepted",
        double(p.partitions_generation));
  w.one("weft_partitions_applied_generation", "gauge",
        "the partition policy generation whose P_Key tables were written",
        double(p.partitions_applied));
  w.one("weft_events", "gauge", "the id of the newest event", double(events));
  port_counters(w, p);
  congestion(w, p);
  w.family("weft_rest_requests_total", "counter", "REST requests by route and status");
  for (const auto& [k, n] : requests)
    w.sample("weft_rest_requests_total", double(n),
             fmt::format("route=\"{}\",code=\"{}\"", esc(k.first), k.second));
  return w.out;
}

}  // namespace weft::rest
