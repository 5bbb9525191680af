// The RoCE doctor's diagnoses: counter deltas over an interval, read against the profile.
// Counter names are mlx5's (the kernel's mlx5 counters documentation: ethtool -S, and the
// RDMA hw_counters); thresholds are weft's own choices, each named where it is used.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "weft/roce/device.hpp"
#include "weft/roce/doctor.hpp"

namespace weft::roce {

namespace {

std::unexpected<Error> bad(std::string what) {
  return fail(Errc::kInvalidInput, std::move(what));
}

std::string prio(const char* pattern, int q) {
  return fmt::format(fmt::runtime(pattern), q);
}

// weft's thresholds.
constexpr double kStormShare = 0.5;   // paused this share of the interval: a storm
constexpr double kHeavyShare = 0.01;  // paused this share: congestion worth ECN marks
constexpr uint64_t kHeavyPauses = 1000;
constexpr double kLossyShare = 0.5;           // RoCE bytes the RoCE priority must carry at least
constexpr uint64_t kLossyMinBytes = 1 << 20;  // below this much RoCE traffic: no verdict

// mlx5's 32-bit counters (the RDMA Q counters, and ethtool's rx_out_of_buffer): they wrap.
const std::set<std::string> kWraps32 = {"rx_write_requests",
                                        "rx_read_requests",
                                        "rx_atomic_requests",
                                        "rx_dct_connect",
                                        "out_of_buffer",
                                        "out_of_sequence",
                                        "duplicate_request",
                                        "rnr_nak_retry_err",
                                        "packet_seq_err",
                                        "implied_nak_seq_err",
                                        "local_ack_timeout_err",
                                        "resp_local_length_error",
                                        "resp_cqe_error",
                                        "req_cqe_error",
                                        "req_remote_invalid_request",
                                        "req_remote_access_errors",
                                        "resp_remote_access_errors",
                                        "resp_cqe_flush_error",
                                        "req_cqe_flush_error",
                                        "req_transport_retries_exceeded",
                                        "req_rnr_retries_exceeded",
                                        "roce_adp_retrans",
                                        "roce_adp_retrans_to",
                                        "roce_slow_restart",
                                        "roce_slow_restart_cnps",
                                        "roce_slow_restart_trans",
                                        "rx_out_of_buffer"};

// One device's deltas over the interval, its counters from every source merged (the
// RDMA counters from hw_counters, else rdma_stat).
struct Device {
  std::string name, port;
  std::map<std::string, uint64_t> delta;
  std::set<std::string> missing;  // counters a diagnosis asked for that the files lack
  std::set<std::string> cannot_tell;
  bool ethtool = false;  // an ethtool -S file: its per-priority pause counters say where PFC is on
  // A counter whose absence is an answer (mlx5 prints a priority's pause counters only
  // where PFC is on, the global pause ones only where global pause is): no "missing".
  std::optional<uint64_t> has(const std::string& c) const {
    auto it = delta.find(c);
    return it == delta.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }
  // A counter a diagnosis reads; all() records the missing ones it cannot tell without.
  std::optional<uint64_t> get(const std::string& c) const { return has(c); }
};

// Every counter of `names` the device has, or nullopt (the diagnosis cannot tell).
std::optional<std::vector<uint64_t>> all(Device& d, const std::vector<std::string>& names,
                                         const char* code) {
  std::vector<uint64_t> v;
  bool ok = true;
  for (const auto& n : names) {
    auto x = d.get(n);
    if (!x) d.missing.insert(n);
    ok = ok && x.has_value();
    v.push_back(x.value_or(0));
  }
  if (!ok) {
    d.cannot_tell.insert(code);
    return std::nullopt;
  }
  return v;
}

struct Run {
  const RoceProfile& p;
  double interval_s;
  std::vector<DoctorFinding> out;
  void add(const Device& d, const char* code, Severity sev, int q, std::string what,
           nlohmann::json ev, std::string advice) {
    out.push_back(DoctorFinding{code, sev, d.name, d.port, q, std::move(what), std::move(ev),
                                std::move(advice)});
  }
};

void pfc_storm(Run& r, Device& d) {
  // The NIC's stall detection: warning events say it kept pausing long; error events say it
  // stopped sending pauses (storm prevention), so the lossless class may have dropped.
  if (auto s =
          all(d, {"tx_pause_storm_warning_events", "tx_pause_storm_error_events"}, "pfc_storm");
      s && ((*s)[0] || (*s)[1]))
    r.add(d, "pfc_storm", (*s)[1] ? Severity::kError : Severity::kWarning, -1,
          "the NIC saw a PFC pause storm: it kept sending pause frames",
          {{"tx_pause_storm_warning_events", (*s)[0]}, {"tx_pause_storm_error_events", (*s)[1]}},
          "the host's receive path is stuck (a hung application or driver); its NIC's "
          "storm protection dropped the pauses: find what stopped the receiver");
  const double us = r.interval_s * 1e6;  // mlx5's pause durations are in microseconds
  for (int q = 0; q < 8; ++q) {
    // Paused by its switch most of the interval while sending nothing on the priority:
    // the switch (or a host behind it) storms toward it. (No duration counter: PFC off
    // on the priority, nothing to pause it.)
    const auto rx_paused = d.has(prio("rx_prio{}_pause_duration", q));
    if (auto sent = rx_paused ? d.get(prio("tx_prio{}_packets", q)) : std::nullopt;
        sent && *rx_paused >= kStormShare * us && *sent == 0)
      r.add(d, "pfc_storm", Severity::kError, q,
            fmt::format("paused {:.0f}% of the interval on priority {} while sending nothing on it",
                        100.0 * double(*rx_paused) / us, q),
            {{prio("rx_prio{}_pause_duration", q), *rx_paused}, {prio("tx_prio{}_packets", q), 0}},
            "a PFC storm reaches this host from its switch port: find the port that pauses "
            "it (the switch's PFC counters) and the stuck receiver behind it; the switch's PFC "
            "watchdog should be on for this priority");
    // Pausing its switch most of the interval while receiving nothing: it storms.
    const auto tx_paused = d.has(prio("tx_prio{}_pause_duration", q));
    if (auto got = tx_paused ? d.get(prio("rx_prio{}_packets", q)) : std::nullopt;
        got && *tx_paused >= kStormShare * us && *got == 0)
      r.add(d, "pfc_storm", Severity::kError, q,
            fmt::format("sent pause on priority {} {:.0f}% of the interval while receiving nothing",
                        q, 100.0 * double(*tx_paused) / us),
            {{prio("tx_prio{}_pause_duration", q), *tx_paused}, {prio("rx_prio{}_packets", q), 0}},
            "this host's receive path is stuck and it pauses its switch port: restart what "
            "stopped receiving; the switch's PFC watchdog should be on for this priority");
  }
}

void wrong_pause(Run& r, Device& d) {
  // Global (802.3x) pause: mlx5 keeps these counters only while it is on.
  const auto grx = d.has("rx_global_pause"), gtx = d.has("tx_global_pause");
  if (grx.value_or(0) || gtx.value_or(0))
    r.add(d, "global_pause", Severity::kError, -1,
          "global (802.3x) pause frames on the link while RoCE is to run on PFC",
          {{"rx_global_pause", grx.value_or(0)}, {"tx_global_pause", gtx.value_or(0)}},
          "turn global pause off on both ends (ethtool -A IF rx off tx off) and PFC on for "
          "the lossless priorities");
  for (int q = 0; q < 8; ++q) {
    const auto rx = d.has(prio("rx_prio{}_pause", q)), tx = d.has(prio("tx_prio{}_pause", q));
    if (r.p.pfc_mask >> q & 1) {
      // mlx5 prints a priority's pause counters only where PFC is on.
      // Only on mlx5's per-priority group (rx_prioN_bytes is always there); another
      // driver names its PFC counters otherwise.
      if (d.ethtool && !rx && !tx && d.has(prio("rx_prio{}_bytes", q)))
        r.add(d, "pfc_off", Severity::kError, q,
              fmt::format("PFC is off on lossless priority {} (the NIC keeps no pause counters "
                          "for it)",
                          q),
              {{prio("rx_prio{}_pause", q), nullptr}},
              fmt::format("enable PFC on priority {} (dcb pfc set dev IF prio-pfc {}:on; weft roce "
                          "render)",
                          q, q));
      continue;
    }
    if (!rx.value_or(0) && !tx.value_or(0)) continue;
    r.add(d, "pause_wrong_priority", Severity::kError, q,
          fmt::format("PFC pause on priority {}, which the profile keeps lossy", q),
          {{prio("rx_prio{}_pause", q), rx.value_or(0)},
           {prio("tx_prio{}_pause", q), tx.value_or(0)}},
          "PFC is enabled on a priority the profile does not make lossless, here or on the "
          "switch port: apply the profile's PFC priorities on both ends (weft roce diff)");
  }
}

void roce_lossy(Run& r, Device& d) {
  if (r.p.mode != RoceMode::kLossless) return;
  const int q = r.p.roce_prio;
  nlohmann::json ev;
  bool lossy = false;
  for (const char* dir : {"tx", "rx"}) {
    const std::string rdma = fmt::format("{}_vport_rdma_unicast_bytes", dir),
                      on = fmt::format("{}_prio{}_bytes", dir, q);
    auto s = all(d, {rdma, on}, "roce_lossy");
    if (!s || (*s)[0] < kLossyMinBytes) continue;
    ev[rdma] = (*s)[0];
    ev[on] = (*s)[1];
    lossy |= double((*s)[1]) < kLossyShare * double((*s)[0]);
  }
  // Or: the port dropped for want of buffers while RoCE ran and not one pause frame went
  // either way on the RoCE priority (a lossless priority pauses before it drops).
  const auto phy = d.has("rx_discards_phy"), rdma = d.has("rx_vport_rdma_unicast_bytes");
  const auto rx_p = d.has(prio("rx_prio{}_pause", q)), tx_p = d.has(prio("tx_prio{}_pause", q));
  if (phy.value_or(0) && rdma.value_or(0) >= kLossyMinBytes && !rx_p.value_or(0) &&
      !tx_p.value_or(0) && !d.has(prio("rx_prio{}_discards", q)).value_or(0)) {
    ev["rx_discards_phy"] = *phy;
    ev[prio("rx_prio{}_pause", q)] = rx_p.value_or(0);
    ev[prio("tx_prio{}_pause", q)] = tx_p.value_or(0);
    lossy = true;
  }
  if (lossy)
    r.add(d, "roce_lossy", Severity::kError, q,
          fmt::format("RoCE traffic is not on priority {}: it runs lossy", q), ev,
          fmt::format("the RoCE packets' DSCP ({}) does not map to priority {} here: check "
                      "the trust mode (dscp) and the DSCP map on the host and its switch port "
                      "(weft roce diff), and the DSCP the application sets (rdma_cm ToS)",
                      r.p.roce_dscp, q));
}

void lossless_drops(Run& r, Device& d) {
  for (int q = 0; q < 8; ++q) {
    if (!(r.p.pfc_mask >> q & 1)) continue;
    auto s = all(d, {prio("rx_prio{}_discards", q)}, "lossless_drops");
    if (!s || !(*s)[0]) continue;
    nlohmann::json ev = {{prio("rx_prio{}_discards", q), (*s)[0]}};
    if (auto phy = d.has("rx_discards_phy")) ev["rx_discards_phy"] = *phy;  // all priorities'
    r.add(d, "lossless_drops", Severity::kError, q,
          fmt::format("{} packets dropped on lossless priority {}", (*s)[0], q), std::move(ev),
          "packets arrived after the pause was sent and found no room: the receive buffer's "
          "headroom for this priority is too small for the cable length and speed; raise it "
          "(dcb buffer on the host, the cable length on the switch)");
  }
}

void no_ecn_marks(Run& r, std::vector<Device>& devs) {
  // Heavy PFC toward hosts on the RoCE priority while they send, and not one RoCE packet
  // marked anywhere: the switches pause instead of marking.
  const int q = r.p.roce_prio;
  if (r.p.mode != RoceMode::kLossless) return;
  nlohmann::json paused = nlohmann::json::object();
  uint64_t marked = 0;
  bool marks_known = false;
  for (auto& d : devs) {
    const auto n = d.has(prio("rx_prio{}_pause", q)).value_or(0),
               us = d.has(prio("rx_prio{}_pause_duration", q)).value_or(0);
    if ((n >= kHeavyPauses || double(us) >= kHeavyShare * r.interval_s * 1e6) &&
        d.get(prio("tx_prio{}_bytes", q)).value_or(0))
      paused[d.name] = {{prio("rx_prio{}_pause", q), n}, {prio("rx_prio{}_pause_duration", q), us}};
    if (auto m = d.get("np_ecn_marked_roce_packets")) {
      marks_known = true;
      marked += *m;
    }
  }
  if (paused.empty() || !marks_known || marked) return;
  r.out.push_back(
      DoctorFinding{"no_ecn_marking",
                    Severity::kWarning,
                    "",
                    "",
                    q,
                    fmt::format("heavy PFC on priority {} toward {} host(s), and no RoCE "
                                "packet arrived ECN-marked",
                                q, paused.size()),
                    {{"paused", paused}, {"np_ecn_marked_roce_packets", 0}},
                    "the switches pause before they mark: turn ECN (WRED) marking on "
                    "for the RoCE queue, below the PFC threshold (the profile's ecn "
                    "thresholds; weft roce diff)"});
}

void dcqcn(Run& r, Device& d) {
  if (auto s = all(d, {"np_ecn_marked_roce_packets", "np_cnp_sent"}, "dcqcn_np_inactive");
      s && (*s)[0] && !(*s)[1])
    r.add(d, "dcqcn_np_inactive", Severity::kError, r.p.roce_prio,
          "ECN-marked RoCE packets arrived and no CNP was sent: DCQCN's notification point is off",
          {{"np_ecn_marked_roce_packets", (*s)[0]}, {"np_cnp_sent", 0}},
          fmt::format("enable the NP on priority {} (ecn/roce_np/enable/{} = 1)", r.p.roce_prio,
                      r.p.roce_prio));
  if (auto s = all(d, {"rp_cnp_ignored", "rp_cnp_handled"}, "dcqcn_rp_inactive");
      s && (*s)[0] && !(*s)[1])
    r.add(d, "dcqcn_rp_inactive", Severity::kError, r.p.roce_prio,
          "CNPs arrived and were ignored: DCQCN's reaction point is off, senders never slow down",
          {{"rp_cnp_ignored", (*s)[0]}, {"rp_cnp_handled", 0}},
          fmt::format("enable the RP on priority {} (ecn/roce_rp/enable/{} = 1)", r.p.roce_prio,
                      r.p.roce_prio));
}

void cnps_lost(Run& r, std::vector<Device>& devs) {
  uint64_t sent = 0, arrived = 0;
  size_t known = 0;
  for (auto& d : devs)
    if (auto s = all(d, {"np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored"}, "cnp_lost")) {
      ++known;
      sent += (*s)[0];
      arrived += (*s)[1] + (*s)[2];
    }
  if (known < 2 || !sent || arrived) return;
  r.out.push_back(
      DoctorFinding{"cnp_lost",
                    Severity::kWarning,
                    "",
                    "",
                    r.p.cnp_prio,
                    fmt::format("{} CNPs sent and none arrived at any host", sent),
                    {{"np_cnp_sent", sent}, {"rp_cnp_handled", 0}, {"rp_cnp_ignored", 0}},
                    fmt::format("CNPs (DSCP {}, priority {}) are dropped or remarked on "
                                "the way: check the switches' DSCP map and queue for "
                                "the CNP DSCP",
                                r.p.cnp_dscp, r.p.cnp_prio)});
}

void retransmission(Run& r, Device& d) {
  static const std::vector<std::string> kRetrans = {"out_of_sequence", "packet_seq_err",
                                                    "local_ack_timeout_err", "duplicate_request",
                                                    "implied_nak_seq_err"};
  nlohmann::json ev = nlohmann::json::object();
  for (const auto& c : kRetrans)
    if (auto v = d.get(c); v && *v) ev[c] = *v;
  if (d.delta.count("roce_adp_retrans") && d.delta["roce_adp_retrans"])
    ev["roce_adp_retrans"] = d.delta["roce_adp_retrans"];
  if (std::none_of(kRetrans.begin(), kRetrans.end(),
                   [&](const auto& c) { return d.delta.count(c); })) {
    d.cannot_tell.insert("retransmission");
    d.missing.insert(kRetrans.begin(), kRetrans.end());
  }
  if (ev.empty()) return;
  // Cross-checked with this port's link: corrupted packets are lost packets.
  uint64_t corrupt = 0;
  for (const char* c : {"rx_symbol_err_phy", "rx_crc_errors_phy"})
    if (auto v = d.has(c); v && *v) ev[c] = *v, corrupt += *v;
  r.add(d, "retransmission", Severity::kError, -1, "RoCE packets were lost and sent again", ev,
        corrupt ? "this port's own link corrupts packets (link_errors): that loss explains "
                  "retransmission here; fix the link first"
                : "in a lossless fabric nothing should be lost: look for drops on the RoCE "
                  "priority (lossless_drops, roce_lossy) and link errors on the path");
}

void link_errors(Run& r, Device& d) {
  auto s = all(d, {"rx_symbol_err_phy", "rx_crc_errors_phy"}, "link_errors");
  if (!s || (!(*s)[0] && !(*s)[1])) return;
  r.add(d, "link_errors", Severity::kError, -1, "the link corrupts packets",
        {{"rx_symbol_err_phy", (*s)[0]}, {"rx_crc_errors_phy", (*s)[1]}},
        "a bad cable, transceiver or port: reseat or replace it (the packets it corrupts "
        "are lost and sent again)");
}

void slow_restart(Run& r, Device& d) {
  if (r.p.mode != RoceMode::kLossless) return;
  auto s = all(d, {"roce_slow_restart"}, "slow_restart");
  if (!s || !(*s)[0]) return;
  r.add(d, "slow_restart", Severity::kWarning, -1,
        "RoCE slow restart is active in a lossless profile: after a loss, QPs restart slowly",
        {{"roce_slow_restart", (*s)[0]}},
        "in a lossless fabric slow restart only delays recovery: turn it off in the NIC's "
        "RoCE acceleration settings");
}

void host_side(Run& r, Device& d) {
  if (auto s = all(d, {"rnr_nak_retry_err"}, "host_rnr"); s && (*s)[0])
    r.add(d, "host_rnr", Severity::kWarning, -1,
          "receivers were not ready (RNR NAKs came back): the application, not the fabric",
          {{"rnr_nak_retry_err", (*s)[0]}},
          "the responder's application does not post receive buffers in time: raise its "
          "receive queue depth or the QP's RNR retry count");
  nlohmann::json ev = nlohmann::json::object();
  for (const char* c : {"out_of_buffer", "rx_out_of_buffer"})
    if (d.delta.count(c) && d.delta[c]) ev[c] = d.delta[c];
  if (!ev.empty())
    r.add(d, "host_out_of_buffer", Severity::kWarning, -1,
          "the host ran out of receive buffers: the host, not the fabric", ev,
          "the host does not drain its receive queues fast enough (CPU, interrupt affinity, "
          "ring size): not a network fault");
}

// ---- switches (SONiC) ----
struct Switch {
  std::string name;
  std::map<std::string, uint64_t> delta;      // "Ethernet0|tx_pfc3", ...
  std::map<std::string, std::string> states;  // pfcwd queue -> status (after)
  std::map<std::string, uint64_t> levels;     // "Ethernet0|PG3|headroom_wm" (after)
};

// The lossless priority a queue (TC) index serves under the profile, or -1.
int priority_of_queue(const RoceProfile& p, int queue) {
  for (int q = 0; q < 8; ++q)
    if ((p.pfc_mask >> q & 1) && p.prio_tc[size_t(q)] == queue) return q;
  return -1;
}

// "Ethernet0|UC3|drop_pkts" -> (Ethernet0, 3, drop_pkts) for unicast and ALL queues.
struct QueueKey {
  std::string port;
  int index = -1;
  std::string field;
};
std::optional<QueueKey> queue_key(const std::string& k) {
  const size_t a = k.find('|'), b = k.find('|', a == std::string::npos ? 0 : a + 1);
  if (a == std::string::npos || b == std::string::npos) return std::nullopt;
  const std::string q = k.substr(a + 1, b - a - 1);
  const size_t digits = q.find_first_of("0123456789");
  if (digits == std::string::npos || (q.substr(0, digits) != "UC" && q.substr(0, digits) != "ALL"))
    return std::nullopt;
  int n = -1;
  const char* e = q.data() + q.size();
  if (auto [p, ec] = std::from_chars(q.data() + digits, e, n); ec != std::errc{} || p != e)
    return std::nullopt;
  return QueueKey{k.substr(0, a), n, k.substr(b + 1)};
}

void switch_findings(Run& r, const Switch& sw) {
  auto add = [&](const char* code, const std::string& port, int q, std::string what,
                 nlohmann::json ev, std::string advice) {
    r.out.push_back(DoctorFinding{code, Severity::kError, sw.name, port, q, std::move(what),
                                  std::move(ev), std::move(advice)});
  };
  auto d = [&](const std::string& k) {
    auto it = sw.delta.find(k);
    return it == sw.delta.end() ? uint64_t(0) : it->second;
  };
  // The PFC watchdog's storms, by queue (PORT:INDEX).
  for (const auto& [queue, state] : sw.states) {
    const uint64_t detected = d(queue + "|storm_detected");
    if (!detected && state != "stormed") continue;
    const size_t colon = queue.rfind(':');
    int index = -1;
    const char* e = queue.data() + queue.size();
    if (auto [p, ec] = std::from_chars(queue.data() + colon + 1, e, index);
        ec != std::errc{} || p != e || index < 0)
      continue;  // the parser takes only PORT:INDEX
    add("pfc_storm", queue.substr(0, colon), priority_of_queue(r.p, index),
        fmt::format("the PFC watchdog saw {} storm(s) on queue {}{}", detected, index,
                    state == "stormed" ? ", stormed now" : ""),
        {{"storm_detected", detected},
         {"storm_restored", d(queue + "|storm_restored")},
         {"tx_drop", d(queue + "|tx_drop")},
         {"rx_drop", d(queue + "|rx_drop")},
         {"status", state}},
        "a device behind this port keeps pausing it (a stuck receiver): find it by the pause "
        "counters downstream and restart what stopped receiving; the watchdog dropped the "
        "queue's packets meanwhile");
  }
  for (const auto& [k, v] : sw.delta) {
    if (!v) continue;
    // Pause on a priority the profile keeps lossy.
    const size_t bar = k.find('|');
    const std::string field = bar == std::string::npos ? "" : k.substr(bar + 1);
    if ((field.starts_with("rx_pfc") || field.starts_with("tx_pfc")) && field.size() == 7) {
      const int q = field[6] - '0';
      if (q >= 0 && q < 8 && !(r.p.pfc_mask >> q & 1))
        add("pause_wrong_priority", k.substr(0, bar), q,
            fmt::format("PFC pause on priority {}, which the profile keeps lossy", q), {{field, v}},
            "PFC is enabled on a priority the profile does not make lossless, here or on the "
            "peer: apply the profile's PFC priorities on both ends (weft roce diff)");
      continue;
    }
    // Drops on a lossless queue.
    if (auto qk = queue_key(k); qk && qk->field == "drop_pkts") {
      const int q = priority_of_queue(r.p, qk->index);
      if (q < 0) continue;
      add("lossless_drops", qk->port, q,
          fmt::format("{} packets dropped on lossless queue {}", v, qk->index),
          {{k.substr(bar + 1), v}},
          "the queue's priority group overflowed its headroom (the cable is longer than the "
          "configured cable length, or the headroom pool is too small), or the PFC watchdog "
          "dropped during a storm: check CABLE_LENGTH and BUFFER_PG (weft roce diff)");
    }
  }
}

// Ingress drops in a lossless priority group, read against the headroom it used (its
// XOFF watermark) and, where the fabric is known, the headroom the port's cable needs:
//  - headroom used but less than the cable needs: it filled and overflowed (too small);
//  - no headroom used: the port never paused its sender (PFC off here, or a lossy PG);
//  - headroom used at least what the cable needs: the sender kept sending after the pause.
void switch_pg_drops(Run& r, const Switch& sw, const RoceFabric* f) {
  const PrioMap tc_pg = intended_tc_pg(r.p);
  std::optional<SwitchConfig> want;  // what the fabric's cables need, made when first asked
  for (const auto& [k, v] : sw.delta) {
    if (!v || !k.ends_with("|drop_pkts")) continue;
    const size_t a = k.find('|'), b = k.find('|', a + 1);
    const std::string pgs = k.substr(a + 1, b - a - 1);
    int pg = -1;
    if (!pgs.starts_with("PG") ||
        std::from_chars(pgs.data() + 2, pgs.data() + pgs.size(), pg).ec != std::errc{})
      continue;
    // The switch's traffic class is the priority (DSCP and 802.1p map to it; the
    // profile's priority-to-TC map picks queues), and a lossless priority's PG is its own.
    int q = -1;
    const uint8_t lossless = lossless_priorities(r.p);
    for (int i = 0; i < 8 && q < 0; ++i)
      if ((lossless >> i & 1) && tc_pg[size_t(i)] == pg) q = i;
    if (q < 0) continue;  // a lossy PG drops by design
    const std::string port = k.substr(0, a);
    nlohmann::json ev = {{pgs + "|drop_pkts", v}};
    std::optional<uint64_t> used, need;
    if (auto w = sw.levels.find(port + "|" + pgs + "|headroom_wm"); w != sw.levels.end())
      used = w->second;  // (N/A, or no watermark file: not known)
    if (const int di = f ? f->device(sw.name) : -1; di >= 0) {
      if (!want) want = intend_switch(r.p, f, di);
      if (const SwitchPort* sp = want->port(port))
        if (auto g = sp->pgs.find(pg); g != sp->pgs.end() && g->second.xoff) need = g->second.xoff;
    }
    if (used) ev["headroom_watermark_bytes"] = *used;
    if (need) ev["headroom_needed_bytes"] = *need;
    std::string what = fmt::format("{} packets dropped at ingress in lossless priority group {}", v,
                                   pg),
                advice;
    if (!used) {
      advice =
          "the priority group ran out of room: its headroom is too small for the cable, or the "
          "port never paused; collect `show priority-group persistent-watermark headroom` "
          "(DEVICE.pg_headroom) to tell which";
    } else if (*used == 0) {
      what += ", its headroom never used";
      advice = fmt::format(
          "the port never paused its sender: PFC is off for priority {} on this port, or its "
          "priority group has no headroom (a lossy BUFFER_PG): apply the profile (weft roce diff)",
          q);
    } else if (!need) {
      what += fmt::format(" after {} bytes of headroom", *used);
      advice =
          "the headroom filled: either it is too small for the cable (CABLE_LENGTH shorter than "
          "the real cable) or the sender kept sending after the pause; give --fabric (the "
          "cables' lengths) to tell which";
    } else if (*used < *need) {
      what += fmt::format(" with its headroom full at {} bytes, where the cable needs {}", *used,
                          *need);
      advice =
          "the headroom is too small for the cable: set the port's CABLE_LENGTH to the real "
          "cable (the fabric's length) so the buffer manager sizes the headroom for it";
    } else {
      what += fmt::format(" after {} bytes of headroom, what the cable needs", *used);
      advice =
          "the headroom holds the cable's round trip, yet packets kept coming after the pause: "
          "the sender honours PFC late or not on this priority (check the peer's PFC), or the "
          "shared headroom pool is oversubscribed";
    }
    r.out.push_back(DoctorFinding{"lossless_drops", Severity::kError, sw.name, port, q,
                                  std::move(what), std::move(ev), std::move(advice)});
  }
}

// A switch that paused heavily on the RoCE priority while not one packet of its lossless
// queue was ECN-marked on any port: it pauses instead of marking. Only where its ECN
// marks are known (show queue wredcounters, or COUNTERS_DB's WRED fields).
void switch_no_ecn(Run& r, const Switch& sw) {
  if (r.p.mode != RoceMode::kLossless) return;
  const int q = r.p.roce_prio, queue = r.p.prio_tc[size_t(q)];
  uint64_t paused = 0, marked = 0;
  bool known = false;
  for (const auto& [k, v] : sw.delta) {
    if (k.ends_with("|tx_pfc" + std::to_string(q))) paused += v;
    if (auto qk = queue_key(k); qk && qk->field == "ecn_marked" && qk->index == queue) {
      known = true;
      marked += v;
    }
  }
  if (!known || marked || paused < kHeavyPauses) return;
  r.out.push_back(DoctorFinding{
      "no_ecn_marking",
      Severity::kWarning,
      sw.name,
      "",
      q,
      fmt::format("sent {} pause frames on priority {} and marked no packet of queue {}", paused, q,
                  queue),
      {{prio("tx_pfc{}", q), paused}, {"ecn_marked", 0}},
      "the switch pauses before it marks: turn ECN (WRED) marking on for the RoCE queue, with "
      "thresholds below the PFC threshold (the profile's ecn thresholds; weft roce diff)"});
}

// The ports that sent pause frames on lossless priorities, and whom they paused.
std::vector<PauseEdge> pause_story(const RoceProfile& p, const std::vector<Device>& hosts,
                                   const std::vector<Switch>& switches, const RoceFabric* f) {
  auto peer = [&](const std::string& dev, const std::string& port, bool host) -> std::string {
    if (!f) return "";
    const int di = f->device(dev);
    if (di < 0) return "";
    const auto& rd = f->devices[size_t(di)];
    int pi = rd.port(port);
    if (pi < 0 && host) {  // the port whose RDMA device the counters name, else the only one
      const std::string rdma = port.substr(0, port.find('/'));
      for (size_t i = 0; i < rd.ports.size(); ++i)
        if (rd.ports[i].rdma == rdma || rd.ports.size() == 1) pi = int(i);
    }
    if (pi < 0 || rd.ports[size_t(pi)].link < 0) return "";
    const auto& l = f->links[size_t(rd.ports[size_t(pi)].link)];
    const PortRef o = l.a == PortRef{di, pi} ? l.b : l.a;
    return f->devices[size_t(o.device)].name + ":" +
           f->devices[size_t(o.device)].ports[size_t(o.port)].name;
  };
  std::vector<PauseEdge> out;
  for (int q = 0; q < 8; ++q) {
    if (!(p.pfc_mask >> q & 1)) continue;
    for (const auto& h : hosts)
      if (auto it = h.delta.find(prio("tx_prio{}_pause", q)); it != h.delta.end() && it->second)
        out.push_back({h.name, h.port, peer(h.name, h.port, true), q, it->second});
    for (const auto& sw : switches)
      for (const auto& [k, v] : sw.delta)
        if (v && k.ends_with("|tx_pfc" + std::to_string(q))) {
          const std::string port = k.substr(0, k.find('|'));
          out.push_back({sw.name, port, peer(sw.name, port, false), q, v});
        }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PauseEdge& a, const PauseEdge& b) { return a.frames > b.frames; });
  return out;
}

}  // namespace

bool doctor_reads(std::string_view name) {
  static const std::set<std::string, std::less<>> names = [] {
    std::set<std::string, std::less<>> n = {"rx_global_pause",
                                            "tx_global_pause",
                                            "tx_pause_storm_warning_events",
                                            "tx_pause_storm_error_events",
                                            "rx_vport_rdma_unicast_bytes",
                                            "tx_vport_rdma_unicast_bytes",
                                            "rx_symbol_err_phy",
                                            "rx_crc_errors_phy",
                                            "rx_discards_phy",
                                            "rx_out_of_buffer",
                                            "out_of_sequence",
                                            "packet_seq_err",
                                            "local_ack_timeout_err",
                                            "duplicate_request",
                                            "implied_nak_seq_err",
                                            "roce_adp_retrans",
                                            "rnr_nak_retry_err",
                                            "out_of_buffer",
                                            "np_ecn_marked_roce_packets",
                                            "np_cnp_sent",
                                            "rp_cnp_handled",
                                            "rp_cnp_ignored",
                                            "roce_slow_restart"};
    for (int q = 0; q < 8; ++q)
      for (const char* c :
           {"rx_prio{}_bytes", "tx_prio{}_bytes", "rx_prio{}_packets", "tx_prio{}_packets",
            "rx_prio{}_discards", "rx_prio{}_pause", "tx_prio{}_pause", "rx_prio{}_pause_duration",
            "tx_prio{}_pause_duration"})
        n.insert(prio(c, q));
    return n;
  }();
  return names.count(name) > 0;
}

bool Diagnosis::any_error() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const DoctorFinding& f) { return f.severity == Severity::kError; });
}

Result<Diagnosis> diagnose(const CounterSnapshot& before, const CounterSnapshot& after,
                           double interval_s, const RoceProfile& profile,
                           const RoceFabric* fabric) {
  if (!(interval_s > 0))
    return bad(
        fmt::format("the interval between the snapshots is {} s: it must be above 0 (the "
                    "after snapshot taken after the before one)",
                    interval_s));
  // The same devices and sources on both sides.
  auto only = [](const CounterSnapshot& a, const CounterSnapshot& b) -> std::optional<std::string> {
    for (const auto& [dev, files] : a.devices)
      for (const auto& [src, f] : files) {
        auto it = b.devices.find(dev);
        if (it == b.devices.end() || !it->second.count(src))
          return a.dir + "/" + dev + "." + src + " has no pair in " + b.dir;
      }
    return std::nullopt;
  };
  if (auto o = only(before, after)) return bad(*o);
  if (auto o = only(after, before)) return bad(*o);
  std::vector<Device> devs;
  std::vector<Switch> switches;
  for (const auto& [name, files] : after.devices) {
    if (files.count("pfc") || files.count("queue") || files.count("pfcwd") || files.count("wred") ||
        files.count("pg_drop") || files.count("pg_headroom") || files.count("counters_db")) {
      if (files.count("ethtool") || files.count("hw_counters") || files.count("rdma_stat"))
        return bad(name +
                   ": both a host's and a switch's counter files: one device is one or "
                   "the other");
      Switch sw;
      sw.name = name;
      for (const auto& [src, a] : files) {
        const CounterFile& fb = before.devices.at(name).at(src);
        for (const auto& [c, v] : a.values) {
          auto b = fb.values.find(c);
          // show pfcwd stats hides a queue's row while all its pairs are 0/0 (and show
          // queue counters -nz an all-zero row): absent before, it was 0.
          const bool hidden_zero = src == "pfcwd" || src == "queue" || src == "wred";
          if (b == fb.values.end() && !hidden_zero) continue;
          const uint64_t was = b == fb.values.end() ? 0 : b->second;
          if (v < was)
            return bad(
                fmt::format("{}.{}: counter {} went down from {} to {}: the snapshots are "
                            "swapped, or the counters were cleared between them",
                            name, src, c, was, v));
          sw.delta.emplace(c, v - was);
        }
        for (const auto& [q, st] : a.states) sw.states[q] = st;
        for (const auto& [k, v] : a.levels) sw.levels[k] = v;
      }
      switches.push_back(std::move(sw));
      continue;
    }
    Device d;
    d.name = name;
    for (const char* src : {"hw_counters", "rdma_stat", "ethtool"}) {
      auto a = files.find(src);
      if (a == files.end()) continue;
      const CounterFile& fb = before.devices.at(name).at(src);
      const std::string file = name + "." + src;
      if (a->second.port != fb.port)
        return bad(
            fmt::format("{}: the before snapshot is of {}, the after one of {}: two "
                        "different ports",
                        file, fb.port, a->second.port));
      if (!d.port.empty() && !a->second.port.empty() && a->second.port != d.port)
        return bad(
            fmt::format("{}: names port {}, and {}'s other RDMA file port {}: one port "
                        "a device",
                        file, a->second.port, name, d.port));
      if (d.port.empty()) d.port = a->second.port;
      d.ethtool |= std::string_view(src) == "ethtool";
      for (const auto& [c, v] : a->second.values) {
        auto b = fb.values.find(c);
        if (b == fb.values.end()) continue;  // only one side has it: missing
        uint64_t now = v;
        // A 32-bit counter wraps: one in its upper half before and low after went round
        // once (weft's reading; lower, it is taken for a reset).
        if (v < b->second && kWraps32.count(c) && b->second >= (uint64_t(1) << 31) &&
            b->second <= 0xffffffffu)
          now = v + (uint64_t(1) << 32);
        if (now < b->second)
          return bad(
              fmt::format("{}: counter {} went down from {} to {}: the snapshots are "
                          "swapped, or the counters were reset between them",
                          file, c, b->second, v));
        d.delta.emplace(c, now - b->second);  // hw_counters first: rdma_stat repeats it
      }
    }
    devs.push_back(std::move(d));
  }
  Run r{profile, interval_s, {}};
  for (auto& d : devs) {
    pfc_storm(r, d);
    wrong_pause(r, d);
    roce_lossy(r, d);
    lossless_drops(r, d);
    dcqcn(r, d);
    retransmission(r, d);
    link_errors(r, d);
    slow_restart(r, d);
    host_side(r, d);
  }
  for (const auto& sw : switches) {
    switch_findings(r, sw);
    switch_pg_drops(r, sw, fabric);
    switch_no_ecn(r, sw);
  }
  no_ecn_marks(r, devs);
  cnps_lost(r, devs);
  // Counters missing: said once per device, with the diagnoses they leave open.
  for (auto& d : devs)
    if (!d.cannot_tell.empty())
      r.out.push_back(DoctorFinding{
          "cannot_tell",
          Severity::kInfo,
          d.name,
          d.port,
          -1,
          fmt::format("{} counter(s) missing: {} cannot be told", d.missing.size(),
                      fmt::join(d.cannot_tell, ", ")),
          {{"missing", d.missing}, {"cannot_tell", d.cannot_tell}},
          "an older driver, or optional counters off: collect ethtool -S and the RDMA "
          "hw_counters of each port"});
  Diagnosis out;
  out.interval_s = interval_s;
  out.findings = std::move(r.out);
  out.pauses = pause_story(profile, devs, switches, fabric);
  return out;
}

nlohmann::json diagnosis_json(const Diagnosis& d) {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& x : d.findings)
    f.push_back({{"code", x.code},
                 {"severity", severity_name(x.severity)},
                 {"device", x.device},
                 {"port", x.port},
                 {"priority", x.priority < 0 ? nlohmann::json() : nlohmann::json(x.priority)},
                 {"what", x.what},
                 {"evidence", x.evidence},
                 {"advice", x.advice}});
  nlohmann::json p = nlohmann::json::array();
  for (const auto& e : d.pauses)
    p.push_back({{"device", e.device},
                 {"port", e.port},
                 {"peer", e.peer},
                 {"priority", e.priority},
                 {"frames", e.frames}});
  return {{"interval_s", d.interval_s}, {"findings", f}, {"pauses", p}};
}

std::string render_diagnosis(const Diagnosis& d) {
  size_t errors = 0, warnings = 0;
  for (const auto& f : d.findings) {
    errors += f.severity == Severity::kError;
    warnings += f.severity == Severity::kWarning;
  }
  std::string o = fmt::format("weft roce doctor: over {:.1f} s, {} error(s), {} warning(s)\n",
                              d.interval_s, errors, warnings);
  if (d.findings.empty()) o += "no finding: the counters show a healthy lossless run\n";
  // Per device in name order, then the fabric-wide ones.
  std::vector<const DoctorFinding*> order;
  for (const auto& f : d.findings) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(), [](const DoctorFinding* a, const DoctorFinding* b) {
    return std::make_pair(a->device.empty(), a->device) <
           std::make_pair(b->device.empty(), b->device);
  });
  std::string last = "\x01";
  for (const DoctorFinding* f : order) {
    if (f->device != last) {
      last = f->device;
      o += f->device.empty() ? std::string("fabric\n")
                             : f->device + (f->port.empty() ? "" : " (" + f->port + ")") + "\n";
    }
    o += fmt::format("  {:<8} {:<22} {:<7} {}\n", severity_name(f->severity), f->code,
                     f->priority < 0 ? std::string("-") : fmt::format("prio {}", f->priority),
                     f->what);
    std::string ev;
    for (const auto& [k, v] : f->evidence.items())
      ev += (ev.empty() ? "" : ", ") + k + " " + v.dump();
    o += "           evidence: " + ev + "\n";
    o += "           advice: " + f->advice + "\n";
  }
  if (!d.pauses.empty()) o += "who pauses whom (pause frames sent on lossless priorities):\n";
  for (const auto& e : d.pauses)
    o += fmt::format("  {}{}{} -> {}  prio {}  {} frames\n", e.device, e.port.empty() ? "" : " ",
                     e.port, e.peer.empty() ? "its peer" : e.peer, e.priority, e.frames);
  return o;
}

}  // namespace weft::roce
