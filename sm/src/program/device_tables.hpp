// The device tables' programmer: P_Key, SL2VL and VL arbitration tables.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "programmer.hpp"

namespace weft::sm {

// P_Key, SL2VL and VL arbitration tables: each read where weft does not know what the
// port holds, then written where it differs. What a port holds is trusted while the
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
  void forget_all() override { cache_.clear(); }
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

}  // namespace weft::sm
