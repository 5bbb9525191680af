#include <gtest/gtest.h>

#include "weft/config/partitions.hpp"
#include "weft/qos/partitions.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/simulator/generators.hpp"

using namespace weft;
using namespace weft::qos;
using fabric::NodeIndex;

namespace {

// ft2 with 2 leaves x 2 hosts: the hosts' port GUIDs, in node order.
struct Small {
  fabric::Fabric f;
  std::vector<std::pair<NodeIndex, PortNum>> cas;
  NodeIndex sw = 0;
  Small() {
    f = *simulator::make_fabric("ft2:leaves=2,spines=1,hosts=2");
    for (NodeIndex n = 0; n < f.size(); ++n) {
      if (f.node(n).is_switch())
        sw = n;
      else
        cas.push_back({n, 1});
    }
  }
  Guid guid(size_t i) const { return f.node(cas[i].first).ports[1].guid; }
  const std::vector<uint16_t>& keys(const PartitionPlan& p, size_t i) const {
    return p.pkeys[cas[i].first][1];
  }
};

config::PartitionPolicy policy(const std::string& text) {
  auto r = config::parse_partitions(text, "p.conf");
  EXPECT_TRUE(r) << r.error().message;
  return *r;
}

}  // namespace

TEST(PartitionPlan, WithoutAFileEveryEndPortIsAFullDefaultMember) {
  Small s;
  auto plan = plan_partitions(nullptr, s.f, s.guid(0));
  for (size_t i = 0; i < s.cas.size(); ++i)
    EXPECT_EQ(s.keys(plan, i), std::vector<uint16_t>{0xffff});
  EXPECT_EQ(plan.pkeys[s.sw][0], std::vector<uint16_t>{0xffff});  // switch port 0 too
  EXPECT_TRUE(plan.pkeys[s.sw][1].empty());                       // not an end port
  ASSERT_EQ(plan.partitions.size(), 1u);
  EXPECT_TRUE(plan.partitions[0].ipoib);  // OpenSM's IPv4 broadcast group
  EXPECT_TRUE(plan.share_partition(s.cas[1].first, 1, s.cas[2].first, 1));
}

TEST(PartitionPlan, WithAFileOthersAreLimitedDefaultMembersAndTheSmFull) {
  Small s;
  auto pol = policy("Storage=0x8002 : " + s.guid(1).str() + "=full, " + s.guid(2).str() + ";\n");
  auto plan = plan_partitions(&pol, s.f, s.guid(0));
  EXPECT_EQ(s.keys(plan, 0), std::vector<uint16_t>{0xffff});  // SELF
  EXPECT_EQ(s.keys(plan, 1), (std::vector<uint16_t>{0x7fff, 0x8002}));
  EXPECT_EQ(s.keys(plan, 2), (std::vector<uint16_t>{0x7fff, 0x0002}));
  EXPECT_EQ(s.keys(plan, 3), std::vector<uint16_t>{0x7fff});
  // Limited members talk only to full members.
  EXPECT_TRUE(plan.share_partition(s.cas[0].first, 1, s.cas[3].first, 1));   // via Default
  EXPECT_FALSE(plan.share_partition(s.cas[2].first, 1, s.cas[3].first, 1));  // both limited
  EXPECT_EQ(plan.common_pkey(s.cas[1].first, 1, s.cas[2].first, 1, 0x8002), 0x8002);
  EXPECT_FALSE(plan.common_pkey(s.cas[2].first, 1, s.cas[3].first, 1, 0x0002));
  EXPECT_FALSE(plan.partitions[0].ipoib);
  EXPECT_EQ(plan.partitions[1].full_members, 1u);
  EXPECT_EQ(plan.partitions[1].limited_members, 1u);
}

TEST(PartitionPlan, KeywordsBothIndx0AndUnknownGuids) {
  Small s;
  auto pol = policy(
      "Default=0x7fff : ALL_CAS=full ;\n"
      "Sw=0x10 : ALL_SWITCHES=full ;\n"
      "Two=0x20, indx0 : " +
      s.guid(3).str() + "=both, 0x99 ;\n");
  auto plan = plan_partitions(&pol, s.f, s.guid(0));
  EXPECT_EQ(s.keys(plan, 1), std::vector<uint16_t>{0xffff});
  // indx0 puts its key first; =both without allow_both_pkeys is full only.
  EXPECT_EQ(s.keys(plan, 3), (std::vector<uint16_t>{0x8020, 0xffff}));
  EXPECT_EQ(plan.pkeys[s.sw][0], (std::vector<uint16_t>{0x7fff, 0x8010}));
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_EQ(plan.warnings[0],
            "p.conf:3: port GUID 0x0000000000000099 is not an end port of the fabric (yet)");
  auto both = plan_partitions(&pol, s.f, s.guid(0), {.allow_both_pkeys = true});
  // The built-in limited Default membership and ALL_CAS=full: both keys.
  EXPECT_EQ(s.keys(both, 3), (std::vector<uint16_t>{0x8020, 0x0020, 0x7fff, 0xffff}));
}

// indx0 belongs to the definition that says it, as in OpenSM: of one P_Key split over
// two definitions, only the indx0 one's members take the key at index 0.
TEST(PartitionPlan, Indx0IsPerDefinition) {
  Small s;
  auto pol = policy(
      "Default=0x7fff : ALL_CAS=full ;\n"
      "Jobs=0x30 : " +
      s.guid(1).str() +
      "=full ;\n"
      "Jobs=0x30, indx0 : " +
      s.guid(2).str() + "=full ;\n");
  auto plan = plan_partitions(&pol, s.f, s.guid(0));
  EXPECT_EQ(s.keys(plan, 1), (std::vector<uint16_t>{0xffff, 0x8030}));
  EXPECT_EQ(s.keys(plan, 2), (std::vector<uint16_t>{0x8030, 0xffff}));
  ASSERT_EQ(pol.partitions.size(), 2u);
  EXPECT_TRUE(pol.partitions[1].indx0);  // the merged partition says some member has it
  EXPECT_FALSE(pol.partitions[1].members[0].indx0);
  EXPECT_TRUE(pol.partitions[1].members[1].indx0);
}

TEST(PkeyLayout, KeepsIndexesAndReportsWhatDoesNotFit) {
  // The index-0 key always goes first.
  auto a = layout_pkeys({0xffff, 0x8002, 0x0003}, {}, 4, true);
  EXPECT_EQ(a.table, (std::vector<uint16_t>{0xffff, 0x8002, 0x0003, 0}));
  // Keys the port already holds stay where they are (membership may change).
  auto b = layout_pkeys({0xffff, 0x8002, 0x0003}, {0xffff, 0, 0x0003, 0x0002}, 4, true);
  EXPECT_EQ(b.table, (std::vector<uint16_t>{0xffff, 0, 0x0003, 0x8002}));
  // Without keep_pkey_indexes: packed.
  auto c = layout_pkeys({0xffff, 0x8002, 0x0003}, {0xffff, 0, 0x0003, 0x0002}, 4, false);
  EXPECT_EQ(c.table, (std::vector<uint16_t>{0xffff, 0x8002, 0x0003, 0}));
  // A key held elsewhere than 0 but wanted at 0 moves to 0; a stale key goes.
  auto d = layout_pkeys({0x8005, 0xffff}, {0x7777, 0x8005}, 2, true);
  EXPECT_EQ(d.table, (std::vector<uint16_t>{0x8005, 0xffff}));
  auto e = layout_pkeys({0xffff, 0x1, 0x2, 0x3}, {}, 2, true);
  EXPECT_EQ(e.table, (std::vector<uint16_t>{0xffff, 0x1}));
  EXPECT_EQ(e.dropped, (std::vector<uint16_t>{0x2, 0x3}));
}

TEST(VlTables, OpenSmDefaultsPerTypeOverridesAndMasking) {
  auto v = config::defaults();
  ASSERT_TRUE(
      config::load_text("qos TRUE\nqos_high_limit 3\nqos_swe_high_limit 9\n"
                        "qos_ca_sl2vl 0,0,1,1,2,2,3,3,4,4,5,5,6,6,7,15\n"
                        "qos_vlarb_low 0:32,1:32,2:64\n",
                        "q.conf", v));
  auto q = qos_from_options(v);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_TRUE(q->enabled);
  EXPECT_EQ(q->ca.high_limit, 3);
  EXPECT_EQ(q->swe.high_limit, 9);
  EXPECT_EQ(sl2vl_str(q->swe.sl2vl), "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7");  // OpenSM's default
  EXPECT_EQ(sl2vl_str(q->ca.sl2vl), "0,0,1,1,2,2,3,3,4,4,5,5,6,6,7,15");
  EXPECT_EQ(q->sw0.low.size(), 3u);
  EXPECT_EQ(q->sw0.high.size(), 15u);  // the default high table
  // 4 operational VLs (OperVLs 3): VLs masked with 3, VL 15 kept.
  EXPECT_EQ(sl2vl_str(port_sl2vl(q->ca, 3, 1)), "0,0,1,1,2,2,3,3,0,0,1,1,2,2,3,15");
  // A routing engine's 3 layers take SLs 0-2 to VLs 0-2.
  EXPECT_EQ(sl2vl_str(port_sl2vl(q->ca, 4, 3)), "0,1,2,1,2,2,3,3,4,4,5,5,6,6,7,15");
  auto blk = vlarb_block(q->ca.low, 0, 8, 2);  // 2 VLs: mask 1
  EXPECT_EQ(blk[2], (config::VlArbEntry{0, 64}));
  EXPECT_EQ(blk[3], (config::VlArbEntry{0, 0}));
  auto hi = vlarb_block(q->ca.high, 0, 2, 4);  // cap 2: the rest is zero
  EXPECT_EQ(hi[0], (config::VlArbEntry{0, 4}));
  EXPECT_EQ(hi[2], (config::VlArbEntry{0, 0}));
}
