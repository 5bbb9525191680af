// weft_smp_replay — the rig's ceiling: the SMPs an SM sent (madcount's WEFT_MADLOG), sent
// again through libibumad with `window` on the wire at once and no SM logic between
// them (no waiting on one answer to build the next request). Its wall time is what the
// carrier (ibsim through umad2sim, or an HCA) allows for those SMPs: the floor under
// any SM's bring-up of that fabric.
//
//   LD_PRELOAD=.../libumad2sim.so weft_smp_replay LOG [WINDOW] [TIMEOUT_MS]
//
// Prints one JSON line: {"smps", "answered", "lost", "window", "wall_s", "per_s"}. Run
// it on the fabric the SM brought up (LID-routed SMPs need the LIDs it assigned).
#include <boost/endian/conversion.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include "weft/mad/umad_transport.hpp"

namespace {

constexpr size_t kHeader = 64, kMad = 256, kRecord = kHeader + kMad;
constexpr size_t kLidOffset = 28;  // ib_user_mad: 20 bytes, then qpn, qkey, lid (big-endian)

}  // namespace

int main(int argc, char** argv) {
  using namespace weft;
  using Clock = std::chrono::steady_clock;
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: weft_smp_replay LOG [WINDOW (64)] [TIMEOUT_MS (1000)]\n");
    return 2;
  }
  const size_t window = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 64;
  const int timeout_ms = argc > 3 ? std::atoi(argv[3]) : 1000;
  if (window < 1 || window > 4096 || timeout_ms < 1) {
    std::fprintf(stderr, "weft_smp_replay: WINDOW is 1..4096, TIMEOUT_MS at least 1\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "weft_smp_replay: cannot read %s\n", argv[1]);
    return 1;
  }
  struct Smp {
    mad::MadBuf mad;
    mad::SendAddr to;
  };
  std::vector<Smp> smps;
  std::vector<uint8_t> rec(kRecord);
  while (in.read(reinterpret_cast<char*>(rec.data()), std::streamsize(kRecord))) {
    Smp s{};
    std::memcpy(s.mad.data(), rec.data() + kHeader, kMad);
    const uint16_t lid = boost::endian::load_big_u16(rec.data() + kLidOffset);
    s.to = s.mad[1] == 0x81 ? mad::SendAddr::directed() : mad::SendAddr::lid(Lid{lid});
    s.to.response_timeout = std::chrono::milliseconds(timeout_ms);
    smps.push_back(s);
  }
  if (smps.empty()) {
    std::fprintf(stderr, "weft_smp_replay: %s holds no SMP record (%zu bytes each)\n", argv[1],
                 kRecord);
    return 1;
  }
  auto t = mad::UmadTransport::open({});
  if (!t) {
    std::fprintf(stderr, "weft_smp_replay: %s\n", t.error().message.c_str());
    return 1;
  }
  // Each SMP gets a TID of ours (low 32 bits: its index); answers and timeouts free its
  // place in the window.
  std::map<uint32_t, Clock::time_point> out;
  size_t next = 0, answered = 0, lost = 0;
  const auto t0 = Clock::now();
  auto tid_of = [](const mad::MadBuf& m) { return boost::endian::load_big_u32(m.data() + 12); };
  while (answered + lost < smps.size()) {
    while (out.size() < window && next < smps.size()) {
      Smp& s = smps[next];
      boost::endian::store_big_u32(s.mad.data() + 12, uint32_t(next));
      if (auto r = (*t)->send(s.mad, s.to); !r) {
        std::fprintf(stderr, "weft_smp_replay: send: %s\n", r.error().message.c_str());
        return 1;
      }
      out.emplace(uint32_t(next), Clock::now());
      ++next;
    }
    auto got = (*t)->receive(std::chrono::milliseconds(timeout_ms));
    if (!got) {
      std::fprintf(stderr, "weft_smp_replay: receive: %s\n", got.error().message.c_str());
      return 1;
    }
    if (*got) {
      const mad::InMad& m = **got;
      auto it = out.find(tid_of(m.mad));
      if (it != out.end()) {
        if (m.send_timed_out) {
          const auto& q = smps[it->first].mad;
          std::fprintf(stderr,
                       "weft_smp_replay: no answer to SMP %u (class 0x%02x, method 0x%02x, "
                       "attribute 0x%04x, modifier 0x%08x)\n",
                       it->first, q[1], q[3], boost::endian::load_big_u16(q.data() + 16),
                       boost::endian::load_big_u32(q.data() + 20));
        }
        out.erase(it);
        ++(m.send_timed_out ? lost : answered);
      }
    }
    // The carrier's own timeout is reported as a receive; this one covers a carrier that
    // reports none.
    const auto now = Clock::now();
    for (auto it = out.begin(); it != out.end();)
      if (now - it->second > std::chrono::milliseconds(3 * timeout_ms)) {
        it = out.erase(it);
        ++lost;
      } else {
        ++it;
      }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "{\"smps\": %zu, \"answered\": %zu, \"lost\": %zu, \"window\": %zu, \"wall_s\": %.3f, "
      "\"per_s\": %.0f}\n",
      smps.size(), answered, lost, window, wall, double(answered) / wall);
  return 0;
}
