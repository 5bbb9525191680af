// weft/mad/umad_transport.hpp — Transport over libibumad: a real HCA port, or
// ibsim when run under LD_PRELOAD=libumad2sim.so.
//
//   auto t = weft::mad::UmadTransport::open({.ca = "", .port = 0, .guid = 0});  // first up port
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/mad/transport.hpp"

namespace weft::mad {

struct UmadPortSpec {
  std::string ca;     // empty: any
  int port = 0;       // 0: first port whose link is up (as OpenSM picks)
  uint64_t guid = 0;  // non-zero: the port with this port GUID, on any CA
};

class UmadTransport final : public Transport {
 public:
  static Result<std::unique_ptr<UmadTransport>> open(const UmadPortSpec& spec);
  ~UmadTransport() override;

  Result<void> send(const MadBuf& mad, const SendAddr& to) override;
  Result<void> send_long(std::span<const uint8_t> mad, const SendAddr& to) override;
  Result<std::optional<InMad>> receive(Duration max_wait) override;
  Clock& clock() override { return clock_; }
  LocalPort local_port() const override { return local_; }
  Result<void> set_is_sm(bool on) override;

 private:
  UmadTransport() = default;
  SteadyClock clock_;
  LocalPort local_;
  int portid_ = -1;
  int agent_dr_ = -1;
  int agent_lid_ = -1;
  int agent_sa_ = -1;
  int agent_perf_ = -1;
  int agent_cc_ = -1;
  int agent_for(
      uint8_t mgmt_class) const;  // the registered agent that sends this class  // SubnAdm, RMPP
                                  // version 1: the kernel segments long answers
  int issm_fd_ = -1;
  std::vector<uint8_t> sendbuf_, recvbuf_;
  // The longest incoming message taken (RMPP requests coalesced by the kernel); the
  // MAD layer hands weft its first 256 bytes.
  static constexpr size_t kMaxMessage = 1 << 16;
};

}  // namespace weft::mad
