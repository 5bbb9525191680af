// The programmers: each owns one kind of device state (port settings, forwarding
// tables, P_Key and VL tables, multicast tables) and what weft believes the devices
// hold of it, and writes only what differs. They share one shape: the sweep calls
// every programmer at each programming step, in order, and waits for all of their MADs
// before the next step. A new kind of device state (adaptive routing, say) is one
// more Programmer in this folder, added to Programmers (as adaptive routing is).
//
//   Programmers prog(eng, opts);
//   prog.step(Step::kSpotCheck, run);   // while routing; then kCheck, the engine idle,
//                                       // kConfigure, ...
//   if (prog.begin_term(epoch)) ...;    // a new master term: every cache void
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sweep_run.hpp"

namespace weft::sm {

// The programming steps of a heavy sweep, in order. A programmer acts in the steps it
// has a part in and does nothing in the others.
enum class Step : uint8_t {
  kSpotCheck,  // while the routing computes: does each switch still hold what weft
               // wrote (read back by directed route; needs nothing of this sweep's tables)
  kCheck,      // on the new tables, before anything goes by LID: what they write over,
               // where weft does not know it
  kConfigure,  // port settings (PortInfo) and forwarding entries (LFT blocks)
  kCommit,     // what makes the entries count (LinearFDBTop); reads of the tables that
               // follow the port settings (P_Key, SL2VL and VLArb, by OperVLs)
  kTables,     // those tables, written where they differ
  kActivate,   // what the writes left remembered; ports to ARMED, then ACTIVE
  kCount,      // no MADs: the outcome (ports linked and ACTIVE) into the report
  kPublished,  // on the snapshot just published (run.published): multicast trees
};

class Programmer {
 public:
  virtual ~Programmer() = default;
  virtual std::string_view name() const = 0;
  // This programmer's part of step s: it submits MADs (or none) and records in `run`.
  virtual void step(Step s, SweepRun& run) = 0;
  // A new master term: believe nothing a device was seen to hold (another SM may have
  // programmed since); the next sweep reads back what it writes over.
  virtual void forget_all() = 0;
};

// One switch's spot check (the LFT's and AR's drift checks): its reads go out together,
// and `done(answered, differs)` is told once the last is in (or lost).
class SpotCheck {
 public:
  SpotCheck(size_t reads, std::function<void(size_t answered, bool differs)> done)
      : left_(reads), done_(std::move(done)) {}
  // One read's outcome; true for the first that differs (to say so once).
  bool in(bool answered, bool differs) {
    answered_ += answered;
    const bool first = differs && !differs_;
    differs_ |= differs;
    return first;
  }
  // After in(): the last read calls done.
  void read_done() {
    if (--left_ == 0) done_(answered_, differs_);
  }
  // The first of a switch's `items` it checks in `round`, `count` a round: switches
  // start at different items (spread by GUID), each reads its every item within
  // ceil(items / count) rounds.
  static size_t first(uint64_t round, size_t count, Guid sw, size_t items) {
    return size_t((round * count + sw.value % 997) % items);
  }

 private:
  size_t left_, answered_ = 0;
  bool differs_ = false;
  std::function<void(size_t, bool)> done_;
};

// A P_Key table of `cap` keys laid out for `want` over what the port holds (`held`, its
// blocks as read), keeping indexes where `keep`; and the 32-key blocks whose content
// changes, in order. Keys that do not fit are a problem (PRT-0003) of the port `where()`
// names (asked only then: a name a port, every sweep, costs milliseconds on the largest
// fabric). The P_KeyTable's and the VPortPKeyTable's writers share it.
struct PkeyWrite {
  qos::PkeyLayout lay;                                      // `cap` keys
  std::vector<std::pair<uint16_t, mad::PkeyBlock>> blocks;  // (block, its keys) to write
};
template <class Where>
PkeyWrite plan_pkey_write(const std::vector<uint16_t>& want, std::vector<uint16_t> held, size_t cap,
                          bool keep, Where&& where, SweepReport& rep) {
  const size_t blocks = (cap + 31) / 32;
  held.resize(cap, 0);
  PkeyWrite w{qos::layout_pkeys(want, held, cap, keep), {}};
  if (!w.lay.dropped.empty())
    add_problem(rep,
                where() + " holds " + std::to_string(cap) + " P_Keys; " +
                    std::to_string(w.lay.dropped.size()) +
                    " of its partitions do not fit and are left out",
                "PRT-0003");
  std::vector<uint16_t> table = w.lay.table;
  table.resize(blocks * 32, 0);
  held.resize(blocks * 32, 0);
  for (size_t b = 0; b < blocks; ++b) {
    if (std::equal(table.begin() + b * 32, table.begin() + (b + 1) * 32, held.begin() + b * 32))
      continue;
    mad::PkeyBlock out{};
    std::copy(table.begin() + b * 32, table.begin() + (b + 1) * 32, out.begin());
    w.blocks.emplace_back(uint16_t(b), out);
  }
  return w;
}

class PortProgrammer;
class LftProgrammer;
class DeviceTables;
class MulticastProgrammer;
class ArProgrammer;
class VPortProgrammer;

// Every programmer of the sweep, in the order each step calls them; typed access for
// what the sweep asks of one (the LFT spot check of a light sweep, the multicast
// groups the SA serves).
class Programmers {
 public:
  Programmers(mad::MadEngine& eng, const SmOptions& o);
  ~Programmers();
  Programmers(const Programmers&) = delete;
  Programmers& operator=(const Programmers&) = delete;

  void step(Step s, SweepRun& run);
  // The SmRole epoch whose sweeps as master filled the caches: another epoch voids them
  // all (forget_all) and returns true.
  bool begin_term(uint64_t epoch);
  bool same_term(uint64_t epoch) const { return epoch_ == epoch; }
  // Whether any term filled them before this one (a takeover, not a first start).
  bool had_term() const { return had_term_; }

  PortProgrammer& ports() { return *ports_; }
  LftProgrammer& lfts() { return *lfts_; }
  const LftProgrammer& lfts() const { return *lfts_; }
  DeviceTables& tables() { return *tables_; }
  MulticastProgrammer& multicast() { return *mc_; }
  const MulticastProgrammer& multicast() const { return *mc_; }
  ArProgrammer& ar() { return *ar_; }
  VPortProgrammer& vports() { return *vports_; }

 private:
  std::unique_ptr<PortProgrammer> ports_;
  std::unique_ptr<LftProgrammer> lfts_;
  std::unique_ptr<DeviceTables> tables_;
  std::unique_ptr<MulticastProgrammer> mc_;
  std::unique_ptr<ArProgrammer> ar_;
  std::unique_ptr<VPortProgrammer> vports_;
  std::vector<Programmer*> all_;
  std::optional<uint64_t> epoch_;
  bool had_term_ = false;
};

}  // namespace weft::sm
