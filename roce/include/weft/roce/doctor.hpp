// weft/roce/doctor.hpp — the RoCE doctor: why a lossless fabric that looks configured
// right is slow, from two snapshots of the counters hosts already keep, an interval apart.
//
// A snapshot is a directory of one file per device and source, the text as the tool
// printed it:
//   DEVICE.ethtool      `ethtool -S IF`                      (mlx5 Ethernet counters)
//   DEVICE.hw_counters  `grep -H . /sys/class/infiniband/DEV/ports/N/hw_counters/*`
//   DEVICE.rdma_stat    `rdma statistic show link DEV/N`     (the same RDMA counters)
//   DEVICE.pfc          SONiC `show pfc counters`
//   DEVICE.queue        SONiC `show queue counters`
//   DEVICE.pfcwd        SONiC `show pfcwd stats`
//   DEVICE.wred         SONiC `show queue wredcounters` (its ECN marks)
//   DEVICE.pg_drop      SONiC `show priority-group drop counters`
//   DEVICE.pg_headroom  SONiC `show priority-group persistent-watermark headroom` (or
//                       `watermark headroom`): the peak headroom each PG used, in bytes
//   DEVICE.counters_db  SONiC `sonic-db-dump -n COUNTERS_DB` (instead of the tables above)
//
//   auto before = roce::load_counter_dir("snap/t0", roce::doctor_reads);
//   auto after = roce::load_counter_dir("snap/t1", roce::doctor_reads);
//   auto found = roce::diagnose(*before, *after, 10.0, roce::default_roce_profile());
//   for (const auto& f : found->findings) ...   // code, severity, device, port, evidence
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"
#include "weft/roce/check.hpp"
#include "weft/roce/fabric.hpp"
#include "weft/roce/profile.hpp"

namespace weft::roce {

// One device's counters from one source file.
// A switch's counters are per port and queue: "Ethernet0|rx_pfc3" (show pfc counters),
// "Ethernet0|UC3|drop_pkts" (show queue counters: pkts, bytes, drop_pkts, drop_bytes),
// "Ethernet0:3|storm_detected" (show pfcwd stats: storm_detected, storm_restored, tx_ok,
// tx_drop, rx_ok, rx_drop), "Ethernet0|PG3|drop_pkts" (show priority-group drop
// counters); a cell printed N/A is left out.
struct CounterFile {
  std::string source;  // "ethtool", "hw_counters", "rdma_stat", "pfc", "queue", "pfcwd",
                       // "wred", "pg_drop", "pg_headroom", "counters_db"
  std::string port;    // the port the file names ("mlx5_0/1"), where it names one
  std::map<std::string, uint64_t> values;
  // Watermarks: the peak a buffer reached since it was last cleared, read as they are
  // (never a delta): "Ethernet0|PG3|headroom_wm" (bytes of XOFF headroom used).
  std::map<std::string, uint64_t> levels;
  std::map<std::string, std::string> states;  // pfcwd: queue -> operational | stormed | N/A
};

// Which of a host's counters to keep (null: all). Every line is checked either way; an
// mlx5 port prints a thousand counters, most per ring, that no diagnosis reads.
using CounterFilter = bool (*)(std::string_view name);
// The counters diagnose() reads from a host.
bool doctor_reads(std::string_view name);

// Each parser names `where` (the file) and the line in its errors.
Result<CounterFile> parse_ethtool_stats(std::string_view text, const std::string& where,
                                        CounterFilter keep = nullptr);
Result<CounterFile> parse_hw_counters(std::string_view text, const std::string& where,
                                      CounterFilter keep = nullptr);
Result<CounterFile> parse_rdma_stat(std::string_view text, const std::string& where,
                                    CounterFilter keep = nullptr);
// SONiC (sonic-utilities' tables: numbers with or without thousands commas, N/A); every
// counter is kept.
Result<CounterFile> parse_sonic_pfc(std::string_view text, const std::string& where,
                                    CounterFilter = nullptr);
Result<CounterFile> parse_sonic_queue(std::string_view text, const std::string& where,
                                      CounterFilter = nullptr);
Result<CounterFile> parse_sonic_pfcwd(std::string_view text, const std::string& where,
                                      CounterFilter = nullptr);
// show queue wredcounters: "Ethernet0|UC3|ecn_marked" (and wred_drop_pkts, ...).
Result<CounterFile> parse_sonic_wred(std::string_view text, const std::string& where,
                                     CounterFilter = nullptr);
// show priority-group drop counters ("Ingress PG dropped packets:"): "Ethernet0|PG3|drop_pkts".
Result<CounterFile> parse_sonic_pg_drop(std::string_view text, const std::string& where,
                                        CounterFilter = nullptr);
// show priority-group [persistent-]watermark headroom ("Ingress headroom per PG:"): levels
// "Ethernet0|PG3|headroom_wm". The shared pool's table is refused by its title.
Result<CounterFile> parse_sonic_pg_headroom(std::string_view text, const std::string& where,
                                            CounterFilter = nullptr);
// SONiC's COUNTERS_DB as JSON (sonic-db-dump -n COUNTERS_DB, or {KEY: {FIELD: VALUE}}):
// the same counters as the tables, from the SAI fields; the PG headroom watermark from
// PERSISTENT_WATERMARKS (else USER_, else PERIODIC_WATERMARKS).
Result<CounterFile> parse_counters_db(std::string_view text, const std::string& where,
                                      CounterFilter = nullptr);

// A snapshot: device -> source -> its counters; `mtime_s` the newest file's
// modification time (seconds since the epoch), for the interval when none is given.
struct CounterSnapshot {
  std::string dir;
  std::map<std::string, std::map<std::string, CounterFile>> devices;
  double mtime_s = 0;
};
// Reads every DEVICE.SOURCE file of `dir`; a file of another kind, or one that does not
// parse, is an error naming it.
Result<CounterSnapshot> load_counter_dir(const std::string& dir, CounterFilter keep = nullptr);
// One file into `s` by its name ("h1.ethtool") and text (REST bodies carry them so).
Result<void> add_counter_file(CounterSnapshot& s, const std::string& name, std::string_view text,
                              CounterFilter keep = nullptr);

// A diagnosis (the checks' Finding is about configuration; this one about counters).
struct DoctorFinding {
  std::string code;  // "pfc_storm", "lossless_drops", ... (stable: tools match on it)
  Severity severity = Severity::kError;
  std::string device, port;
  int priority = -1;                                   // -1: none in particular
  std::string what;                                    // one line for people
  nlohmann::json evidence = nlohmann::json::object();  // counter -> delta, and the like
  std::string advice;
};

// Who pauses whom: a port that sent PFC pause frames on a lossless priority, and the
// port at the other end of its link where the fabric is known.
struct PauseEdge {
  std::string device, port;  // the port that sent them
  std::string peer;          // "device:port" (empty: no fabric given, or not in it)
  int priority = 0;
  uint64_t frames = 0;
};

struct Diagnosis {
  double interval_s = 0;
  std::vector<DoctorFinding> findings;
  std::vector<PauseEdge> pauses;  // most frames first
  bool any_error() const;
};

// Compares `after` with `before` over `interval_s` seconds under `profile` (its lossless
// priorities, RoCE priority and mode). Fails, naming the device and file, when the two
// do not hold the same devices and sources, when a file names another port than its
// pair, or when a counter went down (the snapshots swapped, or a reset between them).
// `fabric` (may be null) names each port's peer in the pause story; a host's port is the
// one whose RDMA device the counters name (else its only port).
Result<Diagnosis> diagnose(const CounterSnapshot& before, const CounterSnapshot& after,
                           double interval_s, const RoceProfile& profile,
                           const RoceFabric* fabric = nullptr);

// For people: per device, then the fabric-wide findings.
std::string render_diagnosis(const Diagnosis& d);
// {"interval_s": S, "findings": [{"code", "severity", "device", "port", "priority",
// "what", "evidence", "advice"}], "pauses": [{"device", "port", "peer", "priority",
// "frames"}]}
nlohmann::json diagnosis_json(const Diagnosis& d);

}  // namespace weft::roce
