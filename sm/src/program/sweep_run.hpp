// What one sweep carries from phase to phase (SweepRun), and how a programmer reaches
// a switch (by directed route, or by LID where plan_lid_routes allows). SubnetManager
// (subnet_manager.cpp) strings the phases together; the programmers (programmer.hpp)
// read and fill the run.
//
// Every programmer only submits MADs; the sweep waits for the engine to go idle
// between phases (Driver::when_idle), so a phase reads what the previous one left in
// the SweepRun, never a callback's half-finished state.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weft/sm/discovery.hpp"
#include "weft/sm/snapshot.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::sm {

// One sweep, from discovery to the published snapshot.
struct SweepRun {
  std::function<void(Result<SweepReport>)> done;  // who waits for it
  std::chrono::steady_clock::time_point t0, phase_start;
  uint64_t sent_at_phase = 0;  // the engine's SMP count when the phase began
  std::unique_ptr<Discovery> discovery;
  bool updating = false;  // the discovery is an update of the last model
  Discovered d;
  std::unique_ptr<Discovered> model;  // what the next update starts from, if this one is up
  fabric::Fabric target;              // the discovered fabric with the LIDs assigned
  // What routing runs on when it must avoid links the programming keeps (unhealthy
  // links, unhealthy_port_policy reroute): `target` without them.
  std::optional<fabric::Fabric> route_on;
  routing::ChainResult routed;
  bool adaptive = false;  // adaptive routing asked for: the tables carry AR groups
  routing::Tables tables;
  qos::PartitionPlan plan;
  std::vector<std::vector<mad::PortInfo>> after;  // [node][port]: PortInfo as the last Set left it
  // Switch ports (GUID, port) to disable, with why (flap_policy down, or
  // unhealthy_port_policy isolate: their links are out of `target`), and to enable again
  // (released by an admin).
  std::map<std::pair<uint64_t, PortNum>, std::string> leave_down;
  std::set<std::pair<uint64_t, PortNum>> bring_up;
  // [node]: the LID a switch's tables are programmed by (LID-routed SMPs), or 0 where
  // they go by directed route (plan_lid_routes).
  std::vector<uint16_t> by_lid;
  Lid sm_lid;  // this SM's port's LID, as the LID assignment left it
  // Once published: the snapshot this sweep made, and the switches that lost what weft
  // wrote (a reset; their multicast tables are read again).
  std::shared_ptr<const SubnetSnapshot> published;
  std::shared_ptr<const SubnetSnapshot> before;  // the snapshot it replaced (null: none)
  std::set<Guid> reset;
  SweepReport rep;
  uint64_t partition_generation = 0;  // of the policy this sweep applies
  std::vector<RemoteSm> sms;          // the other SM ports found, with their SMInfo
  SmRole::Decision decision;
  std::shared_ptr<std::optional<Error>> handover_error;  // the HANDOVER's failure, if any
};

// After the first bring-up, a switch is programmed over its LID where that is safe
// while the tables change: its LID and the SM's are the ones the last sweep left, and
// the route there and back (every hop's LFT entry, every link ACTIVE) is the same
// under the tables the switches hold (`before`) and the ones being written. Elsewhere,
// and in a first bring-up, by directed route. Returns how many switches go by LID.
size_t plan_lid_routes(SweepRun& run, const SubnetSnapshot& before, Lid sm_lid);
// A request to switch n's management port, by LID where the plan says so.
inline mad::SmpRequest to_switch(const SweepRun& run, fabric::NodeIndex n, mad::SmpRequest r) {
  if (n < run.by_lid.size() && run.by_lid[n]) {
    r.directed = false;
    r.dlid = Lid{run.by_lid[n]};
    r.path = {};
  }
  return r;
}

}  // namespace weft::sm
