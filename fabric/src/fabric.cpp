#include "weft/fabric/fabric.hpp"

#include <algorithm>
#include <tuple>

namespace weft::fabric {

const char* node_type_name(NodeType t) {
  switch (t) {
    case NodeType::kCa:
      return "Ca";
    case NodeType::kSwitch:
      return "Switch";
    case NodeType::kRouter:
      return "Rt";
  }
  return "Unknown";
}

const char* port_state_name(PortState s) {
  switch (s) {
    case PortState::kNoChange:
      return "NoChange";
    case PortState::kDown:
      return "Down";
    case PortState::kInit:
      return "Init";
    case PortState::kArmed:
      return "Armed";
    case PortState::kActive:
      return "Active";
  }
  return "Unknown";
}

Result<NodeIndex> Fabric::add_node(Node n) {
  if (by_guid_.contains(n.guid))
    return fail(Errc::kInvalidInput, "duplicate node GUID " + n.guid.str());
  if (!n.name.empty() && by_name_.contains(n.name))
    return fail(Errc::kInvalidInput, "duplicate node name \"" + n.name + "\"");
  if (n.num_ports == 0 || n.num_ports == 0xFF)
    return fail(Errc::kInvalidInput, "node " + n.guid.str() + " has a bad port count " +
                                         std::to_string(n.num_ports) + " (1..254)");
  n.ports.resize(static_cast<size_t>(n.num_ports) + 1);
  for (size_t p = 0; p < n.ports.size(); ++p) n.ports[p].num = static_cast<PortNum>(p);
  const auto idx = static_cast<NodeIndex>(nodes_.size());
  by_guid_.emplace(n.guid, idx);
  if (!n.name.empty()) by_name_.emplace(n.name, idx);
  nodes_.push_back(std::move(n));
  return idx;
}

Result<void> Fabric::connect(NodeIndex a, PortNum pa, NodeIndex b, PortNum pb) {
  if (a >= nodes_.size() || b >= nodes_.size())
    return fail(Errc::kInternal, "connect: node index out of range");
  auto check = [&](NodeIndex n, PortNum p) -> Result<void> {
    const Node& nd = nodes_[n];
    if (p == 0 || p > nd.num_ports)
      return fail(Errc::kInvalidInput, "port " + std::to_string(p) + " out of range 1.." +
                                           std::to_string(nd.num_ports) + " on " +
                                           port_ref(*this, n, 0));
    return {};
  };
  if (auto r = check(a, pa); !r) return r;
  if (auto r = check(b, pb); !r) return r;
  if (a == b && pa == pb)
    return fail(Errc::kInvalidInput, "port linked to itself: " + port_ref(*this, a, pa));
  Port& x = nodes_[a].ports[pa];
  Port& y = nodes_[b].ports[pb];
  if (x.linked() && !(x.peer == b && x.peer_port == pb))
    return fail(Errc::kInvalidInput, port_ref(*this, a, pa) + " is already linked to " +
                                         port_ref(*this, x.peer, x.peer_port));
  if (y.linked() && !(y.peer == a && y.peer_port == pa))
    return fail(Errc::kInvalidInput, port_ref(*this, b, pb) + " is already linked to " +
                                         port_ref(*this, y.peer, y.peer_port));
  x.peer = b;
  x.peer_port = pb;
  y.peer = a;
  y.peer_port = pa;
  return {};
}

void Fabric::disconnect(NodeIndex a, PortNum pa) {
  Port& x = nodes_.at(a).ports.at(pa);
  if (!x.linked()) return;
  Port& y = nodes_.at(x.peer).ports.at(x.peer_port);
  y.peer = kNoNode;
  y.peer_port = 0;
  x.peer = kNoNode;
  x.peer_port = 0;
}

std::optional<NodeIndex> Fabric::find(Guid g) const {
  auto it = by_guid_.find(g);
  if (it == by_guid_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeIndex> Fabric::find_by_name(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<Link> Fabric::links() const {
  std::vector<Link> out;
  for (NodeIndex a = 0; a < nodes_.size(); ++a) {
    for (const Port& p : nodes_[a].ports) {
      if (!p.linked()) continue;
      if (a < p.peer || (a == p.peer && p.num < p.peer_port))
        out.push_back({a, p.num, p.peer, p.peer_port});
    }
  }
  return out;
}

size_t Fabric::num_switches() const {
  return static_cast<size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.is_switch(); }));
}

Result<void> Fabric::set_vports(std::vector<VPort> v) {
  std::sort(v.begin(), v.end(), [](const VPort& a, const VPort& b) {
    return std::tuple(a.node, a.port, a.index) < std::tuple(b.node, b.port, b.index);
  });
  for (size_t i = 0; i < v.size(); ++i) {
    const VPort& x = v[i];
    if (x.node >= nodes_.size() || nodes_[x.node].is_switch() || x.port == 0 ||
        x.port > nodes_[x.node].num_ports)
      return fail(Errc::kInvalidInput, "vport " + std::to_string(x.index) + " of node " +
                                           std::to_string(x.node) + " port " +
                                           std::to_string(x.port) + ": not a CA port");
    if (x.index == 0)
      return fail(Errc::kInvalidInput, "vport 0 of " + port_ref(*this, x.node, x.port) +
                                           " is the port itself, not a vport");
    if (i && v[i - 1].node == x.node && v[i - 1].port == x.port && v[i - 1].index == x.index)
      return fail(Errc::kInvalidInput, "vport " + std::to_string(x.index) + " of " +
                                           port_ref(*this, x.node, x.port) + " listed twice");
  }
  vports_ = std::move(v);
  return {};
}

const VPort* Fabric::find_vport(Guid port_guid) const {
  if (!port_guid.value) return nullptr;
  for (const auto& v : vports_)
    if (v.guid == port_guid) return &v;
  return nullptr;
}

size_t Fabric::num_endpoints() const {
  return nodes_.size() - num_switches();
}

std::vector<std::pair<NodeIndex, PortNum>> Fabric::lid_ports() const {
  std::vector<std::pair<NodeIndex, PortNum>> out;
  for (NodeIndex n = 0; n < nodes_.size(); ++n) {
    const Node& nd = nodes_[n];
    if (nd.is_switch()) {
      out.emplace_back(n, 0);
      continue;
    }
    for (const Port& p : nd.ports)
      if (p.num != 0 && p.linked()) out.emplace_back(n, p.num);
  }
  return out;
}

std::string port_ref(const Fabric& f, NodeIndex n, PortNum p) {
  if (n >= f.size()) return "<node " + std::to_string(n) + ">";
  const Node& nd = f.node(n);
  std::string label = !nd.name.empty() ? nd.name : nd.description;
  std::string s = "\"" + label + "\" (" + nd.guid.str() + ")";
  if (p != 0 || nd.is_switch()) s += " port " + std::to_string(p);
  return s;
}

LaneRate lane_rate(const PortAttrs& a) {
  // PortInfo's LinkSpeedExtActive (FDR and up) wins over LinkSpeedActive.
  switch (a.speed_ext_active) {
    case 1:
      return {14, 14.0625, 14.0625 * 64 / 66};  // FDR
    case 2:
      return {25, 25.78125, 25};  // EDR
    case 4:
      return {50, 53.125, 50};  // HDR
    case 8:
      return {100, 106.25, 100};  // NDR
  }
  switch (a.speed_active) {  // 8b/10b
    case 1:
      return {2.5, 2.5, 2};  // SDR
    case 2:
      return {5, 5, 4};  // DDR
    case 4:
      return {10, 10, 8};  // QDR
  }
  return {};
}

unsigned active_lanes(const PortAttrs& a) {
  switch (a.width_active) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
  }
  return 0;
}

double link_gbps(const PortAttrs& a) {
  const double lane = lane_rate(a).nominal;
  return std::max(active_lanes(a), 1u) * (lane ? lane : 2.5);
}

double data_gbps(const PortAttrs& a) {
  return active_lanes(a) * lane_rate(a).data;
}

double signalling_gbps(const PortAttrs& a) {
  return active_lanes(a) * lane_rate(a).signalling;
}

}  // namespace weft::fabric
