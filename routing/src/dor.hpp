// Dimension-order routing for tori and meshes.
//
// Coordinates: from the torus description (OpenSM's torus-2QoS.conf: the radices,
// which rings wrap, and a seed switch with its + or - neighbour in each dimension;
// the next seed where a switch or link of one is gone, and where none holds, a seed's
// named neighbour whose link to it failed placed all the same; the dateline's offset), every
// switch's neighbours are labelled +x, -x, +y, ... by propagation: a neighbour v
// of a labelled switch u (one step along dimension a) has, in every other
// dimension b, the neighbour that closes the square with u's b-neighbour; along
// a, u behind it and the one neighbour left ahead. The seed's - neighbours come
// from the ring structure (on a radix-4 ring, where the torus is a hypercube and
// either labelling is a valid torus, the first free one). The result is checked:
// every switch labelled once, coordinates unique, every link accounted for;
// otherwise the engine refuses, naming the switch. A link of the shape may be
// missing (failed): a square it leaves open is closed from another side, and the
// labels are rebuilt from the coordinates.
//
// Routes: the first differing dimension first, the shorter way round; half way
// round an even ring, + from even coordinates and - from odd ones, which balances
// the ring's two directions (on a 4x4x4 torus: busiest link 128 = the mean, eBB
// 0.535; always + gives 192 and 0.476). A destination switch's LIDs spread over
// parallel links. The direction depends only on the coordinates where the
// dimension starts and ends, so every switch on the way agrees with it.
//
// Deadlock freedom: dimension order leaves no dependency from a later dimension
// to an earlier one. Within one direction of a ring, a dependency joins two hops
// of one path. A radix-3 ring has no two-hop path; on a radix-4 ring only the
// half-way paths have two hops, and with the alternating direction each
// direction of the ring gets two of its four hop-to-hop dependencies, which
// cannot close a cycle: radix-3 and radix-4 tori need no extra VL. On a ring of
// radix 5 or more, a path's SL has a bit for that dimension when the path crosses
// the ring's dateline (the link between radix-1 and 0), and each switch sends a hop
// toward dimension d on VL bit d of the SL (its SL2VL table per output port:
// Tables::hop_vl), as torus-2QoS does: on each ring every VL 1 path crosses the
// dateline and no VL 0 path does, and paths of at most radix/2 hops cannot close
// the ring. So any torus needs 2 VLs (a 4x4x4 torus or a mesh 1).
//
// Failed links (torus-2QoS's rule): a route whose ring a failure broke goes the long
// way round. A broken ring is a line, whose channels close no cycle in either
// direction, so every path keeps the SL of its pristine route, and every route that
// did not cross the failure is the pristine one.
//
// Failed switches (their places left empty by the labelling), cut mesh lines and
// rings split in two, where neither way along a dimension reaches: the route goes
// as far as it can and turns early, one step into a later dimension (toward the
// destination there), as torus-2QoS turns round a failed switch; DOR then takes it
// past the gap and back. The hop after that step turns back to an earlier dimension:
// first it takes VL bit 1 (bit 0 without datelines) by its input port, as
// torus-2QoS does, every SL kept; if the dependencies still close a cycle (round a
// gap longer than one switch, detours on both sides can), the paths through an
// early turn take an SL of their own instead (the bit after the datelines') and all
// their hops its VL bit.
//
// A gap in the last dimension has no later one to turn into: the switches that the
// destination's own line no longer joins to it step into an earlier dimension onto
// the line beside, go along that to the nearest place where the destination's line
// leads on, and step back (the line beside's switches at the cut-off places go the
// same way out, so none sends a route back). Those hops turn back as the early turns
// do and take the same VLs. Where the link of the next dimension toward the
// destination failed too, the early turn takes a side of a later dimension whose line
// leads on. Checked whole; refused when even the early turns' own SL closes a cycle,
// when no later link leads round a gap in an earlier dimension, or when neither line
// beside the destination's leads round a gap in the last.
#pragma once

#include "weft/routing/engine.hpp"

namespace weft::routing {

class DorEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "dor"; }
  Routed compute(const fabric::Fabric& f, const Options& o) const override;
};

}  // namespace weft::routing
