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
  // The partition policy's groups; members whose ports are not in `snap` leave.
  void sync_groups(const qos::PartitionPlan& plan, bool qos_on, const SubnetSnapshot& snap);
  // A new snapshot: every group's tree is computed again on it and the blocks that
  // differ are written (`rep` counts them). `reset` are switches that lost their
  // state (their MFTs are read again).
  void route_all(std::shared_ptr<const SubnetSnapshot> snap, const std::set<Guid>& reset,
                 SweepReport& rep);
  // Joins and leaves between sweeps: those groups' trees on the current snapshot.
  void route_changed(const std::vector<uint16_t>& mlids);
  // A new master term: believe nothing a switch was seen to hold; the next route_all
  // reads every block up to the highest MLID weft uses on every switch (another SM's
  // groups there cleared).
  void forget_all() override {
    held_.clear();
    reread_all_ = true;
  }

 private:
  std::vector<std::pair<fabric::NodeIndex, uint32_t>> route_mlid(uint16_t mlid);
  void write_mfts(std::vector<std::pair<fabric::NodeIndex, uint32_t>> blocks, SweepReport* rep);
  mad::MadEngine& eng_;
  McDb mc_;
  std::shared_ptr<const SubnetSnapshot> snap_;
  // What weft wants each switch to hold (node -> pos << 28 | block -> masks), what
  // switches hold as last read or written (switch GUID, modifier), and which switches
  // each MLID's tree crossed.
  std::map<fabric::NodeIndex, std::map<uint32_t, mad::MftBlock>> want_;
  std::map<std::pair<uint64_t, uint32_t>, mad::MftBlock> held_;
  std::map<uint16_t, std::vector<fabric::NodeIndex>> mlid_switches_;
  bool reread_all_ = false;
};

}  // namespace weft::sm
