#include "switch_graph.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/visitors.hpp>
#include <map>

namespace weft::routing::detail {

using fabric::Fabric;
using fabric::NodeIndex;
using SwitchGraph = boost::compressed_sparse_row_graph<boost::directedS>;

Switches index_switches(const Fabric& f) {
  Switches s;
  s.of_node.assign(f.size(), ~0u);
  for (NodeIndex n = 0; n < f.size(); ++n) {
    if (!f.node(n).is_switch()) continue;
    s.of_node[n] = static_cast<uint32_t>(s.nodes.size());
    s.nodes.push_back(n);
  }
  s.sources.assign(s.nodes.size(), 1);  // the switch's own port 0
  for (uint32_t i = 0; i < s.nodes.size(); ++i)
    for (const auto& p : f.node(s.nodes[i]).ports)
      if (p.linked() && !f.node(p.peer).is_switch()) ++s.sources[i];
  return s;
}

// All-pairs switch hop distances, row-major [from * n + to].
std::vector<uint8_t> switch_distances(const Fabric& f, const Switches& sw) {
  const size_t n = sw.nodes.size();
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t i = 0; i < n; ++i)
    for (const auto& p : f.node(sw.nodes[i]).ports)
      if (p.num != 0 && p.linked() && f.node(p.peer).is_switch())
        edges.emplace_back(i, sw.of_node[p.peer]);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  SwitchGraph g(boost::edges_are_sorted, edges.begin(), edges.end(), n);
  std::vector<uint8_t> dist(n * n, kFar);
  // One BFS per source, in parallel: the graph is only read, each source fills its row.
  parallel_for(
      n,
      [&](size_t src) {
        std::vector<uint32_t> d32(n, std::numeric_limits<uint32_t>::max());
        d32[src] = 0;
        boost::breadth_first_search(g, src,
                                    boost::visitor(boost::make_bfs_visitor(boost::record_distances(
                                        d32.data(), boost::on_tree_edge()))));
        for (uint32_t t = 0; t < n; ++t)
          dist[src * n + t] = d32[t] >= kFar ? kFar : static_cast<uint8_t>(d32[t]);
      },
      8);
  return dist;
}

std::expected<Start, Failure> start(const Fabric& f) {
  Start st{index_switches(f), lid_owners(f), {}};
  const auto& owners = st.owners;
  for (size_t i = 1; i < owners.size(); ++i)
    if (owners[i].lid == owners[i - 1].lid)
      return refuse(Refusal::kInvalidInput,
                    "LID " + std::to_string(owners[i].lid.value) + " is held by two ports: " +
                        fabric::port_ref(f, owners[i - 1].node, owners[i - 1].port) + " and " +
                        fabric::port_ref(f, owners[i].node, owners[i].port));
  Tables& out = st.tables;
  out.top_lid = owners.empty() ? 0 : owners.back().lid.value;
  out.lft.resize(f.size());
  for (NodeIndex n : st.sw.nodes) out.lft[n].assign(size_t(out.top_lid) + 1, kDropPort);
  return st;
}

void parallel_link_groups(const Fabric& f, const Switches& sw, Tables& t) {
  t.ar_group.assign(f.size(), {});
  t.ar_sets.assign(f.size(), {});
  parallel_for(sw.nodes.size(), [&](size_t si) {
    const NodeIndex n = sw.nodes[si];
    const auto& nd = f.node(n);
    // Port -> its group: the ports to one next switch, when there are two or more.
    std::vector<uint16_t> of_port(nd.ports.size(), Tables::kNoArGroup);
    std::map<NodeIndex, std::vector<PortNum>> to_peer;
    for (const auto& p : nd.ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch()) to_peer[p.peer].push_back(p.num);
    for (auto& [peer, ports] : to_peer) {
      if (ports.size() < 2) continue;
      for (PortNum p : ports) of_port[p] = static_cast<uint16_t>(t.ar_sets[n].size());
      t.ar_sets[n].push_back(ports);
    }
    const auto& row = t.lft[n];
    auto& group = t.ar_group[n];
    group.assign(row.size(), Tables::kNoArGroup);
    for (size_t lid = 1; lid < row.size(); ++lid)
      if (row[lid] < of_port.size()) group[lid] = of_port[row[lid]];
  });
}

}  // namespace weft::routing::detail
