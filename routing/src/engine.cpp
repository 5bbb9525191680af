#include "weft/routing/engine.hpp"

#include <algorithm>

#include "minhop.hpp"
#include "updn.hpp"

namespace weft::routing {

namespace {
struct EngineEntry {
  std::string_view name;
  std::unique_ptr<RoutingEngine> (*make)();
};
const EngineEntry kEngines[] = {
    {"minhop", [] { return std::unique_ptr<RoutingEngine>(new MinHopEngine()); }},
    {"updn", [] { return std::unique_ptr<RoutingEngine>(new UpDownEngine()); }},
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
  for (auto [n, p] : f.lid_ports()) {
    const auto& a = f.node(n).ports[p].attrs;
    if (!a.lid.is_unicast()) continue;
    // LMC: a CA port owns 2^LMC LIDs; switch port 0 owns one (base port 0 ignores LMC).
    const int count = f.node(n).is_switch() ? 1 : 1 << a.lmc;
    for (int k = 0; k < count && a.lid.value + k <= Lid::kMaxUnicast; ++k)
      out.push_back({Lid{static_cast<uint16_t>(a.lid.value + k)}, n, p});
  }
  std::sort(out.begin(), out.end(),
            [](const LidOwner& a, const LidOwner& b) { return a.lid < b.lid; });
  return out;
}

}  // namespace weft::routing
