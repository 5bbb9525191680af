#include "weft/sm/multicast.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <queue>

#include <nlohmann/json.hpp>

#include "weft/text.hpp"

namespace weft::sm {

using fabric::kNoNode;
using fabric::NodeIndex;

uint32_t McDb::lowest_free(const MlidFree& free, uint32_t end) const {
  uint32_t mlid = kMlidBase;
  while (mlid < end && (groups_.count(uint16_t(mlid)) || (free && !free(uint16_t(mlid))))) ++mlid;
  return mlid;
}

McGroup* McDb::find(const Gid& mgid) {
  for (auto& [mlid, g] : groups_)
    if (g.mgid == mgid) return &g;
  return nullptr;
}

McGroup* McDb::by_mlid(uint16_t mlid) {
  auto it = groups_.find(mlid);
  return it == groups_.end() ? nullptr : &it->second;
}

std::optional<uint16_t> McDb::create(McGroup g, uint16_t mlid_cap, const MlidFree& free) {
  const uint32_t end = std::min<uint32_t>(uint32_t(kMlidBase) + mlid_cap, 0xffff);
  const uint32_t mlid = lowest_free(free, end);
  if (mlid_cap == 0 || mlid >= end || mlid > 0xfffe) return std::nullopt;
  if (g.mgid == Gid{}) {
    // An SA-made MGID (IBTA 4.1.1): 0xff, flags 0x1 (transient), the group's scope,
    // signature 0xA01B, its P_Key, then a counter.
    g.mgid[0] = 0xff;
    g.mgid[1] = uint8_t(0x10 | (g.scope & 0x0f));
    g.mgid[2] = 0xa0;
    g.mgid[3] = 0x1b;
    g.mgid[4] = uint8_t(g.pkey >> 8);
    g.mgid[5] = uint8_t(g.pkey);
    const uint64_t n = ++made_;
    for (int i = 0; i < 8; ++i) g.mgid[15 - i] = uint8_t(n >> (8 * i));
  }
  g.mlid = uint16_t(mlid);
  groups_[g.mlid] = std::move(g);
  return uint16_t(mlid);
}

bool McDb::leave(const Gid& mgid, uint64_t port, uint8_t state) {
  McGroup* g = find(mgid);
  if (!g) return false;
  auto it = g->members.find(port);
  if (it == g->members.end() || !(it->second & state)) return false;
  it->second &= uint8_t(~state);
  if (!it->second) g->members.erase(it);
  if (g->members.empty() && !g->well_known) groups_.erase(g->mlid);
  return true;
}

std::vector<uint16_t> McDb::prune(const std::function<bool(uint64_t)>& alive) {
  std::vector<uint16_t> changed;
  for (auto it = groups_.begin(); it != groups_.end();) {
    McGroup& g = it->second;
    const size_t before = g.members.size();
    std::erase_if(g.members, [&](const auto& m) { return !alive(m.first); });
    if (g.members.size() != before) changed.push_back(g.mlid);
    if (g.members.empty() && !g.well_known)
      it = groups_.erase(it);
    else
      ++it;
  }
  return changed;
}

namespace {

std::string gid_text(const Gid& g) {
  char buf[40];
  std::snprintf(buf, sizeof buf,
                "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0],
                g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13],
                g[14], g[15]);
  return buf;
}

std::optional<Gid> parse_gid(const std::string& s) {
  // Eight groups of four hex digits, colon-separated (the form weft writes).
  if (s.size() != 39) return std::nullopt;
  Gid g{};
  for (size_t i = 0; i < 8; ++i) {
    if (i < 7 && s[i * 5 + 4] != ':') return std::nullopt;
    for (size_t j = 0; j < 4; ++j)
      if (!std::isxdigit(static_cast<unsigned char>(s[i * 5 + j]))) return std::nullopt;
    const unsigned v = std::stoul(s.substr(i * 5, 4), nullptr, 16);
    g[2 * i] = uint8_t(v >> 8);
    g[2 * i + 1] = uint8_t(v);
  }
  return g;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string McDb::text() const {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [mlid, g] : groups_) {
    nlohmann::json members = nlohmann::json::array();
    // "GUID:JoinState": a group may have every end port of the subnet as a member (tens
    // of thousands), and the document goes whole into etcd.
    for (const auto& [port, state] : g.members)
      members.push_back(hex_guid(port) + ":" + hex(state).substr(2));
    groups.push_back({{"mgid", gid_text(g.mgid)},
                      {"mlid", hex(mlid)},
                      {"qkey", hex(g.qkey)},
                      {"pkey", hex(g.pkey)},
                      {"mtu", g.mtu},
                      {"rate", g.rate},
                      {"sl", g.sl},
                      {"tclass", g.tclass},
                      {"scope", g.scope},
                      {"flow_label", g.flow_label},
                      {"hop_limit", g.hop_limit},
                      {"well_known", g.well_known},
                      {"members", members}});
  }
  nlohmann::json doc = {{"weft_mcast_groups", 1}, {"made", made_}, {"groups", groups}};
  return doc.dump() + "\n";
}

Result<McDb> McDb::parse(std::string_view text, std::string_view where) {
  auto fail = [&](const std::string& what) -> Result<McDb> {
    return weft::fail(Errc::kInvalidInput, std::string(where) + ": " + what);
  };
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return fail("not a JSON object");
  if (!doc.contains("weft_mcast_groups") || doc["weft_mcast_groups"] != 1)
    return fail("not a weft multicast group document (weft_mcast_groups 1)");
  McDb db;
  // Numbers are JSON integers or "0x..." strings; each within its field's range.
  auto num = [](const nlohmann::json& v, uint64_t max) -> std::optional<uint64_t> {
    uint64_t x = 0;
    if (v.is_number_unsigned()) {
      x = v.get<uint64_t>();
    } else if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !text::parse_u64(s, &x))
        return std::nullopt;
    } else {
      return std::nullopt;
    }
    if (x > max) return std::nullopt;
    return x;
  };
  if (doc.contains("made")) {
    auto m = num(doc["made"], ~uint64_t(0));
    if (!m) return fail("made: not a count");
    db.made_ = *m;
  }
  if (!doc.contains("groups") || !doc["groups"].is_array()) return fail("no groups array");
  size_t i = 0;
  for (const auto& j : doc["groups"]) {
    ++i;
    const std::string at = "group " + std::to_string(i);
    if (!j.is_object()) return fail(at + ": not an object");
    McGroup g;
    auto mgid = j.contains("mgid") && j["mgid"].is_string()
                    ? parse_gid(j["mgid"].get<std::string>())
                    : std::nullopt;
    if (!mgid || (*mgid)[0] != 0xff) return fail(at + ": mgid: not a multicast GID");
    g.mgid = *mgid;
    auto mlid = j.contains("mlid") ? num(j["mlid"], 0xfffe) : std::nullopt;
    if (!mlid || *mlid < kMlidBase) return fail(at + ": mlid: not a multicast LID (0xc000-0xfffe)");
    g.mlid = uint16_t(*mlid);
    struct Field {
      const char* name;
      uint64_t max;
      std::function<void(uint64_t)> set;
    };
    const Field fields[] = {
        {"qkey", 0xffffffff, [&](uint64_t v) { g.qkey = uint32_t(v); }},
        {"pkey", 0xffff, [&](uint64_t v) { g.pkey = uint16_t(v); }},
        {"mtu", 5, [&](uint64_t v) { g.mtu = uint8_t(v); }},
        {"rate", 0x3f, [&](uint64_t v) { g.rate = uint8_t(v); }},
        {"sl", 15, [&](uint64_t v) { g.sl = uint8_t(v); }},
        {"tclass", 0xff, [&](uint64_t v) { g.tclass = uint8_t(v); }},
        {"scope", 15, [&](uint64_t v) { g.scope = uint8_t(v); }},
        {"flow_label", 0xfffff, [&](uint64_t v) { g.flow_label = uint32_t(v); }},
        {"hop_limit", 0xff, [&](uint64_t v) { g.hop_limit = uint8_t(v); }},
    };
    for (const auto& f : fields) {
      if (!j.contains(f.name)) return fail(at + ": " + f.name + " missing");
      auto v = num(j[f.name], f.max);
      if (!v) return fail(at + ": " + f.name + ": not a number up to " + hex(f.max));
      f.set(*v);
    }
    if (!j.contains("well_known") || !j["well_known"].is_boolean())
      return fail(at + ": well_known: not true or false");
    g.well_known = j["well_known"].get<bool>();
    if (!j.contains("members") || !j["members"].is_array()) return fail(at + ": no members array");
    size_t k = 0;
    for (const auto& m : j["members"]) {
      ++k;
      const std::string mat = at + ": member " + std::to_string(k);
      const std::string text = m.is_string() ? m.get<std::string>() : std::string();
      const size_t colon = text.find(':');
      if (colon == std::string::npos)
        return fail(mat + ": not \"PORTGUID:JOINSTATE\" (like \"0x0002c90300001001:1\")");
      auto port = num(nlohmann::json(text.substr(0, colon)), ~uint64_t(0));
      if (!port || *port == 0) return fail(mat + ": not a port GUID before the colon");
      const std::string js = text.substr(colon + 1);
      const bool one_hex =
          js.size() == 1 && std::isxdigit(static_cast<unsigned char>(js[0])) && js != "0";
      if (!one_hex) return fail(mat + ": JoinState not 1-f after the colon");
      auto state = std::optional<uint64_t>(std::stoul(js, nullptr, 16));
      if (!g.members.emplace(*port, uint8_t(*state)).second)
        return fail(mat + ": port " + hex_guid(*port) + " listed twice");
    }
    if (g.members.empty() && !g.well_known) return fail(at + ": no members and not well known");
    if (db.groups_.count(g.mlid)) return fail(at + ": mlid " + hex(g.mlid) + " used twice");
    if (db.find(g.mgid)) return fail(at + ": mgid " + gid_text(g.mgid) + " listed twice");
    db.groups_[g.mlid] = std::move(g);
  }
  return db;
}

namespace {

// BFS over switch-to-switch links from `root`; parent[n] = (parent switch, port of n
// toward it, port of the parent toward n).
struct Bfs {
  std::vector<int> dist;
  std::vector<NodeIndex> parent;
  std::vector<PortNum> up_port, down_port;
};

Bfs bfs(const fabric::Fabric& f, NodeIndex root) {
  Bfs b;
  b.dist.assign(f.size(), -1);
  b.parent.assign(f.size(), kNoNode);
  b.up_port.assign(f.size(), 0);
  b.down_port.assign(f.size(), 0);
  std::queue<NodeIndex> q;
  b.dist[root] = 0;
  q.push(root);
  while (!q.empty()) {
    const NodeIndex n = q.front();
    q.pop();
    const auto& nd = f.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      const auto& port = nd.ports[p];
      if (!port.linked() || !f.node(port.peer).is_switch() || b.dist[port.peer] >= 0) continue;
      b.dist[port.peer] = b.dist[n] + 1;
      b.parent[port.peer] = n;
      b.up_port[port.peer] = port.peer_port;
      b.down_port[port.peer] = p;
      q.push(port.peer);
    }
  }
  return b;
}

}  // namespace

std::map<NodeIndex, std::vector<bool>> multicast_tree(
    const fabric::Fabric& f, const std::vector<std::pair<NodeIndex, PortNum>>& members,
    const std::vector<std::pair<NodeIndex, PortNum>>& senders) {
  std::map<NodeIndex, std::vector<bool>> out;
  if (members.empty()) return out;
  // The switch each end port hangs off (a switch's port 0: the switch itself).
  auto attach = [&](NodeIndex n, PortNum p) -> std::optional<std::pair<NodeIndex, PortNum>> {
    if (f.node(n).is_switch()) return std::pair{n, PortNum(0)};
    const auto& port = f.node(n).ports[p];
    if (!port.linked() || !f.node(port.peer).is_switch()) return std::nullopt;
    return std::pair{port.peer, port.peer_port};
  };
  std::vector<NodeIndex> terminals;
  for (const auto& v : {members, senders})
    for (auto [n, p] : v)
      if (auto a = attach(n, p)) terminals.push_back(a->first);
  std::sort(terminals.begin(), terminals.end());
  terminals.erase(std::unique(terminals.begin(), terminals.end()), terminals.end());
  if (terminals.empty()) return out;
  // Root near the middle of the two terminals farthest apart: a shallow tree.
  auto farthest = [&](const Bfs& b) {
    NodeIndex best = terminals[0];
    for (NodeIndex t : terminals)
      if (b.dist[t] > b.dist[best]) best = t;
    return best;
  };
  const Bfs b0 = bfs(f, terminals[0]);
  const NodeIndex a = farthest(b0);
  const Bfs ba = bfs(f, a);
  NodeIndex root = farthest(ba);
  for (int steps = ba.dist[root] / 2; steps > 0 && ba.parent[root] != kNoNode; --steps)
    root = ba.parent[root];
  const Bfs t = bfs(f, root);
  auto mask = [&](NodeIndex n) -> std::vector<bool>& {
    auto& m = out[n];
    if (m.empty()) m.assign(size_t(f.node(n).num_ports) + 1, false);
    return m;
  };
  std::vector<bool> on_tree(f.size(), false);
  for (NodeIndex term : terminals) {
    if (t.dist[term] < 0) continue;  // not connected to the root: left out
    mask(term);
    for (NodeIndex n = term; n != root && !on_tree[n]; n = t.parent[n]) {
      on_tree[n] = true;
      mask(n)[t.up_port[n]] = true;
      mask(t.parent[n])[t.down_port[n]] = true;
    }
  }
  for (auto [n, p] : members) {
    auto a = attach(n, p);
    if (a && t.dist[a->first] >= 0) mask(a->first)[a->second] = true;
  }
  return out;
}

}  // namespace weft::sm
