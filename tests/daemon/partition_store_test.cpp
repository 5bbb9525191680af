#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "weft/daemon/partition_store.hpp"
#include "weft/qos/partitions.hpp"
#include "weft/simulator/generators.hpp"

using namespace weft;
using namespace weft::daemon;

namespace {

std::string scratch(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("weft-pstore-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

RestPartitions sample() {
  RestPartitions r;
  RestPartition& a = r[0x0a12];
  a.pkey = 0x0a12;
  a.name = "jobs";
  a.ipoib = true;
  a.flags.mtu = 5;
  a.flags.sl = 2;
  a.members[0x0002c903000e0b72] = {config::Membership::kFull, true};
  a.members[0x0002c903000e0b73] = {config::Membership::kLimited, false};
  a.members[0x0200000000000001] = {config::Membership::kBoth, false};  // not on a fabric yet
  RestPartition& b = r[0x0005];
  b.pkey = 0x0005;
  b.name = "empty";
  return r;
}

}  // namespace

TEST(PartitionStore, WhatIsWrittenReadsBackAsOpenSmGrammar) {
  const RestPartitions want = sample();
  const std::string text = PartitionStore::render(want);
  // OpenSM's grammar: the index0 members in a definition of their own.
  EXPECT_NE(text.find("jobs=0x0a12,ipoib,mtu=5,sl=2 :\n    0x0002c903000e0b73=limited,\n    "
                      "0x0200000000000001=both\n;"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("jobs=0x0a12,ipoib,mtu=5,sl=2,indx0 :\n    0x0002c903000e0b72=full\n;"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("empty=0x0005 : NONE ;"), std::string::npos) << text;
  auto back = PartitionStore::parse(text, "p.conf");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, want);
  // The admin's own tool reads it too.
  auto pol = config::parse_partitions(text, "p.conf");
  ASSERT_TRUE(pol) << pol.error().message;
  EXPECT_EQ(pol->partitions.size(), 2u);
}

TEST(PartitionStore, CommitIsOnDiskAndSurvivesAReopen) {
  const std::string d = scratch("commit");
  const std::string path = d + "/partitions.rest.conf";
  auto s = PartitionStore::open(path, std::nullopt);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->generation(), 1u);
  RestPartitions next = sample();
  next[0x0005].name.clear();  // a name is made for the file
  auto g = s->commit(next);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(*g, 2u);
  EXPECT_EQ(s->partitions().at(0x0005).name, "pkey_0x0005");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  auto again = PartitionStore::open(path, std::nullopt);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->partitions(), s->partitions());
  EXPECT_EQ(again->generation(), 2u);
  std::filesystem::remove_all(d);
}

TEST(PartitionStore, MergedKeepsTheFilesDefinitionFirst) {
  auto file = config::parse_partitions(
      "Default=0x7fff : ALL=full ;\njobs=0x0a12,ipoib : 0x0002c903000e0b99=full ;\n", "admin.conf");
  ASSERT_TRUE(file);
  auto s = PartitionStore::open(scratch("merge") + "/rest.conf", *file);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->commit(sample()));
  EXPECT_EQ(s->defined_by_file(0x0a12), std::optional<std::string>("admin.conf:2"));
  auto m = s->merged();
  ASSERT_TRUE(m);
  const auto* jobs = m->find(0x0a12);
  ASSERT_NE(jobs, nullptr);
  EXPECT_EQ(jobs->where, "admin.conf:2");
  ASSERT_EQ(jobs->members.size(), 4u);  // the file's, then REST's
  EXPECT_EQ(jobs->members[0].guid, Guid{0x0002c903000e0b99});
  EXPECT_TRUE(jobs->members[1].indx0);
  ASSERT_NE(m->find(0x0005), nullptr);
}

TEST(PartitionStore, BadInputIsRefusedAndNothingWritten) {
  const std::string d = scratch("bad");
  auto s = PartitionStore::open(d + "/rest.conf", std::nullopt);
  ASSERT_TRUE(s);
  RestPartitions bad = sample();
  bad[0x0a12].name = "two words";
  auto r = s->commit(bad);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("partition name \"two words\""), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(d + "/rest.conf"));
  EXPECT_EQ(s->generation(), 1u);
  // A hand-broken file is an error naming its line.
  std::ofstream(d + "/broken.conf") << "jobs=0x0a12 : ALL=full ;\n";
  auto b = PartitionStore::open(d + "/broken.conf", std::nullopt);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("broken.conf:1: a REST partition's members are port GUIDs"),
            std::string::npos);
}

TEST(PartitionStore, PkeysAndGuidsAsClientsWriteThem) {
  EXPECT_EQ(parse_pkey("0x0a12"), 0x0a12);
  EXPECT_EQ(parse_pkey("0xA12"), 0x0a12);
  EXPECT_EQ(parse_pkey("a12"), 0x0a12);
  EXPECT_EQ(parse_pkey("0x8a12"), 0x0a12);  // the full-member bit is no part of the key
  EXPECT_EQ(parse_pkey("2578"), 0x0a12);
  EXPECT_FALSE(parse_pkey("0x0"));
  EXPECT_FALSE(parse_pkey("0x8000"));
  EXPECT_FALSE(parse_pkey("0x1ffff"));
  EXPECT_FALSE(parse_pkey("pkey"));
  EXPECT_EQ(parse_port_guid("0002c903000e0b72"), Guid{0x0002c903000e0b72});
  EXPECT_EQ(parse_port_guid("0x0002C903000E0B72"), Guid{0x0002c903000e0b72});
  EXPECT_EQ(parse_port_guid("00:02:c9:03:00:0e:0b:72"), Guid{0x0002c903000e0b72});
  EXPECT_EQ(parse_port_guid("00000002c903000e0b72"), Guid{0x0002c903000e0b72});  // 20 digits
  EXPECT_FALSE(parse_port_guid("10000002c903000e0b72"));
  EXPECT_FALSE(parse_port_guid("2c903000e0b72"));  // too short
  EXPECT_FALSE(parse_port_guid("0000000000000000"));
  EXPECT_FALSE(parse_port_guid("0002c903000e0b7g"));
}

// Without partition_config_file every end port is a full Default member; a partition
// made over REST must leave that so (OpenSM's rule for a file would make them limited).
TEST(PartitionStore, RestPartitionsWithoutAFileKeepTheDefaultFull) {
  auto s = PartitionStore::open(scratch("default") + "/rest.conf", std::nullopt);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->merged());  // nothing at all: no policy
  auto f = *simulator::make_fabric("ft2:leaves=2,spines=1,hosts=2");
  Guid host;
  for (const auto& n : f.nodes()) {
    if (!n.is_switch()) host = n.ports[1].guid;
  }
  RestPartitions next;
  next[0x0a12].pkey = 0x0a12;
  next[0x0a12].members[host.value] = {config::Membership::kFull, true};
  ASSERT_TRUE(s->commit(next));
  auto pol = s->merged();
  ASSERT_TRUE(pol);
  auto plan = qos::plan_partitions(&*pol, f, Guid{0});
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    const PortNum p = nd.is_switch() ? 0 : 1;
    const auto& keys = plan.pkeys[n][p];
    EXPECT_NE(std::find(keys.begin(), keys.end(), 0xffff), keys.end()) << nd.description;
    if (nd.ports[p].guid == host) {
      EXPECT_EQ(keys.front(), 0x8a12);
    }
  }
}
