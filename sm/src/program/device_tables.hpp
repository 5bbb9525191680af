// The device tables' programmer: P_Key, SL2VL and VL arbitration tables.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "programmer.hpp"

namespace weft::sm {

// P_Key, SL2VL and VL arbitration tables: each read where weft does not know what the
// port holds, then written where it differs (a switch port whose inputs all map alike:
// see PortMap). What a port holds is trusted while the
// port has not been reset since: a CA port still ACTIVE, a switch still steady.
class PortProgrammer;
class LftProgrammer;

class DeviceTables final : public Programmer {
 public:
  DeviceTables(mad::MadEngine& eng, const SmOptions& o, const PortProgrammer& ports,
               const LftProgrammer& lfts)
      : eng_(eng), opts_(o), ports_(ports), lfts_(lfts) {}
  std::string_view name() const override { return "tables"; }
  // kCommit: read(); kTables: write(); kActivate: settle().
  void step(Step s, SweepRun& run) override;
  // Phase 1: read what is not known. Phase 2: lay out and write what differs.
  // Phase 3 (no MADs): remember what the writes left.
  void read(SweepRun& run);
  void write(SweepRun& run);
  void settle(SweepRun& run);
  // A new master term: believe nothing any port was seen to hold.
  void forget_all() override {
    cache_.clear();
    cursor_.reset();
  }
  // Before programming (kSpotCheck, while the routing computes), and in a light sweep:
  // drift_check_table_blocks of the table blocks weft believes ports hold (of ports
  // still steady), read back by directed route and compared. The blocks rotate: each
  // check goes on after the last block the previous one read, so every block held is
  // read within ceil(held / N) checks (a switch port holding one SL2VL table for all its
  // inputs is one block, read at one input per pass: every input within num_ports + 1
  // passes). A block that is not what weft wrote or read
  // (another writer; a port that lost it with no other sign) is logged (SM-0059), told
  // to on_drift(), and believed no more: the next programming reads it again and
  // rewrites it. `answered(n, p, differs)` for each block that answered.
  void check(const Discovered& d,
             std::function<void(fabric::NodeIndex, PortNum, bool differs)> answered);
  void spot_check(SweepRun& run);
  // Told of each block found changed: (table: "pkey", "sl2vl" or "vlarb", the port, the
  // attribute modifier).
  void on_drift(
      std::function<void(std::string_view table, const std::string& where, uint32_t mod)> f) {
    on_drift_ = std::move(f);
  }
  // [node][port]: the P_Key table each port holds as weft laid it out, for the snapshot.
  std::vector<std::vector<std::vector<uint16_t>>> take_pkey_tables() {
    return std::exchange(pkey_tables_, {});
  }

 private:
  struct Key {
    uint64_t guid;  // the node GUID (a switch's, a CA's or a router's)
    uint32_t mod;
    uint16_t attr;
    uint8_t port;
    auto operator<=>(const Key&) const = default;
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
  // A switch output port whose every input port is to map alike, to one table. Held as
  // one cache entry (kAllInputs), never one per input (the radix-56 tree has 12.7 M
  // input-output pairs). Written with one Set for all inputs where the switch takes it
  // (SwitchInfo:OptimizedSLtoVLMappingProgramming; one for the whole switch when its every
  // output port wants the table), else input by input: one input's table is read first,
  // and only if it already holds the table are the others read before any is written
  // (writing what no read has shown right costs what reading it would).
  struct PortMap {
    fabric::NodeIndex n;
    PortNum out;
    mad::SmpData table;
    bool optimized;     // the switch takes all-inputs Sets
    bool whole_switch;  // ... and every output port wants this table: one Set for all
    enum class Sample : uint8_t { kUnread, kSame, kDiffers } sample = Sample::kUnread;
    uint16_t left = 0;    // this port's Gets and Sets not yet answered
    bool failed = false;  // a Set failed or a Get went unanswered: not held
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
  // Reads one block (not held: read() decided).
  void read_one(SweepRun& run, fabric::NodeIndex n, PortNum p, uint16_t attr, uint32_t mod);
  void plan_pkeys(SweepRun& run);
  void plan_sl2vl(SweepRun& run);
  void plan_vlarb(SweepRun& run);
  // (`held`: the job's blocks as the cache has them, each one there.)
  void write_pkeys(SweepRun& run, const PkeyJob& job, const std::vector<const mad::SmpData*>& held);
  // port_maps_[i]: its sample input's table read; its tables written (and, where the
  // sample held the table already, the other inputs read first); every input Set.
  void read_sample(SweepRun& run, size_t i);
  void write_port_map(SweepRun& run, size_t i);
  void set_inputs(SweepRun& run, size_t i);
  void set_input(SweepRun& run, size_t i, PortNum in);
  // One of port_maps_[i]'s SMPs answered (ok: the input holds the table); at the last,
  // the port is held as mapping every input alike, unless one failed.
  void port_map_done(SweepRun& run, size_t i, bool ok);
  // What weft believed each input port's SL2VL table toward `out` held (entries per input):
  // believed no more (a port mapping all inputs alike is decided as one).
  void forget_inputs(const Discovered& d, fabric::NodeIndex n, PortNum out);
  mad::MadEngine& eng_;
  const SmOptions& opts_;
  const PortProgrammer& ports_;
  const LftProgrammer& lfts_;
  // Ordered, so that the drift checks rotate through it from where the last one ended.
  std::map<Key, mad::SmpData> cache_;
  std::optional<Key> cursor_;  // the first block the next check reads
  std::function<void(std::string_view, const std::string&, uint32_t)> on_drift_;
  std::unordered_map<Key, std::string, KeyHash> read_errors_;  // this sweep's failed reads
  std::vector<PkeyJob> pkey_jobs_;                             // this sweep's
  std::vector<Want> wants_;          // this sweep's SL2VL and VLArb tables, each input apart
  std::vector<PortMap> port_maps_;   // this sweep's switch ports mapping all inputs alike
  uint64_t check_pass_ = 0;          // the drift checks' passes over the cache begun
  bool said_not_optimized_ = false;  // SM-0105 said (use_optimized_slvl FALSE costing Sets)
  std::vector<std::vector<std::vector<uint16_t>>> pkey_tables_;
};

}  // namespace weft::sm
