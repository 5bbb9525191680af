// weft/routing/verify.hpp — checks a set of LFTs against a fabric: from every
// switch, does following the tables reach every LID in use, without a loop and
// without a drop? Used by tests, by `weft sim` after a bring-up, and on tables
// read back from devices.
//
//   auto report = weft::routing::verify_lfts(fabric, tables);
//   if (!report.ok()) std::cerr << report.first_problem;
#pragma once

#include <functional>
#include <string>
#include <vector>

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

// Adaptive routing as the switches hold it: `choices(switch, lid, ports)` fills the ports
// a packet to `lid` may leave `switch` by (none: the static port alone). Verified when
// every such port leads to the destination or to a switch whose static route (the
// LFTs) is one hop shorter: whatever each switch picks, every hop brings a packet
// nearer, so no mix of choices loops or lengthens a route.
struct AdaptiveVerifyReport {
  size_t entries = 0;  // (switch, LID) pairs with choices
  size_t choices = 0;  // ports over all of them
  size_t bad = 0;      // pairs with a port that leads no nearer
  std::string first_problem;
  bool ok() const { return bad == 0; }
};
using ChoiceFn = std::function<void(fabric::NodeIndex, uint16_t, std::vector<PortNum>&)>;
AdaptiveVerifyReport verify_adaptive(const fabric::Fabric& f, const Tables& t,
                                     const ChoiceFn& choices);
// The choices the tables' own groups give (Tables::ar_group, ar_sets); `t` must outlive it.
ChoiceFn group_choices(const Tables& t);

}  // namespace weft::routing
