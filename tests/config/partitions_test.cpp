#include <gtest/gtest.h>

#include <random>

#include "../fuzz.hpp"
#include "weft/config/options.hpp"
#include "weft/config/partitions.hpp"

using namespace weft;
using namespace weft::config;
using K = MemberSpec::Kind;

namespace {
PartitionPolicy parse_ok(const std::string& text) {
  auto r = parse_partitions(text, "p.conf");
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : PartitionPolicy{};
}
std::string parse_err(const std::string& text) {
  auto r = parse_partitions(text, "p.conf");
  EXPECT_FALSE(r) << "accepted: " << text;
  return r ? "" : r.error().message;
}
}  // namespace

// The examples of OpenSM's own documentation, comments and odd spacing included.
TEST(Partitions, ReadsOpenSmsDocumentedExamples) {
  auto pol = parse_ok(R"(# partitions.conf
Default=0x7fff : ALL, SELF=full ;
Default=0x7fff : ALL, ALL_SWITCHES=full, SELF=full ;

NewPartition , ipoib : 0x123456=full, 0x3456789034=limi, 0x2134af2306 ;

YetAnotherOne = 0x300 : SELF=full ;
YetAnotherOne = 0x300 : ALL=limited ;

ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;
# 0x123453, 0x123454 will be limited
ShareIO = 0x80 : 0x123453, 0x123454, 0x123455=full;
ShareIO = 0x80 , defmember=full : 0x12345b, 0x12345c=limited, 0x12345d;

# multicast groups added to default
Default=0x7fff,ipoib:
        mgid=ff12:401b::0707,sl=1 # random IPv4 group
        mgid=ff12:601b::16    # MLDv2-capable routers
        mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2 # random group
        ALL=full;
  Storage  =  0x8002 ,  ipoib , mtu = 5 , rate=7 , indx0 :
      0x0002c90300001001 = both ,
      NONE ;
)");
  ASSERT_EQ(pol.partitions.size(), 5u);
  const auto* def = pol.find(0x7fff);
  ASSERT_TRUE(def);
  EXPECT_EQ(def->name, "Default");
  EXPECT_EQ(def->where, "p.conf:2");
  EXPECT_TRUE(def->ipoib);  // merged from the later definition
  ASSERT_EQ(def->members.size(), 6u);
  EXPECT_EQ(def->members[0].kind, K::kAll);
  EXPECT_EQ(def->members[0].membership, Membership::kLimited);
  EXPECT_EQ(def->members[1].kind, K::kSelf);
  EXPECT_EQ(def->members[1].membership, Membership::kFull);
  EXPECT_EQ(def->members[5].membership, Membership::kFull);
  EXPECT_EQ(def->members[5].line, 20);
  ASSERT_EQ(def->groups.size(), 3u);
  // IP groups get the partition's P_Key (full bit set) and the IPoIB Q_Key.
  EXPECT_EQ(mgid_str(def->groups[0].mgid), "ff12:401b:ffff::707");
  EXPECT_EQ(def->groups[0].flags.sl, 1);
  EXPECT_EQ(def->groups[0].flags.qkey, 0x0b1bu);
  EXPECT_EQ(def->groups[2].flags.qkey, 0xDEADBEEFu);
  EXPECT_EQ(def->groups[2].flags.mtu, 2);

  const auto* np = pol.find(0x0001);  // no P_Key given: the lowest unused
  ASSERT_TRUE(np);
  EXPECT_EQ(np->name, "NewPartition");
  EXPECT_TRUE(np->ipoib);
  EXPECT_EQ(np->members[1].membership, Membership::kLimited);  // "limi"
  EXPECT_EQ(np->members[1].guid.value, 0x3456789034ull);

  const auto* share = pol.find(0x80);
  ASSERT_TRUE(share);
  ASSERT_EQ(share->members.size(), 8u);
  EXPECT_EQ(share->members[0].membership, Membership::kFull);     // defmember=full
  EXPECT_EQ(share->members[2].membership, Membership::kLimited);  // that line has no defmember
  EXPECT_EQ(share->members[4].membership, Membership::kFull);
  EXPECT_EQ(share->members[6].membership, Membership::kLimited);  // =limited beats defmember

  const auto* st = pol.find(0x0002);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->name, "Storage");
  EXPECT_TRUE(st->indx0);
  EXPECT_EQ(st->flags.mtu, 5);
  EXPECT_EQ(st->flags.rate, 7);
  ASSERT_EQ(st->members.size(), 1u);  // NONE adds nobody
  EXPECT_EQ(st->members[0].membership, Membership::kBoth);
  // The P_Key given without a name, and the generated one, are reported.
  bool gen_warned = false;
  for (const auto& w : pol.warnings)
    gen_warned |= w.find("has no P_Key: 0x0001") != std::string::npos;
  EXPECT_TRUE(gen_warned);
}

TEST(Partitions, LenientWhereOpenSmIsWithAWarning) {
  auto pol = parse_ok("0x10, colour=blue : 0x1=fuul, 0x2\n");
  ASSERT_EQ(pol.partitions.size(), 1u);
  EXPECT_EQ(pol.partitions[0].pkey, 0x10);  // a bare number is the P_Key
  EXPECT_EQ(pol.partitions[0].name, "");
  ASSERT_EQ(pol.warnings.size(), 3u);
  EXPECT_EQ(pol.warnings[0],
            "p.conf:1: definition not closed with ';' at the end of the file (taken as is)");
  EXPECT_EQ(pol.warnings[1],
            "p.conf:1: unknown partition flag \"colour\" ignored (as OpenSM ignores it)");
  EXPECT_EQ(pol.warnings[2],
            "p.conf:1: membership \"fuul\" of 0x1 is not full, limited or both: limited (as "
            "OpenSM assumes)");
}

TEST(Partitions, BrokenFilesAreRefusedWithFileLineAndWhat) {
  EXPECT_EQ(parse_err("Default 0x7fff ALL;\n"),
            "p.conf:1: no partition definition: expected NAME[=PKEY][,flags] : members ; got "
            "\"Default 0x7fff ALL\"");
  EXPECT_EQ(parse_err("A=0x0 : ALL;"), "p.conf:1: P_Key 0x0 is the invalid P_Key (low 15 bits 0)");
  EXPECT_EQ(parse_err("A=0x8000 : ALL;"),
            "p.conf:1: P_Key 0x8000 is the invalid P_Key (low 15 bits 0)");
  EXPECT_EQ(parse_err("A=0x1ffff : ALL;"),
            "p.conf:1: P_Key \"0x1ffff\" is not a number 0x0001-0x7fff");
  EXPECT_EQ(parse_err("A=12a : ALL;"), "p.conf:1: P_Key \"12a\" is not a number 0x0001-0x7fff");
  EXPECT_EQ(parse_err("\n\nA=1 :\n  0x12,\n  nodeX=full;"),
            "p.conf:5: \"nodeX\" is not a port GUID (0x... or decimal, not 0) nor ALL, ALL_CAS, "
            "ALL_SWITCHES, ALL_ROUTERS, SELF or NONE");
  EXPECT_EQ(parse_err("A=1 : 0x0;"),
            "p.conf:1: \"0x0\" is not a port GUID (0x... or decimal, not 0) nor ALL, ALL_CAS, "
            "ALL_SWITCHES, ALL_ROUTERS, SELF or NONE");
  EXPECT_EQ(parse_err("A=1,mtu=9 : ALL;"),
            "p.conf:1: flag \"mtu\" wants an IBTA MTU code 1-5 (4 = 2048), got \"9\"");
  EXPECT_EQ(parse_err("A=1,sl : ALL;"), "p.conf:1: flag \"sl\" wants an SL 0-15, got \"\"");
  EXPECT_EQ(parse_err("A=1,defmember=most : ALL;"),
            "p.conf:1: defmember wants full, limited or both, got \"most\"");
  EXPECT_EQ(parse_err("A=1 : defmember=limited : 0x1;"),
            "p.conf:1: unexpected ':' in the member list (\"defmember=limited : 0x1\")");
  EXPECT_EQ(parse_err("A=1,ipoib :\n mgid=fe80::1\n ALL;"),
            "p.conf:2: mgid \"fe80::1\" is not a multicast GID (ff..:...)");
  EXPECT_EQ(parse_err("A=0x10,ipoib :\n mgid=ff12:401b:8011::1\n ALL;"),
            "p.conf:2: IP multicast group ff12:401b:8011::1 carries P_Key 0x8011, not its "
            "partition's 0x0010");
  EXPECT_EQ(parse_err("A=0x10,ipoib :\n mgid=ff12:401b::1,mtu=5\n ALL;"),
            "p.conf:2: IP multicast group ff12:401b::1 must have its partition's rate and mtu (3, "
            "4)");
  // Several errors: all of them.
  EXPECT_EQ(parse_err("A=1 : x;\nB=2 : y;\n"),
            "p.conf:1: \"x\" is not a port GUID (0x... or decimal, not 0) nor ALL, ALL_CAS, "
            "ALL_SWITCHES, ALL_ROUTERS, SELF or NONE\n"
            "p.conf:2: \"y\" is not a port GUID (0x... or decimal, not 0) nor ALL, ALL_CAS, "
            "ALL_SWITCHES, ALL_ROUTERS, SELF or NONE");
  EXPECT_EQ(load_partitions("/no/such/partitions.conf").error().code, Errc::kIo);
}

// Mutations of a valid file either parse or fail with a located message; never crash.
TEST(Partitions, FuzzedFilesParseOrFailCleanly) {
  const std::string base =
      "Default=0x7fff,ipoib,rate=3:\n mgid=ff12:401b::16,sl=1\n ALL=full, SELF=full;\n"
      "Storage=0x8002,indx0,defmember=both : 0x0002c90300001001=limited, ALL_CAS ;\n";
  std::mt19937 rng(7);
  int ok = 0, bad = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string s = weft::testing::mutate(base, "=,:;#x0f \n\tALSF", rng);
    auto r = parse_partitions(s, "f.conf");
    if (r) {
      ++ok;
      for (const auto& p : r->partitions) EXPECT_NE(p.pkey & 0x7fff, 0);
    } else {
      ++bad;
      EXPECT_EQ(r.error().message.rfind("f.conf:", 0), 0u) << r.error().message;
    }
  }
  EXPECT_GT(ok, 100);
  EXPECT_GT(bad, 100);
}

// Mutated opensm.conf lines: parse or fail with file:line, never crash.
TEST(Options, FuzzedConfigFilesParseOrFailCleanly) {
  const std::string base =
      "lmc 0\nqos TRUE\nqos_sl2vl 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7\nqos_vlarb_high 0:4,1:0\n"
      "routing_engine ftree,updn\nperfmgr FALSE\npart_enforce both\n";
  std::mt19937 rng(11);
  int ok = 0, bad = 0;
  for (int i = 0; i < 4000; ++i) {
    Values v = defaults();
    auto r = load_text(weft::testing::mutate(base, " ,:0x7F#\n-", rng), "o.conf", v);
    if (r)
      ++ok;
    else {
      ++bad;
      EXPECT_EQ(r.error().message.rfind("o.conf:", 0), 0u) << r.error().message;
    }
  }
  EXPECT_GT(ok, 100);
  EXPECT_GT(bad, 100);
}
