#include "weft/routing/engine.hpp"

#include <algorithm>
#include <charconv>
#include <istream>
#include <tuple>

#include "dfsssp.hpp"
#include "ftree.hpp"
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
    {"updn", [] { return std::unique_ptr<RoutingEngine>(new UpDownEngine(false)); }},
    {"dnup", [] { return std::unique_ptr<RoutingEngine>(new UpDownEngine(true)); }},
    {"ftree", [] { return std::unique_ptr<RoutingEngine>(new FatTreeEngine()); }},
    {"dfsssp", [] { return std::unique_ptr<RoutingEngine>(new DfssspEngine()); }},
};
}  // namespace

const char* refusal_name(Refusal r) {
  switch (r) {
    case Refusal::kInvalidInput:
      return "invalid-input";
    case Refusal::kTopology:
      return "topology";
    case Refusal::kVirtualLanes:
      return "virtual-lanes";
    case Refusal::kDisconnected:
      return "disconnected";
  }
  return "unknown";
}

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

Result<EngineChain> EngineChain::parse(std::string_view spec) {
  EngineChain c;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view name = spec.substr(pos, comma - pos);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty())
      return fail(Errc::kInvalidInput,
                  "routing engine list \"" + std::string(spec) + "\" has an empty name");
    auto e = make_engine(name);
    if (!e) return std::unexpected(e.error());
    for (auto known : c.names_)
      if (known == (*e)->name())
        return fail(Errc::kInvalidInput, "routing engine list \"" + std::string(spec) +
                                             "\" names " + std::string(name) + " twice");
    c.names_.push_back((*e)->name());
    c.engines_.push_back(std::move(*e));
    pos = comma + 1;
  }
  return c;
}

ChainResult EngineChain::compute(const fabric::Fabric& f, const Options& o) const {
  ChainResult r;
  for (const auto& e : engines_) {
    auto t = e->compute(f, o);
    if (t) {
      r.tables = std::move(*t);
      r.engine = std::string(e->name());
      return r;
    }
    r.fallbacks.push_back({std::string(e->name()), std::move(t.error())});
    // Bad input stays bad for every engine: say so once instead of N times.
    if (r.fallbacks.back().failure.kind == Refusal::kInvalidInput) break;
  }
  return r;
}

std::string ChainResult::summary() const {
  std::string s;
  for (const auto& fb : fallbacks)
    s += fb.engine + " refused (" + refusal_name(fb.failure.kind) + "): " + fb.failure.message +
         "; ";
  s += tables ? "routed by " + engine : "no engine routed";
  return s;
}

std::vector<std::pair<fabric::NodeIndex, PortNum>> topology_order(const fabric::Fabric& f) {
  struct Item {
    fabric::NodeIndex pod, leaf;
    PortNum leaf_port;
    fabric::NodeIndex ca;
    PortNum ca_port;
  };
  std::vector<Item> items;
  std::vector<fabric::NodeIndex> pod(f.size(), ~fabric::NodeIndex{0});
  for (auto [n, p] : f.lid_ports()) {
    const auto& nd = f.node(n);
    if (nd.is_switch()) continue;
    const auto& port = nd.ports[p];
    if (!port.linked() || !f.node(port.peer).is_switch()) continue;
    const fabric::NodeIndex leaf = port.peer;
    if (pod[leaf] == ~fabric::NodeIndex{0}) {
      // Leaves are grouped by their lowest-numbered switch neighbour: in a tree, the
      // leaves of one pod share their up neighbours.
      fabric::NodeIndex lowest = leaf;
      for (const auto& q : f.node(leaf).ports)
        if (q.num && q.linked() && f.node(q.peer).is_switch()) lowest = std::min(lowest, q.peer);
      pod[leaf] = lowest;
    }
    items.push_back({pod[leaf], leaf, port.peer_port, n, p});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.pod, a.leaf, a.leaf_port) < std::tie(b.pod, b.leaf, b.leaf_port);
  });
  std::vector<std::pair<fabric::NodeIndex, PortNum>> out;
  out.reserve(items.size());
  for (const auto& i : items) out.emplace_back(i.ca, i.ca_port);
  return out;
}

Result<std::vector<Guid>> read_guid_list(std::istream& in, const std::string& origin) {
  std::vector<Guid> out;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    const auto e = line.find_last_not_of(" \t\r");
    const std::string word = line.substr(b, e - b + 1);
    uint64_t v = 0;
    const char* first = word.data() + 2;
    auto [p, ec] = std::from_chars(first, word.data() + word.size(), v, 16);
    if (!(word.starts_with("0x") || word.starts_with("0X")) || ec != std::errc() ||
        p != word.data() + word.size() || p == first)
      return fail(Errc::kInvalidInput, origin + ":" + std::to_string(lineno) +
                                           ": expected a GUID like 0x0002c90300001000, got \"" +
                                           word + "\"");
    out.push_back(Guid{v});
  }
  if (out.empty()) return fail(Errc::kInvalidInput, origin + ": no GUID in the file");
  return out;
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
