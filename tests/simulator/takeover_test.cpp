// A new master trusts nothing it cached (issue 40), in process: another SM programs the
// fabric while weft is not master (its own tables, its own partitions, MFT entries of
// its own) and leaves LinearFDBTop as weft had it; weft's first sweep as master again
// makes every table what weft publishes, and a link cut after that leaves no loop. A
// writer that changes LFT blocks under a steady master is found by the spot checks.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim_sm.hpp"
#include "weft/config/partitions.hpp"
#include "weft/mad/mad_engine.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;
using namespace weft::testing;
using fabric::NodeIndex;

namespace {

SmOptions role_opts(const ScratchDir& d, uint8_t prio) {
  SmOptions o = sm_opts(d);
  o.engine.retries = 1;
  o.sm_priority = prio;
  o.sm_key = 0xfeed;
  o.polling_retry_number = 2;
  return o;
}

config::PartitionPolicy partitions(const SimFabric& sim, const std::string& name, uint16_t pkey,
                                   const std::vector<std::string>& members) {
  std::string text = "Default=0x7fff, ipoib : ALL, SELF=full ;\n" + name + "=0x" +
                     std::to_string(pkey) + ", ipoib : ";
  for (size_t i = 0; i < members.size(); ++i) {
    auto n = sim.model().find_by_name(members[i]);
    EXPECT_TRUE(n) << members[i];
    text += (i ? ", " : "") + sim.model().node(*n).ports[1].guid.str() + "=full";
  }
  auto pol = config::parse_partitions(text + " ;\n", "partitions.conf");
  EXPECT_TRUE(pol) << (pol ? "" : pol.error().message);
  return *pol;
}

// (switch, LID) entries the devices hold other than the published tables say.
size_t lft_differences(const SimFabric& sim, const SubnetSnapshot& snap) {
  size_t diff = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    if (!sim.model().node(n).is_switch()) continue;
    auto s = snap.fabric.find(sim.model().node(n).guid);
    EXPECT_TRUE(s);
    if (!s) return ~size_t(0);
    const auto& want = snap.tables.lft[*s];
    const auto& held = sim.lft(n);
    for (uint16_t lid = 1; lid <= snap.tables.top_lid; ++lid) {
      const uint8_t w = lid < want.size() ? want[lid] : kDropPort;
      const uint8_t h = lid < held.size() ? held[lid] : kDropPort;
      diff += w != h;
    }
  }
  return diff;
}

std::vector<uint16_t> used(const std::vector<uint16_t>& t) {
  std::vector<uint16_t> v;
  for (uint16_t k : t)
    if (k & 0x7fff) v.push_back(k);
  return v;
}

// Ports whose P_Key table (the keys in use) is not the one weft laid out.
size_t pkey_differences(const SimFabric& sim, const SubnetSnapshot& snap) {
  size_t diff = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    auto s = snap.fabric.find(nd.guid);
    if (!s || *s >= snap.pkey_tables.size()) continue;
    for (PortNum p = 0; p <= nd.num_ports; ++p)
      if (p < snap.pkey_tables[*s].size() && !snap.pkey_tables[*s][p].empty())
        diff += used(sim.pkeys(n, p)) != used(snap.pkey_tables[*s][p]);
  }
  return diff;
}

// What another writer does with raw SMPs from the SM's port: an MFT block set on
// every switch (every port of position 0 in MLID 0xC000's entry).
void scribble_mfts(SimFabric& sim, const SubnetSnapshot& snap, NodeIndex from) {
  MftBlock blk{};
  blk[0] = 0xfffe;
  for (NodeIndex s = 0; s < snap.fabric.size(); ++s) {
    if (!snap.fabric.node(s).is_switch()) continue;
    auto out = sim.process(
        encode_smp(SmpRequest::set(kAttrMft, 0, snap.node_paths[s], encode_mft_block(blk)), 7),
        from, 1);
    ASSERT_TRUE(out.reply);
  }
}

// A raw LFT Set of block `b` on every switch, keeping LinearFDBTop: each entry's port
// moved to the switch's next linked port (a table no SM would write, and loops).
size_t rewrite_lft_block(SimFabric& sim, const SubnetSnapshot& snap, NodeIndex from, size_t b) {
  size_t switches = 0;
  for (NodeIndex s = 0; s < snap.fabric.size(); ++s) {
    const auto& nd = snap.fabric.node(s);
    if (!nd.is_switch()) continue;
    const auto sim_n = *sim.model().find(nd.guid);
    LftBlock blk;
    const auto& held = sim.lft(sim_n);
    for (size_t i = 0; i < 64; ++i) {
      const size_t lid = b * 64 + i;
      uint8_t port = lid < held.size() ? held[lid] : kDropPort;
      if (port != kDropPort && port != 0)
        for (PortNum q = 1; q <= nd.num_ports; ++q) {
          const PortNum next = PortNum(port % nd.num_ports + 1);
          port = next;
          if (nd.ports[next].linked()) break;
        }
      blk[i] = port;
    }
    auto out = sim.process(
        encode_smp(
            SmpRequest::set(kAttrLft, uint32_t(b), snap.node_paths[s], encode_lft_block(blk)), 9),
        from, 1);
    EXPECT_TRUE(out.reply);
    ++switches;
  }
  return switches;
}

}  // namespace

TEST(Takeover, ANewMasterReadsBackWhatAnotherSmProgrammedAndRewritesTheDifference) {
  ScratchDir dir("weft-takeover"), other_dir("weft-takeover-other");
  SimFabric sim = sim_of("ft2:leaves=4,spines=3,hosts=3");
  const NodeIndex weft_node = *sim.model().find_by_name("h0-0");
  const NodeIndex peer_node = *sim.model().find_by_name("h3-2");
  SimTransport t(sim, {.attach = weft_node, .port = 1});
  SmOptions o = role_opts(dir, 2);
  o.routing_engine = "minhop";
  o.partitions = partitions(sim, "Storage", 8002, {"h0-1", "h1-0", "h2-2"});
  SubnetManager weft(t, o);
  auto up = weft.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  EXPECT_TRUE(up->new_term);
  ASSERT_EQ(lft_differences(sim, *weft.snapshot()), 0u);

  // A higher SM appears as a standby: weft hands over and stands by.
  PeerSm peer;
  peer.guid = sim.model().node(peer_node).ports[1].guid;
  peer.state = SmState::kStandby;
  peer.priority = 9;
  sim.attach_sm(peer_node, 1, peer.agent());
  auto handed = weft.sweep();
  ASSERT_TRUE(handed);
  ASSERT_EQ(weft.sm_state(), SmState::kStandby) << handed->reason;
  ASSERT_EQ(peer.state, SmState::kMaster);

  // That master programs the fabric its own way (another engine, other partitions),
  // keeping the LIDs and so LinearFDBTop; it also leaves an MFT entry of its own.
  {
    SimTransport t2(sim, {.attach = peer_node, .port = 1});
    SmOptions o2 = role_opts(other_dir, 9);
    o2.routing_engine = "updn";
    o2.roots = {sim.model().node(*sim.model().find_by_name("leaf1")).guid};
    o2.partitions = partitions(sim, "Scratch", 8003, {"h0-0", "h3-1"});
    SubnetManager other(t2, o2);
    auto rep = other.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    EXPECT_EQ(rep->top_lid, up->top_lid);
    scribble_mfts(sim, *other.snapshot(), peer_node);
  }
  const size_t foreign = lft_differences(sim, *weft.snapshot());
  EXPECT_GT(foreign, 20u) << "the other SM's tables differ from weft's";
  EXPECT_GT(pkey_differences(sim, *weft.snapshot()), 0u);
  EXPECT_FALSE(sim.mcast_reach(0xC000, weft_node, 1).empty());

  // The master dies; weft takes over.
  peer.alive = false;
  bool gone = false;
  for (int polls = 0; polls < 10 && !gone; ++polls) weft.poll_master([&](bool g) { gone = g; });
  ASSERT_TRUE(gone);
  const uint64_t rereg_before = sim.client_reregisters();
  auto take = weft.sweep();
  ASSERT_TRUE(take && take->subnet_up) << (take ? take->reason : take.error().message);
  // Every CA port is told to re-register, once: the hosts' joins were the other SM's.
  EXPECT_EQ(take->client_reregisters, take->cas);
  EXPECT_EQ(sim.client_reregisters() - rereg_before, take->cas);
  ASSERT_EQ(weft.sm_state(), SmState::kMaster);
  EXPECT_TRUE(take->new_term);
  EXPECT_GT(take->lft_blocks_read, 0u) << "every block below the top read back";
  EXPECT_GT(take->lft_blocks_written, 0u) << foreign << " entries differed";
  EXPECT_GT(take->mft_blocks_read, 0u);
  EXPECT_EQ(lft_differences(sim, *weft.snapshot()), 0u)
      << "every (switch, LID) entry is what weft publishes";
  EXPECT_EQ(pkey_differences(sim, *weft.snapshot()), 0u);
  // Nobody joined 0xC000 under weft: the other writer's entry is gone.
  EXPECT_TRUE(sim.mcast_reach(0xC000, weft_node, 1).empty());
  auto vr = readback(sim);
  EXPECT_TRUE(vr.ok()) << vr.first_problem;

  // A link cut after that: no loop, every pair reachable.
  const auto up_link = uplink(sim, "leaf2");
  sim.unlink(up_link.leaf, up_link.lp);
  auto cut = weft.light_sweep();
  ASSERT_TRUE(cut && cut->subnet_up) << (cut ? cut->reason : cut.error().message);
  EXPECT_TRUE(cut->heavy);
  EXPECT_FALSE(cut->new_term);
  vr = readback(sim);
  EXPECT_EQ(vr.loops, 0u) << vr.first_problem;
  EXPECT_EQ(vr.unreachable, 0u) << vr.first_problem;
  EXPECT_EQ(lft_differences(sim, *weft.snapshot()), 0u);
}

TEST(Takeover, LftBlocksChangedUnderASteadyMasterAreFoundAndTheSwitchReadBackWhole) {
  ScratchDir dir("weft-takeover");
  SimFabric sim = sim_of("ft2:leaves=4,spines=2,hosts=2");
  const NodeIndex weft_node = *sim.model().find_by_name("h0-0");
  SimTransport t(sim, {.attach = weft_node, .port = 1});
  SubnetManager weft(t, role_opts(dir, 2));
  auto up = weft.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  ASSERT_LT(up->top_lid, 64) << "one block per switch: every switch's block is checked";
  // A quiet heavy sweep checks one block per switch and finds nothing.
  auto quiet = weft.sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_FALSE(quiet->new_term);
  EXPECT_EQ(quiet->lft_blocks_checked, quiet->switches);
  EXPECT_EQ(quiet->lft_switches_changed, 0u);
  EXPECT_EQ(quiet->lft_blocks_read, 0u);
  EXPECT_EQ(quiet->lft_blocks_written, 0u);

  // Another writer rewrites block 0 of every switch, LinearFDBTop untouched.
  const size_t switches = rewrite_lft_block(sim, *weft.snapshot(), weft_node, 0);
  ASSERT_GT(lft_differences(sim, *weft.snapshot()), 0u);
  EXPECT_GT(readback(sim).loops + readback(sim).unreachable, 0u);
  // The light sweep's spot checks find every switch and it reads them again.
  auto found = weft.light_sweep();
  ASSERT_TRUE(found && found->subnet_up) << (found ? found->reason : found.error().message);
  EXPECT_TRUE(found->heavy);
  EXPECT_EQ(found->lft_switches_changed, switches);
  EXPECT_EQ(lft_differences(sim, *weft.snapshot()), 0u);
  auto vr = readback(sim);
  EXPECT_TRUE(vr.ok()) << vr.first_problem;
  // Once more, under a heavy sweep's spot checks.
  rewrite_lft_block(sim, *weft.snapshot(), weft_node, 0);
  auto heavy = weft.sweep();
  ASSERT_TRUE(heavy && heavy->subnet_up);
  EXPECT_EQ(heavy->lft_switches_changed, switches);
  EXPECT_EQ(lft_differences(sim, *weft.snapshot()), 0u);
  // Then quiet again: a light sweep reads SwitchInfo and one block per switch.
  auto after = weft.light_sweep();
  ASSERT_TRUE(after && after->subnet_up);
  EXPECT_FALSE(after->heavy);
}

// Issue 33, item 2: nothing silently drifts. With drift_check_blocks N, every sweep reads
// back N LFT blocks of each switch (rotating), so a block changed with no other sign is
// found within ceil(blocks / N) sweeps on every switch, rewritten, told as a "drift"
// event and counted (weft_drift_found_total); 0 turns the checks off.
TEST(Takeover, ABlockChangedWithNoOtherSignIsFoundWithinTheStatedSweeps) {
  ScratchDir dir("weft-drift");
  SimFabric sim = sim_of("ft2:leaves=8,spines=4,hosts=24");
  const NodeIndex weft_node = *sim.model().find_by_name("h0-0");
  SimTransport t(sim, {.attach = weft_node, .port = 1});
  SubnetManager weft(t, role_opts(dir, 2));
  std::vector<nlohmann::json> drift;
  weft.on_event([&](const SmEvent& e) {
    if (e.type == "drift") drift.push_back(e.data);
  });
  auto up = weft.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  const size_t blocks = size_t(up->top_lid) / 64 + 1;
  ASSERT_EQ(blocks, 4u);
  ASSERT_EQ(weft.options().drift_check_blocks, 1u) << "the default";

  // One block a sweep: the last block, changed on every switch, is found on each within
  // 4 sweeps (switches check different blocks in one sweep), and only once.
  const size_t switches = rewrite_lft_block(sim, *weft.snapshot(), weft_node, 3);
  ASSERT_GT(lft_differences(sim, *weft.snapshot()), 0u);
  size_t found = 0, sweeps = 0;
  while (found < switches && sweeps < 2 * blocks) {
    auto r = weft.light_sweep();
    ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
    found += r->lft_switches_changed;
    ++sweeps;
  }
  EXPECT_EQ(found, switches);
  EXPECT_LE(sweeps, blocks);
  EXPECT_EQ(lft_differences(sim, *weft.snapshot()), 0u);
  EXPECT_TRUE(readback(sim).ok()) << readback(sim).first_problem;
  ASSERT_EQ(drift.size(), switches);
  for (const auto& d : drift) {
    EXPECT_EQ(d.at("table"), "lft");
    EXPECT_EQ(d.at("block"), 3);
  }
  EXPECT_EQ(weft.published()->drift_lft, switches);

  // Every block every sweep: found by the next one.
  SmOptions o = weft.options();
  o.drift_check_blocks = 4;
  weft.set_options(o);
  rewrite_lft_block(sim, *weft.snapshot(), weft_node, 1);
  auto all = weft.light_sweep();
  ASSERT_TRUE(all && all->subnet_up);
  EXPECT_EQ(all->lft_switches_changed, switches);
  EXPECT_EQ(lft_differences(sim, *weft.snapshot()), 0u);
  auto quiet = weft.light_sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_EQ(quiet->lft_blocks_checked, blocks * switches);
  EXPECT_EQ(quiet->lft_switches_changed, 0u);

  // Off: nothing is read back, and the change stays.
  o.drift_check_blocks = 0;
  weft.set_options(o);
  rewrite_lft_block(sim, *weft.snapshot(), weft_node, 2);
  for (size_t i = 0; i < 2 * blocks; ++i) {
    auto r = weft.light_sweep();
    ASSERT_TRUE(r && r->subnet_up);
    EXPECT_EQ(r->lft_blocks_checked, 0u);
  }
  EXPECT_GT(lft_differences(sim, *weft.snapshot()), 0u);
  EXPECT_EQ(drift.size(), 2 * switches);
}

// Issue 33, item 2, for the tables that follow the ports: with drift_check_table_blocks
// N, every sweep reads back N of the P_Key, SL2VL and VLArb blocks weft believes ports
// hold (rotating fabric-wide), so a block changed with no other sign is found within
// ceil(held / N) sweeps, rewritten, told as a "drift" event and counted; a heavy sweep
// checks the same way; 0 turns the checks off.
TEST(Takeover, APkeyBlockChangedWithNoOtherSignIsFoundWithinTheStatedSweeps) {
  ScratchDir dir("weft-drift-tables");
  SimFabric sim = sim_of("ft2:leaves=8,spines=4,hosts=24");
  const NodeIndex weft_node = *sim.model().find_by_name("h0-0");
  const NodeIndex victim = *sim.model().find_by_name("h1-0");
  SimTransport t(sim, {.attach = weft_node, .port = 1});
  SmOptions o = role_opts(dir, 2);
  o.partitions = partitions(sim, "Storage", 8002, {"h0-1", "h1-0", "h2-2"});
  o.drift_check_table_blocks = 65536;  // every block: how many weft holds
  SubnetManager weft(t, o);
  std::vector<nlohmann::json> drift;
  weft.on_event([&](const SmEvent& e) {
    if (e.type == "drift") drift.push_back(e.data);
  });
  auto up = weft.sweep();
  ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
  auto all = weft.light_sweep();
  ASSERT_TRUE(all && all->subnet_up);
  const size_t held = all->table_blocks_checked;
  // At least every CA port's P_Key block and every enforcing switch port's.
  ASSERT_GE(held, 2 * sim.model().num_endpoints());
  EXPECT_EQ(all->table_blocks_changed, 0u);
  const std::vector<uint16_t> want = sim.pkeys(victim, 1);
  ASSERT_NE(std::find(want.begin(), want.end(), 0x8002), want.end());

  // Another writer leaves only the default partition on h1-0's port, with no other sign.
  const auto& snap = *weft.snapshot();
  const auto& port = snap.fabric.node(*snap.fabric.find(sim.model().node(victim).guid)).ports[1];
  const DrPath path = snap.node_paths[port.peer].extended(port.peer_port);
  auto wipe = [&] {
    PkeyBlock blk{};
    blk[0] = 0xffff;
    auto out =
        sim.process(encode_smp(SmpRequest::set(kAttrPkeyTable, 0, path, encode_pkey_block(blk)), 9),
                    weft_node, 1);
    ASSERT_TRUE(out.reply);
    ASSERT_NE(sim.pkeys(victim, 1), want);
  };

  // N = 8: found within ceil(held / 8) light sweeps, once, and rewritten.
  o.drift_check_table_blocks = 8;
  weft.set_options(o);
  wipe();
  size_t found = 0, sweeps = 0;
  const size_t bound = (held + 7) / 8;
  while (found == 0 && sweeps < 2 * bound) {
    auto r = weft.light_sweep();
    ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
    // A sweep that finds a change goes on as an update, which checks 8 more.
    EXPECT_EQ(r->table_blocks_checked, r->heavy ? 16u : 8u);
    found += r->table_blocks_changed;
    ++sweeps;
  }
  EXPECT_EQ(found, 1u);
  EXPECT_LE(sweeps, bound);
  EXPECT_EQ(sim.pkeys(victim, 1), want);
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].at("table"), "pkey");
  EXPECT_NE(drift[0].at("where").get<std::string>().find("h1-0"), std::string::npos) << drift[0];
  EXPECT_EQ(weft.published()->drift_pkey, 1u);
  EXPECT_EQ(weft.published()->drift_lft, 0u);
  auto quiet = weft.light_sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_EQ(quiet->table_blocks_changed, 0u);

  // A heavy sweep checks before it programs, and rewrites the block in the same sweep.
  o.drift_check_table_blocks = 65536;
  weft.set_options(o);
  wipe();
  auto heavy = weft.sweep();
  ASSERT_TRUE(heavy && heavy->subnet_up);
  EXPECT_EQ(heavy->table_blocks_changed, 1u);
  EXPECT_EQ(heavy->table_blocks_checked, held);
  EXPECT_EQ(sim.pkeys(victim, 1), want);
  EXPECT_EQ(drift.size(), 2u);

  // Off: nothing is read back, and the change stays.
  o.drift_check_table_blocks = 0;
  weft.set_options(o);
  wipe();
  for (size_t i = 0; i < 2 * bound; ++i) {
    auto r = weft.light_sweep();
    ASSERT_TRUE(r && r->subnet_up);
    EXPECT_EQ(r->table_blocks_checked, 0u);
  }
  EXPECT_NE(sim.pkeys(victim, 1), want);
  EXPECT_EQ(drift.size(), 2u);
}
