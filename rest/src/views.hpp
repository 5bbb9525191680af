// The fabric as JSON, in weft's own shapes (/api/v1) and in UFM's (/ufmRest).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "weft/sm/snapshot.hpp"

namespace weft::rest {

std::string speed_name(const fabric::PortAttrs& a);  // "EDR", "HDR", ...; "" unknown
std::string width_name(const fabric::PortAttrs& a);  // "4x", ...
const char* phys_state_name(uint8_t s);              // "LinkUp", "Polling", ...
int mtu_bytes(uint8_t code);                         // 256..4096; 0 unknown

// Native shapes.
nlohmann::json node_json(const sm::SubnetSnapshot& s, fabric::NodeIndex n);
nlohmann::json port_json(const sm::SubnetSnapshot& s, fabric::NodeIndex n, PortNum p);
nlohmann::json link_json(const sm::SubnetSnapshot& s, const fabric::Link& l);

// UFM shapes: systems, ports ("<node guid>_<port>"), links.
nlohmann::json ufm_system(const sm::SubnetSnapshot& s, fabric::NodeIndex n);
nlohmann::json ufm_port(const sm::SubnetSnapshot& s, fabric::NodeIndex n, PortNum p);
nlohmann::json ufm_link(const sm::SubnetSnapshot& s, const fabric::Link& l);

// A node by its node GUID, or by one of its port GUIDs (a CA's).
std::optional<fabric::NodeIndex> find_node(const sm::SubnetSnapshot& s, Guid g);
// An end port named by a port or node GUID, a LID, or a node description (or its first
// word, the host name): nullopt when nothing, or more than one, matches.
std::optional<std::pair<fabric::NodeIndex, PortNum>> find_end_port(const sm::SubnetSnapshot& s,
                                                                   const std::string& spec,
                                                                   std::string* why);

}  // namespace weft::rest
