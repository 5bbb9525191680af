// The port programmer: each port's PortInfo, and its way to ACTIVE.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "programmer.hpp"

namespace weft::sm {

// PortInfo: LIDs, SM LID, neighbour MTU, operational VLs, P_Key enforcement on switch
// ports facing end ports, HOQLife and VLStallCount, VLHighLimit under QoS,
// ClientReregister; INIT to ARMED, then ARMED to ACTIVE.
class PortProgrammer final : public Programmer {
 public:
  PortProgrammer(mad::MadEngine& eng, const SmOptions& o) : eng_(eng), opts_(o) {}
  std::string_view name() const override { return "ports"; }
  // kConfigure: configure(); kActivate: activate(); kCount: count_active().
  void step(Step s, SweepRun& run) override;
  // What a port was seen to drop from a Set is a fact of the device, not held state;
  // a new term owes every end port a ClientReregister again.
  void forget_all() override { reregistered_.clear(); }
  void configure(SweepRun& run);
  void activate(SweepRun& run);
  // After activate()'s MADs: the linked and ACTIVE port ends, into the report.
  void count_active(SweepRun& run) const;
  // Whether switch port p (facing an end port) filters P_Keys this sweep.
  bool enforces(const SweepRun& run, fabric::NodeIndex n, PortNum p) const;
  // Which QoS settings a port takes (CA, router, switch port 0 or external).
  const qos::QosPortConfig& qos_for(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p) const;

 private:
  static uint64_t port_key(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p);
  // Whether end port p of node n is owed a ClientReregister in this Set (see configure).
  bool owes_rereg(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p, const mad::PortInfo& cur,
                  Lid lid, Lid sm_lid) const;
  static bool took(const mad::PortInfo& want, const mad::PortInfo& got);
  // A switch port weft leaves down (disabled: PortPhysicalState 3) or lets up again
  // (Polling, 2): the Set, and true when the port is handled (nothing else to set).
  bool set_phys_state(SweepRun& run, fabric::NodeIndex n, PortNum p);
  static constexpr uint8_t kPhysPolling = 2, kPhysDisabled = 3;
  void confirm(SweepRun& run, fabric::NodeIndex n, PortNum p, const mad::PortInfo& want,
               const Error& why, const char* what, std::function<void(const mad::PortInfo&)> ok);
  void note_ignored(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p, uint64_t key,
                    const mad::PortInfo& want, const mad::PortInfo& got, SweepReport& rep);
  mad::MadEngine& eng_;
  const SmOptions& opts_;
  // PortInfo fields a port was seen to drop from a Set (ibsim keeps none of them: it
  // has no M_Key either).
  static constexpr uint8_t kIgnoresEnforcement = 1, kIgnoresHighLimit = 2, kIgnoresMKey = 4,
                           kIgnoresHoqLife = 8, kIgnoresStallCount = 16;
  std::unordered_map<uint64_t, uint8_t> ignores_;
  // End ports (port_key) told to re-register in this master term.
  std::unordered_set<uint64_t> reregistered_;
};

}  // namespace weft::sm
