// Test helpers for the SM on the in-process simulator: a scratch state directory
// removed afterwards, the SM options the tests start from, a generated fabric, and
// what the devices hold checked by walking their own LFTs, a leaf's uplink.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <string>

#include "weft/routing/verify.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_fabric.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    static int n = 0;
    path_ = (std::filesystem::temp_directory_path() /
             (prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(n++)))
                .string();
    std::filesystem::remove_all(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline sm::SmOptions sm_opts(const ScratchDir& d) {
  sm::SmOptions o;
  o.state_dir = d.path();
  o.engine.timeout = std::chrono::milliseconds(100);
  return o;
}

inline simulator::SimFabric sim_of(const std::string& spec) {
  auto f = simulator::make_fabric(spec);
  EXPECT_TRUE(f) << spec;
  return simulator::SimFabric(std::move(*f));
}

// A leaf's first link up to a switch, from both ends.
struct Uplink {
  fabric::NodeIndex leaf, spine;
  PortNum lp, sp;
};
inline Uplink uplink(const simulator::SimFabric& sim, const std::string& leaf_name = "leaf0") {
  const auto leaf = *sim.model().find_by_name(leaf_name);
  for (const auto& p : sim.model().node(leaf).ports)
    if (p.num && p.linked() && sim.model().node(p.peer).is_switch())
      return {leaf, p.peer, p.num, p.peer_port};
  ADD_FAILURE() << leaf_name << " has no uplink";
  return {};
}

inline routing::VerifyReport readback(const simulator::SimFabric& sim) {
  return routing::verify_lfts(sim.model(), sim.held_tables());
}

// A generic trap `number` from the switch with `lid` (issuer and source), to the SM;
// `details_lid` in DataDetails' LIDADDR (for 128: the switch itself).
inline void inject_switch_trap(simulator::SimTransport& t, uint16_t number, uint16_t lid,
                               uint16_t details_lid) {
  mad::Smp trap;
  trap.mgmt_class = mad::kClassSmiLid;
  trap.method = mad::kMethodTrap;
  trap.attr_id = mad::kAttrNotice;
  trap.tid = 0x100 + lid;
  trap.data[0] = 0x81;  // generic, urgent
  trap.data[3] = 2;     // producer: a switch
  trap.data[4] = static_cast<uint8_t>(number >> 8);
  trap.data[5] = static_cast<uint8_t>(number);
  trap.data[6] = static_cast<uint8_t>(lid >> 8);  // issuer
  trap.data[7] = static_cast<uint8_t>(lid);
  trap.data[10] = static_cast<uint8_t>(details_lid >> 8);
  trap.data[11] = static_cast<uint8_t>(details_lid);
  mad::InMad in;
  in.mad = mad::encode_smp(trap);
  in.len = mad::kMadSize;
  in.slid = Lid{lid};
  t.inject(in);
}

// A scripted SM: answers SMInfo Gets with its state, takes HANDOVER when standby,
// records every Set and trap that reaches it, and can die.
struct PeerSm {
  Guid guid;
  mad::SmState state = mad::SmState::kMaster;
  uint8_t priority = 0;
  uint64_t key = 0xfeed;
  bool alive = true;
  std::vector<std::pair<uint32_t, mad::SmInfo>> sets;  // attribute modifier, payload
  std::vector<unsigned> traps;

  simulator::SimFabric::SmAgent agent() {
    return [this](const mad::Smp& req) -> std::optional<simulator::SimFabric::AgentReply> {
      if (!alive) return std::nullopt;
      if (req.method == mad::kMethodTrap) {
        traps.push_back(unsigned(req.data[4]) << 8 | req.data[5]);
        return std::nullopt;
      }
      simulator::SimFabric::AgentReply r;
      if (req.method == mad::kMethodSet) {
        const mad::SmInfo in = mad::decode_sm_info(req.data);
        sets.push_back({req.attr_mod, in});
        if (req.attr_mod == 1 && state == mad::SmState::kStandby && in.sm_key == key)
          state = mad::SmState::kMaster;
      }
      mad::SmInfo me;
      me.guid = guid;
      me.sm_key = key;
      me.priority = priority;
      me.state = state;
      me.act_count = 42;
      r.data = mad::encode_sm_info(me);
      return r;
    };
  }
};

}  // namespace weft::testing
