#include "weft/sm/multicast.hpp"

#include <algorithm>
#include <functional>
#include <queue>

namespace weft::sm {

using fabric::kNoNode;
using fabric::NodeIndex;

const McGroup& McDb::ensure(const McGroup& proto) {
  if (McGroup* g = find(proto.mgid)) {
    g->well_known = true;
    return *g;
  }
  uint16_t mlid = kMlidBase;
  while (groups_.count(mlid)) ++mlid;
  McGroup g = proto;
  g.mlid = mlid;
  g.well_known = true;
  return groups_[mlid] = g;
}

McGroup* McDb::find(const Gid& mgid) {
  for (auto& [mlid, g] : groups_)
    if (g.mgid == mgid) return &g;
  return nullptr;
}

McGroup* McDb::by_mlid(uint16_t mlid) {
  auto it = groups_.find(mlid);
  return it == groups_.end() ? nullptr : &it->second;
}

std::optional<uint16_t> McDb::create(McGroup g, uint16_t mlid_cap) {
  uint16_t mlid = kMlidBase;
  while (groups_.count(mlid)) ++mlid;
  if (mlid_cap == 0 || mlid >= kMlidBase + mlid_cap || mlid > 0xfffe) return std::nullopt;
  if (g.mgid == Gid{}) {
    // An SA-made MGID (IBTA 4.1.1): 0xff, flags 0x1 (transient), the group's scope,
    // signature 0xA01B, its P_Key, then a counter.
    g.mgid[0] = 0xff;
    g.mgid[1] = uint8_t(0x10 | (g.scope & 0x0f));
    g.mgid[2] = 0xa0;
    g.mgid[3] = 0x1b;
    g.mgid[4] = uint8_t(g.pkey >> 8);
    g.mgid[5] = uint8_t(g.pkey);
    const uint64_t n = ++made_;
    for (int i = 0; i < 8; ++i) g.mgid[15 - i] = uint8_t(n >> (8 * i));
  }
  g.mlid = mlid;
  groups_[mlid] = std::move(g);
  return mlid;
}

bool McDb::leave(const Gid& mgid, uint64_t port, uint8_t state) {
  McGroup* g = find(mgid);
  if (!g) return false;
  auto it = g->members.find(port);
  if (it == g->members.end() || !(it->second & state)) return false;
  it->second &= uint8_t(~state);
  if (!it->second) g->members.erase(it);
  if (g->members.empty() && !g->well_known) groups_.erase(g->mlid);
  return true;
}

std::vector<uint16_t> McDb::prune(const std::function<bool(uint64_t)>& alive) {
  std::vector<uint16_t> changed;
  for (auto it = groups_.begin(); it != groups_.end();) {
    McGroup& g = it->second;
    const size_t before = g.members.size();
    std::erase_if(g.members, [&](const auto& m) { return !alive(m.first); });
    if (g.members.size() != before) changed.push_back(g.mlid);
    if (g.members.empty() && !g.well_known)
      it = groups_.erase(it);
    else
      ++it;
  }
  return changed;
}

namespace {

// BFS over switch-to-switch links from `root`; parent[n] = (parent switch, port of n
// toward it, port of the parent toward n).
struct Bfs {
  std::vector<int> dist;
  std::vector<NodeIndex> parent;
  std::vector<PortNum> up_port, down_port;
};

Bfs bfs(const fabric::Fabric& f, NodeIndex root) {
  Bfs b;
  b.dist.assign(f.size(), -1);
  b.parent.assign(f.size(), kNoNode);
  b.up_port.assign(f.size(), 0);
  b.down_port.assign(f.size(), 0);
  std::queue<NodeIndex> q;
  b.dist[root] = 0;
  q.push(root);
  while (!q.empty()) {
    const NodeIndex n = q.front();
    q.pop();
    const auto& nd = f.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      const auto& port = nd.ports[p];
      if (!port.linked() || !f.node(port.peer).is_switch() || b.dist[port.peer] >= 0) continue;
      b.dist[port.peer] = b.dist[n] + 1;
      b.parent[port.peer] = n;
      b.up_port[port.peer] = port.peer_port;
      b.down_port[port.peer] = p;
      q.push(port.peer);
    }
  }
  return b;
}

}  // namespace

std::map<NodeIndex, std::vector<bool>> multicast_tree(
    const fabric::Fabric& f, const std::vector<std::pair<NodeIndex, PortNum>>& members,
    const std::vector<std::pair<NodeIndex, PortNum>>& senders) {
  std::map<NodeIndex, std::vector<bool>> out;
  if (members.empty()) return out;
  // The switch each end port hangs off (a switch's port 0: the switch itself).
  auto attach = [&](NodeIndex n, PortNum p) -> std::optional<std::pair<NodeIndex, PortNum>> {
    if (f.node(n).is_switch()) return std::pair{n, PortNum(0)};
    const auto& port = f.node(n).ports[p];
    if (!port.linked() || !f.node(port.peer).is_switch()) return std::nullopt;
    return std::pair{port.peer, port.peer_port};
  };
  std::vector<NodeIndex> terminals;
  for (const auto& v : {members, senders})
    for (auto [n, p] : v)
      if (auto a = attach(n, p)) terminals.push_back(a->first);
  std::sort(terminals.begin(), terminals.end());
  terminals.erase(std::unique(terminals.begin(), terminals.end()), terminals.end());
  if (terminals.empty()) return out;
  // Root near the middle of the two terminals farthest apart: a shallow tree.
  auto farthest = [&](const Bfs& b) {
    NodeIndex best = terminals[0];
    for (NodeIndex t : terminals)
      if (b.dist[t] > b.dist[best]) best = t;
    return best;
  };
  const Bfs b0 = bfs(f, terminals[0]);
  const NodeIndex a = farthest(b0);
  const Bfs ba = bfs(f, a);
  NodeIndex root = farthest(ba);
  for (int steps = ba.dist[root] / 2; steps > 0 && ba.parent[root] != kNoNode; --steps)
    root = ba.parent[root];
  const Bfs t = bfs(f, root);
  auto mask = [&](NodeIndex n) -> std::vector<bool>& {
    auto& m = out[n];
    if (m.empty()) m.assign(size_t(f.node(n).num_ports) + 1, false);
    return m;
  };
  std::vector<bool> on_tree(f.size(), false);
  for (NodeIndex term : terminals) {
    if (t.dist[term] < 0) continue;  // not connected to the root: left out
    mask(term);
    for (NodeIndex n = term; n != root && !on_tree[n]; n = t.parent[n]) {
      on_tree[n] = true;
      mask(n)[t.up_port[n]] = true;
      mask(t.parent[n])[t.down_port[n]] = true;
    }
  }
  for (auto [n, p] : members) {
    auto a = attach(n, p);
    if (a && t.dist[a->first] >= 0) mask(a->first)[a->second] = true;
  }
  return out;
}

}  // namespace weft::sm
