#include "weft/simulator/generators.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <map>
#include <random>
#include <set>

#include "weft/fabric/topology_file.hpp"

namespace weft::simulator {

using fabric::Fabric;
using fabric::Node;
using fabric::NodeIndex;
using fabric::NodeType;

namespace {

constexpr uint64_t kSwitchGuidBase = 0x0002c90300001000ull;
constexpr uint64_t kCaGuidBase = 0x0002c90400000000ull;
constexpr int kMaxNodes = 200000;

class Builder {
 public:
  NodeIndex ca(const std::string& name) {
    Node n;
    n.type = NodeType::kCa;
    n.guid = Guid{kCaGuidBase + 0x10 * cas_++};
    n.num_ports = 1;
    n.name = n.description = name;
    auto idx = *f_.add_node(std::move(n));
    auto& nd = f_.node(idx);
    for (auto& p : nd.ports) p.guid = Guid{nd.guid.value + p.num};
    return idx;
  }
  NodeIndex sw(const std::string& name, int ports) {
    Node n;
    n.type = NodeType::kSwitch;
    n.guid = Guid{kSwitchGuidBase + switches_++};
    n.num_ports = static_cast<uint8_t>(ports);
    n.name = n.description = name;
    auto idx = *f_.add_node(std::move(n));
    for (auto& p : f_.node(idx).ports) p.guid = f_.node(idx).guid;
    next_port_.resize(f_.size(), 1);
    return idx;
  }
  // Links the next free ports of a and b.
  Result<void> link(NodeIndex a, NodeIndex b) {
    next_port_.resize(f_.size(), 1);
    auto pa = next_port_[a]++, pb = next_port_[b]++;
    if (pa > f_.node(a).num_ports || pb > f_.node(b).num_ports)
      return fail(Errc::kInvalidInput,
                  "radix too small: " + f_.node(pa > f_.node(a).num_ports ? a : b).name +
                      " is out of ports");
    return f_.connect(a, static_cast<PortNum>(pa), b, static_cast<PortNum>(pb));
  }
  Fabric take() { return std::move(f_); }

 private:
  Fabric f_;
  uint64_t cas_ = 0, switches_ = 0;
  std::vector<int> next_port_;
};

Result<void> check_radix(int need, int radix, const char* what) {
  if (need > 254)
    return fail(Errc::kInvalidInput,
                std::string(what) + " need " + std::to_string(need) + " ports (max 254)");
  if (radix && radix < need)
    return fail(Errc::kInvalidInput, std::string(what) + " need " + std::to_string(need) +
                                         " ports; radix is " + std::to_string(radix));
  return {};
}

#define WEFT_TRY(expr)                           \
  do {                                           \
    auto _r = (expr);                            \
    if (!_r) return std::unexpected(_r.error()); \
  } while (0)

}  // namespace

Result<Fabric> make_fat_tree2(const FatTree2& p) {
  if (p.leaves < 1 || p.spines < 0 || p.hosts < 0 || p.links < 1)
    return fail(Errc::kInvalidInput, "ft2: leaves >= 1, spines >= 0, hosts >= 0, links >= 1");
  if (static_cast<long>(p.leaves) * (p.hosts + 1) + p.spines > kMaxNodes)
    return fail(Errc::kInvalidInput, "ft2: too many nodes");
  const int leaf_ports = p.hosts + p.spines * p.links, spine_ports = p.leaves * p.links;
  WEFT_TRY(check_radix(std::max(leaf_ports, 1), p.radix, "ft2 leaves"));
  WEFT_TRY(check_radix(std::max(spine_ports, 1), p.radix, "ft2 spines"));
  Builder b;
  std::vector<NodeIndex> hosts, leaves, spines;
  for (int l = 0; l < p.leaves; ++l)
    for (int h = 0; h < p.hosts; ++h) hosts.push_back(b.ca(fmt::format("h{}-{}", l, h)));
  for (int l = 0; l < p.leaves; ++l)
    leaves.push_back(b.sw(fmt::format("leaf{}", l), p.radix ? p.radix : std::max(leaf_ports, 1)));
  for (int s = 0; s < p.spines; ++s)
    spines.push_back(b.sw(fmt::format("spine{}", s), p.radix ? p.radix : std::max(spine_ports, 1)));
  for (int l = 0; l < p.leaves; ++l)
    for (int h = 0; h < p.hosts; ++h) WEFT_TRY(b.link(leaves[l], hosts[size_t(l) * p.hosts + h]));
  for (int l = 0; l < p.leaves; ++l)
    for (int s = 0; s < p.spines; ++s)
      for (int k = 0; k < p.links; ++k) WEFT_TRY(b.link(leaves[l], spines[s]));
  return b.take();
}

Result<Fabric> make_fat_tree3(const FatTree3& p) {
  if (p.pods < 1 || p.leaves < 1 || p.aggs < 1 || p.hosts < 0 || p.cores < 1)
    return fail(Errc::kInvalidInput, "ft3: pods, leaves, aggs, cores >= 1, hosts >= 0");
  if (static_cast<long>(p.pods) * p.leaves * (p.hosts + 1) > kMaxNodes)
    return fail(Errc::kInvalidInput, "ft3: too many nodes");
  if (p.links < 1) return fail(Errc::kInvalidInput, "ft3: links >= 1");
  const int leaf_ports = p.hosts + p.aggs, agg_ports = p.leaves + p.cores * p.links,
            core_ports = p.pods * p.links;
  WEFT_TRY(check_radix(leaf_ports, p.radix, "ft3 leaves"));
  WEFT_TRY(check_radix(agg_ports, p.radix, "ft3 aggregation switches"));
  WEFT_TRY(check_radix(core_ports, p.radix, "ft3 cores"));
  Builder b;
  std::vector<NodeIndex> hosts, leaves, aggs, cores;
  for (int pd = 0; pd < p.pods; ++pd)
    for (int l = 0; l < p.leaves; ++l)
      for (int h = 0; h < p.hosts; ++h) hosts.push_back(b.ca(fmt::format("h{}-{}-{}", pd, l, h)));
  auto ports = [&](int need) { return p.radix ? p.radix : need; };
  for (int pd = 0; pd < p.pods; ++pd)
    for (int l = 0; l < p.leaves; ++l)
      leaves.push_back(b.sw(fmt::format("leaf{}-{}", pd, l), ports(leaf_ports)));
  for (int pd = 0; pd < p.pods; ++pd)
    for (int a = 0; a < p.aggs; ++a)
      aggs.push_back(b.sw(fmt::format("agg{}-{}", pd, a), ports(agg_ports)));
  for (int g = 0; g < p.aggs; ++g)
    for (int c = 0; c < p.cores; ++c)
      cores.push_back(b.sw(fmt::format("core{}-{}", g, c), ports(core_ports)));
  for (size_t l = 0; l < leaves.size(); ++l)
    for (int h = 0; h < p.hosts; ++h) WEFT_TRY(b.link(leaves[l], hosts[l * p.hosts + h]));
  for (int pd = 0; pd < p.pods; ++pd)
    for (int l = 0; l < p.leaves; ++l)
      for (int a = 0; a < p.aggs; ++a)
        WEFT_TRY(b.link(leaves[size_t(pd) * p.leaves + l], aggs[size_t(pd) * p.aggs + a]));
  for (int pd = 0; pd < p.pods; ++pd)
    for (int a = 0; a < p.aggs; ++a)
      for (int c = 0; c < p.cores; ++c)
        for (int k = 0; k < p.links; ++k)
          WEFT_TRY(b.link(aggs[size_t(pd) * p.aggs + a], cores[size_t(a) * p.cores + c]));
  return b.take();
}

Result<Fabric> make_torus(const Torus& p) {
  if (p.dims.empty() || p.dims.size() > 3)
    return fail(Errc::kInvalidInput, "torus/mesh: 1 to 3 dimensions");
  long count = 1;
  for (int d : p.dims) {
    if (d < 2 || d > 64) return fail(Errc::kInvalidInput, "torus/mesh: each dimension 2..64");
    count *= d;
  }
  if (p.hosts < 0 || count * (p.hosts + 1) > kMaxNodes)
    return fail(Errc::kInvalidInput, "torus/mesh: bad host count or too many nodes");
  const int ports = p.hosts + 2 * static_cast<int>(p.dims.size());
  Builder b;
  std::vector<NodeIndex> hosts, sws;
  auto coord_name = [&](long i) {
    std::string s;
    for (size_t k = 0; k < p.dims.size(); ++k) {
      if (k) s += '-';
      s += std::to_string(i % p.dims[k]);
      i /= p.dims[k];
    }
    return s;
  };
  for (long i = 0; i < count; ++i)
    for (int h = 0; h < p.hosts; ++h)
      hosts.push_back(b.ca(fmt::format("h{}-{}", coord_name(i), h)));
  for (long i = 0; i < count; ++i) sws.push_back(b.sw("sw" + coord_name(i), ports));
  for (long i = 0; i < count; ++i)
    for (int h = 0; h < p.hosts; ++h) WEFT_TRY(b.link(sws[i], hosts[size_t(i) * p.hosts + h]));
  long stride = 1;
  for (size_t k = 0; k < p.dims.size(); ++k) {
    const int d = p.dims[k];
    for (long i = 0; i < count; ++i) {
      const long c = (i / stride) % d;
      if (c + 1 < d)
        WEFT_TRY(b.link(sws[i], sws[i + stride]));
      else if (!p.mesh && d > 2)
        WEFT_TRY(b.link(sws[i], sws[i - (d - 1) * stride]));
    }
    stride *= d;
  }
  return b.take();
}

Result<Fabric> make_random(const RandomGraph& p) {
  if (p.switches < 1 || p.degree < 1 || p.hosts < 0 || p.degree + p.hosts > 254)
    return fail(Errc::kInvalidInput, "random: switches >= 1, degree >= 1, degree + hosts <= 254");
  if (static_cast<long>(p.switches) * (p.hosts + 1) > kMaxNodes)
    return fail(Errc::kInvalidInput, "random: too many nodes");
  std::mt19937_64 rng(p.seed);
  const int n = p.switches;
  std::set<std::pair<int, int>> edges;
  std::vector<int> deg(n, 0);
  // A random spanning tree keeps it connected; random extra links up to the degree.
  for (int i = 1; i < n; ++i) {
    std::vector<int> open;
    for (int j = 0; j < i; ++j)
      if (deg[j] < p.degree) open.push_back(j);
    if (open.empty())
      return fail(Errc::kInvalidInput, "random: degree too small to connect the graph");
    int j = open[std::uniform_int_distribution<size_t>(0, open.size() - 1)(rng)];
    edges.insert({j, i});
    ++deg[i];
    ++deg[j];
  }
  for (int tries = 0; tries < n * p.degree * 8; ++tries) {
    int a = std::uniform_int_distribution<int>(0, n - 1)(rng),
        c = std::uniform_int_distribution<int>(0, n - 1)(rng);
    if (a == c || deg[a] >= p.degree || deg[c] >= p.degree) continue;
    auto e = std::minmax(a, c);
    if (!edges.insert({e.first, e.second}).second) continue;
    ++deg[a];
    ++deg[c];
  }
  Builder b;
  std::vector<NodeIndex> hosts, sws;
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < p.hosts; ++h) hosts.push_back(b.ca(fmt::format("h{}-{}", i, h)));
  for (int i = 0; i < n; ++i) sws.push_back(b.sw("sw" + std::to_string(i), p.degree + p.hosts));
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < p.hosts; ++h) WEFT_TRY(b.link(sws[i], hosts[size_t(i) * p.hosts + h]));
  for (auto [a, c] : edges) WEFT_TRY(b.link(sws[a], sws[c]));
  return b.take();
}

Result<Fabric> make_dragonfly(const Dragonfly& p) {
  if (p.groups < 2 || p.routers < 1 || p.global < 1 || p.hosts < 0)
    return fail(Errc::kInvalidInput,
                "dragonfly: groups >= 2, routers >= 1, global >= 1, hosts >= 0");
  if (static_cast<long>(p.groups) * p.routers * (p.hosts + 1) > kMaxNodes)
    return fail(Errc::kInvalidInput, "dragonfly: too many nodes");
  if (p.routers * p.global < p.groups - 1)
    return fail(Errc::kInvalidInput,
                "dragonfly: routers * global must be >= groups - 1 to join every pair of groups");
  const int ports = p.hosts + (p.routers - 1) + p.global;
  if (ports > 254) return fail(Errc::kInvalidInput, "dragonfly: more than 254 ports per switch");
  Builder b;
  std::vector<NodeIndex> hosts, sws;
  for (int g = 0; g < p.groups; ++g)
    for (int r = 0; r < p.routers; ++r)
      for (int h = 0; h < p.hosts; ++h) hosts.push_back(b.ca(fmt::format("h{}-{}-{}", g, r, h)));
  for (int g = 0; g < p.groups; ++g)
    for (int r = 0; r < p.routers; ++r) sws.push_back(b.sw(fmt::format("r{}-{}", g, r), ports));
  auto at = [&](int g, int r) { return sws[size_t(g) * p.routers + r]; };
  for (size_t i = 0; i < sws.size(); ++i)
    for (int h = 0; h < p.hosts; ++h) WEFT_TRY(b.link(sws[i], hosts[i * p.hosts + h]));
  for (int g = 0; g < p.groups; ++g)
    for (int r = 0; r < p.routers; ++r)
      for (int r2 = r + 1; r2 < p.routers; ++r2) WEFT_TRY(b.link(at(g, r), at(g, r2)));
  // Global links: group g's k-th global slot (k = 0..groups-2) leads to group
  // (g + 1 + k) mod groups; slot k sits on router k mod routers. Each pair once.
  for (int g = 0; g < p.groups; ++g)
    for (int k = 0; k < p.groups - 1; ++k) {
      const int h = (g + 1 + k) % p.groups;
      if (h < g) continue;                                     // linked from the other side
      const int back = (g - h - 1 + 2 * p.groups) % p.groups;  // h's slot toward g
      WEFT_TRY(b.link(at(g, k % p.routers), at(h, back % p.routers)));
    }
  return b.take();
}

namespace {

Result<std::map<std::string, std::string>> parse_kv(const std::string& body,
                                                    const std::string& spec) {
  std::map<std::string, std::string> kv;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t comma = body.find(',', pos);
    std::string item =
        body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? body.size() : comma + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail(Errc::kInvalidInput,
                  "topology spec \"" + spec + "\": expected key=value, got \"" + item + "\"");
    kv[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return kv;
}

Result<int> take_int(std::map<std::string, std::string>& kv, const std::string& key, int def,
                     const std::string& spec) {
  auto it = kv.find(key);
  if (it == kv.end()) return def;
  int v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size())
    return fail(Errc::kInvalidInput, "topology spec \"" + spec + "\": " + key + "=\"" + it->second +
                                         "\" is not an integer");
  kv.erase(it);
  return v;
}

Result<void> no_rest(const std::map<std::string, std::string>& kv, const std::string& spec,
                     const char* known) {
  if (kv.empty()) return {};
  return fail(Errc::kInvalidInput, "topology spec \"" + spec + "\": unknown key \"" +
                                       kv.begin()->first + "\" (known: " + known + ")");
}

}  // namespace

Result<Fabric> make_fabric(const std::string& spec) {
  auto colon = spec.find(':');
  const std::string kind = colon == std::string::npos ? "" : spec.substr(0, colon);
  static const std::set<std::string> kinds = {"ft2", "ft3", "torus", "mesh", "random", "dragonfly"};
  if (!kinds.contains(kind)) {
    if (colon != std::string::npos && spec.find('/') == std::string::npos &&
        spec.find('.') == std::string::npos)
      return fail(Errc::kInvalidInput,
                  "unknown topology kind \"" + kind +
                      "\" (ft2, ft3, torus, mesh, random, dragonfly, or a file)");
    return fabric::read_topology_file(spec);
  }
  auto kvr = parse_kv(spec.substr(colon + 1), spec);
  if (!kvr) return std::unexpected(kvr.error());
  auto& kv = *kvr;
#define WEFT_INT(var, key, def)                          \
  auto var##_r = take_int(kv, key, def, spec);           \
  if (!var##_r) return std::unexpected(var##_r.error()); \
  int var = *var##_r;
  if (kind == "ft2") {
    WEFT_INT(leaves, "leaves", 4)
    WEFT_INT(spines, "spines", 2)
    WEFT_INT(hosts, "hosts", 4)
    WEFT_INT(links, "links", 1)
    WEFT_INT(radix, "radix", 0) WEFT_TRY(no_rest(kv, spec, "leaves, spines, hosts, links, radix"));
    return make_fat_tree2({leaves, spines, hosts, links, radix});
  }
  if (kind == "ft3") {
    WEFT_INT(pods, "pods", 2)
    WEFT_INT(leaves, "leaves", 2)
    WEFT_INT(aggs, "aggs", 2)
    WEFT_INT(hosts, "hosts", 2)
    WEFT_INT(cores, "cores", 2)
    WEFT_INT(radix, "radix", 0)
    WEFT_INT(links, "links", 1)
    WEFT_TRY(no_rest(kv, spec, "pods, leaves, aggs, hosts, cores, radix, links"));
    return make_fat_tree3({pods, leaves, aggs, hosts, cores, radix, links});
  }
  if (kind == "dragonfly") {
    WEFT_INT(groups, "groups", 5)
    WEFT_INT(routers, "routers", 4)
    WEFT_INT(global, "global", 1)
    WEFT_INT(hosts, "hosts", 2)
    WEFT_TRY(no_rest(kv, spec, "groups, routers, global, hosts"));
    return make_dragonfly({groups, routers, global, hosts});
  }
  if (kind == "torus" || kind == "mesh") {
    Torus t;
    t.mesh = kind == "mesh";
    auto it = kv.find("dims");
    if (it != kv.end()) {
      t.dims.clear();
      std::string d = it->second;
      size_t pos = 0;
      while (pos <= d.size()) {
        size_t x = d.find('x', pos);
        std::string part = d.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
        int v = 0;
        auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (part.empty() || ec != std::errc() || p != part.data() + part.size())
          return fail(Errc::kInvalidInput,
                      "topology spec \"" + spec + "\": dims=\"" + d + "\" (expected e.g. 4x4x4)");
        t.dims.push_back(v);
        if (x == std::string::npos) break;
        pos = x + 1;
      }
      kv.erase(it);
    }
    WEFT_INT(hosts, "hosts", 1)
    t.hosts = hosts;
    WEFT_TRY(no_rest(kv, spec, "dims, hosts"));
    return make_torus(t);
  }
  WEFT_INT(switches, "switches", 16)
  WEFT_INT(degree, "degree", 4)
  WEFT_INT(hosts, "hosts", 2)
  WEFT_INT(seed, "seed", 1) WEFT_TRY(no_rest(kv, spec, "switches, degree, hosts, seed"));
  return make_random({switches, degree, hosts, static_cast<uint64_t>(seed)});
#undef WEFT_INT
}

}  // namespace weft::simulator
