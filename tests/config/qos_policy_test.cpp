#include <gtest/gtest.h>

#include <random>

#include "../fuzz.hpp"
#include "weft/config/qos_policy.hpp"

using namespace weft;
using namespace weft::config;

// OpenSM's documented example, every keyword, comments and indentation included.
TEST(QosPolicy, ReadsOpenSmsDocumentedExample) {
  auto pol = parse_qos_policy(R"(#
    port-groups
        port-group # using port GUIDs
            name: Storage
            use: SRP Targets
            port-guid: 0x10000000000001, 0x10000000000005-0x1000000000FFFA
            port-guid: 0x1000000000FFFF
        end-port-group
        port-group
            name: Virtual Servers
            port-name: vs1 HCA-1/P1, vs2 HCA-1/P1
        end-port-group
        port-group
            name: Partitions
            partition: Part1
            pkey: 0x1234
        end-port-group
        port-group
            name: CAs and SM
            node-type: CA, SELF
        end-port-group
    end-port-groups
    qos-setup
        # parsed and ignored
    end-qos-setup
    qos-levels
        qos-level
            name: DEFAULT
            use: default QoS Level
            sl: 0
        end-qos-level
        qos-level
            name: WholeSet
            sl: 1
            mtu-limit: 4
            rate-limit: 5
            pkey: 0x1234
            packet-life: 8
        end-qos-level
    end-qos-levels
    qos-match-rules
        qos-match-rule
            use: by QoS class
            qos-class: 7-9,11
            qos-level-name: WholeSet
        end-qos-match-rule
        qos-match-rule
            use: match by all parameters
            qos-class: 7-9,11
            source: Virtual Servers
            destination: Storage
            service-id: 0x0000000000010000-0x000000000001FFFF
            pkey: 0x0F00-0x0FFF
            qos-level-name: WholeSet
        end-qos-match-rule
    end-qos-match-rules
    qos-ulps
        default                       : 0 # default SL
        sdp, port-num 30000           : 0
        sdp                           : 1
        rds                           : 2
        iser, port-num 900            : 0
        ipoib, pkey 0x0001            : 0
        ipoib                         : 4
        any, service-id 0x6234        : 6
        srp, target-port-guid 0x1234  : 5
        any, target-port-guid 0x0ABC-0xFFFFF : 6
        any, source-port-guid 0x5678  : 7
    end-qos-ulps
)",
                              "qos-policy.conf");
  ASSERT_TRUE(pol) << pol.error().message;
  ASSERT_EQ(pol->groups.size(), 4u);
  EXPECT_EQ(pol->groups[0].port_guids.size(), 3u);
  EXPECT_EQ(pol->groups[1].port_names[1], "vs2 HCA-1/P1");
  EXPECT_EQ(pol->groups[3].node_types, PortGroup::kCa | PortGroup::kSelf);
  const auto* ws = pol->level("WholeSet");
  ASSERT_TRUE(ws);
  EXPECT_EQ(ws->sl, 1);
  EXPECT_EQ(ws->mtu_limit, 4);
  EXPECT_EQ(ws->packet_life, 8);
  ASSERT_EQ(pol->rules.size(), 2u);
  EXPECT_EQ(pol->rules[0].qos_classes.size(), 2u);
  ASSERT_EQ(pol->ulps.size(), 11u);
  EXPECT_EQ(pol->ulps[1].values[0].lo, 0x10000u + 30000);  // SDP: 0x1PPPP
  EXPECT_EQ(pol->ulps[3].values[0].lo, 0x10648CAu);        // RDS's default port
  EXPECT_EQ(pol->ulps[6].values[0].lo, 0x7fffu);           // IPoIB: the default P_Key
  EXPECT_EQ(pol->warnings.size(), 1u);                     // qos-setup: ignored
}

TEST(QosPolicy, BrokenFilesAreRefusedWithFileLine) {
  auto err = [](const std::string& text) {
    auto r = parse_qos_policy(text, "q.conf");
    EXPECT_FALSE(r) << text;
    return r ? std::string() : r.error().message;
  };
  EXPECT_EQ(err("qos-levelz\n"),
            "q.conf:1: unknown section \"qos-levelz\" (port-groups, qos-setup, qos-levels, "
            "qos-match-rules or qos-ulps)");
  EXPECT_EQ(
      err("qos-levels\n qos-level\n  name: DEFAULT\n  sl: 16\n end-qos-level\nend-qos-levels\n"),
      "q.conf:4: sl wants 0-15, got \"16\"");
  EXPECT_EQ(
      err("qos-levels\n qos-level\n  name: X\n  colour: blue\n end-qos-level\nend-qos-levels\n"),
      "q.conf:4: unknown qos-level key \"colour\"\n"
      "q.conf:1: no qos-level named DEFAULT (it applies to what no rule matches; OpenSM "
      "requires it)");
  EXPECT_EQ(err("qos-levels\n qos-level\n  name: DEFAULT\n end-qos-level\nend-qos-levels\n"
                "qos-match-rules\n qos-match-rule\n  source: Nobody\n  qos-level-name: Gold\n"
                " end-qos-match-rule\nend-qos-match-rules\n"),
            "q.conf:7: qos-level-name \"Gold\" names no qos-level\n"
            "q.conf:7: port group \"Nobody\" is not defined");
  EXPECT_EQ(err("qos-ulps\n default : 0\n"),
            "q.conf:1: section opened here is not closed by the end of the file");
  EXPECT_EQ(err("qos-ulps\n nfs : 2\nend-qos-ulps\n"),
            "q.conf:2: unknown ULP \"nfs\" (default, sdp, rds, iser, ipoib, srp or any)");
  EXPECT_EQ(err("qos-ulps\n any, pkey 0x1-0x0 : 2\nend-qos-ulps\n"),
            "q.conf:2: pkey \"0x1-0x0\" is not a number or range within 0-65535");
  EXPECT_EQ(load_qos_policy("/no/such/qos-policy.conf").error().code, Errc::kIo);
}

TEST(QosPolicy, FuzzedFilesParseOrFailWithALocation) {
  const std::string base =
      "port-groups\n port-group\n  name: S\n  port-guid: 0x10-0x20\n "
      "end-port-group\nend-port-groups\n"
      "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 1\n end-qos-level\nend-qos-levels\n"
      "qos-match-rules\n qos-match-rule\n  source: S\n  qos-level-name: DEFAULT\n"
      " end-qos-match-rule\nend-qos-match-rules\nqos-ulps\n any, pkey 0x1-0x5 : 3\nend-qos-ulps\n";
  std::mt19937 rng(3);
  int ok = 0, bad = 0;
  for (int i = 0; i < 3000; ++i) {
    auto r = parse_qos_policy(weft::testing::mutate(base, ":,-#x0 \nS", rng), "f.conf");
    if (r)
      ++ok;
    else {
      ++bad;
      EXPECT_EQ(r.error().message.rfind("f.conf:", 0), 0u) << r.error().message;
    }
  }
  EXPECT_GT(ok, 20);
  EXPECT_GT(bad, 20);
}
