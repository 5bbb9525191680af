// SimFabric::congest: flows through the tables the switches hold, the ports they share,
// and what congestion control logs about them (weft/simulator/sim_fabric.hpp).
#include <map>
#include <vector>

#include "weft/simulator/sim_fabric.hpp"

namespace weft::simulator {

using fabric::NodeIndex;

SimFabric::Congestion SimFabric::congest(const std::vector<Flow>& flows, uint64_t packets) {
  Congestion c;
  const uint32_t ts = SimCc::time_stamp(clock_ ? clock_->now() : mad::TimePoint{0});
  // Each arriving flow's path: the switch ports it leaves by.
  std::vector<std::vector<std::pair<NodeIndex, PortNum>>> path(flows.size());
  std::vector<uint8_t> arrives(flows.size(), 0);
  std::map<std::pair<NodeIndex, PortNum>, std::vector<size_t>> at;  // port -> flows
  for (size_t i = 0; i < flows.size(); ++i) {
    const Flow& fl = flows[i];
    if (fl.node >= f_.size() || f_.node(fl.node).is_switch() ||
        fl.port > f_.node(fl.node).num_ports)
      continue;
    auto hop = lid_route(fl.node, fl.port, fl.dlid, nullptr, [&](NodeIndex n, PortNum p) {
      path[i].push_back({n, p});
    });
    if (!hop) continue;
    arrives[i] = 1;
    ++c.routed;
    for (const auto& np : path[i]) at[np].push_back(i);
  }
  auto slid_of = [&](NodeIndex n, PortNum p) { return f_.node(n).ports[p].attrs.lid.value; };
  std::vector<uint8_t> marked(flows.size(), 0);
  for (const auto& [np, users] : at) {
    if (users.size() < 2) continue;
    ++c.congested_ports;
    const auto [n, p] = np;
    count(n, p, perf::Counter::kXmitWait, (users.size() - 1) * packets);
    if (!cc_.marks(n, p)) continue;
    for (size_t i : users) {
      const Flow& fl = flows[i];
      cc_.log_switch(n, p, {slid_of(fl.node, fl.port), fl.dlid, fl.sl, ts});
      ++c.switch_events;
      marked[i] = 1;
    }
  }
  for (size_t i = 0; i < flows.size(); ++i) {
    const Flow& fl = flows[i];
    if (!arrives[i] || !marked[i] || !cc_.reacts(fl.node, fl.port, fl.sl)) continue;
    const uint32_t qp = static_cast<uint32_t>(0x100 + i) & 0xffffff;
    cc::CaLogEntry e;
    e.local_qp = qp;
    e.remote_qp = qp;
    e.sl = fl.sl;
    e.local_lid = slid_of(fl.node, fl.port);
    e.remote_lid = fl.dlid;
    e.timestamp = ts;
    cc_.log_ca(fl.node, fl.port, e);
    ++c.ca_events;
  }
  return c;
}

}  // namespace weft::simulator
