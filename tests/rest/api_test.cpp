// The REST API over a simulated fabric: the UFM facade with the requests its real
// clients send (byte for byte where they build the body by hand), the native API,
// authentication and roles, errors, and a fuzz of the mutating routes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "../fuzz.hpp"
#include "rest_fixture.hpp"
#include "test_data.hpp"
#include "weft/mad/ar.hpp"
#include "weft/rest/hostlist.hpp"
#include "weft/rest/throttle.hpp"
#include "weft/routing/torus.hpp"
#include "weft/text_file.hpp"

using namespace weft;
using namespace weft::testing;
using nlohmann::json;

namespace {

// Port GUIDs of ft2:leaves=2,spines=1,hosts=2 (hosts h0-0, h0-1, h1-0, h1-1).
constexpr uint64_t kH00 = 0x0002c90400000001, kH01 = 0x0002c90400000011, kH10 = 0x0002c90400000021,
                   kH11 = 0x0002c90400000031;

bool has_guid(const json& guids, const std::string& g) {
  for (const auto& e : guids)
    if (e.at("guid") == g) return true;
  return false;
}

bool holds(const std::vector<uint16_t>& keys, uint16_t pkey) {
  for (uint16_t k : keys)
    if ((k & 0x7fff) == pkey) return true;
  return false;
}

}  // namespace

// ib-kubernetes (pkg/sm/plugins/ufm/ufm.go): Validate, AddGuidsToPKey with the body it
// formats by hand ("0x%04X", upper-case hex), ListGuidsInUse (GET with a trailing slash
// and ?guids_data=true, parsed as map[pkey]{guids:[{guid}]}), RemoveGuidsFromPKey.
// It accepts 200 only.
TEST(UfmFacade, KubernetesPluginFlow) {
  RestRig rig;
  auto v = rig.op("GET", "/ufmRest/app/ufm_version");
  ASSERT_EQ(v.status, 200) << v.body;
  EXPECT_TRUE(RestRig::json_of(v).contains("ufm_release_version"));

  // One GUID on the fabric, one a VF's (not a port yet): both kept.
  const std::string body =
      R"({"pkey": "0x0A12", "index0": true, "ip_over_ib": true, "membership": "full", "guids": ["0002c90400000001","02000000000000ab"]})";
  auto add = rig.op("POST", "/ufmRest/resources/pkeys", body);
  ASSERT_EQ(add.status, 200) << add.body;
  // On disk before the answer, in OpenSM's grammar.
  EXPECT_NE(rig.file_text().find("0x0a12"), std::string::npos) << rig.file_text();
  EXPECT_NE(rig.file_text().find("0x0002c90400000001=full"), std::string::npos);
  EXPECT_NE(rig.file_text().find("0x02000000000000ab=full"), std::string::npos);

  auto list = rig.op("GET", "/ufmRest/resources/pkeys/?guids_data=true");
  ASSERT_EQ(list.status, 200) << list.body;
  auto j = RestRig::json_of(list);
  ASSERT_TRUE(j.contains("0xa12")) << j.dump();
  EXPECT_TRUE(has_guid(j["0xa12"]["guids"], "0002c90400000001")) << j.dump();
  EXPECT_TRUE(has_guid(j["0xa12"]["guids"], "02000000000000ab"));
  EXPECT_EQ(j["0xa12"]["guids"].size(), 2u);

  // The sweep the change asked for puts the P_Key on the port, at index 0 (index0).
  rig.sweep();
  auto keys = rig.held_pkeys(kH00);
  ASSERT_FALSE(keys.empty());
  EXPECT_EQ(keys[0], 0x8a12) << "full member at index 0";
  EXPECT_FALSE(holds(rig.held_pkeys(kH01), 0x0a12));

  // Adding again is no change: same generation, no write.
  auto again = rig.op("POST", "/ufmRest/resources/pkeys", body);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(RestRig::json_of(again)["generation"], RestRig::json_of(add)["generation"]);

  auto rm = rig.op("POST", "/ufmRest/actions/remove_guids_from_pkey",
                   R"({"pkey": "0x0A12", "guids": ["0002c90400000001"]})");
  ASSERT_EQ(rm.status, 200) << rm.body;
  rig.sweep();
  EXPECT_FALSE(holds(rig.held_pkeys(kH00), 0x0a12));
  j = RestRig::json_of(rig.op("GET", "/ufmRest/resources/pkeys?guids_data=true"));
  ASSERT_TRUE(j.contains("0xa12"));
  EXPECT_FALSE(has_guid(j["0xa12"]["guids"], "0002c90400000001"));
  EXPECT_TRUE(has_guid(j["0xa12"]["guids"], "02000000000000ab"));
}

// The same client with SR-IOV (ib-kubernetes with ib-sriov-cni): the VF's GUID goes into
// the partition before the VF carries it; once the CNI writes it into the VF, the next
// sweep puts the partition into that virtual port's table, and takes it away after
// RemoveGuidsFromPKey. The vport shows on its physical port and in /metrics.
TEST(UfmFacade, KubernetesFlowReachesAVirtualFunction) {
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, /*bring_up=*/false,
              [](sm::SmOptions& o) { o.virt_enabled = 2; });
  const auto h10 = *rig.sim.model().find_by_name("h1-0");
  rig.sim.vports().add(
      h10, 1, {.vports = 8, .lid_required = 3, .node_guid = rig.sim.model().node(h10).guid});
  rig.sweep();
  const std::string vf = "02000000000000ab";
  auto add = rig.op(
      "POST", "/ufmRest/resources/pkeys",
      R"({"pkey": "0x0A12", "index0": false, "ip_over_ib": true, "membership": "full", "guids": [")" +
          vf + R"("]})");
  ASSERT_EQ(add.status, 200) << add.body;
  rig.sweep();  // no VF carries it yet
  auto vkeys = [&] {
    std::vector<uint16_t> out;
    for (uint16_t k : rig.sim.vports().find(h10, 1)->vports.at(1).pkeys)
      if (k & 0x7fff) out.push_back(k);
    return out;
  };
  EXPECT_FALSE(holds(vkeys(), 0x0a12));
  // The CNI: `ip link set ... vf 0 port_guid 02:00:00:00:00:00:00:ab`.
  rig.sim.vports().host_set_guid(h10, 1, 1, Guid{0x02000000000000ab});
  rig.sweep();
  EXPECT_TRUE(holds(vkeys(), 0x0a12));
  EXPECT_EQ(rig.sim.vports().find(h10, 1)->vports.at(1).state, 4) << "ACTIVE";
  EXPECT_FALSE(holds(rig.held_pkeys(kH10), 0x0a12)) << "the physical port is not the pod's";
  // The switch port facing the CA lets the VF's partition through (it filters P_Keys).
  const auto& link = rig.sim.model().node(h10).ports[1];
  EXPECT_TRUE(holds(rig.sim.pkeys(link.peer, link.peer_port), 0x0a12));

  auto port = rig.mon("GET", "/api/v1/ports/0x0002c90400000021/1");
  ASSERT_EQ(port.status, 200) << port.body;
  auto j = RestRig::json_of(port);
  ASSERT_TRUE(j.contains("vports")) << j.dump();
  ASSERT_EQ(j["vports"].size(), 1u) << j.dump();
  const auto& v = j["vports"][0];
  EXPECT_EQ(v["index"], 1);
  EXPECT_EQ(v["guid"], "0x" + vf);
  EXPECT_EQ(v["state"], "Active");
  EXPECT_EQ(v["lid_required"], true);
  EXPECT_NE(v["lid"], j["lid"]) << "a LID of its own";
  // No partition file: every port a full member of the Default partition (OpenSM's rule).
  EXPECT_EQ(v["pkeys"], json::array({"0xffff", "0x8a12"})) << v.dump();
  auto m = rig.mon("GET", "/metrics");
  EXPECT_NE(m.body.find("weft_vports{state=\"Active\"} 1"), std::string::npos) << m.body;

  auto rm = rig.op("POST", "/ufmRest/actions/remove_guids_from_pkey",
                   R"({"pkey": "0x0A12", "guids": [")" + vf + R"("]})");
  ASSERT_EQ(rm.status, 200) << rm.body;
  rig.sweep();
  EXPECT_FALSE(holds(vkeys(), 0x0a12));
  EXPECT_FALSE(holds(rig.sim.pkeys(link.peer, link.peer_port), 0x0a12));
}

// UFM's Slurm integration (ufm_slurm_utils.py): POST pkeys/hosts with the job's
// SLURM_JOB_NODELIST and the config's strings for booleans; DELETE
// pkeys/<pkey>/hosts/<nodelist> in the epilog; /ufmRestV3 with "Basic <token>".
TEST(UfmFacade, SlurmPrologEpilog) {
  RestRig rig;
  auto tok = rig.op("POST", "/ufmRest/app/tokens");
  ASSERT_EQ(tok.status, 200) << tok.body;
  const std::string token = RestRig::json_of(tok).at("access_token");
  const std::string authz = "Basic " + token;

  auto add = rig.call(
      "POST", "/ufmRestV3/resources/pkeys/hosts",
      R"({"hosts_names": "h0-[0-1],h1-0", "pkey": "0x1234", "ip_over_ib": "true", "index0": "false"})",
      authz);
  ASSERT_EQ(add.status, 200) << add.body;
  rig.sweep();
  for (uint64_t g : {kH00, kH01, kH10}) EXPECT_TRUE(holds(rig.held_pkeys(g), 0x1234)) << g;
  EXPECT_FALSE(holds(rig.held_pkeys(kH11), 0x1234));
  // index0 false: the Default P_Key stays at index 0.
  EXPECT_EQ(rig.held_pkeys(kH00).at(0), 0xffff);

  // A job on a host the fabric does not know: 404, and nothing changed.
  const auto before = rig.file_text();
  const auto changes = rig.backend->changes();
  auto bad = rig.call("POST", "/ufmRestV3/resources/pkeys/hosts",
                      R"({"hosts_names": "h1-1,nosuch[1-3]", "pkey": "0x1234"})", authz);
  EXPECT_EQ(bad.status, 404) << bad.body;
  EXPECT_NE(bad.body.find("nosuch1"), std::string::npos);
  EXPECT_EQ(rig.file_text(), before);
  EXPECT_EQ(rig.backend->changes(), changes);

  auto del = rig.call("DELETE", "/ufmRestV3/resources/pkeys/0x1234/hosts/h0-[0-1],h1-0", "", authz);
  ASSERT_EQ(del.status, 200) << del.body;
  rig.sweep();
  for (uint64_t g : {kH00, kH01, kH10}) EXPECT_FALSE(holds(rig.held_pkeys(g), 0x1234)) << g;
  // The emptied P_Key stays (UFM keeps it) until deleted.
  auto one = rig.op("GET", "/ufmRest/resources/pkeys/0x1234?guids_data=true");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_TRUE(RestRig::json_of(one)["guids"].empty());

  // The token is the credential of /ufmRestV3 only; revoked, it is refused.
  EXPECT_EQ(rig.call("GET", "/ufmRest/resources/pkeys", "", authz).status, 401);
  auto id = RestRig::json_of(tok).at("id").get<std::string>();
  EXPECT_EQ(rig.op("DELETE", "/api/v1/tokens/" + id).status, 200);
  EXPECT_EQ(rig.call("GET", "/ufmRestV3/resources/pkeys", "", authz).status, 401);
}

// OpenStack's UFM client (networking-mlnx-baremetal ufmclient/modules/resources/pkey.py):
// list/get with guids_data=True/False (Python's spelling), PUT to set the GUIDs, POST to
// pkeys/ with a trailing slash, DELETE guids/<g1>,<g2>, DELETE the P_Key.
TEST(UfmFacade, OpenStackClientFlow) {
  RestRig rig;
  auto put = rig.op("PUT", "/ufmRest/resources/pkeys",
                    json{{"guids", {"0002c90400000001", "0002c90400000011"}},
                         {"ip_over_ib", true},
                         {"index0", false},
                         {"membership", "full"},
                         {"pkey", "0x2a"}}
                        .dump());
  ASSERT_EQ(put.status, 200) << put.body;
  auto post = rig.op("POST", "/ufmRest/resources/pkeys/",
                     json{{"guids", {"0002c90400000021"}},
                          {"ip_over_ib", true},
                          {"index0", false},
                          {"membership", "limited"},
                          {"pkey", "0x2a"}}
                         .dump());
  ASSERT_EQ(post.status, 200) << post.body;
  auto got = rig.op("GET", "/ufmRest/resources/pkeys/0x2a?guids_data=True");
  ASSERT_EQ(got.status, 200) << got.body;
  auto j = RestRig::json_of(got);
  EXPECT_EQ(j["pkey"], "0x2a");
  EXPECT_EQ(j["guids"].size(), 3u);
  for (const auto& g : j["guids"])
    EXPECT_EQ(g["membership"], g["guid"] == "0002c90400000021" ? "limited" : "full") << j.dump();
  auto brief = RestRig::json_of(rig.op("GET", "/ufmRest/resources/pkeys?guids_data=False"));
  EXPECT_FALSE(brief.at("0x2a").contains("guids"));

  // PUT replaces: now only h1-1.
  ASSERT_EQ(rig.op("PUT", "/ufmRest/resources/pkeys",
                   R"({"guids": ["0002c90400000031"], "pkey": "0x2a", "membership": "full"})")
                .status,
            200);
  j = RestRig::json_of(rig.op("GET", "/ufmRest/resources/pkeys/0x2a?guids_data=True"));
  ASSERT_EQ(j["guids"].size(), 1u);
  EXPECT_EQ(j["guids"][0]["guid"], "0002c90400000031");

  ASSERT_EQ(rig.op("POST", "/ufmRest/resources/pkeys/",
                   R"({"guids": ["0002c90400000001","0002c90400000011"], "pkey": "0x2a"})")
                .status,
            200);
  auto del =
      rig.op("DELETE", "/ufmRest/resources/pkeys/0x2a/guids/0002c90400000001,0002c90400000031");
  ASSERT_EQ(del.status, 200) << del.body;
  j = RestRig::json_of(rig.op("GET", "/ufmRest/resources/pkeys/0x2a?guids_data=True"));
  ASSERT_EQ(j["guids"].size(), 1u);
  EXPECT_EQ(j["guids"][0]["guid"], "0002c90400000011");

  ASSERT_EQ(rig.op("DELETE", "/ufmRest/resources/pkeys/0x2a").status, 200);
  EXPECT_EQ(rig.op("GET", "/ufmRest/resources/pkeys/0x2a").status, 404);
  EXPECT_EQ(rig.file_text().find("0x002a"), std::string::npos) << rig.file_text();
}

// The shapes UFM's clients read: systems and ports by GUID, links paged.
TEST(UfmFacade, InventoryShapes) {
  RestRig rig;
  auto sys = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/systems"));
  ASSERT_TRUE(sys.is_array());
  EXPECT_EQ(sys.size(), rig.sim.model().size());
  std::set<std::string> names;
  for (const auto& s : sys) {
    EXPECT_EQ(s.at("system_guid").get<std::string>().size(), 16u) << s.dump();
    names.insert(s.at("system_name").get<std::string>());
  }
  EXPECT_TRUE(names.count("h0-0") && names.count("spine0"));
  auto one = rig.mon("GET", "/ufmRest/resources/systems/0002c90300001002");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(RestRig::json_of(one).at("type"), "switch");
  auto ports = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/ports"));
  ASSERT_TRUE(ports.is_array());
  EXPECT_EQ(ports.size(), 2u * rig.sim.model().links().size());
  for (const auto& p : ports) EXPECT_TRUE(p.contains("guid") && p.contains("name")) << p.dump();
  auto links = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/links"));
  EXPECT_EQ(links.size(), rig.sim.model().links().size());
  // ufm_sdk_3.0 utils/ufm_rest_client.py pages its links and reads .get("data").
  auto paged =
      RestRig::json_of(rig.mon("GET", "/ufmRest/resources/links?page_number=1&rpp=1000000000"));
  EXPECT_EQ(paged.at("data").size(), rig.sim.model().links().size());
  auto second = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/links?page_number=2&rpp=4"));
  EXPECT_EQ(second.at("data").size(), rig.sim.model().links().size() - 4);
  EXPECT_EQ(rig.mon("GET", "/ufmRest/resources/links?page_number=0&rpp=4").status, 400);
}

// pkeys/add: a P_Key with no GUIDs and its QoS parameters, shown in UFM's shape.
TEST(UfmFacade, DefineEmptyPkey) {
  RestRig rig;
  auto r = rig.op(
      "POST", "/ufmRest/resources/pkeys/add",
      R"({"pkey": "0x44", "partition_name": "storage", "ip_over_ib": "True", "index0": false, "mtu_limit": 4, "service_level": 3, "rate_limit": 100})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/pkeys/0x44?guids_data=true"));
  EXPECT_EQ(j.at("partition_name"), "storage");
  EXPECT_EQ(j.at("ip_over_ib"), true);
  EXPECT_EQ(j.at("qos_parameters").at("mtu_limit"), 4);
  EXPECT_EQ(j.at("qos_parameters").at("service_level"), 3);
  EXPECT_TRUE(j.at("guids").empty());
  EXPECT_NE(rig.file_text().find("storage=0x0044"), std::string::npos) << rig.file_text();
  EXPECT_EQ(
      rig.op("POST", "/ufmRest/resources/pkeys/add", R"({"pkey": "0x44", "mtu_limit": 7})").status,
      422);
}

// Before the first sweep: health says why, fabric reads are 503, partitions still work.
TEST(NativeApi, BeforeTheFirstSweep) {
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, false);
  auto h = rig.call("GET", "/healthz");
  EXPECT_EQ(h.status, 503) << h.body;
  EXPECT_EQ(RestRig::json_of(h).at("error").at("code"), "unhealthy");
  EXPECT_EQ(rig.mon("GET", "/api/v1/nodes").status, 503);
  EXPECT_EQ(rig.mon("GET", "/ufmRest/resources/systems").status, 503);
  EXPECT_EQ(
      rig.op("POST", "/ufmRest/resources/pkeys/hosts", R"({"pkey": "0x5", "hosts_names": "h0-0"})")
          .status,
      503);
  EXPECT_EQ(rig.op("POST", "/ufmRest/resources/pkeys",
                   R"({"pkey": "0x5", "guids": ["0002c90400000001"]})")
                .status,
            200);
  rig.sweep();
  EXPECT_EQ(rig.call("GET", "/healthz").status, 200);
  EXPECT_TRUE(holds(rig.held_pkeys(kH00), 0x5));
}

TEST(NativeApi, APortKeptDownIsListedAndReleasedByAnOperator) {
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", std::nullopt, false);
  // leaf1 (switch 1) port 1, to a host, as an earlier run left it (flap_policy down).
  {
    std::ofstream(rig.dir.path() + "/ports-down")
        << "# switch ports weft keeps disabled\n0x0002c90300001001 1 1764633600 6 link changes\n";
  }
  rig.sweep();
  auto sm = RestRig::json_of(rig.mon("GET", "/api/v1/sm"));
  ASSERT_EQ(sm["ports_down"].size(), 1u) << sm.dump();
  EXPECT_EQ(sm["ports_down"][0]["guid"], "0x0002c90300001001");
  EXPECT_EQ(sm["ports_down"][0]["port"], 1);
  EXPECT_EQ(sm["ports_down"][0]["reason"], "6 link changes");
  EXPECT_EQ(sm["ports_down"][0]["since"], 1764633600);
  const std::string route = "/api/v1/ports/0x0002c90300001001/1/enable";
  EXPECT_EQ(rig.mon("POST", route).status, 403);
  EXPECT_EQ(rig.op("POST", "/api/v1/ports/0x0002c90300001001/x/enable").status, 400);
  EXPECT_EQ(rig.op("POST", "/api/v1/ports/nope/1/enable").status, 400);
  auto r = rig.op("POST", route);
  EXPECT_EQ(r.status, 202) << r.body;
  // On disk before the answer, and listed no more.
  std::ifstream in(rig.dir.path() + "/ports-down");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("0x0002c90300001001"), std::string::npos) << text;
  EXPECT_TRUE(RestRig::json_of(rig.mon("GET", "/api/v1/sm"))["ports_down"].empty());
  auto again = rig.op("POST", route);
  EXPECT_EQ(again.status, 404);
  EXPECT_EQ(RestRig::json_of(again).at("error").at("code"), "not_found");
}

// Adaptive routing in the last sweep's counts: the leaves (two uplinks each) get a group
// and AR on; the spines (one link to each leaf) have no group and stay static.
TEST(NativeApi, LastSweepCountsAdaptiveRouting) {
  RestRig rig("ft2:leaves=2,spines=2,hosts=2", std::nullopt, false, [](sm::SmOptions& o) {
    o.adaptive_routing = true;
    o.routing_engine = "ftree";  // its groups hold every uplink
  });
  for (fabric::NodeIndex n = 0; n < rig.sim.model().size(); ++n)
    if (rig.sim.model().node(n).is_switch()) rig.sim.set_ar_cap(n, 16);
  rig.sweep();
  auto ar = RestRig::json_of(rig.mon("GET", "/api/v1/sm")).at("last_sweep").at("adaptive_routing");
  EXPECT_EQ(ar.at("switches"), 4);
  EXPECT_EQ(ar.at("enabled"), 2);
  EXPECT_EQ(ar.at("static"), 2);
  EXPECT_GT(ar.at("group_blocks_written").get<int>(), 0);
  EXPECT_GT(ar.at("lft_blocks_written").get<int>(), 0);
  EXPECT_EQ(ar.at("failures"), 0);
  const auto leaf = *rig.sim.model().find_by_name("leaf0");
  EXPECT_TRUE(rig.sim.ar(leaf).info.enabled);
  EXPECT_FALSE(rig.sim.ar(*rig.sim.model().find_by_name("spine0")).info.enabled);

  // Per switch: what the leaf holds, as the simulated switch itself holds it.
  const std::string guid = rig.sim.model().node(leaf).guid.str();
  auto one = RestRig::json_of(rig.mon("GET", "/api/v1/switches/" + guid + "/ar"));
  EXPECT_EQ(one.at("asked"), true);
  EXPECT_EQ(one.at("supported"), true);
  EXPECT_EQ(one.at("enabled"), true);
  EXPECT_EQ(one.at("group_cap"), 16);
  const auto& held = rig.sim.ar(leaf);
  EXPECT_EQ(one.at("group_top"), held.info.group_top);
  ASSERT_EQ(one.at("groups").size(), size_t(held.info.group_top));
  for (const auto& g : one.at("groups")) {
    const auto& mask = held.groups.at(g.at("group").get<size_t>());
    size_t in_mask = 0;
    for (PortNum p = 1; p < 64; ++p) in_mask += mad::ar_mask_has(mask, p);
    EXPECT_EQ(g.at("ports").size(), in_mask);
    for (const auto& p : g.at("ports")) EXPECT_TRUE(mad::ar_mask_has(mask, p.get<int>()));
  }
  size_t adaptive = 0;
  for (const auto& e : held.lft) adaptive += e.state != mad::ArLidState::kStatic;
  ASSERT_EQ(one.at("entries").size(), adaptive);
  ASSERT_GT(adaptive, 0u);
  for (const auto& e : one.at("entries")) {
    const auto& h = held.lft.at(e.at("lid").get<size_t>());
    EXPECT_EQ(e.at("group"), h.group);
    EXPECT_EQ(e.at("default_port"), h.default_port);
  }
  // A switch asked that holds no group; a CA is no switch.
  auto spine = RestRig::json_of(rig.mon(
      "GET", "/api/v1/switches/" +
                 rig.sim.model().node(*rig.sim.model().find_by_name("spine0")).guid.str() + "/ar"));
  EXPECT_EQ(spine.at("supported"), true);
  EXPECT_EQ(spine.at("enabled"), false);
  EXPECT_EQ(rig.mon("GET", "/api/v1/switches/0x0002c90300009999/ar").status, 404);
  auto m = rig.mon("GET", "/metrics").body;
  EXPECT_NE(m.find("weft_ar_switches{state=\"enabled\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("weft_ar_switches{state=\"static\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("weft_last_sweep_ar_blocks_written{table=\"lft\"} " +
                   std::to_string(ar.at("lft_blocks_written").get<int>()) + "\n"),
            std::string::npos)
      << m;
}

TEST(NativeApi, SmNodesPortsLftRoutes) {
  RestRig rig;
  auto sm = RestRig::json_of(rig.mon("GET", "/api/v1/sm"));
  EXPECT_EQ(sm.at("state"), "MASTER");
  EXPECT_EQ(sm.at("last_sweep").at("subnet_up"), true);
  EXPECT_EQ(sm.at("last_sweep").at("updated"), false);  // a bring-up discovers in full
  EXPECT_EQ(sm.at("last_sweep").at("switches"), 3);
  // The bring-up told each of the 4 CA ports to re-register.
  EXPECT_EQ(sm.at("last_sweep").at("writes").at("client_reregister"), 4);
  // The default partition's IPoIB group; no MLID the switches forward is nobody's.
  EXPECT_EQ(sm.at("last_sweep").at("multicast").at("groups"), 1);
  EXPECT_EQ(sm.at("last_sweep").at("multicast").at("unknown_mlids"), 0);

  auto nodes = RestRig::json_of(rig.mon("GET", "/api/v1/nodes?limit=2&offset=1"));
  EXPECT_EQ(nodes.at("total"), 7);
  EXPECT_EQ(nodes.at("items").size(), 2u);
  auto cas = RestRig::json_of(rig.mon("GET", "/api/v1/nodes?type=ca"));
  EXPECT_EQ(cas.at("total"), 4);
  EXPECT_EQ(rig.mon("GET", "/api/v1/nodes?type=toaster").status, 400);
  EXPECT_EQ(rig.mon("GET", "/api/v1/nodes?limit=x").status, 400);

  auto active = RestRig::json_of(rig.mon("GET", "/api/v1/ports?state=Active"));
  EXPECT_EQ(active.at("total"), 2 * 6) << active.dump();

  // The LFT as the snapshot holds it, and as the simulated switch holds it.
  auto snap = rig.smgr->published()->subnet;
  auto leaf = snap->fabric.find(Guid{0x0002c90300001000});
  ASSERT_TRUE(leaf);
  auto lft = RestRig::json_of(rig.mon("GET", "/api/v1/switches/0x0002c90300001000/lft"));
  size_t n = 0;
  for (const auto& e : lft.at("entries")) {
    EXPECT_EQ(e.at("port"), snap->tables.lft[*leaf][e.at("lid").get<unsigned>()]);
    ++n;
  }
  EXPECT_EQ(n, 7u + 0u) << "one entry per LID in use";
  EXPECT_EQ(rig.mon("GET", "/api/v1/switches/0x0002c90400000000/lft").status, 404);

  auto route = rig.mon("GET", "/api/v1/routes?src=h0-0&dst=h1-1");
  ASSERT_EQ(route.status, 200) << route.body;
  auto r = RestRig::json_of(route);
  EXPECT_EQ(r.at("complete"), true);
  EXPECT_EQ(r.at("hops").size(), 5u) << r.dump();  // CA, leaf, spine, leaf, CA
  EXPECT_EQ(r.at("path_record").at("pkey"), "0xffff");
  EXPECT_EQ(rig.mon("GET", "/api/v1/routes?src=h0-0").status, 400);
  EXPECT_EQ(rig.mon("GET", "/api/v1/routes?src=h0-0&dst=nosuch").status, 404);
}

// A route's hops say the VL each sends on: under dor, the switch's SL2VL table for the
// port the hop came in by and the one it leaves by, as the simulated switch holds it.
TEST(NativeApi, ARouteHopsVlIsTheSwitchsPerHopTable) {
  RestRig rig("torus:dims=5x5,hosts=1", std::nullopt, true, [](sm::SmOptions& o) {
    o.routing_engine = "dor";
    o.torus = routing::detect_torus(RestRig::make("torus:dims=5x5,hosts=1"));
  });
  ASSERT_FALSE(rig.smgr->published()->subnet->tables.hop_vl.empty());
  // x: 4 -> 0 -> 1 crosses x's dateline; y: 1 -> 2 does not: SL 1.
  auto route = rig.mon("GET", "/api/v1/routes?src=h4-1-0&dst=h1-2-0");
  ASSERT_EQ(route.status, 200) << route.body;
  const auto r = RestRig::json_of(route);
  ASSERT_EQ(r.at("path_record").at("sl"), 1) << r.dump();
  size_t vl0 = 0, vl1 = 0;
  for (const auto& h : r.at("hops")) {
    if (h.at("type") != "Switch") continue;
    const auto n =
        rig.sim.model().find(Guid{std::stoull(h.at("guid").get<std::string>(), nullptr, 16)});
    ASSERT_TRUE(n);
    const unsigned vl = h.at("vl");
    EXPECT_EQ(vl,
              rig.sim.sl2vl(*n, h.at("in_port").get<PortNum>(), h.at("out_port").get<PortNum>())[1])
        << h.dump();
    (vl ? vl1 : vl0) += 1;
  }
  EXPECT_GT(vl0, 0u) << r.dump();  // the y hop and the last one, to the CA
  EXPECT_GT(vl1, 0u) << r.dump();  // the x hops
}

// A what-if job routes the swept fabric with a random link failed and grades it; its result
// gives the computation's wall time but not the process's CPU, which the SM's and REST's
// threads share here.
TEST(NativeApi, AWhatIfJobRoutesAndGradesWithoutTheProcesssCpu) {
  RestRig rig;
  auto made = rig.op("POST", "/api/v1/whatif",
                     R"({"engines": ["minhop", "updn"], "fail_random": 1, "patterns": false})");
  ASSERT_EQ(made.status, 202) << made.body;
  const std::string where = RestRig::json_of(made).at("location");
  nlohmann::json job;
  for (int i = 0; i < 6000; ++i) {  // a 60 s deadline
    job = RestRig::json_of(rig.mon("GET", where));
    if (job.at("state") == "done" || job.at("state") == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(job.at("state"), "done") << job.dump();
  const auto& result = job.at("result");
  ASSERT_EQ(result.size(), 2u) << job.dump();
  for (const auto& r : result) {
    EXPECT_EQ(r.at("status"), "ok") << r.dump();
    EXPECT_TRUE(r.contains("compute_ms")) << r.dump();
    EXPECT_FALSE(r.contains("compute_cpu_ms")) << r.dump();
    EXPECT_FALSE(r.contains("compute_user_ms")) << r.dump();
    EXPECT_FALSE(r.at("failed").empty()) << r.dump();
  }
}

TEST(NativeApi, PartitionLifecycle) {
  RestRig rig;
  auto made = rig.op(
      "POST", "/api/v1/partitions",
      R"({"pkey": "0x0b", "name": "jobs", "ipoib": true, "members": ["0x0002c90400000001"]})");
  ASSERT_EQ(made.status, 201) << made.body;
  bool located = false;
  for (const auto& [k, v] : made.headers)
    located |= k == "Location" && v == "/api/v1/partitions/0x000b";
  EXPECT_TRUE(located);
  EXPECT_EQ(rig.op("POST", "/api/v1/partitions", R"({"pkey": "0x0b"})").status, 409);
  EXPECT_EQ(rig.op("POST", "/api/v1/partitions", R"({"pkey": "0x7fff"})").status, 409);

  ASSERT_EQ(rig.op("POST", "/api/v1/partitions/0x0b/members",
                   R"({"hosts": "h1-[0-1]", "membership": "limited"})")
                .status,
            200);
  rig.sweep();
  auto p = RestRig::json_of(rig.mon("GET", "/api/v1/partitions/0x000b"));
  EXPECT_EQ(p.at("name"), "jobs");
  EXPECT_EQ(p.at("members_full"), 1);
  EXPECT_EQ(p.at("members_limited"), 2);
  for (const auto& m : p.at("members")) EXPECT_EQ(m.at("on_fabric"), true) << m.dump();
  EXPECT_EQ(rig.held_pkeys(kH10).size(), 2u);
  EXPECT_TRUE(holds(rig.held_pkeys(kH10), 0x0b));
  for (uint16_t k : rig.held_pkeys(kH10))
    if ((k & 0x7fff) == 0x0b) {
      EXPECT_EQ(k, 0x000b) << "limited: no full-member bit";
    }

  ASSERT_EQ(rig.op("DELETE", "/api/v1/partitions/0x0b/members/h1-0,0x0002c90400000001").status,
            200);
  p = RestRig::json_of(rig.mon("GET", "/api/v1/partitions/0x0b"));
  EXPECT_EQ(p.at("members").size(), 1u);

  ASSERT_EQ(rig.op("PUT", "/api/v1/partitions/0x0b", R"({"members": [], "sl": 3})").status, 200);
  p = RestRig::json_of(rig.mon("GET", "/api/v1/partitions/0x0b"));
  EXPECT_TRUE(p.at("members").empty());
  EXPECT_EQ(p.at("sl"), 3);

  EXPECT_EQ(rig.op("DELETE", "/api/v1/partitions/0x7fff").status, 409);
  ASSERT_EQ(rig.op("DELETE", "/api/v1/partitions/0x0b").status, 200);
  EXPECT_EQ(rig.mon("GET", "/api/v1/partitions/0x0b").status, 404);
  EXPECT_EQ(rig.op("DELETE", "/api/v1/partitions/0x0b").status, 404);

  // What the API acknowledged is what a fresh reader of the file finds.
  ASSERT_EQ(
      rig.op("POST", "/api/v1/partitions", R"({"pkey": "0x0c", "members": ["0002c90400000011"]})")
          .status,
      201);
  auto reread =
      daemon::PartitionStore::open(rig.dir.path() + "/partitions.rest.conf", std::nullopt);
  ASSERT_TRUE(reread);
  ASSERT_EQ(reread->partitions().count(0x0c), 1u);
  EXPECT_EQ(reread->partitions().at(0x0c).members.count(kH01), 1u);
  EXPECT_EQ(reread->partitions().count(0x0b), 0u);
}

// partition_config_file comes first: its members cannot be removed, nor its P_Keys
// deleted, over REST; REST adds to them.
TEST(NativeApi, FilePartitionsAreTheAdminsOwn) {
  auto pol = config::parse_partitions(
      "Default=0x7fff, ipoib : ALL=full ;\nstorage=0x0100 : 0x0002c90400000001=full ;\n",
      "partitions.conf");
  ASSERT_TRUE(pol) << pol.error().message;
  RestRig rig("ft2:leaves=2,spines=1,hosts=2", *pol);
  auto p = RestRig::json_of(rig.mon("GET", "/api/v1/partitions/0x0100"));
  EXPECT_EQ(p.at("name"), "storage");
  EXPECT_EQ(p.at("defined_by").at(0), "file partitions.conf:2");
  auto rm = rig.op("POST", "/ufmRest/actions/remove_guids_from_pkey",
                   R"({"pkey": "0x100", "guids": ["0002c90400000001"]})");
  EXPECT_EQ(rm.status, 409) << rm.body;
  EXPECT_EQ(rig.op("DELETE", "/ufmRest/resources/pkeys/0x100").status, 409);
  ASSERT_EQ(rig.op("POST", "/ufmRest/resources/pkeys",
                   R"({"pkey": "0x100", "guids": ["0002c90400000011"]})")
                .status,
            200);
  rig.sweep();
  EXPECT_TRUE(holds(rig.held_pkeys(kH00), 0x100));
  EXPECT_TRUE(holds(rig.held_pkeys(kH01), 0x100));
  EXPECT_FALSE(holds(rig.held_pkeys(kH10), 0x100));
}

TEST(Auth, RolesAndCredentials) {
  RestRig rig;
  auto none = rig.call("GET", "/api/v1/sm");
  EXPECT_EQ(none.status, 401);
  bool challenge = false;
  for (const auto& [k, v] : none.headers) challenge |= k == "WWW-Authenticate";
  EXPECT_TRUE(challenge);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("admin", "wrong")).status, 401);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("nobody", "x")).status, 401);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", "Basic !!!").status, 401);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", "Bearer nope").status, 401);
  EXPECT_EQ(rig.call("GET", "/healthz").status, 200) << "health needs no credentials";

  // A monitor reads and changes nothing.
  const auto before = rig.file_text();
  for (auto [m, t, b] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"POST", "/ufmRest/resources/pkeys", R"({"pkey":"0x5","guids":["0002c90400000001"]})"},
           {"POST", "/api/v1/partitions", R"({"pkey":"0x5"})"},
           {"DELETE", "/api/v1/partitions/0x7fff", ""},
           {"POST", "/api/v1/sweep", ""}}) {
    auto r = rig.mon(m, t, b);
    EXPECT_EQ(r.status, 403) << m << " " << t << " " << r.body;
  }
  EXPECT_EQ(rig.file_text(), before);
  EXPECT_EQ(rig.backend->changes(), 0u);
  EXPECT_TRUE(rig.backend->sweeps_asked().empty());
  EXPECT_EQ(rig.op("POST", "/api/v1/sweep", R"({"type": "light"})").status, 202);
  EXPECT_EQ(rig.backend->sweeps_asked(), std::vector<bool>{false});

  // Bearer tokens on the native API, capped by the role of their user now.
  auto t = RestRig::json_of(rig.op("POST", "/api/v1/tokens"));
  const std::string bearer = "Bearer " + t.at("token").get<std::string>();
  EXPECT_EQ(rig.call("POST", "/api/v1/sweep", "", bearer).status, 202);
  rig.write_users({{"admin", "adminpw", "admin"}, {"op", "oppw", "monitor"}});
  ASSERT_TRUE(rig.auth->reload_users());
  EXPECT_EQ(rig.call("POST", "/api/v1/sweep", "", bearer).status, 403);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", bearer).status, 200);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("mon", "monpw")).status, 401)
      << "a user gone from the file is gone";
  rig.write_users({{"admin", "adminpw", "admin"}});
  ASSERT_TRUE(rig.auth->reload_users());
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", bearer).status, 401);
  // A bad users file changes nothing.
  { std::ofstream(rig.users_file) << "admin:nothash\n"; }
  EXPECT_FALSE(rig.auth->reload_users());
  EXPECT_EQ(rig.admin("GET", "/api/v1/sm").status, 200);
}

// Issue 33, item 5: password guessing is throttled per source. Five failures pass as
// 401s; the sixth blocks the source, whose next requests with credentials (the right
// ones too) get 429 and Retry-After without being tried, while the right password from
// another source works at once; the block doubles with each failure after it, and a
// success clears the source.
TEST(Auth, PasswordGuessingIsThrottledPerSource) {
  RestRig rig;
  rig.source = "198.51.100.7";
  auto retry_after = [](const rest::Response& r) {
    for (const auto& [k, v] : r.headers)
      if (k == "Retry-After") return std::stoi(v);
    return -1;
  };
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("admin", "guess" + std::to_string(i))).status,
              401)
        << i;
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("admin", "guess5")).status, 401);
  auto blocked = rig.admin("GET", "/api/v1/sm");
  EXPECT_EQ(blocked.status, 429) << blocked.body;
  EXPECT_EQ(retry_after(blocked), 1);
  EXPECT_NE(RestRig::json_of(blocked)["error"]["message"].get<std::string>().find("198.51.100.7"),
            std::string::npos);
  EXPECT_EQ(rig.call("GET", "/healthz").status, 200) << "no credentials: not throttled";
  // Another source: the right password works at once, a wrong one is a plain 401.
  rig.source = "198.51.100.8";
  EXPECT_EQ(rig.admin("GET", "/api/v1/sm").status, 200);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("admin", "nope")).status, 401);
  // A second later the first source may try once more; a failure doubles the wait.
  rig.source = "198.51.100.7";
  rig.login_clock += std::chrono::seconds(1);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("admin", "guess6")).status, 401);
  auto longer = rig.admin("GET", "/api/v1/sm");
  EXPECT_EQ(longer.status, 429);
  EXPECT_EQ(retry_after(longer), 2);
  rig.login_clock += std::chrono::seconds(1);
  EXPECT_EQ(rig.admin("GET", "/api/v1/sm").status, 429);
  // Past the block the right password gets in and clears the source: five more free tries.
  rig.login_clock += std::chrono::seconds(1);
  EXPECT_EQ(rig.admin("GET", "/api/v1/sm").status, 200);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("admin", "again")).status, 401) << i;
  EXPECT_EQ(rig.admin("GET", "/api/v1/sm").status, 200);
  // Wrong tokens count as well.
  for (int i = 0; i < 6; ++i) rig.call("GET", "/api/v1/sm", "", "Bearer nope");
  EXPECT_EQ(rig.call("GET", "/ufmRestV3/app/ufm_version", "", "Basic notatoken").status, 429);
  // The block is capped: after many failures, at most 300 s.
  for (int i = 0; i < 20; ++i) {
    rig.login_clock += std::chrono::seconds(400);
    rig.call("GET", "/api/v1/sm", "", basic("admin", "x"));
  }
  EXPECT_EQ(retry_after(rig.admin("GET", "/api/v1/sm")), 300);
  // Ten minutes after its last failure a source is forgiven.
  rig.login_clock += std::chrono::seconds(601);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", basic("admin", "y")).status, 401);
  EXPECT_EQ(rig.admin("GET", "/api/v1/sm").status, 200);
}

// Checking and counting are one step: tries from one source that are under way at once
// (REST's worker threads) get no more than tries one after another would. With five
// free tries, a sixth at once waits; once they are spent, one at a time; a success ends
// its try and clears the source.
TEST(Auth, ConcurrentLoginsFromOneSourceGetNoMoreTriesThanSequentialOnes) {
  auto t = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  rest::LoginThrottle th([&t] { return t; });
  const std::string src = "203.0.113.9";
  for (uint32_t i = 0; i < rest::LoginThrottle::kFree; ++i) EXPECT_EQ(th.admit(src), 0u) << i;
  EXPECT_EQ(th.admit(src), 1u) << "a sixth try while five are under way";
  EXPECT_EQ(th.admit("203.0.113.10"), 0u) << "another source is not held back";
  for (uint32_t i = 0; i < rest::LoginThrottle::kFree; ++i) EXPECT_FALSE(th.failed(src));
  EXPECT_EQ(th.admit(src), 0u);
  EXPECT_EQ(th.admit(src), 1u) << "free tries spent: one at a time";
  EXPECT_TRUE(th.failed(src));  // the sixth failure blocks the source
  EXPECT_EQ(th.admit(src), 1u);
  t += std::chrono::seconds(1);
  EXPECT_EQ(th.admit(src), 0u);
  th.succeeded(src);
  for (uint32_t i = 0; i < rest::LoginThrottle::kFree; ++i) EXPECT_EQ(th.admit(src), 0u) << i;
}

TEST(Auth, TokensExpireAndPersist) {
  RestRig rig;
  rest::Identity who{"op", rest::Role::kOperator, ""};
  auto gone = rig.auth->issue_token(who, std::chrono::seconds(0));
  ASSERT_TRUE(gone);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", "Bearer " + gone->first).status, 401);
  auto live = rig.auth->issue_token(who);
  ASSERT_TRUE(live);
  // Only the SHA-256 is on disk, and a restarted server knows the token.
  std::ifstream in(rig.dir.path() + "/rest-tokens");
  std::string text(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(text.find(live->first), std::string::npos);
  EXPECT_NE(text.find(rest::sha256_hex(live->first)), std::string::npos);
  auto again = rest::Auth::open({.users_file = rig.users_file, .state_dir = rig.dir.path()});
  ASSERT_TRUE(again);
  EXPECT_TRUE((*again)->check("Bearer " + live->first, rest::Auth::Scheme::kNative));
  EXPECT_FALSE((*again)->check("Bearer " + gone->first, rest::Auth::Scheme::kNative));
  // Someone else's token: only an admin revokes it.
  EXPECT_EQ(rig.mon("DELETE", "/api/v1/tokens/" + live->second.id).status, 403);
  EXPECT_EQ(rig.admin("DELETE", "/api/v1/tokens/" + live->second.id).status, 200);
  EXPECT_EQ(rig.call("GET", "/api/v1/sm", "", "Bearer " + live->first).status, 401);
}

TEST(Auth, UsersFileErrorsNameTheLine) {
  auto r = rest::Auth::parse_users("# c\nadmin:$6$x$y:admin\nbob:$6$x$y:root\n", "users");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("users:3"), std::string::npos) << r.error().message;
  r = rest::Auth::parse_users("nocolons\n", "users");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("users:1"), std::string::npos) << r.error().message;
}

TEST(Auth, GeneratedAdminWhenNoUsersFile) {
  RestScratch d;
  auto a = rest::Auth::open({.users_file = "", .state_dir = d.path()});
  ASSERT_TRUE(a) << a.error().message;
  std::ifstream in(d.path() + "/rest-admin-password");
  std::string line;
  std::getline(in, line);
  ASSERT_EQ(line.rfind("admin:", 0), 0u);
  const std::string pw = line.substr(6);
  EXPECT_GE(pw.size(), 16u);
  EXPECT_TRUE((*a)->check(basic("admin", pw), rest::Auth::Scheme::kNative));
  EXPECT_FALSE((*a)->check(basic("admin", pw + "x"), rest::Auth::Scheme::kNative));
  EXPECT_EQ(std::filesystem::status(d.path() + "/rest-admin-password").permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // A second start keeps the password.
  auto b = rest::Auth::open({.users_file = "", .state_dir = d.path()});
  ASSERT_TRUE(b);
  EXPECT_TRUE((*b)->check(basic("admin", pw), rest::Auth::Scheme::kNative));
}

TEST(Errors, StatusesAndShape) {
  RestRig rig;
  struct Case {
    std::string method, target, body;
    int status;
  };
  for (const auto& c : std::vector<Case>{
           {"GET", "/api/v1/nosuch", "", 404},
           {"PATCH", "/api/v1/partitions", "", 405},
           {"POST", "/ufmRest/resources/pkeys", "", 400},
           {"POST", "/ufmRest/resources/pkeys", "{nope", 400},
           {"POST", "/ufmRest/resources/pkeys", "[1]", 422},
           {"POST", "/ufmRest/resources/pkeys", R"({"guids": []})", 422},
           {"POST", "/ufmRest/resources/pkeys", R"({"pkey": "0x0", "guids": []})", 422},
           {"POST", "/ufmRest/resources/pkeys", R"({"pkey": "0x8000", "guids": []})", 422},
           // UFM takes 0x0-0x7fff exclusive: the default partition is not the orchestrator's
           // (issue 34, item 5).
           {"POST", "/ufmRest/resources/pkeys",
            R"({"pkey": "0x7fff", "guids": ["0002c90400000001"]})", 422},
           {"POST", "/ufmRest/resources/pkeys",
            R"({"pkey": "0xffff", "guids": ["0002c90400000001"]})", 422},
           {"POST", "/ufmRest/resources/pkeys", R"({"pkey": 65535, "guids": ["0002c90400000001"]})",
            422},
           {"POST", "/ufmRest/resources/pkeys/hosts",
            R"({"pkey": "0x7fff", "hosts_names": "h0-0"})", 422},
           {"DELETE", "/ufmRest/resources/pkeys/0x7fff", "", 400},
           {"DELETE", "/ufmRest/resources/pkeys/0xffff/guids/0002c90400000001", "", 400},
           {"DELETE", "/ufmRest/resources/pkeys/0x7fff/hosts/h0-0", "", 400},
           {"POST", "/ufmRest/resources/pkeys", R"({"pkey": "zz", "guids": []})", 422},
           {"POST", "/ufmRest/resources/pkeys", R"({"pkey": "0x5", "guids": ["xyz"]})", 422},
           {"POST", "/ufmRest/resources/pkeys", R"({"pkey": "0x5", "guids": [5]})", 422},
           {"POST", "/ufmRest/resources/pkeys",
            R"({"pkey": "0x5", "guids": ["0002c90400000001"], "index0": "maybe"})", 422},
           {"POST", "/ufmRest/resources/pkeys",
            R"({"pkey": "0x5", "guids": ["0002c90400000001"], "membership": "half"})", 422},
           {"POST", "/ufmRest/resources/pkeys/hosts", R"({"pkey": "0x5", "hosts_names": "h[1-"})",
            422},
           {"GET", "/ufmRest/resources/pkeys/0xq", "", 400},
           {"GET", "/ufmRest/resources/pkeys?guids_data=perhaps", "", 400},
           {"GET", "/api/v1/nodes/notaguid", "", 400},
           {"GET", "/api/v1/nodes/0x0000000000000099", "", 404},
           {"GET", "/api/v1/ports/0x0002c90300001000/99", "", 404},
           {"GET", "/api/v1/jobs/nosuch", "", 404},
           {"POST", "/api/v1/whatif", R"({"engines": ["nosuch"]})", 422},
           {"POST", "/api/v1/whatif", R"({"topology": "Switch 2 \"s\"\n[9] garbage"})", 422},
           {"POST", "/api/v1/roce/check", R"({})", 422},
       }) {
    auto r = rig.admin(c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << " " << c.body << " -> "
                                  << r.body;
    if (c.target.find("ufmRest") != std::string::npos &&
        (c.target.find("fff") != std::string::npos || c.body.find("fff") != std::string::npos ||
         c.body.find("65535") != std::string::npos)) {
      EXPECT_NE(r.body.find("0x0001-0x7ffe"), std::string::npos) << "names the range: " << r.body;
    }
    auto j = RestRig::json_of(r);
    EXPECT_TRUE(j.contains("error") && j["error"].contains("code") &&
                j["error"]["message"].is_string() && !j["error"]["message"].empty())
        << r.body;
  }
  auto r = rig.admin("PATCH", "/api/v1/partitions");
  bool allow = false;
  for (const auto& [k, v] : r.headers) allow |= k == "Allow" && v == "GET, POST";
  EXPECT_TRUE(allow);
  // A failed write is a 503 and nothing is acknowledged.
  rig.backend->fail_writes(true);
  auto w = rig.op("POST", "/ufmRest/resources/pkeys",
                  R"({"pkey": "0x5", "guids": ["0002c90400000001"]})");
  EXPECT_EQ(w.status, 503) << w.body;
  rig.backend->fail_writes(false);
  EXPECT_EQ(rig.mon("GET", "/ufmRest/resources/pkeys/0x5").status, 404);
}

// Issue 33, item 4: every body is checked. Bodies of another API's shape, unknown keys,
// wrong types and a byte-order mark are 4xx JSON errors naming the field, on native and
// UFM routes alike, and nothing is created by a request that fails; the bodies the real
// clients send are still served.
TEST(Errors, EveryBodyIsCheckedAndAFailedRequestCreatesNothing) {
  RestRig rig;
  const std::string bom = "\xEF\xBB\xBF";
  struct Case {
    std::string method, target, body;
    int status;
    std::string names;  // in the message
  };
  for (
      const auto& c : std::vector<Case>{
          // UFM-shaped bodies on the native route (seen answered 201, empty partitions).
          {"POST", "/api/v1/partitions", R"({"pkey": "0x21", "guids": ["0002c90400000001"]})", 422,
           "\"guids\""},
          {"POST", "/api/v1/partitions", R"({"pkey": "0x22", "ip_over_ib": true})", 422,
           "\"ip_over_ib\""},
          {"POST", "/api/v1/partitions", R"({"pkey": "0x23", "mtu_limit": 4})", 422,
           "\"mtu_limit\""},
          {"POST", "/api/v1/partitions", R"({"pkey": "0x24", "service_level": 1})", 422,
           "\"service_level\""},
          {"POST", "/api/v1/partitions", bom + R"({"pkey": "0x25"})", 400, "byte-order mark"},
          {"POST", "/api/v1/partitions",
           R"({"pkey": "0x26", "members": [{"guid": "0002c90400000001", "member": "full"}]})", 422,
           "\"member\""},
          {"PUT", "/api/v1/partitions/0x27", R"({"pkey": "0x28"})", 422, "0x0028"},
          {"POST", "/api/v1/partitions/0x7fff/members", R"({"guid": "0002c90400000001"})", 422,
           "\"guid\""},
          // Native-shaped and misspelt bodies on the UFM routes.
          {"POST", "/ufmRest/resources/pkeys",
           R"({"pkey": "0x29", "members": ["0002c90400000001"]})", 422, "\"members\""},
          {"POST", "/ufmRest/resources/pkeys", R"({"pkey": "0x2a", "guid": ["0002c90400000001"]})",
           422, "\"guid\""},
          {"POST", "/ufmRest/resources/pkeys",
           bom + R"({"pkey": "0x2b", "guids": ["0002c90400000001"]})", 400, "byte-order mark"},
          {"POST", "/ufmRest/resources/pkeys/add", R"({"pkey": "0x2c", "ipoib": true})", 422,
           "\"ipoib\""},
          {"POST", "/ufmRest/resources/pkeys",
           R"({"pkey": "0x2d", "guids": ["0002c90400000001", "0002c90400000002"], "memberships": ["full"]})",
           422, "\"memberships\""},
          {"POST", "/ufmRest/resources/pkeys",
           R"({"pkey": "0x2e", "guids": ["0002c90400000001"], "memberships": ["full"], "membership": "full"})",
           422, "conflict"},
          {"POST", "/ufmRest/resources/pkeys/hosts", R"({"pkey": "0x2f", "hosts": "h1-0"})", 422,
           "\"hosts\""},
          // Other routes: a wrong type and an unknown key.
          {"POST", "/api/v1/sweep", R"({"kind": "light"})", 422, "\"kind\""},
          {"POST", "/api/v1/roce/check", R"({"profile": 5, "fabric": "x"})", 422, "\"profile\""},
          {"POST", "/api/v1/roce/check", R"({"fabric": "x", "observed": []})", 422, "\"observed\""},
          {"POST", "/api/v1/whatif", R"({"engine": ["minhop"]})", 422, "\"engine\""},
          {"POST", "/api/v1/tokens", R"({"ttl": 60})", 422, "\"ttl\""},
      }) {
    auto r = rig.admin(c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << " " << c.body << " -> "
                                  << r.body;
    auto j = RestRig::json_of(r);
    ASSERT_TRUE(j.contains("error") && j["error"]["message"].is_string()) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.names), std::string::npos)
        << c.body << " -> " << r.body;
  }
  // Nothing was created: the partitions are the ones there were.
  auto ufm = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/pkeys"));
  for (int pk = 0x21; pk <= 0x2f; ++pk) {
    EXPECT_EQ(rig.mon("GET", fmt::format("/api/v1/partitions/0x{:04x}", pk)).status, 404) << pk;
    EXPECT_FALSE(ufm.contains(fmt::format("0x{:x}", pk))) << pk;
  }
  EXPECT_EQ(rig.file_text().find("0x0021"), std::string::npos) << rig.file_text();

  // UFM's "memberships" (one per GUID, in order) is served as UFM documents it; and the
  // body ib-kubernetes sends to make an empty P_Key.
  auto per = rig.op(
      "POST", "/ufmRest/resources/pkeys",
      R"({"pkey": "0x31", "guids": ["0002c90400000001", "0002c90400000002"], "memberships": ["full", "limited"], "ip_over_ib": true})");
  ASSERT_EQ(per.status, 200) << per.body;
  auto got = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/pkeys/0x31?guids_data=true"));
  std::map<std::string, std::string> ms;
  for (const auto& g : got.at("guids")) ms[g.at("guid")] = g.at("membership");
  EXPECT_EQ(ms, (std::map<std::string, std::string>{{"0002c90400000001", "full"},
                                                    {"0002c90400000002", "limited"}}))
      << got.dump();
  auto empty = rig.op(
      "POST", "/ufmRest/resources/pkeys/add",
      R"({"pkey": "0x1234", "index0": true, "ip_over_ib": true, "mtu_limit": 4, "service_level": 0, "rate_limit": 300, "guids": [], "membership": "full"})");
  EXPECT_EQ(empty.status, 200) << empty.body;
  // Native members each with their own membership.
  auto mixed = rig.op(
      "POST", "/api/v1/partitions",
      R"({"pkey": "0x32", "members": [{"guid": "0002c90400000001", "membership": "limited"}, "0002c90400000002"]})");
  ASSERT_EQ(mixed.status, 201) << mixed.body;
  auto p = RestRig::json_of(rig.mon("GET", "/api/v1/partitions/0x32"));
  EXPECT_EQ(p.at("members_full"), 1) << p.dump();
  EXPECT_EQ(p.at("members_limited"), 1);
}

// Every route is in openapi.json and every documented operation is served (answers
// something other than 404/405 with an admin's credentials).
TEST(OpenApi, DocumentsEveryRoute) {
  RestRig rig;
  auto doc = RestRig::json_of(rig.mon("GET", "/api/v1/openapi.json"));
  EXPECT_EQ(doc.at("openapi"), "3.0.3");
  std::set<std::string> documented;
  for (const auto& [path, ops] : doc.at("paths").items())
    for (const auto& [method, op] : ops.items()) {
      std::string m = method;
      for (char& ch : m) ch = char(std::toupper(static_cast<unsigned char>(ch)));
      documented.insert(m + " " + path);
      EXPECT_TRUE(op.contains("summary") && !op["summary"].get<std::string>().empty()) << path;
    }
  std::set<std::string> served;
  for (const auto& r : rig.api->routes()) served.insert(r);
  EXPECT_EQ(documented, served);
  EXPECT_GE(served.size(), 60u);
  for (const auto& r : served) {
    const auto sp = r.find(' ');
    std::string path = r.substr(sp + 1);
    // Fill path parameters with plausible values.
    for (auto [from, to] :
         std::vector<std::pair<std::string, std::string>>{{"{guid}", "0x0002c90300001000"},
                                                          {"{num}", "1"},
                                                          {"{pkey}", "0x7fff"},
                                                          {"{members}", "0002c90400000001"},
                                                          {"{guids}", "0002c90400000001"},
                                                          {"{hosts}", "h0-0"},
                                                          {"{id}", "x"}})
      if (auto at = path.find(from); at != std::string::npos) path.replace(at, from.size(), to);
    auto resp = rig.admin(r.substr(0, sp), path, r.substr(0, sp) == "GET" ? "" : "{}");
    EXPECT_NE(resp.status, 405) << r;
    if (resp.status == 404) {
      EXPECT_EQ(RestRig::json_of(resp)["error"]["message"].get<std::string>().rfind("no route", 0),
                std::string::npos)
          << r;
    }
    EXPECT_NE(resp.status, 500) << r << " " << resp.body;
  }
}

TEST(Metrics, PrometheusText) {
  RestRig rig;
  rig.mon("GET", "/api/v1/sm");
  auto m = rig.mon("GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type.rfind("text/plain; version=0.0.4", 0), 0u);
  EXPECT_NE(m.body.find("# TYPE weft_rest_requests_total counter"), std::string::npos);
  EXPECT_NE(m.body.find("weft_rest_requests_total{route=\"GET /api/v1/sm\",code=\"200\"} 1"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("weft_subnet_up 1"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("weft_nodes{type=\"switch\"} 3"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("weft_ports{state=\"Active\"} 12"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("weft_ports{state=\"Down\"} 0"), std::string::npos) << m.body;
  EXPECT_EQ(m.body.find("weft_ports{state=\"ACTIVE\"}"), std::string::npos) << "one spelling";
  EXPECT_NE(m.body.find("weft_drift_found_total{table=\"lft\"} 0"), std::string::npos) << m.body;
  for (const char* table : {"pkey", "sl2vl", "vlarb", "ar"})
    EXPECT_NE(m.body.find(std::string("weft_drift_found_total{table=\"") + table + "\"} 0"),
              std::string::npos)
        << table;
}

TEST(Hostlist, SlurmSyntax) {
  auto h = rest::expand_hostlist("node[01-03,7],gpu[1-2]-ib,plain");
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(*h, (std::vector<std::string>{"node01", "node02", "node03", "node7", "gpu1-ib",
                                          "gpu2-ib", "plain"}));
  auto two = rest::expand_hostlist("r[1-2]n[1-2]");
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, (std::vector<std::string>{"r1n1", "r1n2", "r2n1", "r2n2"}));
  for (const char* bad : {"n[1-", "n[3-1]", "n[a-b]", "n[]", "n[1-9999999]"})
    EXPECT_FALSE(rest::expand_hostlist(bad)) << bad;
}

// Mutated bodies and paths against every mutating route: each answered once, never a
// 500, every error JSON; the REST partitions file always reads back.
TEST(Fuzz, MutatingRoutesNeverBreak) {
  RestRig rig;
  const std::vector<std::tuple<std::string, std::string, std::string>> seeds = {
      {"POST", "/ufmRest/resources/pkeys",
       R"({"pkey": "0x0A12", "index0": true, "ip_over_ib": true, "membership": "full", "guids": ["0002c90400000001","02000000000000ab"]})"},
      {"PUT", "/ufmRest/resources/pkeys",
       R"({"pkey": "0x2a", "guids": ["0002c90400000011"], "membership": "limited", "index0": "False"})"},
      {"POST", "/ufmRest/resources/pkeys/add",
       R"({"pkey": "0x33", "partition_name": "p33", "mtu_limit": 4, "service_level": 2, "rate_limit": 100, "ip_over_ib": true})"},
      {"POST", "/ufmRest/actions/remove_guids_from_pkey",
       R"({"pkey": "0x0A12", "guids": ["0002c90400000001"]})"},
      {"POST", "/ufmRest/resources/pkeys/hosts",
       R"({"hosts_names": "h0-[0-1]", "pkey": "0x1234", "ip_over_ib": "true", "index0": "false"})"},
      {"POST", "/api/v1/partitions",
       R"({"pkey": "0x0b", "name": "jobs", "members": [{"guid": "0x0002c90400000001", "membership": "full"}], "hosts": "h1-0"})"},
      {"PUT", "/api/v1/partitions/0x0b",
       R"({"members": ["0002c90400000021"], "mtu": 2048, "rate": 7, "sl": 1})"},
      {"POST", "/api/v1/partitions/0x0b/members",
       R"({"members": ["0002c90400000031"], "index0": 1})"},
      {"POST", "/api/v1/whatif",
       R"({"engines": ["minhop"], "fail_links": ["leaf0/3"], "seed": 3})"},
      {"POST", "/api/v1/sweep", R"({"type": "heavy"})"},
      {"DELETE", "/ufmRest/resources/pkeys/0x1234/hosts/h0-[0-1]", ""},
      {"DELETE", "/ufmRest/resources/pkeys/0x2a/guids/0002c90400000011", ""},
      {"DELETE", "/api/v1/partitions/0x0b/members/h1-0,0x0002c90400000001", ""},
  };
  const std::string alphabet = "{}[]\",:0123456789abcdefxX-_ \\/ntrue\x01\xff";
  std::mt19937 rng(20261201);
  std::map<int, int> statuses;
  for (int i = 0; i < 6000; ++i) {
    const auto& [m, t, b] = seeds[i % seeds.size()];
    const bool path = (i / seeds.size()) % 4 == 0;
    const std::string target = path ? mutate(t, alphabet, rng) : t;
    const std::string body = (!path && !b.empty()) ? mutate(b, alphabet, rng) : b;
    auto r = rig.op(m, target.empty() ? "/" : target, body);
    ++statuses[r.status];
    ASSERT_NE(r.status, 500) << m << " " << target << " " << body << " -> " << r.body;
    ASSERT_TRUE(r.status >= 200 && r.status < 600);
    if (r.status >= 400) {
      ASSERT_TRUE(RestRig::json_of(r).contains("error")) << r.body;
    }
  }
  EXPECT_GT(statuses[200] + statuses[201] + statuses[202], 100);
  EXPECT_GT(statuses[400] + statuses[422], 1000);
  auto reread =
      daemon::PartitionStore::open(rig.dir.path() + "/partitions.rest.conf", std::nullopt);
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(reread->partitions(), rig.backend->store().partitions());
  rig.sweep();
}

// POST /roce/diff judges by effect unless asked for "mode": "literal": SONiC's stock
// identity maps with NVIDIA's reference values are no error, only info ("unreached").
TEST(NativeApi, RoceDiffIsByEffectUnlessLiteralIsAsked) {
  RestRig rig;
  auto text = read_text_file(std::string(WEFT_TEST_DATA) + "/roce_stock/sonic_plain.json");
  ASSERT_TRUE(text);
  auto run = [&](const nlohmann::json& body) {
    auto r = rig.op("POST", "/api/v1/roce/diff", body.dump());
    EXPECT_EQ(r.status, 202) << r.body;
    const auto st = rig.job(RestRig::json_of(r).value("location", ""));
    EXPECT_EQ(st.value("state", ""), "done") << st.dump();
    return st.contains("result") ? st["result"] : nlohmann::json::object();
  };
  nlohmann::json body = {{"observed", {{{"name", "leaf7.json"}, {"text", *text}}}}};
  const auto effect = run(body);
  EXPECT_EQ(effect.value("errors", -1), 0) << effect.dump();
  ASSERT_TRUE(effect.contains("unreached"));
  EXPECT_GT(effect["unreached"].size(), 0u);
  body["mode"] = "literal";
  const auto literal = run(body);
  EXPECT_GT(literal.value("errors", 0), 0) << literal.dump();
  body["mode"] = "fuzzy";
  EXPECT_EQ(rig.op("POST", "/api/v1/roce/diff", body.dump()).status, 422);
}

// POST /roce/doctor: the snapshots' files by name in the body, as the CLI's directories
// hold them; a job with the findings and who pauses whom.
TEST(NativeApi, RoceDoctorDiagnosesTheCountersInTheBody) {
  RestRig rig;
  auto eth = [](uint64_t discards, uint64_t pauses) {
    return "NIC statistics:\n     rx_prio3_discards: " + std::to_string(discards) +
           "\n     rx_prio3_pause: 0\n     tx_prio3_pause: " + std::to_string(pauses) + "\n";
  };
  auto hw = [](uint64_t v) {
    return "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:" + std::to_string(v) +
           "\n/sys/class/infiniband/mlx5_0/ports/1/hw_counters/lifespan:10\n";
  };
  const std::string pfc_before =
      "  Port Tx    PFC0    PFC1    PFC2    PFC3    PFC4    PFC5    PFC6    PFC7\n"
      "---------  ------  ------  ------  ------  ------  ------  ------  ------\n"
      "Ethernet0       0       0       0     100       0       0       0       0\n";
  std::string pfc_after = pfc_before;
  pfc_after.replace(pfc_after.find("     100"), 8, "   2,100");
  nlohmann::json body = {
      {"before", {{"h1.ethtool", eth(5, 1)}, {"h1.hw_counters", hw(0)}, {"leaf1.pfc", pfc_before}}},
      {"after", {{"h1.ethtool", eth(50, 9)}, {"h1.hw_counters", hw(0)}, {"leaf1.pfc", pfc_after}}},
      {"interval_s", 10},
      {"fabric",
       "switches: [{name: leaf1, os: sonic}]\nhosts: [{name: h1, ports: [{ifname: eth0, rdma: "
       "mlx5_0}]}]\nlinks: [[leaf1:Ethernet0, h1:eth0, 100G, 3m]]\n"}};
  auto r = rig.op("POST", "/api/v1/roce/doctor", body.dump());
  ASSERT_EQ(r.status, 202) << r.body;
  const auto st = rig.job(RestRig::json_of(r).value("location", ""));
  ASSERT_EQ(st.value("state", ""), "done") << st.dump();
  const auto& res = st["result"];
  EXPECT_EQ(res.value("errors", -1), 1) << res.dump();
  std::vector<std::string> codes;
  for (const auto& f : res["findings"])
    if (f["severity"] != "info") codes.push_back(f["code"]);
  EXPECT_EQ(codes, std::vector<std::string>{"lossless_drops"}) << res.dump();
  ASSERT_EQ(res["pauses"].size(), 2u) << res.dump();
  EXPECT_EQ(res["pauses"][0]["peer"], "h1:eth0");
  EXPECT_EQ(res["pauses"][0]["frames"], 2000);
  EXPECT_EQ(res["pauses"][1]["peer"], "leaf1:Ethernet0");
  // Bad bodies: a clear 422 naming what and where.
  auto bad = [&](nlohmann::json b, const std::string& says) {
    auto x = rig.op("POST", "/api/v1/roce/doctor", b.dump());
    EXPECT_EQ(x.status, 422) << b.dump();
    EXPECT_NE(x.body.find(says), std::string::npos) << x.body;
  };
  auto no_interval = body;
  no_interval.erase("interval_s");
  bad(no_interval, "interval_s");
  auto garbled = body;
  garbled["after"]["h1.ethtool"] = "NIC statistics:\n     rx_prio3_discards: lots\n";
  bad(garbled, "after/h1.ethtool:2: ");
  auto unknown = body;
  unknown["before"]["h1.txt"] = "x";
  bad(unknown, "before/h1.txt: not DEVICE.ethtool");
  auto not_text = body;
  not_text["before"]["h1.ethtool"] = 5;
  bad(not_text, "wants the file's text");
}

// Answers come from a cache while the snapshot and partitions stay the same objects;
// a sweep that finds a change, or a partition change, is seen at once.
TEST(NativeApi, CachedAnswersFollowTheFabric) {
  RestRig rig;
  auto a = rig.mon("GET", "/api/v1/ports?state=Active");
  auto b = rig.mon("GET", "/api/v1/ports?state=Active");
  EXPECT_EQ(a.body, b.body);
  EXPECT_EQ(RestRig::json_of(a).at("total"), 12);
  EXPECT_NE(rig.mon("GET", "/api/v1/ports?state=Active&limit=1").body, a.body)
      << "the query is in the key";
  // h1-1's link goes: the next sweep's snapshot has two ACTIVE port ends fewer.
  auto h11 = rig.sim.model().find(Guid{0x0002c90400000030});
  ASSERT_TRUE(h11);
  rig.sim.unlink(*h11, 1);
  rig.sweep();
  EXPECT_EQ(RestRig::json_of(rig.mon("GET", "/api/v1/ports?state=Active")).at("total"), 10);
  auto before = RestRig::json_of(rig.mon("GET", "/ufmRest/resources/pkeys"));
  EXPECT_FALSE(before.contains("0x77"));
  ASSERT_EQ(rig.op("POST", "/ufmRest/resources/pkeys",
                   R"({"pkey": "0x77", "guids": ["0002c90400000001"]})")
                .status,
            200);
  EXPECT_TRUE(RestRig::json_of(rig.mon("GET", "/ufmRest/resources/pkeys")).contains("0x77"));
}

// While the first request after a sweep builds an answer anew, the requests that come
// meanwhile get the previous snapshot's; after a partition change they never do.
TEST(NativeApi, RequestsDuringARebuildGetThePreviousAnswer) {
  RestRig rig;
  const std::string q = "/api/v1/ports?state=Active";
  ASSERT_EQ(RestRig::json_of(rig.mon("GET", q)).at("total"), 12);
  rig.sim.unlink(*rig.sim.model().find(Guid{0x0002c90400000030}), 1);
  rig.sweep();
  std::optional<rest::Response> during;
  // Api::handle reads published() once, then the handler reads it: the second call is
  // inside the first request's handler.
  rig.backend->on_next_published(
      [&] { rig.backend->on_next_published([&] { during = rig.mon("GET", q); }); });
  auto first = rig.mon("GET", q);
  ASSERT_TRUE(during);
  EXPECT_EQ(RestRig::json_of(first).at("total"), 10);
  EXPECT_EQ(RestRig::json_of(*during).at("total"), 12) << "the previous snapshot's answer";
  EXPECT_EQ(RestRig::json_of(rig.mon("GET", q)).at("total"), 10);

  const std::string pk = "/ufmRest/resources/pkeys";
  ASSERT_FALSE(RestRig::json_of(rig.mon("GET", pk)).contains("0x66"));
  ASSERT_EQ(rig.op("POST", pk, R"({"pkey": "0x66", "guids": ["0002c90400000001"]})").status, 200);
  during.reset();
  rig.backend->on_next_published(
      [&] { rig.backend->on_next_published([&] { during = rig.mon("GET", pk); }); });
  EXPECT_TRUE(RestRig::json_of(rig.mon("GET", pk)).contains("0x66"));
  ASSERT_TRUE(during);
  EXPECT_TRUE(RestRig::json_of(*during).contains("0x66"))
      << "a partition change is never served old";
}
