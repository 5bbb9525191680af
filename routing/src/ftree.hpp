// Fat-tree routing.
//
// Levels: a switch's level is its hop distance from the nearest switch with CAs
// (the leaves, level 0). The fabric is a fat tree when every inter-switch link
// joins adjacent levels; otherwise the engine refuses ("not a fat tree").
//
// Routes: for each destination, its ancestors (the switches reached from its
// switch by climbing only) route down toward it; every other switch climbs
// toward the nearest ancestor. So every route goes up and then down, never down
// then up, and the channel dependency graph is acyclic.
//
// Balance: d-mod-k. Destinations are numbered in topology order (CAs by pod, leaf
// and port, then the switches' own LIDs); a switch of level l takes candidate
// (d / W[l]) mod (its candidates), where W[0] = 1 and W[l+1] = W[l] times the most
// up ports a level-l switch has (descending, the level below's divisor, which
// spreads parallel links). On a full fat tree every destination is reached
// through one top switch whatever the source, and shift all-to-all patterns in
// topology order are free of congestion.
//
// Speed: the up/down structure toward a destination is computed once per plan:
// per leaf class (leaves with the same parents; only the parents' last hop differs
// between them) and per other switch LID, in parallel; then every switch fills
// its row from the plans, in parallel.
//
// Partial and degraded trees: missing hosts, leaves or links leave the levels
// intact and are routed. A switch with no up-then-down path to a LID (on any
// tree, a spine or core toward another top switch's LID; in a degraded tree, a
// switch cut from some of its parents) takes a down-up turn: where it can, by
// way of one turn leaf (the first leaf), from which it follows that leaf's route,
// so that every such turn is at one switch; otherwise where it first meets the
// up-then-down routes. The channel dependency graph is then checked: when the
// turns close a cycle, the turning paths move to SL 1 (those not at the turn
// leaf first), and when even that leaves a cycle, the engine refuses.
#pragma once

#include "weft/routing/engine.hpp"

namespace weft::routing {

class FatTreeEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "ftree"; }
  Routed compute(const fabric::Fabric& f, const Options& o) const override;
};

}  // namespace weft::routing
