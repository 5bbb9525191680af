#include "weft/routing/verify.hpp"

#include <algorithm>

#include "weft/routing/walk.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {

// Where the static route (the LFTs) from every switch to one LID ends, per switch:
// 2 reaches it (hops[] switch hops: 0 its own LID, 1 a CA beside it), 3 a drop or the
// wrong node, 4 a loop. `each(s0, end_state, problem)` once per switch, in order.
struct Destination {
  std::vector<uint8_t> state;  // 0 unknown, 1 on the walk's stack, then as above
  std::vector<uint32_t> hops;
};
template <class Each>
void walk_to(const Fabric& f, const Tables& t, const LidOwner& o,
             const std::vector<NodeIndex>& switches, Destination& d, Each each) {
  auto& state = d.state;
  auto& hops = d.hops;
  state.assign(f.size(), 0);
  hops.assign(f.size(), 0);
  std::vector<NodeIndex> stack;
  for (NodeIndex s0 : switches) {
    // Walk from s0 until a known state, recording the path.
    stack.clear();
    NodeIndex cur = s0;
    uint8_t end_state = 0;
    uint32_t end_hops = 0;
    std::string problem;
    while (true) {
      if (state[cur] >= 2) {
        end_state = state[cur];
        end_hops = hops[cur];
        break;
      }
      if (state[cur] == 1) {
        end_state = 4;  // loop
        problem = "LID " + std::to_string(o.lid.value) + ": forwarding loop through " +
                  fabric::port_ref(f, cur, 0);
        break;
      }
      state[cur] = 1;
      stack.push_back(cur);
      if (cur == o.node) {  // a switch's own LID
        end_state = 2;
        end_hops = 0;
        stack.pop_back();
        state[cur] = 2;
        hops[cur] = 0;
        break;
      }
      const Step s = step(f, t.lft, cur, o.lid.value);
      // No entry (none, or the drop port), or an entry that leads nowhere.
      const PortNum out =
          s.kind == Step::kNoRoute && (s.out == 0 || s.out == kDropPort) ? kDropPort : s.out;
      if (s.kind != Step::kForward) {
        end_state = 3;
        problem = "LID " + std::to_string(o.lid.value) + " not routed at " +
                  fabric::port_ref(f, cur, out == kDropPort ? 0 : out) +
                  (out == kDropPort ? " (no entry)" : " (dead port)");
        break;
      }
      const auto& p = f.node(cur).ports[out];
      if (!f.node(p.peer).is_switch()) {
        bool hit = p.peer == o.node && p.peer_port == o.port;
        end_state = hit ? 2 : 3;
        end_hops = 1;
        if (!hit)
          problem = "LID " + std::to_string(o.lid.value) + " sent from " +
                    fabric::port_ref(f, cur, out) + " to the wrong end node " +
                    fabric::port_ref(f, p.peer, p.peer_port);
        stack.pop_back();
        state[cur] = hit ? 2 : 3;
        hops[cur] = 1;
        break;
      }
      cur = p.peer;
    }
    // Unwind: everything on the stack shares the end state.
    uint32_t h = end_hops;
    while (!stack.empty()) {
      NodeIndex n = stack.back();
      stack.pop_back();
      ++h;
      state[n] = end_state;
      hops[n] = h;
    }
    each(s0, state[s0], problem);
  }
}

std::vector<NodeIndex> switches_of(const Fabric& f) {
  std::vector<NodeIndex> out;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (f.node(n).is_switch()) out.push_back(n);
  return out;
}

}  // namespace

VerifyReport verify_lfts(const Fabric& f, const Tables& t) {
  VerifyReport rep;
  const auto switches = switches_of(f);
  Destination d;
  for (const LidOwner& o : lid_owners(f)) {
    walk_to(f, t, o, switches, d, [&](NodeIndex s0, uint8_t end, const std::string& problem) {
      ++rep.pairs;
      if (end == 2) {
        rep.max_hops = std::max<size_t>(rep.max_hops, d.hops[s0]);
        return;
      }
      if (end == 4)
        ++rep.loops;
      else
        ++rep.unreachable;
      if (rep.first_problem.empty())
        rep.first_problem = !problem.empty()
                                ? problem
                                : "LID " + std::to_string(o.lid.value) + " unreachable from " +
                                      fabric::port_ref(f, s0, 0);
    });
  }
  return rep;
}

AdaptiveVerifyReport verify_adaptive(const Fabric& f, const Tables& t, const ChoiceFn& choices) {
  AdaptiveVerifyReport rep;
  const auto switches = switches_of(f);
  Destination d;
  std::vector<PortNum> ports;
  for (const LidOwner& o : lid_owners(f)) {
    walk_to(f, t, o, switches, d, [](NodeIndex, uint8_t, const std::string&) {});
    for (NodeIndex n : switches) {
      if (n == o.node) continue;
      ports.clear();
      choices(n, o.lid.value, ports);
      if (ports.empty()) continue;
      ++rep.entries;
      rep.choices += ports.size();
      // Each choice must lead where the static route is one hop shorter (or to the
      // destination itself): then every hop, whatever is chosen, brings a packet nearer.
      for (PortNum p : ports) {
        std::string bad;
        if (d.state[n] != 2) {
          bad = "the static route does not reach it";
        } else if (p == 0 || p > f.node(n).num_ports || !f.node(n).ports[p].linked()) {
          bad = "port " + std::to_string(p) + " has no link";
        } else {
          const auto& peer = f.node(n).ports[p];
          const bool there =
              peer.peer == o.node && (f.node(o.node).is_switch() || peer.peer_port == o.port);
          const bool nearer = f.node(peer.peer).is_switch() && d.state[peer.peer] == 2 &&
                              d.hops[peer.peer] + 1 == d.hops[n];
          if (!there && !nearer)
            bad = "port " + std::to_string(p) + " leads no nearer than the static route";
        }
        if (bad.empty()) continue;
        ++rep.bad;
        if (rep.first_problem.empty())
          rep.first_problem = "LID " + std::to_string(o.lid.value) + " at " +
                              fabric::port_ref(f, n, 0) + ": " + bad;
        break;
      }
    }
  }
  return rep;
}

ChoiceFn group_choices(const Tables& t) {
  return [&t](fabric::NodeIndex n, uint16_t lid, std::vector<PortNum>& out) {
    if (n >= t.ar_group.size() || lid >= t.ar_group[n].size()) return;
    const uint16_t g = t.ar_group[n][lid];
    if (g != Tables::kNoArGroup && g < t.ar_sets[n].size()) out = t.ar_sets[n][g];
  };
}

}  // namespace weft::routing
