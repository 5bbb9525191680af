// weft/sm/sm_role.hpp — which SM is master (IBTA vol. 1, 14.4): the SMInfo state
// machine (NOTACTIVE, DISCOVERING, STANDBY, MASTER), what this SM answers to another
// SM's SMInfo Get and Set, what it decides once a sweep has read every other SM's
// SMInfo, and the standby's polling of the master. Pure logic: the SubnetManager
// sends the MADs and feeds the answers in.
//
//   SmRole role({.sm_key = 1, .priority = 5, .guid = port_guid});
//   auto d = role.after_discovery(others);   // kMaster, kStandby, kHandover, kWaitForHandover
//   auto a = role.on_request(smp, info);     // the GetResp to send, and what changed
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/mad/mad.hpp"

namespace weft::sm {

// SMInfo Set AttributeModifiers (IBTA 14.2.5.13).
enum class SmControl : uint32_t {
  kHandover = 1,
  kAcknowledge = 2,
  kDisable = 3,
  kStandby = 4,
  kDiscover = 5,
};
const char* sm_control_name(uint32_t attr_mod);

// True when the SM (prio_a, a) outranks (prio_b, b): the higher priority, then the
// lower port GUID (IBTA 14.4.1.1).
bool sm_outranks(uint8_t prio_a, Guid a, uint8_t prio_b, Guid b);

// Another SM port found by a sweep (CapabilityMask.IsSM) and what its SMInfo said.
struct RemoteSm {
  Guid guid;         // its port
  Lid lid;           // its port's LID, as the fabric holds it
  mad::DrPath path;  // a directed route to it
  std::string name;  // "node description"/port, for logs and the API
  bool answered = false;
  bool key_ok = false;  // its SM_Key was ours (or we have none)
  mad::SmInfo info;
  std::string error;  // why it did not answer
};

class SmRole {
 public:
  struct Config {
    uint64_t sm_key = 1;  // OpenSM's default
    uint8_t priority = 0;
    Guid guid;  // this SM's port
  };
  explicit SmRole(Config c) : c_(c) {}
  void configure(Config c) { c_ = c; }
  const Config& config() const { return c_; }

  mad::SmState state() const { return state_; }
  // The SM this one polls (STANDBY: the master; MASTER: a master waiting to hand over).
  const std::optional<RemoteSm>& polled() const { return polled_; }
  // Set when the state has left STANDBY for a takeover: LIDs come from the fabric.
  bool coming_out_of_standby() const { return out_of_standby_; }
  void clear_coming_out_of_standby() { out_of_standby_ = false; }
  // Changes whenever another SM may have programmed the fabric since: each change of
  // state, a master that waits for a lower master's HANDOVER, and a HANDOVER taken from
  // another master. What this SM knows of the devices' contents holds only within one
  // epoch as master (a new master trusts nothing it cached).
  uint64_t epoch() const { return epoch_; }

  struct Decision {
    enum Kind {
      kMaster,           // program the subnet
      kStandby,          // another SM is master or outranks this one: poll it
      kHandover,         // this master yields to `peer`: send it HANDOVER
      kWaitForHandover,  // another (lower) master still runs: poll it, do not program
    } kind = kMaster;
    std::optional<RemoteSm> peer;
    std::string why;
  };
  // With every other SM's SMInfo as the sweep read it (unanswered and key-mismatched
  // ones are ignored). kStandby changes the state at once; kHandover takes effect with
  // handover_sent() once the HANDOVER was answered.
  Decision after_discovery(const std::vector<RemoteSm>& sms);
  void handover_sent(const RemoteSm& to);  // MASTER -> STANDBY, polling `to`
  void become_master();                    // DISCOVERING -> MASTER (after kMaster)

  // Another SM's SMInfo Get or Set (`req` is its SMInfo payload).
  struct Answer {
    uint16_t status = 0;  // 0, or 0x001C (invalid attribute/modifier, as OpenSM)
    mad::SmInfo info;     // the GetResp payload
    bool sweep = false;   // a heavy sweep is due (HANDOVER taken, DISCOVER, a master's HANDOVER)
    bool acknowledge = false;  // send ACKNOWLEDGE back to the HANDOVER's sender
    std::string log;           // what happened, for the log
  };
  // `authenticated`: the requester passed the M_Key check (always, without M_Key).
  Answer on_request(uint8_t method, uint32_t attr_mod, const mad::SmInfo& req, uint32_t act_count,
                    bool authenticated = true);
  // What this SM says about itself (Get payloads, HANDOVER, ACKNOWLEDGE).
  mad::SmInfo self(uint32_t act_count, bool with_key) const;

  // The polled SM answered (`info`) or did not (nullopt). Returns true when it is
  // gone: more than `retries` polls in a row failed, or it no longer outranks a
  // standby; the state is then DISCOVERING and a heavy sweep is due.
  bool poll_result(const std::optional<mad::SmInfo>& info, int retries);
  int failed_polls() const { return failed_; }

 private:
  Config c_;
  void set_state(mad::SmState s) {
    if (s != state_) ++epoch_;
    state_ = s;
  }
  mad::SmState state_ = mad::SmState::kDiscovering;
  uint64_t epoch_ = 0;
  std::optional<RemoteSm> polled_;
  int failed_ = 0;
  bool out_of_standby_ = false;
};

}  // namespace weft::sm
