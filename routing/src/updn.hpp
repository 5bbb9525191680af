// Up/down routing: deadlock-free on any topology with one VL.
//
// Switches are ranked by BFS distance from the roots: the given root GUIDs, or
// else the switches farthest from any switch with CAs (the spines or cores of a
// tree; the centre of a graph where every switch has CAs). A link is "up" toward
// the lower rank, and between equal ranks toward the lower GUID, so up-links
// form a DAG. Every route climbs zero or more up-links and then only descends:
// a switch from which the destination is reachable going only down takes a down
// hop that strictly shortens that down-only distance; otherwise it takes an up
// hop whose remaining up/down cost is least. A down hop never leads to a switch
// that would turn up again, so no route turns down then up, and the channel
// dependency graph is acyclic. Among equal choices, the LIDs of one destination
// switch go round robin from the least-used port, and each switch takes the
// destination switches in an order of its own (minhop's balance, over the legal
// choices). Distances are computed once per destination switch, for batches of them
// in parallel, and rows are filled in parallel.
// Pairs that no up*down* path joins: when every one starts at a switch without
// CAs or leads to one's own LID (a tree's top switches toward each other's LIDs; on
// a degraded tree, a leaf toward the aggregation switch it lost), they are bridged (through
// unrouted switches to one turn switch, else into the nearest routed ones) and the
// channel dependency graph is checked; otherwise, or when that leaves a cycle, the
// engine routes with a single root (detected roots) or refuses (given roots).
//
// dnup is the mirror image (OpenSM's dnup): the same roots and ranks, with every
// link's direction reversed, so routes go down*up*. It is deadlock-free for the
// same reason. Its detected roots are the switches with CAs (OpenSM's dnup ranks so),
// which makes a tree's routes climb to the spines and descend, as updn's do; ranked
// from the spines, a tree's leaf-to-leaf routes would have to descend first and
// could not. On a graph where every switch has CAs it ranks from the centre, mirrored,
// and may refuse: no down*up* order joins every pair of some irregular graphs.
#pragma once

#include "weft/routing/engine.hpp"

namespace weft::routing {

class UpDownEngine final : public RoutingEngine {
 public:
  explicit UpDownEngine(bool down_up) : down_up_(down_up) {}
  std::string_view name() const override { return down_up_ ? "dnup" : "updn"; }
  Routed compute(const fabric::Fabric& f, const Options& o) const override;

 private:
  bool down_up_;  // dnup: the ranks are reversed, so routes descend first and then climb
};

}  // namespace weft::routing
