#include "views.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <charconv>

#include "handlers.hpp"

namespace weft::rest {

using fabric::NodeIndex;
using nlohmann::json;

std::string speed_name(const fabric::PortAttrs& a) {
  switch (a.speed_ext_active) {
    case 1:
      return "FDR";
    case 2:
      return "EDR";
    case 4:
      return "HDR";
    case 8:
      return "NDR";
  }
  switch (a.speed_active) {
    case 1:
      return "SDR";
    case 2:
      return "DDR";
    case 4:
      return "QDR";
  }
  return "";
}

std::string width_name(const fabric::PortAttrs& a) {
  switch (a.width_active) {
    case 1:
      return "1x";
    case 2:
      return "4x";
    case 4:
      return "8x";
    case 8:
      return "12x";
    case 16:
      return "2x";
  }
  return "";
}

const char* phys_state_name(uint8_t s) {
  switch (s) {
    case 1:
      return "Sleep";
    case 2:
      return "Polling";
    case 3:
      return "Disabled";
    case 4:
      return "PortConfigurationTraining";
    case 5:
      return "LinkUp";
    case 6:
      return "LinkErrorRecovery";
    case 7:
      return "PhyTest";
  }
  return "NoChange";
}

int mtu_bytes(uint8_t code) {
  return code >= 1 && code <= 5 ? 128 << code : 0;
}

namespace {

std::string host_of(const fabric::Node& n) {
  return n.description.substr(0, n.description.find_first_of(" \t"));
}

const char* ufm_type(const fabric::Node& n) {
  return n.is_switch() ? "switch" : n.type == fabric::NodeType::kRouter ? "router" : "host";
}

}  // namespace

json node_json(const sm::SubnetSnapshot& s, NodeIndex n) {
  const auto& nd = s.fabric.node(n);
  json j = {{"guid", guid_hex(nd.guid.value)},
            {"type", fabric::node_type_name(nd.type)},
            {"description", nd.description},
            {"ports", nd.num_ports},
            {"system_guid", guid_hex(nd.system_guid.value)},
            {"vendor_id", fmt::format("0x{:06x}", nd.vendor_id)},
            {"device_id", fmt::format("0x{:04x}", nd.device_id)}};
  if (nd.is_switch()) {
    j["lid"] = nd.ports[0].attrs.lid.value;
    j["lft_cap"] = nd.sw.lft_cap;
  } else {
    j["host"] = host_of(nd);
  }
  size_t linked = 0;
  for (const auto& p : nd.ports) linked += p.num && p.linked();
  j["linked_ports"] = linked;
  return j;
}

json port_json(const sm::SubnetSnapshot& s, NodeIndex n, PortNum p) {
  const auto& nd = s.fabric.node(n);
  const auto& port = nd.ports[p];
  const auto& a = port.attrs;
  json j = {{"node_guid", guid_hex(nd.guid.value)},
            {"port", p},
            {"guid", guid_hex(port.guid.value)},
            {"name", fabric::port_ref(s.fabric, n, p)},
            {"state", fabric::port_state_name(a.state)},
            {"phys_state", phys_state_name(a.phys_state)},
            {"width", width_name(a)},
            {"speed", speed_name(a)},
            {"rate_gbps", fabric::signalling_gbps(a)},
            {"mtu", mtu_bytes(a.neighbor_mtu ? a.neighbor_mtu : a.mtu_cap)},
            {"mtu_cap", mtu_bytes(a.mtu_cap)},
            {"vls", a.oper_vls},
            {"vl_cap", a.vl_cap}};
  const PortNum lid_port = nd.is_switch() ? 0 : p;
  j["lid"] = nd.ports[lid_port].attrs.lid.value;
  j["lmc"] = nd.ports[lid_port].attrs.lmc;
  j["sm_lid"] = nd.ports[lid_port].attrs.sm_lid.value;
  if (port.linked()) {
    const auto& peer = s.fabric.node(port.peer);
    j["peer"] = {{"node_guid", guid_hex(peer.guid.value)},
                 {"port", port.peer_port},
                 {"name", fabric::port_ref(s.fabric, port.peer, port.peer_port)}};
  } else {
    j["peer"] = nullptr;
  }
  if (n < s.pkey_tables.size() && p < s.pkey_tables[n].size() && !s.pkey_tables[n][p].empty()) {
    json keys = json::array();
    for (uint16_t k : s.pkey_tables[n][p])
      if (k & 0x7fff) keys.push_back(fmt::format("0x{:04x}", k));
    j["pkeys"] = keys;
  }
  // SR-IOV virtual ports behind a CA port, as the last sweep found them.
  json vports = json::array();
  const auto& vps = s.fabric.vports();
  for (size_t i = 0; i < vps.size(); ++i) {
    const auto& v = vps[i];
    if (v.node != n || v.port != p) continue;
    json keys = json::array();
    if (i < s.partitions.vport_pkeys.size())
      for (uint16_t k : s.partitions.vport_pkeys[i]) keys.push_back(fmt::format("0x{:04x}", k));
    vports.push_back({{"index", v.index},
                      {"guid", guid_hex(v.guid.value)},
                      {"node_guid", guid_hex(v.node_guid.value)},
                      {"description", v.description},
                      {"state", fabric::port_state_name(v.state)},
                      {"lid_required", v.lid_required},
                      {"lid", v.lid_required ? v.lid.value : nd.ports[p].attrs.lid.value},
                      {"pkeys", std::move(keys)}});
  }
  if (!vports.empty()) j["vports"] = std::move(vports);
  return j;
}

json link_json(const sm::SubnetSnapshot& s, const fabric::Link& l) {
  const auto& a = s.fabric.node(l.a).ports[l.pa].attrs;
  return {{"a",
           {{"node_guid", guid_hex(s.fabric.node(l.a).guid.value)},
            {"port", l.pa},
            {"name", fabric::port_ref(s.fabric, l.a, l.pa)}}},
          {"b",
           {{"node_guid", guid_hex(s.fabric.node(l.b).guid.value)},
            {"port", l.pb},
            {"name", fabric::port_ref(s.fabric, l.b, l.pb)}}},
          {"width", width_name(a)},
          {"speed", speed_name(a)},
          {"state", fabric::port_state_name(a.state)}};
}

json ufm_system(const sm::SubnetSnapshot& s, NodeIndex n) {
  const auto& nd = s.fabric.node(n);
  json ports = json::array();
  for (PortNum p = 1; p <= nd.num_ports; ++p)
    if (nd.ports[p].linked()) ports.push_back(fmt::format("{}_{}", guid_ufm(nd.guid.value), p));
  const std::string name = nd.is_switch() ? nd.description : host_of(nd);
  return {{"system_name", name.empty() ? guid_ufm(nd.guid.value) : name},
          {"description", nd.description},
          {"guid", guid_ufm(nd.guid.value)},
          {"system_guid", guid_ufm(nd.system_guid.value)},
          {"type", ufm_type(nd)},
          {"ip", "0.0.0.0"},
          {"vendor", fmt::format("0x{:06x}", nd.vendor_id)},
          {"model", fmt::format("0x{:04x}", nd.device_id)},
          {"state", "active"},
          {"severity", "Info"},
          {"technology", "IB"},
          {"role", nd.is_switch() ? "switch" : "endpoint"},
          {"ports", ports},
          {"modules", json::array()},
          {"capabilities", json::array()}};
}

json ufm_port(const sm::SubnetSnapshot& s, NodeIndex n, PortNum p) {
  const auto& nd = s.fabric.node(n);
  const auto& port = nd.ports[p];
  const auto& a = port.attrs;
  const PortNum lid_port = nd.is_switch() ? 0 : p;
  json j = {{"name", fmt::format("{}_{}", guid_ufm(nd.guid.value), p)},
            {"guid", guid_ufm(port.guid.value)},
            {"number", p},
            {"dname", std::to_string(p)},
            {"system_id", guid_ufm(nd.guid.value)},
            {"system_name", nd.is_switch() ? nd.description : host_of(nd)},
            {"node_description", nd.description},
            {"lid", nd.ports[lid_port].attrs.lid.value},
            {"physical_state", phys_state_name(a.phys_state)},
            {"logical_state", fabric::port_state_name(a.state)},
            {"active_speed", speed_name(a)},
            {"active_width", width_name(a)},
            {"mtu", mtu_bytes(a.neighbor_mtu ? a.neighbor_mtu : a.mtu_cap)},
            {"severity", "Info"},
            {"environment", nd.is_switch() ? "Switch" : "Host"},
            {"capabilities", json::array()}};
  if (port.linked()) {
    const auto& peer = s.fabric.node(port.peer);
    j["peer"] = fmt::format("{}_{}", guid_ufm(peer.guid.value), port.peer_port);
    j["peer_guid"] = guid_ufm(peer.ports[peer.is_switch() ? 0 : port.peer_port].guid.value);
    j["peer_node_name"] = peer.description;
    j["peer_port_dname"] = std::to_string(port.peer_port);
    j["peer_lid"] = peer.ports[peer.is_switch() ? 0 : port.peer_port].attrs.lid.value;
  } else {
    j["peer"] = "";
  }
  return j;
}

json ufm_link(const sm::SubnetSnapshot& s, const fabric::Link& l) {
  const auto& na = s.fabric.node(l.a);
  const auto& nb = s.fabric.node(l.b);
  const auto& a = na.ports[l.pa].attrs;
  return {{"source_guid", guid_ufm(na.guid.value)},
          {"source_port", l.pa},
          {"source_port_dname", std::to_string(l.pa)},
          {"source_port_node_description", na.description},
          {"destination_guid", guid_ufm(nb.guid.value)},
          {"destination_port", l.pb},
          {"destination_port_dname", std::to_string(l.pb)},
          {"destination_port_node_description", nb.description},
          {"width", "IB_" + width_name(a)},
          {"speed", speed_name(a)},
          {"name", fmt::format("{}_{}:{}_{}", guid_ufm(na.guid.value), l.pa,
                               guid_ufm(nb.guid.value), l.pb)},
          {"severity", "Info"},
          {"capabilities", json::array()}};
}

std::optional<NodeIndex> find_node(const sm::SubnetSnapshot& s, Guid g) {
  if (auto n = s.fabric.find(g)) return n;
  if (auto it = s.end_ports.find(g.value); it != s.end_ports.end()) return it->second.first;
  return std::nullopt;
}

std::optional<std::pair<NodeIndex, PortNum>> find_end_port(const sm::SubnetSnapshot& s,
                                                           const std::string& spec,
                                                           std::string* why) {
  if (auto g = daemon::parse_port_guid(spec)) {
    if (auto it = s.end_ports.find(g->value); it != s.end_ports.end()) return it->second;
    if (auto n = s.fabric.find(*g)) {
      const auto& nd = s.fabric.node(*n);
      if (nd.is_switch()) return std::pair{*n, PortNum(0)};
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        if (nd.ports[p].linked()) return std::pair{*n, p};
    }
    *why = "no port or node with GUID " + g->str();
    return std::nullopt;
  }
  unsigned lid = 0;
  if (auto [p, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), lid);
      ec == std::errc() && p == spec.data() + spec.size()) {
    for (const auto& [guid, np] : s.end_ports) {
      const auto& a = s.fabric.node(np.first).ports[np.second].attrs;
      if (lid >= a.lid.value && lid < a.lid.value + (1u << a.lmc)) return np;
    }
    *why = "no port holds LID " + spec;
    return std::nullopt;
  }
  std::optional<std::pair<NodeIndex, PortNum>> hit;
  size_t hits = 0;
  for (NodeIndex n = 0; n < s.fabric.size(); ++n) {
    const auto& nd = s.fabric.node(n);
    if (nd.description != spec && host_of(nd) != spec) continue;
    for (PortNum p = nd.is_switch() ? 0 : 1; p <= (nd.is_switch() ? 0 : nd.num_ports); ++p)
      if (nd.is_switch() || nd.ports[p].linked()) {
        if (!hit) hit = std::pair{n, p};
        ++hits;
        break;
      }
  }
  if (hits == 1) return hit;
  *why = hits ? "\"" + spec + "\" names " + std::to_string(hits) + " nodes; give a GUID or a LID"
              : "no node is described as \"" + spec + "\"";
  return std::nullopt;
}

}  // namespace weft::rest
