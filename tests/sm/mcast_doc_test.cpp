// The multicast groups as a state-store document (issue 29, item 1): what text() writes
// parse() reads back whole (MLIDs, parameters, members, the SA's MGID count); a
// document that is not one is refused with the group and field named, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "weft/sm/multicast.hpp"

using namespace weft;
using namespace weft::sm;

namespace {

McDb sample() {
  McDb db;
  McGroup bcast;
  bcast.mgid = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  bcast.qkey = 0x0b1b;
  bcast.pkey = 0xffff;
  bcast.well_known = true;
  EXPECT_EQ(db.create(bcast, 64), 0xC000);
  McGroup made;
  made.qkey = 0x42;
  made.pkey = 0x8002;
  made.mtu = 5;
  made.sl = 3;
  made.flow_label = 0x12345;
  made.members = {{0x0002c90300001001ull, kJoinFull}, {0x0002c90300001002ull, kJoinSendOnlyNon}};
  EXPECT_EQ(db.create(made, 64), 0xC001);
  db.by_mlid(0xC000)->members[0x0002c90300001003ull] = kJoinFull | kJoinNon;
  return db;
}

}  // namespace

TEST(McastDoc, WhatIsWrittenIsReadBackWhole) {
  const McDb db = sample();
  const std::string text = db.text();
  auto back = McDb::parse(text, "mcast-groups");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(*back == db);
  EXPECT_EQ(back->text(), text);
  ASSERT_TRUE(back->groups().count(0xC001));
  EXPECT_EQ(back->groups().at(0xC001).members.size(), 2u);
  EXPECT_EQ(back->groups().at(0xC001).flow_label, 0x12345u);
  EXPECT_TRUE(back->groups().at(0xC000).well_known);
  // The SA's MGID counter came back too: the next group it makes gets a new MGID.
  McDb again = *back;
  McGroup g;
  g.members = {{0x0002c90300001001ull, kJoinFull}};
  const uint16_t mlid = *again.create(g, 64);
  EXPECT_EQ(mlid, 0xC002);  // the MLIDs in use stay taken
  EXPECT_NE(again.groups().at(mlid).mgid, back->groups().at(0xC001).mgid);
  // An empty database is a document too.
  auto none = McDb::parse(McDb().text(), "x");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->groups().empty());
}

TEST(McastDoc, BadDocumentsAreRefusedWithGroupAndField) {
  const std::string good = sample().text();
  auto err = [](const std::string& text) {
    auto r = McDb::parse(text, "mcast-groups");
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(err("not json"), "mcast-groups: not a JSON object");
  EXPECT_EQ(err("{\"groups\": []}"),
            "mcast-groups: not a weft multicast group document (weft_mcast_groups 1)");
  EXPECT_EQ(err("{\"weft_mcast_groups\": \"1\", \"groups\": []}"),
            "mcast-groups: not a weft multicast group document (weft_mcast_groups 1)");
  EXPECT_EQ(err("{\"weft_mcast_groups\": 1, \"made\": -1, \"groups\": []}"),
            "mcast-groups: made: not a count");
  EXPECT_EQ(err("{\"weft_mcast_groups\": 1, \"groups\": [{\"mgid\": 7}]}"),
            "mcast-groups: group 1: mgid: not a multicast GID");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  EXPECT_EQ(err(with("\"0xc001\"", "\"0x1234\"")),
            "mcast-groups: group 2: mlid: not a multicast LID (0xc000-0xfffe)");
  EXPECT_EQ(err(with("\"0xc001\"", "\"0xc000\"")), "mcast-groups: group 2: mlid 0xc000 used twice");
  EXPECT_EQ(err(with("\"sl\":3", "\"sl\":16")),
            "mcast-groups: group 2: sl: not a number up to 0xf");
  EXPECT_EQ(err(with("0x0002c90300001002:4", "0x0002c90300001002:0")),
            "mcast-groups: group 2: member 2: JoinState not 1-f after the colon");
  EXPECT_EQ(err(with("0x0002c90300001002:4", "0x0002c90300001002")),
            "mcast-groups: group 2: member 2: not \"PORTGUID:JOINSTATE\" (like "
            "\"0x0002c90300001001:1\")");
  EXPECT_EQ(err(with("0x0002c90300001002:4", "zz:4")),
            "mcast-groups: group 2: member 2: not a port GUID before the colon");
  EXPECT_EQ(err(with("0x0002c90300001002:4", "0x0002c90300001001:4")),
            "mcast-groups: group 2: member 2: port 0x0002c90300001001 listed twice");
  EXPECT_EQ(err(with("ff12:401b", "fe12:401b")),
            "mcast-groups: group 1: mgid: not a multicast GID");
  // Every prefix, and random bytes flipped: an answer, never a crash.
  for (size_t n = 0; n < good.size(); n += 7) (void)McDb::parse(good.substr(0, n), "x");
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string t = good;
    for (int k = 0; k < 3; ++k) t[rng() % t.size()] = char(rng() % 128);
    (void)McDb::parse(t, "x");
  }
}
