// weft/config/partitions.hpp — OpenSM's partitions.conf grammar:
//
//   Name[=PKey][,indx0][,ipoib][,mtu=4][,rate=3][,sl=0][,scope=2][,Q_Key=..][,TClass=..]
//       [,FlowLabel=..][,defmember=full|limited|both] : member, member, ... ;
//   member: PortGUID | ALL | ALL_CAS | ALL_SWITCHES | ALL_ROUTERS | SELF | NONE, each
//           optionally =full, =limited or =both
//   mgid=GID[,flag=value]...   (one per line, inside the member list: a multicast group)
//
// '#' starts a comment; a definition may span lines; one PKey split over several
// definitions is merged (the first name is kept); a definition without a PKey
// gets the lowest P_Key no definition uses. Errors name file:line and what was
// expected; things OpenSM ignores (unknown flags, an unknown membership word)
// are accepted as OpenSM accepts them, with a warning naming file:line.
//
//   auto pol = weft::config::parse_partitions(text, "/etc/opensm/partitions.conf");
//   if (!pol) die(pol.error().message);
//   for (auto& p : pol->partitions) use(p.pkey, p.members);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"
#include "weft/types.hpp"

namespace weft::config {

enum class Membership : uint8_t { kLimited, kFull, kBoth };
const char* membership_name(Membership m);

// Multicast group properties (IBTA encodings: mtu 4 = 2048, rate 3 = 10 Gb/s).
struct GroupFlags {
  uint8_t mtu = 4;
  uint8_t rate = 3;
  uint8_t sl = 0;
  uint16_t scope_mask = 0;  // bit s: scope s; none given = the MGID's own scope
  uint32_t qkey = 0;        // 0 = 0x0b1b for IP groups
  uint8_t tclass = 0;
  uint32_t flow_label = 0;
  bool operator==(const GroupFlags&) const = default;
};

struct MemberSpec {
  enum class Kind : uint8_t { kGuid, kAll, kAllCas, kAllSwitches, kAllRouters, kSelf };
  Kind kind = Kind::kGuid;
  Guid guid;  // kGuid
  Membership membership = Membership::kLimited;
  // The P_Key goes at index 0 of this member's ports: its definition's indx0 (as
  // OpenSM, per definition: two definitions of one P_Key may differ).
  bool indx0 = false;
  int line = 0;
};

struct McGroupSpec {
  std::array<uint8_t, 16> mgid{};
  GroupFlags flags;
  int line = 0;
};

struct PartitionSpec {
  std::string name;
  uint16_t pkey = 0;  // low 15 bits, never 0
  bool pkey_given = false;
  bool indx0 = false;  // any of its definitions had indx0 (each member keeps its own)
  bool ipoib = false;
  GroupFlags flags;  // the IPoIB broadcast group's, inherited by the mgid groups
  std::vector<MemberSpec> members;
  std::vector<McGroupSpec> groups;
  std::string where;  // FILE:LINE of the first definition
};

struct PartitionPolicy {
  std::vector<PartitionSpec> partitions;  // in file order, merged by P_Key
  std::vector<std::string> warnings;      // "FILE:LINE: ..."
  const PartitionSpec* find(uint16_t pkey) const;
};

constexpr uint16_t kDefaultPkey = 0x7fff;

Result<PartitionPolicy> parse_partitions(std::string_view text, const std::string& source);
Result<PartitionPolicy> load_partitions(const std::string& path);

// "ff12:401b::1" -> 16 bytes; nullopt unless it is an IPv6 address starting 0xff.
std::optional<std::array<uint8_t, 16>> parse_mgid(std::string_view s);
std::string mgid_str(const std::array<uint8_t, 16>& gid);

}  // namespace weft::config
