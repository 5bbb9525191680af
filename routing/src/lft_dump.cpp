#include "weft/routing/lft_dump.hpp"

#include <charconv>
#include <cstdio>
#include <istream>
#include <ostream>
#include <unordered_map>

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {

// Parses hex digits at s[pos...]; advances pos.
bool hex_at(const std::string& s, size_t& pos, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), v, 16);
  if (ec != std::errc() || p == s.data() + pos) return false;
  pos = static_cast<size_t>(p - s.data());
  return true;
}

}  // namespace

Result<LftDump> read_lft_dump(std::istream& in, Fabric& f, const std::string& origin) {
  LftDump d;
  d.tables.lft.resize(f.size());
  std::string line;
  size_t lineno = 0;
  NodeIndex cur = fabric::kNoNode;
  auto where = [&] { return origin + ":" + std::to_string(lineno) + ": "; };
  // LIDs learned from the destination column, applied once the whole dump is read.
  // Port GUID -> lowest LID seen (with LMC > 0 a port holds several: the base is the lowest).
  std::unordered_map<uint64_t, uint16_t> learned;
  auto learn = [&](uint64_t guid, uint16_t lid) {
    auto [it, fresh] = learned.emplace(guid, lid);
    if (!fresh) it->second = std::min(it->second, lid);
  };
  uint16_t top = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.size() > 4096) return fail(Errc::kInvalidInput, where() + "line too long");
    if (line.starts_with("Unicast lids")) {
      const size_t g = line.find(" guid 0x");
      uint64_t guid = 0;
      size_t pos = g + 8;
      if (g == std::string::npos || !hex_at(line, pos, guid))
        return fail(Errc::kInvalidInput, where() + "switch header without \"guid 0x...\"");
      auto n = f.find(Guid{guid});
      if (!n || !f.node(*n).is_switch())
        return fail(Errc::kInvalidInput,
                    where() + "switch " + Guid{guid}.str() + " is not a switch of the topology");
      cur = *n;
      ++d.switches;
      if (const size_t l = line.find(" Lid "); l != std::string::npos && l < g) {
        unsigned lid = 0;
        auto [p, ec] = std::from_chars(line.data() + l + 5, line.data() + g, lid);
        if (ec == std::errc() && lid >= 1 && lid <= Lid::kMaxUnicast)
          learn(guid, static_cast<uint16_t>(lid));
      }
      continue;
    }
    if (!line.starts_with("0x")) continue;  // column headers, footers, blank lines
    if (cur == fabric::kNoNode)
      return fail(Errc::kInvalidInput, where() + "LFT entry before any \"Unicast lids\" header");
    size_t pos = 2;
    uint64_t lid = 0;
    if (!hex_at(line, pos, lid) || lid < 1 || lid > Lid::kMaxUnicast)
      return fail(Errc::kInvalidInput, where() + "LID must be 0x1..0xbfff");
    while (pos < line.size() && line[pos] == ' ') ++pos;
    unsigned port = 0;
    auto [p, ec] = std::from_chars(line.data() + pos, line.data() + line.size(), port);
    if (ec != std::errc() || p == line.data() + pos)
      return fail(Errc::kInvalidInput, where() + "expected an output port after the LID");
    if (port > f.node(cur).num_ports)
      return fail(Errc::kInvalidInput, where() + "port " + std::to_string(port) + " but " +
                                           fabric::port_ref(f, cur, 0) + " has " +
                                           std::to_string(f.node(cur).num_ports) + " ports");
    auto& lft = d.tables.lft[cur];
    if (lft.size() <= lid) lft.resize(lid + 1, kDropPort);
    lft[lid] = static_cast<PortNum>(port);
    top = std::max<uint16_t>(top, static_cast<uint16_t>(lid));
    ++d.entries;
    if (const size_t g = line.find("portguid 0x"); g != std::string::npos) {
      uint64_t pg = 0;
      size_t gp = g + 11;
      if (hex_at(line, gp, pg)) learn(pg, static_cast<uint16_t>(lid));
    }
  }
  if (d.switches == 0)
    return fail(Errc::kInvalidInput, origin + ": no \"Unicast lids ... guid 0x...\" section");
  // The dump's LIDs replace the topology's: a port it does not name holds no LID.
  // A switch's port GUID is its node GUID (port 0).
  if (!learned.empty())
    for (NodeIndex n = 0; n < f.size(); ++n) {
      auto& nd = f.node(n);
      for (auto& port : nd.ports) {
        if (nd.is_switch() ? port.num != 0 : port.num == 0) continue;
        auto it = learned.find(nd.is_switch() ? nd.guid.value : port.guid.value);
        if (it == learned.end()) {
          d.ports_without_lid += port.attrs.lid.is_unicast() || port.linked();
          port.attrs.lid = Lid{};
          continue;
        }
        ++d.lids_learned;
        port.attrs.lid = Lid{it->second};
      }
    }
  d.tables.top_lid = top;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (f.node(n).is_switch()) d.tables.lft[n].resize(size_t(top) + 1, kDropPort);
  return d;
}

void write_lft_dump(std::ostream& out, const Fabric& f, const Tables& t) {
  // LID -> (node, port) for the destination column.
  std::vector<std::pair<NodeIndex, PortNum>> owner(size_t(t.top_lid) + 1, {fabric::kNoNode, 0});
  for (const LidOwner& o : lid_owners(f))
    if (o.lid.value <= t.top_lid) owner[o.lid.value] = {o.node, o.port};
  char buf[160];
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (!nd.is_switch() || n >= t.lft.size()) continue;
    const auto& lft = t.lft[n];
    std::snprintf(buf, sizeof buf, "Unicast lids [0x0-0x%x] of switch Lid %u guid 0x%016llx (",
                  unsigned(t.top_lid), unsigned(nd.ports[0].attrs.lid.value),
                  (unsigned long long)nd.guid.value);
    out << buf << (nd.description.empty() ? nd.name : nd.description) << "):\n"
        << "  Lid  Out   Destination\n"
        << "       Port     Info \n";
    size_t valid = 0;
    for (size_t lid = 1; lid < lft.size(); ++lid) {
      if (lft[lid] == kDropPort) continue;
      ++valid;
      std::snprintf(buf, sizeof buf, "0x%04zx %03u : ", lid, unsigned(lft[lid]));
      out << buf;
      const auto [on, op] =
          lid < owner.size() ? owner[lid] : std::make_pair(fabric::kNoNode, PortNum{0});
      if (on == fabric::kNoNode) {
        out << "(unknown node and type)\n";
        continue;
      }
      const auto& dn = f.node(on);
      std::snprintf(buf, sizeof buf, "(%s portguid 0x%016llx: '",
                    dn.is_switch() ? "Switch" : "Channel Adapter",
                    (unsigned long long)(dn.is_switch() ? dn.guid.value : dn.ports[op].guid.value));
      out << buf << (dn.description.empty() ? dn.name : dn.description) << "')\n";
    }
    out << valid << " valid lids dumped \n";
  }
}

}  // namespace weft::routing
