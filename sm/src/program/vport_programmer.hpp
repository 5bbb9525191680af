// SR-IOV virtual ports (the wire: weft/mad/vport.hpp). On every CA port whose PortInfo
// says it supports virtualization, virt_enabled 2 turns virtualization on and finds the
// port's vports: VirtualizationInfo, VPortState by block of 128, then each live vport's
// VPortInfo, VNodeInfo and VNodeDescription. Later sweeps read VirtualizationInfo only,
// and read a port's vports again where its VPortStateChange says they changed (the Set
// that turns it on also clears that bit, before the states are read: a change after it
// raises the bit again). Each vport's VPortPKeyTable gets the partitions its GUID is a
// member of (read where not known, written where it differs), and a vport the host
// brought to INIT goes to ARMED and ACTIVE once its table holds them. virt_enabled 1
// turns virtualization off where it is on; 0 leaves every port alone.
//
//   vp.discover(run);   // after discovery, as master: VirtualizationInfo and the vports
//   ...                 // the engine idle
//   vp.adopt(run);      // run.d.fabric.vports(): what was found
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "programmer.hpp"
#include "weft/mad/vport.hpp"

namespace weft::sm {

class VPortProgrammer final : public Programmer {
 public:
  VPortProgrammer(mad::MadEngine& eng, const SmOptions& o) : eng_(eng), opts_(o) {}
  std::string_view name() const override { return "vports"; }
  void discover(SweepRun& run);
  // A light sweep's check on the last model: VirtualizationInfo of every CA port with
  // virtualization; `changed(n, p)` for each whose vports changed (VPortStateChange),
  // whose virtualization is not as virt_enabled asks, or whose last read failed.
  void check(const Discovered& model, std::function<void(fabric::NodeIndex, PortNum)> changed);
  void adopt(SweepRun& run);
  // kConfigure: the LIDs of vports that require one; kCommit: read the VPortPKeyTable
  // blocks not known; kTables: write what differs; kActivate: vports the host brought
  // up to ARMED, then ACTIVE, where their port is ACTIVE (kPublished: the others, once
  // the sweep has activated their ports).
  void step(Step s, SweepRun& run) override;
  // A new term (or a restart): what this SM knew of the vports, and which VFs' clients
  // registered with it.
  void forget_all() override {
    books_.clear();
    tables_.clear();
    reregistered_.clear();
  }

 private:
  struct Found {
    fabric::VPort v;
    mad::VPortInfo info;  // as read: the Sets write over it
    int reads_ok = 0;     // of its VPortInfo, VNodeInfo and VNodeDescription
  };
  struct Book {
    bool known = false;  // read whole since the port's last VPortStateChange
    std::vector<Found> vports;
    // Reads of the port that failed in a row, and light sweeps since the last: a port
    // that keeps failing is read again after 1, 2, 4, ... 64 light sweeps, not each.
    uint32_t failures = 0, waits = 0;
  };
  struct Walk;  // one port's reads this sweep
  // (port GUID, vport index, block) -> the VPortPKeyTable block it holds.
  using TableKey = std::tuple<uint64_t, uint16_t, uint16_t>;

  void start_next(SweepRun& run);
  void read_port(SweepRun& run, std::shared_ptr<Walk> w);
  void read_vports(SweepRun& run, std::shared_ptr<Walk> w, uint16_t top);
  void port_done(SweepRun& run, const std::shared_ptr<Walk>& w);
  Found* found(const SweepRun& run, const fabric::VPort& v);
  bool owes_rereg(const SweepRun& run, const fabric::VPort& v, bool new_lid) const;
  // kConfigure: each VF's LID where it requires one, and the ClientReregisters owed.
  void write_lids(SweepRun& run);
  void read_tables(SweepRun& run);
  void write_tables(SweepRun& run);
  void activate(SweepRun& run);
  // Vport v (of run.target.vports()[i], SIZE_MAX once published) to `to`; ARMED goes on
  // to ACTIVE.
  void set_state(SweepRun& run, fabric::VPort v, size_t i, mad::VPortState to);

  mad::MadEngine& eng_;
  const SmOptions& opts_;
  std::unordered_map<uint64_t, Book> books_;  // by physical port GUID
  std::map<TableKey, mad::SmpData> tables_;
  // This sweep's: the ports to read (node, port), the next to start, how many are out.
  std::vector<std::pair<fabric::NodeIndex, PortNum>> queue_;
  size_t next_ = 0, out_ = 0;
  std::vector<bool> ready_;  // per run.target.vports(): its table holds what it should
  // This sweep's vports whose port was not ACTIVE yet: activated once the snapshot is
  // published (run.target is the snapshot's then: they carry what set_state needs).
  std::vector<fabric::VPort> deferred_;
  // VFs (by GUID) told to reregister this term, or brought to ACTIVE by it, and the LID
  // they had then: their clients hold their joins and subscriptions with this SM.
  std::unordered_map<uint64_t, uint16_t> reregistered_;
};

}  // namespace weft::sm
