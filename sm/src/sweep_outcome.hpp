// What a heavy sweep leaves behind, made from its SweepRun once the ports are ACTIVE:
// the model the next update starts from, the snapshot it publishes, and what that
// snapshot changed against the last one (for the event stream and the versions).
#pragma once

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "program/programmer.hpp"
#include "weft/sm/publisher.hpp"

namespace weft::sm {

// Fills run.model (the devices as this sweep leaves them: the ports' states as the last
// Sets left them, every switch's LinearFDBTop as written) and returns the snapshot,
// every part but the partitions (the multicast groups still read run.plan) filled.
// Takes the target fabric, the tables and run.after out of `run`; adds the switches that
// lost what weft wrote to run.reset.
std::shared_ptr<SubnetSnapshot> make_snapshot(SweepRun& run, Programmers& prog, const SmOptions& o,
                                              Guid sm_guid, Lid sm_lid);

// What `after` changed against `before` (null: the first snapshot): its signatures, the
// events of links that went and came with the link ends that changed (for flap
// counting), and the events of end ports that came, went or changed state or LID. At
// most 256 events of each kind, then a count.
struct SnapshotDiff {
  Publisher::Signatures signatures;
  std::vector<SmEvent> link_events;
  std::vector<std::tuple<uint64_t, PortNum, std::string>> changed_ends;  // GUID, port, name
  std::vector<SmEvent> port_events;
};
SnapshotDiff diff_snapshots(const SubnetSnapshot* before, const SubnetSnapshot& after);

}  // namespace weft::sm
