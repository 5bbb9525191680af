#include <gtest/gtest.h>

#include "../fuzz.hpp"

#include <fstream>
#include <random>
#include <sstream>

#include "test_data.hpp"
#include "weft/fabric/topology_file.hpp"

using namespace weft;
using namespace weft::fabric;

namespace {

const std::string kData = WEFT_TEST_DATA;

std::string parse_err(const std::string& text) {
  auto f = parse_topology(text, "t.net");
  EXPECT_FALSE(f.has_value()) << "parsed although it should not";
  return f ? "" : f.error().message;
}

}  // namespace

TEST(NetFile, TwoSwitchesWithIbsimDefaultGuids) {
  auto f = read_topology_file(kData + "/two_switches.net");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->num_switches(), 2u);
  EXPECT_EQ(f->num_endpoints(), 4u);
  EXPECT_EQ(f->links().size(), 6u);
  // ibsim numbering: CAs from 0x100000 stepping by nports+1, switches from 0x200000.
  EXPECT_EQ(f->node(*f->find_by_name("hostA")).guid.value, 0x100000u);
  EXPECT_EQ(f->node(*f->find_by_name("hostB")).guid.value, 0x100002u);
  EXPECT_EQ(f->node(*f->find_by_name("hostD")).guid.value, 0x100006u);
  EXPECT_EQ(f->node(*f->find_by_name("swA")).guid.value, 0x200000u);
  EXPECT_EQ(f->node(*f->find_by_name("swB")).guid.value, 0x200001u);
  EXPECT_EQ(f->node(*f->find_by_name("swB")).description, "swB description");
  // CA port GUID = node GUID + port; switch ports share the node GUID.
  auto d = *f->find_by_name("hostD");
  EXPECT_EQ(f->node(d).ports[1].guid.value, 0x100007u);
  auto a = *f->find_by_name("swA");
  EXPECT_EQ(f->node(a).ports[7].peer, *f->find_by_name("swB"));
  EXPECT_EQ(f->node(a).ports[7].peer_port, 7);
  EXPECT_EQ(f->node(a).ports[8].peer_port, 8);  // parallel link
}

TEST(NetFile, ExplicitGuidsDefaultRemotePortAndWidth) {
  auto f = read_topology_file(kData + "/ibsim_example.net");
  ASSERT_TRUE(f) << f.error().message;
  auto core = *f->find_by_name("core");
  EXPECT_EQ(f->node(core).guid.value, 0x0008f10400400100u);
  EXPECT_EQ(f->node(*f->find_by_name("edge1")).guid.value, 0x0008f10400400101u);
  EXPECT_EQ(f->node(*f->find_by_name("mgmt")).guid.value, 0x0008f10400411000u);
  EXPECT_EQ(f->node(*f->find_by_name("n1")).guid.value, 0x0008f10400411003u);
  EXPECT_EQ(f->node(core).ports[4].peer_port, 1);            // "[4] "n1"" defaults to port 1
  EXPECT_EQ(f->node(core).ports[5].attrs.width_enabled, 4);  // w=4 (8x)
  EXPECT_EQ(f->node(*f->find_by_name("mgmt")).ports[2].peer, *f->find_by_name("edge1"));
}

TEST(IbnetdiscoverDump, ReadsGuidsLidsAndWidths) {
  auto f = read_topology_file(kData + "/ibnetdiscover_dump.txt");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->num_switches(), 3u);
  EXPECT_EQ(f->num_endpoints(), 4u);
  EXPECT_EQ(f->links().size(), 9u);
  auto core = f->find(Guid{0x0008f10400400100});
  ASSERT_TRUE(core);
  EXPECT_EQ(f->node(*core).description, "core switch");
  EXPECT_TRUE(f->node(*core).ports[0].attrs.lid.is_unicast());
  auto mgmt = f->find(Guid{0x0008f10400411000});
  ASSERT_TRUE(mgmt);
  EXPECT_EQ(f->node(*mgmt).ports[2].guid.value, 0x0008f10400411002u);
  EXPECT_TRUE(f->node(*mgmt).ports[1].attrs.lid.is_unicast());
  EXPECT_EQ(f->node(*core).ports[5].attrs.width_active, 4);  // "8xSDR"
  EXPECT_EQ(f->node(*core).ports[5].attrs.speed_active, 1);
}

TEST(NetFile, WriteThenReadRoundTrips) {
  auto f = read_topology_file(kData + "/ibsim_example.net");
  ASSERT_TRUE(f);
  auto g = parse_topology(write_netfile(*f), "written.net");
  ASSERT_TRUE(g) << g.error().message;
  ASSERT_EQ(g->size(), f->size());
  for (NodeIndex i = 0; i < f->size(); ++i) {
    EXPECT_EQ(g->node(i).guid, f->node(i).guid);
    EXPECT_EQ(g->node(i).description, f->node(i).description);
    for (size_t p = 0; p < f->node(i).ports.size(); ++p) {
      EXPECT_EQ(g->node(i).ports[p].peer, f->node(i).ports[p].peer);
      EXPECT_EQ(g->node(i).ports[p].peer_port, f->node(i).ports[p].peer_port);
      EXPECT_EQ(g->node(i).ports[p].attrs.width_enabled, f->node(i).ports[p].attrs.width_enabled);
    }
  }
}

TEST(NetFile, ErrorsNameFileAndLine) {
  EXPECT_EQ(parse_err(""), "t.net:1: empty topology file");
  EXPECT_NE(parse_err("Switch 8 \"a\"\n[9] \"b\"[1]\n").find("t.net:2: port 9 > the 8 ports"),
            std::string::npos);
  EXPECT_NE(parse_err("Switch 8 \"a\"\n[1] \"b\"[1]\n")
                .find("t.net:2: \"a\" port 1 names an unknown node \"b\""),
            std::string::npos);
  EXPECT_NE(parse_err("Switch x \"a\"\n").find("t.net:1: expected a port count"),
            std::string::npos);
  EXPECT_NE(parse_err("Switch 300 \"a\"\n").find("t.net:1:"), std::string::npos);
  EXPECT_NE(parse_err("Switch 4 \"a\n").find("t.net:1: expected \"nodeid\""), std::string::npos);
  EXPECT_NE(parse_err("[1] \"a\"[1]\n").find("t.net:1: port line outside a node record"),
            std::string::npos);
  EXPECT_NE(parse_err("Switch 4 \"a\"\n[1] \"a\"[2]\n[2] \"a\"[3]\n").find("t.net:"),
            std::string::npos);
  EXPECT_NE(parse_err("Switch 4 \"a\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n[1] \"a\"[2]\n")
                .find("t.net:5: \"b\" (0x0000000000100000) port 1 is already linked"),
            std::string::npos);
  EXPECT_NE(parse_err("Switch 4 \"a\"\n\nSwitch 4 \"a\"\n").find("t.net:3: duplicate node name"),
            std::string::npos);
  EXPECT_NE(parse_err("hello world\n").find("t.net:1: unrecognised line"), std::string::npos);
  EXPECT_NE(parse_err("include \"x.net\"\n").find("not supported"), std::string::npos);
  EXPECT_NE(parse_err("Switch 4 \"a\"\n[1] \"b\"[1] x=3\n\nCa 1 \"b\"\n[1] \"a\"[1]\n")
                .find("t.net:2: bad port option"),
            std::string::npos);
  EXPECT_NE(parse_err(std::string("Switch 4 \"a\"\n\0\n", 15)).find("NUL"), std::string::npos);
  // A link listed on one side only, in a net file.
  EXPECT_NE(parse_err("Switch 4 \"a\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n")
                .find("t.net:2: link to \"b\"[1] is not listed"),
            std::string::npos);
  // ibnetdiscover dumps need GUIDs.
  EXPECT_NE(parse_topology("Switch 4 \"a\"\n", "d.txt", TopologyFormat::kIbnetdiscover)
                .error()
                .message.find("no GUID"),
            std::string::npos);
}

TEST(NetFile, TruncatedFilesFailCleanlyOrParse) {
  std::string text;
  {
    std::ifstream in(kData + "/ibnetdiscover_dump.txt");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  ASSERT_GT(text.size(), 100u);
  int parsed = 0, refused = 0;
  for (size_t cut = 0; cut < text.size(); cut += 7) {
    auto f = parse_topology(text.substr(0, cut), "cut.txt");
    if (f) {
      ++parsed;
      // Whatever parsed is self-consistent: every link is symmetric.
      for (const auto& l : f->links()) EXPECT_EQ(f->node(l.b).ports[l.pb].peer, l.a);
    } else {
      ++refused;
      EXPECT_EQ(f.error().message.rfind("cut.txt:", 0), 0u) << f.error().message;
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(NetFile, GarbageNeverCrashes) {
  // A small mutation fuzzer over a valid file: flips, inserts and deletes bytes.
  std::string base =
      "Switch 8 \"s\" # \"sw\" lid 3\n[1] \"h\"[1] w=2 s=1\n[2] \"s2\"[2]\n\nSwitch 4 \"s2\"\n[2] "
      "\"s\"[2]\n\n"
      "caguid=0x10\nCa 1 \"h\"\n[1](11) \"s\"[1] # lid 4 lmc 0 \"sw\" lid 3 4xEDR\n";
  ASSERT_TRUE(parse_topology(base, "f.net"));
  std::mt19937 rng(42);
  const std::string alphabet = "[]()\"#=0123456789xabcdefSwitchCa \n\t";
  for (int i = 0; i < 20000; ++i) {
    const std::string s = weft::testing::mutate(base, alphabet, rng);
    auto f = parse_topology(s, "f.net");
    if (!f) {
      EXPECT_EQ(f.error().message.rfind("f.net:", 0), 0u) << f.error().message;
    }
  }
}
