// weft/sa/sa.hpp — the Subnet Administrator (SubnAdm class 0x03): answers Get and
// GetTable for the records below from the SM's last published snapshot, honouring
// component masks, with the IBTA status codes for what it cannot answer. It is
// pure: request bytes and a snapshot in, answer bytes out (the caller sends them;
// answers longer than one MAD go out RMPP-active). Nothing a requester sends can
// crash it or make it allocate without bound.
//
//   weft::sa::SaAgent sa;   // the SM holds it as its sm::SubnAdm
//   auto ans = sa.answer(req_bytes, ctx);   // nullopt: not an SA request, dropped
//   if (ans) transport.send_long(*ans, reply_address);
//
// Records: ClassPortInfo, NodeRecord, PortInfoRecord, SwitchInfoRecord,
// LinearForwardingTableRecord, SL2VLTableRecord, VLArbitrationTableRecord,
// SMInfoRecord, LinkRecord, P_KeyTableRecord, PathRecord (source and destination by LID or GID;
// P_Key from the partitions both ends share, none when they share none; SL from the routing
// engine's layers, else the partition's when QoS is on; MTU and rate the least of the links on the
// path, with the IBTA selectors), MultiPathRecord (GetMulti: PathRecords for every SGID-DGID
// pair, NumbPath per pair over the LMC's LIDs, the most link-disjoint first), MCMemberRecord (Set
// joins or creates a group, Delete leaves it, Get/GetTable list members).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "weft/mad/mad.hpp"
#include "weft/sa/path.hpp"
#include "weft/sm/path_query.hpp"
#include "weft/sm/subn_adm.hpp"

namespace weft::sa {

// What the SA takes from the SM (weft/sm/subn_adm.hpp).
using sm::Gid;
using sm::kDefaultSubnetPrefix;
using sm::kJoinFull;
using sm::kTrapGidIn, sm::kTrapGidOut, sm::kTrapMcCreated, sm::kTrapMcDeleted;
using sm::McChange;
using sm::McDb;
using sm::McGroup;
using sm::SaContext;
using sm::SaStats;
using sm::SubnetSnapshot;

using mad::kClassSa;
using mad::kSaHeader;
constexpr uint8_t kMethodGetTable = 0x12;
constexpr uint8_t kMethodGetTableResp = 0x92;
constexpr uint8_t kMethodDelete = 0x15;
constexpr uint8_t kMethodGetMulti = 0x14;
constexpr uint8_t kMethodGetMultiResp = 0x94;

// SA attribute ids (IBTA 15.2.5).
constexpr uint16_t kSaClassPortInfo = 0x0001;
constexpr uint16_t kSaNodeRecord = 0x0011;
constexpr uint16_t kSaPortInfoRecord = 0x0012;
constexpr uint16_t kSaSl2VlRecord = 0x0013;
constexpr uint16_t kSaSwitchInfoRecord = 0x0014;
constexpr uint16_t kSaLftRecord = 0x0015;
constexpr uint16_t kSaSmInfoRecord = 0x0018;
constexpr uint16_t kSaLinkRecord = 0x0020;
constexpr uint16_t kSaPkeyTableRecord = 0x0033;
constexpr uint16_t kSaPathRecord = 0x0035;
constexpr uint16_t kSaVlArbRecord = 0x0036;
constexpr uint16_t kSaMultiPathRecord = 0x003A;
constexpr uint16_t kSaMcMemberRecord = 0x0038;
constexpr uint16_t kSaServiceRecord = 0x0031;
constexpr uint16_t kSaInformInfo = 0x0003;
constexpr uint16_t kSaInformInfoRecord = 0x00F3;
constexpr uint16_t kSaNotice = 0x0002;
using mad::kMethodReport;
constexpr uint8_t kMethodDeleteResp = 0x95;

// MAD status values an SA answer carries (IBTA 13.4.7, 15.2.1.2).
constexpr uint16_t kStatusBadVersion = 0x0004;
constexpr uint16_t kStatusBadMethod = 0x0008;
constexpr uint16_t kStatusBadMethodAttr = 0x000C;
constexpr uint16_t kStatusBadValue = 0x001C;
constexpr uint16_t kSaStatusNoResources = 0x0100;
constexpr uint16_t kSaStatusReqInvalid = 0x0200;
constexpr uint16_t kSaStatusNoRecords = 0x0300;
constexpr uint16_t kSaStatusTooManyRecords = 0x0400;
constexpr uint16_t kSaStatusInvalidGid = 0x0500;
constexpr uint16_t kSaStatusInsufficientComponents = 0x0600;

class SaAgent final : public sm::SubnAdm {
 public:
  // The one PathRecord the SA answers for `q` from the snapshot's index (the same code
  // path a Get(PathRecord) takes); nullopt when it answers none. Needs no agent's state.
  static std::optional<PathInfo> path(const SaContext& ctx, const PathQuery& q);
  // The whole answer (header + records): one MAD for Get, RMPP-active for
  // GetTable. nullopt for anything that is not an SA request (dropped).
  std::optional<std::vector<uint8_t>> answer(std::span<const uint8_t> req,
                                             const SaContext& ctx) override;
  const SaStats& stats() const override { return stats_; }
  // What joins and leaves did to the groups since the last call (their MFTs need writing).
  std::vector<McChange> take_mc_changes() override { return std::exchange(mc_changes_, {}); }

  // Services (ServiceRecord Set/Delete/Get) and trap subscriptions (InformInfo).
  // A service remembers the port that registered it (its owner): only that port, or a
  // trusted request (one with the SA_Key), may change or delete it. 0: not known (a
  // document from before owners were kept), anyone may.
  struct Service {
    std::array<uint8_t, 176> rec{};
    int64_t expires_s = 0;  // INT64_MAX: no lease
    uint64_t owner = 0;     // the registering port's GUID
  };
  // A subscription: where its Reports go (the requester's address, the QPN it named),
  // who subscribed (the requester's port GID: InformInfoRecord's SubscriberGID), and the
  // InformInfo as subscribed (its GID, if not zero, names the one issuer it wants).
  struct Subscription {
    Lid lid;
    uint32_t qpn = 0;
    uint16_t pkey_index = 0;
    uint8_t sl = 0;
    std::array<uint8_t, 36> info{};
    Gid subscriber{};
    // Subscribed with the SA_Key: only such a subscription hears the security traps
    // (256-259: bad M_Key, P_Key, Q_Key, B_Key).
    bool trusted = false;
  };
  const std::vector<Service>& services() const { return services_; }
  const std::vector<Subscription>& subscriptions() const { return subs_; }
  // Services of ports no longer in the fabric go, as their subscriptions do.
  void forget_ports(const std::function<bool(uint64_t port_guid)>& alive) override;
  // Services and subscriptions as the state store's "sa-records" (sa/src/records_doc.cpp).
  bool take_records_changed() override { return std::exchange(records_changed_, false); }
  std::string records_text(int64_t now_s, int64_t now_unix) const override;
  [[nodiscard]] Result<void> restore_records(std::string_view text, std::string_view where,
                                             int64_t now_s, int64_t now_unix) override;
  // Report(Notice) MADs of `n` to every subscriber that asked for it and may hear of it
  // (sa/src/service.cpp says how InformInfo matches a Notice).
  using Report = sm::SaReport;
  std::vector<Report> reports(const sm::Notice& n, const SaContext& ctx) override;
  size_t report_unanswered(const Report& r) override;

  // The index the answers use: the snapshot's own, built once when the SM made it.
  using Index = sm::EndPortIndex;

 private:
  SaStats stats_;
  std::vector<McChange> mc_changes_;
  std::vector<Service> services_;
  std::vector<Subscription> subs_;
  bool records_changed_ = false;
};

// The PathRecord weft's SA gives from `src` to `dst` (base LIDs), from `ctx` (its
// snapshot and QoS settings). weft/sa/path.hpp has the same over a published view.
std::optional<PathInfo> path_record(const SaContext& ctx, sm::EndPort src, sm::EndPort dst);

}  // namespace weft::sa
