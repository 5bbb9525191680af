// weft/roce/device.hpp — what one host NIC port or one switch holds for RoCE, in one
// vendor-neutral shape: rendered from the profile (what it should hold), or read from a
// device (what it does hold). Every field is optional: a device that does not report
// one leaves it empty, and neither the checks nor the diff invent it.
//
//   auto want = weft::roce::intend_host(profile, &fabric, host, port);
//   auto have = weft::roce::parse_host_snapshot(json_text, "h1.json");
//   auto findings = weft::roce::diff(want, *have);
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/roce/fabric.hpp"
#include "weft/roce/profile.hpp"

namespace weft::roce {

using roce::EcnThresholds;
using roce::EtsTc;
using roce::PfcWatchdog;
using roce::RoceFabric;
using roce::RoceProfile;
using roce::Trust;
using roce::Tsa;

using DscpMap = std::array<uint8_t, 64>;  // DSCP -> priority (hosts) or TC (switches)
using PrioMap = std::array<uint8_t, 8>;

// One host NIC port: iproute2 dcb objects, mlx5 ecn/ sysfs, rdma_cm configfs.
struct HostConfig {
  std::string device, port;  // host name, ifname
  std::optional<Trust> trust;
  std::optional<DscpMap> dscp_prio;  // app table; DSCPs without an entry are priority 0
  std::optional<uint8_t> pfc_mask;
  std::optional<int> pfc_delay;  // cable length in metres (mlx5 reads dcb's delay so)
  std::optional<PrioMap> prio_tc;
  std::optional<std::array<EtsTc, 8>> ets;
  std::optional<PrioMap> prio_buffer;
  std::optional<uint8_t> np_mask, rp_mask;  // ecn/roce_np|rp/enable/<prio>
  std::optional<int> cnp_dscp, cnp_prio;
  std::map<std::string, int64_t> dcqcn;  // knob -> value, as reported
  std::optional<int> tos;
  std::optional<int> roce_mode;  // rdma_cm default_roce_mode: 1 (IB/RoCE v1) or 2 (RoCE v2)
  std::optional<int> mtu;
};

struct QueueSched {
  Tsa tsa = Tsa::kEts;
  int weight = 0;
  bool operator==(const QueueSched&) const = default;
};

struct BufferPg {
  bool lossless = false;
  uint64_t size = 0, xon = 0, xoff = 0;  // bytes; lossless PGs only
  bool operator==(const BufferPg&) const = default;
};

struct SwitchPort {
  std::string name;
  std::optional<Trust> trust;
  std::optional<DscpMap> dscp_tc;
  std::optional<PrioMap> tc_queue, tc_pg, pfc_queue;
  std::optional<uint8_t> pfc_mask;
  std::map<int, QueueSched> sched;    // queue -> scheduler
  std::map<int, EcnThresholds> wred;  // queue -> WRED with ECN marking
  std::map<int, bool> wred_ecn;       // queue -> ECN on (false: WRED drops)
  std::map<int, BufferPg> pgs;        // PG -> buffer profile
  std::optional<uint64_t> cable_m;    // the cable length the buffers were sized for
  std::optional<int> mtu;
  std::optional<uint64_t> speed_mbps;
  std::optional<PfcWatchdog> watchdog;
  // The switch sizes lossless headroom itself from the cable length (Cumulus; SONiC's
  // dynamic buffer model, BUFFER_PG profile NULL): pgs carry no sizes.
  bool headroom_by_device = false;
  // The switch runs the PFC watchdog on its own timers (Cumulus): on or off is all there is.
  bool watchdog_timing_by_device = false;
};

struct SwitchConfig {
  std::string device;
  std::vector<SwitchPort> ports;
  const SwitchPort* port(const std::string& n) const {
    for (const auto& p : ports)
      if (p.name == n) return &p;
    return nullptr;
  }
};

// The PFC priorities the profile asks for: none when the mode is lossy.
uint8_t lossless_priorities(const RoceProfile& p);
// A priority set as "3,4" (`none` when empty).
std::string priority_list(uint8_t mask, const char* none = "none");
// An 8-entry map as "0:0 1:0 2:0 3:3 ...", as dcb writes prio-tc and prio-buffer.
std::string prio_map_text(const PrioMap& m);

// The priority group a lossless priority's traffic is buffered in (PG p for lossless
// priority p, PG 0 for the rest).
PrioMap intended_tc_pg(const RoceProfile& p);

// What a host port / a switch should hold. Without a fabric (or for a port without a
// link) the cable and speed dependent fields (headroom, cable length) are left empty.
HostConfig intend_host(const RoceProfile& p, const RoceFabric* f, int device, int port);
HostConfig intend_host(const RoceProfile& p, const std::string& host, const std::string& ifname);
SwitchConfig intend_switch(const RoceProfile& p, const RoceFabric* f, int device);

// A weft topology (generator spec, ibnetdiscover dump, ibsim net file) as an Ethernet
// fabric: switches keep their names (or sw-GUID), CAs become hosts; switch port n is
// Ethernet<4(n-1)>, host port n is eth<n-1>; every link gets `speed_mbps` and `length_m`.
RoceFabric roce_fabric_from_topology(const fabric::Fabric& t, uint64_t speed_mbps,
                                     uint64_t length_m);

// A port's fields as (name, value) text pairs, in a fixed order: what the diff compares.
using Fields = std::vector<std::pair<std::string, std::string>>;
Fields flatten(const HostConfig& h);
Fields flatten(const SwitchPort& p);
// The field a DCQCN knob is flattened to: ecn.roce_rp.<knob> (reaction point) or
// ecn.roce_np.<knob> (notification point).
std::string dcqcn_field(const roce::DcqcnKnob& k);

}  // namespace weft::roce
