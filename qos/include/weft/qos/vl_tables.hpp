// weft/qos/vl_tables.hpp — SL-to-VL mapping and VL arbitration tables from
// OpenSM's qos_* options (qos_max_vls, qos_high_limit, qos_vlarb_high,
// qos_vlarb_low, qos_sl2vl, each also per port type: qos_ca_, qos_sw0_,
// qos_swe_, qos_rtr_), with OpenSM's defaults and its masking of VLs by a
// port's operational VLs. A routing engine's VL layers are merged in: its
// layer SLs 0..L-1 travel on VLs 0..L-1 on every port, whatever qos_sl2vl says.
//
//   auto q = weft::qos::qos_from_options(values);           // checked when loaded
//   auto sl2vl = weft::qos::port_sl2vl(q->swe, oper_vls, layers);
//   auto blk = weft::qos::vlarb_block(q->swe.low, 0, port.vl_arb_low_cap, oper_vls);
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "weft/config/options.hpp"
#include "weft/fabric/fabric.hpp"
#include "weft/result.hpp"

namespace weft::qos {

using Sl2Vl = std::array<uint8_t, 16>;  // VL per SL
using VlArbBlock = std::array<config::VlArbEntry, 32>;

struct QosPortConfig {
  uint8_t max_vls = 15;
  uint8_t high_limit = 0;
  std::vector<config::VlArbEntry> high, low;  // up to 64 entries each
  Sl2Vl sl2vl{};
};

struct QosConfig {
  bool enabled = false;  // OpenSM's `qos`
  QosPortConfig ca, sw0, swe, rtr;

  // The settings port `p` of `nd` gets (OpenSM's classes): a switch's port 0 (sw0), its
  // external ports (swe), a router's ports (rtr), a CA's (ca). The SA, the port and
  // table programmers and REST all ask here.
  const QosPortConfig& for_port(const fabric::Node& nd, PortNum p) const {
    if (nd.is_switch()) return p == 0 ? sw0 : swe;
    return nd.type == fabric::NodeType::kRouter ? rtr : ca;
  }
};

// OpenSM's defaults for the qos_* options left unset.
extern const char* const kDefaultVlarbHigh;
extern const char* const kDefaultVlarbLow;
extern const char* const kDefaultSl2Vl;

Result<QosConfig> qos_from_options(const config::Values& v);

// The SL2VL table a port gets: `c.sl2vl`, with SLs 0..layers-1 on VLs 0..layers-1
// when a routing engine layers (layers > 1), VLs masked to the port's operational
// VLs (OperVLs code 1..5) as OpenSM masks them; VL 15 (drop) is kept.
Sl2Vl port_sl2vl(const QosPortConfig& c, uint8_t oper_vls, uint8_t layers);
// The same for routes whose VL a switch picks per hop (routing's Tables::hop_vl): the
// engine's map (SL s's VL in bits 4s..4s+3; 0xF: an SL the routes leave to `c`) over
// `c.sl2vl`, masked alike.
Sl2Vl hop_sl2vl(const QosPortConfig& c, uint8_t oper_vls, uint64_t hop_map);
// Block `block` (0: entries 0-31, 1: entries 32-63) of an arbitration table for a
// port of `cap` entries: entries beyond the cap are zero, VLs are masked.
VlArbBlock vlarb_block(const std::vector<config::VlArbEntry>& list, size_t block, size_t cap,
                       uint8_t oper_vls);

std::string sl2vl_str(const Sl2Vl& t);  // "0,1,2,...,7"

// Data VLs a PortInfo OperVLs / VLCap code stands for: 1=VL0 2=VL0-1 3=VL0-3 4=VL0-7
// 5=VL0-14 (codes outside 1-5 clamp).
uint8_t data_vls(uint8_t oper_vls);

}  // namespace weft::qos
