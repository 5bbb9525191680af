// weft/sm/traps.hpp — the Notice a trap carries (IBTA vol. 1, 14.2.5.1 and the trap
// table of 14.3.12), decoded by number, and what each sets off in the SM:
//   128          link state change at a switch: a heavy sweep
//   129-131      local link integrity, excessive buffer overrun, flow-control update
//                watchdog: counted per port, reported; no sweep
//   144          capability mask, node description, link speed/width enable or SM
//                priority changed: a heavy sweep (an IsSM change is another SM)
//   145          system image GUID changed: a heavy sweep
//   256-259      bad M_Key, P_Key, Q_Key, switch P_Key violation: security events,
//                with the offender; no sweep
// Anything else (vendor traps, numbers not listed) is logged and counted.
//
//   auto t = decode_trap(smp.data);   // never fails: unknown layouts keep the raw number
//   if (t.sweep()) ...
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "weft/mad/mad.hpp"

namespace weft::sm {

struct Trap {
  bool generic = false;
  uint8_t type = 0;       // 0 fatal, 1 urgent, 2 security, 3 subnet management, 4 info
  uint32_t producer = 0;  // generic: 1 CA, 2 switch, 3 router, 4 class manager
  uint16_t number = 0;    // generic: the trap number; vendor: the device ID
  uint32_t vendor = 0;    // vendor traps: the vendor ID
  Lid issuer;
  // By number (0 where the trap does not carry it):
  Lid lid;                // 128: the switch; 129-131, 144, 145, 256: the port's LID; 257-259: LID1
  Lid lid2;               // 257-259: the other end
  PortNum port = 0;       // 129-131, 259: the port
  uint32_t cap_mask = 0;  // 144
  uint16_t change_flags = 0;   // 144: 0x1 node description, 0x2 width, 0x4 speed, 0x8 SM priority
  bool local_changes = false;  // 144
  uint64_t guid = 0;           // 145: the new system image GUID
  uint64_t key = 0;            // 256: the M_Key; 257-259: the P_Key or Q_Key
  uint8_t method = 0;          // 256
  uint16_t attr_id = 0;        // 256
  uint32_t attr_mod = 0;       // 256
  // 256, the offender of a directed-route SMP: its DrSLID and the return path from the
  // trapping port back to it (DRNotice set); hops = 0 and no path for a LID-routed one.
  bool dr_notice = false;
  bool dr_truncated = false;
  Lid dr_slid;
  mad::DrPath dr_return;
  uint32_t qp1 = 0, qp2 = 0;  // 257-259
  uint8_t sl = 0;             // 257-259

  // What it sets off.
  bool sweep() const;     // a heavy sweep is due
  bool security() const;  // 256-259
  bool link_integrity() const { return generic && number >= 129 && number <= 131; }
  std::string name() const;      // "link state change", ...
  std::string describe() const;  // one line for the log, with the numbers
  nlohmann::json to_json() const;
};

Trap decode_trap(const mad::SmpData& notice);

}  // namespace weft::sm
