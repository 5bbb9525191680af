// The SM's sweep, in parts: what one sweep carries from phase to phase (SweepRun),
// and the programmers that each own one kind of device state and what weft knows the
// devices hold. SubnetManager (subnet_manager.cpp) strings the phases together.
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
#include <unordered_map>
#include <vector>

#include "weft/sm/discovery.hpp"
#include "weft/sm/multicast.hpp"
#include "weft/sm/snapshot.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::sm {

void add_problem(SweepReport& rep, std::string s, const char* id = "SM-0010");

// One sweep, from discovery to the published snapshot.
struct SweepRun {
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

// PortInfo: LIDs, SM LID, neighbour MTU, operational VLs, P_Key enforcement on switch
// ports facing end ports, VLHighLimit under QoS; INIT to ARMED, then ARMED to ACTIVE.
class PortProgrammer {
 public:
  PortProgrammer(mad::MadEngine& eng, const SmOptions& o) : eng_(eng), opts_(o) {}
  void configure(SweepRun& run, Lid sm_lid);
  void activate(SweepRun& run);
  // After activate()'s MADs: the linked and ACTIVE port ends, into the report.
  void count_active(SweepRun& run) const;
  // Whether switch port p (facing an end port) filters P_Keys this sweep.
  bool enforces(const SweepRun& run, fabric::NodeIndex n, PortNum p) const;
  // Which QoS settings a port takes (CA, router, switch port 0 or external).
  const qos::QosPortConfig& qos_for(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p) const;

 private:
  static uint64_t port_key(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p);
  static bool took(const mad::PortInfo& want, const mad::PortInfo& got);
  // A switch port weft leaves down (disabled: PortPhysicalState 3) or lets up again
  // (Polling, 2): the Set, and true when the port is handled (nothing else to set).
  bool set_phys_state(SweepRun& run, fabric::NodeIndex n, PortNum p);
  static constexpr uint8_t kPhysPolling = 2, kPhysDisabled = 3;
  void confirm(SweepRun& run, fabric::NodeIndex n, PortNum p, const mad::PortInfo& want,
               const Error& why, const char* what, std::function<void(const mad::PortInfo&)> ok);
  void note_ignored(const fabric::Fabric& f, fabric::NodeIndex n, PortNum p, uint64_t key,
                    const mad::PortInfo& want, const mad::PortInfo& got, SweepReport& rep);
  mad::MadEngine& eng_;
  const SmOptions& opts_;
  // PortInfo fields a port was seen to drop from a Set (ibsim keeps none of them: it
  // has no M_Key either).
  static constexpr uint8_t kIgnoresEnforcement = 1, kIgnoresHighLimit = 2, kIgnoresMKey = 4;
  std::unordered_map<uint64_t, uint8_t> ignores_;
};

// Linear forwarding tables: the blocks that differ from what a switch holds (read
// first where weft does not know), then LinearFDBTop. What each switch holds is
// remembered while it keeps the LinearFDBTop weft left it with.
class LftProgrammer {
 public:
  explicit LftProgrammer(mad::MadEngine& eng) : eng_(eng) {}
  // Before programming (nothing else in flight): one block of every switch weft
  // believes it knows, read back by directed route and compared (the block rotates
  // sweep by sweep). A switch whose block differs (another writer that kept
  // LinearFDBTop) is believed in nothing from then on: read back whole when written.
  // Counted in the report (lft_blocks_checked, lft_switches_changed).
  void spot_check(SweepRun& run);
  // One such check of switch `n` (its block for `round`), by directed route `path`: a
  // block that is not what weft wrote is logged (SM-0055) and the switch forgotten.
  // `done(answered, differs)` when the answer (or none) is in; nothing is sent, and
  // `done` never called, for a switch weft holds no table of.
  void check_block(const fabric::Fabric& f, fabric::NodeIndex n, const mad::DrPath& path,
                   uint64_t round, std::function<void(bool answered, bool differs)> done);
  // Phase 1: every block that differs. Phase 2 (after the blocks): LinearFDBTop.
  void write_blocks(SweepRun& run);
  void write_tops(SweepRun& run);
  // A switch still holds what weft left it with: the LinearFDBTop it was set to. (A
  // switch that rebooted comes back with another.)
  bool steady(Guid sw, uint16_t lft_top_now) const;
  // One block of what weft believes switch `sw` holds, to read back and compare (a
  // spot check: the block rotates with `round`); nullopt where nothing is believed.
  std::optional<std::pair<size_t, mad::LftBlock>> spot_block(Guid sw, uint64_t round) const;
  // Believe nothing of switch `sw` (its blocks are read back whole at its next
  // programming), or of any switch (a new master term).
  void forget(Guid sw);
  void forget_all();

 private:
  void remember_block(Guid sw, size_t block, const mad::LftBlock& blk);
  // Switch n shows signs of having lost its state (a port state change, a linked port
  // not ACTIVE); what weft believes of it holds (trusted) only without them and while it
  // keeps the LinearFDBTop weft left it with.
  bool was_reset(const SweepRun& run, fabric::NodeIndex n) const;
  bool trusted(const SweepRun& run, fabric::NodeIndex n) const;
  // Reads block b of switch n and writes `blk` if the switch holds anything else.
  void read_then_write(SweepRun& run, fabric::NodeIndex n, const mad::DrPath& path, size_t b,
                       const mad::LftBlock& blk);
  void write_block(SweepRun& run, fabric::NodeIndex n, const mad::DrPath& path, size_t b,
                   const mad::LftBlock& blk);
  mad::MadEngine& eng_;
  std::map<Guid, std::vector<uint8_t>> cache_;   // what each switch holds, as written or read
  std::unordered_map<uint64_t, uint16_t> tops_;  // LinearFDBTop each switch was left with
  std::vector<fabric::NodeIndex> topped_;        // this sweep: switches whose top to write
  uint64_t round_ = 0;                           // spot_check calls: which block each checks
};

// P_Key, SL2VL and VL arbitration tables: each read where weft does not know what the
// port holds, then written where it differs. What a port holds is trusted while the
// port has not been reset since: a CA port still ACTIVE, a switch still steady.
class DeviceTables {
 public:
  DeviceTables(mad::MadEngine& eng, const SmOptions& o, const PortProgrammer& ports,
               const LftProgrammer& lfts)
      : eng_(eng), opts_(o), ports_(ports), lfts_(lfts) {}
  // Phase 1: read what is not known. Phase 2: lay out and write what differs.
  // Phase 3 (no MADs): remember what the writes left.
  void read(SweepRun& run);
  void write(SweepRun& run);
  void settle(SweepRun& run);
  // A new master term: believe nothing any port was seen to hold.
  void forget_all() { cache_.clear(); }
  // [node][port]: the P_Key table each port holds as weft laid it out, for the snapshot.
  std::vector<std::vector<std::vector<uint16_t>>> take_pkey_tables() {
    return std::exchange(pkey_tables_, {});
  }

 private:
  struct Key {
    uint64_t guid;  // the switch's node GUID, or the CA port's GUID
    uint32_t mod;
    uint16_t attr;
    uint8_t port;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.guid * 0x9E3779B97F4A7C15ull ^ (uint64_t(k.mod) << 24) ^
                                   (uint64_t(k.attr) << 8) ^ k.port);
    }
  };
  // One table write this sweep may do: where, what, and how much of it to compare.
  struct Want {
    fabric::NodeIndex n;
    PortNum p;
    uint16_t attr;
    uint32_t mod;
    mad::SmpData data;
    size_t compare_bytes;
  };
  struct PkeyJob {
    fabric::NodeIndex n;
    PortNum p;
    uint32_t mod_base;
    size_t cap;
    std::vector<uint16_t> want;
  };
  bool steady(const Discovered& d, fabric::NodeIndex n, PortNum p) const;
  Key key(const Discovered& d, fabric::NodeIndex n, PortNum p, uint16_t attr, uint32_t mod) const;
  const mad::SmpData* held(const Discovered& d, fabric::NodeIndex n, PortNum p, uint16_t attr,
                           uint32_t mod) const;
  void read_one(SweepRun& run, fabric::NodeIndex n, PortNum p, uint16_t attr, uint32_t mod);
  void plan_pkeys(SweepRun& run);
  void plan_sl2vl(SweepRun& run);
  void plan_vlarb(SweepRun& run);
  void write_pkeys(SweepRun& run, const PkeyJob& job);
  mad::MadEngine& eng_;
  const SmOptions& opts_;
  const PortProgrammer& ports_;
  const LftProgrammer& lfts_;
  std::unordered_map<Key, mad::SmpData, KeyHash> cache_;
  std::unordered_map<Key, std::string, KeyHash> read_errors_;  // this sweep's failed reads
  std::vector<PkeyJob> pkey_jobs_;                             // this sweep's
  std::vector<Want> wants_;  // this sweep's SL2VL and VLArb tables
  std::vector<std::vector<std::vector<uint16_t>>> pkey_tables_;
};

// Multicast: the groups the partition policy asks for, members whose ports left, each
// group's spanning tree over the published fabric, and the MFT blocks that differ
// from what switches hold. Trees are always computed on one snapshot (its fabric,
// node paths and end ports together), the one published.
class MulticastProgrammer {
 public:
  explicit MulticastProgrammer(mad::MadEngine& eng) : eng_(eng) {}
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
  void forget_held() {
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
