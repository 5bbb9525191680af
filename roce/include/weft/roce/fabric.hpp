// weft/roce/fabric.hpp — the Ethernet fabric a RoCE profile runs on: hosts (NIC
// ports), switches (ports, ASIC buffer parameters) and links with speed and real cable
// length, read from a YAML file. Ports are created by the links that name them.
//
//   asics:                                   # optional; spectrum and spectrum2 are built in
//     myasic: {cell_size: 144, pipeline_latency: 18KiB, mac_phy_delay: 0.8KiB, max_headroom:
//     300KiB}
//   defaults: {speed: 100G, length: 3m}      # for links that leave them out
//   switches:
//     - {name: leaf1, os: sonic, asic: spectrum2}      # os: sonic | cumulus
//   hosts:
//     - {name: host1, ports: [{ifname: eth0, rdma: mlx5_0}]}   # ports optional
//   links:
//     - [leaf1:Ethernet0, host1:eth0, 100G, 3m]
//     - {a: leaf1:Ethernet4, b: spine1:Ethernet0, speed: 400G, length: 300m}
//
//   auto f = roce::load_roce_fabric("fabric.yaml");
//   for (auto& l : f->links) use(f->devices[l.a.device].name, l.length_m);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weft/result.hpp"

namespace weft::roce {

// Buffer parameters SONiC's dynamic buffer manager takes from STATE_DB's ASIC_TABLE and
// CONFIG_DB's LOSSLESS_TRAFFIC_PATTERN (bytes).
struct AsicParams {
  std::string name = "spectrum2";
  uint64_t cell_size = 144;
  uint64_t pipeline_latency = 18 * 1024;
  uint64_t mac_phy_delay = 819;        // 0.8 KiB
  uint64_t peer_response_time = 3891;  // 3.8 KiB, for speeds without a pause-quanta figure
  uint64_t lossless_mtu = 1024;
  uint64_t small_packet_percentage = 100;
  uint64_t max_headroom = 0;  // per port; 0 = not known
  bool operator==(const AsicParams&) const = default;
};

enum class DeviceKind : uint8_t { kHost, kSwitch };
enum class SwitchOs : uint8_t { kSonic, kCumulus };

struct RocePort {
  std::string name;  // Ethernet0, swp1, eth0
  std::string rdma;  // hosts: the RDMA device (mlx5_0), for rdma_cm's configfs
  int rdma_port = 1;
  uint64_t speed_mbps = 0;  // from its link
  int lanes = 0;            // 0: 8 at 400G and above, else 4
  int link = -1;            // index in RoceFabric::links
};

struct RoceDevice {
  std::string name;
  DeviceKind kind = DeviceKind::kHost;
  SwitchOs os = SwitchOs::kSonic;
  AsicParams asic;
  std::vector<RocePort> ports;
  std::unordered_map<std::string, int> port_index;
  int line = 0;
  int port(const std::string& n) const {
    auto it = port_index.find(n);
    return it == port_index.end() ? -1 : it->second;
  }
};

struct PortRef {
  int device = -1;
  int port = -1;
  bool operator==(const PortRef&) const = default;
};

struct RoceLink {
  PortRef a, b;
  uint64_t speed_mbps = 0;
  uint64_t length_m = 0;  // the real cable
  int line = 0;
};

struct RoceFabric {
  std::string source;
  std::vector<RoceDevice> devices;
  std::unordered_map<std::string, int> by_name;
  std::vector<RoceLink> links;

  int device(const std::string& n) const {
    auto it = by_name.find(n);
    return it == by_name.end() ? -1 : it->second;
  }
  // Adds a device (no check for duplicates) and returns its index.
  int add_device(RoceDevice d);
  // Adds a port to a device if it has none by that name; returns its index.
  int add_port(int device, const std::string& name);
  // Links two ports (errors: a port already linked, a port linked to itself).
  Result<int> add_link(PortRef a, PortRef b, uint64_t speed_mbps, uint64_t length_m, int line);
  std::string port_name(PortRef p) const {
    return devices[p.device].name + ":" + devices[p.device].ports[p.port].name;
  }
  PortRef peer(PortRef p) const;  // {-1,-1} when the port has no link
};

// The ASIC parameter sets weft knows by name (SONiC's asic_table.j2 figures).
const std::map<std::string, AsicParams>& builtin_asics();

Result<RoceFabric> parse_roce_fabric(std::string_view text, const std::string& source);
Result<RoceFabric> load_roce_fabric(const std::string& path);

}  // namespace weft::roce
