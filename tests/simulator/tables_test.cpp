// Partitions and QoS end to end on the in-process simulator: what the SM meant is
// what the simulated ports hold, and a second sweep writes nothing.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <stdexcept>

#include "weft/config/options.hpp"
#include "weft/config/partitions.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/torus.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/from_options.hpp"
#include "weft/sm/subnet_manager.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;
using fabric::NodeIndex;

namespace {

struct Scratch {
  std::string path =
      (std::filesystem::temp_directory_path() / ("weft-tables-" + std::to_string(getpid()) + "-" +
                                                 std::to_string(reinterpret_cast<uintptr_t>(this))))
          .string();
  ~Scratch() { std::filesystem::remove_all(path); }
};

SmOptions base(const Scratch& s) {
  SmOptions o;
  o.state_dir = s.path;
  o.engine.timeout = std::chrono::milliseconds(100);
  return o;
}

std::vector<std::pair<NodeIndex, PortNum>> ca_ports(const fabric::Fabric& f) {
  std::vector<std::pair<NodeIndex, PortNum>> v;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (!f.node(n).is_switch()) v.push_back({n, 1});
  return v;
}

// The partitions file these tests use: everyone in Default; CA `full` a full member of
// Storage (0x8002), CA `limited` a limited one.
Result<config::PartitionPolicy> storage_policy(
    const fabric::Fabric& f, const std::vector<std::pair<NodeIndex, PortNum>>& cas, size_t full,
    size_t limited) {
  auto g = [&](size_t i) { return f.node(cas[i].first).ports[1].guid.str(); };
  return config::parse_partitions("Default=0x7fff : ALL, SELF=full ;\nStorage=0x8002 : " + g(full) +
                                      "=full, " + g(limited) + " ;\n",
                                  "p.conf");
}

// A switch's SL2VL output ports the SM programs (port 0 where it is enhanced, every
// linked port) and the input ports each has a table for (port 0 and every linked port).
std::pair<size_t, size_t> sl2vl_ports(const fabric::Node& nd) {
  size_t outs = 0, inputs = 1;
  for (PortNum p = 1; p <= nd.num_ports; ++p) inputs += nd.ports[p].linked();
  for (PortNum p = nd.sw.enhanced_port0 ? 0 : 1; p <= nd.num_ports; ++p)
    outs += p == 0 || nd.ports[p].linked();
  return {outs, inputs};
}

// What layered routes leave on the ports: every linked input-output pair of every switch,
// and every CA's port, maps SL i to VL i for the `vls` layers. Counts the devices and the
// switches' pairs (sl2vl_ports) as it checks them.
struct LayerTables {
  size_t switches = 0, cas = 0, pairs = 0;
};
LayerTables expect_layer_tables(const SimFabric& sim, uint8_t vls) {
  LayerTables c;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) {
      ++c.cas;
      for (uint8_t sl = 0; sl < vls; ++sl) EXPECT_EQ(sim.sl2vl(n, 0, 1)[sl], sl) << nd.name;
      continue;
    }
    ++c.switches;
    const auto [outs, inputs] = sl2vl_ports(nd);
    c.pairs += outs * inputs;
    for (PortNum out = 1; out <= nd.num_ports; ++out)
      for (PortNum in = 0; in <= nd.num_ports; ++in) {
        if (!nd.ports[out].linked() || (in != 0 && !nd.ports[in].linked())) continue;
        for (uint8_t sl = 0; sl < vls; ++sl)
          EXPECT_EQ(sim.sl2vl(n, in, out)[sl], sl)
              << nd.name << " " << int(in) << "->" << int(out) << " SL " << int(sl);
      }
  }
  return c;
}

// Another writer puts every SL of switch `sw`'s table for `in` -> `out` on VL 0, by directed
// route from the SM's node.
bool other_writer(SimFabric& sim, const SubnetSnapshot& snap, NodeIndex sm_node, NodeIndex sw,
                  PortNum in, PortNum out) {
  const qos::Sl2Vl other{};
  const mad::DrPath path = snap.node_paths[*snap.fabric.find(sim.model().node(sw).guid)];
  auto r = sim.process(
      encode_smp(SmpRequest::set(kAttrSl2Vl, uint32_t(in) << 8 | out, path, encode_sl2vl(other)),
                 7),
      sm_node, 1);
  return r.reply && sim.sl2vl(sw, in, out) == other;
}

// dor on the torus the simulator holds, its shape detected from the links (none: no
// torus found).
SmOptions dor_options(const Scratch& dir, const SimFabric& sim) {
  SmOptions o = base(dir);
  o.routing_engine = "dor";
  o.torus = routing::detect_torus(sim.model());
  return o;
}

std::vector<uint16_t> used(const std::vector<uint16_t>& t) {
  std::vector<uint16_t> v;
  for (uint16_t k : t)
    if (k & 0x7fff) v.push_back(k);
  return v;
}

}  // namespace

// A device answers with its power-on SL2VL and arbitration tables until something sets
// one; a Set changes that table alone (the simulator makes a device's tables its own only
// then).
TEST(Tables, PowerOnTablesUntilASetChangesThatTableAlone) {
  SimFabric sim(simulator::make_fabric("ft2:leaves=2,spines=1,hosts=1").value());
  NodeIndex sw = 0;
  while (!sim.model().node(sw).is_switch()) ++sw;
  const size_t nports = sim.model().node(sw).ports.size();
  SimTransport t(sim, {.attach = sw});
  MadEngine eng(t, {});
  auto ask = [&](uint16_t attr, uint32_t mod, std::optional<SmpData> set) {
    std::optional<SmpData> got;
    eng.submit(
        set ? SmpRequest::set(attr, mod, DrPath{}, *set) : SmpRequest::get(attr, mod, DrPath{}),
        [&](Result<Smp> r) {
          ASSERT_TRUE(r) << r.error().message;
          got = r->data;
        });
    EXPECT_TRUE(eng.run());
    return got.value_or(SmpData{});
  };
  qos::Sl2Vl power_on;
  for (uint8_t s = 0; s < 16; ++s) power_on[s] = s == 15 ? 7 : s;
  EXPECT_EQ(decode_sl2vl(ask(kAttrSl2Vl, 1 << 8 | 2, std::nullopt)), power_on);
  EXPECT_EQ(sim.sl2vl(sw, 2, 1), power_on);
  qos::Sl2Vl mine{};
  for (uint8_t s = 0; s < 16; ++s) mine[s] = s % 2;
  EXPECT_EQ(decode_sl2vl(ask(kAttrSl2Vl, 1 << 8 | 2, encode_sl2vl(mine))), mine);
  EXPECT_EQ(sim.sl2vl(sw, 1, 2), mine);
  for (PortNum in = 0; in < nports; ++in)
    for (PortNum out = 0; out < nports; ++out)
      if (in != 1 || out != 2) {
        EXPECT_EQ(sim.sl2vl(sw, in, out), power_on) << in << "->" << out;
      }
  EXPECT_EQ(decode_sl2vl(ask(kAttrSl2Vl, 2 << 8 | 1, std::nullopt)), power_on);
  EXPECT_THROW((void)sim.sl2vl(sw, static_cast<PortNum>(nports), 1), std::out_of_range);

  // Arbitration: low block 1 of port 1 set; its high block and port 2 keep theirs.
  const qos::VlArbBlock low0 = sim.vlarb(sw, 1, 0), high0 = sim.vlarb(sw, 1, 2);
  EXPECT_EQ(low0[1].weight, 4);
  EXPECT_EQ(high0[0].weight, 4);
  qos::VlArbBlock arb{};
  arb[0] = {3, 9};
  EXPECT_EQ(decode_vlarb(ask(kAttrVlArb, 1u << 16 | 1, encode_vlarb(arb)))[0].weight, 9);
  EXPECT_EQ(sim.vlarb(sw, 1, 0)[0].vl, 3);
  EXPECT_EQ(sim.vlarb(sw, 1, 2), high0);
  EXPECT_EQ(sim.vlarb(sw, 2, 0), low0);
  EXPECT_EQ(decode_vlarb(ask(kAttrVlArb, 1u << 16 | 2, std::nullopt)), low0);
}

TEST(Tables, PartitionsReachEndPortsAndTheSwitchPortsFacingThem) {
  Scratch dir;
  SimFabric sim(*make_fabric("ft2:leaves=2,spines=1,hosts=2"));
  const auto cas = ca_ports(sim.model());
  ASSERT_EQ(cas.size(), 4u);
  // The SM sits on CA 0 (the transport's default attach point).
  auto pol = storage_policy(sim.model(), cas, 1, 2);
  ASSERT_TRUE(pol) << pol.error().message;
  SimTransport t(sim, {});
  SmOptions o = base(dir);
  o.partitions = *pol;
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  EXPECT_EQ(used(sim.pkeys(cas[0].first, 1)), std::vector<uint16_t>{0xffff});
  EXPECT_EQ(used(sim.pkeys(cas[1].first, 1)), (std::vector<uint16_t>{0x7fff, 0x8002}));
  EXPECT_EQ(used(sim.pkeys(cas[2].first, 1)), (std::vector<uint16_t>{0x7fff, 0x0002}));
  EXPECT_EQ(used(sim.pkeys(cas[3].first, 1)), std::vector<uint16_t>{0x7fff});
  // Switch ports facing CAs hold the CA's keys and filter both ways; links between
  // switches are left alone.
  size_t enforcing = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) continue;
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      const auto& port = nd.ports[p];
      if (!port.linked()) continue;
      if (sim.model().node(port.peer).is_switch()) {
        EXPECT_FALSE(sim.extras(n, p).part_enf_in);
        EXPECT_EQ(used(sim.pkeys(n, p)), std::vector<uint16_t>{0xffff});
        continue;
      }
      ++enforcing;
      EXPECT_TRUE(sim.extras(n, p).part_enf_in && sim.extras(n, p).part_enf_out);
      EXPECT_EQ(used(sim.pkeys(n, p)), used(sim.pkeys(port.peer, port.peer_port)));
    }
  }
  EXPECT_EQ(enforcing, 4u);
  EXPECT_EQ(rep->ports_enforcing, 4u);
  // The snapshot keeps the plan for the SA (its model numbers nodes as discovered).
  const auto& snap = *sm.snapshot();
  auto idx = [&](size_t i) { return *snap.fabric.find(sim.model().node(cas[i].first).guid); };
  EXPECT_FALSE(snap.partitions.share_partition(idx(2), 1, idx(3), 1));
  EXPECT_TRUE(snap.partitions.share_partition(idx(1), 1, idx(2), 1));

  const size_t pkey_sets = sim.sets(kAttrPkeyTable), pi_sets = sim.sets(kAttrPortInfo);
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(sim.sets(kAttrPkeyTable), pkey_sets);
  EXPECT_EQ(sim.sets(kAttrPortInfo), pi_sets);
  EXPECT_EQ(again->pkey_blocks_read, 0u);  // known from the first sweep

  // An edited policy: only the difference is written.
  auto pol2 = storage_policy(sim.model(), cas, 1, 3);
  SmOptions o2 = base(dir);
  o2.partitions = *pol2;
  SubnetManager sm2(t, o2);  // a restart with the new file
  auto rep2 = sm2.sweep();
  ASSERT_TRUE(rep2 && rep2->subnet_up) << (rep2 ? rep2->reason : rep2.error().message);
  EXPECT_EQ(used(sim.pkeys(cas[2].first, 1)), std::vector<uint16_t>{0x7fff});
  EXPECT_EQ(used(sim.pkeys(cas[3].first, 1)), (std::vector<uint16_t>{0x7fff, 0x0002}));
  // CA 2 and 3 and the two switch ports facing them: one block each.
  EXPECT_EQ(rep2->pkey_blocks_written, 4u);
}

// A port whose P_Key table cannot hold all its partitions gets those that fit, and the
// sweep says which port and how many were left out (PRT-0003); the other ports get all.
TEST(Tables, APortTooSmallForItsPartitionsIsNamedWithWhatWasLeftOut) {
  Scratch dir;
  fabric::Fabric f = *make_fabric("ft2:leaves=2,spines=1,hosts=2");
  const auto cas = ca_ports(f);
  f.node(cas[1].first).partition_cap = 2;
  const std::string guid = f.node(cas[1].first).guid.str();
  SimFabric sim(std::move(f));
  auto g = [&](size_t i) { return sim.model().node(cas[i].first).ports[1].guid.str(); };
  auto pol = config::parse_partitions("Default=0x7fff : ALL, SELF=full ;\nA=0x8002 : " + g(1) +
                                          "=full, " + g(2) + "=full ;\nB=0x8003 : " + g(1) +
                                          "=full, " + g(2) + "=full ;\n",
                                      "p.conf");
  ASSERT_TRUE(pol) << pol.error().message;
  SimTransport t(sim, {});
  SmOptions o = base(dir);
  o.partitions = *pol;
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep) << rep.error().message;
  size_t named = 0;
  for (const auto& p : rep->problems)
    if (p.find("holds 2 P_Keys; 1 of its partitions do not fit") != std::string::npos) {
      EXPECT_NE(p.find(guid), std::string::npos) << p;
      ++named;
    }
  EXPECT_EQ(named, 1u);
  EXPECT_EQ(used(sim.pkeys(cas[1].first, 1)).size(), 2u);
  EXPECT_EQ(used(sim.pkeys(cas[2].first, 1)), (std::vector<uint16_t>{0x7fff, 0x8002, 0x8003}));
}

// A switch that rebooted lost its ports' P_Key tables, though it kept LinearFDBTop: the
// heavy sweep the light one starts writes the keys back. (With a window of 1 the table
// reads go out after the SwitchInfo Set before them; this test passes whether the reads
// decide what is known when planned or when drawn, so it does not pin that choice.)
TEST(Tables, ASwitchThatRebootedGetsItsPortsKeysBack) {
  Scratch dir;
  SimFabric sim(*make_fabric("ft2:leaves=2,spines=1,hosts=2"));
  const auto cas = ca_ports(sim.model());
  auto pol = storage_policy(sim.model(), cas, 1, 2);
  ASSERT_TRUE(pol) << pol.error().message;
  SimTransport t(sim, {});
  SmOptions o = base(dir);
  o.partitions = *pol;
  o.engine.window = 1;  // as on a large fabric: the reads go out after the Sets before them
  SubnetManager sm(t, o);
  ASSERT_TRUE(sm.sweep()->subnet_up);
  const NodeIndex leaf = sim.model().node(cas[1].first).ports[1].peer;
  const PortNum facing = sim.model().node(cas[1].first).ports[1].peer_port;
  const auto want = used(sim.pkeys(leaf, facing));
  ASSERT_EQ(want, (std::vector<uint16_t>{0x7fff, 0x8002}));
  sim.reset_switch(leaf, true);
  ASSERT_EQ(used(sim.pkeys(leaf, facing)), std::vector<uint16_t>{0xffff});
  // The light sweep sees the port change and sweeps heavily: that one sweep puts them back.
  auto rep = sm.light_sweep();
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_TRUE(rep->heavy);
  EXPECT_TRUE(rep->subnet_up) << rep->reason;
  EXPECT_EQ(used(sim.pkeys(leaf, facing)), want);
  // Every port of it that faces a CA holds that CA's keys again.
  size_t facing_cas = 0;
  for (PortNum p = 1; p <= sim.model().node(leaf).num_ports; ++p) {
    const auto& port = sim.model().node(leaf).ports[p];
    if (!port.linked() || sim.model().node(port.peer).is_switch()) continue;
    ++facing_cas;
    EXPECT_EQ(used(sim.pkeys(leaf, p)), used(sim.pkeys(port.peer, port.peer_port))) << p;
  }
  EXPECT_EQ(facing_cas, 2u);
}

TEST(Tables, QosOptionsBecomeSl2VlVlArbAndHighLimitOnEveryPort) {
  Scratch dir;
  SimFabric sim(*make_fabric("ft2:leaves=2,spines=2,hosts=2"));
  auto v = config::defaults();
  ASSERT_TRUE(
      config::load_text("qos TRUE\nqos_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,15\n"
                        "qos_ca_sl2vl 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1\n"
                        "qos_high_limit 4\nqos_vlarb_low 0:8,1:16,2:32,3:64\n"
                        "qos_swe_vlarb_high 1:200\n",
                        "q.conf", v));
  SimTransport t(sim, {});
  SmOptions o = base(dir);
  o.qos = *qos::qos_from_options(v);
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  const qos::Sl2Vl sw_want{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 15};
  const qos::Sl2Vl ca_want{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  size_t pairs = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) {
      EXPECT_EQ(sim.sl2vl(n, 0, 1), ca_want);
      EXPECT_EQ(sim.extras(n, 1).vl_high_limit, 4);
      EXPECT_EQ(sim.vlarb(n, 1, 0)[3], (config::VlArbEntry{3, 64}));
      EXPECT_EQ(sim.vlarb(n, 1, 2)[0], (config::VlArbEntry{0, 4}));  // OpenSM's default high
      continue;
    }
    for (PortNum out = 1; out <= nd.num_ports; ++out) {
      if (!nd.ports[out].linked()) continue;
      EXPECT_EQ(sim.vlarb(n, out, 2)[0], (config::VlArbEntry{1, 200}));
      EXPECT_EQ(sim.vlarb(n, out, 2)[1], (config::VlArbEntry{0, 0}));
      for (PortNum in = 0; in <= nd.num_ports; ++in) {
        if (in != 0 && !nd.ports[in].linked()) continue;
        EXPECT_EQ(sim.sl2vl(n, in, out), sw_want)
            << "switch " << n << " " << int(in) << "->" << int(out);
        ++pairs;
      }
    }
  }
  EXPECT_EQ(rep->sl2vl_written + rep->table_failures, pairs + 4);  // + the 4 CAs
  const size_t sets = sim.sets(kAttrSl2Vl) + sim.sets(kAttrVlArb) + sim.sets(kAttrPortInfo);
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(sim.sets(kAttrSl2Vl) + sim.sets(kAttrVlArb) + sim.sets(kAttrPortInfo), sets);
  EXPECT_EQ(again->sl2vl_read + again->vlarb_read, 0u);
}

TEST(Tables, LayeredRoutesGetTheirSlsOnTheirOwnVlsWithoutQos) {
  Scratch dir;
  SimFabric sim(*make_fabric("torus:dims=4x4x4,hosts=1"));
  SimTransport t(sim, {});
  SmOptions o = base(dir);
  o.routing_engine = "dfsssp";
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  const uint8_t vls = sm.snapshot()->tables.vls;
  ASSERT_GT(vls, 1);
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    for (PortNum out = 1; out <= nd.num_ports; ++out) {
      if (!nd.ports[out].linked()) continue;
      const auto& t = sim.sl2vl(n, nd.is_switch() ? 1 : 0, out);
      for (uint8_t sl = 0; sl < vls; ++sl) EXPECT_EQ(t[sl], sl);
    }
  }
  EXPECT_EQ(sim.sets(kAttrVlArb), 0u);  // arbitration is QoS's, and QoS is off
  // Every SL a path uses is one the SL2VL tables carry on a VL of its own.
  for (const auto& row : sm.snapshot()->tables.path_sl)
    for (uint8_t sl : row) EXPECT_LT(sl, vls);
}

// Layered routes on switches that take SL2VL Sets for all ports at once
// (SwitchInfo:OptimizedSLtoVLMappingProgramming): one Set per switch, no read of a switch
// table, every input-output pair right; a switch that claims the capability and refuses
// such a Set is written input by input instead.
TEST(Tables, LayeredSl2VlIsOneSetPerSwitchWhereSwitchesTakeAllPortSets) {
  Scratch dir;
  SimDefaults dflt;
  dflt.optimized_sl2vl = true;
  SimFabric sim(*make_fabric("torus:dims=4x4x4,hosts=1"), dflt);
  const NodeIndex stubborn = *sim.model().find_by_name("sw1-2-3");
  sim.refuse_all_port_sl2vl(stubborn, true);
  SimTransport t(sim, {});
  SmOptions o = base(dir);
  o.routing_engine = "dfsssp";
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  const uint8_t vls = sm.snapshot()->tables.vls;
  ASSERT_GT(vls, 1);
  const auto [switches, cas, pairs] = expect_layer_tables(sim, vls);
  const auto [stubborn_outs, stubborn_inputs] = sl2vl_ports(sim.model().node(stubborn));
  const size_t stubborn_pairs = stubborn_outs * stubborn_inputs;
  ASSERT_GT(stubborn_pairs, 0u);
  // One Set per switch (the stubborn one's refused, then one per pair), one per CA; the
  // CAs' tables read first, no switch's.
  EXPECT_EQ(sim.sets(kAttrSl2Vl), switches + stubborn_pairs + cas);
  EXPECT_EQ(rep->sl2vl_written, switches - 1 + stubborn_pairs + cas);
  EXPECT_EQ(rep->sl2vl_read, cas);
  EXPECT_EQ(rep->table_failures, 0u);
  EXPECT_TRUE(rep->problems.empty()) << rep->problems.front();
  const size_t sets = sim.sets(kAttrSl2Vl);
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(sim.sets(kAttrSl2Vl), sets);
  EXPECT_EQ(again->sl2vl_read, 0u);
}

// OpenSM's use_optimized_slvl, as an opensm.conf writes it: TRUE (weft's default) takes
// one Set per switch that offers OptimizedSLtoVLMappingProgramming; FALSE (OpenSM's
// default) one per input and output port pair, as on switches without it.
TEST(Tables, UseOptimizedSlvlFalseWritesPortPairByPortPair) {
  for (const bool use : {true, false}) {
    SCOPED_TRACE(use ? "use_optimized_slvl TRUE" : "use_optimized_slvl FALSE");
    config::Values v = config::defaults();
    ASSERT_TRUE(config::load_text(
        std::string("use_optimized_slvl ") + (use ? "TRUE" : "FALSE") + "\n", "opensm.conf", v));
    EXPECT_TRUE(v.warnings().empty()) << v.warnings().front();
    auto from_conf = sm_from_options(v);
    ASSERT_TRUE(from_conf) << from_conf.error().message;
    EXPECT_EQ(from_conf->use_optimized_sl2vl, use);
    Scratch dir;
    SimDefaults dflt;
    dflt.optimized_sl2vl = true;
    SimFabric sim(*make_fabric("torus:dims=3x3x3,hosts=1"), dflt);
    SimTransport t(sim, {});
    SmOptions o = base(dir);
    o.routing_engine = "dfsssp";
    o.use_optimized_sl2vl = from_conf->use_optimized_sl2vl;
    SubnetManager sm(t, o);
    testing::internal::CaptureStderr();
    auto rep = sm.sweep();
    const std::string said = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    // FALSE where switches offer such Sets is said (once: a fresh SM's first sweep).
    EXPECT_EQ(said.find("SM-0105") != std::string::npos, !use) << said;
    const uint8_t vls = sm.snapshot()->tables.vls;
    ASSERT_GT(vls, 1);
    const auto [switches, cas, pairs] = expect_layer_tables(sim, vls);
    EXPECT_EQ(sim.sets(kAttrSl2Vl), (use ? switches : pairs) + cas);
    EXPECT_EQ(rep->table_failures, 0u);
  }
}

// A switch answers an SL2VL Set for all its input ports only once it has written them:
// later than a plain SMP. Such a Set waits long_transaction_timeout; waiting only
// transaction_timeout, it is sent again while the switch is still at it.
TEST(Tables, AllInputSl2VlSetsWaitTheLongTransactionTimeout) {
  for (const bool long_wait : {true, false}) {
    SCOPED_TRACE(long_wait ? "long_transaction_timeout 500 ms" : "as long as transaction_timeout");
    Scratch dir;
    SimDefaults dflt;
    dflt.optimized_sl2vl = true;
    SimFabric sim(*make_fabric("torus:dims=3x3x3,hosts=1"), dflt);
    SimTransport t(sim, {.all_input_sl2vl_latency = std::chrono::milliseconds(300)});
    SmOptions o = base(dir);
    o.routing_engine = "dfsssp";
    o.engine.timeout = std::chrono::milliseconds(200);
    o.engine.long_timeout = long_wait ? std::chrono::milliseconds(500) : o.engine.timeout;
    SubnetManager sm(t, o);
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    ASSERT_GT(sm.snapshot()->tables.vls, 1);
    const auto [switches, cas, pairs] = expect_layer_tables(sim, sm.snapshot()->tables.vls);
    if (long_wait) {
      // One Set per switch, each answered on its first attempt; one per CA.
      EXPECT_EQ(sim.sets(kAttrSl2Vl), switches + cas);
      EXPECT_EQ(rep->sl2vl_written, switches + cas);
      EXPECT_EQ(sm.engine().stats().retried, 0u);
      EXPECT_EQ(rep->table_failures, 0u);
    } else {
      EXPECT_GT(sim.sets(kAttrSl2Vl), switches + cas);
      EXPECT_GT(sm.engine().stats().retried, 0u);
    }
  }
}

// Without such Sets (ibsim): of a switch port whose inputs all map alike, one input's
// table is read; where it is not the table, every input is written without reading the
// others; where it is, the others are read and only those not holding it written. An SM
// starting over a fabric programmed already reads every table and writes none but the
// one another writer changed.
TEST(Tables, Sl2VlReadsOneInputBeforeWritingAPortsInputs) {
  Scratch dir;
  SimFabric sim(*make_fabric("torus:dims=4x4x4,hosts=1"));
  const NodeIndex sm_node = *sim.model().find_by_name("h0-0-0-0");
  SimTransport t(sim, {.attach = sm_node, .port = 1});
  SmOptions o = base(dir);
  o.routing_engine = "dfsssp";
  size_t ports = 0, pairs = 0, cas = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) {
      ++cas;
      continue;
    }
    const auto [outs, inputs] = sl2vl_ports(nd);
    ports += outs, pairs += outs * inputs;
  }
  ASSERT_GT(ports, 0u);
  const NodeIndex sw = *sim.model().find_by_name("sw2-1-3");
  PortNum out = 0, last_in = 0;
  {
    SubnetManager sm(t, o);
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    ASSERT_GT(sm.snapshot()->tables.vls, 1);
    EXPECT_EQ(rep->sl2vl_read, ports + cas);  // one input per switch port, each CA's
    EXPECT_EQ(rep->sl2vl_written, pairs + cas);
    EXPECT_EQ(rep->table_failures, 0u);
    // Another writer changes one input's table toward one of sw2-1-3's ports: the last
    // linked input, never the one read first.
    const auto& nd = sim.model().node(sw);
    for (PortNum p = 1; p <= nd.num_ports; ++p)
      if (nd.ports[p].linked()) (out == 0 ? out : last_in) = p;
    ASSERT_NE(last_in, 0);
    ASSERT_TRUE(other_writer(sim, *sm.snapshot(), sm_node, sw, last_in, out));
  }
  // A new SM (a restart): every table read, one written.
  SubnetManager sm(t, o);
  const size_t sets = sim.sets(kAttrSl2Vl);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  EXPECT_EQ(rep->sl2vl_read, pairs + cas);
  EXPECT_EQ(rep->sl2vl_written, 1u);
  EXPECT_EQ(sim.sets(kAttrSl2Vl), sets + 1);
  for (uint8_t sl = 0; sl < sm.snapshot()->tables.vls; ++sl)
    EXPECT_EQ(sim.sl2vl(sw, last_in, out)[sl], sl);
}

// A switch that refuses its SL2VL tables: every refused Set is counted (the subnet is
// not up, as with any failed table write), said once per output port (not once per
// input-output pair), and nothing is believed held there: the next sweep tries again.
TEST(Tables, ASwitchRefusingItsSl2VlTablesIsSaidOncePerPort) {
  Scratch dir;
  SimFabric sim(*make_fabric("torus:dims=4x4x4,hosts=1"));
  const NodeIndex sw = *sim.model().find_by_name("sw3-0-1");
  sim.refuse_sets(sw, kAttrSl2Vl, true);
  SimTransport t(sim, {});
  SmOptions o = base(dir);
  o.routing_engine = "dfsssp";
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_FALSE(rep->subnet_up);
  const auto [ports, inputs] = sl2vl_ports(sim.model().node(sw));
  EXPECT_EQ(rep->table_failures, ports * inputs);
  size_t said = 0;
  for (const auto& p : rep->problems) said += p.find("SLtoVLMappingTable Set") != std::string::npos;
  EXPECT_EQ(said, ports);
  EXPECT_NE(
      rep->reason.find(std::to_string(ports * inputs) + " P_Key, SL2VL or VLArb writes failed"),
      std::string::npos)
      << rep->reason;
  auto again = sm.sweep();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->table_failures, ports * inputs);
}

// A switch that answers its SL2VL Sets with success and the table it held before (it did
// not take them), with all-ports Sets and without: each such Set is a failure, and the
// switch is not believed to hold the table (the next sweep writes it again).
TEST(Tables, ASwitchAnsweringSl2VlSetsWithoutTakingThemIsNotBelieved) {
  for (const bool optimized : {true, false}) {
    SCOPED_TRACE(optimized ? "all-ports Sets" : "Sets per input port");
    Scratch dir;
    SimDefaults dflt;
    dflt.optimized_sl2vl = optimized;
    SimFabric sim(*make_fabric("torus:dims=4x4x4,hosts=1"), dflt);
    const NodeIndex sw = *sim.model().find_by_name("sw3-0-1");
    sim.ignore_sets(sw, kAttrSl2Vl, true);
    SimTransport t(sim, {});
    SmOptions o = base(dir);
    o.routing_engine = "dfsssp";
    o.drift_check_table_blocks = 0;
    SubnetManager sm(t, o);
    const auto [ports, inputs] = sl2vl_ports(sim.model().node(sw));
    for (int sweep = 0; sweep < 2; ++sweep) {
      auto rep = sm.sweep();
      ASSERT_TRUE(rep) << rep.error().message;
      EXPECT_FALSE(rep->subnet_up);
      EXPECT_EQ(rep->table_failures, optimized ? 1u : ports * inputs) << "sweep " << sweep;
      size_t said = 0;
      for (const auto& p : rep->problems)
        said += p.find("answered with a table other than written") != std::string::npos;
      EXPECT_EQ(said, optimized ? 1u : ports) << "sweep " << sweep;
    }
  }
}

// A switch port whose inputs all map alike is one entry of the drift checks, read at
// another input each pass: a table another writer changed on one input is found within
// num_ports + 1 passes, told as drift, and rewritten.
TEST(Tables, AChangedInputOfAPortMappingAllInputsAlikeIsFoundByTheDriftChecks) {
  Scratch dir;
  SimFabric sim(*make_fabric("torus:dims=4x4x4,hosts=1"));
  const NodeIndex sm_node = *sim.model().find_by_name("h0-0-0-0");
  SimTransport t(sim, {.attach = sm_node, .port = 1});
  SmOptions o = base(dir);
  o.routing_engine = "dfsssp";
  o.drift_check_table_blocks = 1u << 20;  // every block each sweep: one pass per sweep
  SubnetManager sm(t, o);
  std::vector<nlohmann::json> drift;
  sm.on_event([&](const SmEvent& e) {
    if (e.type == "drift") drift.push_back(e.data);
  });
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  auto quiet = sm.light_sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  EXPECT_EQ(quiet->table_blocks_changed, 0u);
  const NodeIndex sw = *sim.model().find_by_name("sw2-1-3");
  const auto& nd = sim.model().node(sw);
  PortNum out = 0, in = 0;  // the first linked port, and the last linked input toward it
  for (PortNum p = 1; p <= nd.num_ports; ++p)
    if (nd.ports[p].linked()) (out == 0 ? out : in) = p;
  ASSERT_NE(in, 0);
  ASSERT_TRUE(other_writer(sim, *sm.snapshot(), sm_node, sw, in, out));
  size_t found = 0, sweeps = 0;
  while (found == 0 && sweeps < 2u * (nd.num_ports + 1u)) {
    auto r = sm.light_sweep();
    ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
    found += r->table_blocks_changed;
    ++sweeps;
  }
  EXPECT_EQ(found, 1u);
  EXPECT_LE(sweeps, nd.num_ports + 1u);
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].at("table"), "sl2vl");
  EXPECT_NE(drift[0].at("where").get<std::string>().find("sw2-1-3"), std::string::npos) << drift[0];
  for (uint8_t sl = 0; sl < sm.snapshot()->tables.vls; ++sl)
    EXPECT_EQ(sim.sl2vl(sw, in, out)[sl], sl);
}

// dor picks a VL per hop as torus-2QoS does: the switches hold an SL2VL table per output
// port (a hop toward dimension d takes the SL's bit d), the CAs send on VL 0, and a
// second sweep writes none of it again.
TEST(Tables, DorsVlPerHopIsWhatTheSwitchesHold) {
  Scratch dir;
  SimFabric sim(*make_fabric("torus:dims=5x5,hosts=1"));
  SimTransport t(sim, {});
  const SmOptions o = dor_options(dir, sim);
  ASSERT_TRUE(o.torus);
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  const auto snap = sm.snapshot();
  const routing::Tables& rt = snap->tables;
  ASSERT_EQ(rt.vls, 2);
  ASSERT_FALSE(rt.hop_vl.empty());
  EXPECT_TRUE(routing::channel_dependencies(snap->fabric, rt).acyclic);
  size_t toward_x = 0, toward_y = 0, checked = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (!nd.is_switch()) {
      const auto& ca = sim.sl2vl(n, 0, 1);
      for (uint8_t sl = 0; sl < 4; ++sl) EXPECT_EQ(ca[sl], 0) << nd.name << " SL " << int(sl);
      continue;
    }
    for (PortNum out = 1; out <= nd.num_ports; ++out)
      for (PortNum in = 0; in <= nd.num_ports; ++in) {
        if (!nd.ports[out].linked() || (in && !nd.ports[in].linked())) continue;
        const auto want = rt.hop_map(snap->fabric, *snap->fabric.find(nd.guid), in, out);
        ASSERT_TRUE(want);
        const auto& held = sim.sl2vl(n, in, out);
        for (uint8_t sl = 0; sl < 4; ++sl)
          EXPECT_EQ(held[sl], routing::Tables::hop_vl_of(*want, sl))
              << nd.name << " " << int(in) << "->" << int(out) << " SL " << int(sl);
        ++checked;
        toward_x += held[1] == 1 && held[2] == 0;  // SL 1: crosses x's dateline only
        toward_y += held[1] == 0 && held[2] == 1;
      }
  }
  EXPECT_GT(checked, 0u);
  EXPECT_GT(toward_x, 0u);
  EXPECT_GT(toward_y, 0u);
  const size_t sets = sim.sets(kAttrSl2Vl);
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(sim.sets(kAttrSl2Vl), sets);
  // A switch fails: the routes its place held turn early round it, and the hop that
  // turns back takes VL bit 1, so a switch beside the gap holds tables that differ by
  // input port.
  const NodeIndex gone = *sim.model().find_by_name("sw2-2");
  for (PortNum p = 1; p <= sim.model().node(gone).num_ports; ++p) sim.unlink(gone, p);
  auto after = sm.sweep();
  ASSERT_TRUE(after && after->subnet_up) << (after ? after->reason : after.error().message);
  const auto snap2 = sm.snapshot();
  ASSERT_EQ(snap2->tables.vls, 4);
  EXPECT_TRUE(routing::channel_dependencies(snap2->fabric, snap2->tables).acyclic);
  size_t differ = 0;
  for (NodeIndex n = 0; n < snap2->fabric.size(); ++n) {
    const auto& nd = snap2->fabric.node(n);
    if (!nd.is_switch()) continue;
    const NodeIndex at = *sim.model().find(nd.guid);
    for (PortNum out = 1; out <= nd.num_ports; ++out) {
      if (!nd.ports[out].linked()) continue;
      bool alike = true;
      for (PortNum in = 0; in <= nd.num_ports; ++in) {
        if (in && !nd.ports[in].linked()) continue;
        const auto want = snap2->tables.hop_map(snap2->fabric, n, in, out);
        ASSERT_TRUE(want);
        const auto& held = sim.sl2vl(at, in, out);
        for (uint8_t sl = 0; sl < 4; ++sl)
          EXPECT_EQ(held[sl], routing::Tables::hop_vl_of(*want, sl))
              << nd.name << " " << int(in) << "->" << int(out) << " SL " << int(sl);
        alike &= held == sim.sl2vl(at, 0, out);
      }
      differ += !alike;
    }
  }
  EXPECT_GT(differ, 0u);
}

// With per-hop VLs a port needs only the VLs its own maps name: CAs that operate VL 0
// alone carry dor's routes (its 2 VLs run between switches), and the SM says nothing of
// layers sharing VLs there.
TEST(Tables, EndPortsOnOneVlCarryDorsPerHopRoutes) {
  Scratch dir;
  SimFabric sim(*make_fabric("torus:dims=5x5,hosts=1"));
  for (NodeIndex n = 0; n < sim.model().size(); ++n)
    if (!sim.model().node(n).is_switch()) {
      auto& a = sim.model().node(n).ports[1].attrs;
      a.vl_cap = a.oper_vls = 1;  // VL0 only
    }
  SimTransport t(sim, {});
  const SmOptions o = dor_options(dir, sim);
  ASSERT_TRUE(o.torus);
  SubnetManager sm(t, o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  ASSERT_EQ(sm.snapshot()->tables.vls, 2);
  for (const auto& p : rep->problems)
    EXPECT_EQ(p.find("but the routes need"), std::string::npos) << p;
  // The CAs did operate one VL.
  size_t one = 0;
  for (NodeIndex n = 0; n < sim.model().size(); ++n)
    if (!sim.model().node(n).is_switch()) one += sim.model().node(n).ports[1].attrs.oper_vls == 1;
  EXPECT_EQ(one, 25u);
}

TEST(Tables, NoPartitionFileMeansFullDefaultMembershipAndNoWrites) {
  Scratch dir;
  SimFabric sim(*make_fabric("ft2:leaves=2,spines=1,hosts=2"));
  SimTransport t(sim, {});
  SubnetManager sm(t, base(dir));
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  // ibsim's and the simulator's power-on table already is {0xffff}: nothing to write.
  EXPECT_EQ(rep->pkey_blocks_written, 0u);
  EXPECT_GT(rep->pkey_blocks_read, 0u);
  EXPECT_EQ(sim.sets(kAttrSl2Vl) + sim.sets(kAttrVlArb), 0u);
}
