// madcount.cpp — an LD_PRELOAD shim that counts the SMPs a program sends, whatever
// program it is (weft or OpenSM), so that a bench compares the two by what went on
// the wire rather than by what each says it did.
//
//   WEFT_MADCOUNT=/tmp/counts LD_PRELOAD="libweft_madcount.so libumad2sim.so" opensm ...
//
// It sits in front of umad2sim's write(): a write of a umad buffer (the 64-byte
// ib_user_mad header, then the MAD) whose MAD is a subnet management packet is
// counted, then passed on unchanged. The counts live in the file WEFT_MADCOUNT names,
// mapped shared, so a reader sees them at any moment without the program's help:
// little-endian uint64 — SMPs sent, SMP Gets, SMP Sets, LFT block Sets
// (LinearForwardingTable, 0x0019), PortInfo Sets, SwitchInfo Sets, other Sets; then
// the PerfMgt (class 0x04) requests sent and their bursts: a PerfMgt write 500 ms or
// more after the one before starts a burst (a counter sweep), whose number, start,
// last write (CLOCK_MONOTONIC ns) and MADs the next four slots hold.
//
// With WEFT_MADLOG=FILE as well, every SMP is appended to FILE as written: the 64-byte
// umad header (its address: the destination LID) and the 256-byte MAD, for
// weft_smp_replay to send the same SMPs again.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace {

using WriteFn = ssize_t (*)(int, const void*, size_t);

enum Slot {
  kSmps,
  kGets,
  kSets,
  kLftSets,
  kPortInfoSets,
  kSwitchInfoSets,
  kOtherSets,
  kPerfMads,
  kPerfBursts,
  kPerfBurstStartNs,
  kPerfLastNs,
  kPerfBurstMads,
  kSlots
};
constexpr uint64_t kBurstGapNs = 500'000'000;

constexpr size_t kUmadHeader = 64;  // struct ib_user_mad with the pkey_index header

std::atomic<uint64_t>* counts() {
  static std::atomic<uint64_t>* table = []() -> std::atomic<uint64_t>* {
    const char* path = std::getenv("WEFT_MADCOUNT");
    if (!path) return nullptr;
    const int fd = ::open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) return nullptr;
    const size_t bytes = kSlots * sizeof(uint64_t);
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      ::close(fd);
      return nullptr;
    }
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    return m == MAP_FAILED ? nullptr : static_cast<std::atomic<uint64_t>*>(m);
  }();
  return table;
}

// A PerfMgt request: counted, and into the current burst or a new one. Writers are
// the SM's threads; a burst boundary raced by two of them is off by one MAD at most.
void count_perf() {
  std::atomic<uint64_t>* c = counts();
  if (!c) return;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t now = uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
  const uint64_t last = c[kPerfLastNs].exchange(now, std::memory_order_relaxed);
  if (last == 0 || now - last >= kBurstGapNs) {
    c[kPerfBurstStartNs].store(now, std::memory_order_relaxed);
    c[kPerfBurstMads].store(0, std::memory_order_relaxed);
    c[kPerfBursts].fetch_add(1, std::memory_order_relaxed);
  }
  c[kPerfBurstMads].fetch_add(1, std::memory_order_relaxed);
  c[kPerfMads].fetch_add(1, std::memory_order_relaxed);
}

// The SMP log (WEFT_MADLOG), written with the real write() so that it is not counted.
void log_smp(WriteFn next, const void* buf, size_t len) {
  static const int fd = [] {
    const char* path = std::getenv("WEFT_MADLOG");
    return path ? ::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
  }();
  constexpr size_t kRecord = kUmadHeader + 256;
  if (fd < 0 || len < kRecord) return;
  (void)next(fd, buf, kRecord);
}

void count(const void* buf, size_t len) {
  if (len < kUmadHeader + 24) return;
  const auto* mad = static_cast<const uint8_t*>(buf) + kUmadHeader;
  if (mad[0] == 1 && mad[1] == 0x04 && !(mad[3] & 0x80)) return count_perf();
  // Common MAD header: BaseVersion 1, MgmtClass 0x01 (LID routed) or 0x81 (directed).
  if (mad[0] != 1 || (mad[1] != 0x01 && mad[1] != 0x81) || mad[2] != 1) return;
  std::atomic<uint64_t>* c = counts();
  if (!c) return;
  const uint8_t method = mad[3];
  const uint16_t attr = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
  c[kSmps].fetch_add(1, std::memory_order_relaxed);
  if (method == 0x01) {
    c[kGets].fetch_add(1, std::memory_order_relaxed);
  } else if (method == 0x02) {
    c[kSets].fetch_add(1, std::memory_order_relaxed);
    const Slot s = attr == 0x0019   ? kLftSets
                   : attr == 0x0015 ? kPortInfoSets
                   : attr == 0x0012 ? kSwitchInfoSets
                                    : kOtherSets;
    c[s].fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

extern "C" ssize_t write(int fd, const void* buf, size_t len) {
  static WriteFn next = reinterpret_cast<WriteFn>(::dlsym(RTLD_NEXT, "write"));
  if (!next) return -1;
  const ssize_t r = next(fd, buf, len);
  if (r > 0) {
    count(buf, len);
    const auto* mad = static_cast<const uint8_t*>(buf) + kUmadHeader;
    if (size_t(r) >= kUmadHeader + 24 && mad[0] == 1 && (mad[1] == 0x01 || mad[1] == 0x81) &&
        !(mad[3] & 0x80))
      log_smp(next, buf, len);
  }
  return r;
}
