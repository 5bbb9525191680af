// A SubnAdm client that floods the subnet's SA with PathRecord queries over
// libibumad (on ibsim under libumad2sim, like saquery), keeping `--window`
// queries outstanding, and reports the rate and how many came back answered.
// The SA answering is whoever is master: weft or OpenSM, measured the same way.
//
//   weft_sa_flood --lids 1-1060 --queries 20000 [--window 16] [--garbage]
// --garbage makes a quarter of them bad: an unsupported method, a random attribute,
// a random component mask, or noise after the MAD header (a robustness run: the SA
// must keep answering the valid ones). A bad class version is left to the unit
// tests: a requester's stack drops the answer, which carries that version.
#include <infiniband/umad.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

int main(int argc, char** argv) {
  long queries = 20000, window = 16, lo = 1, hi = 0;
  bool garbage = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--queries" && i + 1 < argc)
      queries = std::atol(argv[++i]);
    else if (a == "--window" && i + 1 < argc)
      window = std::atol(argv[++i]);
    else if (a == "--lids" && i + 1 < argc)
      std::sscanf(argv[++i], "%ld-%ld", &lo, &hi);
    else if (a == "--garbage")
      garbage = true;
  }
  if (hi < lo + 1 || queries < 1 || window < 1) {
    std::fprintf(stderr,
                 "usage: weft_sa_flood --lids LO-HI [--queries N] [--window W] [--garbage]\n");
    return 2;
  }
  if (umad_init() < 0) return std::perror("umad_init"), 1;
  umad_port_t port;
  if (umad_get_port(nullptr, 0, &port) < 0) return std::perror("umad_get_port"), 1;
  const int sm_lid = port.sm_lid;
  int fd = umad_open_port(port.ca_name, port.portnum);
  if (fd < 0) return std::perror("umad_open_port"), 1;
  int agent = umad_register(fd, 0x03, 2, 0, nullptr);
  if (agent < 0) return std::perror("umad_register"), 1;
  std::vector<uint8_t> buf(umad_size() + 256), in(umad_size() + 4096);
  std::mt19937_64 rng(1);
  struct Out {
    int kind;  // 0 valid, 1 + garbage case
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<uint32_t, Out> out;
  long sent = 0, answered = 0, errors = 0, garbage_sent = 0;
  long lost_by_kind[5] = {};
  uint32_t tid = 1;
  const auto t0 = std::chrono::steady_clock::now();
  auto deadline_ok = [&] {
    return std::chrono::steady_clock::now() - t0 < std::chrono::seconds(600);
  };
  while ((sent < queries || !out.empty()) && deadline_ok()) {
    while (sent < queries && long(out.size()) < window) {
      std::memset(buf.data(), 0, buf.size());
      uint8_t* m = static_cast<uint8_t*>(umad_get_mad(buf.data()));
      m[0] = 1, m[1] = 0x03, m[2] = 2, m[3] = 0x12;  // GetTable
      m[12] = uint8_t(tid >> 24), m[13] = uint8_t(tid >> 16), m[14] = uint8_t(tid >> 8),
      m[15] = uint8_t(tid);
      m[16] = 0x00, m[17] = 0x35;  // PathRecord
      m[55] = 0x30;                // DLID, SLID
      const long s = lo + long(rng() % (hi - lo + 1)), d = lo + long(rng() % (hi - lo + 1));
      m[56 + 40] = uint8_t(d >> 8), m[56 + 41] = uint8_t(d);
      m[56 + 42] = uint8_t(s >> 8), m[56 + 43] = uint8_t(s);
      int kind = 0;  // 0 valid, 1 + garbage case
      size_t len = 256;
      if (garbage && rng() % 4 == 0) {
        kind = 1;
        ++garbage_sent;
        const int c = int(rng() % 4);
        kind = 1 + c;
        switch (c) {
          case 0:
            m[3] = 0x20;
            break;  // an unsupported method
          case 1:
            m[17] = uint8_t(rng());
            m[16] = uint8_t(rng());
            break;  // any attribute
          case 2:
            for (int i = 48; i < 56; ++i) m[i] = uint8_t(rng());
            break;  // any mask
          default:
            for (int i = 24; i < 256; ++i) m[i] = uint8_t(rng());
            break;  // noise
        }
      }
      umad_set_addr(buf.data(), sm_lid, 1, 0, 0x80010000);
      if (umad_send(fd, agent, buf.data(), int(len), 200, 0) < 0)
        return std::perror("umad_send"), 1;
      out[tid++] = {kind, std::chrono::steady_clock::now()};
      ++sent;
    }
    pollfd p{umad_get_fd(fd), POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) {
      // Unanswered for a second: lost. (A requester's kernel drops an answer it cannot
      // match, e.g. one carrying the bad class version it was sent with.)
      const auto now = std::chrono::steady_clock::now();
      for (auto it = out.begin(); it != out.end();) {
        if (now - it->second.at < std::chrono::seconds(1)) {
          ++it;
          continue;
        }
        ++lost_by_kind[it->second.kind];
        if (it->second.kind == 0) ++errors;
        it = out.erase(it);
      }
      continue;
    }
    int len = int(in.size() - umad_size());
    if (umad_recv(fd, in.data(), &len, 0) < 0) continue;
    const uint8_t* m = static_cast<const uint8_t*>(umad_get_mad(in.data()));
    const uint32_t got =
        uint32_t(m[12]) << 24 | uint32_t(m[13]) << 16 | uint32_t(m[14]) << 8 | m[15];
    auto it = out.find(got);
    if (it == out.end()) continue;
    const int status = m[4] << 8 | m[5];
    if (umad_status(in.data()) == 0 && it->second.kind == 0) {
      if (status == 0)
        ++answered;
      else
        ++errors;
    }
    out.erase(it);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "sent %ld (%ld garbage), answered %ld valid, %ld valid lost or failed, %.2f s, %.0f "
      "queries/s\n",
      sent, garbage_sent, answered, errors, secs, sent / secs);
  if (garbage)
    std::printf("lost: valid %ld, bad method %ld, any attribute %ld, any mask %ld, noise %ld\n",
                lost_by_kind[0], lost_by_kind[1], lost_by_kind[2], lost_by_kind[3],
                lost_by_kind[4]);
  umad_close_port(fd);
  umad_release_port(&port);
  return errors == 0 && answered == sent - garbage_sent ? 0 : 1;
}
