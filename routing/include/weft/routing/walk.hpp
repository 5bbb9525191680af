// weft/routing/walk.hpp — the one way weft follows forwarding tables. A packet for `dlid`
// at switch `n` leaves by the port n's LFT names and arrives at that port's peer: step()
// is that one hop, walk() the whole route from an end port or a switch. The SA's
// PathRecords, the route tracer REST shows and the route analysis all go through here,
// so that they cannot disagree about where a packet goes.
//
//   auto end = weft::routing::walk(f, t.lft, src_node, src_port, dlid,
//       [&](NodeIndex n, PortNum in) { return n == dst_node && in == dst_port; },
//       [&](NodeIndex n, PortNum in, PortNum out) { hops.push_back({n, in, out}); });
//   if (end.kind == weft::routing::WalkEnd::kArrived) ...
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/types.hpp"

namespace weft::routing {

using Lfts = std::vector<std::vector<PortNum>>;

// One hop at switch `n` toward `dlid`.
struct Step {
  enum Kind : uint8_t {
    kForward,  // out of `out` to `peer`:`peer_port`
    kHere,     // the entry is 0: the switch's own port takes it
    kNoRoute,  // no table or entry for the LID, or one past the switch's ports (0xFF: drop)
    kDeadEnd,  // the LFT names `out`, which has no link
  } kind;
  PortNum out = 0;
  fabric::NodeIndex peer = fabric::kNoNode;
  PortNum peer_port = 0;
};

inline Step step(const fabric::Fabric& f, const Lfts& lft, fabric::NodeIndex n, uint16_t dlid) {
  if (n >= lft.size() || dlid >= lft[n].size()) return {Step::kNoRoute};
  const PortNum out = lft[n][dlid];
  const auto& nd = f.node(n);
  if (out == 0) return {Step::kHere};
  if (out > nd.num_ports) return {Step::kNoRoute, out};
  const auto& p = nd.ports[out];
  if (!p.linked()) return {Step::kDeadEnd, out};
  return {Step::kForward, out, p.peer, p.peer_port};
}

enum class WalkEnd : uint8_t {
  kArrived,    // stop() accepted (node, in)
  kAtEndPort,  // reached an end port stop() did not accept
  kAtSwitch,   // a switch took it for itself (entry 0) and stop() did not accept it
  kNoLink,     // the source end port has no link
  kNoRoute,    // a switch has no route for the LID
  kDeadEnd,    // a switch forwards it out of a port without a link (`out`)
  kLoop,       // it came back to a switch it passed (`node`), or went past max_switches
};

struct WalkResult {
  WalkEnd kind;
  fabric::NodeIndex node;  // where the walk ended
  PortNum in = 0;          // the port it arrived by (0: it started there)
  PortNum out = 0;         // kDeadEnd: the port without a link
};

// Walks from `node` toward `dlid`. An end port starts by its port `port` (on_hop(node, 0,
// port) first); a switch starts with in = 0. At each node, stop(node, in) first; then an
// end port ends the walk, and a switch forwards by its LFT (on_hop(node, in, out) for each
// hop taken). At most `max_switches` switches are crossed.
template <class Stop, class OnHop>
WalkResult walk(const fabric::Fabric& f, const Lfts& lft, fabric::NodeIndex node, PortNum port,
                uint16_t dlid, Stop&& stop, OnHop&& on_hop, size_t max_switches = 64) {
  fabric::NodeIndex n = node;
  PortNum in = 0;
  if (!f.node(n).is_switch()) {
    if (stop(n, port)) return {WalkEnd::kArrived, n, 0};
    const auto& p = f.node(n).ports[port];
    if (!p.linked()) return {WalkEnd::kNoLink, n, 0, port};
    on_hop(n, PortNum(0), port);
    in = p.peer_port;
    n = p.peer;
  }
  // The switches passed: the first 64 (every route IBTA allows) on the stack, so that a
  // walk allocates nothing; longer ones (a tracer that allows more) beyond.
  std::array<fabric::NodeIndex, 64> near;
  std::vector<fabric::NodeIndex> far;
  size_t passed = 0;
  while (true) {
    if (stop(n, in)) return {WalkEnd::kArrived, n, in};
    if (!f.node(n).is_switch()) return {WalkEnd::kAtEndPort, n, in};
    const auto near_end = near.begin() + std::min(passed, near.size());
    if (passed >= max_switches || std::find(near.begin(), near_end, n) != near_end ||
        std::find(far.begin(), far.end(), n) != far.end())
      return {WalkEnd::kLoop, n, in};
    if (passed < near.size())
      near[passed] = n;
    else
      far.push_back(n);
    ++passed;
    const Step s = step(f, lft, n, dlid);
    switch (s.kind) {
      case Step::kHere:
        return {WalkEnd::kAtSwitch, n, in};
      case Step::kNoRoute:
        return {WalkEnd::kNoRoute, n, in, s.out};
      case Step::kDeadEnd:
        return {WalkEnd::kDeadEnd, n, in, s.out};
      case Step::kForward:
        break;
    }
    on_hop(n, in, s.out);
    in = s.peer_port;
    n = s.peer;
  }
}

}  // namespace weft::routing
