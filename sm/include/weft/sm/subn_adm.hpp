// weft/sm/subn_adm.hpp — the SM's seam to the Subnet Administrator beside it (sa/:
// weft::sa::SaAgent). The SM hands it the SubnAdm MADs its engine receives, with what the
// SA answers from (SaContext: the published snapshot, the multicast groups, what the SM
// says of itself); applies what the SA did to the multicast groups (McChange); asks it for
// the Reports of the traps the SM raises (ports in and out, groups made and gone); and
// tells it which ports left. The SM knows no SA record; whoever composes the daemon gives
// it its SA (none: SubnAdm MADs are dropped).
//
//   sa::SaAgent sa;  SubnetManager sm(transport, options, &sa);   // daemon::Managers does
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "weft/qos/vl_tables.hpp"
#include "weft/sm/multicast.hpp"
#include "weft/sm/sa_stats.hpp"
#include "weft/sm/snapshot.hpp"

namespace weft::sm {

constexpr uint64_t kDefaultSubnetPrefix = 0xfe80000000000000ull;
// Traps the SA reports to subscribers (IBTA 14.2.5.1).
constexpr uint16_t kTrapGidIn = 64, kTrapGidOut = 65, kTrapMcCreated = 66, kTrapMcDeleted = 67;

// What the SA answers from: the snapshot and what the SM says about itself.
struct SaContext {
  std::shared_ptr<const SubnetSnapshot> snap;
  Guid sm_guid;
  uint8_t sm_priority = 0;
  uint32_t sm_act_count = 0;
  uint64_t subnet_prefix = kDefaultSubnetPrefix;
  // The SA_Key (sa_key): a request whose SM_Key is this one is trusted; one with another
  // non-zero key is dropped (IBTA C15-0.1.5, as OpenSM does).
  uint64_t sa_key = 1;
  uint8_t packet_life = 0x12;   // OpenSM's packet_life_time default
  uint8_t vport_hop_limit = 2;  // virt_default_hop_limit: PathRecords with a VF end
  bool qos = false;             // partition SLs apply only under QoS, as in OpenSM
  McDb* mc = nullptr;           // multicast groups: MCMemberRecord Set and Delete change them
  uint16_t mft_cap = 0;         // MLIDs every switch holds (the least MulticastFDBCap)
  McDb::MlidFree mlid_free;     // MLIDs a new group may get (empty: any)
  // SL2VL and VLArb as weft programs them (SL2VLRecords only when it does: under
  // QoS or with routing layers; VLArbRecords under QoS).
  const qos::QosConfig* qos_cfg = nullptr;
  int64_t now_s = 0;  // the SM's clock, for service leases
  // Who asks (InformInfo subscriptions answer there).
  Lid requester;
  uint32_t requester_qpn = 0;
  uint16_t requester_pkey_index = 0;
  uint8_t requester_sl = 0;
};

// What an SA request did to the multicast groups, for the SM to act on: a group made
// (trap 66 to subscribers), a group gone (trap 67), a group whose members changed. Each
// names the group's MLID, whose tree the SM routes again.
struct McChange {
  enum Kind : uint8_t { kCreated, kDeleted, kMembers } kind;
  Gid mgid;
  uint16_t mlid = 0;
};

// The GID of the port with `guid` on the subnet with `prefix`.
inline Gid port_gid(uint64_t guid, uint64_t prefix = kDefaultSubnetPrefix) {
  Gid g{};
  for (int i = 0; i < 8; ++i) g[i] = uint8_t(prefix >> (56 - 8 * i));
  for (int i = 0; i < 8; ++i) g[8 + i] = uint8_t(guid >> (56 - 8 * i));
  return g;
}

// A Notice (IBTA 13.4.8.2, 80 bytes): IsGeneric and Type 0, ProducerType or VendorID
// 1-3, TrapNumber or DeviceID 4-5, IssuerLID 6-7, NoticeToggle and NoticeCount 8-9,
// DataDetails 10-63, IssuerGID 64-79. A device's trap is its SMP's first 64 bytes with
// the issuer's GID the SM adds; the SM's own (64-67) name a GID in DataDetails.
using Notice = std::array<uint8_t, 80>;
inline Notice sm_notice(uint16_t trap, const Gid& about, Lid sm_lid, const Gid& sm_gid) {
  Notice n{};
  n[0] = 0x80 | 4;  // generic, informational
  n[3] = 4;         // producer: class manager
  n[4] = uint8_t(trap >> 8), n[5] = uint8_t(trap);
  n[6] = uint8_t(sm_lid.value >> 8), n[7] = uint8_t(sm_lid.value);
  std::copy(about.begin(), about.end(), n.begin() + 16);  // DataDetails: 6 reserved, the GID
  std::copy(sm_gid.begin(), sm_gid.end(), n.begin() + 64);
  return n;
}
inline uint16_t notice_trap(const Notice& n) {
  return uint16_t(n[4] << 8 | n[5]);
}

// A Report(Notice) MAD for one subscriber (the SA header and the Notice; the MAD's TID
// is the sender's), where it goes, and whose subscription it serves.
struct SaReport {
  std::vector<uint8_t> mad;
  Lid lid;
  uint32_t qpn;
  uint16_t pkey_index;
  uint8_t sl;
  Gid subscriber;
};

class SubnAdm {
 public:
  virtual ~SubnAdm() = default;
  // The whole answer to a SubnAdm MAD (header + records; longer than one MAD: RMPP-active).
  // nullopt for anything that is not an SA request (dropped).
  virtual std::optional<std::vector<uint8_t>> answer(std::span<const uint8_t> req,
                                                     const SaContext& ctx) = 0;
  // What joins and leaves did to the groups since the last call (their MFTs need writing).
  virtual std::vector<McChange> take_mc_changes() = 0;
  // Report(Notice) MADs of `n` to every subscriber whose InformInfo matches it and
  // whose port may hear of its source (a shared partition), as IBTA 13.4.8.3 and
  // o13-17.1.1 say; `ctx` is what the SA answers from (the snapshot, the groups).
  virtual std::vector<SaReport> reports(const Notice& n, const SaContext& ctx) = 0;
  // A Report nobody answered (no ReportResponse after every retry): the subscriptions
  // it served are dropped (the subscriber is gone or deaf; it subscribes again after a
  // ClientReregister). How many went.
  virtual size_t report_unanswered(const SaReport& r) = 0;
  // Services and subscriptions of ports no longer in the fabric go.
  virtual void forget_ports(const std::function<bool(uint64_t port_guid)>& alive) = 0;
  // The SA's records beside the groups (ServiceRecords with their leases, InformInfo
  // subscriptions) as a document of the state store ("sa-records"): whether a request
  // or forget_ports changed them since the last call; the text (leases as wall-clock
  // times: `now_s` is the SA's clock, `now_unix` the wall clock at that moment); and
  // the records a text holds, replacing the SA's (an error names the record and field;
  // leases run out as they would have).
  virtual bool take_records_changed() = 0;
  virtual std::string records_text(int64_t now_s, int64_t now_unix) const = 0;
  [[nodiscard]] virtual Result<void> restore_records(std::string_view text, std::string_view where,
                                                     int64_t now_s, int64_t now_unix) = 0;
  virtual const SaStats& stats() const = 0;
};

}  // namespace weft::sm
