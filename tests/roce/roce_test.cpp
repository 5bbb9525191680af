// The RoCE profile, fabric, checks, renderers and readers.
#include <gtest/gtest.h>

#include <random>

#include "../fuzz.hpp"
#include "test_data.hpp"
#include "weft/roce/check.hpp"
#include "weft/roce/fabric.hpp"
#include "weft/roce/formats.hpp"
#include "weft/roce/profile.hpp"
#include "weft/roce/report.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/text_file.hpp"

namespace weft::roce {
namespace {

using nlohmann::json;
using roce::RoceFabric;
using roce::RoceProfile;

// The fabric the e2e test uses too: two leaves under one spine, one 300 m uplink.
const std::string& fabric_text() {
  static const std::string text = [] {
    auto t = read_text_file(std::string(WEFT_TEST_DATA) + "/roce_fabric.yaml");
    return t ? *t : std::string("unreadable test data");
  }();
  return text;
}

RoceFabric fabric(const std::string& text = fabric_text()) {
  auto f = roce::parse_roce_fabric(text, "fabric.yaml");
  EXPECT_TRUE(f) << (f ? "" : f.error().message);
  return f ? *f : RoceFabric{};
}

RoceProfile profile(const std::string& text = "") {
  auto p = roce::parse_roce_profile(text, "roce.yaml");
  EXPECT_TRUE(p) << (p ? "" : p.error().message);
  return p ? *p : roce::default_roce_profile();
}

// Findings of `check` on a view, as text, for messages in assertions.
std::string all(const std::vector<Finding>& fs) {
  std::string s;
  for (const auto& f : fs) s += to_text(f) + "\n";
  return s;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& check,
                    const std::string& device, const std::string& port,
                    const std::string& field_prefix) {
  for (const auto& f : fs)
    if (f.check == check && f.device == device && f.port == port &&
        f.field.starts_with(field_prefix) && f.severity == Severity::kError)
      return &f;
  return nullptr;
}

// ---- profile ----

TEST(RoceProfile, EmptyFileIsNvidiasReference) {
  const RoceProfile p = profile("# nothing set\n");
  EXPECT_EQ(p.trust, roce::Trust::kDscp);
  EXPECT_EQ(p.dscp_prio[26], 3);
  EXPECT_EQ(p.dscp_prio[48], 6);
  EXPECT_EQ(p.dscp_prio[0], 0);
  EXPECT_EQ(p.prio_tc[3], 3);
  EXPECT_EQ(p.prio_tc[6], 6);
  EXPECT_EQ(p.prio_tc[5], 0);
  EXPECT_EQ(p.pfc_mask, 1 << 3);
  EXPECT_EQ(p.ets[0].bw, 50);
  EXPECT_EQ(p.ets[3].bw, 50);
  EXPECT_EQ(p.ets[6].tsa, roce::Tsa::kStrict);
  ASSERT_TRUE(p.ecn.count(3));
  EXPECT_EQ(p.ecn.at(3).kmin, 150000u);
  EXPECT_EQ(p.ecn.at(3).kmax, 1500000u);
  EXPECT_EQ(p.tos, 106);
  EXPECT_TRUE(check_profile(p).empty()) << all(check_profile(p));
}

TEST(RoceProfile, ReadsEveryField) {
  const RoceProfile p = profile(R"(
mode: lossless
trust: dscp
roce: {dscp: 24, priority: 4}
cnp: {dscp: 46, priority: 5}
dscp_to_priority: {24: 4, 46: 5, 10: 1}
priority_to_tc: [0, 1, 0, 0, 4, 5, 0, 0]
pfc: {priorities: [4]}
pfc_watchdog: {enable: true, detection_time: 400ms, restoration_time: 1s, action: forward}
ets: {0: 40, 1: 10, 4: 50, 5: strict}
ecn: {4: {min: 100KB, max: 1MiB, probability: 20}}
dcqcn:
  priorities: [4]
  rp: {rpg_time_reset: 100, rpg_ai_rate: 10, dce_tcp_g: 1000}
  np: {min_time_between_cnps: 8}
mtu: 4200
rdma_cm: {tos: 98, roce_mode: "RoCE v2"}
)");
  EXPECT_EQ(p.roce_dscp, 24);
  EXPECT_EQ(p.cnp_prio, 5);
  EXPECT_EQ(p.dscp_prio[10], 1);
  EXPECT_EQ(p.prio_tc[4], 4);
  EXPECT_EQ(p.pfc_mask, 1 << 4);
  EXPECT_EQ(p.watchdog.detection_ms, 400);
  EXPECT_EQ(p.watchdog.restoration_ms, 1000);
  EXPECT_EQ(p.watchdog.action, "forward");
  EXPECT_EQ(p.ets[1].bw, 10);
  EXPECT_EQ(p.ecn.at(4).kmax, 1048576u);
  EXPECT_EQ(p.dcqcn.at("rpg_ai_rate"), 10);
  EXPECT_EQ(p.dcqcn.at("min_time_between_cnps"), 8);
  EXPECT_EQ(p.dcqcn.at("rpg_gd"), 11);  // untouched knobs keep the driver's value
  EXPECT_EQ(p.mtu, 4200);
  EXPECT_EQ(p.tos, 98);
  EXPECT_EQ(p.lines.at("ets"), 10);
  EXPECT_TRUE(check_profile(p).empty()) << all(check_profile(p));
}

TEST(RoceProfile, ChangingTheRoceCodePointCarriesTheDerivedFields) {
  const RoceProfile p = profile("roce: {dscp: 24, priority: 4}\n");
  EXPECT_EQ(p.dscp_prio[24], 4);
  EXPECT_EQ(p.dscp_prio[26], 0);
  EXPECT_EQ(p.prio_tc[4], 4);
  EXPECT_EQ(p.pfc_mask, 1 << 4);
  EXPECT_EQ(p.dcqcn_mask, 1 << 4);
  EXPECT_EQ(p.tos, 24 << 2 | 2);
  EXPECT_EQ(p.ets[4].bw, 50);
  EXPECT_EQ(p.ets[3].bw, 0);
  EXPECT_EQ(p.ecn.count(3), 0u);
  EXPECT_EQ(p.ecn.at(4).kmin, 150000u);
  EXPECT_TRUE(check_profile(p).empty()) << all(check_profile(p));
}

TEST(RoceProfile, ErrorsNameFileLineAndWhat) {
  auto p = roce::parse_roce_profile(
      "mode: lossless\ntrsut: dscp\nets: {9: 50}\nmtu: 20000\n"
      "dcqcn: {rp: {rpg_gd: 99, cnp_dscp: 4}}\n",
      "roce.yaml");
  ASSERT_FALSE(p);
  const std::string& m = p.error().message;
  EXPECT_NE(m.find("roce.yaml:2: profile: unknown key \"trsut\" (did you mean \"trust\"?)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("roce.yaml:3: ets key: 9 is not 0..7"), std::string::npos) << m;
  EXPECT_NE(m.find("roce.yaml:4: mtu: 20000 is not 1280..9216"), std::string::npos) << m;
  EXPECT_NE(m.find("roce.yaml:5: dcqcn.rp.rpg_gd: 99 is not 1..15"), std::string::npos) << m;
  EXPECT_NE(m.find("cnp_dscp\" (set cnp.dscp / cnp.priority)"), std::string::npos) << m;
  auto bad = roce::parse_roce_profile("ets: [unclosed\n", "x.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("x.yaml:"), std::string::npos);
  EXPECT_NE(bad.error().message.find("YAML syntax"), std::string::npos) << bad.error().message;
}

TEST(RoceProfile, ProfileMistakesAreFindingsAtTheirLine) {
  const RoceProfile p =
      profile("mode: lossless\nets: {0: 50, 3: 40, 6: 10}\npfc: {priorities: [4]}\n");
  const auto fs = check_profile(p);
  bool ets = false, cnp = false, pfc = false;
  for (const auto& f : fs) {
    ets |= f.check == "ets" && f.device == "roce.yaml:2" && f.observed == "100" &&
           f.field == "ets.tc-bw";
    cnp |= f.check == "cnp" && f.device == "roce.yaml:2";  // TC6 is not strict
    pfc |= f.check == "pfc" && f.device == "roce.yaml:3" && f.observed == "4";
  }
  EXPECT_FALSE(ets) << "50+40+10 is 100";
  EXPECT_TRUE(cnp) << all(fs);
  EXPECT_TRUE(pfc) << all(fs);
  const auto sum = check_profile(profile("ets: {0: 50, 3: 40, 6: strict}\n"));
  ASSERT_EQ(sum.size(), 1u) << all(sum);
  EXPECT_EQ(sum[0].device, "roce.yaml:1");
  EXPECT_EQ(sum[0].observed, "90");
}

TEST(RoceProfile, AliasesExpandWithinABound) {
  // Anchors and aliases work; a "billion laughs" document is refused, not built.
  const RoceProfile p = profile("pfc: {priorities: &prio [4]}\ndcqcn: {priorities: *prio}\n");
  EXPECT_EQ(p.pfc_mask, 1 << 4);
  EXPECT_EQ(p.dcqcn_mask, 1 << 4);
  std::string bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + char(c - 1);
    bomb += "]\n";
  }
  auto r = roce::parse_roce_profile(bomb, "bomb.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("aliases expand past"), std::string::npos) << r.error().message;
}

TEST(RoceProfile, UnitParsers) {
  uint64_t x = 0;
  EXPECT_TRUE(roce::parse_bytes("1.5MB", &x));
  EXPECT_EQ(x, 1500000u);
  EXPECT_TRUE(roce::parse_bytes("64KiB", &x));
  EXPECT_EQ(x, 65536u);
  EXPECT_FALSE(roce::parse_bytes("1.5.2MB", &x));
  EXPECT_FALSE(roce::parse_bytes("-4", &x));
  EXPECT_FALSE(roce::parse_bytes("0.5B", &x));
  EXPECT_TRUE(roce::parse_speed_mbps("400G", &x));
  EXPECT_EQ(x, 400000u);
  EXPECT_TRUE(roce::parse_length_m("300m", &x));
  EXPECT_EQ(x, 300u);
  EXPECT_FALSE(roce::parse_length_m("300ft", &x));
}

// ---- fabric ----

TEST(RoceFabric, ReadsDevicesPortsAndLinks) {
  const RoceFabric f = fabric();
  ASSERT_EQ(f.devices.size(), 5u);
  ASSERT_EQ(f.links.size(), 4u);
  const int leaf1 = f.device("leaf1");
  ASSERT_GE(leaf1, 0);
  EXPECT_EQ(f.devices[leaf1].ports.size(), 2u);
  const auto& up = f.links[2];
  EXPECT_EQ(up.speed_mbps, 400000u);
  EXPECT_EQ(up.length_m, 300u);
  EXPECT_EQ(f.port_name(up.b), "spine1:swp1");
  EXPECT_EQ(f.links[0].length_m, 3u);  // the default
  EXPECT_EQ(f.devices[f.device("h1")].ports[0].rdma, "mlx5_0");
  EXPECT_EQ(f.devices[f.device("spine1")].os, roce::SwitchOs::kCumulus);
}

TEST(RoceFabric, ErrorsNameLineAndWhat) {
  auto f = roce::parse_roce_fabric(R"(switches:
  - {name: a}
  - {name: a}
hosts:
  - {name: h, colour: red}
links:
  - [a:p1, h:eth0]
  - [a:p1, h:eth1]
  - [b:p1, h:eth2]
  - [a:p2, h:eth3, fast]
)",
                                   "f.yaml");
  ASSERT_FALSE(f);
  const std::string& m = f.error().message;
  EXPECT_NE(m.find("f.yaml:3: device \"a\" is declared twice (first at line 2)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("f.yaml:5: hosts entry: unknown key \"colour\""), std::string::npos) << m;
  EXPECT_NE(m.find("f.yaml:8: a:p1 is already linked (line 7)"), std::string::npos) << m;
  EXPECT_NE(m.find("f.yaml:9: link end \"b:p1\": no switch or host named \"b\""), std::string::npos)
      << m;
  EXPECT_NE(m.find("f.yaml:10: link speed: expected a speed like 100G, got \"fast\""),
            std::string::npos)
      << m;
}

// ---- headroom ----

TEST(RoceHeadroom, SonicFormulaFigures) {
  const roce::AsicParams spc2;
  // 100G, 3 m, MTU 9100, 4 lanes: peer response 394 quanta; xoff rounds up to 80 KiB.
  const Headroom a = sonic_headroom(100000, 3, 9100, 4, spc2);
  EXPECT_EQ(a.xon, 18432u);
  EXPECT_EQ(a.xoff, 81920u);
  EXPECT_EQ(a.size, 100352u);
  // 400G, 300 m, 8 lanes: doubled pipeline latency less 1 KiB, plus one MTU.
  const Headroom b = sonic_headroom(400000, 300, 9100, 8, spc2);
  EXPECT_EQ(b.xon, 35840u);
  EXPECT_EQ(b.xoff, 487424u);
  EXPECT_EQ(b.size, 532480u);
  // Longer cable, more headroom; a speed without a pause-quanta figure uses peer_response_time.
  EXPECT_GT(sonic_headroom(100000, 40, 9100, 4, spc2).xoff, a.xoff);
  EXPECT_GT(sonic_headroom(30000, 3, 9100, 4, spc2).xoff, 0u);
}

// ---- checks: a clean fabric, then one planted mistake per failure class ----

TEST(RoceCheck, CleanFabricsPass) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  const auto fs = check(p, &f, intended(p, &f));
  EXPECT_EQ(errors(fs), 0u) << all(fs);
  auto topo = simulator::make_fabric("ft3:pods=2,leaves=2,aggs=2,hosts=2,cores=2");
  ASSERT_TRUE(topo) << topo.error().message;
  const RoceFabric t = roce_fabric_from_topology(*topo, 100000, 3);
  const auto ts = check(p, &t, intended(p, &t));
  EXPECT_TRUE(ts.empty()) << all(ts);
}

// The intended view with one change made to one device.
struct Planted {
  RoceProfile p = profile();
  RoceFabric f = fabric();
  FabricView v = intended(p, &f);
  HostConfig& host(const std::string& n) {
    for (auto& h : v.hosts)
      if (h.device == n) return h;
    throw std::runtime_error("no host " + n);
  }
  SwitchPort& port(const std::string& sw, const std::string& n) {
    for (auto& s : v.switches)
      if (s.device == sw)
        for (auto& p : s.ports)
          if (p.name == n) return p;
    throw std::runtime_error("no port " + n);
  }
  std::vector<Finding> run() { return check(p, &f, v); }
};

TEST(RoceCheck, TrustMismatch) {
  Planted t;
  t.host("h1").trust = roce::Trust::kPcp;
  const auto fs = t.run();
  const Finding* f = find(fs, "trust", "h1", "eth0", "trust");
  ASSERT_TRUE(f) << all(fs);
  EXPECT_EQ(f->expected, "dscp");
  EXPECT_EQ(f->observed, "pcp");
  EXPECT_TRUE(find(fs, "trust", "leaf1", "Ethernet0", "trust"))
      << "the link check names the far end too\n"
      << all(fs);
}

TEST(RoceCheck, RoceDscpOnTheWrongPriority) {
  Planted t;
  (*t.port("leaf2", "Ethernet48").dscp_tc)[26] = 4;
  const auto fs = t.run();
  const Finding* f = find(fs, "dscp-map", "leaf2", "Ethernet48", "dscp_to_tc[26]");
  ASSERT_TRUE(f) << all(fs);
  EXPECT_EQ(f->expected, "3");
  EXPECT_EQ(f->observed, "4");
}

TEST(RoceCheck, PfcOnDifferentPrioritiesAcrossALink) {
  Planted t;
  t.host("h2").pfc_mask = (1 << 3) | (1 << 4);
  const auto fs = t.run();
  const Finding* link = nullptr;
  for (const auto& f : fs)
    if (f.check == "pfc" &&
        f.message.find("across the link leaf2:Ethernet0 - h2:eth0") != std::string::npos)
      link = &f;
  ASSERT_TRUE(link) << all(fs);
  EXPECT_EQ(link->device, "leaf2");
  EXPECT_EQ(link->port, "Ethernet0");
  EXPECT_EQ(link->observed, "3");
  EXPECT_EQ(link->expected, "3,4 (as h2:eth0)");
  EXPECT_TRUE(find(fs, "pfc", "h2", "eth0", "pfc.prio-pfc")) << all(fs);
}

TEST(RoceCheck, EcnOffOnTheHost) {
  Planted t;
  t.host("h1").np_mask = 0;
  const auto fs = t.run();
  const Finding* f = find(fs, "ecn", "h1", "eth0", "ecn.roce_np.enable[3]");
  ASSERT_TRUE(f) << all(fs);
  EXPECT_EQ(f->observed, "0");
}

// rdma_cm's ToS 104 (DSCP 26, ECT bits 0) against NVIDIA's 106: mlx5 gives a connected
// QP only the DSCP and sets the ECN field itself while DCQCN is on, so it is a note;
// with the reaction point off on the RoCE priority nothing sets ECT, and it warns.
TEST(RoceCheck, TosWithoutEctIsANoteWhileTheNicMarksItself) {
  auto tos_findings = [](std::optional<uint8_t> rp) {
    Planted t;
    t.host("h1").tos = 104;
    if (rp) t.host("h1").rp_mask = *rp;
    std::vector<Finding> out;
    for (const auto& f : t.run())
      if (f.check == "tos" && f.device == "h1") out.push_back(f);
    return out;
  };
  const auto on = tos_findings(std::nullopt);
  ASSERT_EQ(on.size(), 1u) << all(on);
  EXPECT_EQ(on[0].severity, Severity::kInfo) << all(on);
  EXPECT_EQ(on[0].expected, "106");
  EXPECT_NE(on[0].message.find("UD"), std::string::npos) << on[0].message;
  const auto off = tos_findings(0);
  ASSERT_EQ(off.size(), 1u) << all(off);
  EXPECT_EQ(off[0].severity, Severity::kWarning) << all(off);
}

TEST(RoceCheck, EcnOffOnTheSwitchQueue) {
  Planted t;
  t.port("leaf1", "Ethernet0").wred_ecn[3] = false;
  t.port("leaf2", "Ethernet0").wred.erase(3);
  const auto fs = t.run();
  const Finding* drop = find(fs, "ecn", "leaf1", "Ethernet0", "queue[3].wred");
  ASSERT_TRUE(drop) << all(fs);
  EXPECT_EQ(drop->observed, "drop");
  const Finding* none = find(fs, "ecn", "leaf2", "Ethernet0", "queue[3].wred");
  ASSERT_TRUE(none) << all(fs);
  EXPECT_EQ(none->observed, "none");
}

TEST(RoceCheck, CnpOnANonStrictOrBestEffortQueue) {
  Planted t;
  t.port("leaf1", "Ethernet48").sched[6] = QueueSched{roce::Tsa::kEts, 10};
  (*t.port("leaf2", "Ethernet0").tc_queue)[6] = 0;
  const auto fs = t.run();
  const Finding* strict = find(fs, "cnp", "leaf1", "Ethernet48", "queue[6].scheduler");
  ASSERT_TRUE(strict) << all(fs);
  EXPECT_EQ(strict->observed, "dwrr/10");
  const Finding* shared = find(fs, "cnp", "leaf2", "Ethernet0", "tc_to_queue[6]");
  ASSERT_TRUE(shared) << all(fs);
  EXPECT_NE(shared->message.find("best-effort"), std::string::npos);
}

TEST(RoceCheck, HeadroomTooSmallForA300mCableAt400G) {
  Planted t;
  // The uplink's buffers were sized, and its cable length set, for 5 m.
  SwitchPort& up = t.port("leaf1", "Ethernet48");
  const Headroom five = sonic_headroom(400000, 5, 9100, 8, roce::AsicParams{});
  up.pgs[3] = BufferPg{true, five.size, five.xon, five.xoff};
  up.cable_m = 5;
  const auto fs = t.run();
  const Finding* h = find(fs, "headroom", "leaf1", "Ethernet48", "pg[3].size");
  ASSERT_TRUE(h) << all(fs);
  EXPECT_EQ(h->expected, ">= 532480 (xoff 487424)");
  EXPECT_NE(h->message.find("300 m at 400G"), std::string::npos) << h->message;
  const Finding* c = find(fs, "headroom", "leaf1", "Ethernet48", "cable_length");
  ASSERT_TRUE(c) << all(fs);
  EXPECT_EQ(c->observed, "5m");
  // A port limit below what the lossless PG needs is an error too.
  Planted lim;
  lim.f.devices[lim.f.device("leaf1")].asic.max_headroom = 256 * 1024;
  EXPECT_TRUE(find(lim.run(), "headroom", "leaf1", "Ethernet48", "headroom")) << all(lim.run());
}

TEST(RoceCheck, EtsNotSummingTo100) {
  Planted t;
  (*t.host("h2").ets)[0].bw = 30;
  const auto fs = t.run();
  const Finding* f = find(fs, "ets", "h2", "eth0", "ets.tc-bw");
  ASSERT_TRUE(f) << all(fs);
  EXPECT_EQ(f->observed, "80");
}

TEST(RoceCheck, MtuMismatchAcrossALink) {
  Planted t;
  t.host("h1").mtu = 1500;
  const auto fs = t.run();
  const Finding* f = find(fs, "mtu", "leaf1", "Ethernet0", "mtu");
  ASSERT_TRUE(f) << all(fs);
  EXPECT_EQ(f->observed, "9100");
  EXPECT_EQ(f->expected, "1500 (as h1:eth0)");
}

TEST(RoceCheck, WatchdogMissingAndLosslessPgWithoutHeadroom) {
  Planted t;
  t.port("leaf2", "Ethernet48").watchdog.reset();
  t.port("leaf2", "Ethernet0").pgs.erase(3);
  const auto fs = t.run();
  EXPECT_TRUE(find(fs, "watchdog", "leaf2", "Ethernet48", "pfc_wd")) << all(fs);
  const Finding* pg = find(fs, "headroom", "leaf2", "Ethernet0", "pg[3]");
  ASSERT_TRUE(pg) << all(fs);
  EXPECT_EQ(pg->observed, "none");
}

TEST(RoceCheck, BufferDependencyCycleOnARing) {
  // Four switches in a ring, each with a host: shortest paths wrap around the ring.
  const RoceFabric ring = fabric(R"(switches: [{name: s0}, {name: s1}, {name: s2}, {name: s3}]
hosts: [{name: h0}, {name: h1}, {name: h2}, {name: h3}]
links:
  - [s0:p1, s1:p2]
  - [s1:p1, s2:p2]
  - [s2:p1, s3:p2]
  - [s3:p1, s0:p2]
  - [s0:h, h0:eth0]
  - [s1:h, h1:eth0]
  - [s2:h, h2:eth0]
  - [s3:h, h3:eth0]
)");
  const RoceProfile p = profile();
  const auto fs = check_buffer_dependencies(p, ring);
  ASSERT_EQ(fs.size(), 1u) << all(fs);
  EXPECT_EQ(fs[0].severity, Severity::kError);
  EXPECT_EQ(fs[0].field, "buffer-dependency");
  EXPECT_EQ(std::count(fs[0].observed.begin(), fs[0].observed.end(), '>'), 4) << fs[0].observed;
  EXPECT_FALSE(fs[0].device.empty());
  EXPECT_FALSE(fs[0].port.empty());
  // Lossy: no PFC, no buffer dependencies.
  EXPECT_TRUE(check_buffer_dependencies(profile("mode: lossy\n"), ring).empty());
  // A line of three switches cannot deadlock.
  const RoceFabric line = fabric(R"(switches: [{name: s0}, {name: s1}, {name: s2}]
hosts: [{name: h0}, {name: h2}]
links: [[s0:p1, s1:p2], [s1:p1, s2:p2], [s0:h, h0:eth0], [s2:h, h2:eth0]]
)");
  EXPECT_TRUE(check_buffer_dependencies(p, line).empty());
}

TEST(RoceCheck, DiffNamesEveryDifferingField) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  const HostConfig want = intend_host(p, &f, f.device("h1"), 0);
  HostConfig have = want;
  have.dcqcn["rpg_ai_rate"] = 7;
  have.tos.reset();
  const auto fs = diff(want, have);
  ASSERT_EQ(fs.size(), 2u) << all(fs);
  EXPECT_EQ(fs[0].field, "ecn.roce_rp.rpg_ai_rate");
  EXPECT_EQ(fs[0].expected, "5");
  EXPECT_EQ(fs[0].observed, "7");
  EXPECT_EQ(fs[1].field, "rdma_cm.default_roce_tos");
  EXPECT_EQ(fs[1].severity, Severity::kWarning);
}

// ---- round trips: render, read back, diff is empty ----

TEST(RoceFormats, DcbScriptRoundTrip) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  const HostConfig want = intend_host(p, &f, f.device("h1"), 0);
  const std::string script = render_dcb(want, "mlx5_0", 1);
  auto back = parse_dcb_script(script, "h1.sh");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config.device, "h1");
  EXPECT_EQ(back->config.port, "eth0");
  EXPECT_TRUE(diff(want, back->config).empty()) << all(diff(want, back->config));
  EXPECT_NE(script.find("mlx5 resets the link"), std::string::npos);
}

TEST(RoceFormats, HostSnapshotRoundTrip) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  const HostConfig want = intend_host(p, &f, f.device("h2"), 0);
  auto back = parse_host_snapshot(render_host_snapshot(want).dump(), "h2.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(diff(want, back->config).empty()) << all(diff(want, back->config));
}

// The reference, PCP trust, lossy, and a moved RoCE priority: each renders and reads back.
std::vector<RoceProfile> profiles() {
  return {profile(), profile("trust: pcp\n"), profile("mode: lossy\n"),
          profile("roce: {dscp: 24, priority: 4}\n")};
}

TEST(RoceFormats, EveryProfileRoundTripsThroughEveryFormat) {
  const RoceFabric f = fabric();
  for (const RoceProfile& p : profiles()) {
    const SwitchConfig leaf = intend_switch(p, &f, f.device("leaf1"));
    auto sonic = parse_sonic(render_sonic(leaf).dump(), "leaf1.json", "leaf1");
    ASSERT_TRUE(sonic) << sonic.error().message;
    EXPECT_TRUE(diff(leaf, sonic->config).empty()) << all(diff(leaf, sonic->config));
    const SwitchConfig spine = intend_switch(p, &f, f.device("spine1"));
    auto nvue = parse_nvue(render_nvue(spine), "spine1.nvue");
    ASSERT_TRUE(nvue) << nvue.error().message;
    EXPECT_TRUE(diff(spine, nvue->config).empty()) << all(diff(spine, nvue->config));
    const HostConfig host = intend_host(p, &f, f.device("h1"), 0);
    auto dcb = parse_dcb_script(render_dcb(host, "mlx5_0", 1), "h1.sh");
    ASSERT_TRUE(dcb) << dcb.error().message;
    EXPECT_TRUE(diff(host, dcb->config).empty()) << all(diff(host, dcb->config));
    auto snap = parse_host_snapshot(render_host_snapshot(host).dump(), "h1.json");
    ASSERT_TRUE(snap) << snap.error().message;
    EXPECT_TRUE(diff(host, snap->config).empty()) << all(diff(host, snap->config));
    EXPECT_EQ(errors(check(p, &f, intended(p, &f))), 0u) << all(check(p, &f, intended(p, &f)));
  }
}

TEST(RoceFormats, SonicRoundTrip) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  for (const char* sw : {"leaf1", "leaf2", "spine1"}) {
    const SwitchConfig want = intend_switch(p, &f, f.device(sw));
    auto back = parse_sonic(render_sonic(want).dump(2), std::string(sw) + ".json", sw);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_TRUE(back->warnings.empty());
    EXPECT_TRUE(diff(want, back->config).empty()) << sw << "\n" << all(diff(want, back->config));
  }
}

TEST(RoceFormats, NvueRoundTrip) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  const SwitchConfig want = intend_switch(p, &f, f.device("spine1"));
  const std::string cmds = render_nvue(want);
  auto back = parse_nvue(cmds, "spine1.nvue");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config.device, "spine1");
  EXPECT_TRUE(diff(want, back->config).empty()) << all(diff(want, back->config));
  // The two uplinks have different cables: two PFC profiles.
  EXPECT_NE(cmds.find("nv set qos pfc weft-300m cable-length 300"), std::string::npos) << cmds;
  EXPECT_NE(cmds.find("nv set qos pfc weft-30m cable-length 30"), std::string::npos) << cmds;
}

// ---- observed formats: the quirks of real output ----

TEST(RoceObserved, DcbJsonQuirksOfIproute2Releases) {
  // Arrays printed as objects keyed "0".."7", on/off strings, app entries with a trailing
  // " ", PCP keys like "3nd", maxrate in bytes/s.
  const char* snap = R"({"host": "h9", "ifname": "eth2",
    "dcb": {"app": {"dscp_prio": [[26, 3, " "], [48, 6, " "]], "pcp_prio": [["3nd", 3], ["5de", 5]]},
            "apptrust": {"order": ["pcp", "dscp"]},
            "pfc": {"pfc_cap": 8, "macsec_bypass": false, "delay": 7,
                    "prio_pfc": {"0": "off", "1": "off", "2": "off", "3": "on", "4": "off", "5": "off", "6": "off", "7": "off"}},
            "ets": {"willing": false, "ets_cap": 8, "cbs": false,
                    "tc_bw": {"0": 50, "1": 0, "2": 0, "3": 50, "4": 0, "5": 0, "6": 0, "7": 0},
                    "tc_tsa": ["ets", "ets", "ets", "ets", "ets", "ets", "strict", "ets"],
                    "prio_tc": [0, 0, 0, 3, 0, 0, 6, 0]},
            "maxrate": {"tc_maxrate": [0, 0, 0, 12500000000, 0, 0, 0, 0]},
            "dcbx": {"host": true, "ieee": true}},
    "ecn": {"roce_np": {"enable": {"0": 0, "1": 0, "2": 0, "3": 1, "4": 0, "5": 0, "6": 0, "7": 0},
                        "cnp_dscp": 48, "cnp_802p_prio": 6, "min_time_between_cnps": 4},
            "roce_rp": {"enable": {"0": 0, "1": 0, "2": 0, "3": 1, "4": 0, "5": 0, "6": 0, "7": 0}, "rpg_gd": 11}},
    "rdma_cm": {"default_roce_tos": 106, "default_roce_mode": "RoCE v2"}})";
  auto h = parse_host_snapshot(snap, "h9.json");
  ASSERT_TRUE(h) << h.error().message;
  const HostConfig& c = h->config;
  EXPECT_EQ(c.trust, roce::Trust::kPcp);  // pcp comes first in the order
  EXPECT_EQ((*c.dscp_prio)[26], 3);
  EXPECT_EQ(*c.pfc_mask, 1 << 3);
  EXPECT_EQ(*c.pfc_delay, 7);
  EXPECT_EQ((*c.ets)[6].tsa, roce::Tsa::kStrict);
  EXPECT_EQ(*c.np_mask, 1 << 3);
  EXPECT_EQ(c.dcqcn.at("rpg_gd"), 11);
  EXPECT_EQ(*c.tos, 106);
  const auto fs = check(profile(), nullptr, FabricView{{c}, {}});
  EXPECT_TRUE(find(fs, "trust", "h9", "eth2", "trust")) << all(fs);
}

TEST(RoceObserved, OlderIproute2WithoutApptrust) {
  auto h = parse_host_snapshot(
      R"({"host": "h", "ifname": "eth0", "dcb": {"app": {"dscp_prio": [[26, 3]]}}})", "old.json");
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_FALSE(h->config.trust);
  ASSERT_EQ(h->warnings.size(), 1u);
  EXPECT_NE(h->warnings[0].find("apptrust missing"), std::string::npos);
}

// mlx5 starts every TC with TSA vendor; dcb shows it so, in JSON and in its commands.
TEST(RoceObserved, VendorTsaIsRead) {
  auto d = parse_dcb_script(
      "dcb ets set dev eth0 tc-tsa 0:ets 1:vendor 3:ets 6:strict tc-bw 0:50 3:50\n", "v.sh");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ((*d->config.ets)[1].tsa, roce::Tsa::kVendor);
  EXPECT_EQ((*d->config.ets)[6].tsa, roce::Tsa::kStrict);
  auto bad = parse_dcb_script("dcb ets set dev eth0 tc-tsa 1:cbs\n", "b.sh");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("b.sh:1: tc-tsa: \"cbs\" is not ets, strict or vendor"),
            std::string::npos)
      << bad.error().message;
}

TEST(RoceObserved, BadHostSnapshotsAreNamedErrors) {
  auto trunc = parse_host_snapshot("{\"host\": \"h\",\n \"dcb\": {\"pfc\": ", "t.json");
  ASSERT_FALSE(trunc);
  EXPECT_NE(trunc.error().message.find("t.json:2:"), std::string::npos) << trunc.error().message;
  auto types = parse_host_snapshot(
      R"({"host": "h", "ifname": "eth0", "dcb": {"pfc": {"prio_pfc": [1, 2]}, "ets": "x"}, "ecn": {"roce_np": {"cnp_dscp": "forty"}}})",
      "w.json");
  ASSERT_FALSE(types);
  const std::string& m = types.error().message;
  EXPECT_NE(m.find("w.json: dcb.pfc.prio_pfc: expected 8 entries, got 2"), std::string::npos) << m;
  EXPECT_NE(m.find("w.json: dcb.ets: expected an object, got string"), std::string::npos) << m;
  EXPECT_NE(m.find("w.json: ecn.roce_np.cnp_dscp: expected an integer, got \"forty\""),
            std::string::npos)
      << m;
  auto nohost = parse_host_snapshot(R"({"dcb": {}})", "n.json");
  ASSERT_FALSE(nohost);
  EXPECT_NE(nohost.error().message.find("n.json: host: missing"), std::string::npos);
}

TEST(RoceObserved, SonicReferenceStylesAndWatchdogSpellings) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  const SwitchConfig want = intend_switch(p, &f, f.device("leaf1"));
  json db = render_sonic(want);
  // The older reference style, the other watchdog spelling, a range key, a hostname.
  for (auto& [port, q] : db["PORT_QOS_MAP"].items()) {
    q["dscp_to_tc_map"] = "[DSCP_TO_TC_MAP|AZURE]";
    q["pfc_wd_sw_enable"] = q["pfcwd_sw_enable"];
    q.erase("pfcwd_sw_enable");
  }
  db["BUFFER_PG"]["Ethernet0|3"]["profile"] =
      "[BUFFER_PROFILE|" + db["BUFFER_PG"]["Ethernet0|3"]["profile"].get<std::string>() + "]";
  db["DEVICE_METADATA"]["localhost"]["hostname"] = "leaf1";
  db["BGP_NEIGHBOR"]["10.0.0.1"]["asn"] = "65000";
  db["FANCY_NEW_TABLE"]["x"]["y"] = "z";
  auto back = parse_sonic_db(db, "leaf1.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config.device, "leaf1");
  ASSERT_EQ(back->warnings.size(), 1u);
  EXPECT_NE(back->warnings[0].find("unknown SONiC table \"FANCY_NEW_TABLE\""), std::string::npos);
  EXPECT_TRUE(diff(want, back->config).empty()) << all(diff(want, back->config));
  // Keys with a range and a port list.
  json db2 = db;
  db2["BUFFER_PG"].erase("Ethernet0|3");
  db2["BUFFER_PG"].erase("Ethernet48|3");
  db2["BUFFER_PG"]["Ethernet0,Ethernet48|3-4"] = {{"profile", "NULL"}};
  auto b2 = parse_sonic_db(db2, "leaf1.json");
  ASSERT_TRUE(b2) << b2.error().message;
  EXPECT_TRUE(b2->config.port("Ethernet48")->headroom_by_device);
  EXPECT_TRUE(b2->config.port("Ethernet0")->pgs.at(4).lossless);
}

TEST(RoceObserved, BadSonicIsANamedError) {
  auto dangling =
      parse_sonic(R"({"PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "NOPE"}}})", "d.json", "sw");
  ASSERT_FALSE(dangling);
  EXPECT_NE(dangling.error().message.find(
                "d.json: PORT_QOS_MAP|Ethernet0.dscp_to_tc_map: no DSCP_TO_TC_MAP named \"NOPE\""),
            std::string::npos)
      << dangling.error().message;
  auto badkey = parse_sonic(R"({"QUEUE": {"Ethernet0|9": {}}, "PORT": "x"})", "k.json", "sw");
  ASSERT_FALSE(badkey);
  EXPECT_NE(badkey.error().message.find("k.json: PORT: expected an object of keys, got string"),
            std::string::npos)
      << badkey.error().message;
  auto noname = parse_sonic("{}", "n.json");
  ASSERT_FALSE(noname);
}

TEST(RoceObserved, BadDcbAndNvueLinesAreNamed) {
  auto d = parse_dcb_script(
      "dcb pfc set dev eth0 prio-pfc 3:maybe\necho 9 > "
      "/sys/class/net/eth0/ecn/roce_np/cnp_802p_prio\n",
      "s.sh");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("s.sh:1: prio-pfc: \"maybe\" is not on or off"),
            std::string::npos)
      << d.error().message;
  EXPECT_NE(d.error().message.find("s.sh:2: cnp_802p_prio: \"9\" is not 0..7"), std::string::npos)
      << d.error().message;
  auto n = parse_nvue(
      "nv set qos mapping m trust l3\nnv set qos egress-scheduler s traffic-class 12 mode strict\n"
      "nv set interface swp1 qos mapping profile missing\n",
      "n.nvue", "sw");
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("n.nvue:2: traffic-class: \"12\" is not 0..7"),
            std::string::npos)
      << n.error().message;
  EXPECT_NE(n.error().message.find("interface swp1: no qos mapping profile \"missing\""),
            std::string::npos)
      << n.error().message;
}

TEST(RoceObserved, NvueDscpsLeftOutKeepCumulusDefault) {
  // Cumulus maps a DSCP the configuration does not name to DSCP >> 3.
  auto n = parse_nvue(
      "nv set qos mapping m trust l3\nnv set qos mapping m dscp 26,40-41 switch-priority 3\n"
      "nv set interface swp1 qos mapping profile m\n",
      "n.nvue", "sw");
  ASSERT_TRUE(n) << n.error().message;
  const DscpMap& m = *n->config.port("swp1")->dscp_tc;
  EXPECT_EQ(m[26], 3);
  EXPECT_EQ(m[41], 3);
  EXPECT_EQ(m[10], 1);
  EXPECT_EQ(m[48], 6);
  EXPECT_EQ(m[42], 5);
}

// ---- fuzz: no reader crashes or hangs on mangled input ----

TEST(RoceFuzz, ReadersSurviveMutations) {
  const RoceProfile p = profile();
  const RoceFabric f = fabric();
  const std::string host = render_host_snapshot(intend_host(p, &f, f.device("h1"), 0)).dump();
  const std::string sonic = render_sonic(intend_switch(p, &f, f.device("leaf1"))).dump();
  const std::string nvue = render_nvue(intend_switch(p, &f, f.device("spine1")));
  const std::string dcb = render_dcb(intend_host(p, &f, f.device("h1"), 0), "", 1);
  const std::string prof =
      "mode: lossless\nets: {0: 50, 3: 50, 6: strict}\necn: {3: {min: 150KB, max: 1.5MB, "
      "probability: 100}}\n";
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,0123456789abcdefnrtu- \n|#.-";
  size_t ok = 0, rejected = 0;
  for (int i = 0; i < 1500; ++i) {
    auto count = [&](bool good) { ++(good ? ok : rejected); };
    // What reads is diffed too, both ways: any table a device may hold, never a crash.
    auto diffed = [&](std::string text, const char* name) {
      auto ob = parse_observed(text, name, "sw");
      if (ob) {
        (void)diff_observed(p, nullptr, {*ob});
        (void)diff_observed(p, nullptr, {*ob}, DiffMode::kLiteral);
      }
      return ob.has_value();
    };
    count(diffed(testing::mutate(host, alphabet, rng), "h.json"));
    count(diffed(testing::mutate(sonic, alphabet, rng), "s.json"));
    count(diffed(testing::mutate(nvue, alphabet, rng), "n.nvue"));
    count(parse_dcb_script(testing::mutate(dcb, alphabet, rng), "d").has_value());
    count(roce::parse_roce_profile(testing::mutate(prof, alphabet, rng), "p").has_value());
    count(roce::parse_roce_fabric(testing::mutate(fabric_text(), alphabet, rng), "f").has_value());
  }
  EXPECT_GT(rejected,
            1000u);  // the mutations do break things, and each break is an error, not a crash
  EXPECT_GT(ok, 100u);
}

}  // namespace
}  // namespace weft::roce
