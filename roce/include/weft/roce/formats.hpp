// weft/roce/formats.hpp — device configurations rendered in, and read back from, the
// formats devices really use:
//   hosts:    iproute2 `dcb` commands + mlx5 ecn/ sysfs writes + rdma_cm configfs (a shell
//             script), and the JSON snapshot `weft roce collect` writes (verbatim
//             `dcb -j ... show` output per object, sysfs values nested as directories);
//   switches: SONiC config_db JSON, and Cumulus NVUE `nv set` commands.
//
//   std::string script = weft::roce::render_dcb(host_config, "mlx5_0", 1);
//   auto back = weft::roce::parse_dcb_script(script, "h1.sh");     // HostConfig
//   auto db = weft::roce::parse_sonic(json_text, "leaf1.json");    // SwitchConfig
//   for (auto& w : db->warnings) log(w);
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"
#include "weft/roce/device.hpp"

namespace weft::roce {

template <class T>
struct Parsed {
  T config;
  std::vector<std::string> warnings;  // "file:where: what" — accepted, but worth a look
};

// ---- hosts ----
// A shell script: dcb apptrust/app/pfc/ets/buffer, ip link mtu, ecn sysfs, rdma_cm configfs.
// `rdma` empty: the script finds the RDMA device under /sys/class/net/IF/device/infiniband.
std::string render_dcb(const HostConfig& h, const std::string& rdma, int rdma_port);
Result<Parsed<HostConfig>> parse_dcb_script(std::string_view text, const std::string& source);

// The snapshot `weft roce collect` writes, as dcb would print it once `h` is applied.
nlohmann::json render_host_snapshot(const HostConfig& h);
Result<Parsed<HostConfig>> parse_host_snapshot(std::string_view text, const std::string& source);

// ---- SONiC ----
// Tables: PORT_QOS_MAP, DSCP_TO_TC_MAP, DOT1P_TO_TC_MAP (pcp trust), TC_TO_QUEUE_MAP,
// TC_TO_PRIORITY_GROUP_MAP, MAP_PFC_PRIORITY_TO_QUEUE, WRED_PROFILE, QUEUE, SCHEDULER,
// BUFFER_PROFILE, BUFFER_PG, CABLE_LENGTH, PFC_WD, PORT (mtu, speed).
nlohmann::json render_sonic(const SwitchConfig& s);
// Accepts both reference styles ("AZURE" and "[DSCP_TO_TC_MAP|AZURE]"), both watchdog
// spellings (pfcwd_sw_enable, pfc_wd_sw_enable), key ranges and lists (Ethernet0|3-4,
// Ethernet0,Ethernet4|3). The device name comes from DEVICE_METADATA|localhost.hostname,
// else `device`.
Result<Parsed<SwitchConfig>> parse_sonic(std::string_view text, const std::string& source,
                                         const std::string& device = "");
Result<Parsed<SwitchConfig>> parse_sonic_db(const nlohmann::json& db, const std::string& source,
                                            const std::string& device = "");

// ---- Cumulus NVUE ----
std::string render_nvue(const SwitchConfig& s);
Result<Parsed<SwitchConfig>> parse_nvue(std::string_view text, const std::string& source,
                                        const std::string& device = "");

// What kind of observed file this is: "host" (a snapshot), "sonic", "nvue", "dcb", or "".
std::string sniff_format(std::string_view text);

}  // namespace weft::roce
