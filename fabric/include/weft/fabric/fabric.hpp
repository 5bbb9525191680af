// weft/fabric/fabric.hpp — the subnet model: nodes (switch / CA / router),
// their ports, the links between ports, and the attributes PortInfo,
// NodeInfo and SwitchInfo report. Discovery fills one; the simulator is built
// from one; routing reads one. No I/O here.
//
//   weft::fabric::Fabric f;
//   auto sw = f.add_node({.type = NodeType::kSwitch, .guid = {0x10}, .num_ports = 36});
//   auto ca = f.add_node({.type = NodeType::kCa, .guid = {0x20}, .num_ports = 1});
//   if (auto r = f.connect(*sw, 1, *ca, 1); !r) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "weft/result.hpp"
#include "weft/types.hpp"

namespace weft::fabric {

enum class NodeType : uint8_t { kCa = 1, kSwitch = 2, kRouter = 3 };
const char* node_type_name(NodeType t);

// IBTA PortInfo:PortState.
enum class PortState : uint8_t { kNoChange = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4 };
const char* port_state_name(PortState s);

// Encodings are the IBTA ones (PortInfo), so they pass to and from MADs unchanged.
struct PortAttrs {
  Lid lid;
  uint8_t lmc = 0;
  Lid sm_lid;
  PortState state = PortState::kDown;
  uint8_t phys_state = 2;     // 2 polling, 3 disabled, 5 LinkUp
  uint8_t width_enabled = 0;  // bit mask: 1=1x 2=4x 4=8x 8=12x 16=2x
  uint8_t width_supported = 0;
  uint8_t width_active = 0;
  uint8_t speed_enabled = 0;  // bit mask: 1=SDR 2=DDR 4=QDR
  uint8_t speed_supported = 0;
  uint8_t speed_active = 0;
  uint8_t speed_ext_active = 0;  // 1=FDR 2=EDR 4=HDR 8=NDR (0 = none)
  uint8_t mtu_cap = 0;           // 1=256 .. 5=4096
  uint8_t neighbor_mtu = 0;
  uint8_t vl_cap = 0;  // 1=VL0 2=VL0-1 3=VL0-3 4=VL0-7 5=VL0-14
  uint8_t oper_vls = 0;
  uint32_t capability_mask = 0;
  bool operator==(const PortAttrs&) const = default;
};

// One lane of a port's active speed in Gb/s (the one table of lane rates): `nominal` as
// the speed is named and the SA's rates count (SDR 2.5, DDR 5, QDR 10, FDR 14, EDR 25,
// HDR 50, NDR 100), `signalling` the exact line rate (FDR 14.0625, EDR 25.78125, HDR
// 53.125, NDR 106.25), `data` after 8b/10b or 64b/66b encoding (SDR 2, DDR 4, QDR 8,
// FDR 13.64, EDR 25, HDR 50, NDR 100). All 0 when no speed is active.
struct LaneRate {
  double nominal = 0, signalling = 0, data = 0;
};
LaneRate lane_rate(const PortAttrs& a);
// Lanes of PortInfo's active width (1x, 2x, 4x, 8x, 12x); 0 when none is.
unsigned active_lanes(const PortAttrs& a);
// A link's nominal rate (4x EDR: 100); 1x SDR for what a port does not say.
double link_gbps(const PortAttrs& a);
// A link's data rate (4x FDR: 54.55); 0 when not active.
double data_gbps(const PortAttrs& a);
// A link's exact signalling rate (4x EDR: 103.125); 0 when not active.
double signalling_gbps(const PortAttrs& a);
// The MTU a link carries (PortInfo's NeighborMTU, else MTUCap), as the code 1..5.
inline uint8_t link_mtu(const PortAttrs& a) {
  return a.neighbor_mtu ? a.neighbor_mtu : a.mtu_cap;
}

using NodeIndex = uint32_t;
constexpr NodeIndex kNoNode = 0xFFFFFFFF;

struct Port {
  PortNum num = 0;
  Guid guid;  // port GUID; a switch's ports all carry port 0's GUID
  PortAttrs attrs;
  NodeIndex peer = kNoNode;
  PortNum peer_port = 0;
  bool linked() const { return peer != kNoNode; }
};

struct SwitchAttrs {
  uint16_t lft_cap = 0;  // LinearFDBCap
  uint16_t mft_cap = 0;  // MulticastFDBCap
  uint16_t lft_top = 0;  // LinearFDBTop
  uint8_t lifetime = 0;
  bool enhanced_port0 = false;
  bool operator==(const SwitchAttrs&) const = default;
};

struct Node {
  NodeType type = NodeType::kCa;
  Guid guid;
  Guid system_guid;
  uint8_t num_ports = 0;
  std::string description;  // NodeDescription (what ibnetdiscover shows after '#')
  std::string name;         // the node id of a topology file; may be empty
  uint32_t vendor_id = 0;
  uint16_t device_id = 0;
  uint32_t revision = 0;
  uint16_t partition_cap = 0;
  SwitchAttrs sw;           // meaningful for switches only
  std::vector<Port> ports;  // index = port number; [0] is the switch management port
                            // (unused on CAs and routers)
  bool is_switch() const { return type == NodeType::kSwitch; }
  // The port that carries the node's LID: 0 on a switch.
  const Port& port(PortNum n) const { return ports.at(n); }
};

// An SR-IOV virtual port behind a CA port (NVIDIA's virtualization: weft/mad/vport.hpp),
// a VF as the SM found it; vport 0, the physical function, is the port itself and is not
// listed. A vport that requires a LID holds its own (`lid`, given by the SM); one that
// does not answers on its port's LID.
struct VPort {
  NodeIndex node = 0;
  PortNum port = 0;
  uint16_t index = 0;  // 1.. (VirtualizationInfo's vport index)
  Guid guid;           // its port GUID (0: the host has given it none yet)
  Guid node_guid;      // its virtual node's GUID
  PortState state = PortState::kDown;
  bool lid_required = false;
  Lid lid;                     // its own LID; 0 where it shares its port's
  uint16_t partition_cap = 0;  // entries of its VPortPKeyTable
  std::string description;     // VNodeDescription
  bool operator==(const VPort&) const = default;
};

// A link as seen from its lower (node, port) end, for listings and comparisons.
struct Link {
  NodeIndex a;
  PortNum pa;
  NodeIndex b;
  PortNum pb;
};

class Fabric {
 public:
  // Adds a node; fails if its GUID is already present. `ports` is sized from num_ports.
  Result<NodeIndex> add_node(Node n);
  // Room for `nodes` nodes, so that adding them moves and rehashes nothing.
  void reserve(size_t nodes) {
    nodes_.reserve(nodes);
    by_guid_.reserve(nodes);
    by_name_.reserve(nodes);
  }
  // Connects two ports; fails on a bad index/port or a port that is already linked
  // (to anything other than exactly this peer).
  Result<void> connect(NodeIndex a, PortNum pa, NodeIndex b, PortNum pb);
  void disconnect(NodeIndex a, PortNum pa);

  const std::vector<Node>& nodes() const { return nodes_; }
  Node& node(NodeIndex i) { return nodes_.at(i); }
  const Node& node(NodeIndex i) const { return nodes_.at(i); }
  size_t size() const { return nodes_.size(); }
  std::optional<NodeIndex> find(Guid node_guid) const;
  std::optional<NodeIndex> find_by_name(const std::string& name) const;

  // The virtual ports found behind CA ports, ordered by (node, port, index).
  const std::vector<VPort>& vports() const { return vports_; }
  std::vector<VPort>& vports() { return vports_; }
  // Replaces them (sorted here); fails on a node or port that is no CA port, a vport
  // index 0, or one listed twice.
  Result<void> set_vports(std::vector<VPort> v);
  // The vport with this port GUID, if any (GUID 0: none); a linear search.
  const VPort* find_vport(Guid port_guid) const;

  // Every link once, ordered by (a, pa).
  std::vector<Link> links() const;
  size_t num_switches() const;
  size_t num_endpoints() const;  // CA + router nodes
  // The ports that hold a LID, in node order: switch port 0, every linked CA/router port.
  std::vector<std::pair<NodeIndex, PortNum>> lid_ports() const;
  size_t num_lid_ports() const { return lid_ports().size(); }

 private:
  std::vector<Node> nodes_;
  std::unordered_map<Guid, NodeIndex> by_guid_;
  std::unordered_map<std::string, NodeIndex> by_name_;
  std::vector<VPort> vports_;
};

// A human-readable reference to a port, e.g. `"leaf3" (0x0002c90300001003) port 7`.
std::string port_ref(const Fabric& f, NodeIndex n, PortNum p);

}  // namespace weft::fabric
