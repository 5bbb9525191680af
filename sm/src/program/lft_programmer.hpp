// The LFT programmer: linear forwarding tables and LinearFDBTop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "programmer.hpp"

namespace weft::sm {

// Linear forwarding tables: the blocks that differ from what a switch holds (read
// first where weft does not know), then LinearFDBTop. What each switch holds is
// remembered while it keeps the LinearFDBTop weft left it with.
class LftProgrammer final : public Programmer {
 public:
  LftProgrammer(mad::MadEngine& eng, const SmOptions& o) : eng_(eng), opts_(o) {}
  std::string_view name() const override { return "lft"; }
  // kSpotCheck: spot_check(); kConfigure: write_blocks(); kCommit: write_tops().
  void step(Step s, SweepRun& run) override;
  // Before programming (nothing else in flight): drift_check_blocks blocks of every
  // switch weft believes it knows, read back by directed route and compared (the blocks
  // rotate sweep by sweep). A switch with a block that differs (another writer that kept
  // LinearFDBTop) is believed in nothing from then on: read back whole when written.
  // Counted in the report (lft_blocks_checked, lft_switches_changed).
  void spot_check(SweepRun& run);
  // One such check of switch `n` (its blocks for `round`), by directed route `path`: a
  // block that is not what weft wrote is logged (SM-0055), told to on_drift() and the
  // switch forgotten. `done(answered, differs)` once every answer (or none) is in, with
  // the blocks that answered; nothing is sent, and `done` never called, for a switch
  // weft holds no table of.
  void check_block(const fabric::Fabric& f, fabric::NodeIndex n, const mad::DrPath& path,
                   uint64_t round, std::function<void(size_t answered, bool differs)> done);
  // The next round of checks (one per sweep, light or heavy, so that the blocks rotate
  // through every sweep).
  uint64_t next_round() { return ++round_; }
  // Told of each switch found holding a block weft did not write: (switch, block, where).
  void on_drift(std::function<void(Guid, size_t, const std::string&)> f) {
    on_drift_ = std::move(f);
  }
  // Phase 1: every block that differs. Phase 2 (after the blocks): LinearFDBTop.
  void write_blocks(SweepRun& run);
  void write_tops(SweepRun& run);
  // A switch still holds what weft left it with: the LinearFDBTop it was set to. (A
  // switch that rebooted comes back with another.)
  bool steady(Guid sw, uint16_t lft_top_now) const;
  // `count` blocks of what weft believes switch `sw` holds, to read back and compare (a
  // spot check: the blocks rotate with `round`, every block within ceil(blocks / count)
  // rounds); none where nothing is believed.
  std::vector<std::pair<size_t, mad::LftBlock>> spot_blocks(Guid sw, uint64_t round,
                                                            size_t count) const;
  // Believe nothing of switch `sw` (its blocks are read back whole at its next
  // programming), or of any switch (a new master term).
  void forget(Guid sw);
  void forget_all() override;
  // Switch n shows signs of having lost its state (a port state change, a linked port
  // not ACTIVE); what weft believes of it holds (trusted) only without them and while it
  // keeps the LinearFDBTop weft left it with.
  bool trusted(const SweepRun& run, fabric::NodeIndex n) const;
  // Rows of what switches hold kept by weft itself, not as a row of the published
  // snapshot's tables (tests: after a sweep that wrote everything, none).
  size_t own_rows() const { return own_.size(); }

 private:
  // What weft believes switch `sw` holds (nullptr: nothing): entries past the row's end
  // count as dropped, block by block (row_block).
  const std::vector<uint8_t>* held(Guid sw) const;
  void drop_belief(Guid sw);
  // A block of sweep `sweep`'s tables confirmed on switch `sw` (written, or read back the
  // same); a completion of an earlier sweep counts for nothing.
  void remember_block(Guid sw, uint64_t sweep);
  // On the snapshot just published: every switch whose planned blocks were all confirmed
  // holds that snapshot's row; it is believed by reference, not copied.
  void adopt(const std::shared_ptr<const SubnetSnapshot>& snap);
  bool was_reset(const SweepRun& run, fabric::NodeIndex n) const;
  // Reads block b of switch n and writes `blk` if the switch holds anything else.
  void read_then_write(SweepRun& run, fabric::NodeIndex n, const mad::DrPath& path, size_t b,
                       const mad::LftBlock& blk);
  void write_block(SweepRun& run, fabric::NodeIndex n, const mad::DrPath& path, size_t b,
                   const mad::LftBlock& blk);
  mad::MadEngine& eng_;
  const SmOptions& opts_;
  // What each switch holds: a row of the adopted snapshot's tables (by reference: the
  // largest fabric's rows are 187 MB), or, for a switch that snapshot no longer has, a
  // row of weft's own.
  std::shared_ptr<const SubnetSnapshot> adopted_;
  std::unordered_map<uint64_t, const std::vector<uint8_t>*> shared_;
  std::map<Guid, std::vector<uint8_t>> own_;
  // This sweep's programming, per switch: its node, the blocks planned and confirmed
  // (failed: the belief is gone), whether its LFT was capped below the top.
  struct Pending {
    fabric::NodeIndex n;
    size_t planned = 0, confirmed = 0;
    bool failed = false, capped = false;
  };
  // (A switch with blocks planned is believed in nothing until adopt(): a sweep that
  // never publishes leaves it unknown.)
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t sweep_ = 0;  // write_blocks calls: whose completions count in pending_
  std::unordered_map<uint64_t, uint16_t> tops_;  // LinearFDBTop each switch was left with
  std::vector<fabric::NodeIndex> topped_;        // this sweep: switches whose top to write
  uint64_t round_ = 0;                           // spot_check calls: which block each checks
  std::function<void(Guid, size_t, const std::string&)> on_drift_;
};

}  // namespace weft::sm
