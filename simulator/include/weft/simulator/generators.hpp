// weft/simulator/generators.hpp — synthetic fabrics: 2- and 3-level fat trees,
// 2D/3D tori and meshes, seeded random irregular graphs; and one spec syntax
// for them (or a topology file) used by `weft sim`, `weft topo` and tests.
//
//   auto f = weft::simulator::make_fabric("ft2:leaves=8,spines=4,hosts=8");
//   auto g = weft::simulator::make_fabric("torus:dims=4x4x4,hosts=2");
//   auto h = weft::simulator::make_fabric("random:switches=32,degree=5,hosts=4,seed=1");
//   auto i = weft::simulator::make_fabric("/path/to/fabric.net");   // ibsim or ibnetdiscover
//
// Generated fabrics list every CA before the switches, so node 0 (where the SM
// attaches by default, and the first node of a written net file) is a host.
// GUIDs: switch i = 0x0002c90300001000 + i, CA j = 0x0002c90400000000 + 0x10*j.
#pragma once

#include <string>
#include <vector>

#include "weft/fabric/fabric.hpp"

namespace weft::simulator {

struct FatTree2 {
  int leaves = 4, spines = 2, hosts = 4;  // hosts per leaf (population)
  int links = 1;                          // parallel links per leaf-spine pair
  int radix = 0;                          // switch ports; 0 = just enough
};
struct FatTree3 {
  int pods = 2, leaves = 2, aggs = 2, hosts = 2;  // per pod: leaves, aggs; hosts per leaf
  int cores = 2;                                  // cores per group; one group per agg index
  int radix = 0;
  int links = 1;  // parallel links per agg-core pair
};
struct Torus {
  std::vector<int> dims{4, 4};
  int hosts = 1;  // per switch
  bool mesh = false;
};
struct RandomGraph {
  int switches = 16, degree = 4, hosts = 2;
  uint64_t seed = 1;
};

// Dragonfly (Kim et al.): groups of `routers` switches, all-to-all inside a group;
// each switch has `global` links to other groups, spread so that every pair of
// groups is joined (routers * global >= groups - 1); `hosts` CAs per switch.
struct Dragonfly {
  int groups = 5, routers = 4, global = 1, hosts = 2;
};

Result<fabric::Fabric> make_fat_tree2(const FatTree2& p);
Result<fabric::Fabric> make_fat_tree3(const FatTree3& p);
Result<fabric::Fabric> make_torus(const Torus& p);
Result<fabric::Fabric> make_random(const RandomGraph& p);
Result<fabric::Fabric> make_dragonfly(const Dragonfly& p);
// A generator spec (kind:key=value,...) or a topology file path.
Result<fabric::Fabric> make_fabric(const std::string& spec);

}  // namespace weft::simulator
