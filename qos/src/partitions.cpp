#include "weft/qos/partitions.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace weft::qos {

using fabric::NodeIndex;
using fabric::NodeType;
using K = config::MemberSpec::Kind;

namespace {

constexpr uint8_t kLim = 1, kFull = 2, kIdx0 = 4;  // kIdx0: a member with indx0 added it

struct EndPort {
  NodeIndex n;
  PortNum p;
  Guid guid;
  NodeType type;
  size_t vport = SIZE_MAX;  // an index of f.vports(), or none: a physical port
};

struct Acc {
  ResolvedPartition r;
  std::vector<uint8_t> bits;  // per end port: kLim | kFull | kIdx0
};

}  // namespace

PartitionPlan plan_partitions(const config::PartitionPolicy* policy, const fabric::Fabric& f,
                              Guid sm_port_guid, const PartitionOptions& o) {
  PartitionPlan plan;
  std::vector<EndPort> eps;
  plan.pkeys.resize(f.size());
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    plan.pkeys[n].resize(nd.ports.size());
    if (nd.is_switch()) {
      eps.push_back({n, 0, nd.ports[0].guid, nd.type});
      continue;
    }
    for (PortNum p = 1; p <= nd.num_ports; ++p)
      if (nd.ports[p].linked()) eps.push_back({n, p, nd.ports[p].guid, nd.type});
  }
  plan.vport_pkeys.resize(f.vports().size());
  for (size_t i = 0; i < f.vports().size(); ++i) {
    const auto& v = f.vports()[i];
    if (v.guid.value) eps.push_back({v.node, v.port, v.guid, NodeType::kCa, i});
  }
  std::unordered_map<uint64_t, size_t> by_guid;
  for (size_t i = 0; i < eps.size(); ++i) by_guid.emplace(eps[i].guid.value, i);

  std::vector<Acc> parts;
  Acc def;
  def.r.name = "Default";
  def.r.pkey = config::kDefaultPkey;
  def.r.where = "built in";
  def.bits.assign(eps.size(), policy ? kLim : kFull);
  def.r.ipoib = !policy;  // OpenSM's IPv4 broadcast group exists only without a file
  if (auto it = by_guid.find(sm_port_guid.value); it != by_guid.end()) def.bits[it->second] = kFull;
  parts.push_back(std::move(def));

  auto apply = [&](const config::MemberSpec& m, const std::string& file, Acc& acc) {
    auto mark = [&](size_t i) {
      if (m.indx0) acc.bits[i] |= kIdx0;
      switch (m.membership) {
        case config::Membership::kFull:
          acc.bits[i] |= kFull;
          break;
        case config::Membership::kLimited:
          acc.bits[i] |= kLim;
          break;
        case config::Membership::kBoth:
          acc.bits[i] |= o.allow_both_pkeys ? (kFull | kLim) : kFull;
          break;
      }
    };
    auto all_of = [&](bool (*pred)(NodeType)) {
      for (size_t i = 0; i < eps.size(); ++i)
        if (pred(eps[i].type)) mark(i);
    };
    switch (m.kind) {
      case K::kAll:
        return all_of([](NodeType) { return true; });
      case K::kAllCas:
        return all_of([](NodeType t) { return t == NodeType::kCa; });
      case K::kAllSwitches:
        return all_of([](NodeType t) { return t == NodeType::kSwitch; });
      case K::kAllRouters:
        return all_of([](NodeType t) { return t == NodeType::kRouter; });
      case K::kSelf:
      case K::kGuid: {
        const Guid g = m.kind == K::kSelf ? sm_port_guid : m.guid;
        if (auto it = by_guid.find(g.value); it != by_guid.end())
          mark(it->second);
        else
          plan.warnings.push_back(file + ":" + std::to_string(m.line) + ": port GUID " + g.str() +
                                  " is not an end port of the fabric (yet)");
        return;
      }
    }
  };

  if (policy) {
    for (const auto& spec : policy->partitions) {
      const std::string file = spec.where.substr(0, spec.where.rfind(':'));
      Acc* acc = nullptr;
      if (spec.pkey == config::kDefaultPkey) {
        acc = &parts[0];
        acc->r.name = spec.name.empty() ? acc->r.name : spec.name;
        acc->r.where = spec.where;
      } else {
        parts.push_back({});
        acc = &parts.back();
        acc->r.name = spec.name;
        acc->r.pkey = spec.pkey;
        acc->r.where = spec.where;
        acc->bits.assign(eps.size(), 0);
      }
      acc->r.ipoib |= spec.ipoib;
      acc->r.indx0 |= spec.indx0;  // shown; which ports take it at index 0 is per member
      acc->r.flags = spec.flags;
      acc->r.groups.insert(acc->r.groups.end(), spec.groups.begin(), spec.groups.end());
      for (const auto& m : spec.members) apply(m, file, *acc);
    }
  }

  for (size_t i = 0; i < eps.size(); ++i) {
    std::vector<uint16_t> keys;
    std::optional<uint16_t> first;
    for (const auto& a : parts) {
      const uint8_t b = a.bits[i];
      if (!b) continue;
      const uint16_t k = a.r.pkey;
      const bool both = (b & kFull) && (b & kLim) && o.allow_both_pkeys;
      const uint16_t main = (b & kFull) ? uint16_t(k | kFullMember) : k;
      if ((b & kIdx0) && !first) first = main;
      keys.push_back(main);
      if (both) keys.push_back(k);
    }
    if (!first) first = keys.front();  // Default: every end port holds it
    keys.erase(std::find(keys.begin(), keys.end(), *first));
    std::sort(keys.begin(), keys.end(), [](uint16_t x, uint16_t y) {
      return std::pair(x & 0x7fff, x & kFullMember) < std::pair(y & 0x7fff, y & kFullMember);
    });
    keys.insert(keys.begin(), *first);
    if (eps[i].vport != SIZE_MAX)
      plan.vport_pkeys[eps[i].vport] = std::move(keys);
    else
      plan.pkeys[eps[i].n][eps[i].p] = std::move(keys);
  }
  for (auto& a : parts) {
    for (uint8_t b : a.bits) {
      if (b & kFull) ++a.r.full_members;
      if ((b & kLim) && (!(b & kFull) || o.allow_both_pkeys)) ++a.r.limited_members;
    }
    plan.partitions.push_back(std::move(a.r));
  }
  return plan;
}

std::optional<uint16_t> PartitionPlan::common_pkey(NodeIndex a, PortNum pa, NodeIndex b, PortNum pb,
                                                   uint16_t want) const {
  const auto& ka = pkeys.at(a).at(pa);
  const auto& kb = pkeys.at(b).at(pb);
  for (uint16_t x : ka)
    for (uint16_t y : kb)
      if ((x & 0x7fff) == (y & 0x7fff) && ((x | y) & kFullMember) &&
          (want == 0 || (want & 0x7fff) == (x & 0x7fff)))
        return x;
  return std::nullopt;
}

bool PartitionPlan::share_partition(NodeIndex a, PortNum pa, NodeIndex b, PortNum pb) const {
  return common_pkey(a, pa, b, pb).has_value();
}

std::vector<uint16_t> facing_pkeys(const PartitionPlan& plan, const fabric::Fabric& f, NodeIndex n,
                                   PortNum p) {
  std::vector<uint16_t> keys = plan.pkeys.at(n).at(p);
  const auto& vps = f.vports();
  auto it = std::lower_bound(vps.begin(), vps.end(), std::pair(n, p),
                             [](const auto& v, auto k) { return std::pair(v.node, v.port) < k; });
  for (; it != vps.end() && it->node == n && it->port == p; ++it) {
    const size_t i = size_t(it - vps.begin());
    if (i >= plan.vport_pkeys.size()) break;
    for (uint16_t k : plan.vport_pkeys[i]) {
      auto same = std::find_if(keys.begin(), keys.end(),
                               [k](uint16_t h) { return (h & 0x7fff) == (k & 0x7fff); });
      if (same == keys.end())
        keys.push_back(k);
      else
        *same |= k & kFullMember;
    }
  }
  return keys;
}

PkeyLayout layout_pkeys(const std::vector<uint16_t>& want, const std::vector<uint16_t>& held,
                        size_t cap, bool keep) {
  PkeyLayout out;
  out.table.assign(cap, 0);
  if (want.empty()) return out;
  if (cap == 0) {
    out.dropped = want;
    return out;
  }
  std::vector<bool> placed(want.size(), false);
  out.table[0] = want[0];
  placed[0] = true;
  if (keep) {
    for (size_t i = 1; i < std::min(cap, held.size()); ++i) {
      const uint16_t h = held[i];
      if (!(h & 0x7fff)) continue;
      size_t pick = want.size();
      for (size_t j = 1; j < want.size() && pick == want.size(); ++j)
        if (!placed[j] && want[j] == h) pick = j;  // the same key and membership
      for (size_t j = 1; j < want.size() && pick == want.size(); ++j)
        if (!placed[j] && (want[j] & 0x7fff) == (h & 0x7fff)) pick = j;  // membership changed
      if (pick == want.size()) continue;
      out.table[i] = want[pick];
      placed[pick] = true;
    }
  }
  size_t free = 1;
  for (size_t j = 1; j < want.size(); ++j) {
    if (placed[j]) continue;
    while (free < cap && out.table[free]) ++free;
    if (free == cap) {
      out.dropped.push_back(want[j]);
      continue;
    }
    out.table[free] = want[j];
  }
  return out;
}

}  // namespace weft::qos
