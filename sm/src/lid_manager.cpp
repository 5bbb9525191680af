#include "weft/sm/lid_manager.hpp"

#include "weft/durable_file.hpp"
#include "weft/log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace weft::sm {

using fabric::NodeIndex;

Result<std::vector<std::string>> Guid2Lid::load(const std::string& path) {
  std::vector<std::string> warnings;
  map_.clear();
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return warnings;
    return fail(Errc::kIo, path + ": cannot read: " + std::strerror(errno));
  }
  std::map<uint16_t, Guid> by_lid;
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ss(line);
    std::string g, lo, hi, extra;
    if (!(ss >> g)) continue;
    auto where = path + ":" + std::to_string(no) + ": ";
    if (!(ss >> lo)) {
      warnings.push_back(where + "expected \"0xGUID 0xLID [0xLID]\"");
      continue;
    }
    ss >> hi;
    if (ss >> extra) {
      warnings.push_back(where + "unexpected \"" + extra + "\"");
      continue;
    }
    char* end = nullptr;
    errno = 0;
    unsigned long long gv = std::strtoull(g.c_str(), &end, 0);
    if (errno || *end || gv == 0) {
      warnings.push_back(where + "bad GUID \"" + g + "\"");
      continue;
    }
    unsigned long lv = std::strtoul(lo.c_str(), &end, 0);
    if (*end || lv < 1 || lv > Lid::kMaxUnicast) {
      warnings.push_back(where + "bad LID \"" + lo + "\" (1..0xbfff)");
      continue;
    }
    auto [it, fresh] = by_lid.emplace(static_cast<uint16_t>(lv), Guid{gv});
    if (!fresh) {
      warnings.push_back(where + "LID " + std::to_string(lv) + " already given to " +
                         it->second.str() + "; entry for " + hex_guid(gv) + " dropped");
      continue;
    }
    if (map_.contains(Guid{gv})) {
      warnings.push_back(where + "second entry for " + hex_guid(gv) + " dropped");
      by_lid.erase(static_cast<uint16_t>(lv));
      continue;
    }
    map_[Guid{gv}] = Lid{static_cast<uint16_t>(lv)};
  }
  return warnings;
}

std::string Guid2Lid::text() const {
  std::string text;
  for (const auto& [g, l] : map_) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s 0x%04x 0x%04x\n", g.str().c_str(), l.value, l.value);
    text += buf;
  }
  return text;
}

Result<void> Guid2Lid::save(const std::string& path) const {
  return write_file_durably(path, text());
}

Result<LidAssignment> assign_lids(fabric::Fabric& f, Guid2Lid& db, uint8_t lmc, bool fabric_first) {
  if (lmc > 7) return fail(Errc::kInvalidInput, "LMC " + std::to_string(lmc) + " > 7");
  const uint16_t span = static_cast<uint16_t>(1u << lmc);
  struct Slot {
    NodeIndex node;
    PortNum port;
    Guid guid;
    Lid current;
    bool done = false;
    size_t vport = SIZE_MAX;  // an index of f.vports(): a vport that requires a LID
  };
  std::vector<Slot> slots;
  for (auto [n, p] : f.lid_ports()) {
    const auto& port = f.node(n).ports[p];
    if (port.guid.value != 0) slots.push_back({n, p, port.guid, port.attrs.lid});
  }
  // Virtual ports that require a LID of their own, after every port: by their GUID,
  // in the state file like any port.
  for (size_t i = 0; i < f.vports().size(); ++i) {
    const auto& v = f.vports()[i];
    if (v.lid_required && v.guid.value) slots.push_back({v.node, v.port, v.guid, v.lid, false, i});
  }
  std::vector<uint8_t> used(size_t(Lid::kMaxUnicast) + 2,
                            0);  // 1 = taken now, 2 = reserved by file
  auto reserve_file = [&] {
    for (const auto& [g, l] : db.entries())
      for (uint16_t k = 0; k < span && l.value + k <= Lid::kMaxUnicast; ++k)
        if (used[l.value + k] == 0) used[l.value + k] = 2;
  };
  LidAssignment out;
  auto aligned = [&](uint16_t l) {
    return (l & (span - 1)) == 0 && l + span - 1 <= Lid::kMaxUnicast;
  };
  auto take = [&](Slot& s, uint16_t l) {
    for (uint16_t k = 0; k < span; ++k) used[l + k] = 1;
    if (s.vport != SIZE_MAX) {
      f.vports()[s.vport].lid = Lid{l};
    } else {
      auto& attrs = f.node(s.node).ports[s.port].attrs;
      attrs.lid = Lid{l};
      attrs.lmc = lmc;
    }
    if (s.current.value != l) ++out.changed;
    db.set(s.guid, Lid{l});
    out.top = std::max<uint16_t>(out.top, static_cast<uint16_t>(l + span - 1));
    s.done = true;
  };
  // The state file's LIDs.
  auto from_file = [&] {
    for (auto& s : slots) {
      if (s.done) continue;
      auto it = db.entries().find(s.guid);
      if (it == db.entries().end()) continue;
      uint16_t l = it->second.value;
      if (!aligned(l) || used[l] == 1) continue;
      take(s, l);
      ++out.from_file;
    }
  };
  // What the fabric holds, when valid, unique and not reserved for another GUID.
  auto from_fabric = [&] {
    for (auto& s : slots) {
      if (s.done || !s.current.is_unicast()) continue;
      uint16_t l = s.current.value;
      if (!aligned(l)) continue;
      bool free = true;
      for (uint16_t k = 0; k < span; ++k) free = free && used[l + k] == 0;
      if (!free) continue;
      take(s, l);
      ++out.from_fabric;
    }
  };
  // 1. the state file, 2. the fabric; or, taking over from another master, the other
  // way round: the fabric's LIDs are the ones in use.
  if (fabric_first) {
    from_fabric();
    reserve_file();
    from_file();
  } else {
    reserve_file();
    from_file();
    from_fabric();
  }
  // 3. the lowest free LIDs
  uint32_t next = span;  // LID 0 is reserved; with LMC the first aligned base is `span`
  if (span == 1) next = 1;
  for (auto& s : slots) {
    if (s.done) continue;
    while (next + span - 1 <= Lid::kMaxUnicast) {
      bool free = true;
      for (uint16_t k = 0; k < span; ++k) free = free && used[next + k] == 0;
      if (free) break;
      next += span;
    }
    if (next + span - 1 > Lid::kMaxUnicast && s.vport != SIZE_MAX) {
      // A VF is not worth the subnet: it goes without (not activated, said so).
      WEFT_LOG(Warn, "LID-0006") << "out of unicast LIDs: VF " << s.guid.str() << " of "
                                 << fabric::port_ref(f, s.node, s.port) << " gets none";
      f.vports()[s.vport].lid = Lid{};
      continue;
    }
    if (next + span - 1 > Lid::kMaxUnicast)
      return fail(Errc::kUnsupported, "out of unicast LIDs: " + std::to_string(slots.size()) +
                                          " ports with LMC " + std::to_string(lmc));
    take(s, static_cast<uint16_t>(next));
    ++out.fresh;
  }
  // Absent GUIDs keep their file entries (and thereby their LIDs).
  return out;
}

}  // namespace weft::sm
