// weft/simulator/sim_cc.hpp — congestion-control agents (class 0x21, IBTA vol. 1 Annex
// A10) for the in-process simulator: one per switch (port 0) and per CA port, holding
// the attributes weft/cc/wire.hpp encodes, with the CC_Key checked as the annex asks.
//
// weft's reading of the annex where the simulator must choose (and a manager must cope):
// - a device with a CC_Key other than 0 discards a MAD carrying another key, counts a
//   CC_KeyViolation and, when CC_KeyLeasePeriod is not 0 and the protect bit is set,
//   starts the lease: a lease that runs out with no MAD carrying the right key clears
//   the key (no protection), as an M_Key lease clears the M_Key's protection;
// - a device without an agent (CcSupport::kNone) never answers (no CC at all, as a MAD
//   to a class nobody registered); kRefuses answers status 0x0004 (class unsupported);
// - reading CongestionLog clears it (entries and counter).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "weft/cc/wire.hpp"
#include "weft/mad/clock.hpp"
#include "weft/mad/mad.hpp"

namespace weft::simulator {

// kMisdispatch: as ibsim, which answers class 0x21 from its SMP handlers (IBSIM.md) and
// copies no data in or out: every answer is the request echoed with status 0.
// kForgetful: a real CongestionInfo, but Sets answered with what the device held before,
// changing nothing (a reply that does not read back what was written).
enum class CcSupport : uint8_t { kNone, kRefuses, kAgent, kMisdispatch, kForgetful };

struct CcDevice {
  CcSupport support = CcSupport::kNone;
  bool is_switch = false;
  uint8_t ports = 0;  // a switch's ports (for SwitchPortCongestionSetting blocks)
  cc::CongestionInfo info;
  cc::CongestionKeyInfo key;
  std::optional<mad::TimePoint> lease_end;  // a violation started the lease
  cc::SwitchCongestionSetting sw;
  std::vector<cc::SwitchPortCongestionBlock> port_blocks;
  cc::CaCongestionSetting ca;
  std::vector<cc::CongestionControlTableBlock> cct;  // info.control_table_cap blocks
  cc::CongestionLog log;
  uint64_t gets = 0, sets = 0;  // answered
  // A switch that keeps SwitchCongestionSetting its own way: the mask bits past its ports
  // cleared, while its Set reply echoes what was written.
  bool normalises = false;
};

class SimCc {
 public:
  // Makes device (node, port): a switch's is port 0's.
  CcDevice& add(uint32_t node, uint8_t port, bool is_switch, uint8_t ports, CcSupport s,
                uint8_t table_cap);
  CcDevice* find(uint32_t node, uint8_t port);
  const CcDevice* find(uint32_t node, uint8_t port) const;
  // The answer of device (node, port) to request `req` at `now`: nullopt when it does
  // not answer (no agent, a wrong key).
  std::optional<mad::Gmp> handle(uint32_t node, uint8_t port, const mad::Gmp& req,
                                 mad::TimePoint now);
  uint64_t mads() const { return mads_; }  // CC MADs that reached a device

  // The TimeStamp clock at `now`: units of 1.024 us (1,024 ns), wrapping.
  static uint32_t time_stamp(mad::TimePoint now) {
    return static_cast<uint32_t>(now.count() / 1024);
  }

  // Congestion, as SimFabric::congest makes it. Whether switch `node` marks packets
  // leaving by `port`: a real agent (kAgent) whose threshold for the port is not 0 (the
  // port's SwitchPortCongestionSetting element where valid and of the congestion type,
  // else SwitchCongestionSetting's; weft reads 0 as "no marking", as OpenSM's option
  // text says).
  bool marks(uint32_t node, uint8_t port) const;
  // One event in switch `node`'s log at `port`: LogEventsCounter, PortMap and the entry
  // (the last 15 kept, as the log holds them).
  void log_switch(uint32_t node, uint8_t port, const cc::SwitchLogEntry& e);
  // Whether CA port (node, port) reacts to congestion on `sl` (a real agent whose
  // CACongestionSetting control map has the SL).
  bool reacts(uint32_t node, uint8_t port, uint8_t sl) const;
  // One threshold event in the CA port's log (its counter, the SL in the event map, the
  // entry; the last 13 kept).
  void log_ca(uint32_t node, uint8_t port, const cc::CaLogEntry& e);

 private:
  std::map<std::pair<uint32_t, uint8_t>, CcDevice> dev_;
  uint64_t mads_ = 0;
};

}  // namespace weft::simulator
