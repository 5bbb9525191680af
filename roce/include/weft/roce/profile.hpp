// weft/roce/profile.hpp — the one lossless-RoCE profile a fabric runs, read from
// a YAML file the admin writes. Every key is known (an unknown one is an error with
// a "did you mean"), every value range-checked, and every error names file:line.
// Keys left out keep NVIDIA's lossless reference (see default_roce_profile()).
//
//   mode: lossless                 # lossless | lossy
//   trust: dscp                    # dscp | pcp
//   roce: {dscp: 26, priority: 3}
//   cnp:  {dscp: 48, priority: 6}
//   dscp_to_priority: {26: 3, 48: 6}   # DSCPs not listed go to priority 0
//   priority_to_tc: {3: 3, 6: 6}       # priorities not listed go to TC 0
//   pfc: {priorities: [3]}
//   pfc_watchdog: {enable: true, detection_time: 200ms, restoration_time: 200ms, action: drop}
//   ets: {0: 50, 3: 50, 6: strict}     # TC: bandwidth % | strict; TCs not listed: ets 0 %
//   ecn: {3: {min: 150KB, max: 1.5MB, probability: 100}}   # switch WRED/ECN per TC
//   dcqcn:
//     priorities: [3]                  # NP and RP enabled on these priorities
//     rp: {rpg_time_reset: 300, rpg_ai_rate: 5}             # mlx5 ecn/roce_rp knobs
//     np: {min_time_between_cnps: 4}                        # mlx5 ecn/roce_np knobs
//   mtu: 9100
//   rdma_cm: {tos: 106, roce_mode: 2}
//
//   auto p = roce::parse_roce_profile(text, "fabric/roce.yaml");
//   if (!p) die(p.error().message);   // "fabric/roce.yaml:7: ets: TC 9 is not 0..7"
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"

namespace weft::roce {

enum class RoceMode : uint8_t { kLossless, kLossy };
enum class Trust : uint8_t { kDscp, kPcp };
// kVendor: a host NIC's own scheduling (iproute2 dcb prints "vendor"; mlx5 starts every TC
// so), read from devices, never written by a profile.
enum class Tsa : uint8_t { kEts, kStrict, kVendor };
const char* roce_mode_name(RoceMode m);
const char* trust_name(Trust t);
const char* tsa_name(Tsa t);

struct EtsTc {
  Tsa tsa = Tsa::kEts;
  int bw = 0;  // percent, for kEts
  bool operator==(const EtsTc&) const = default;
};

// Switch WRED thresholds on one queue, ECN marking (not drop) between them.
struct EcnThresholds {
  uint64_t kmin = 0;  // bytes
  uint64_t kmax = 0;  // bytes
  int pmax = 0;       // marking probability at kmax, percent
  bool operator==(const EcnThresholds&) const = default;
};

struct PfcWatchdog {
  bool enable = true;
  int detection_ms = 200;
  int restoration_ms = 200;
  std::string action = "drop";  // drop | forward | alert
  bool operator==(const PfcWatchdog&) const = default;
};

// The mlx5 ecn/roce_rp and ecn/roce_np knobs with the values the driver starts with.
struct DcqcnKnob {
  const char* name;
  bool rp;  // roce_rp (else roce_np)
  int64_t lo, hi, dflt;
};
const std::vector<DcqcnKnob>& dcqcn_knobs();

struct RoceProfile {
  RoceMode mode = RoceMode::kLossless;
  Trust trust = Trust::kDscp;
  int roce_dscp = 26, roce_prio = 3;
  int cnp_dscp = 48, cnp_prio = 6;
  std::array<uint8_t, 64> dscp_prio{};  // DSCP -> priority
  std::array<uint8_t, 8> prio_tc{};     // priority -> TC
  uint8_t pfc_mask = 0;                 // bit p: PFC on priority p
  PfcWatchdog watchdog;
  std::array<EtsTc, 8> ets{};
  std::map<int, EcnThresholds> ecn;      // TC -> thresholds
  uint8_t dcqcn_mask = 0;                // bit p: NP and RP enabled on priority p
  std::map<std::string, int64_t> dcqcn;  // knob name -> value, every knob of dcqcn_knobs()
  int mtu = 9100;
  int tos = 106;         // rdma_cm default ToS: DSCP << 2 | ECN bits
  int roce_version = 2;  // rdma_cm default RoCE mode
  // Where each top-level key was set ("ets" -> 12), for findings about the file.
  std::string source;
  std::map<std::string, int> lines;
  std::string where(const std::string& key) const;  // "file:line" or "profile"
};

// NVIDIA's lossless RoCE reference: DSCP trust; DSCP 26 -> priority 3 -> TC3 (ETS 50 %);
// CNP DSCP 48 -> priority 6 -> TC6 strict; everything else TC0 (ETS 50 %); PFC on
// priority 3 only; ECN on TC3 at 150 KB / 1.5 MB / 100 %.
RoceProfile default_roce_profile();

// `text` is the file's contents, `source` its name for messages. All errors are
// reported, one per line of the message.
Result<RoceProfile> parse_roce_profile(std::string_view text, const std::string& source);
Result<RoceProfile> load_roce_profile(const std::string& path);

// "150KB" -> 150000, "1.5MB" -> 1500000, "64KiB" -> 65536, "4096" -> 4096.
bool parse_bytes(std::string_view s, uint64_t* out);
// "100G" -> 100000, "400g" -> 400000, "25000" -> 25000 (Mb/s, as SONiC writes speeds).
bool parse_speed_mbps(std::string_view s, uint64_t* out);
// "5m", "300m", "5" -> metres.
bool parse_length_m(std::string_view s, uint64_t* out);
// "200ms", "200" -> milliseconds.
bool parse_ms(std::string_view s, uint64_t* out);

}  // namespace weft::roce
