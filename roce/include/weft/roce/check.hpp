// weft/roce/check.hpp — the RoCE checks: per host port, per switch port, per link and
// fabric-wide (one mapping everywhere; no cycle in the lossless buffer-dependency graph),
// and the diff of what a device holds against what it should. Every finding names
// device, port, field, expected and observed.
//
//   auto fabric_view = weft::roce::intended(profile, &fabric);   // or observed configs
//   auto findings = weft::roce::check(profile, &fabric, fabric_view);
//   if (weft::roce::errors(findings)) return 1;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/roce/device.hpp"

namespace weft::roce {

enum class Severity : uint8_t { kError, kWarning, kInfo };
const char* severity_name(Severity s);

struct Finding {
  std::string device, port, field, expected, observed;
  Severity severity = Severity::kError;
  std::string check;    // trust, dscp-map, pfc, ets, ecn, cnp, dcqcn, tos, headroom, ...
  std::string message;  // one line for people
};
size_t errors(const std::vector<Finding>& f);
std::string to_text(const Finding& f);

// SONiC's dynamic buffer manager's headroom for one lossless PG (buffer_headroom_mellanox.lua):
// pause quanta per speed from IEEE 802.3 31B.3.7; cable delay at 198,000 km/s; rounded up
// to 1 KiB.
struct Headroom {
  uint64_t xon = 0, xoff = 0, size = 0;
};
Headroom sonic_headroom(uint64_t speed_mbps, uint64_t cable_m, uint64_t port_mtu, int lanes,
                        const roce::AsicParams& asic);

// Devices' configurations, intended or observed, by device name.
struct FabricView {
  std::vector<HostConfig> hosts;
  std::vector<SwitchConfig> switches;
};
FabricView intended(const RoceProfile& p, const RoceFabric* f);

// All checks; `f` may be null (no link, headroom or deadlock checks then).
std::vector<Finding> check(const RoceProfile& p, const RoceFabric* f, const FabricView& v);

// The profile's own consistency: the checks run on what it renders for one host port and
// one switch port, reported against the profile file's lines.
std::vector<Finding> check_profile(const RoceProfile& p);

// Cycles in the lossless buffer-dependency graph over the fabric's routes (ECMP over all
// shortest paths between hosts): a PFC deadlock risk. Proven absent at once when every
// route turn is up*/down* for some orientation; otherwise searched exactly.
std::vector<Finding> check_buffer_dependencies(const RoceProfile& p, const RoceFabric& f);

// Field by field: what `have` holds against `want` (weft roce diff --literal: "is it
// byte for byte what weft renders").
std::vector<Finding> diff(const HostConfig& want, const HostConfig& have);
std::vector<Finding> diff(const SwitchConfig& want, const SwitchConfig& have);

// By effect (roce_effect.cpp): for every value traffic can carry (each DSCP under DSCP
// trust, each PCP under PCP trust), the treatment it meets on each side: lossless or
// not (PFC on its priority; on a switch, a headroom-backed PG and a PFC that pauses its
// queue), ECN (the queue's WRED marking; the host's notification and reaction points),
// and its scheduler (strict, or its share of the weights among the TCs or queues in
// use). The RoCE value or the CNP path treated differently, or another value made
// lossy or starved, is an error naming the first entry on the observed path that
// differs (or the entry that decides); other values treated differently, a warning per
// field; MTU and RoCE mode differences errors, DCQCN knobs and speed warnings. Table
// entries that differ without changing any value's treatment (no traffic reaches them,
// or they mean the same) are `unreached`, info.
struct EffectDiff {
  std::vector<Finding> findings, unreached;
};
EffectDiff diff_effect(const RoceProfile& p, const HostConfig& want, const HostConfig& have);
EffectDiff diff_effect(const RoceProfile& p, const SwitchConfig& want, const SwitchConfig& have);

}  // namespace weft::roce
