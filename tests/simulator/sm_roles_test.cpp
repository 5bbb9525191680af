// The SM beside other SMs, in process: another SM sits at an end port of the simulated
// fabric (a scripted peer answering SMInfo as an SM would), and weft must elect, stand
// by, hand over, take over and write nothing while it is not master.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "sim_sm.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;
using weft::testing::PeerSm;

namespace {

class ScratchDir {
 public:
  ScratchDir() {
    static int n = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("weft-roles-" + std::to_string(getpid()) + "-" + std::to_string(n++)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

SmOptions opts(const ScratchDir& d, uint8_t prio) {
  SmOptions o;
  o.state_dir = d.path();
  o.engine.timeout = std::chrono::milliseconds(100);
  o.engine.retries = 1;
  o.sm_priority = prio;
  o.sm_key = 0xfeed;
  o.polling_retry_number = 2;
  return o;
}

SimFabric sim_of(const std::string& spec) {
  auto f = make_fabric(spec);
  EXPECT_TRUE(f) << spec;
  return SimFabric(std::move(*f));
}

// Sets that change a device: forwarding tables, ports, P_Keys, SL2VL, VLArb, MFTs.
size_t writes(const SimFabric& sim) {
  size_t n = 0;
  for (uint16_t a :
       {kAttrLft, kAttrPortInfo, kAttrSwitchInfo, kAttrPkeyTable, kAttrSl2Vl, kAttrVlArb, kAttrMft})
    n += sim.sets(a);
  return n;
}

// The peer at host h1-1's port 1.
struct Fabric {
  SimFabric sim = sim_of("ft2:leaves=3,spines=2,hosts=2");
  fabric::NodeIndex peer_node = *sim.model().find_by_name("h1-1");
  PeerSm peer;
  Fabric(SmState st, uint8_t prio) {
    peer.guid = sim.model().node(peer_node).ports[1].guid;
    peer.state = st;
    peer.priority = prio;
  }
  void attach() { sim.attach_sm(peer_node, 1, peer.agent()); }
};

// Another SM's SMInfo Get or Set, as the MAD that reaches the SM.
InMad sm_info_request(uint8_t mgmt_class, uint8_t method, uint32_t mod, Guid from, uint64_t key,
                      SmState state, Lid slid = {}) {
  Smp q;
  q.mgmt_class = mgmt_class;
  q.method = method;
  q.attr_id = kAttrSmInfo;
  q.attr_mod = mod;
  q.tid = 90;
  SmInfo si;
  si.guid = from;
  si.sm_key = key;
  si.state = state;
  q.data = encode_sm_info(si);
  InMad in;
  in.mad = encode_smp(q);
  in.len = kMadSize;
  in.slid = slid;
  return in;
}

std::map<uint64_t, uint16_t> lids_of(const fabric::Fabric& f) {
  std::map<uint64_t, uint16_t> out;
  for (auto [n, p] : f.lid_ports())
    out[f.node(n).ports[p].guid.value] = f.node(n).ports[p].attrs.lid.value;
  return out;
}

}  // namespace

TEST(SmRoles, UnderAMasterOfLowerPriorityItStandsByAndWritesNothing) {
  ScratchDir dir;
  Fabric fx(SmState::kMaster, 0);
  fx.attach();
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 10));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->sm_state, SmState::kStandby) << rep->reason;
  EXPECT_FALSE(rep->subnet_up);
  EXPECT_EQ(sm.sm_state(), SmState::kStandby);
  EXPECT_EQ(writes(fx.sim), 0u) << "a standby must not program";
  ASSERT_EQ(rep->sms.size(), 1u);
  EXPECT_EQ(rep->sms[0].guid, fx.peer.guid);
  EXPECT_EQ(rep->sms[0].info.state, SmState::kMaster);
  auto p = sm.published();
  EXPECT_EQ(p->state, SmState::kStandby);
  EXPECT_EQ(p->master_guid, fx.peer.guid);
  ASSERT_EQ(p->sms.size(), 1u);
  // No LIDs on the fabric yet: no trap 144 can be routed to the master.
  EXPECT_TRUE(fx.peer.traps.empty());
}

TEST(SmRoles, AlonePriorityDoesNotMatterAndALowerDiscoveringSmDoesNotStopIt) {
  ScratchDir dir;
  Fabric fx(SmState::kDiscovering, 3);
  fx.attach();
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 4));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_EQ(sm.sm_state(), SmState::kMaster);
  EXPECT_GT(writes(fx.sim), 0u);
}

TEST(SmRoles, AHigherDiscoveringSmIsWaitedFor) {
  ScratchDir dir;
  Fabric fx(SmState::kDiscovering, 5);
  fx.attach();
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 4));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->sm_state, SmState::kStandby) << rep->reason;
  EXPECT_EQ(writes(fx.sim), 0u);
}

TEST(SmRoles, ForeignSmKeyIsIgnored) {
  ScratchDir dir;
  Fabric fx(SmState::kMaster, 15);
  fx.peer.key = 0xbad;
  fx.attach();
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 0));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_EQ(sm.sm_state(), SmState::kMaster);
  ASSERT_EQ(rep->sms.size(), 1u);
  EXPECT_FALSE(rep->sms[0].key_ok);
}

TEST(SmRoles, AMasterHandsOverToAHigherStandbyThatAppearsAndTellsItsKey) {
  ScratchDir dir;
  Fabric fx(SmState::kStandby, 9);
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 2));
  auto first = sm.sweep();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->subnet_up) << first->reason;
  const size_t after_bringup = writes(fx.sim);
  fx.attach();  // the higher SM starts, as a standby (it found weft master)
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->sm_state, SmState::kStandby) << rep->reason;
  ASSERT_EQ(fx.peer.sets.size(), 1u);
  EXPECT_EQ(fx.peer.sets[0].first, 1u);  // HANDOVER
  EXPECT_EQ(fx.peer.sets[0].second.sm_key, 0xfeedu);
  EXPECT_EQ(fx.peer.sets[0].second.state, SmState::kMaster);
  EXPECT_EQ(fx.peer.state, SmState::kMaster);
  EXPECT_EQ(writes(fx.sim), after_bringup) << "the handover sweep programs nothing";
  EXPECT_EQ(sm.sm_state(), SmState::kStandby);
  EXPECT_EQ(sm.published()->master_guid, fx.peer.guid);
}

TEST(SmRoles, AStandbyTakesOverWithEveryLidAsTheFabricHoldsIt) {
  ScratchDir first_dir, dir;
  Fabric fx(SmState::kMaster, 9);
  // The first master brings the fabric up from h1-1 (the peer's port), then stays
  // there as a scripted master; weft starts at h0-0 with a stale guid2lid of its own
  // that numbers every port differently.
  {
    SimTransport t0(fx.sim, {.attach = fx.peer_node, .port = 1});
    SubnetManager m0(t0, opts(first_dir, 9));
    auto rep = m0.sweep();
    ASSERT_TRUE(rep && rep->subnet_up);
  }
  const auto held = lids_of(fx.sim.model());
  {
    std::ofstream g(dir.path() + "/guid2lid");
    uint16_t l = 200;
    for (const auto& [guid, lid] : held) {
      g << "0x" << std::hex << guid << std::dec << " " << l << " " << l << "\n";
      ++l;
    }
  }
  fx.attach();
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 1));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  ASSERT_EQ(rep->sm_state, SmState::kStandby) << rep->reason;
  const size_t writes_before = writes(fx.sim);
  // Entering standby it told the master with trap 144 (the master has a LID now).
  ASSERT_EQ(fx.peer.traps.size(), 1u);
  EXPECT_EQ(fx.peer.traps[0], 144u);
  // The master answers its polls; then it dies.
  std::optional<bool> gone;
  sm.poll_master([&](bool g) { gone = g; });
  ASSERT_TRUE(gone);
  EXPECT_FALSE(*gone);
  fx.peer.alive = false;
  int polls = 0;
  for (gone.reset(); !gone || !*gone; ++polls) {
    ASSERT_LT(polls, 10);
    gone.reset();
    sm.poll_master([&](bool g) { gone = g; });
    ASSERT_TRUE(gone);
  }
  EXPECT_EQ(polls, 3);  // polling_retry_number 2: the third unanswered poll
  EXPECT_EQ(writes(fx.sim), writes_before) << "polling writes nothing";
  EXPECT_TRUE(sm.needs_sweep());
  auto take = sm.sweep();
  ASSERT_TRUE(take);
  EXPECT_TRUE(take->subnet_up) << take->reason;
  EXPECT_EQ(sm.sm_state(), SmState::kMaster);
  EXPECT_EQ(lids_of(fx.sim.model()), held) << "a takeover keeps the LIDs the ports hold";
  EXPECT_EQ(take->lid_assignment.changed, 0u);
}

TEST(SmRoles, AnswersSmInfoGetsWithTheKeyOnlyToWhoKnowsIt) {
  ScratchDir dir;
  SimFabric sim = sim_of("ft2:leaves=2,spines=1,hosts=2");
  SimTransport t(sim, {});
  SubnetManager sm(t, opts(dir, 6));
  ASSERT_TRUE(sm.sweep());
  auto ask = [&](uint8_t method, uint32_t mod, uint64_t key, SmState st) {
    t.inject(sm_info_request(kClassSmiLid, method, mod, Guid{0x777}, key, st, Lid{3}));
    EXPECT_TRUE(sm.serve_for(std::chrono::milliseconds(10)));
    auto r = decode_smp(t.sent_responses().back().data(), kMadSize);
    EXPECT_TRUE(r);
    return *r;
  };
  auto right = ask(kMethodGet, 0, 0xfeed, SmState::kStandby);
  EXPECT_EQ(decode_sm_info(right.data).sm_key, 0xfeedu);
  EXPECT_EQ(decode_sm_info(right.data).priority, 6);
  EXPECT_EQ(decode_sm_info(right.data).state, SmState::kMaster);
  EXPECT_GT(decode_sm_info(right.data).act_count, 0u);
  EXPECT_EQ(decode_sm_info(ask(kMethodGet, 0, 0x1, SmState::kStandby).data).sm_key, 0u);
  // A HANDOVER with the wrong key is refused; the master stays master.
  auto bad = ask(kMethodSet, 1, 0x1, SmState::kMaster);
  EXPECT_EQ(bad.status, 0x001C);
  EXPECT_EQ(sm.sm_state(), SmState::kMaster);
  EXPECT_FALSE(sm.needs_sweep());
  // DISABLE is not for a master.
  EXPECT_EQ(ask(kMethodSet, 3, 0xfeed, SmState::kMaster).status, 0x001C);
  // Another master handing over: taken, and a sweep is due.
  EXPECT_EQ(ask(kMethodSet, 1, 0xfeed, SmState::kMaster).status, 0);
  EXPECT_TRUE(sm.needs_sweep());
}

TEST(SmRoles, AStandbyThatIsHandedOverAcknowledgesAndBecomesMaster) {
  ScratchDir first_dir, dir;
  Fabric fx(SmState::kMaster, 1);
  {
    SimTransport t0(fx.sim, {.attach = fx.peer_node, .port = 1});
    SubnetManager m0(t0, opts(first_dir, 1));
    ASSERT_TRUE(m0.sweep());
  }
  const auto held = lids_of(fx.sim.model());
  fx.attach();
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 5));
  ASSERT_EQ(sm.sweep()->sm_state, SmState::kStandby);  // it follows the running master
  // The master hands over to the higher standby (as OpenSM does).
  t.inject(sm_info_request(kClassSmiDirect, kMethodSet, 1, fx.peer.guid, 0xfeed, SmState::kMaster));
  ASSERT_TRUE(sm.serve_for(std::chrono::milliseconds(10)));
  auto r = decode_smp(t.sent_responses().back().data(), kMadSize);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(sm.sm_state(), SmState::kMaster);
  EXPECT_TRUE(sm.needs_sweep());
  ASSERT_EQ(fx.peer.sets.size(), 1u);
  EXPECT_EQ(fx.peer.sets[0].first, 2u);  // ACKNOWLEDGE
  EXPECT_EQ(fx.peer.sets[0].second.state, SmState::kStandby);
  fx.peer.state = SmState::kStandby;  // the old master stands by
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_EQ(lids_of(fx.sim.model()), held);
}

TEST(SmRoles, ADisabledStandbySweepsNothingAndATrapDoesNotLoopIt) {
  ScratchDir dir;
  Fabric fx(SmState::kMaster, 9);
  fx.attach();
  SimTransport t(fx.sim, {});
  SubnetManager sm(t, opts(dir, 1));
  ASSERT_EQ(sm.sweep()->sm_state, SmState::kStandby);
  auto set = [&](uint32_t mod) {
    t.inject(
        sm_info_request(kClassSmiDirect, kMethodSet, mod, fx.peer.guid, 0xfeed, SmState::kMaster));
    EXPECT_TRUE(sm.serve_for(std::chrono::milliseconds(10)));
  };
  set(3);  // DISABLE
  EXPECT_EQ(sm.sm_state(), SmState::kNotActive);
  EXPECT_FALSE(sm.polling());
  // A trap reaches it anyway: the sweep it asks for does nothing and is spent.
  Smp trap;
  trap.mgmt_class = kClassSmiLid;
  trap.method = kMethodTrap;
  trap.attr_id = kAttrNotice;
  trap.data[0] = 0x81;
  trap.data[5] = 128;
  InMad in;
  in.mad = encode_smp(trap);
  in.len = kMadSize;
  in.slid = Lid{2};
  t.inject(in);
  ASSERT_TRUE(sm.serve_for(std::chrono::milliseconds(10)));
  EXPECT_TRUE(sm.needs_sweep());
  const size_t before = fx.sim.sets(kAttrPortInfo) + fx.sim.sets(kAttrLft);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->sm_state, SmState::kNotActive);
  EXPECT_FALSE(sm.needs_sweep());
  EXPECT_EQ(fx.sim.sets(kAttrPortInfo) + fx.sim.sets(kAttrLft), before);
  set(4);  // STANDBY wakes it; its sweep (reads only) finds the master again
  EXPECT_TRUE(sm.needs_sweep());
  ASSERT_EQ(sm.sweep()->sm_state, SmState::kStandby);
  EXPECT_TRUE(sm.polling());
}
