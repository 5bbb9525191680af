// weft/qos/policy.hpp — a QoS policy (qos-policy.conf) applied to a fabric: its
// port groups resolved to ports, and the decision for one path query: the first
// match rule that fits, else the first qos-ulps rule, else DEFAULT (or the ulps'
// default SL, or SL 0).
//
//   weft::qos::PolicyMatcher m(policy, fabric, partition_plan, sm_port_guid);
//   auto d = m.decide(src_guid, dst_guid, service_id, pkey, qos_class);  // d.sl, limits
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "weft/config/qos_policy.hpp"
#include "weft/fabric/fabric.hpp"
#include "weft/qos/partitions.hpp"

namespace weft::qos {

struct QosDecision {
  uint8_t sl = 0;
  std::optional<uint8_t> mtu_limit, rate_limit, packet_life;
  std::vector<config::Range64> pkeys;  // empty: any
  std::string level;                   // the qos-level (or "qos-ulps" / "none")
};

class PolicyMatcher {
 public:
  PolicyMatcher(config::QosPolicy policy, const fabric::Fabric& f, const PartitionPlan& plan,
                Guid sm_port_guid);
  QosDecision decide(uint64_t src_guid, uint64_t dst_guid, std::optional<uint64_t> service_id,
                     std::optional<uint16_t> pkey, std::optional<uint16_t> qos_class) const;
  // Ports of a port group (by name); empty when there is no such group.
  const std::unordered_set<uint64_t>& group(const std::string& name) const;

 private:
  config::QosPolicy pol_;
  std::vector<std::unordered_set<uint64_t>> members_;  // per pol_.groups index
};

}  // namespace weft::qos
