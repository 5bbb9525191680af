// weft/config/qos_policy.hpp — OpenSM's QoS policy file (qos-policy.conf): port
// groups, QoS levels, match rules, and the simplified qos-ulps section. The SA
// applies the matching level to PathRecord answers (SL, MTU and rate limits,
// P_Keys, packet lifetime) when QoS is on. qos-setup is read and ignored, as
// OpenSM ignores it (SL2VL and VLArb come from the qos_* options).
//
//   auto pol = weft::config::parse_qos_policy(text, "qos-policy.conf");
//   if (!pol) die(pol.error().message);   // every error, with file:line
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"

namespace weft::config {

struct Range64 {
  uint64_t lo = 0, hi = 0;
  bool contains(uint64_t x) const { return x >= lo && x <= hi; }
};

struct PortGroup {
  std::string name;
  std::vector<Range64> port_guids;
  std::vector<std::string> port_names;  // "node description/Pnum"
  std::vector<std::string> partitions;  // partition names of partitions.conf
  std::vector<Range64> pkeys;
  uint8_t node_types = 0;  // kCa | kSwitch | kRouter | kSelf (ALL sets all)
  int line = 0;
  static constexpr uint8_t kCa = 1, kSwitch = 2, kRouter = 4, kSelf = 8;
};

struct QosLevel {
  std::string name;
  uint8_t sl = 0;
  std::optional<uint8_t> mtu_limit, rate_limit, packet_life;
  std::vector<Range64> pkeys;
  int line = 0;
};

struct MatchRule {
  std::vector<std::string> sources, destinations;  // port group names
  std::vector<Range64> service_ids, pkeys, qos_classes;
  std::string level;
  int line = 0;
};

// One qos-ulps line: ULP[, criterion values] : SL.
struct UlpRule {
  enum class Kind { kDefault, kServiceId, kPkey, kTargetGuid, kSourceGuid };
  Kind kind = Kind::kDefault;
  std::vector<Range64> values;
  uint8_t sl = 0;
  int line = 0;
};

struct QosPolicy {
  std::vector<PortGroup> groups;
  std::vector<QosLevel> levels;
  std::vector<MatchRule> rules;
  std::vector<UlpRule> ulps;  // in file order; the default rule among them
  std::vector<std::string> warnings;
  const QosLevel* level(std::string_view name) const;
  const PortGroup* group(std::string_view name) const;
};

Result<QosPolicy> parse_qos_policy(std::string_view text, const std::string& source);
Result<QosPolicy> load_qos_policy(const std::string& path);

}  // namespace weft::config
