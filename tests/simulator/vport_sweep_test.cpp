// SR-IOV virtual ports programmed by the sweep (issue 34, items 2 and 3): CA ports that
// support virtualization have it turned on and their vports found; a vport's P_Key
// table follows its GUID's partition membership, kept ahead of the GUID existing (the
// ib-kubernetes order: the partition first, then the host writes the VF's GUID); a
// second sweep reads one attribute a port and writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "sim_sm.hpp"
#include "weft/config/options.hpp"
#include "weft/config/partitions.hpp"
#include "weft/mad/vport.hpp"
#include "weft/simulator/sim_vports.hpp"
#include "weft/sm/from_options.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;
using namespace weft::testing;
using fabric::NodeIndex;
using fabric::PortState;

namespace {

constexpr const char* kTree = "ft2:leaves=2,spines=1,hosts=2";

std::vector<NodeIndex> cas(const fabric::Fabric& f) {
  std::vector<NodeIndex> v;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (!f.node(n).is_switch()) v.push_back(n);
  return v;
}

std::vector<uint16_t> used(const std::vector<uint16_t>& t) {
  std::vector<uint16_t> v;
  for (uint16_t k : t)
    if (k & 0x7fff) v.push_back(k);
  std::sort(v.begin(), v.end());
  return v;
}

const SimVPorts::VPort& vf(const SimFabric& sim, NodeIndex n, uint16_t i) {
  return sim.vports().find(n, 1)->vports.at(i);
}

// virt_enabled 2: weft manages the vports.
SmOptions vopts(const ScratchDir& d) {
  SmOptions o = sm_opts(d);
  o.virt_enabled = 2;
  return o;
}

SmOptions with_partitions(const ScratchDir& d, const std::string& text) {
  SmOptions o = vopts(d);
  auto pol = config::parse_partitions(text, "partitions.conf");
  EXPECT_TRUE(pol) << pol.error().message;
  o.partitions = *pol;
  return o;
}

// The switch port that faces CA n's port 1.
std::pair<NodeIndex, PortNum> facing(const SimFabric& sim, NodeIndex n) {
  const auto& p = sim.model().node(n).ports[1];
  return {p.peer, p.peer_port};
}

}  // namespace

TEST(VPortSweep, TheIbKubernetesSequenceGivesAndTakesAVfsPartitionWithinOneSweep) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  const auto ca = cas(sim.model());
  ASSERT_EQ(ca.size(), 4u);
  // CA 1 (the SM runs on CA 0): 8 VFs, 3 of them wanting a LID; no GUIDs yet.
  sim.vports().add(ca[1], 1,
                   {.vports = 8, .lid_required = 3, .node_guid = sim.model().node(ca[1]).guid});
  const Guid pod{0x0002c9fe00000a01};
  const std::string base = "Default=0x7fff : ALL, SELF=full ;\n";
  // The orchestrator puts the GUID in the partition before any VF carries it.
  SimTransport t(sim, {});
  SubnetManager sm(t, with_partitions(dir, base + "pod=0x0a12 : " + pod.str() + "=full ;\n"));
  auto r1 = sm.sweep();
  ASSERT_TRUE(r1 && r1->subnet_up) << (r1 ? r1->reason : r1.error().message);
  EXPECT_EQ(r1->virt_ports, 1u);
  EXPECT_TRUE(sim.vports().find(ca[1], 1)->enabled);
  EXPECT_EQ(r1->vports_found, 0u);  // every VF is DOWN: the host has written no GUID
  EXPECT_EQ(r1->vport_failures, 0u);

  // The CNI writes the GUID into VF 2 (`ip link set ... vf 1 port_guid ...`).
  sim.vports().host_set_guid(ca[1], 1, 2, pod);
  auto r2 = sm.sweep();
  ASSERT_TRUE(r2 && r2->subnet_up) << (r2 ? r2->reason : r2.error().message);
  EXPECT_EQ(r2->vports_found, 1u);
  EXPECT_EQ(used(vf(sim, ca[1], 2).pkeys), (std::vector<uint16_t>{0x7fff, 0x8a12}));
  EXPECT_EQ(vf(sim, ca[1], 2).state, uint8_t(PortState::kActive));
  EXPECT_EQ(r2->vports_activated, 1u);
  EXPECT_EQ(r2->vport_pkey_blocks_written, 1u);
  EXPECT_FALSE(sim.vports().find(ca[1], 1)->state_change);  // cleared by the SM
  // The physical port keeps its own; the switch port facing it lets the VF's through.
  EXPECT_EQ(used(sim.pkeys(ca[1], 1)), std::vector<uint16_t>{0x7fff});
  const auto [sw, swp] = facing(sim, ca[1]);
  EXPECT_EQ(used(sim.pkeys(sw, swp)), (std::vector<uint16_t>{0x7fff, 0x8a12}));
  // In the published model, with its GUID, state and vnode.
  const auto snap = sm.snapshot();
  ASSERT_EQ(snap->fabric.vports().size(), 1u);
  const auto& v = snap->fabric.vports()[0];
  EXPECT_EQ(v.guid, pod);
  EXPECT_EQ(v.index, 2u);
  EXPECT_EQ(v.state, PortState::kActive);
  EXPECT_TRUE(v.lid_required);
  EXPECT_EQ(v.node_guid, derived_vport_guid(sim.model().node(ca[1]).guid, 2));
  EXPECT_EQ(snap->fabric.node(v.node).guid, sim.model().node(ca[1]).guid);

  // Nothing changed: one VirtualizationInfo read, nothing written.
  const size_t vsets = sim.sets(kAttrVPortPkeyTable) + sim.sets(kAttrVPortInfo);
  auto r3 = sm.sweep();
  ASSERT_TRUE(r3 && r3->subnet_up);
  EXPECT_EQ(r3->vports_found, 1u);
  EXPECT_EQ(r3->vport_reads, 1u);
  EXPECT_EQ(r3->vport_pkey_blocks_read, 0u);
  EXPECT_EQ(r3->vport_pkey_blocks_written, 0u);
  EXPECT_EQ(sim.sets(kAttrVPortPkeyTable) + sim.sets(kAttrVPortInfo), vsets);

  // The orchestrator takes the GUID out: the next sweep takes the key away.
  sm.set_options(with_partitions(dir, base));
  auto r4 = sm.sweep();
  ASSERT_TRUE(r4 && r4->subnet_up);
  EXPECT_EQ(used(vf(sim, ca[1], 2).pkeys), std::vector<uint16_t>{0x7fff});
  EXPECT_EQ(used(sim.pkeys(sw, swp)), std::vector<uint16_t>{0x7fff});
  EXPECT_EQ(r4->vport_pkey_blocks_written, 1u);
}

TEST(VPortSweep, PodsInDifferentPartitionsCannotTalkAndPodsInOneCan) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  ASSERT_TRUE(add_vports_everywhere(sim.vports(), sim.model(), 4, 0));
  const auto ca = cas(sim.model());
  auto g = [&](NodeIndex n, uint16_t i) {
    return derived_vport_guid(sim.model().node(n).ports[1].guid, i);
  };
  // Tenant a: VF 1 of CA 1 and VF 3 of CA 2; tenant b: VF 1 of CA 2 and VF 2 of CA 3.
  SimTransport t(sim, {});
  SubnetManager sm(
      t, with_partitions(dir,
                         "Default=0x7fff : ALL, SELF=full ;\n"
                         "a=0x0a12 : " +
                             g(ca[1], 1).str() + "=full, " + g(ca[2], 3).str() +
                             "=full ;\n"
                             "b=0x0b34 : " +
                             g(ca[2], 1).str() + "=full, " + g(ca[3], 2).str() + "=full ;\n"));
  auto r = sm.sweep();
  ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
  EXPECT_EQ(r->virt_ports, 4u);
  EXPECT_EQ(r->vports_found, 16u);
  EXPECT_EQ(r->vports_activated, 16u);
  EXPECT_EQ(r->vport_failures, 0u);
  const auto& v = sim.vports();
  EXPECT_TRUE(v.may_talk(ca[1], 1, 1, ca[2], 1, 3));   // a with a
  EXPECT_TRUE(v.may_talk(ca[2], 1, 1, ca[3], 1, 2));   // b with b
  EXPECT_FALSE(v.may_talk(ca[1], 1, 1, ca[2], 1, 1));  // a with b
  EXPECT_FALSE(v.may_talk(ca[1], 1, 1, ca[3], 1, 4));  // a with a VF in no partition
  // VFs in no partition are limited members of the default one: not each other's.
  EXPECT_FALSE(v.may_talk(ca[1], 1, 4, ca[3], 1, 4));
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(again->vport_reads, 4u);
  EXPECT_EQ(again->vport_pkey_blocks_written, 0u);
  EXPECT_EQ(again->pkey_blocks_written, 0u);
}

TEST(VPortSweep, VirtEnabledZeroLeavesPortsAloneAndOneTurnsVirtualizationOff) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  ASSERT_TRUE(add_vports_everywhere(sim.vports(), sim.model(), 2, 1));
  const auto ca = cas(sim.model());
  SimTransport t(sim, {});
  SmOptions o = sm_opts(dir);
  ASSERT_EQ(o.virt_enabled, 0) << "the default: vports left alone";
  {
    SubnetManager sm(t, o);
    auto r = sm.sweep();
    ASSERT_TRUE(r && r->subnet_up);
    EXPECT_EQ(r->virt_ports, 0u);
    EXPECT_EQ(r->vport_reads, 0u);
    EXPECT_EQ(sim.sets(kAttrVirtualizationInfo), 0u);
    EXPECT_FALSE(sim.vports().find(ca[1], 1)->enabled);
  }
  o.virt_enabled = 2;
  {
    SubnetManager sm(t, o);
    auto r = sm.sweep();
    ASSERT_TRUE(r && r->subnet_up);
    EXPECT_EQ(r->vports_found, 8u);
  }
  o.virt_enabled = 1;
  SubnetManager sm(t, o);
  auto r = sm.sweep();
  ASSERT_TRUE(r && r->subnet_up);
  EXPECT_EQ(r->vports_found, 0u);
  for (NodeIndex n : ca) EXPECT_FALSE(sim.vports().find(n, 1)->enabled);
  EXPECT_TRUE(sm.snapshot()->fabric.vports().empty());
}

// The opensm.conf lines an SR-IOV guide has clusters add for NVIDIA's SM are taken
// whole: no "not implemented" warning, each one in the SM's options, and VFs managed.
TEST(VPortSweep, TheVirtualizationLinesOfANvidiaSmConfAreTakenWhole) {
  config::Values v = config::defaults();
  auto r = config::load_text(
      "# Enable virtualization support\n"
      "virt_enabled 2\n"
      "virt_max_ports_in_process 256\n"
      "virt_default_hop_limit 64\n",
      "opensm.conf", v);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(v.warnings().empty()) << v.warnings().front();
  auto o = sm_from_options(v);
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->virt_enabled, 2);
  EXPECT_EQ(o->virt_max_ports_in_process, 256u);
  EXPECT_EQ(o->virt_default_hop_limit, 64);
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  ASSERT_TRUE(add_vports_everywhere(sim.vports(), sim.model(), 2, 1));
  o->state_dir = dir.path();
  SimTransport t(sim, {});
  SubnetManager sm(t, *o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  EXPECT_EQ(rep->vports_found, 8u);
}

// VFs are told to reregister as ports are: once a master term for an ACTIVE VF whose
// clients registered with another SM (or this one before a restart); not one this SM
// brought to ACTIVE (its clients start registering with it); never twice; never with
// no_clients_rereg.
TEST(VPortSweep, ActiveVfsAreToldToReregisterOnceATerm) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  ASSERT_TRUE(add_vports_everywhere(sim.vports(), sim.model(), 2, 1));
  const auto ca = cas(sim.model());
  auto vf_events = [&] {
    uint64_t total = 0;
    for (NodeIndex n : ca)
      for (const auto& v : sim.vports().find(n, 1)->vports) total += v.client_reregisters;
    return total;
  };
  SimTransport t(sim, {});
  {
    SubnetManager sm(t, vopts(dir));
    auto r = sm.sweep();
    ASSERT_TRUE(r && r->subnet_up);
    EXPECT_EQ(r->vports_activated, 8u);
    EXPECT_EQ(vf_events(), 0u) << "VFs this SM activated register with it";
    EXPECT_EQ(r->client_reregisters, ca.size());  // the ports
    auto again = sm.sweep();
    ASSERT_TRUE(again && again->subnet_up);
    EXPECT_EQ(again->client_reregisters, 0u);
    EXPECT_EQ(vf_events(), 0u);
  }
  // A restart is a new term: each ACTIVE VF once, with its port.
  {
    SubnetManager sm(t, vopts(dir));
    auto r = sm.sweep();
    ASSERT_TRUE(r && r->subnet_up);
    EXPECT_EQ(vf_events(), 8u);
    for (NodeIndex n : ca)
      for (uint16_t i = 1; i <= 2; ++i) EXPECT_EQ(vf(sim, n, i).client_reregisters, 1u);
    EXPECT_EQ(r->client_reregisters, ca.size() + 8u);
    EXPECT_EQ(r->vport_lids_set, 0u);
    auto again = sm.sweep();
    ASSERT_TRUE(again && again->subnet_up);
    EXPECT_EQ(again->client_reregisters, 0u);
    EXPECT_EQ(vf_events(), 8u);
  }
  // A VF that keeps refusing the LID it is given: written again each sweep, its clients
  // told to reregister once, not every sweep.
  {
    sim.vports().refuse_lid(ca[1], 1, 1);
    SubnetManager sm(t, vopts(dir));
    for (int sweep = 0; sweep < 3; ++sweep) {
      auto r = sm.sweep();
      ASSERT_TRUE(r && r->subnet_up);
      EXPECT_GE(r->vport_failures, 1u) << "the LID refused, said each sweep";
    }
    EXPECT_EQ(vf(sim, ca[1], 1).client_reregisters, 2u) << "once this term, once the last";
    EXPECT_EQ(vf_events(), 16u);
  }
  SmOptions quiet = vopts(dir);
  quiet.no_clients_rereg = true;
  SubnetManager sm(t, quiet);
  auto r = sm.sweep();
  ASSERT_TRUE(r && r->subnet_up);
  EXPECT_EQ(r->client_reregisters, 0u);
  EXPECT_EQ(vf_events(), 16u);
}

TEST(VPortSweep, AVfTheHostTakesAwayLeavesTheModelAndAnotherAppears) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  ASSERT_TRUE(add_vports_everywhere(sim.vports(), sim.model(), 3, 0));
  const auto ca = cas(sim.model());
  SimTransport t(sim, {});
  SubnetManager sm(t, vopts(dir));
  auto r = sm.sweep();
  ASSERT_TRUE(r && r->subnet_up);
  EXPECT_EQ(r->vports_found, 12u);
  // The host of CA 3 takes VF 2's GUID away and gives VF 3 another.
  sim.vports().host_set_guid(ca[3], 1, 2, Guid{});
  const Guid fresh{0x0002c9fe00000b07};
  sim.vports().host_set_guid(ca[3], 1, 3, fresh);
  auto r2 = sm.sweep();
  ASSERT_TRUE(r2 && r2->subnet_up);
  EXPECT_EQ(r2->vports_found, 11u);
  const auto& f = sm.snapshot()->fabric;
  ASSERT_NE(f.find_vport(fresh), nullptr);
  EXPECT_EQ(f.find_vport(fresh)->state, PortState::kActive);
  EXPECT_EQ(f.find_vport(derived_vport_guid(sim.model().node(ca[3]).ports[1].guid, 2)), nullptr);
  // Only CA 3's port was read again: VirtualizationInfo and its Set on it, a state
  // block, three reads of each of its two live VFs; one read on each other port.
  EXPECT_EQ(r2->vport_reads, 3u + 2u + 1u + 2u * 3u);
  EXPECT_EQ(r2->vports_activated, 1u);
}

TEST(VPortSweep, VfsThatRequireALidGetOneRoutedThroughTheirPortAndKeptAcrossARestart) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  ASSERT_TRUE(add_vports_everywhere(sim.vports(), sim.model(), 4, 2));
  const auto ca = cas(sim.model());
  SimTransport t(sim, {});
  std::map<uint64_t, uint16_t> lids;  // VF GUID -> LID
  {
    SubnetManager sm(t, vopts(dir));
    auto r = sm.sweep();
    ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
    EXPECT_EQ(r->vports_found, 16u);
    EXPECT_EQ(r->vports_with_lid, 8u);
    EXPECT_EQ(r->vport_lids_set, 8u);
    EXPECT_EQ(r->vport_failures, 0u);
    EXPECT_TRUE(readback(sim).ok());
    std::set<uint16_t> seen;
    for (NodeIndex n : ca) {
      const auto& port = sim.model().node(n).ports[1];
      const uint16_t plid = port.attrs.lid.value;
      for (uint16_t i = 1; i <= 4; ++i) {
        const auto& v = vf(sim, n, i);
        if (i > 2) {
          EXPECT_EQ(v.lid, 0u) << "VF " << i << " shares its port's LID";
          continue;
        }
        ASSERT_NE(v.lid, 0u);
        EXPECT_TRUE(seen.insert(v.lid).second) << "LID " << v.lid << " twice";
        EXPECT_NE(v.lid, plid);
        lids[v.guid.value] = v.lid;
        // Every switch forwards the VF's LID as it forwards its port's: the leaf out of
        // the port's link.
        EXPECT_EQ(sim.lft(port.peer).at(v.lid), port.peer_port);
        for (NodeIndex s = 0; s < sim.model().size(); ++s)
          if (sim.model().node(s).is_switch()) {
            EXPECT_EQ(sim.lft(s).at(v.lid), sim.lft(s).at(plid));
          }
      }
    }
    EXPECT_EQ(seen.size(), 8u);
    auto again = sm.sweep();
    ASSERT_TRUE(again && again->subnet_up);
    EXPECT_EQ(again->vport_lids_set, 0u);
    EXPECT_EQ(again->lft_blocks_written, 0u);
  }
  // A restart: every VF keeps its LID (guid2lid), nothing is written again.
  SubnetManager sm(t, vopts(dir));
  auto r = sm.sweep();
  ASSERT_TRUE(r && r->subnet_up);
  EXPECT_EQ(r->vport_lids_set, 0u);
  EXPECT_EQ(r->vports_with_lid, 8u);
  for (const auto& v : sm.snapshot()->fabric.vports())
    if (v.lid_required) {
      EXPECT_EQ(lids.at(v.guid.value), v.lid.value);
    }
}

TEST(VPortSweep, ALightSweepSeesAVfChangeAndUpdatesOnlyAtItsSwitch) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  const auto ca = cas(sim.model());
  sim.vports().add(ca[2], 1, {.vports = 4, .node_guid = sim.model().node(ca[2]).guid});
  SimTransport t(sim, {});
  SubnetManager sm(t, vopts(dir));
  auto r = sm.sweep();
  ASSERT_TRUE(r && r->subnet_up);
  EXPECT_EQ(r->vports_found, 0u);
  // Nothing changed: the light sweep stays light.
  auto quiet = sm.light_sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_FALSE(quiet->heavy);
  // The host writes a VF's GUID: the next light sweep updates at CA 2's switch.
  const Guid g{0x0002c9fe00000c01};
  sim.vports().host_set_guid(ca[2], 1, 3, g);
  auto seen = sm.light_sweep();
  ASSERT_TRUE(seen && seen->subnet_up) << (seen ? seen->reason : seen.error().message);
  EXPECT_TRUE(seen->heavy);
  EXPECT_TRUE(seen->updated);
  EXPECT_EQ(seen->vports_found, 1u);
  EXPECT_EQ(vf(sim, ca[2], 3).state, uint8_t(PortState::kActive));
  auto after = sm.light_sweep();
  ASSERT_TRUE(after && after->subnet_up);
  EXPECT_FALSE(after->heavy);
}

TEST(VPortSweep, AReadThatFailsKeepsTheVfsAsLastReadAndTheirPartitions) {
  ScratchDir dir("weft-vports");
  SimFabric sim = sim_of(kTree);
  const auto ca = cas(sim.model());
  sim.vports().add(ca[1], 1, {.vports = 4, .node_guid = sim.model().node(ca[1]).guid});
  const Guid pod{0x0002c9fe00000d01}, other{0x0002c9fe00000d02};
  sim.vports().host_set_guid(ca[1], 1, 1, pod);
  SimTransport t(sim, {});
  SubnetManager sm(t, with_partitions(dir, "Default=0x7fff : ALL, SELF=full ;\npod=0x0a12 : " +
                                               pod.str() + "=full ;\n"));
  auto r = sm.sweep();
  ASSERT_TRUE(r && r->subnet_up);
  ASSERT_EQ(r->vports_found, 1u);
  const auto [sw, swp] = facing(sim, ca[1]);
  ASSERT_EQ(used(sim.pkeys(sw, swp)), (std::vector<uint16_t>{0x7fff, 0x8a12}));
  // The host brings up another VF, and the port then refuses VNodeInfo reads.
  sim.vports().host_set_guid(ca[1], 1, 3, other);
  sim.refuse_gets(ca[1], kAttrVNodeInfo, true);
  auto bad = sm.sweep();
  ASSERT_TRUE(bad && bad->subnet_up);
  EXPECT_GT(bad->vport_failures, 0u);
  EXPECT_EQ(bad->vports_found, 1u) << "the VFs as last read";
  ASSERT_NE(sm.snapshot()->fabric.find_vport(pod), nullptr);
  EXPECT_EQ(used(sim.pkeys(sw, swp)), (std::vector<uint16_t>{0x7fff, 0x8a12}))
      << "the pod's partition stays on the switch port";
  EXPECT_EQ(used(vf(sim, ca[1], 1).pkeys), (std::vector<uint16_t>{0x7fff, 0x8a12}));
  // A light sweep does not read the port again at once, but within two.
  sim.refuse_gets(ca[1], kAttrVNodeInfo, false);
  size_t light = 0;
  std::optional<SweepReport> seen;
  while (light < 4) {
    auto l = sm.light_sweep();
    ASSERT_TRUE(l && l->subnet_up);
    ++light;
    if (l->heavy) {
      seen = *l;
      break;
    }
  }
  ASSERT_TRUE(seen) << "never read again";
  EXPECT_EQ(light, 2u) << "after 2^1 light sweeps";
  EXPECT_EQ(seen->vports_found, 2u);
  EXPECT_EQ(seen->vport_failures, 0u);
  EXPECT_EQ(vf(sim, ca[1], 3).state, uint8_t(PortState::kActive));
}
