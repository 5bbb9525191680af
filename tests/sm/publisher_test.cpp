// The publisher: sweep counts and durations, a version per collection that moves only
// when the collection changed, multicast groups shared between views while unchanged.
#include "weft/sm/publisher.hpp"

#include <gtest/gtest.h>

using namespace weft;
using namespace weft::sm;

namespace {

std::shared_ptr<Published> view(std::vector<McGroup> groups, mad::SmState state, uint16_t lid) {
  auto p = std::make_shared<Published>();
  p->multicast = std::make_shared<const std::vector<McGroup>>(std::move(groups));
  p->state = state;
  p->lid = Lid{lid};
  return p;
}

McGroup group(uint16_t mlid) {
  McGroup g;
  g.mlid = mlid;
  g.mgid[0] = 0xff;
  return g;
}

}  // namespace

TEST(Publisher, VersionsMoveOnlyWithTheirCollection) {
  Publisher pub;
  EXPECT_FALSE(pub.published());
  EXPECT_FALSE(pub.publish(view({group(0xc000)}, mad::SmState::kDiscovering, 0)));
  auto first = pub.published();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->versions.multicast, 0u);
  EXPECT_EQ(first->versions.sm, 0u);
  // The same groups: shared, no new version; the SM's state changed: sm moves.
  auto was = pub.publish(view({group(0xc000)}, mad::SmState::kMaster, 1));
  EXPECT_EQ(was, first);
  auto second = pub.published();
  EXPECT_EQ(second->multicast, first->multicast);
  EXPECT_EQ(second->versions.multicast, 0u);
  EXPECT_EQ(second->versions.sm, 1u);
  // A group joins: multicast moves; the SM is as it was: sm stays.
  pub.publish(view({group(0xc000), group(0xc001)}, mad::SmState::kMaster, 1));
  EXPECT_EQ(pub.published()->versions.multicast, 1u);
  EXPECT_EQ(pub.published()->versions.sm, 1u);
  // Fabric signatures: each collection moves when its own signature differs.
  pub.fabric_changed({1, 2, 3, 4});
  pub.fabric_changed({1, 2, 5, 4});
  pub.publish(view({group(0xc000), group(0xc001)}, mad::SmState::kMaster, 1));
  const auto& v = pub.published()->versions;
  EXPECT_EQ(v.nodes, 1u);
  EXPECT_EQ(v.ports, 1u);
  EXPECT_EQ(v.links, 2u);
  EXPECT_EQ(v.partitions, 1u);
  EXPECT_EQ(v.multicast, 1u);
}

TEST(Publisher, CountsAndTimesSweeps) {
  Publisher pub;
  pub.heavy(40);    // 0.04 s
  pub.heavy(3000);  // 3 s
  pub.heavy_untimed();
  pub.light();
  pub.publish(std::make_shared<Published>());
  const auto p = pub.published();
  EXPECT_EQ(p->heavy_sweeps, 3u);
  EXPECT_EQ(p->sweep_count, 3u);
  EXPECT_EQ(p->light_sweeps, 1u);
  EXPECT_DOUBLE_EQ(p->sweep_seconds, 3.04);
  // Buckets count the sweeps at or below each bound: 0.05 s holds one, 5 s both.
  for (size_t i = 0; i < p->sweep_le.size(); ++i) {
    const double le = Published::kSweepBuckets[i];
    EXPECT_EQ(p->sweep_le[i], (0.04 <= le) + (3.0 <= le)) << le;
  }
  EXPECT_GT(p->started_unix_s, 0);
}
