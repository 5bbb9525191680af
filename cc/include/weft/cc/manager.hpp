// weft/cc/manager.hpp — the congestion-control manager: after a sweep, every switch and
// CA port of the fabric gets the settings of its CcOptions (congestion_control), over
// GSI through the SM's MAD engine, LID routed, in the GMP window behind every SMP and at
// most cc_max_outstanding_mads at once. Beyond OpenSM's manager, which only ever sends
// Sets:
// - CongestionInfo is read first, once per device, with no retry: a device that does
//   not answer, answers with an error status, or answers with something that is no
//   CongestionInfo (its reserved bytes not zero: the Get carries a marker there, which
//   ibsim, answering class 0x21 from its SMP handlers, echoes back) is CC-unavailable, logged once
//   per device kind (vendor, device ID), and never written;
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
#include "weft/cc/view.hpp"
#include "weft/cc/wire.hpp"
#include "weft/fabric/fabric.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/result.hpp"

namespace weft::cc {

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

  // The port switch `guid` forwards `dlid` by (0: not known): how a switch log's entries
  // are put on its ports.
  using Egress = std::function<PortNum(uint64_t guid, uint16_t dlid)>;
  // Reads the CongestionLog of every configured device of the last pass (reading clears
  // it) and ranks the ports and flows it names; `done` runs when the last reply is in.
  // Beside each log, the device's SwitchCongestionSetting or CACongestionSetting is read
  // back: a device that no longer holds it (CcLogRead::drifted) is failed, what it holds
  // forgotten, and the next pass rewrites what differs. Fails (through `done`) while a
  // pass or read is under way.
  void read_logs(Egress egress, int64_t now_unix_s, std::function<void(Result<CcLogRead>)> done);
  // Devices, the last pass and the congestion the logs showed (immutable; a new one after
  // each pass and read).
  std::shared_ptr<const CcView> published() const { return published_; }

 private:
  struct Device {
    CcDeviceView v;
    Lid lid;
    uint8_t ports = 0;
    uint8_t lmc = 0;       // a CA port's: the LIDs its log may name as its own
    double packet_ns = 0;  // a CA port's packet time (a generated table is made for it)
    uint32_t vendor_id = 0;
    uint16_t device_id = 0;
    bool info_read = false;  // its CongestionInfo answered
    std::optional<CongestionKeyInfo> key;
    std::optional<SwitchCongestionSetting> sw;
    std::vector<std::optional<SwitchPortCongestionBlock>> port_blocks;
    std::optional<CaCongestionSetting> ca;
    std::vector<std::optional<CongestionControlTableBlock>> cct;
    // The main setting drifted (check_held): the pass that rewrites it reads it back.
    bool confirm = false;
    bool log_failed_told = false;  // CC-0005 said for this device
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
  struct LogRead;
  void take_log(LogRead& lr, DeviceKey k, const CongestionLog& log);
  void check_held(const std::shared_ptr<Pass>& p, DeviceKey k);
  void confirm_held(const std::shared_ptr<Pass>& p, DeviceKey k, std::function<void(bool)> next);
  void finish_read(LogRead& lr);
  void publish();

  mad::MadEngine& eng_;
  CcOptions opts_;
  std::map<DeviceKey, Device> dev_;
  // Device kinds (vendor, device ID, switch or not) whose unavailability was logged.
  std::set<std::tuple<uint32_t, uint16_t, bool>> told_;
  std::shared_ptr<Pass> pass_;
  std::deque<std::function<void()>> queue_;  // MADs waiting for room in the window
  uint32_t inflight_ = 0;
  // What the logs showed, by port and by flow (SLID, DLID, SL).
  struct PortAcc {
    bool is_switch = false;
    uint64_t last = 0, total = 0;
    bool marking = false;
  };
  struct FlowAcc {
    uint64_t last = 0, total = 0;
    uint64_t seen = 0;  // the read that last named it
    std::vector<std::pair<uint64_t, PortNum>> marked_at;
    std::vector<std::pair<uint32_t, uint32_t>> qps;
  };
  std::map<DeviceKey, PortAcc> ports_;
  std::map<std::tuple<uint16_t, uint16_t, uint8_t>, FlowAcc> flows_;
  uint64_t log_reads_ = 0;
  size_t last_read_devices_ = 0, last_read_failed_ = 0;
  int64_t last_read_unix_s_ = 0;
  double interval_s_ = 0;
  std::optional<CcSweep> last_pass_;
  std::shared_ptr<const CcView> published_ = std::make_shared<CcView>();
};

}  // namespace weft::cc
