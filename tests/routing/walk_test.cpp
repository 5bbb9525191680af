// The one LFT walk (weft/routing/walk.hpp): every way a route can end, on a small tree
// whose tables are bent by hand.
#include "weft/routing/walk.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_fabrics.hpp"

using namespace weft;
using namespace weft::fabric;
using namespace weft::routing;
using weft::testing::port_to;
using weft::testing::with_lids;

namespace {

struct Hop {
  NodeIndex n;
  PortNum in, out;
  bool operator==(const Hop&) const = default;
};

struct Walked {
  WalkResult end;
  std::vector<Hop> hops;
};

// From `from`'s port 1 (or the switch itself) toward `to`'s port 1.
Walked walk_to(const Fabric& f, const Tables& t, NodeIndex from, NodeIndex to) {
  Walked w;
  const uint16_t dlid = f.node(to).ports[f.node(to).is_switch() ? 0 : 1].attrs.lid.value;
  w.end = walk(
      f, t.lft, from, 1, dlid,
      [&](NodeIndex n, PortNum in) { return n == to && (f.node(n).is_switch() || in == 1); },
      [&](NodeIndex n, PortNum in, PortNum out) {
        w.hops.push_back({n, in, out});
      });
  return w;
}

class Walk : public ::testing::Test {
 protected:
  Fabric f = with_lids("ft2:leaves=3,spines=2,hosts=1");
  Tables t = weft::testing::routed(f, "minhop");
  NodeIndex node(const std::string& name) { return *f.find_by_name(name); }
  uint16_t lid(const std::string& host) { return f.node(node(host)).ports[1].attrs.lid.value; }
};

TEST_F(Walk, ArrivesHopByHopThroughTheTables) {
  const NodeIndex h0 = node("h0-0"), h2 = node("h2-0"), leaf0 = node("leaf0");
  const NodeIndex leaf2 = node("leaf2");
  auto w = walk_to(f, t, h0, h2);
  ASSERT_EQ(w.end.kind, WalkEnd::kArrived);
  EXPECT_EQ(w.end.node, h2);
  EXPECT_EQ(w.end.in, 1);
  ASSERT_EQ(w.hops.size(), 4u);  // the host's port, leaf0, a spine, leaf2
  EXPECT_EQ(w.hops[0], (Hop{h0, 0, 1}));
  EXPECT_EQ(w.hops[1].n, leaf0);
  EXPECT_EQ(w.hops[1].out, t.lft[leaf0][lid("h2-0")]);
  EXPECT_EQ(w.hops[3].n, leaf2);
  EXPECT_EQ(w.hops[3].out, port_to(f, leaf2, "h2-0"));
  // To itself: there at once. To its own leaf (a switch): one hop.
  EXPECT_EQ(walk_to(f, t, h0, h0).end.kind, WalkEnd::kArrived);
  EXPECT_TRUE(walk_to(f, t, h0, h0).hops.empty());
  auto up = walk_to(f, t, h0, leaf0);
  EXPECT_EQ(up.end.kind, WalkEnd::kArrived);
  EXPECT_EQ(up.hops.size(), 1u);
}

TEST_F(Walk, ALoopIsFoundWhereItComesBack) {
  const NodeIndex leaf0 = node("leaf0"), spine0 = node("spine0");
  t.lft[leaf0][lid("h1-0")] = port_to(f, leaf0, "spine0");
  t.lft[spine0][lid("h1-0")] = port_to(f, spine0, "leaf0");
  auto w = walk_to(f, t, node("h0-0"), node("h1-0"));
  EXPECT_EQ(w.end.kind, WalkEnd::kLoop);
  EXPECT_EQ(w.end.node, leaf0);
  EXPECT_EQ(w.hops.size(), 3u);  // the host's port, leaf0, spine0; then leaf0 again
}

TEST_F(Walk, ADropADeadPortAndASwitchThatKeepsIt) {
  const NodeIndex leaf0 = node("leaf0"), spine1 = node("spine1"), h0 = node("h0-0");
  const NodeIndex h2 = node("h2-0");
  t.lft[leaf0][lid("h2-0")] = port_to(f, leaf0, "spine1");
  t.lft[spine1][lid("h2-0")] = kDropPort;
  auto drop = walk_to(f, t, h0, h2);
  EXPECT_EQ(drop.end.kind, WalkEnd::kNoRoute);
  EXPECT_EQ(drop.end.node, spine1);
  EXPECT_EQ(drop.end.out, kDropPort);
  EXPECT_EQ(step(f, t.lft, spine1, lid("h2-0")).kind, Step::kNoRoute);
  // Past the end of the table: no route either.
  EXPECT_EQ(step(f, t.lft, spine1, uint16_t(t.lft[spine1].size())).kind, Step::kNoRoute);

  t.lft[spine1][lid("h2-0")] = 0;  // the spine takes it for itself
  EXPECT_EQ(walk_to(f, t, h0, h2).end.kind, WalkEnd::kAtSwitch);

  const PortNum down = port_to(f, spine1, "leaf2");
  t.lft[spine1][lid("h2-0")] = down;
  f.disconnect(spine1, down);
  auto dead = walk_to(f, t, h0, h2);
  EXPECT_EQ(dead.end.kind, WalkEnd::kDeadEnd);
  EXPECT_EQ(dead.end.node, spine1);
  EXPECT_EQ(dead.end.out, down);
}

TEST_F(Walk, AnotherEndPortOrNoLinkAtTheSource) {
  const NodeIndex leaf2 = node("leaf2"), h0 = node("h0-0");
  // leaf2 hands h2's packets to h1's leaf instead... and on to h1.
  t.lft[leaf2][lid("h2-0")] = port_to(f, leaf2, "spine0");
  t.lft[node("spine0")][lid("h2-0")] = port_to(f, node("spine0"), "leaf1");
  t.lft[node("leaf1")][lid("h2-0")] = port_to(f, node("leaf1"), "h1-0");
  auto w = walk_to(f, t, h0, node("h2-0"));
  EXPECT_EQ(w.end.kind, WalkEnd::kAtEndPort);
  EXPECT_EQ(w.end.node, node("h1-0"));
  f.disconnect(h0, 1);
  auto cut = walk_to(f, t, h0, node("h2-0"));
  EXPECT_EQ(cut.end.kind, WalkEnd::kNoLink);
  EXPECT_TRUE(cut.hops.empty());
}

}  // namespace
