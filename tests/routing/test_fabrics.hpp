// Test helpers for the routing tests: a generated fabric with LIDs assigned as a
// first bring-up would, and its tables from one engine.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "weft/routing/engine.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/sm/lid_manager.hpp"

namespace weft::testing {

inline fabric::Fabric with_lids(const std::string& spec) {
  auto f = simulator::make_fabric(spec);
  EXPECT_TRUE(f) << spec;
  sm::Guid2Lid db;
  EXPECT_TRUE(sm::assign_lids(*f, db, 0));
  return std::move(*f);
}

// The tables `engine` computes; a refusal fails the test (and gives empty tables).
inline routing::Tables routed(const fabric::Fabric& f, const std::string& engine,
                              const routing::Options& o = {}) {
  auto e = routing::make_engine(engine);
  EXPECT_TRUE(e) << engine;
  if (!e) return {};
  auto t = (*e)->compute(f, o);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return t ? std::move(*t) : routing::Tables{};
}

// The port of `from` whose link leads to the node named `to`; kDropPort when none does.
inline PortNum port_to(const fabric::Fabric& f, fabric::NodeIndex from, const std::string& to) {
  for (const auto& p : f.node(from).ports)
    if (p.num && p.linked() && f.node(p.peer).name == to) return p.num;
  return kDropPort;
}

}  // namespace weft::testing
