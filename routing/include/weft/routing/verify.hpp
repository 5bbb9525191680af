// weft/routing/verify.hpp — checks a set of LFTs against a fabric: from every
// switch, does following the tables reach every LID in use, without a loop and
// without a drop? Used by tests, by `weft sim` after a bring-up, and on tables
// read back from devices.
//
//   auto report = weft::routing::verify_lfts(fabric, tables);
//   if (!report.ok()) std::cerr << report.first_problem;
#pragma once

#include <string>

#include "weft/routing/engine.hpp"

namespace weft::routing {

struct VerifyReport {
  size_t pairs = 0;        // (switch, destination LID) pairs checked
  size_t unreachable = 0;  // pairs that end in a drop, a dead port or a wrong node
  size_t loops = 0;        // pairs that cycle
  size_t max_hops = 0;     // longest switch-to-destination path in switch hops
  std::string first_problem;
  bool ok() const { return unreachable == 0 && loops == 0; }
};

VerifyReport verify_lfts(const fabric::Fabric& f, const Tables& t);

}  // namespace weft::routing
