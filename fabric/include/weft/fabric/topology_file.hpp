// weft/fabric/topology_file.hpp — readers for the two real topology formats:
// ibsim "net" files (see ibsim-utils' net-examples) and `ibnetdiscover` output.
// Both are read by one grammar (ibnetdiscover output is a superset of the net
// syntax); they differ in defaults: a net file may leave GUIDs out, and then
// gets ibsim's own GUID numbering; an ibnetdiscover dump must carry them.
//
//   auto f = weft::fabric::read_topology_file("fabric.net");   // format by content
//   if (!f) std::cerr << f.error().message;   // "fabric.net:12: port 40 > 36 ports of ..."
#pragma once

#include <string>
#include <string_view>

#include "weft/fabric/fabric.hpp"

namespace weft::fabric {

enum class TopologyFormat { kAuto, kIbsimNet, kIbnetdiscover };

// Parses `text`; `source` names it in error messages (file name).
Result<Fabric> parse_topology(std::string_view text, const std::string& source,
                              TopologyFormat format = TopologyFormat::kAuto);
Result<Fabric> read_topology_file(const std::string& path,
                                  TopologyFormat format = TopologyFormat::kAuto);

// Writes a net file ibsim can load (and this reader reads back): explicit GUIDs,
// node descriptions, and each link on both ends.
std::string write_netfile(const Fabric& f);

}  // namespace weft::fabric
