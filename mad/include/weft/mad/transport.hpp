// weft/mad/transport.hpp — the seam between the SM and whatever carries its
// MADs: libibumad on a real (or ibsim-simulated) HCA port, or the in-process
// simulator. The SM cannot tell which.
//
//   transport.send(mad, SendAddr::directed());
//   auto in = transport.receive(std::chrono::milliseconds(5));   // one MAD or none
#pragma once

#include <optional>
#include <span>
#include <string>

#include "weft/mad/clock.hpp"
#include "weft/mad/mad.hpp"

namespace weft::mad {

struct SendAddr {
  Lid dlid{Lid::kPermissive};  // permissive for directed-route SMPs
  uint32_t qpn = 0;            // 0 for SMPs; the requester's QP for GSI answers
  uint32_t qkey = 0;           // GSI: 0x80010000
  uint16_t pkey_index = 0;
  uint8_t sl = 0;
  // How long the carrier should wait for the response before reporting a timeout
  // (0 = this MAD expects no response, e.g. a GetResp we send).
  Duration response_timeout{0};
  static SendAddr directed() { return {}; }
  static SendAddr lid(Lid l) {
    SendAddr a;
    a.dlid = l;
    return a;
  }
  // A GSI (QP1) message to a requester's QP: an answer or a Report.
  static SendAddr gsi(Lid l, uint32_t qpn, uint16_t pkey_index, uint8_t sl) {
    SendAddr a;
    a.dlid = l;
    a.qpn = qpn;
    a.qkey = 0x80010000;  // the well-known GSI Q_Key
    a.pkey_index = pkey_index;
    a.sl = sl;
    return a;
  }
};

struct InMad {
  MadBuf mad{};
  size_t len = 0;
  Lid slid;           // source LID (0 when not known, e.g. directed route)
  uint32_t sqpn = 0;  // source QP (GSI requests: where the answer goes)
  uint8_t sl = 0;
  uint16_t pkey_index = 0;
  bool send_timed_out = false;  // the carrier reports our own send `mad` got no response
};

struct LocalPort {
  std::string ca;
  int port = 0;
  Guid port_guid;
  Lid lid;
  Lid sm_lid;
  int state = 0;  // PortState as the carrier sees it
  int phys_state = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  [[nodiscard]] virtual Result<void> send(const MadBuf& mad, const SendAddr& to) = 0;
  // A GSI answer of any length: one MAD, or an RMPP-active message the carrier
  // segments (the kernel on a real port).
  [[nodiscard]] virtual Result<void> send_long(std::span<const uint8_t> mad,
                                               const SendAddr& to) = 0;
  // Waits at most `max_wait` (on clock()) for one incoming MAD; nullopt if none came.
  [[nodiscard]] virtual Result<std::optional<InMad>> receive(Duration max_wait) = 0;
  virtual Clock& clock() = 0;
  virtual LocalPort local_port() const = 0;
  // Advertise (or stop advertising) this port as an SM: PortInfo:CapabilityMask.IsSM.
  [[nodiscard]] virtual Result<void> set_is_sm(bool on) = 0;
};

}  // namespace weft::mad
