#include "weft/routing/engine.hpp"

#include "weft/routing/analysis.hpp"

#include <algorithm>
#include <charconv>
#include <istream>
#include <sstream>
#include <tuple>

#include "dfsssp.hpp"
#include "dor.hpp"
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
    {"dor", [] { return std::unique_ptr<RoutingEngine>(new DorEngine()); }},
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
    case Refusal::kCreditLoop:
      return "credit-loop";
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
    const std::string_view as_given = name;
    if (name.starts_with("ar_")) {
      const std::string_view base = name.substr(3);
      if (base == "updn" || base == "ftree" || base == "minhop" || base == "dor") {
        c.adaptive_.emplace_back(as_given);
        name = base;
      }
    }
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

EngineChain EngineChain::of(std::vector<std::shared_ptr<const RoutingEngine>> engines) {
  EngineChain c;
  for (const auto& e : engines) c.names_.push_back(e->name());
  c.engines_ = std::move(engines);
  return c;
}

namespace {

// Adaptive routing must not open a credit loop the static tables closed: an engine that
// promises deadlock freedom keeps its groups only if the dependencies over every port a
// packet may take (each group's, not only the static port) have no cycle, on every VL
// of layered tables. Otherwise the groups are dropped, with the reason in the notes:
// static tables for that engine.
void check_groups(const fabric::Fabric& f, std::string_view engine, Tables& t) {
  if (!t.deadlock_free) return;
  std::string why;
  if (const CdgReport c = t.updown_height.empty() ? adaptive_dependencies(f, t)
                                                  : adaptive_updown_dependencies(
                                                        f, t, t.updown_height, t.updown_turning);
      !c.acyclic) {
    why = "its groups close a credit loop (a dependency cycle of " +
          std::to_string(c.cycle_length) + " channels" +
          (c.vls > 1 ? " on VL " + std::to_string(c.cyclic_vl) : std::string()) + ")";
  } else {
    t.notes.push_back(
        std::string(engine) + ": adaptive routing checked before programming: " +
        std::to_string(c.dependencies) + " channel dependencies over every group port" +
        (c.part ? " (of the up/down check's part)" : "") +
        (c.vls > 1 ? " on " + std::to_string(c.vls) + " VLs" : std::string()) + ", no cycle");
    return;
  }
  t.ar_group.clear();
  t.ar_sets.clear();
  t.notes.push_back(std::string(engine) + ": no adaptive-routing groups offered: " + why +
                    "; static tables only");
}

}  // namespace

ChainResult EngineChain::compute(const fabric::Fabric& f, const Options& o) const {
  ChainResult r;
  for (const auto& e : engines_) {
    auto t = e->compute(f, o);
    if (t && t->deadlock_free) {
      // Held to its promise before anything is programmed.
      const CdgReport c = t->updown_height.empty()
                              ? channel_dependencies(f, *t)
                              : updown_dependencies(f, *t, t->updown_height, t->updown_turning);
      if (!c.acyclic)
        t = refuse(Refusal::kCreditLoop,
                   std::string(e->name()) + ": its tables close a credit loop (a dependency " +
                       "cycle of " + std::to_string(c.cycle_length) + " channels on VL " +
                       std::to_string(c.cyclic_vl) + "); not programmed");
      else
        t->notes.push_back(std::string(e->name()) + ": deadlock freedom checked before " +
                           "programming: " + std::to_string(c.dependencies) +
                           " channel dependencies" +
                           (c.part ? " (of the up/down check's part)" : "") + ", no cycle");
    }
    if (t && !t->ar_group.empty()) check_groups(f, e->name(), *t);
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

Result<TorusSpec> read_torus_spec(std::istream& in, const std::string& origin) {
  TorusSpec t;
  bool shape = false;
  std::vector<std::pair<Guid, Guid>> links(3);
  std::vector<bool> have(3, false);
  std::string line;
  size_t lineno = 0;
  auto bad = [&](const std::string& what) {
    return fail(Errc::kInvalidInput, origin + ":" + std::to_string(lineno) + ": " + what);
  };
  auto guid = [](const std::string& w, Guid& g) {
    if (!(w.starts_with("0x") || w.starts_with("0X")) || w.size() < 3) return false;
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(w.data() + 2, w.data() + w.size(), v, 16);
    g = Guid{v};
    return ec == std::errc() && p == w.data() + w.size();
  };
  static const char* const kIgnored[] = {
      "xm_link",   "ym_link",    "zm_link",     "x_dateline",          "y_dateline", "z_dateline",
      "next_seed", "port_order", "max_changes", "portgroup_max_ports", "qos",        "sl2vl"};
  while (std::getline(in, line)) {
    ++lineno;
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream ws(line);
    std::vector<std::string> w;
    for (std::string x; ws >> x;) w.push_back(x);
    if (w.empty()) continue;
    if (w[0] == "torus" || w[0] == "mesh") {
      if (w.size() < 2 || w.size() > 4) return bad(w[0] + " takes 1 to 3 radices");
      t.radix.clear();
      for (size_t i = 1; i < w.size(); ++i) {
        int r = 0;
        auto [p, ec] = std::from_chars(w[i].data(), w[i].data() + w[i].size(), r);
        if (ec != std::errc() || p != w[i].data() + w[i].size() || r < 1 || r > 64)
          return bad("radix \"" + w[i] + "\" is not 1..64");
        t.radix.push_back(r);
      }
      while (t.radix.size() > 1 && t.radix.back() == 1) t.radix.pop_back();
      t.wrap = w[0] == "torus";
      shape = true;
    } else if (w[0] == "xp_link" || w[0] == "yp_link" || w[0] == "zp_link") {
      const size_t d = static_cast<size_t>(w[0][0] - 'x');
      if (w.size() != 3 || !guid(w[1], links[d].first) || !guid(w[2], links[d].second))
        return bad(w[0] + " takes two switch GUIDs (0x...)");
      have[d] = true;
    } else if (std::find_if(std::begin(kIgnored), std::end(kIgnored),
                            [&](const char* k) { return w[0] == k; }) == std::end(kIgnored)) {
      return bad("unknown keyword \"" + w[0] + "\"");
    }
  }
  if (!shape) return fail(Errc::kInvalidInput, origin + ": no \"torus\" or \"mesh\" line");
  for (size_t d = 0; d < t.radix.size(); ++d) {
    if (!have[d])
      return fail(Errc::kInvalidInput, origin + ": no " + std::string(1, char('x' + d)) +
                                           "p_link for a " + std::to_string(t.radix.size()) +
                                           "-dimensional " + (t.wrap ? "torus" : "mesh"));
    if (d && links[d].first != links[0].first)
      return fail(Errc::kInvalidInput, origin + ": every *p_link must start at the same seed " +
                                           "switch (xp_link's first GUID)");
    t.plus.push_back(links[d].second);
  }
  t.seed = links[0].first;
  return t;
}

std::vector<LidOwner> lid_owners(const fabric::Fabric& f) {
  std::vector<LidOwner> out;
  // `count` LIDs from `base`, all living at (n, p).
  auto own = [&out](Lid base, int count, fabric::NodeIndex n, PortNum p) {
    if (!base.is_unicast()) return;
    for (int k = 0; k < count && base.value + k <= Lid::kMaxUnicast; ++k)
      out.push_back({Lid{static_cast<uint16_t>(base.value + k)}, n, p});
  };
  // LMC: a CA port owns 2^LMC LIDs; switch port 0 owns one (base port 0 ignores LMC).
  for (auto [n, p] : f.lid_ports()) {
    const auto& a = f.node(n).ports[p].attrs;
    own(a.lid, f.node(n).is_switch() ? 1 : 1 << a.lmc, n, p);
  }
  // A virtual port's own LID(s) are reached through its physical port, as the port's.
  for (const auto& v : f.vports())
    own(v.lid, 1 << f.node(v.node).ports[v.port].attrs.lmc, v.node, v.port);
  std::sort(out.begin(), out.end(),
            [](const LidOwner& a, const LidOwner& b) { return a.lid < b.lid; });
  return out;
}

}  // namespace weft::routing
