// Counters and link health over REST: a port's counters as the PerfMgr read them from
// the simulator's PMAs, /api/v1/health with a port past a threshold, the mark cleared
// natively and through UFM's app/unhealthy_ports (the shape its REST API guide gives),
// the per-port series on /metrics, and a fuzz of the routes that clear marks.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <random>
#include <set>

#include "../fuzz.hpp"
#include "rest_fixture.hpp"
#include "weft/routing/torus.hpp"

using namespace weft;
using namespace weft::testing;
using nlohmann::json;

namespace {

struct Uplink {
  fabric::NodeIndex leaf;
  PortNum port;
  uint64_t guid;
  uint64_t spine_guid;
  PortNum spine_port;
};

Uplink uplink(const simulator::SimFabric& sim, const std::string& name = "leaf0") {
  const auto leaf = *sim.model().find_by_name(name);
  for (const auto& p : sim.model().node(leaf).ports)
    if (p.num && p.linked() && sim.model().node(p.peer).is_switch())
      return {leaf, p.num, sim.model().node(leaf).guid.value, sim.model().node(p.peer).guid.value,
              p.peer_port};
  ADD_FAILURE() << "leaf0 has no uplink";
  return {};
}

std::function<void(sm::SmOptions&)> perfmgr(std::string policy = "report", bool cas = true) {
  return [policy, cas](sm::SmOptions& o) {
    o.perf.enabled = true;
    o.perf.log_errors = false;
    o.perf.unhealthy_policy = *perf::unhealthy_policy_named(policy);
    o.perf.metrics_ca_ports = cas;
  };
}

std::string counters_path(uint64_t guid, PortNum port) {
  return fmt::format("/api/v1/ports/0x{:016x}/{}/counters", guid, port);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(Counters, APortsCountersAreServedWithDeltasTotalsAndRates) {
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, true, perfmgr());
  const Uplink u = uplink(rig.sim);
  const std::string path = counters_path(u.guid, u.port);
  auto none = rig.mon("GET", path);
  EXPECT_EQ(none.status, 404) << none.body;
  EXPECT_NE(none.body.find("not read yet"), std::string::npos) << none.body;

  rig.counter_sweep();
  auto base = RestRig::json_of(rig.mon("GET", path));
  EXPECT_TRUE(base["baseline"].get<bool>()) << base.dump();
  rig.sim.count(u.leaf, u.port, perf::Counter::kSymbolErrors, 3);
  rig.sim.count(u.leaf, u.port, perf::Counter::kXmitWait, 40);
  rig.sim.count(u.leaf, u.port, perf::ExtCounter::kXmitData, 250'000);
  rig.counter_sweep();
  auto r = rig.mon("GET", path);
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = RestRig::json_of(r);
  EXPECT_EQ(j["node_guid"], fmt::format("0x{:016x}", u.guid));
  EXPECT_EQ(j["port"], u.port);
  EXPECT_EQ(j["name"], "leaf0");
  EXPECT_FALSE(j["baseline"].get<bool>());
  EXPECT_TRUE(j["read"].get<bool>());
  const json& sym = j["counters"]["SymbolErrorCounter"];
  EXPECT_EQ(sym["delta"], 3) << j.dump(1);
  EXPECT_EQ(sym["total"], 3);
  EXPECT_EQ(sym["value"], 3);
  EXPECT_FALSE(sym["saturated"].get<bool>());
  EXPECT_GT(sym["rate"].get<double>(), 0);
  EXPECT_EQ(j["counters"]["PortXmitWait"]["delta"], 40);
  EXPECT_EQ(j["extended"]["PortXmitData"]["delta"], 250'000) << "64-bit data counters";
  EXPECT_EQ(j["errors_in_window"]["SymbolErrorCounter"], 3);
  EXPECT_GT(j["xmit_bytes_per_s"].get<double>(), 0);
  EXPECT_TRUE(j["unhealthy"].is_null()) << "3 symbol errors are under the threshold (10)";
  // Its peer counted nothing; the port GUID names the same port.
  auto peer = RestRig::json_of(rig.mon("GET", counters_path(u.spine_guid, u.spine_port)));
  EXPECT_EQ(peer["counters"]["SymbolErrorCounter"]["delta"], 0) << peer.dump();

  EXPECT_EQ(rig.mon("GET", counters_path(u.guid, 99)).status, 404);
  EXPECT_EQ(rig.mon("GET", counters_path(u.guid, 0)).status, 404);
  EXPECT_EQ(rig.mon("GET", "/api/v1/ports/nosuch/1/counters").status, 400);
  EXPECT_EQ(rig.mon("GET", counters_path(0x1234, 1)).status, 404);
  EXPECT_EQ(rig.call("GET", path).status, 401);
}

TEST(Counters, AnSmWithoutThePerfMgrSaysSo) {
  RestRig rig;
  const Uplink u = uplink(rig.sim);
  auto r = rig.mon("GET", counters_path(u.guid, u.port));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("perfmgr FALSE"), std::string::npos) << r.body;
  auto h = RestRig::json_of(rig.mon("GET", "/api/v1/health"));
  EXPECT_FALSE(h["perfmgr"].get<bool>());
  EXPECT_EQ(h["counter_sweeps"], 0);
  EXPECT_TRUE(h["unhealthy"].empty());
}

// A port past a threshold: on /api/v1/health first among the top by errors, on UFM's
// app/unhealthy_ports with its peer, cleared (on disk) by UFM's PUT, and a port with
// PortXmitWait past the threshold first by XmitWait.
TEST(Health, AnUnhealthyPortIsListedAndClearedThroughUfmsShape) {
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, true, perfmgr());
  const Uplink u = uplink(rig.sim);
  const auto h00 = *rig.sim.model().find_by_name("h0-0");
  rig.counter_sweep();
  rig.sim.count(u.leaf, u.port, perf::Counter::kSymbolErrors, 12);
  rig.sim.count(h00, 1, perf::Counter::kRcvErrors, 2);
  rig.sim.count(h00, 1, perf::Counter::kXmitWait, 1'000'000);
  rig.counter_sweep();

  auto h = RestRig::json_of(rig.mon("GET", "/api/v1/health?top=5"));
  ASSERT_EQ(h["unhealthy"].size(), 1u) << h.dump(1);
  const json& bad = h["unhealthy"][0];
  EXPECT_EQ(bad["guid"], fmt::format("0x{:016x}", u.guid));
  EXPECT_EQ(bad["port"], u.port);
  EXPECT_EQ(bad["counter"], "SymbolErrorCounter");
  EXPECT_NE(bad["reason"].get<std::string>().find("12"), std::string::npos) << bad.dump();
  EXPECT_EQ(bad["policy"], "report");
  EXPECT_EQ(bad["name"], "leaf0");
  ASSERT_GE(h["top_errors"].size(), 2u);
  EXPECT_EQ(h["top_errors"][0]["node_guid"], fmt::format("0x{:016x}", u.guid));
  EXPECT_EQ(h["top_errors"][0]["errors_in_window"], 12);
  EXPECT_EQ(h["top_errors"][1]["name"], "h0-0");
  ASSERT_EQ(h["top_xmit_wait"].size(), 1u) << "only ports that waited";
  EXPECT_EQ(h["top_xmit_wait"][0]["name"], "h0-0");
  EXPECT_TRUE(h["top_xmit_wait"][0]["congested"].get<bool>());
  EXPECT_EQ(h["congested"], 1);
  EXPECT_EQ(h["counter_sweeps"], 2);
  EXPECT_EQ(h["last_sweep"]["unread"], 0);
  EXPECT_EQ(RestRig::json_of(rig.mon("GET", "/api/v1/health?top=1"))["top_errors"].size(), 1u);
  EXPECT_EQ(rig.mon("GET", "/api/v1/health?top=x").status, 400);
  EXPECT_EQ(rig.mon("GET", "/api/v1/health?top=-1").status, 400);

  auto ufm = rig.mon("GET", "/ufmRest/app/unhealthy_ports");
  ASSERT_EQ(ufm.status, 200) << ufm.body;
  auto list = RestRig::json_of(ufm);
  ASSERT_EQ(list.size(), 1u);
  const json& e = list[0];
  EXPECT_EQ(e["UnhealthyGUID"], fmt::format("{:016x}", u.guid));
  EXPECT_EQ(e["UnhealthyPortNumber"], u.port);
  EXPECT_EQ(e["UnhealthyNode"], "leaf0");
  EXPECT_EQ(e["UnhealthyPort"], fmt::format("leaf0/{}", u.port));
  EXPECT_EQ(e["UnhealthyNodeType"], "switch");
  EXPECT_EQ(e["PeerGUID"], fmt::format("{:016x}", u.spine_guid));
  EXPECT_EQ(e["PeerPortNumber"], u.spine_port);
  EXPECT_EQ(e["Condition"], "SymbolErrorCounter");
  EXPECT_TRUE(e.contains("StatusTime") && e.contains("PeerLID")) << e.dump();

  const std::string marks = rig.dir.path() + "/unhealthy-ports";
  EXPECT_NE(slurp(marks).find(fmt::format("0x{:016x}", u.guid)), std::string::npos) << slurp(marks);
  const std::string body =
      fmt::format(R"({{"ports": ["{:016x}_{}"], "ports_policy": "HEALTHY"}})", u.guid, u.port);
  EXPECT_EQ(rig.mon("PUT", "/ufmRest/app/unhealthy_ports", body).status, 403) << "operators only";
  EXPECT_EQ(rig.op("PUT", "/ufmRest/app/unhealthy_ports",
                   R"({"ports": ["0002c90300001001_1"], "ports_policy": "UNHEALTHY"})")
                .status,
            400);
  EXPECT_EQ(rig.op("PUT", "/ufmRest/app/unhealthy_ports",
                   fmt::format(R"({{"ports": ["{:016x}_{}"], "ports_policy": "HEALTHY"}})",
                               u.spine_guid, u.spine_port))
                .status,
            400)
      << "not unhealthy";
  EXPECT_EQ(rig.op("PUT", "/ufmRest/app/unhealthy_ports",
                   R"({"ports": ["0002c90300001001"], "ports_policy": "HEALTHY"})")
                .status,
            400)
      << "no _PORT";
  auto put = rig.op("PUT", "/ufmRest/app/unhealthy_ports", body);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(slurp(marks).find(fmt::format("0x{:016x}", u.guid)), std::string::npos)
      << "off disk before the answer: " << slurp(marks);
  EXPECT_TRUE(RestRig::json_of(rig.mon("GET", "/ufmRest/app/unhealthy_ports")).empty());
  EXPECT_TRUE(RestRig::json_of(rig.mon("GET", "/api/v1/health"))["unhealthy"].empty());
  // The errors it was marked for do not mark it again at the next read.
  rig.counter_sweep();
  EXPECT_TRUE(RestRig::json_of(rig.mon("GET", "/api/v1/health"))["unhealthy"].empty());
}

TEST(Health, TheNativeRouteClearsAMarkOnceAndADeviceClearsAllItsPorts) {
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, true, perfmgr());
  const Uplink u = uplink(rig.sim);
  rig.counter_sweep();
  // Two ports of leaf0 past thresholds.
  rig.sim.count(u.leaf, u.port, perf::Counter::kLinkDowned, 10);
  rig.sim.count(u.leaf, 1, perf::Counter::kExcessiveBufferOverrunErrors, 10);
  rig.counter_sweep();
  ASSERT_EQ(RestRig::json_of(rig.mon("GET", "/api/v1/health"))["unhealthy"].size(), 2u);

  const std::string route = fmt::format("/api/v1/ports/0x{:016x}/{}/healthy", u.guid, u.port);
  EXPECT_EQ(rig.mon("POST", route).status, 403);
  auto ok = rig.op("POST", route);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(
      RestRig::json_of(ok)["was"].get<std::string>().find("LinkDownedCounter") != std::string::npos,
      true)
      << ok.body;
  auto again = rig.op("POST", route);
  EXPECT_EQ(again.status, 404) << again.body;
  EXPECT_EQ(RestRig::json_of(rig.mon("GET", "/api/v1/health"))["unhealthy"].size(), 1u);

  rig.sim.count(u.leaf, u.port, perf::Counter::kLinkDowned, 10);
  rig.counter_sweep();
  ASSERT_EQ(RestRig::json_of(rig.mon("GET", "/api/v1/health"))["unhealthy"].size(), 2u)
      << "new errors mark it again";
  auto dev =
      rig.op("PUT", "/ufmRest/app/unhealthy_ports",
             fmt::format(R"({{"devices": ["{:016x}"], "ports_policy": "HEALTHY"}})", u.guid));
  ASSERT_EQ(dev.status, 200) << dev.body;
  EXPECT_TRUE(RestRig::json_of(rig.mon("GET", "/api/v1/health"))["unhealthy"].empty());
}

TEST(Metrics, PortSeriesCarryGuidLabelsAndCaPortsCanBeLeftOut) {
  for (const bool cas : {true, false}) {
    RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, true, perfmgr("report", cas));
    const Uplink u = uplink(rig.sim);
    rig.counter_sweep();
    rig.sim.count(u.leaf, u.port, perf::Counter::kSymbolErrors, 4);
    rig.sim.count(u.leaf, u.port, perf::ExtCounter::kRcvData, 1000);
    rig.counter_sweep();
    auto m = rig.mon("GET", "/metrics");
    ASSERT_EQ(m.status, 200);
    const std::string labels = fmt::format(
        "node_guid=\"0x{:016x}\",port_guid=\"0x{:016x}\",port=\"{}\"", u.guid, u.guid, u.port);
    EXPECT_NE(
        m.body.find("weft_port_errors_total{" + labels + ",counter=\"SymbolErrorCounter\"} 4"),
        std::string::npos)
        << m.body;
    EXPECT_NE(m.body.find("weft_port_rcv_bytes_total{" + labels + "} 4000"), std::string::npos)
        << "words of 4 bytes";
    EXPECT_NE(m.body.find("weft_perf_sweeps_total 2"), std::string::npos);
    EXPECT_NE(m.body.find("# TYPE weft_port_xmit_wait_total counter"), std::string::npos);
    const auto h00 = rig.sim.model().node(*rig.sim.model().find_by_name("h0-0"));
    const std::string ca = fmt::format("node_guid=\"0x{:016x}\"", h00.guid.value);
    EXPECT_EQ(m.body.find(ca) != std::string::npos, cas) << "perfmgr_metrics_ca_ports " << cas;
  }
}

TEST(Fuzz, HealthRoutesNeverBreak) {
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, true, perfmgr());
  const Uplink u = uplink(rig.sim);
  rig.counter_sweep();
  const std::vector<std::tuple<std::string, std::string, std::string>> seeds = {
      {"PUT", "/ufmRest/app/unhealthy_ports",
       fmt::format(
           R"({{"ports": ["{:016x}_{}"], "devices": ["{:016x}"], "ports_policy": "HEALTHY"}})",
           u.guid, u.port, u.guid)},
      {"POST", fmt::format("/api/v1/ports/0x{:016x}/{}/healthy", u.guid, u.port), ""},
      {"GET", counters_path(u.guid, u.port), ""},
      {"GET", "/api/v1/health?top=3", ""},
  };
  const std::string alphabet = "{}[]\",:0123456789abcdefxX-_ \\/?=&\x01\xff";
  std::mt19937 rng(20261203);
  std::map<int, int> statuses;
  for (int i = 0; i < 3000; ++i) {
    if (i % 100 == 0) {  // marks to clear
      rig.sim.count(u.leaf, u.port, perf::Counter::kSymbolErrors, 20);
      rig.counter_sweep();
    }
    const auto& [m, t, b] = seeds[i % seeds.size()];
    const bool path = (i / seeds.size()) % 3 == 0 || b.empty();
    const std::string target = path ? mutate(t, alphabet, rng) : t;
    const std::string body = path ? b : mutate(b, alphabet, rng);
    auto r = rig.op(m, target.empty() ? "/" : target, body);
    ++statuses[r.status];
    ASSERT_NE(r.status, 500) << m << " " << target << " " << body << " -> " << r.body;
    if (r.status >= 400) {
      ASSERT_TRUE(RestRig::json_of(r).contains("error")) << r.body;
    }
  }
  EXPECT_GT(statuses[200], 50);
  EXPECT_GT(statuses[400] + statuses[404], 500);
}

// The topology page's data: a 3-tier tree drawn by tiers (leaves 0, spines 2), a torus
// by force; one entry per link, named "GUID/port-GUID/port" lower end first, as the
// page's data-link; a link takes its health from a mark on either end.
TEST(Topology, TiersForTreesForceOtherwiseAndLinksCarryHealth) {
  RestRig rig("ft3:pods=2,leaves=2,aggs=2,cores=2,hosts=2", std::nullopt, true, perfmgr());
  auto r = rig.mon("GET", "/api/v1/topology");
  ASSERT_EQ(r.status, 200) << r.body;
  auto t = RestRig::json_of(r);
  EXPECT_EQ(t["layout"], "tiers") << t.dump().substr(0, 500);
  EXPECT_EQ(t["levels"], 3);
  const auto& f = rig.sim.model();
  EXPECT_EQ(t["nodes"].size(), f.size());
  EXPECT_EQ(t["links"].size(), f.links().size());
  std::set<std::string> ids;
  for (const auto& l : t["links"]) {
    const std::string id = l["id"];
    ids.insert(id);
    const uint64_t a = std::stoull(l["a"].get<std::string>(), nullptr, 16);
    const uint64_t b = std::stoull(l["b"].get<std::string>(), nullptr, 16);
    const auto lo = std::min(std::pair(a, l["pa"].get<int>()), std::pair(b, l["pb"].get<int>()));
    EXPECT_EQ(id.substr(0, id.find('-')), fmt::format("0x{:016x}/{}", lo.first, lo.second));
    EXPECT_EQ(l["state"], "Active");
    EXPECT_EQ(l["health"], "ok");
  }
  EXPECT_EQ(ids.size(), f.links().size()) << "ids are unique";
  for (const auto& n : t["nodes"]) {
    const auto idx = f.find(Guid{std::stoull(n["guid"].get<std::string>(), nullptr, 16)});
    ASSERT_TRUE(idx);
    const auto& nd = f.node(*idx);
    if (!nd.is_switch()) {
      EXPECT_EQ(n["type"], "ca");
      EXPECT_EQ(n["leaf"], fmt::format("0x{:016x}", f.node(nd.ports[1].peer).guid.value));
    } else {
      const std::string name = nd.description;
      const int want = name.rfind("leaf", 0) == 0 ? 0 : name.rfind("core", 0) == 0 ? 2 : 1;
      EXPECT_EQ(n["tier"], want) << name;
    }
  }

  // A mark on one end of leaf0-0's uplink: that link is unhealthy, with why.
  const Uplink u = uplink(rig.sim, "leaf0-0");
  rig.counter_sweep();
  rig.sim.count(u.leaf, u.port, perf::Counter::kSymbolErrors, 50);
  rig.sim.count(u.leaf, 1, perf::Counter::kSymbolErrors, 2);
  rig.counter_sweep();
  t = RestRig::json_of(rig.mon("GET", "/api/v1/topology"));
  size_t unhealthy = 0, errors = 0;
  for (const auto& l : t["links"]) {
    unhealthy += l["health"] == "unhealthy";
    errors += l["health"] == "errors";
    if (l["health"] == "unhealthy") {
      EXPECT_NE(l["why"].get<std::string>().find("SymbolErrorCounter"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(unhealthy, 1u);
  EXPECT_EQ(errors, 1u) << "two errors on leaf0-0/1: under the threshold, shown as errors";

  RestRig random("random:switches=12,degree=3,hosts=1,seed=2");
  auto rt = RestRig::json_of(random.mon("GET", "/api/v1/topology"));
  EXPECT_EQ(rt["layout"], "force") << "neither a tree nor a grid";
  EXPECT_FALSE(rt.contains("grid"));
  EXPECT_EQ(random.call("GET", "/api/v1/topology").status, 401);
}

namespace {

// Every switch link of the topology JSON joins coordinates one step apart in one
// dimension (round the ring where it wraps); returns the links that wrap.
size_t check_grid(const json& t) {
  std::map<std::string, std::vector<int>> at;
  std::set<std::vector<int>> seen;
  for (const auto& n : t["nodes"])
    if (n["type"] == "switch") {
      EXPECT_TRUE(n.contains("coord")) << n;
      at[n["guid"]] = n["coord"].get<std::vector<int>>();
      EXPECT_TRUE(seen.insert(at[n["guid"]]).second) << "two switches at one place: " << n;
    }
  const auto radix = t["grid"]["radix"].get<std::vector<int>>();
  const bool wrap = t["grid"]["wrap"];
  const auto dims = t["grid"]["wraps"].get<std::vector<bool>>();  // each dimension's
  EXPECT_EQ(dims.size(), radix.size());
  for (bool w : dims) EXPECT_EQ(w, wrap) << "a shape whose rings all wrap, or none";
  size_t wraps = 0;
  for (const auto& l : t["links"]) {
    if (!at.count(l["a"]) || !at.count(l["b"])) continue;
    const auto &a = at[l["a"]], &b = at[l["b"]];
    int moved = 0;
    for (size_t d = 0; d < radix.size(); ++d) {
      const int step = std::abs(a[d] - b[d]);
      if (step == 0) continue;
      ++moved;
      if (step != 1) {
        EXPECT_TRUE(d < dims.size() && dims[d] && step == radix[d] - 1) << l;
        ++wraps;
      }
    }
    EXPECT_EQ(moved, 1) << l;
  }
  return wraps;
}

}  // namespace

// Tori and meshes are drawn on their grid: read off the links when every ring has
// radix 5 or more (or a mesh), by the SM's torus_config otherwise.
TEST(Topology, ToriAndMeshesOnTheirGrid) {
  RestRig torus("torus:dims=6x5,hosts=2");
  auto t = RestRig::json_of(torus.mon("GET", "/api/v1/topology"));
  ASSERT_EQ(t["layout"], "grid") << t.dump().substr(0, 300);
  EXPECT_EQ(t["grid"]["radix"], json({6, 5}));
  EXPECT_EQ(t["grid"]["wrap"], true);
  EXPECT_EQ(check_grid(t), 5u + 6u) << "one wrap link per ring: 5 along x, 6 along y";

  RestRig mesh("mesh:dims=4x3x2,hosts=1");
  t = RestRig::json_of(mesh.mon("GET", "/api/v1/topology"));
  ASSERT_EQ(t["layout"], "grid");
  EXPECT_EQ(t["grid"]["radix"], json({4, 3, 2}));
  EXPECT_EQ(t["grid"]["wrap"], false);
  EXPECT_EQ(check_grid(t), 0u);

  // A 3x3 torus closes squares along its rings: not read off the links, but drawn on
  // its grid when the SM has its description.
  RestRig small("torus:dims=3x3,hosts=1");
  EXPECT_EQ(RestRig::json_of(small.mon("GET", "/api/v1/topology"))["layout"], "force");
  const auto f = *simulator::make_fabric("torus:dims=3x3,hosts=1");
  routing::TorusSpec spec;
  spec.radix = {3, 3};
  spec.seed = f.node(*f.find_by_name("sw0-0")).guid;
  spec.plus = {f.node(*f.find_by_name("sw1-0")).guid, f.node(*f.find_by_name("sw0-1")).guid};
  RestRig described("torus:dims=3x3,hosts=1", std::nullopt, true,
                    [&](sm::SmOptions& o) { o.torus = spec; });
  t = RestRig::json_of(described.mon("GET", "/api/v1/topology"));
  ASSERT_EQ(t["layout"], "grid");
  EXPECT_EQ(check_grid(t), 3u + 3u);
  for (const auto& n : t["nodes"])
    if (n["name"] == "sw1-2") {
      EXPECT_EQ(n["coord"], json({1, 2}));
    }
}

TEST(Topology, ThePageAndItsAssetsAreServedWithoutCredentials) {
  RestRig rig;
  auto page = rig.call("GET", "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type.rfind("text/html", 0), 0u);
  EXPECT_NE(page.body.find("/ui/topology.js"), std::string::npos);
  auto js = rig.call("GET", "/ui/topology.js");
  ASSERT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type.rfind("text/javascript", 0), 0u);
  EXPECT_NE(js.body.find("data-link"), std::string::npos);
  EXPECT_NE(js.body.find("/api/v1/events"), std::string::npos);
  // Nothing fetched from elsewhere: no URL but SVG's namespace name.
  for (std::string text : {js.body, page.body}) {
    for (auto at = text.find("http://www.w3.org/2000/svg"); at != std::string::npos;
         at = text.find("http://www.w3.org/2000/svg"))
      text.erase(at, 26);
    EXPECT_EQ(text.find("http://"), std::string::npos);
    EXPECT_EQ(text.find("https://"), std::string::npos);
    EXPECT_EQ(text.find("//cdn"), std::string::npos);
  }
  EXPECT_EQ(rig.call("GET", "/ui/topology.css").status, 200);
  EXPECT_EQ(rig.call("GET", "/ui/nosuch.js").status, 404);
  EXPECT_EQ(rig.call("GET", "/ui/..%2fetc%2fpasswd").status, 404);
}
