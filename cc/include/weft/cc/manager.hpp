// weft/cc/manager.hpp — the congestion-control manager: after a sweep, every switch and
// CA port of the fabric gets the settings of its CcOptions (congestion_control), over
// GSI through the SM's MAD engine, LID routed, in the GMP window behind every SMP and at
// most cc_max_outstanding_mads at once. Beyond OpenSM's manager, which only ever sends
// Sets:
// - CongestionInfo is read first, once per device, with no retry: a device that does
//   not answer, answers with an error status, or answers with something that is no
//   CongestionInfo (its reserved bytes not zero: ibsim answers class 0x21 from its SMP
//   handlers, IBSIM.md) is CC-unavailable, logged once per device kind (vendor, device
//   ID), and never written;
// - what a device holds is read, compared and only what differs written (diff-only), and
//   a Set whose reply does not carry what was written makes the device unavailable too;
// - the CC_Key (cc_key) is set and carried; a device that ignores it (another key) is
//   reported once and tried again in each sweep (with a key set, a device that does not
//   answer CongestionInfo at all may be one: it is asked once a sweep, not given up on);
// - every switch port's SwitchPortCongestionSetting is set (CcOptions::port_element);
// - a CA's table is cut to its ControlTableCap.
// What it holds is trusted until the device leaves the fabric or its LID changes; the
// next sweep of an unchanged fabric sends nothing.
//
//   CcManager cc(engine, opts);
//   cc.start(fabric, [](Result<CcSweep> r) { ... r->configured ... });
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "weft/cc/options.hpp"
#include "weft/cc/wire.hpp"
#include "weft/fabric/fabric.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/result.hpp"

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

class CcManager {
 public:
  CcManager(mad::MadEngine& eng, CcOptions o);
  // New settings: the next pass compares what each device holds with them and writes what
  // differs (nothing is re-read).
  void set_options(CcOptions o);
  const CcOptions& options() const { return opts_; }
  // One pass over `fabric` (a sweep's, with its LIDs); `done` runs when the last reply
  // (or timeout) is in. Fails (through `done`) while a pass is under way.
  void start(std::shared_ptr<const fabric::Fabric> fabric,
             std::function<void(Result<CcSweep>)> done);
  bool running() const { return pass_ != nullptr; }
  std::map<DeviceKey, CcDeviceView> view() const;

 private:
  struct Device {
    CcDeviceView v;
    Lid lid;
    uint8_t ports = 0;
    uint32_t vendor_id = 0;
    uint16_t device_id = 0;
    bool info_read = false;  // its CongestionInfo answered
    std::optional<CongestionKeyInfo> key;
    std::optional<SwitchCongestionSetting> sw;
    std::vector<std::optional<SwitchPortCongestionBlock>> port_blocks;
    std::optional<CaCongestionSetting> ca;
    std::vector<std::optional<CongestionControlTableBlock>> cct;
  };
  struct Pass;
  using Done = std::function<void(Result<mad::Gmp>)>;
  void send(const std::shared_ptr<Pass>& p, uint8_t method, uint16_t attr, uint32_t mod,
            const Data& data, DeviceKey k, int retries, Done done);
  void pump();
  void visit(const std::shared_ptr<Pass>& p, DeviceKey k);
  void key_step(const std::shared_ptr<Pass>& p, DeviceKey k);
  void settings_step(const std::shared_ptr<Pass>& p, DeviceKey k);
  // Where a device keeps what it holds of one attribute (block).
  template <class T>
  using Slot = std::function<std::optional<T>&(Device&)>;
  // Reads `attr` (block `mod`) where the slot is unknown, then writes `want` where it
  // differs; `then` runs after, with false when the device failed.
  template <class T>
  void converge(const std::shared_ptr<Pass>& p, DeviceKey k, uint16_t attr, uint32_t mod,
                const T& want, Slot<T> slot, T (*decode)(const Data&),
                std::function<void(bool)> then);
  void unavailable(DeviceKey k, std::string why);
  void locked(DeviceKey k, std::string why);
  void failed(DeviceKey k, std::string why);
  void release(const std::shared_ptr<Pass>& p);

  mad::MadEngine& eng_;
  CcOptions opts_;
  std::map<DeviceKey, Device> dev_;
  // Device kinds (vendor, device ID, switch or not) whose unavailability was logged.
  std::set<std::tuple<uint32_t, uint16_t, bool>> told_;
  std::shared_ptr<Pass> pass_;
  std::deque<std::function<void()>> queue_;  // MADs waiting for room in the window
  uint32_t inflight_ = 0;
};

}  // namespace weft::cc
