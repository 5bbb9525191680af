#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "weft/config/options.hpp"

using namespace weft;
using namespace weft::config;

TEST(Options, DefaultsFollowTheTable) {
  Values v = defaults();
  EXPECT_EQ(v.get_int("max_wire_smps"), 64);
  EXPECT_EQ(v.get_int("transaction_timeout"), 200);
  EXPECT_EQ(v.get_str("routing_engine"), "minhop");
  EXPECT_EQ(v.origin("lmc"), "default");
}

TEST(Options, ReadsOpenSmStyleFiles) {
  Values v = defaults();
  auto r = load_text(
      "# weft.conf\n\n  max_wire_smps   64   # more on the wire\ntransaction_timeout 50\nlog_file "
      "(null)\n",
      "weft.conf", v);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(v.get_int("max_wire_smps"), 64);
  EXPECT_EQ(v.get_int("transaction_timeout"), 50);
  EXPECT_EQ(v.get_str("log_file"), "");
  EXPECT_EQ(v.origin("max_wire_smps"), "weft.conf:3");
}

TEST(Options, ErrorsNameFileLineAndWhat) {
  Values v = defaults();
  EXPECT_EQ(load_text("max_wire_smps 16\nno_such_option 1\n", "a.conf", v).error().message,
            "a.conf:2: unknown option \"no_such_option\"");
  EXPECT_EQ(load_text("sweep_intervall 3\n", "a.conf", v).error().message,
            "a.conf:1: unknown option \"sweep_intervall\" (did you mean \"sweep_interval\"?)");
  EXPECT_EQ(load_text("lmc 9\n", "a.conf", v).error().message, "a.conf:1: lmc = 9 is outside 0..7");
  EXPECT_EQ(load_text("lmc x\n", "a.conf", v).error().message,
            "a.conf:1: lmc wants an integer, got \"x\"");
  EXPECT_EQ(load_text("sweep_interval\n", "a.conf", v).error().message,
            "a.conf:1: \"sweep_interval\" has no value");
  EXPECT_EQ(load_text("lmc 1 2\n", "a.conf", v).error().message,
            "a.conf:1: lmc wants an integer, got \"1 2\"");
  EXPECT_NE(load_text("guid zz\n", "a.conf", v)
                .error()
                .message.find("a.conf:1: guid wants a 64-bit number"),
            std::string::npos);
  EXPECT_EQ(load_file("/no/such/weft.conf", v).error().code, Errc::kIo);
}

TEST(Options, EveryErrorOfAFileIsReported) {
  Values v = defaults();
  auto r = load_text("lmc 9\nsweep_interval 5\nqos maybe\nbogus 1\n", "b.conf", v);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "b.conf:1: lmc = 9 is outside 0..7\n"
            "b.conf:3: qos wants TRUE or FALSE, got \"maybe\"\n"
            "b.conf:4: unknown option \"bogus\"");
}

TEST(Options, OpenSmOnlyOptionsAreKnownAndReportedWhenTheyWouldMatter) {
  Values v = defaults();
  auto r = load_text(
      "subnet_prefix 0xfe80000000000000\n"  // OpenSM's default: no effect either way
      "local_phy_errors_threshold 0x8\n"    // = 0x08, OpenSM's default written otherwise
      "perfmgr_redir FALSE\n"               // not implemented, and asked for: reported
      "log_prefix (null)\n"                 // how OpenSM writes an empty string
      "sm_sl 0\n",
      "opensm.conf", v);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(v.opensm_defaults_seen(), 4u);
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_EQ(v.warnings()[0],
            "opensm.conf:3: OpenSM option \"perfmgr_redir\" is not implemented by weft; \"FALSE\" "
            "has no effect (OpenSM's default is \"TRUE\")");
}

// An opensm.conf written for NVIDIA's SM loads: its engine names route as their static
// engines, its own options are known, counted at their defaults and reported otherwise.
TEST(Options, AnOpensmConfOfNvidiasSmLoads) {
  Values v = defaults();
  auto r = load_text(
      "routing_engine ar_updn\n"
      "ar_mode 1\n"                 // no public default: reported
      "ar_transport_mask 0x000A\n"  // its default, written as NVIDIA's examples do
      "shield_mode 1\n"             // no public default: reported
      "sa_etm_max_num_mcgs 0\n"     // its default
      "hm_num_reboots 10\n"         // its default
      "max_seq_redisc 8\n"          // another value: reported
      "sm_sl 0\n",                  // OpenSM's own, its default
      "opensm.conf", v);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(v.get_str("routing_engine"), "ar_updn");
  EXPECT_EQ(v.opensm_defaults_seen(), 4u);
  ASSERT_EQ(v.warnings().size(), 3u);
  EXPECT_EQ(
      v.warnings()[0],
      "opensm.conf:2: option \"ar_mode\" of NVIDIA's SM is not implemented by weft; \"1\" has "
      "no effect");
  EXPECT_EQ(v.warnings()[2],
            "opensm.conf:7: option \"max_seq_redisc\" of NVIDIA's SM is not implemented by weft; "
            "\"8\" has no effect (NVIDIA's default is \"4\")");
  // A misspelt one is still an error, and the suggestion knows NVIDIA's names.
  auto bad = load_text("virt_enable 2\n", "opensm.conf", v);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("virt_enabled"), std::string::npos) << bad.error().message;
}

TEST(Options, NvidiasOptionsAreNeitherWeftsNorOpenSmsAndAreListedOnce) {
  std::set<std::string_view> seen;
  for (const auto& o : nvidia_only_options()) {
    EXPECT_TRUE(seen.insert(o.name).second) << o.name << " twice";
    for (const auto& w : option_table()) EXPECT_NE(w.name, o.name) << "weft implements it";
    for (const auto& f : opensm_only_options()) EXPECT_NE(f.name, o.name) << "OpenSM's own";
  }
  EXPECT_GT(seen.size(), 100u);
}

TEST(Options, MKeyOptionsAsOpenSmWritesThemAndTheirErrors) {
  Values v = defaults();
  // The lines `opensm -c` writes, with a key and a level set.
  ASSERT_TRUE(
      load_text("m_key 0x00000000deadbeef\nm_key_lease_period 60\n"
                "m_key_protection_level 2\nm_key_lookup TRUE\nm_key_per_port TRUE\n",
                "opensm.conf", v));
  EXPECT_EQ(v.get_str("m_key"), "0x00000000deadbeef");
  EXPECT_EQ(v.get_int("m_key_lease_period"), 60);
  EXPECT_EQ(v.get_int("m_key_protection_level"), 2);
  EXPECT_TRUE(v.get_bool("m_key_per_port"));
  EXPECT_TRUE(v.warnings().empty());
  EXPECT_THAT(load_text("m_key_protection_level 4\n", "o.conf", v).error().message,
              testing::StartsWith("o.conf:1: m_key_protection_level = 4"));
  EXPECT_EQ(load_text("m_key deadbeef\n", "o.conf", v).error().message,
            "o.conf:1: m_key wants a 64-bit number like 0x0002c90300001001, got \"deadbeef\"");
}

TEST(Options, TimersAsOpenSmWritesThem) {
  Values v = defaults();
  EXPECT_EQ(v.get_int("packet_life_time"), 0x12);
  EXPECT_EQ(v.get_int("leaf_head_of_queue_lifetime"), 0x10);
  ASSERT_TRUE(
      load_text("packet_life_time 0x13\nhead_of_queue_lifetime 0x14\n"
                "leaf_head_of_queue_lifetime 0x0f\nvl_stall_count 0x05\n"
                "leaf_vl_stall_count 0x03\n",
                "opensm.conf", v));
  EXPECT_EQ(v.get_int("packet_life_time"), 0x13);
  EXPECT_EQ(v.get_int("head_of_queue_lifetime"), 0x14);
  EXPECT_EQ(v.get_int("leaf_head_of_queue_lifetime"), 0x0f);
  EXPECT_EQ(v.get_int("vl_stall_count"), 5);
  EXPECT_EQ(v.get_int("leaf_vl_stall_count"), 3);
  EXPECT_TRUE(v.warnings().empty()) << v.warnings().front();
  EXPECT_EQ(v.opensm_defaults_seen(), 0u);
  EXPECT_THAT(load_text("vl_stall_count 8\n", "o.conf", v).error().message,
              testing::StartsWith("o.conf:1: vl_stall_count = 8"));
  EXPECT_THAT(load_text("head_of_queue_lifetime 0x20\n", "o.conf", v).error().message,
              testing::StartsWith("o.conf:1: head_of_queue_lifetime = 0x20 is outside 0..31"));
}

TEST(Options, NoClientsReregIsWeftsOwnNow) {
  Values v = defaults();
  EXPECT_FALSE(v.get_bool("no_clients_rereg"));
  ASSERT_TRUE(load_text("no_clients_rereg TRUE\n", "opensm.conf", v));
  EXPECT_TRUE(v.get_bool("no_clients_rereg"));
  EXPECT_TRUE(v.warnings().empty()) << v.warnings().front();
}

TEST(Options, BooleansAndQosLists) {
  Values v = defaults();
  ASSERT_TRUE(
      load_text("qos TRUE\nallow_both_pkeys false\nqos_high_limit -1\nqos_max_vls 0x8\n"
                "qos_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7\nqos_swe_vlarb_high 0:4, 1:0\n"
                "routing_engine (null)\n",
                "q.conf", v));
  EXPECT_TRUE(v.get_bool("qos"));
  EXPECT_FALSE(v.get_bool("allow_both_pkeys"));
  EXPECT_EQ(v.get_int("qos_high_limit"), -1);
  EXPECT_EQ(v.get_int("qos_max_vls"), 8);
  EXPECT_EQ(v.get_str("routing_engine"), "minhop");
  EXPECT_EQ(load_text("qos_sl2vl 0,1,2\n", "q.conf", v).error().message,
            "q.conf:1: qos_sl2vl: 3 entries, expected 16 (one VL per SL 0-15)");
  EXPECT_EQ(load_text("qos_ca_vlarb_low 0:4,16:1\n", "q.conf", v).error().message,
            "q.conf:1: qos_ca_vlarb_low: entry 2 \"16:1\": VL must be 0-14 and weight 0-255");
  EXPECT_EQ(load_text("qos_vlarb_low 0-4\n", "q.conf", v).error().message,
            "q.conf:1: qos_vlarb_low: entry 1 \"0-4\" is not VL:weight");
  EXPECT_EQ(load_text("part_enforce sometimes\n", "q.conf", v).error().message,
            "q.conf:1: part_enforce wants in, out, both or off, got \"sometimes\"");
  auto arb = parse_vlarb("0:4,1:0,2:255");
  ASSERT_TRUE(arb);
  EXPECT_EQ(arb->size(), 3u);
  EXPECT_EQ((*arb)[2], (VlArbEntry{2, 255}));
}
