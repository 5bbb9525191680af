// The multicast programmer: groups, their trees and the MFT blocks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "programmer.hpp"
#include "weft/sm/multicast.hpp"

namespace weft::sm {

// Multicast: the groups the partition policy asks for, members whose ports left, each
// group's spanning tree over the published fabric, and the MFT blocks that differ
// from what switches hold. Trees are always computed on one snapshot (its fabric,
// node paths and end ports together), the one published.
class MulticastProgrammer final : public Programmer {
 public:
  explicit MulticastProgrammer(mad::MadEngine& eng) : eng_(eng) {}
  std::string_view name() const override { return "multicast"; }
  // kPublished: route_all() on run.published.
  void step(Step s, SweepRun& run) override;
  McDb& groups() { return mc_; }
  const McDb& groups() const { return mc_; }
  uint16_t mft_cap() const { return snap_ ? snap_->mft_cap : 0; }
  // The partition policy's groups; members whose ports are not in `snap` leave. A group
  // new to the database gets an MLID once the term's scan has read that no switch
  // forwards it (in a new term's first sweep, when the MFT reads are back).
  void sync_groups(const qos::PartitionPlan& plan, bool qos_on, const SubnetSnapshot& snap);
  // A new snapshot: every group's tree is computed again on it and the blocks that
  // differ are written (`rep` counts them). `reset` are switches that lost their
  // state (their MFTs are read again).
  void route_all(std::shared_ptr<const SubnetSnapshot> snap, const std::set<Guid>& reset,
                 SweepReport& rep);
  // Joins and leaves between sweeps: those groups' trees on the current snapshot.
  void route_changed(const std::vector<uint16_t>& mlids);
  // A new master term: believe nothing a switch was seen to hold; the next route_all
  // reads every block below the scan's end on every switch.
  void forget_all() override;

  // MFT entries of groups weft does not know (another SM's, or groups whose document was
  // lost): found by reading every block up to one beyond the highest MLID in use, on
  // every switch. They are left as they are through the term's first full sweep as
  // master, then cleared; until a switch is seen not to forward an MLID, and until its
  // block has been read on every switch this term, no new group gets it.
  bool mlid_free(uint16_t mlid) const;
  size_t foreign_mlids() const { return foreign_mlids_.size(); }
  // A sweep as master brought the subnet up: after the term's first, entries of groups
  // nobody knows are no longer kept.
  void sweep_done() { ++term_sweeps_; }
  bool sweep_done_once() const { return term_sweeps_ > 0; }
  // A light sweep: clears them when due (route_all does in a heavy one).
  void settle();
  // The partition file's groups still waiting for an MLID, and whether any was placed
  // since the last call (the groups' document is then written again).
  size_t unplaced() const { return unplaced_.size(); }
  // Between heavy sweeps (a quiet light sweep, after settle() freed MLIDs): place the
  // waiting groups where an MLID is free now, route them and write their blocks.
  void place_waiting() { place_after_scan(nullptr); }
  bool take_placed() { return std::exchange(placed_, false); }

 private:
  using BlockKey = std::pair<uint64_t, uint32_t>;  // switch GUID, modifier (pos << 28 | block)
  std::vector<std::pair<fabric::NodeIndex, uint32_t>> route_mlid(uint16_t mlid);
  void write_mfts(std::vector<std::pair<fabric::NodeIndex, uint32_t>> blocks, SweepReport* rep);
  // Blocks [scan_end_, one beyond the highest group's block) on every switch, the scan
  // moved there; within the switches' MulticastFDBCap.
  // At least to `at_least` (a block more for groups not placed yet).
  void extend_scan(std::vector<std::pair<fabric::NodeIndex, uint32_t>>& blocks,
                   uint32_t at_least = 0);
  // Unplaced groups into the database where an MLID is free (any MLID when
  // `!check_switches`: a fabric without switches); the MLIDs placed.
  std::vector<uint16_t> place(bool check_switches);
  // Once no read of the scan is pending: place, route and write them, or read on.
  void place_after_scan(SweepReport* rep);
  // Whether the term's first full sweep is over (and the foreign entries go).
  bool due_to_settle();
  // What weft writes to a block: the trees' entries, and until settled the foreign ones.
  mad::MftBlock effective(fabric::NodeIndex sw, const BlockKey& key);
  // A block as read or written: held, and its entries of no known group foreign.
  void note_held(const BlockKey& key, const mad::MftBlock& b);
  void drop_foreign(const BlockKey& key);
  mad::MadEngine& eng_;
  McDb mc_;
  std::shared_ptr<const SubnetSnapshot> snap_;
  // What weft wants each switch to hold (node -> pos << 28 | block -> masks), what
  // switches hold as last read or written (switch GUID, modifier), and which switches
  // each MLID's tree crossed.
  std::map<fabric::NodeIndex, std::map<uint32_t, mad::MftBlock>> want_;
  std::map<BlockKey, mad::MftBlock> held_;
  std::map<uint16_t, std::vector<fabric::NodeIndex>> mlid_switches_;
  // Entries of no known group per block, and per MLID the blocks holding one.
  std::map<BlockKey, mad::MftBlock> foreign_;
  std::map<uint16_t, size_t> foreign_mlids_;
  // The scan of this term: blocks below scan_end_ are read on every switch; reads of a
  // block still under way (by block); the term (callbacks of an earlier one are spent).
  uint32_t scan_end_ = 0;
  std::map<uint32_t, size_t> scan_pending_;
  std::set<BlockKey> unread_;  // reads that failed: what the switch forwards there is unknown
  uint64_t term_ = 0;
  uint64_t term_sweeps_ = 0;
  bool settled_ = false;
  std::vector<McGroup> unplaced_;
  bool placed_ = false;
};

}  // namespace weft::sm
