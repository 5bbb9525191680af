// weft/cc/view.hpp — congestion control as others see it, by value: each device's state,
// the last pass's counts, and the congestion its logs show (ports and flows, ranked).
// No MADs: REST and the daemon read these; weft/cc/manager.hpp is the manager itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/cc/wire.hpp"
#include "weft/types.hpp"

namespace weft::cc {

enum class DeviceState : uint8_t {
  kUnknown,      // not asked yet
  kConfigured,   // holds what the options ask
  kUnavailable,  // no CC (no answer, an error status, not a CC answer): never written
  kLocked,       // another CC_Key: asked again next sweep
  kFailed,       // a write or read failed this sweep: tried again next sweep
};
const char* state_name(DeviceState s);

struct CcDeviceView {
  bool is_switch = false;
  DeviceState state = DeviceState::kUnknown;
  std::string why;  // for unavailable, locked and failed
  CongestionInfo info;
  uint16_t key_violations = 0;  // as last read
  uint64_t sets = 0;            // Sets this device took
};
using DeviceKey = std::pair<uint64_t, PortNum>;  // node GUID, port (0: a switch)

struct CcSweep {
  size_t switches = 0, cas = 0;  // devices in the fabric
  size_t configured = 0, unavailable = 0, locked = 0, failed = 0;
  uint64_t mads = 0;          // CC MADs sent (retries not counted)
  uint64_t mads_written = 0;  // of them Sets
  // Every configured device holds what the options ask (as its replies said).
  bool verified = false;
  // "C of N devices configured, U without CC, L locked by another CC_Key, F failed; M MADs
  // (S Sets)", as the log and weft sim say it.
  std::string summary() const;
};

// A port whose device logged congestion: a switch port that marked packets (its share of
// the switch's LogEventsCounter, by the log entries whose DLID the switch forwards by
// it), or a CA port that reacted (its ThresholdEventCounter).
struct PortCongestion {
  uint64_t guid = 0;  // node GUID
  PortNum port = 0;
  bool is_switch = false;
  uint64_t log_events = 0;        // in the last read of the logs
  uint64_t log_events_total = 0;  // since weft first read them
  bool marking = false;           // a switch port in the last read's PortMap
};

// A flow the logs named: a switch's entry (SLID, DLID, SL) or a CA's (its LID, the remote
// LID, SL, the QPs).
struct FlowCongestion {
  uint16_t slid = 0, dlid = 0;
  uint8_t sl = 0;
  uint64_t count = 0;                                   // log entries naming it in the last read
  uint64_t total = 0;                                   // since weft first read the logs
  std::vector<std::pair<uint64_t, PortNum>> marked_at;  // switch ports, last read
  std::vector<std::pair<uint32_t, uint32_t>> qps;       // (local, remote), last read
};

// What one read of the logs found.
struct CcLogRead {
  size_t devices = 0, read = 0, failed = 0;  // configured devices, logs read, not read
  uint64_t mads = 0;
  uint64_t events = 0;                // logged events, all devices
  std::vector<PortCongestion> ports;  // the ports with events, ranked (as CcView's)
  size_t flows = 0;                   // flows named
  // Devices whose main setting no longer read back as written: a pass is due.
  size_t drifted = 0;
};

// Every ranking: most events in the last read first, then the most since the first.
struct CcView {
  std::map<DeviceKey, CcDeviceView> devices;
  std::optional<CcSweep> pass;        // the last pass's counts
  std::vector<PortCongestion> ports;  // with events, ranked
  std::vector<FlowCongestion> flows;  // ranked; the most recent kMaxFlows kept
  static constexpr size_t kMaxFlows = 4096;
  uint64_t log_reads = 0;
  size_t last_read_devices = 0, last_read_failed = 0;  // configured devices; logs not read
  int64_t last_read_unix_s = 0;
  double interval_s = 0;  // between the last two reads (0: one or none)
};

}  // namespace weft::cc
