#include "weft/routing/verify.hpp"

#include <algorithm>

#include "weft/routing/walk.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

VerifyReport verify_lfts(const Fabric& f, const Tables& t) {
  VerifyReport rep;
  const auto owners = lid_owners(f);
  std::vector<NodeIndex> switches;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (f.node(n).is_switch()) switches.push_back(n);
  // State per switch for the current destination: 0 unknown, 1 on the walk's stack,
  // 2 reaches it (in hops[] switch hops), 3 ends in a drop, 4 ends in a loop.
  std::vector<uint8_t> state(f.size());
  std::vector<uint32_t> hops(f.size());
  std::vector<NodeIndex> stack;
  for (const LidOwner& o : owners) {
    std::fill(state.begin(), state.end(), 0);
    for (NodeIndex s0 : switches) {
      ++rep.pairs;
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
      if (end_state == 2) {
        rep.max_hops = std::max<size_t>(rep.max_hops, hops[s0]);
      } else {
        if (end_state == 4)
          ++rep.loops;
        else
          ++rep.unreachable;
        if (rep.first_problem.empty())
          rep.first_problem = !problem.empty()
                                  ? problem
                                  : "LID " + std::to_string(o.lid.value) + " unreachable from " +
                                        fabric::port_ref(f, s0, 0);
      }
    }
  }
  return rep;
}

}  // namespace weft::routing
