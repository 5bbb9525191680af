#include <gtest/gtest.h>

#include "weft/fabric/topology_file.hpp"
#include "weft/simulator/generators.hpp"

using namespace weft;
using namespace weft::simulator;

TEST(Generators, FatTreeShapes) {
  auto f = make_fabric("ft2:leaves=8,spines=4,hosts=6,links=2");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->num_switches(), 12u);
  EXPECT_EQ(f->num_endpoints(), 48u);
  EXPECT_EQ(f->links().size(), 48u + 8 * 4 * 2);
  EXPECT_FALSE(f->node(0).is_switch());  // a host first: where the SM attaches
  auto g = make_fabric("ft3:pods=2,leaves=3,aggs=2,hosts=4,cores=3");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->num_switches(), 2u * 3 + 2 * 2 + 2 * 3);
  EXPECT_EQ(g->num_endpoints(), 24u);
  EXPECT_EQ(g->links().size(), 24u + 2 * 3 * 2 + 2 * 2 * 3);
  auto h = make_fabric("ft3:pods=2,leaves=3,aggs=2,hosts=4,cores=3,links=4");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->links().size(), 24u + 2 * 3 * 2 + 2 * 2 * 3 * 4);  // parallel agg-core links
  EXPECT_EQ(h->node(*h->find_by_name("core0-0")).num_ports, 2 * 4);
}

TEST(Generators, TorusAndMesh) {
  auto t = make_fabric("torus:dims=4x4x4,hosts=2");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->num_switches(), 64u);
  EXPECT_EQ(t->links().size(), 128u + 64 * 3);
  auto m = make_fabric("mesh:dims=6x6,hosts=1");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->links().size(), 36u + 2 * 6 * 5);
}

TEST(Generators, RandomIsSeededAndConnected) {
  auto a = make_fabric("random:switches=40,degree=5,hosts=2,seed=11");
  auto b = make_fabric("random:switches=40,degree=5,hosts=2,seed=11");
  auto c = make_fabric("random:switches=40,degree=5,hosts=2,seed=12");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(fabric::write_netfile(*a), fabric::write_netfile(*b));
  EXPECT_NE(fabric::write_netfile(*a), fabric::write_netfile(*c));
  // Connected: a walk from node 0 reaches everything.
  std::vector<bool> seen(a->size());
  std::vector<fabric::NodeIndex> stack{0};
  seen[0] = true;
  while (!stack.empty()) {
    auto n = stack.back();
    stack.pop_back();
    for (const auto& p : a->node(n).ports)
      if (p.linked() && !seen[p.peer]) seen[p.peer] = true, stack.push_back(p.peer);
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), static_cast<long>(a->size()));
}

TEST(Generators, BadSpecsAreRefusedClearly) {
  EXPECT_NE(make_fabric("ft2:leaves=x").error().message.find("leaves=\"x\" is not an integer"),
            std::string::npos);
  EXPECT_NE(make_fabric("ft2:lefs=3").error().message.find("unknown key \"lefs\""),
            std::string::npos);
  EXPECT_NE(make_fabric("ft2:leaves=4,hosts=300").error().message.find("max 254"),
            std::string::npos);
  EXPECT_NE(make_fabric("ft2:leaves=4,hosts=30,radix=8").error().message.find("radix is 8"),
            std::string::npos);
  EXPECT_NE(make_fabric("torus:dims=4xx4").error().message.find("dims="), std::string::npos);
  EXPECT_NE(make_fabric("hypercube:n=4").error().message.find("unknown topology kind"),
            std::string::npos);
  EXPECT_EQ(make_fabric("/no/such/file.net").error().code, Errc::kIo);
}
