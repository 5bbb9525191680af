#include "weft/routing/engine.hpp"

#include <algorithm>

#include "minhop.hpp"

namespace weft::routing {

namespace {
struct EngineEntry {
  std::string_view name;
  std::unique_ptr<RoutingEngine> (*make)();
};
const EngineEntry kEngines[] = {
    {"minhop", [] { return std::unique_ptr<RoutingEngine>(new MinHopEngine()); }},
};
}  // namespace

Result<std::unique_ptr<RoutingEngine>> make_engine(std::string_view name) {
  for (const auto& e : kEngines)
    if (e.name == name) return e.make();
  std::string known;
  for (const auto& e : kEngines) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return fail(Errc::kInvalidInput,
              "unknown routing engine \"" + std::string(name) + "\" (known: " + known + ")");
}

std::vector<std::string_view> engine_names() {
  std::vector<std::string_view> v;
  for (const auto& e : kEngines) v.push_back(e.name);
  return v;
}

std::vector<LidOwner> lid_owners(const fabric::Fabric& f) {
  std::vector<LidOwner> out;
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (nd.is_switch()) {
      if (nd.ports[0].attrs.lid.is_unicast()) out.push_back({nd.ports[0].attrs.lid, n, 0});
      continue;
    }
    for (size_t p = 1; p < nd.ports.size(); ++p) {
      const auto& port = nd.ports[p];
      if (!port.attrs.lid.is_unicast()) continue;
      // LMC: every LID of the port's range belongs to it.
      const int count = 1 << port.attrs.lmc;
      for (int k = 0; k < count && port.attrs.lid.value + k <= Lid::kMaxUnicast; ++k)
        out.push_back(
            {Lid{static_cast<uint16_t>(port.attrs.lid.value + k)}, n, static_cast<PortNum>(p)});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const LidOwner& a, const LidOwner& b) { return a.lid < b.lid; });
  return out;
}

}  // namespace weft::routing
