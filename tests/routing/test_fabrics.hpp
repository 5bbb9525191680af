// Test helper for the routing tests: a generated fabric with LIDs assigned as a
// first bring-up would.
#pragma once

#include <gtest/gtest.h>

#include <string>

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

}  // namespace weft::testing
