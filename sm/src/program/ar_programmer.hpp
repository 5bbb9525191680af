// The adaptive-routing programmer: NVIDIA's vendor attributes (weft/mad/ar.hpp) on the
// switches that hold them, when adaptive routing is asked for (adaptive_routing, or an
// ar_* engine name).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "programmer.hpp"
#include "weft/mad/ar.hpp"

namespace weft::sm {

class LftProgrammer;

// What each switch can do (AdaptiveRoutingInfo), its port groups and AR LFT written
// where they differ from what it holds (read first where weft does not know), AR
// turned on last. A switch without AR, or one whose write failed, keeps its static
// tables (AR off), and the sweep goes on.
//
// Capability is asked of one switch of each device model (vendor, device, revision)
// first, with no retry: a model none of whose switches answers (ibsim drops an unknown
// attribute, so the SMP times out) costs one timeout, is reported once, and is not
// asked again in this master term. The other switches of a model that answers are asked
// together. What a switch holds is believed while the LFT programmer trusts the switch
// (no reset, no other writer seen); a new master term believes nothing.
class ArProgrammer final : public Programmer {
 public:
  ArProgrammer(mad::MadEngine& eng, const SmOptions& o, const LftProgrammer& lfts)
      : eng_(eng), opts_(o), lfts_(lfts) {}
  std::string_view name() const override { return "ar"; }
  // kSpotCheck: the AR blocks weft wrote, read back. kCheck: AdaptiveRoutingInfo where
  // unknown, and the group and AR LFT blocks to be written over that weft does not
  // know. kConfigure: AR off where it goes off, and where what it forwards by is about
  // to change. kCommit: the group blocks that differ.
  // kTables: the AR LFT blocks that differ. kActivate: AdaptiveRoutingInfo (on,
  // GroupTop) where it differs.
  void step(Step s, SweepRun& run) override;
  // A new term: what switches hold is unknown, and models that did not answer are
  // asked again (one SMP each).
  void forget_all() override {
    held_.clear();
    std::erase_if(models_, [](const auto& m) { return m.second == Verdict::kSilent; });
  }

  // The groups a switch holds (group 0 stays empty: weft's choice, so that a static
  // entry's group number names no ports) and its AR LFT, as weft wants them.
  struct Want {
    bool on = false;
    uint16_t group_top = 0;                 // the highest group in use
    std::vector<mad::ArGroupBlock> groups;  // blocks 0 .. group_top / 2
    std::vector<mad::ArLftBlock> lft;       // blocks 0 .. top LID / 16
    size_t dropped = 0;                     // groups GroupCap could not hold
  };
  // Switch n's groups (Tables::ar_sets, ar_group) fitted into `cap` groups: the groups
  // most LIDs use are kept, the LIDs of the others routed statically there. A kept group
  // the switch `held` (its group table blocks, one sub-group a group) keeps its number.
  static Want want_of(const routing::Tables& t, fabric::NodeIndex n, uint16_t cap, bool on,
                      const std::map<uint32_t, mad::ArGroupBlock>& held = {});
  // drift_check_blocks of the AR state weft believes switch n holds (its
  // AdaptiveRoutingInfo, then its group blocks, then its AR LFT blocks: rotating with
  // `round`, so that each is read within ceil(held / N) rounds), read back by directed
  // route `path`. What differs (another writer; AR turned on or off, a table rewritten)
  // is logged (AR-0006), told to on_drift(), and taken as what the switch holds, so that
  // the next programming writes just that back. `done(answered, differs)` once every
  // answer is in; nothing is sent, and `done` never called, for a switch whose AR weft
  // does not know.
  void check_blocks(const fabric::Fabric& f, fabric::NodeIndex n, const mad::DrPath& path,
                    uint64_t round, std::function<void(size_t answered, bool differs)> done);
  void on_drift(std::function<void(Guid, const std::string&)> f) { on_drift_ = std::move(f); }
  // The next round of checks (one per sweep, light or heavy).
  uint64_t next_round() { return ++round_; }
  // What the switches of `f` hold as far as weft knows (for the published snapshot).
  std::map<uint64_t, ArView> view(const fabric::Fabric& f) const;

 private:
  struct Model {
    uint32_t vendor = 0;
    uint16_t device = 0;
    uint32_t revision = 0;
    auto operator<=>(const Model&) const = default;
  };
  enum class Verdict : uint8_t { kAnswers, kSilent };
  struct Held {
    std::optional<mad::ArInfo> info;  // as read or last set
    bool unsupported = false;         // AdaptiveRoutingInfo answered with an error status
    std::map<uint32_t, mad::ArGroupBlock> groups;
    std::map<uint32_t, mad::ArLftBlock> lft;
  };
  struct Plan {
    Want want;
    bool failed = false;  // a write failed this sweep: AR stays off there
  };
  void check(SweepRun& run);
  // Before check(): check_blocks() of every switch the LFT programmer trusts.
  void spot_check(SweepRun& run);
  // Whether switch AR as held must change (a group or AR LFT block, sub-groups) for plan p.
  bool changes(const Held& h, const Plan& p) const;
  void ask_info(SweepRun& run, fabric::NodeIndex n, bool probe,
                std::vector<fabric::NodeIndex> rest);
  void planned(SweepRun& run, fabric::NodeIndex n);
  void turn_off(SweepRun& run);
  // One AR table's blocks (group table, AR LFT) on the wire.
  template <class Block>
  struct TableWire {
    uint16_t attr;
    uint32_t (*modifier)(uint32_t block);
    mad::SmpData (*encode)(const Block&);
    uint64_t SweepReport::*written;  // counts the blocks written
    const char* what;                // in messages: "AR LFT block"
  };
  static const TableWire<mad::ArGroupBlock> kGroupWire;
  static const TableWire<mad::ArLftBlock> kLftWire;
  // The blocks of `want` that switch n is not known to hold, written; a failure marks the
  // plan failed (AR stays off there).
  template <class Block>
  void write_table(SweepRun& run, fabric::NodeIndex n, const std::vector<Block>& want,
                   std::map<uint32_t, Block> Held::*table, const TableWire<Block>& w);
  void write_groups(SweepRun& run);
  void write_lft(SweepRun& run);
  void write_info(SweepRun& run);
  void set_info(SweepRun& run, fabric::NodeIndex n, const mad::ArInfo& ai);
  mad::MadEngine& eng_;
  const SmOptions& opts_;
  const LftProgrammer& lfts_;
  uint64_t round_ = 0;  // spot_check calls
  std::function<void(Guid, const std::string&)> on_drift_;
  std::map<Guid, Held> held_;
  std::map<Model, Verdict> models_;
  std::set<Guid> must_off_;  // AR to turn off whose Set failed: visited until seen off
  std::set<Guid> told_;      // switches reported without AR
  std::vector<fabric::NodeIndex> untold_;    // this sweep\'s, not reported yet
  std::map<Guid, size_t> dropped_told_;      // groups a switch could not hold, as reported
  std::map<fabric::NodeIndex, Plan> plans_;  // this sweep's switches with AR
};

}  // namespace weft::sm
