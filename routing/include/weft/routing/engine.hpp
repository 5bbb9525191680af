// weft/routing/engine.hpp — routing engines behind one interface. An engine is
// pure: an immutable fabric (with LIDs assigned) in, per-switch linear
// forwarding tables out. No MADs, no clocks, no globals.
//
//   auto engine = weft::routing::make_engine("minhop");
//   weft::Result<weft::routing::Tables> t = (*engine)->compute(fabric, {});
//   uint8_t out_port = t->lft[switch_index][lid];
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/fabric/fabric.hpp"

namespace weft::routing {

struct Tables {
  // lft[n] is the LFT of node n (index into Fabric::nodes()); empty for non-switches.
  // lft[n][lid] is the output port, kDropPort where the LID is not routed.
  std::vector<std::vector<PortNum>> lft;
  uint16_t top_lid = 0;            // highest LID in use: LinearFDBTop for every switch
  std::vector<std::string> notes;  // what the engine chose and why (roots, fallbacks)
};

struct Options {
  std::vector<Guid> roots;  // up/down roots (node GUIDs); empty = detect
};

class RoutingEngine {
 public:
  virtual ~RoutingEngine() = default;
  virtual std::string_view name() const = 0;
  [[nodiscard]] virtual Result<Tables> compute(const fabric::Fabric& f, const Options& o) const = 0;
};

// The closed table of engines: {"minhop", "updn"}.
Result<std::unique_ptr<RoutingEngine>> make_engine(std::string_view name);
std::vector<std::string_view> engine_names();

// Every LID in use and where it lives: (lid, node, port). Switches contribute port 0.
struct LidOwner {
  Lid lid;
  fabric::NodeIndex node;
  PortNum port;
};
std::vector<LidOwner> lid_owners(const fabric::Fabric& f);

}  // namespace weft::routing
