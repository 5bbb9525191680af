#include "weft/routing/engine.hpp"

#include "weft/routing/analysis.hpp"

#include <algorithm>
#include <array>
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
  // Per seed, per file axis (x, y, z): the + and - links and the dateline.
  struct Seed {
    Guid from;
    std::array<Guid, 3> plus{}, minus{};
    std::array<int, 3> dateline{};
    size_t line = 0;  // where it starts
  };
  std::vector<Seed> seeds(1);
  std::vector<int> radix;     // per file axis
  std::vector<int8_t> rings;  // per file axis: 1 t, 0 m, -1 as the keyword
  bool wrap = true, shape = false;
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
    return ec == std::errc() && p == w.data() + w.size() && v != 0;
  };
  static const char* const kIgnored[] = {"portgroup_max_ports", "port_order", "max_changes", "qos",
                                         "sl2vl"};
  while (std::getline(in, line)) {
    ++lineno;
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream ws(line);
    std::vector<std::string> w;
    for (std::string x; ws >> x;) w.push_back(x);
    if (w.empty()) continue;
    const std::string& key = w[0];
    if (key == "torus" || key == "mesh") {
      if (w.size() < 2) return bad(key + " takes 1 to 3 radices");
      radix.clear(), rings.clear();
      for (size_t i = 1; i < w.size() && i <= 3; ++i) {  // tokens after the third: ignored
        std::string r = w[i];
        int8_t ring = -1;
        if (!r.empty() && std::string_view("mMtT").find(r.back()) != std::string_view::npos) {
          ring = r.back() == 't' || r.back() == 'T';
          r.pop_back();
        }
        int v = 0;
        auto [p, ec] = std::from_chars(r.data(), r.data() + r.size(), v);
        if (r.empty() || ec != std::errc() || p != r.data() + r.size() || v < 1 || v > 64)
          return bad("radix \"" + w[i] + "\" is not 1..64 (with t or m after it, if any)");
        radix.push_back(v);
        rings.push_back(ring);
      }
      wrap = key == "torus";
      shape = true;
    } else if (key.size() == 7 && key.ends_with("_link") && key[0] >= 'x' && key[0] <= 'z' &&
               (key[1] == 'p' || key[1] == 'm')) {
      const size_t d = static_cast<size_t>(key[0] - 'x');
      Guid a, b;
      if (w.size() < 3 || !guid(w[1], a) || !guid(w[2], b))
        return bad(key + " takes two switch GUIDs (0x...)");
      Seed& s = seeds.back();
      if (!s.line) s.line = lineno;
      if (s.from.value && s.from != a)
        return bad(key + " starts at " + a.str() + ", the seed's other links at " + s.from.str() +
                   ": every link of a seed starts at the same switch");
      s.from = a;
      (key[1] == 'p' ? s.plus : s.minus)[d] = b;
    } else if (key.size() == 10 && key.ends_with("_dateline") && key[0] >= 'x' && key[0] <= 'z') {
      int v = 0;
      const auto r = w.size() < 2 ? std::from_chars_result{nullptr, std::errc::invalid_argument}
                                  : std::from_chars(w[1].data(), w[1].data() + w[1].size(), v);
      if (r.ec != std::errc{} || r.ptr != w[1].data() + w[1].size() || w[1].empty() || v < -64 ||
          v > 64)
        return bad(key + " takes a position (an integer, -64..64)");
      seeds.back().dateline[static_cast<size_t>(key[0] - 'x')] = v;
    } else if (key == "next_seed") {
      if (seeds.back().from.value) seeds.emplace_back();
    } else if (std::find_if(std::begin(kIgnored), std::end(kIgnored),
                            [&](const char* k) { return key == k; }) == std::end(kIgnored)) {
      return bad("unknown keyword \"" + key + "\"");
    }
  }
  if (!shape) return fail(Errc::kInvalidInput, origin + ": no \"torus\" or \"mesh\" line");
  if (seeds.back().from.value == 0 && seeds.size() > 1) seeds.pop_back();  // a trailing next_seed
  // The dimensions: the file's axes whose radix is more than 1 (all 1: one dimension).
  TorusSpec t;
  t.wrap = wrap;
  std::vector<size_t> axes;
  for (size_t a = 0; a < radix.size(); ++a)
    if (radix[a] > 1) axes.push_back(a);
  if (axes.empty()) axes.push_back(0);
  bool mixed = false;
  for (size_t a : axes) {
    t.radix.push_back(radix[a]);
    t.ring.push_back(rings[a]);
    t.axes += char('x' + a);
    mixed |= rings[a] >= 0;
  }
  if (!mixed) t.ring.clear();
  if (t.axes == std::string("xyz").substr(0, t.axes.size())) t.axes.clear();
  for (size_t i = 0; i < seeds.size(); ++i) {
    const Seed& s = seeds[i];
    const std::string which =
        seeds.size() > 1 ? " of seed " + std::to_string(i + 1) +
                               (s.line ? " (from line " + std::to_string(s.line) + ")" : "")
                         : "";
    TorusSeed ts;
    ts.seed = s.from;
    bool dateline = false;
    for (size_t a : axes) {
      const char ax = char('x' + a);
      if (!s.plus[a].value && !s.minus[a].value)
        return fail(Errc::kInvalidInput, origin + ": no " + ax + "p_link or " + ax + "m_link" +
                                             which + " for a " + std::to_string(t.radix.size()) +
                                             "-dimensional " + (wrap ? "torus" : "mesh") + " (" +
                                             ax + " has radix " + std::to_string(radix[a]) + ")");
      ts.plus.push_back(s.plus[a]);
      ts.minus.push_back(s.minus[a]);
      ts.dateline.push_back(s.dateline[a]);
      dateline |= s.dateline[a] != 0;
    }
    bool minus = false;
    for (Guid g : ts.minus) minus |= g.value != 0;
    if (!minus) ts.minus.clear();
    if (!dateline) ts.dateline.clear();
    if (i == 0) {
      t.seed = ts.seed, t.plus = ts.plus, t.minus = ts.minus, t.dateline = ts.dateline;
    } else {
      t.next_seeds.push_back(std::move(ts));
    }
  }
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
