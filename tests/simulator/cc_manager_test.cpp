// The congestion-control manager on the simulator's CC agents (issue 31, items 2 and 3):
// every switch and CA port configured with OpenSM-style settings and verified as the
// devices hold them, the second pass sends nothing, a device without CC costs one MAD and
// is never written, a device that answers with something else (as ibsim's SMP handlers
// do) is not written either, the CC_Key is set and carried, a device locked with another
// key is reported.
#include <gtest/gtest.h>

#include "sim_sm.hpp"
#include "weft/cc/manager.hpp"
#include "weft/simulator/cc_check.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::testing;

namespace {

constexpr const char* kTree = "ft2:leaves=4,spines=2,hosts=3";

cc::CcOptions opensm_style() {
  cc::CcOptions o;
  o.enabled = true;
  o.sw.control_map = 0xF;
  for (unsigned p = 1; p <= 32; ++p) cc::set_port_bit(o.sw.victim_mask, p);
  o.sw.threshold = 0xF;
  o.sw.packet_size = 1;
  o.sw.marking_rate = 0xF;
  o.ca.port_control = 1;
  o.ca.control_map = 0x3;
  o.ca.sl[0] = {10, 1, 2, 0};
  o.ca.sl[1] = {20, 1, 2, 0};
  for (uint16_t i = 0; i < 70; ++i) o.cct.push_back({0, uint16_t(i * 4)});
  return o;
}

struct Rig {
  ScratchDir dir{"weft-cc"};
  SimFabric sim;
  SimTransport t;
  sm::SubnetManager sm;
  explicit Rig(SimDefaults d) : sim(*make_fabric(kTree), d), t(sim, {}), sm(t, sm_opts(dir)) {
    auto rep = sm.sweep();
    EXPECT_TRUE(rep && rep->subnet_up);
  }
  std::shared_ptr<const fabric::Fabric> fabric() {
    auto snap = sm.snapshot();
    return std::shared_ptr<const fabric::Fabric>(snap, &snap->fabric);
  }
  Result<cc::CcSweep> pass(cc::CcManager& m) {
    std::optional<Result<cc::CcSweep>> got;
    m.start(fabric(), [&](Result<cc::CcSweep> r) { got = std::move(r); });
    if (auto r = sm.engine().run_all(); !r) return std::unexpected(r.error());
    if (!got) return fail(Errc::kInternal, "the pass did not finish");
    return *got;
  }
  size_t switches() const {
    size_t n = 0;
    for (const auto& nd : sim.model().nodes()) n += nd.is_switch();
    return n;
  }
  size_t cas() const { return sim.model().nodes().size() - switches(); }
};

// What every device holds is what the options ask.
void expect_held(const SimFabric& sim, const cc::CcOptions& o, const char* where) {
  const auto& f = sim.model();
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (nd.is_switch()) {
      const CcDevice* d = sim.cc().find(n, 0);
      ASSERT_TRUE(d);
      EXPECT_EQ(d->sw, o.sw) << where << " " << nd.name;
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        EXPECT_EQ(d->port_blocks.at(p / 32)[p % 32], o.port_element())
            << nd.name << " port " << int(p);
      EXPECT_FALSE(d->port_blocks.at(0)[0].valid) << "port 0 has no element";
    } else {
      const CcDevice* d = sim.cc().find(n, 1);
      ASSERT_TRUE(d);
      EXPECT_EQ(d->ca, o.ca) << where << " " << nd.name;
      const auto blocks = o.cct_blocks();
      ASSERT_EQ(blocks.size(), 2u);
      EXPECT_EQ(d->cct.at(0), blocks[0]) << nd.name;
      EXPECT_EQ(d->cct.at(1), blocks[1]) << nd.name;
    }
  }
}

}  // namespace

TEST(CcManager, EveryDeviceIsConfiguredAndVerifiedAndASecondPassSendsNothing) {
  Rig r({.cc_agents = true});
  const cc::CcOptions o = opensm_style();
  cc::CcManager m(r.sm.engine(), o);
  auto first = r.pass(m);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->switches, r.switches());
  EXPECT_EQ(first->cas, r.cas());
  EXPECT_EQ(first->configured, r.switches() + r.cas());
  EXPECT_EQ(first->unavailable, 0u);
  EXPECT_TRUE(first->verified);
  EXPECT_GT(first->mads_written, 0u);
  EXPECT_EQ(first->mads, r.sim.cc().mads()) << "every MAD reached an agent, once";
  expect_held(r.sim, o, "first pass");
  // The same, as weft sim --json checks it; and a device changed behind the manager's
  // back is found.
  auto held = check_cc_held(r.sim, o, m.view());
  EXPECT_TRUE(held.ok()) << held.first_problem;
  EXPECT_EQ(held.checked, r.switches() + r.cas());
  const fabric::NodeIndex h = *r.sim.model().find_by_name("h2-1");
  const cc::CaCongestionSetting kept = r.sim.cc().find(h, 1)->ca;
  r.sim.cc().find(h, 1)->ca.sl[0].ccti_timer = 99;
  held = check_cc_held(r.sim, o, m.view());
  EXPECT_EQ(held.wrong, 1u);
  EXPECT_NE(held.first_problem.find("\"h2-1\" port 1: CACongestionSetting differs"),
            std::string::npos)
      << held.first_problem;
  r.sim.cc().find(h, 1)->ca = kept;
  auto second = r.pass(m);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->mads, 0u);
  EXPECT_EQ(second->configured, r.switches() + r.cas());
  // New settings: only what changed is written (the CA setting; nothing is re-read).
  cc::CcOptions o2 = o;
  o2.ca.sl[1].ccti_timer = 30;
  m.set_options(o2);
  auto third = r.pass(m);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->mads, r.cas());
  EXPECT_EQ(third->mads_written, r.cas());
  expect_held(r.sim, o2, "new settings");
}

TEST(CcManager, DevicesWithoutCcCostOneMadAndAreNeverWritten) {
  Rig r({.cc_agents = true});
  const auto& f = r.sim.model();
  const fabric::NodeIndex quiet = *f.find_by_name("h0-0"), refusing = *f.find_by_name("leaf1");
  r.sim.set_cc(quiet, CcSupport::kNone);
  r.sim.set_cc(refusing, CcSupport::kRefuses);
  cc::CcManager m(r.sm.engine(), opensm_style());
  auto first = r.pass(m);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->unavailable, 2u);
  EXPECT_EQ(first->configured, r.switches() + r.cas() - 2);
  const auto v = m.view();
  EXPECT_EQ(v.at({f.node(quiet).guid.value, 1}).state, cc::DeviceState::kUnavailable);
  EXPECT_NE(v.at({f.node(refusing).guid.value, 0}).why.find("status 0x0004"), std::string::npos)
      << v.at({f.node(refusing).guid.value, 0}).why;
  EXPECT_EQ(r.sim.cc().find(refusing, 0)->sets, 0u);
  const uint64_t seen = r.sim.cc().mads();
  auto second = r.pass(m);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->mads, 0u) << "never asked again";
  EXPECT_EQ(r.sim.cc().mads(), seen);
}

// ibsim answers class 0x21 from its SMP handlers, copying no data: its answer is the request
// echoed (the Get's marker with it), and nothing is ever written to such a device. A device whose
// Set replies do not carry what was written is given up on after that one Set.
TEST(CcManager, DevicesThatAreNoRealCcAgentsAreNotWritten) {
  Rig r({.cc_agents = true});
  const auto& f = r.sim.model();
  const fabric::NodeIndex ibsim_like = *f.find_by_name("h1-1"), forgetful = *f.find_by_name("h3-2"),
                          sw = *f.find_by_name("spine1");
  r.sim.set_cc(ibsim_like, CcSupport::kMisdispatch);
  r.sim.set_cc(sw, CcSupport::kMisdispatch);
  r.sim.set_cc(forgetful, CcSupport::kForgetful);
  cc::CcManager m(r.sm.engine(), opensm_style());
  auto first = r.pass(m);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->unavailable, 3u);
  EXPECT_EQ(first->configured, r.switches() + r.cas() - 3);
  EXPECT_TRUE(first->verified) << "what is configured holds what was asked";
  const auto v = m.view();
  for (auto n : {ibsim_like, sw}) {
    const auto& d = v.at({f.node(n).guid.value, f.node(n).is_switch() ? PortNum(0) : PortNum(1)});
    EXPECT_EQ(d.state, cc::DeviceState::kUnavailable);
    EXPECT_NE(d.why.find("is no CongestionInfo"), std::string::npos) << d.why;
    EXPECT_EQ(r.sim.cc().find(n, f.node(n).is_switch() ? 0 : 1)->sets, 0u) << f.node(n).name;
  }
  const auto& fg = v.at({f.node(forgetful).guid.value, 1});
  EXPECT_EQ(fg.state, cc::DeviceState::kUnavailable);
  EXPECT_NE(fg.why.find("does not carry what was written"), std::string::npos) << fg.why;
  EXPECT_EQ(r.sim.cc().find(forgetful, 1)->sets, 1u);
  auto second = r.pass(m);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->mads, 0u);
  EXPECT_EQ(r.sim.cc().find(forgetful, 1)->sets, 1u) << "never written again";
}

// With a key set, a device that answers with an error status is without CC, not locked
// (only silence may mean another key), and a new key set between passes reaches every
// device that already held the old one.
TEST(CcManager, WithAKeyAnErrorStatusStillMeansNoCcAndANewKeyIsSet) {
  Rig r({.cc_agents = true});
  const fabric::NodeIndex refusing = *r.sim.model().find_by_name("h1-0");
  r.sim.set_cc(refusing, CcSupport::kRefuses);
  cc::CcOptions o = opensm_style();
  o.key = 0x1111;
  cc::CcManager m(r.sm.engine(), o);
  auto first = r.pass(m);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->unavailable, 1u);
  EXPECT_EQ(first->locked, 0u);
  EXPECT_TRUE(first->verified);
  o.key = 0x2222;
  m.set_options(o);
  auto second = r.pass(m);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->configured, r.switches() + r.cas() - 1);
  EXPECT_EQ(second->mads_written, r.switches() + r.cas() - 1) << "one key Set each";
  for (fabric::NodeIndex n = 0; n < r.sim.model().size(); ++n) {
    if (n == refusing) continue;
    const auto& nd = r.sim.model().node(n);
    EXPECT_EQ(r.sim.cc().find(n, nd.is_switch() ? 0 : 1)->key.cc_key, 0x2222u) << nd.name;
  }
  auto held = check_cc_held(r.sim, o, m.view());
  EXPECT_TRUE(held.ok()) << held.first_problem;
}

TEST(CcManager, TheKeyIsSetAndCarriedAndAnotherKeyIsReported) {
  Rig r({.cc_agents = true});
  cc::CcOptions o = opensm_style();
  o.key = 0xC0FFEE;
  const fabric::NodeIndex locked = *r.sim.model().find_by_name("h2-0");
  r.sim.cc().find(locked, 1)->key = {0x1234, false, 0, 0};
  cc::CcManager m(r.sm.engine(), o);
  auto first = r.pass(m);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->locked, 1u);
  EXPECT_FALSE(first->verified);
  EXPECT_EQ(first->configured, r.switches() + r.cas() - 1);
  for (fabric::NodeIndex n = 0; n < r.sim.model().size(); ++n) {
    const auto& nd = r.sim.model().node(n);
    const CcDevice* d = r.sim.cc().find(n, nd.is_switch() ? 0 : 1);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->key.cc_key, n == locked ? 0x1234u : 0xC0FFEEu) << nd.name;
    if (n != locked) {
      EXPECT_TRUE(d->key.protect);
    }
  }
  const auto v = m.view();
  const auto lk = v.at({r.sim.model().node(locked).guid.value, 1});
  EXPECT_EQ(lk.state, cc::DeviceState::kLocked);
  EXPECT_NE(lk.why.find("another CC_Key"), std::string::npos) << lk.why;
  // The other SM's key is gone: the next pass configures it.
  r.sim.cc().find(locked, 1)->key = {};
  auto second = r.pass(m);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->locked, 0u);
  EXPECT_TRUE(second->verified);
  EXPECT_EQ(r.sim.cc().find(locked, 1)->key.cc_key, 0xC0FFEEu);
}

// Issue 31 item 4 and 5: a hot spot (every other host sending to h0-0) fills the
// switches' and the sources' CongestionLogs in the simulator; one read of the logs ranks
// the leaf port feeding h0-0 first, names every flow to it with the QPs that reacted,
// and a second read with no traffic since shows nothing new but keeps the totals.
TEST(CcManager, AHotSpotIsRankedFirstFromTheCongestionLogs) {
  Rig r({.cc_agents = true});
  const auto& f = r.sim.model();
  cc::CcManager m(r.sm.engine(), opensm_style());
  auto first = r.pass(m);
  ASSERT_TRUE(first && first->verified);
  const fabric::NodeIndex dst = *f.find_by_name("h0-0"), leaf0 = *f.find_by_name("leaf0");
  const uint16_t dlid = f.node(dst).ports[1].attrs.lid.value;
  const PortNum into = f.node(dst).ports[1].peer_port;  // leaf0's port to h0-0
  std::vector<SimFabric::Flow> flows;
  for (fabric::NodeIndex n = 0; n < f.size(); ++n)
    if (!f.node(n).is_switch() && n != dst) flows.push_back({n, 1, dlid, 0});
  ASSERT_EQ(flows.size(), 11u);
  const auto c = r.sim.congest(flows, 100);
  EXPECT_EQ(c.routed, 11u);
  EXPECT_EQ(c.ca_events, 11u) << "every source reacts on SL 0";
  EXPECT_GE(c.switch_events, 11u);
  EXPECT_EQ(r.sim.counters(leaf0, into)[perf::Counter::kXmitWait], 10u * 100);

  auto snap = r.sm.snapshot();
  auto egress = [snap](uint64_t guid, uint16_t lid) { return snap->egress(Guid{guid}, lid); };
  std::optional<Result<cc::CcLogRead>> got;
  m.read_logs(egress, 1000, [&](Result<cc::CcLogRead> x) { got = std::move(x); });
  ASSERT_TRUE(r.sm.engine().run_all());
  ASSERT_TRUE(got && *got) << (got ? (*got).error().message : "not finished");
  const cc::CcLogRead& rd = **got;
  EXPECT_EQ(rd.devices, r.switches() + r.cas());
  EXPECT_EQ(rd.read, rd.devices);
  EXPECT_EQ(rd.failed, 0u);
  EXPECT_EQ(rd.events, c.switch_events + c.ca_events);
  EXPECT_EQ(rd.flows, 11u);
  const auto v = m.published();
  ASSERT_FALSE(v->ports.empty());
  EXPECT_EQ(v->ports[0].guid, f.node(leaf0).guid.value);
  EXPECT_EQ(v->ports[0].port, into);
  EXPECT_EQ(v->ports[0].log_events, 11u);
  EXPECT_TRUE(v->ports[0].marking);
  EXPECT_GT(v->ports[0].log_events, v->ports[1].log_events) << "the hot spot stands out";
  uint64_t port_events = 0;
  for (const auto& p : v->ports) port_events += p.log_events;
  EXPECT_EQ(port_events, rd.events) << "every logged event is on a port";
  ASSERT_EQ(v->flows.size(), 11u);
  size_t remote = 0;
  for (const auto& fl : v->flows) {
    EXPECT_EQ(fl.dlid, dlid);
    // At leaf0 and at the source; from another leaf, at a spine or the source's leaf too.
    EXPECT_GE(fl.count, 2u);
    remote += fl.count >= 3;
    EXPECT_NE(std::find(fl.marked_at.begin(), fl.marked_at.end(),
                        std::pair{f.node(leaf0).guid.value, into}),
              fl.marked_at.end())
        << fl.slid;
    ASSERT_EQ(fl.qps.size(), 1u);
  }
  EXPECT_EQ(remote, 9u) << "the flows from the other three leaves";
  EXPECT_EQ(r.sim.cc().find(leaf0, 0)->log.event_counter, 0u) << "reading cleared the log";

  // Nothing since: nothing in the last read, the totals kept.
  got.reset();
  m.read_logs(egress, 1060, [&](Result<cc::CcLogRead> x) { got = std::move(x); });
  ASSERT_TRUE(r.sm.engine().run_all());
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->events, 0u);
  EXPECT_TRUE((*got)->ports.empty());
  const auto v2 = m.published();
  EXPECT_EQ(v2->interval_s, 60.0);
  ASSERT_FALSE(v2->ports.empty());
  EXPECT_EQ(v2->ports[0].log_events, 0u);
  EXPECT_EQ(v2->ports[0].log_events_total, 11u);
  ASSERT_EQ(v2->flows.size(), 11u);
  EXPECT_EQ(v2->flows[0].count, 0u);
  EXPECT_GE(v2->flows[0].total, 3u);
}

// A device that lost its settings (a reset: settings and key back to zero) keeps its LID,
// so no sweep notices; the read of the logs reads each device's main setting back too,
// finds the two that drifted, and the next pass rewrites them and nothing else.
TEST(CcManager, ADeviceThatLostItsSettingsIsFoundByTheLogReadAndRewritten) {
  Rig r({.cc_agents = true});
  cc::CcOptions o = opensm_style();
  o.key = 0x5150;
  cc::CcManager m(r.sm.engine(), o);
  auto first = r.pass(m);
  ASSERT_TRUE(first && first->verified);
  const auto& f = r.sim.model();
  const fabric::NodeIndex ca = *f.find_by_name("h3-1"), sw = *f.find_by_name("spine0");
  auto reset = [&](fabric::NodeIndex n, uint8_t port) {
    CcDevice& d = *r.sim.cc().find(n, port);
    d.key = {};
    d.sw = {};
    d.ca = {};
    for (auto& b : d.port_blocks) b = {};
    for (auto& b : d.cct) b = {};
  };
  reset(ca, 1);
  reset(sw, 0);
  std::optional<Result<cc::CcLogRead>> got;
  m.read_logs({}, 1, [&](Result<cc::CcLogRead> x) { got = std::move(x); });
  ASSERT_TRUE(r.sm.engine().run_all());
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->drifted, 2u);
  EXPECT_EQ((*got)->mads, 2 * (r.switches() + r.cas())) << "a log and a setting each";
  const auto v = m.view();
  EXPECT_EQ(v.at({f.node(ca).guid.value, 1}).state, cc::DeviceState::kFailed);
  EXPECT_NE(v.at({f.node(sw).guid.value, 0}).why.find("not what weft wrote"), std::string::npos)
      << v.at({f.node(sw).guid.value, 0}).why;
  auto second = r.pass(m);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->verified);
  // Each: the key and the setting; the CA its two CCT blocks, the switch its port block.
  EXPECT_EQ(second->mads_written, (2u + 2u) + (2u + 1u));
  expect_held(r.sim, o, "after the reset");
  EXPECT_EQ(r.sim.cc().find(ca, 1)->key.cc_key, 0x5150u);
  got.reset();
  m.read_logs({}, 2, [&](Result<cc::CcLogRead> x) { got = std::move(x); });
  ASSERT_TRUE(r.sm.engine().run_all());
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->drifted, 0u);
}

// With cc_cct empty and cc_cct_max_delay_ns set, each CA port gets a table made for its
// link, its last entry the whole delay; the simulator's devices hold it, a second pass
// sends nothing.
TEST(CcManager, EachCaPortGetsATableMadeForItsLink) {
  Rig r({.cc_agents = true});
  cc::CcOptions o = opensm_style();
  o.cct.clear();
  o.cct_max_delay_ns = 50'000;
  o.cct_limit = 100;
  cc::CcManager m(r.sm.engine(), o);
  auto first = r.pass(m);
  ASSERT_TRUE(first && first->verified);
  const auto& f = r.sim.model();
  size_t cas = 0;
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    if (f.node(n).is_switch()) continue;
    const double pkt = cc::packet_time_ns(f.node(n).ports[1].attrs);
    ASSERT_GT(pkt, 0) << f.node(n).name;
    const CcDevice* d = r.sim.cc().find(n, 1);
    ASSERT_EQ(d->cct.size(), 2u);
    EXPECT_EQ(d->cct[1].ccti_limit, 100);
    const cc::CctEntry last = d->cct[1].entries[100 - 64];
    const double ns = last.multiplier * pkt / double(1u << last.shift);
    EXPECT_NEAR(ns, 50'000, pkt) << f.node(n).name;
    EXPECT_EQ(d->cct[0].entries[0], (cc::CctEntry{0, 0}));
    ++cas;
  }
  EXPECT_EQ(cas, r.cas());
  auto held = check_cc_held(r.sim, o, m.view());
  EXPECT_TRUE(held.ok()) << held.first_problem;
  auto second = r.pass(m);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->mads, 0u);
}

// A switch log that names ports the switch does not have (a PortMap bit past its ports, an
// entry whose DLID is not routed) puts its events on the switch as a whole, never on a
// port that is not there.
TEST(CcManager, ALogNamingOnlyPortsTheSwitchDoesNotHaveIsOnTheSwitchAsAWhole) {
  Rig r({.cc_agents = true});
  cc::CcManager m(r.sm.engine(), opensm_style());
  auto first = r.pass(m);
  ASSERT_TRUE(first && first->verified);
  const fabric::NodeIndex sw = *r.sim.model().find_by_name("spine1");
  CcDevice& d = *r.sim.cc().find(sw, 0);
  cc::set_port_bit(d.log.port_map, 200);
  d.log.event_counter = 5;
  d.log.switch_entries.push_back({3, 0xBFFF, 0, 1});  // a DLID nothing routes
  auto snap = r.sm.snapshot();
  std::optional<Result<cc::CcLogRead>> got;
  m.read_logs([snap](uint64_t g, uint16_t l) { return snap->egress(Guid{g}, l); }, 1,
              [&](Result<cc::CcLogRead> x) { got = std::move(x); });
  ASSERT_TRUE(r.sm.engine().run_all());
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->events, 5u);
  const auto v = m.published();
  ASSERT_EQ(v->ports.size(), 1u);
  EXPECT_EQ(v->ports[0].guid, r.sim.model().node(sw).guid.value);
  EXPECT_EQ(v->ports[0].port, 0) << "the switch as a whole";
  EXPECT_EQ(v->ports[0].log_events, 5u);
  ASSERT_EQ(v->flows.size(), 1u);
  EXPECT_TRUE(v->flows[0].marked_at.empty());
}

namespace {

// One read of the logs, with the snapshot's tables as the egress.
Result<cc::CcLogRead> read(Rig& r, cc::CcManager& m, int64_t now) {
  auto snap = r.sm.snapshot();
  std::optional<Result<cc::CcLogRead>> got;
  m.read_logs([snap](uint64_t g, uint16_t l) { return snap->egress(Guid{g}, l); }, now,
              [&](Result<cc::CcLogRead> x) { got = std::move(x); });
  if (auto e = r.sm.engine().run_all(); !e) return std::unexpected(e.error());
  if (!got) return fail(Errc::kInternal, "the read did not finish");
  return *got;
}

uint64_t events_at(const cc::CcView& v, uint64_t guid, PortNum port) {
  for (const auto& p : v.ports)
    if (p.guid == guid && p.port == port) return p.log_events;
  return 0;
}

}  // namespace

// A switch's 15 events: 10 entries it forwards by port X, 5 whose DLID nothing routes,
// PortMap {X, Y}: the 10 go to X, the 5 spread over X and Y (2.5 each): X 13, Y 2. With a
// valid PortMap and only unrouted entries, the events spread over the map, not port 0.
TEST(CcManager, ASwitchsEventsGoToThePortsItsEntriesAndPortMapName) {
  Rig r({.cc_agents = true});
  cc::CcManager m(r.sm.engine(), opensm_style());
  ASSERT_TRUE(r.pass(m));
  const auto& f = r.sim.model();
  const fabric::NodeIndex sw = *f.find_by_name("spine0"), dst = *f.find_by_name("h0-0");
  const uint16_t dlid = f.node(dst).ports[1].attrs.lid.value;
  const PortNum x = r.sm.snapshot()->egress(f.node(sw).guid, dlid);
  ASSERT_NE(x, 0);
  const PortNum y = x == 1 ? 2 : 1;
  CcDevice& d = *r.sim.cc().find(sw, 0);
  d.log.event_counter = 15;
  cc::set_port_bit(d.log.port_map, x);
  cc::set_port_bit(d.log.port_map, y);
  for (int i = 0; i < 10; ++i) d.log.switch_entries.push_back({uint16_t(3 + i), dlid, 0, 1});
  for (int i = 0; i < 5; ++i) d.log.switch_entries.push_back({uint16_t(3 + i), 0xBFFF, 0, 1});
  auto first = read(r, m, 1);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->events, 15u);
  const uint64_t g = f.node(sw).guid.value;
  EXPECT_EQ(events_at(*m.published(), g, x), 13u);
  EXPECT_EQ(events_at(*m.published(), g, y), 2u);
  EXPECT_EQ(events_at(*m.published(), g, 0), 0u);

  d.log.event_counter = 4;
  cc::set_port_bit(d.log.port_map, y);
  d.log.switch_entries = {{3, 0xBFFF, 0, 2}, {4, 0xBFFE, 0, 2}};
  auto second = read(r, m, 2);
  ASSERT_TRUE(second);
  EXPECT_EQ(events_at(*m.published(), g, y), 4u) << "the map's only port";
  EXPECT_EQ(events_at(*m.published(), g, 0), 0u);
}

// A switch whose Get reads back otherwise than its Set replied (it keeps the masks its own
// way) is rewritten once, read back again, and then left alone as without CC weft can
// verify: not rewritten on every read of the logs, and not counted as configured.
TEST(CcManager, ADeviceThatKeepsASettingItsOwnWayIsRewrittenOnceNotForEver) {
  Rig r({.cc_agents = true});
  const fabric::NodeIndex sw = *r.sim.model().find_by_name("leaf2");
  r.sim.cc().find(sw, 0)->normalises = true;
  cc::CcManager m(r.sm.engine(), opensm_style());
  ASSERT_TRUE(r.pass(m));
  const uint64_t sets = r.sim.cc().find(sw, 0)->sets;
  auto first = read(r, m, 1);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->drifted, 1u) << "it does not hold what its reply said";
  auto again = r.pass(m);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->mads_written, 1u);
  EXPECT_EQ(again->unavailable, 1u);
  const auto st = m.view().at({r.sim.model().node(sw).guid.value, 0});
  EXPECT_EQ(st.state, cc::DeviceState::kUnavailable);
  EXPECT_NE(st.why.find("reads back otherwise than its Set replied"), std::string::npos) << st.why;
  for (int i = 2; i < 5; ++i) {
    auto next = read(r, m, i);
    ASSERT_TRUE(next);
    EXPECT_EQ(next->drifted, 0u) << "read " << i;
    auto pass = r.pass(m);
    ASSERT_TRUE(pass);
    EXPECT_EQ(pass->mads, 0u) << "pass after read " << i;
  }
  EXPECT_EQ(r.sim.cc().find(sw, 0)->sets, sets + 1);
}
