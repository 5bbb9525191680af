// weft/sm/sm_peers.hpp — this SM among the subnet's other SMs (IBTA vol. 1, 14.4): its
// SMInfo role (SmRole, pure logic), the other SMs the last heavy sweep found, and every
// MAD between SMs: the SMInfo Gets that read them (at a heavy sweep, a light sweep and a
// standby's poll), HANDOVER and ACKNOWLEDGE, trap 144 to a master, and the answer to
// another SM's SMInfo Get or Set. The SubnetManager decides when; SmPeers sends.
//
//   SmPeers peers(eng, transport, {.sm_key = 1, .priority = 5, .polling_retries = 4}, guid);
//   run.sms = SmPeers::find(discovered, self);   // then peers.read(run.sms, keep)
//   auto seen = peers.recheck();                 // a light sweep's look at them
//   peers.poll([](SmPeers::Poll p) { ... });     // a standby's poll of its master
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "weft/mad/mad_engine.hpp"
#include "weft/sm/discovery.hpp"
#include "weft/sm/sm_role.hpp"

namespace weft::sm {

class SmPeers {
 public:
  struct Config {
    uint64_t sm_key = 1;      // SMInfo:SM_Key (0: any SM's answer counts)
    uint8_t priority = 0;     // sm_priority
    int polling_retries = 4;  // unanswered polls before a standby takes over
  };
  SmPeers(mad::MadEngine& eng, mad::Transport& t, Config c, Guid port_guid);
  void configure(Config c);

  SmRole& role() { return role_; }
  const SmRole& role() const { return role_; }
  // This SM's port, as the last discovery found it (the LID as the LID assignment set it).
  Guid guid() const { return guid_; }
  Lid lid() const { return lid_; }
  void set_self(Guid guid, Lid lid);
  void set_lid(Lid lid) { lid_ = lid; }
  // The other SMs the last heavy (or light) sweep found, with what each said.
  const std::vector<RemoteSm>& sms() const { return sms_; }
  void set_sms(std::vector<RemoteSm> sms) { sms_ = std::move(sms); }
  // SMInfo:ActCount: the SMPs this SM has sent.
  uint32_t act_count() const { return static_cast<uint32_t>(eng_.stats().sent); }

  // Every other SM port a discovery found (CapabilityMask.IsSM), not yet read.
  static std::vector<RemoteSm> find(const Discovered& d, Guid self);
  // An SMInfo Get to each of `sms`; the answers land in them when the engine is idle
  // (`keep` holds them alive until then).
  void read(std::vector<RemoteSm>& sms, std::shared_ptr<void> keep);
  // Logs what each SM said (or why it did not).
  static void log(const std::vector<RemoteSm>& sms);

  // A light sweep's look at the SMs found (as OpenSM's light sweep polls them): when the
  // engine is idle, `sms` holds their answers and `changed` is set where one became
  // master or now outranks this SM (a handover either way: a heavy sweep).
  struct Recheck {
    std::vector<RemoteSm> sms;
    bool changed = false;
  };
  std::shared_ptr<Recheck> recheck();

  // The HANDOVER to `to`; when the engine is idle, the result holds its failure, if any.
  std::shared_ptr<std::optional<Error>> send_handover(const RemoteSm& to, const std::string& why);
  // Trap 144 (local changes: IsSM now set) to a master, so that it sweeps, finds this SM
  // and hands over if this one outranks it.
  void send_trap144(const RemoteSm& to);

  // Another SM's SMInfo Get or Set, answered. Returns what a Set that took changed:
  // whether a heavy sweep is due and the event for the stream; nullopt for a Get or a
  // refused Set.
  struct Control {
    bool sweep = false;
    nlohmann::json event;
  };
  std::optional<Control> on_sm_info(const mad::Smp& s, const mad::InMad& in);

  // One poll of the SM this one watches (STANDBY: the master; MASTER: a lower master
  // that has yet to hand over). `done` with `gone` when it is gone or yielded (a heavy
  // sweep is due) and the polled SM's name. Nothing is sent (done(false)) when there is
  // none to poll.
  struct Poll {
    bool gone = false;
    std::string name;
  };
  void poll(std::function<void(Poll)> done);

 private:
  // An SMInfo Get presenting this SM's SMInfo and SM_Key, and whether an answer
  // carries our SM_Key.
  mad::SmpRequest sm_info_get(const mad::DrPath& path) const;
  bool key_matches(const mad::SmInfo& theirs) const;

  mad::MadEngine& eng_;
  mad::Transport& t_;
  Config c_;
  SmRole role_;
  std::vector<RemoteSm> sms_;
  Guid guid_;
  Lid lid_;
};

}  // namespace weft::sm
