// The SMInfo state machine on its own: every transition, the election, the SM_Key.
#include <gtest/gtest.h>

#include "weft/sm/sm_role.hpp"

using namespace weft;
using namespace weft::mad;
using namespace weft::sm;

namespace {

constexpr uint64_t kKey = 0x1234;

SmRole role(uint8_t prio, uint64_t guid = 0x20) {
  return SmRole({.sm_key = kKey, .priority = prio, .guid = Guid{guid}});
}

RemoteSm remote(SmState st, uint8_t prio, uint64_t guid, uint64_t key = kKey) {
  RemoteSm r;
  r.guid = Guid{guid};
  r.name = "sm-" + std::to_string(guid);
  r.answered = true;
  r.info.guid = r.guid;
  r.info.state = st;
  r.info.priority = prio;
  r.info.sm_key = key;
  r.key_ok = key == kKey;
  return r;
}

SmInfo info_of(SmState st, uint8_t prio, uint64_t guid, uint64_t key = kKey) {
  return remote(st, prio, guid, key).info;
}

}  // namespace

TEST(SmRole, PriorityThenLowerGuidOutranks) {
  EXPECT_TRUE(sm_outranks(5, Guid{0x50}, 4, Guid{0x10}));
  EXPECT_FALSE(sm_outranks(4, Guid{0x10}, 5, Guid{0x50}));
  EXPECT_TRUE(sm_outranks(5, Guid{0x10}, 5, Guid{0x50}));
  EXPECT_FALSE(sm_outranks(5, Guid{0x50}, 5, Guid{0x10}));
  EXPECT_FALSE(sm_outranks(5, Guid{0x10}, 5, Guid{0x10}));
}

TEST(SmRole, AloneItBecomesMaster) {
  auto r = role(0);
  EXPECT_EQ(r.state(), SmState::kDiscovering);
  auto d = r.after_discovery({});
  EXPECT_EQ(d.kind, SmRole::Decision::kMaster);
  EXPECT_EQ(r.state(), SmState::kMaster);
  EXPECT_FALSE(r.coming_out_of_standby());
}

TEST(SmRole, DiscoveringFollowsAMasterWhateverItsPriority) {
  for (uint8_t theirs : {0, 15}) {
    auto r = role(7);
    auto d = r.after_discovery({remote(SmState::kMaster, theirs, 0x99)});
    EXPECT_EQ(d.kind, SmRole::Decision::kStandby) << int(theirs);
    EXPECT_EQ(r.state(), SmState::kStandby);
    ASSERT_TRUE(r.polled());
    EXPECT_EQ(r.polled()->guid, Guid{0x99});
  }
}

TEST(SmRole, DiscoveringWaitsForAHigherStandbyOrDiscoveringSm) {
  auto r = role(3, 0x20);
  auto d = r.after_discovery({remote(SmState::kStandby, 9, 0x99)});
  EXPECT_EQ(d.kind, SmRole::Decision::kStandby);
  // Equal priority: the lower GUID wins.
  auto r2 = role(3, 0x20);
  EXPECT_EQ(r2.after_discovery({remote(SmState::kDiscovering, 3, 0x10)}).kind,
            SmRole::Decision::kStandby);
  auto r3 = role(3, 0x20);
  EXPECT_EQ(r3.after_discovery({remote(SmState::kDiscovering, 3, 0x30)}).kind,
            SmRole::Decision::kMaster);
  // A lower standby does not stop it.
  auto r4 = role(3, 0x20);
  EXPECT_EQ(r4.after_discovery({remote(SmState::kStandby, 2, 0x10)}).kind,
            SmRole::Decision::kMaster);
}

TEST(SmRole, UnansweredNotActiveAndForeignKeyedSmsAreIgnored) {
  auto r = role(0);
  RemoteSm silent = remote(SmState::kMaster, 15, 0x91);
  silent.answered = false;
  RemoteSm asleep = remote(SmState::kNotActive, 15, 0x92);
  RemoteSm foreign = remote(SmState::kMaster, 15, 0x93, 0x777);
  EXPECT_EQ(r.after_discovery({silent, asleep, foreign}).kind, SmRole::Decision::kMaster);
}

TEST(SmRole, MasterHandsOverToTheHighestSmAbove) {
  auto r = role(5);
  ASSERT_EQ(r.after_discovery({}).kind, SmRole::Decision::kMaster);
  auto d =
      r.after_discovery({remote(SmState::kStandby, 4, 0x10), remote(SmState::kStandby, 8, 0x60),
                         remote(SmState::kStandby, 8, 0x40)});
  ASSERT_EQ(d.kind, SmRole::Decision::kHandover);
  EXPECT_EQ(d.peer->guid, Guid{0x40});
  EXPECT_EQ(r.state(), SmState::kMaster);  // until the HANDOVER is answered
  r.handover_sent(*d.peer);
  EXPECT_EQ(r.state(), SmState::kStandby);
  EXPECT_EQ(r.polled()->guid, Guid{0x40});
}

TEST(SmRole, MasterWaitsForALowerMasterToHandOver) {
  auto r = role(5);
  ASSERT_EQ(r.after_discovery({}).kind, SmRole::Decision::kMaster);
  auto d = r.after_discovery({remote(SmState::kMaster, 1, 0x10)});
  EXPECT_EQ(d.kind, SmRole::Decision::kWaitForHandover);
  EXPECT_EQ(r.state(), SmState::kMaster);
  ASSERT_TRUE(r.polled());
  // Still a lower master: keep waiting; it went standby: stop waiting.
  EXPECT_FALSE(r.poll_result(info_of(SmState::kMaster, 1, 0x10), 4));
  EXPECT_TRUE(r.poll_result(info_of(SmState::kStandby, 1, 0x10), 4));
  EXPECT_FALSE(r.polled());
  EXPECT_EQ(r.state(), SmState::kMaster);
}

TEST(SmRole, GetAnswersTheKeyOnlyToTheRightKeyOrNone) {
  auto r = role(2);
  EXPECT_EQ(r.on_request(kMethodGet, 0, info_of(SmState::kMaster, 0, 0x99, kKey), 7).info.sm_key,
            kKey);
  // OpenSM's Get carries no key: it gets ours (it ignores SMs whose key differs).
  EXPECT_EQ(r.on_request(kMethodGet, 0, info_of(SmState::kMaster, 0, 0x99, 0), 7).info.sm_key,
            kKey);
  EXPECT_EQ(r.on_request(kMethodGet, 0, info_of(SmState::kMaster, 0, 0x99, 0x55), 7).info.sm_key,
            0u);
  EXPECT_EQ(
      r.on_request(kMethodGet, 0, info_of(SmState::kMaster, 0, 0x99, kKey), 7, false).info.sm_key,
      0u);
  auto a = r.on_request(kMethodGet, 0, info_of(SmState::kMaster, 0, 0x99), 7);
  EXPECT_EQ(a.status, 0);
  EXPECT_EQ(a.info.act_count, 7u);
  EXPECT_EQ(a.info.priority, 2);
  EXPECT_EQ(a.info.guid, Guid{0x20});
  EXPECT_EQ(a.info.state, SmState::kDiscovering);
  EXPECT_FALSE(a.sweep);
}

TEST(SmRole, StandbyTakesAHandoverFromTheMaster) {
  auto r = role(9);
  ASSERT_EQ(r.after_discovery({remote(SmState::kMaster, 1, 0x99)}).kind,
            SmRole::Decision::kStandby);
  // The wrong key, or a sender that is not master, is refused and changes nothing.
  auto bad = r.on_request(kMethodSet, 1, info_of(SmState::kMaster, 1, 0x99, 0x55), 0);
  EXPECT_EQ(bad.status, 0x001C);
  EXPECT_EQ(bad.info.sm_key, 0u);
  EXPECT_EQ(r.state(), SmState::kStandby);
  auto notmaster = r.on_request(kMethodSet, 1, info_of(SmState::kStandby, 1, 0x99), 0);
  EXPECT_EQ(notmaster.status, 0x001C);
  EXPECT_EQ(r.state(), SmState::kStandby);
  auto ok = r.on_request(kMethodSet, 1, info_of(SmState::kMaster, 1, 0x99), 0);
  EXPECT_EQ(ok.status, 0);
  EXPECT_TRUE(ok.sweep);
  EXPECT_TRUE(ok.acknowledge);
  EXPECT_EQ(r.state(), SmState::kMaster);
  EXPECT_EQ(ok.info.state, SmState::kMaster);
  EXPECT_TRUE(r.coming_out_of_standby());
  EXPECT_FALSE(r.polled());
}

TEST(SmRole, AcknowledgeComesFromAStandby) {
  auto r = role(1);
  ASSERT_EQ(r.after_discovery({remote(SmState::kMaster, 1, 0x10)}).kind,
            SmRole::Decision::kStandby);
  EXPECT_EQ(r.on_request(kMethodSet, 2, info_of(SmState::kStandby, 9, 0x99), 0).status, 0);
  EXPECT_EQ(r.state(), SmState::kStandby);
  EXPECT_EQ(r.on_request(kMethodSet, 2, info_of(SmState::kMaster, 9, 0x99), 0).status, 0x001C);
}

TEST(SmRole, DisableStandbyAndDiscover) {
  auto r = role(1);
  ASSERT_EQ(r.after_discovery({remote(SmState::kMaster, 9, 0x10)}).kind,
            SmRole::Decision::kStandby);
  auto dis = r.on_request(kMethodSet, 3, info_of(SmState::kMaster, 9, 0x10), 0);
  EXPECT_EQ(dis.status, 0);
  EXPECT_EQ(r.state(), SmState::kNotActive);
  EXPECT_FALSE(dis.sweep);
  // NOTACTIVE takes only STANDBY.
  EXPECT_EQ(r.on_request(kMethodSet, 5, info_of(SmState::kMaster, 9, 0x10), 0).status, 0x001C);
  EXPECT_EQ(r.on_request(kMethodSet, 1, info_of(SmState::kMaster, 9, 0x10), 0).status, 0x001C);
  auto wake = r.on_request(kMethodSet, 4, info_of(SmState::kMaster, 9, 0x10), 0);
  EXPECT_EQ(wake.status, 0);
  EXPECT_TRUE(wake.sweep);
  EXPECT_NE(r.state(), SmState::kNotActive);
  // Back to standby under that master; DISCOVER sends it sweeping.
  ASSERT_EQ(r.after_discovery({remote(SmState::kMaster, 9, 0x10)}).kind,
            SmRole::Decision::kStandby);
  auto disc = r.on_request(kMethodSet, 5, info_of(SmState::kMaster, 9, 0x10), 0);
  EXPECT_EQ(disc.status, 0);
  EXPECT_TRUE(disc.sweep);
  EXPECT_EQ(r.state(), SmState::kDiscovering);
  // A modifier outside 1..5 is refused.
  EXPECT_EQ(r.on_request(kMethodSet, 9, info_of(SmState::kMaster, 9, 0x10), 0).status, 0x001C);
}

TEST(SmRole, AMasterTakesOnlyHandover) {
  auto r = role(5);
  ASSERT_EQ(r.after_discovery({}).kind, SmRole::Decision::kMaster);
  for (uint32_t mod : {3u, 4u, 5u})
    EXPECT_EQ(r.on_request(kMethodSet, mod, info_of(SmState::kMaster, 1, 0x10), 0).status, 0x001C)
        << mod;
  EXPECT_EQ(r.state(), SmState::kMaster);
  auto h = r.on_request(kMethodSet, 1, info_of(SmState::kMaster, 1, 0x10), 0);
  EXPECT_EQ(h.status, 0);
  EXPECT_TRUE(h.sweep);
  EXPECT_EQ(r.state(), SmState::kMaster);
}

TEST(SmRole, AStandbyTakesOverAfterRetriesUnansweredPolls) {
  auto r = role(1);
  ASSERT_EQ(r.after_discovery({remote(SmState::kMaster, 9, 0x10)}).kind,
            SmRole::Decision::kStandby);
  const int retries = 3;
  // An answer resets the count.
  EXPECT_FALSE(r.poll_result(std::nullopt, retries));
  EXPECT_FALSE(r.poll_result(std::nullopt, retries));
  EXPECT_FALSE(r.poll_result(info_of(SmState::kMaster, 9, 0x10), retries));
  EXPECT_EQ(r.failed_polls(), 0);
  for (int i = 0; i < retries; ++i) EXPECT_FALSE(r.poll_result(std::nullopt, retries)) << i;
  EXPECT_EQ(r.state(), SmState::kStandby);
  EXPECT_TRUE(r.poll_result(std::nullopt, retries));
  EXPECT_EQ(r.state(), SmState::kDiscovering);
  EXPECT_TRUE(r.coming_out_of_standby());
  // With nobody left, its sweep makes it master.
  EXPECT_EQ(r.after_discovery({}).kind, SmRole::Decision::kMaster);
  EXPECT_EQ(r.state(), SmState::kMaster);
}

TEST(SmRole, AStandbyMasterThatDropsBelowUsCountsAsGone) {
  auto r = role(5, 0x20);
  ASSERT_EQ(r.after_discovery({remote(SmState::kMaster, 1, 0x10)}).kind,
            SmRole::Decision::kStandby);
  // The master it polls went standby and is lower: not a master worth waiting for.
  EXPECT_FALSE(r.poll_result(info_of(SmState::kStandby, 1, 0x10), 1));
  EXPECT_TRUE(r.poll_result(info_of(SmState::kStandby, 1, 0x10), 1));
  // A higher standby it polls stays alive.
  auto r2 = role(1, 0x20);
  ASSERT_EQ(r2.after_discovery({remote(SmState::kStandby, 9, 0x10)}).kind,
            SmRole::Decision::kStandby);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(r2.poll_result(info_of(SmState::kStandby, 9, 0x10), 1));
}

TEST(SmRole, TheEpochMovesWheneverAnotherSmMayHaveProgrammed) {
  auto r = role(5);
  r.after_discovery({});
  const uint64_t master = r.epoch();
  // Sweep after sweep as the only master: one epoch.
  r.after_discovery({});
  r.after_discovery({remote(SmState::kStandby, 1, 0x99)});
  EXPECT_EQ(r.epoch(), master);
  // A lower master still runs: it programs while this one waits for its HANDOVER.
  auto d = r.after_discovery({remote(SmState::kMaster, 1, 0x99)});
  ASSERT_EQ(d.kind, SmRole::Decision::kWaitForHandover);
  const uint64_t waited = r.epoch();
  EXPECT_NE(waited, master);
  // It hands over: another epoch again, though the state stayed MASTER throughout.
  auto a = r.on_request(kMethodSet, uint32_t(SmControl::kHandover),
                        info_of(SmState::kMaster, 1, 0x99), 1);
  ASSERT_EQ(a.status, 0);
  EXPECT_EQ(r.state(), SmState::kMaster);
  EXPECT_NE(r.epoch(), waited);
  // Master, standby, master: a new epoch.
  const uint64_t before = r.epoch();
  r.handover_sent(remote(SmState::kStandby, 9, 0x98));
  EXPECT_EQ(r.state(), SmState::kStandby);
  a = r.on_request(kMethodSet, uint32_t(SmControl::kHandover), info_of(SmState::kMaster, 9, 0x98),
                   1);
  ASSERT_EQ(a.status, 0);
  EXPECT_EQ(r.state(), SmState::kMaster);
  EXPECT_NE(r.epoch(), before);
}
