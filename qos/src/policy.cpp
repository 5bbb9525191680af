#include "weft/qos/policy.hpp"

#include <algorithm>

namespace weft::qos {

using fabric::NodeIndex;
using fabric::NodeType;

namespace {
bool in(const std::vector<config::Range64>& rs, uint64_t x) {
  return std::any_of(rs.begin(), rs.end(), [&](const auto& r) { return r.contains(x); });
}
}  // namespace

PolicyMatcher::PolicyMatcher(config::QosPolicy policy, const fabric::Fabric& f,
                             const PartitionPlan& plan, Guid sm_port_guid)
    : pol_(std::move(policy)) {
  members_.resize(pol_.groups.size());
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    for (PortNum p = 0; p <= nd.num_ports; ++p) {
      const bool end = nd.is_switch() ? p == 0 : nd.ports[p].linked();
      if (!end) continue;
      const uint64_t guid = nd.ports[p].guid.value;
      const auto& keys = plan.pkeys[n][p];
      const uint8_t type = nd.type == NodeType::kCa       ? config::PortGroup::kCa
                           : nd.type == NodeType::kSwitch ? config::PortGroup::kSwitch
                                                          : config::PortGroup::kRouter;
      const std::string pname = nd.description + "/P" + std::to_string(p);
      for (size_t gi = 0; gi < pol_.groups.size(); ++gi) {
        const auto& g = pol_.groups[gi];
        bool member =
            in(g.port_guids, guid) || (g.node_types & type) ||
            ((g.node_types & config::PortGroup::kSelf) && guid == sm_port_guid.value) ||
            std::find(g.port_names.begin(), g.port_names.end(), pname) != g.port_names.end();
        for (uint16_t k : keys) {
          if (member) break;
          member = in(g.pkeys, k & 0x7fff);
          for (const auto& part : plan.partitions)
            if (!member && part.pkey == (k & 0x7fff) &&
                std::find(g.partitions.begin(), g.partitions.end(), part.name) !=
                    g.partitions.end())
              member = true;
        }
        if (member) members_[gi].insert(guid);
      }
    }
  }
}

const std::unordered_set<uint64_t>& PolicyMatcher::group(const std::string& name) const {
  static const std::unordered_set<uint64_t> none;
  for (size_t i = 0; i < pol_.groups.size(); ++i)
    if (pol_.groups[i].name == name) return members_[i];
  return none;
}

QosDecision PolicyMatcher::decide(uint64_t src, uint64_t dst, std::optional<uint64_t> service_id,
                                  std::optional<uint16_t> pkey,
                                  std::optional<uint16_t> qos_class) const {
  auto of_level = [](const config::QosLevel& l) {
    return QosDecision{l.sl, l.mtu_limit, l.rate_limit, l.packet_life, l.pkeys, l.name};
  };
  auto in_groups = [&](const std::vector<std::string>& names, uint64_t guid) {
    return std::any_of(names.begin(), names.end(),
                       [&](const auto& n) { return group(n).count(guid); });
  };
  for (const auto& r : pol_.rules) {
    // Every criterion the rule has must hold; a query without the field does not match.
    if (!r.sources.empty() && !in_groups(r.sources, src)) continue;
    if (!r.destinations.empty() && !in_groups(r.destinations, dst)) continue;
    if (!r.service_ids.empty() && !(service_id && in(r.service_ids, *service_id))) continue;
    if (!r.pkeys.empty() && !(pkey && in(r.pkeys, *pkey & 0x7fff))) continue;
    if (!r.qos_classes.empty() && !(qos_class && in(r.qos_classes, *qos_class))) continue;
    if (const auto* l = pol_.level(r.level)) return of_level(*l);
  }
  using K = config::UlpRule::Kind;
  std::optional<uint8_t> ulp_default;
  for (const auto& u : pol_.ulps) {
    bool hit = false;
    switch (u.kind) {
      case K::kDefault:
        if (!ulp_default) ulp_default = u.sl;
        break;
      case K::kServiceId:
        hit = service_id && in(u.values, *service_id);
        break;
      case K::kPkey:
        hit = pkey && in(u.values, *pkey & 0x7fff);
        break;
      case K::kTargetGuid:
        hit = in(u.values, dst);
        break;
      case K::kSourceGuid:
        hit = in(u.values, src);
        break;
    }
    if (hit) return QosDecision{u.sl, {}, {}, {}, {}, "qos-ulps"};
  }
  if (const auto* l = pol_.level("DEFAULT")) return of_level(*l);
  return QosDecision{ulp_default.value_or(0), {}, {}, {}, {}, ulp_default ? "qos-ulps" : "none"};
}

}  // namespace weft::qos
