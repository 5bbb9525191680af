// weft/simulator/sim_transport.hpp — the mad::Transport that carries the SM's
// MADs to a SimFabric, on a ManualClock: replies arrive after a per-hop
// latency, and waiting for a timeout takes no real time. Fault injection:
// drop or delay a share of MADs (seeded), mangle replies, inject MADs.
//
//   SimFabric sim(fabric);
//   SimTransport t(sim, {.attach = 0, .port = 1});
//   weft::sm::SubnetManager sm(t, opts);   // the SM cannot tell
#pragma once

#include <chrono>
#include <functional>
#include <queue>
#include <random>

#include "weft/mad/transport.hpp"
#include "weft/simulator/sim_fabric.hpp"

namespace weft::simulator {

struct SimTransportOptions {
  fabric::NodeIndex attach = 0;  // the SM's node
  PortNum port = 0;              // its port; 0 = the first linked port (0 on a switch)
  mad::Duration hop_latency = std::chrono::microseconds(1);
  double drop_rate = 0.0;        // share of requests lost (0..1)
  double reply_drop_rate = 0.0;  // share of replies lost after the device acted (0..1)
  double delay_rate = 0.0;       // share of replies delayed by `delay`
  mad::Duration delay = std::chrono::milliseconds(150);
  // What a PMA takes to answer a PerfMgt query, on top of the hops (switch PMAs run in
  // firmware, slower than their SMA).
  mad::Duration pma_latency{0};
  // What a switch takes to answer an SLtoVLMappingTable Set naming every input port
  // (modifier bit 17), on top of the hops: it writes up to 64 ports' tables first.
  mad::Duration all_input_sl2vl_latency{0};
  uint64_t seed = 1;
};

class SimTransport final : public mad::Transport {
 public:
  SimTransport(SimFabric& sim, SimTransportOptions o);
  // Leaves the fabric without a lease clock when it ran on this transport's.
  ~SimTransport() override;
  SimTransport(const SimTransport&) = delete;
  SimTransport& operator=(const SimTransport&) = delete;

  Result<void> send(const mad::MadBuf& mad, const mad::SendAddr& to) override;
  // GSI answers: segmented here as the kernel would (RMPP-active ones), recorded.
  Result<void> send_long(std::span<const uint8_t> mad, const mad::SendAddr& to) override;
  Result<std::optional<mad::InMad>> receive(mad::Duration max_wait) override;
  mad::Clock& clock() override { return clock_; }
  mad::LocalPort local_port() const override;
  Result<void> set_is_sm(bool on) override;

  // Test hooks.
  void mangle_replies(std::function<void(mad::MadBuf&)> f) { mangle_ = std::move(f); }
  void inject(const mad::InMad& m, mad::Duration after = {});
  // MADs the SM sent that were not requests (its answers to injected queries).
  const std::vector<mad::MadBuf>& sent_responses() const { return responses_; }
  // GSI answers as they would reach the requester: each one's segments, and where to.
  struct GsiAnswer {
    std::vector<mad::MadBuf> segments;
    mad::SendAddr to;
  };
  const std::vector<GsiAnswer>& gsi_answers() const { return gsi_; }
  void clear_gsi_answers() { gsi_.clear(); }
  uint64_t requests_seen() const { return requests_; }
  // The SA's Reports (recorded with the GSI answers) are answered by the subscriber's
  // stack with a ReportResponse, unless `answers(dlid)` says that host does not.
  void answer_reports(std::function<bool(Lid dlid)> answers) {
    reports_answered_ = std::move(answers);
  }
  // The TrapRepresses the SM sent, and where to.
  struct Sent {
    mad::MadBuf mad;
    mad::SendAddr to;
  };
  const std::vector<Sent>& represses() const { return represses_; }
  mad::ManualClock& manual_clock() { return clock_; }
  PortNum port() const { return port_; }
  // Real (steady-clock) time spent inside send() and receive(): the simulated devices
  // and the wire, which on hardware are not the SM's CPU. The SM's own cost is the
  // process's CPU time less this (the simulator runs on the SM's thread).
  std::chrono::nanoseconds busy() const;

 private:
  // What is on its way to the SM, soonest first; the MADs themselves wait in slots, so
  // the heap moves small keys (a MAD each way of millions of SMPs otherwise).
  struct Pending {
    mad::TimePoint at;
    uint64_t seq;
    uint32_t slot;
    bool operator>(const Pending& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void queue(mad::TimePoint at, const mad::InMad& m);
  // Traps the fabric sent to this port's LID, queued as incoming MADs.
  void collect_traps();
  SimFabric& sim_;
  SimTransportOptions o_;
  PortNum port_;
  mad::ManualClock clock_;
  std::mt19937_64 rng_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> q_;
  std::vector<mad::InMad> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t seq_ = 0;
  uint64_t requests_ = 0;
  uint64_t busy_ = 0;  // in the busy clock's ticks (sim_transport.cpp)
  std::chrono::steady_clock::time_point born_;
  uint64_t born_ticks_;
  std::function<void(mad::MadBuf&)> mangle_;
  std::function<bool(Lid)> reports_answered_;
  std::vector<mad::MadBuf> responses_;
  std::vector<GsiAnswer> gsi_;
  std::vector<Sent> represses_;
};

}  // namespace weft::simulator
