#include "weft/simulator/sim_transport.hpp"

#include "weft/mad/rmpp.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace weft::simulator {

using namespace weft::mad;

namespace {
// The busy time's clock: the TSC on x86-64 (a third of steady_clock's cost on a VM, read
// 16 million times in the largest bring-up), converted to time by busy(); elsewhere
// steady_clock's nanoseconds.
uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Adds the ticks from construction to destruction to a total.
class BusyTimer {
 public:
  explicit BusyTimer(uint64_t& total) : total_(total), t0_(ticks()) {}
  ~BusyTimer() { total_ += ticks() - t0_; }
  BusyTimer(const BusyTimer&) = delete;
  BusyTimer& operator=(const BusyTimer&) = delete;

 private:
  uint64_t& total_;
  uint64_t t0_;
};
}  // namespace

SimTransport::SimTransport(SimFabric& sim, SimTransportOptions o)
    : sim_(sim),
      o_(o),
      rng_(o.seed),
      born_(std::chrono::steady_clock::now()),
      born_ticks_(ticks()) {
  if (!sim_.clock()) sim_.set_clock(&clock_);
  port_ = o.port;
  const auto& nd = sim_.model().node(o.attach);
  if (port_ == 0 && !nd.is_switch()) {
    port_ = 1;
    for (const auto& p : nd.ports)
      if (p.num != 0 && p.linked()) {
        port_ = p.num;
        break;
      }
  }
}

SimTransport::~SimTransport() {
  if (sim_.clock() == &clock_) sim_.set_clock(nullptr);
}

std::chrono::nanoseconds SimTransport::busy() const {
#if defined(__x86_64__)
  // The TSC's rate, from the transport's life so far.
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - born_).count();
  const uint64_t elapsed = ticks() - born_ticks_;
  if (elapsed == 0) return {};
  return std::chrono::nanoseconds(static_cast<int64_t>(double(busy_) * ns / double(elapsed)));
#else
  return std::chrono::nanoseconds(busy_);
#endif
}

LocalPort SimTransport::local_port() const {
  const auto& nd = sim_.model().node(o_.attach);
  const auto& p = nd.ports[port_];
  const auto& lidport = nd.ports[nd.is_switch() ? 0 : port_];
  return {"sim",
          port_,
          p.guid,
          lidport.attrs.lid,
          lidport.attrs.sm_lid,
          static_cast<int>(p.attrs.state),
          p.attrs.phys_state};
}

Result<void> SimTransport::set_is_sm(bool on) {
  auto& nd = sim_.model().node(o_.attach);
  auto& a = nd.ports[nd.is_switch() ? 0 : port_].attrs;
  if (on)
    a.capability_mask |= kCapIsSm;
  else
    a.capability_mask &= ~kCapIsSm;
  return {};
}

void SimTransport::queue(TimePoint at, const InMad& m) {
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(m);
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = m;
  }
  q_.push({at, seq_++, slot});
}

void SimTransport::inject(const InMad& m, Duration after) {
  queue(clock_.now() + after, m);
}

Result<void> SimTransport::send(const MadBuf& mad, const SendAddr& to) {
  const BusyTimer timed(busy_);
  if (mad[3] & 0x80) {  // a response (the SM answering a query): record it
    responses_.push_back(mad);
    return {};
  }
  if (mad[3] == kMethodTrapRepress) {
    represses_.push_back({mad, to});
    return {};
  }
  if (mad[1] == 0x03 && mad[3] == kMethodReport) {  // the SA's Report to a subscriber
    gsi_.push_back({{mad}, to});
    if (reports_answered_ && !reports_answered_(to.dlid)) return {};
    InMad in;
    in.mad = mad;
    in.mad[3] = kMethodReportResp;
    in.len = kMadSize;
    in.slid = to.dlid;
    in.sqpn = to.qpn;
    queue(clock_.now() + o_.hop_latency * 2, in);
    return {};
  }
  ++requests_;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (o_.drop_rate > 0 && u(rng_) < o_.drop_rate) return {};
  auto out = sim_.process(mad, o_.attach, port_, to.dlid);
  if (!out.reply) return {};
  if (o_.reply_drop_rate > 0 && u(rng_) < o_.reply_drop_rate) return {};
  Duration lat = o_.hop_latency * (2 * out.hops + 1);
  if (o_.delay_rate > 0 && u(rng_) < o_.delay_rate) lat += o_.delay;
  if (mad[1] == perf::kClassPerf) lat += o_.pma_latency;
  if (o_.all_input_sl2vl_latency > Duration{0} && mad[3] == kMethodSet)
    if (auto smp = decode_smp(mad.data(), mad.size());
        smp && smp->attr_id == kAttrSl2Vl && smp->attr_mod & 0x20000)
      lat += o_.all_input_sl2vl_latency;
  InMad in;
  in.mad = *out.reply;
  in.len = kMadSize;
  if (mangle_) mangle_(in.mad);
  queue(clock_.now() + lat, in);
  return {};
}

Result<void> SimTransport::send_long(std::span<const uint8_t> mad, const SendAddr& to) {
  GsiAnswer a;
  a.to = to;
  if (rmpp_active(mad)) {
    a.segments = rmpp_segments(mad, kSaHeader);
  } else {
    MadBuf m{};
    std::copy(mad.begin(), mad.begin() + std::min(mad.size(), m.size()), m.begin());
    a.segments.push_back(m);
  }
  gsi_.push_back(std::move(a));
  return {};
}

void SimTransport::collect_traps() {
  const LocalPort me = local_port();
  if (!me.lid.is_unicast()) return;
  for (auto& t : sim_.take_traps(me.lid)) {
    InMad in;
    in.mad = t;
    in.len = kMadSize;
    if (auto smp = decode_smp(t.data(), t.size()))  // the issuer: Notice bytes 6-7
      in.slid = Lid{static_cast<uint16_t>(smp->data[6] << 8 | smp->data[7])};
    queue(clock_.now() + o_.hop_latency, in);
  }
}

Result<std::optional<InMad>> SimTransport::receive(Duration max_wait) {
  const BusyTimer timed(busy_);
  collect_traps();
  const TimePoint deadline = clock_.now() + max_wait;
  if (!q_.empty() && q_.top().at <= deadline) {
    const Pending p = q_.top();
    q_.pop();
    clock_.advance_to(p.at);
    std::optional<InMad> m(std::move(slots_[p.slot]));
    free_slots_.push_back(p.slot);
    return m;
  }
  clock_.advance_to(deadline);
  return std::optional<InMad>{};
}

}  // namespace weft::simulator
