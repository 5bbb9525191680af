// Congestion over REST (issue 31, item 4): a hot spot in the simulator (every other host
// sending to h0-0) read from the congestion logs and the PerfMgr's PortXmitWait, served
// ranked at /api/v1/congestion, as a "congestion" event and on /metrics; with adaptive
// routing on, a congested destination a marking switch has no group for is named.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>

#include "rest_fixture.hpp"

using namespace weft;
using namespace weft::testing;
using nlohmann::json;

namespace {

constexpr const char* kTree = "ft2:leaves=4,spines=2,hosts=3";

void cc_and_perf(sm::SmOptions& o) {
  o.perf.enabled = true;
  o.perf.log_errors = false;
  o.perf.xmit_wait_threshold = 100;
  o.cc.enabled = true;
  o.cc.sw.control_map = 0xF;
  o.cc.sw.threshold = 0xF;
  o.cc.sw.marking_rate = 0xF;
  o.cc.ca.control_map = 0x1;
  o.cc.ca.sl[0] = {10, 1, 2, 0};
}

struct Hotspot {
  fabric::NodeIndex dst, leaf0;
  uint16_t dlid;
  PortNum into;  // leaf0's port to h0-0
};

// Agents everywhere, a pass, a baseline counter sweep, then every other host sends to
// h0-0; the counters and the logs are read again.
Hotspot run_hotspot(RestRig& rig) {
  const auto& f = rig.sim.model();
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) rig.sim.set_cc(n, simulator::CcSupport::kAgent);
  std::optional<Result<cc::CcSweep>> pass;
  rig.managers->cc_pass([&](Result<cc::CcSweep> r) { pass = std::move(r); });
  EXPECT_TRUE(rig.smgr->engine().run_all());
  EXPECT_TRUE(pass && *pass && (*pass)->verified);
  rig.counter_sweep();
  Hotspot h;
  h.dst = *f.find_by_name("h0-0");
  h.leaf0 = *f.find_by_name("leaf0");
  h.dlid = f.node(h.dst).ports[1].attrs.lid.value;
  h.into = f.node(h.dst).ports[1].peer_port;
  std::vector<simulator::SimFabric::Flow> flows;
  for (fabric::NodeIndex n = 0; n < f.size(); ++n)
    if (!f.node(n).is_switch() && n != h.dst) flows.push_back({n, 1, h.dlid, 0});
  EXPECT_EQ(rig.sim.congest(flows, 1000).routed, 11u);
  rig.counter_sweep();
  std::optional<Result<cc::CcLogRead>> read;
  rig.managers->cc_read_logs([&](Result<cc::CcLogRead> r) { read = std::move(r); });
  EXPECT_TRUE(rig.smgr->engine().run_all());
  EXPECT_TRUE(read && *read) << (read ? (*read).error().message : "not finished");
  return h;
}

}  // namespace

TEST(Congestion, AHotSpotIsRankedFirstWithItsFlowsAnEventAndMetrics) {
  RestRig rig(kTree, std::nullopt, true, cc_and_perf);
  std::vector<sm::SmEvent> events;
  rig.smgr->on_event([&](const sm::SmEvent& e) { events.push_back(e); });
  auto before = RestRig::json_of(rig.mon("GET", "/api/v1/congestion"));
  EXPECT_TRUE(before["congestion_control"].get<bool>());
  EXPECT_TRUE(before["ports"].empty());
  EXPECT_EQ(before["log_reads"], 0);

  const Hotspot h = run_hotspot(rig);
  const auto& f = rig.sim.model();
  auto r = rig.mon("GET", "/api/v1/congestion");
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = RestRig::json_of(r);
  EXPECT_EQ(j["log_reads"], 1);
  EXPECT_EQ(j["devices"]["configured"], 18);
  EXPECT_TRUE(j["devices"]["verified"].get<bool>());
  ASSERT_FALSE(j["ports"].empty());
  const json& first = j["ports"][0];
  EXPECT_EQ(first["guid"], fmt::format("0x{:016x}", f.node(h.leaf0).guid.value));
  EXPECT_EQ(first["port"], h.into);
  EXPECT_EQ(first["name"], f.node(h.leaf0).description);
  EXPECT_EQ(first["log_events"], 11);
  EXPECT_TRUE(first["marking"].get<bool>());
  // 10 waits of 1,000 ticks, over the interval between the two counter sweeps.
  EXPECT_GT(first["xmit_wait_rate"].get<double>(), 0);
  EXPECT_TRUE(first["congested"].get<bool>());
  EXPECT_GT(first["log_events"].get<uint64_t>(), j["ports"][1]["log_events"].get<uint64_t>());
  ASSERT_EQ(j["flows"].size(), 11u);
  for (const auto& fl : j["flows"]) {
    EXPECT_EQ(fl["dlid"], h.dlid);
    EXPECT_EQ(fl["destination"]["name"], "h0-0");
    EXPECT_FALSE(fl["source"].is_null());
    EXPECT_EQ(fl["qps"].size(), 1u);
    EXPECT_FALSE(fl.contains("no_ar_group_at")) << "no adaptive routing here";
  }
  EXPECT_TRUE(j["ar_destinations_without_group"].empty());

  // The topology page's links: the one into h0-0 congested, with its events.
  const json topo = RestRig::json_of(rig.mon("GET", "/api/v1/topology"));
  size_t congested = 0;
  for (const auto& l : topo["links"]) {
    const bool hot = (l["a"] == first["guid"] && l["pa"] == h.into) ||
                     (l["b"] == first["guid"] && l["pb"] == h.into);
    if (hot) {
      EXPECT_EQ(l["health"], "congested") << l.dump();
      EXPECT_EQ(l["cc_events"], 11);
      EXPECT_NE(l["why"].get<std::string>().find("11 congestion events"), std::string::npos);
    }
    congested += l["cc_events"].get<uint64_t>() > 0;
  }
  EXPECT_EQ(congested, 5u) << "into h0-0, into leaf0, and the three leaves' uplinks";
  // Congestion control turned off: the page paints nothing from the old read.
  {
    auto o = rig.smgr->options();
    o.cc.enabled = false;
    rig.managers->set_options(o);
    rig.smgr->publish_stats();
    const json off = RestRig::json_of(rig.mon("GET", "/api/v1/topology"));
    for (const auto& l : off["links"]) {
      EXPECT_EQ(l["cc_events"], 0) << l.dump();
      if (l.contains("why")) {
        EXPECT_EQ(l["why"].get<std::string>().find("congestion events"), std::string::npos);
      }
    }
    o.cc.enabled = true;
    rig.managers->set_options(o);
    rig.smgr->publish_stats();
  }

  auto one = RestRig::json_of(rig.mon("GET", "/api/v1/congestion?top=1"));
  EXPECT_EQ(one["ports"].size(), 1u);
  EXPECT_EQ(one["flows"].size(), 1u);
  EXPECT_EQ(rig.mon("GET", "/api/v1/congestion?top=many").status, 400);
  EXPECT_EQ(rig.call("GET", "/api/v1/congestion").status, 401);

  size_t seen = 0;
  for (const auto& e : events)
    if (e.type == "congestion") {
      ++seen;
      EXPECT_EQ(e.data["flows"], 11);
      EXPECT_EQ(e.data["top"][0]["port"], h.into);
      EXPECT_EQ(e.data["top"][0]["log_events"], 11);
    }
  EXPECT_EQ(seen, 1u);

  auto m = rig.mon("GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("weft_cc_devices{state=\"configured\"} 18"), std::string::npos);
  EXPECT_NE(m.body.find("weft_cc_log_reads_total 1"), std::string::npos);
  EXPECT_NE(
      m.body.find(fmt::format("weft_cc_log_events_total{{node_guid=\"0x{:016x}\",port=\"{}\"}} 11",
                              f.node(h.leaf0).guid.value, h.into)),
      std::string::npos)
      << m.body.substr(m.body.find("weft_cc_log_events_total"), 400);

  // A read with no traffic since: no event, the ranking by totals.
  std::optional<Result<cc::CcLogRead>> again;
  rig.managers->cc_read_logs([&](Result<cc::CcLogRead> x) { again = std::move(x); });
  ASSERT_TRUE(rig.smgr->engine().run_all());
  ASSERT_TRUE(again && *again);
  size_t after = 0;
  for (const auto& e : events) after += e.type == "congestion";
  EXPECT_EQ(after, 1u);
  auto quiet = RestRig::json_of(rig.mon("GET", "/api/v1/congestion"));
  EXPECT_EQ(quiet["ports"][0]["log_events"], 0);
  EXPECT_EQ(quiet["ports"][0]["log_events_total"], 11);
}

// With adaptive routing on, a congested destination is named with the marking switches
// that have no AR group for it: leaf0 (its last link) and the spines (one link each to
// leaf0), not the sources' leaves (a group over both spines).
TEST(Congestion, WithAdaptiveRoutingTheSwitchesWithNoGroupForAHotDestinationAreNamed) {
  RestRig rig(kTree, std::nullopt, false, [](sm::SmOptions& o) {
    cc_and_perf(o);
    o.routing_engine = "ar_ftree";
  });
  const auto& f = rig.sim.model();
  for (fabric::NodeIndex n = 0; n < f.size(); ++n)
    if (f.node(n).is_switch()) rig.sim.set_ar_cap(n, 64);
  rig.sweep();
  const Hotspot h = run_hotspot(rig);
  const json j = RestRig::json_of(rig.mon("GET", "/api/v1/congestion"));
  auto hex = [&](const char* name) {
    return fmt::format("0x{:016x}", f.node(*f.find_by_name(name)).guid.value);
  };
  ASSERT_EQ(j["ar_destinations_without_group"].size(), 1u) << j.dump(1);
  const json& d = j["ar_destinations_without_group"][0];
  EXPECT_EQ(d["dlid"], h.dlid);
  EXPECT_EQ(d["destination"]["name"], "h0-0");
  // Of the switches that marked, leaf0 and the spine(s) (ftree sends everything to one
  // destination down one spine), never a source's leaf.
  std::set<std::string> want;
  size_t marked_at_source_leaf = 0;
  for (const auto& fl : j["flows"]) {
    ASSERT_TRUE(fl.contains("no_ar_group_at")) << fl.dump();
    for (const auto& at : fl["marked_at"]) {
      const std::string g = at["guid"];
      if (g == hex("leaf0") || g == hex("spine0") || g == hex("spine1"))
        want.insert(g);
      else
        ++marked_at_source_leaf;
    }
  }
  EXPECT_GT(marked_at_source_leaf, 0u) << "source leaves marked too, and have groups";
  EXPECT_TRUE(want.count(hex("leaf0")));
  EXPECT_EQ(want.size(), 2u) << "leaf0 and one spine";
  const auto sws = d["switches"].get<std::vector<std::string>>();
  EXPECT_EQ(std::set<std::string>(sws.begin(), sws.end()), want);
}
