// sa/src/records.hpp — what the SA's record families share, private to the SA: a record's
// layout (component bit -> the bytes it selects), one request as a handler sees it, the answer
// it fills, the byte and rate helpers, and each family's handlers. One file per family:
// node_port.cpp (NodeRecord, PortInfoRecord, SMInfoRecord, LinkRecord, P_KeyTableRecord,
// SwitchInfoRecord, LinearForwardingTableRecord, SL2VLTableRecord, VLArbitrationTableRecord),
// path.cpp (PathRecord, MultiPathRecord), multicast.cpp (MCMemberRecord), service.cpp
// (ServiceRecord, InformInfo, InformInfoRecord, Reports); agent.cpp holds the dispatch table.
#pragma once

#include <infiniband/mad.h>
#include <boost/endian/conversion.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "weft/sa/sa.hpp"

namespace weft::sa::detail {

using fabric::link_gbps;
using fabric::NodeIndex;

constexpr size_t kMaxRecords = size_t(1) << 20;  // a GetTable larger than this: NO_RESOURCES

// A record field as the bytes it covers and the bits it uses in each: found by
// asking libibmad to set the field to all ones (its tables know the IBTA layouts;
// weft does not restate them).
struct Span {
  std::vector<std::pair<uint16_t, uint8_t>> bytes;
};
Span probe(MAD_FIELDS f, int base, bool wide = false);
Span bytes(uint16_t from, uint16_t to, uint8_t mask = 0xff);
bool same(const uint8_t* a, const uint8_t* b, const Span& s);

// Component bit -> the field it selects, per record (IBTA 15.2.5).
struct Layout {
  size_t size;               // record bytes
  std::vector<Span> fields;  // index = component bit; empty Span = reserved / ignored
};

// PathRecord (IBTA 15.2.5.16): libibmad knows only a few of its fields, so the
// layout is spelled out here. Component bits:
enum PrBit : int {
  kPrDgid = 2,
  kPrSgid = 3,
  kPrDlid = 4,
  kPrSlid = 5,
  kPrRaw = 6,
  kPrFlow = 8,
  kPrHop = 9,
  kPrTclass = 10,
  kPrReversible = 11,
  kPrNumbPath = 12,
  kPrPkey = 13,
  kPrQos = 14,
  kPrSl = 15,
  kPrMtuSel = 16,
  kPrMtu = 17,
  kPrRateSel = 18,
  kPrRate = 19,
  kPrLifeSel = 20,
  kPrLife = 21,
  kPrPreference = 22
};
constexpr size_t kPathRecordSize = 64;

// Big-endian fields (the wire order), through Boost.Endian.
inline uint16_t be16(const uint8_t* p) {
  return boost::endian::load_big_u16(p);
}
inline uint32_t be32(const uint8_t* p) {
  return boost::endian::load_big_u32(p);
}
inline uint64_t be64(const uint8_t* p) {
  return boost::endian::load_big_u64(p);
}
inline void put16(uint8_t* p, uint16_t v) {
  boost::endian::store_big_u16(p, v);
}
inline void put64(uint8_t* p, uint64_t v) {
  boost::endian::store_big_u64(p, v);
}
inline bool bit(uint64_t mask, int b) {
  return (mask >> b) & 1;
}

// IBTA rate codes: a code's nominal Gb/s, and the fastest code not above `gbps`.
double rate_gbps(uint8_t code);
uint8_t rate_code(double gbps);
using fabric::link_mtu;  // a link's MTU: the neighbour MTU the SM set, else the cap

// MTU and rate selectors (0 greater than, 1 less than, 2 exactly, 3 largest): the
// value to answer, or nullopt when the path cannot meet the request. `rank` orders
// values (MTU codes rank as they are; rates by Gb/s).
template <class Rank>
std::optional<uint8_t> select(uint8_t have, bool given_sel, uint8_t sel, bool given_val,
                              uint8_t want, Rank rank) {
  if (!given_val) return have;
  if (!given_sel) sel = 2;
  switch (sel) {
    case 0:
      return rank(have) > rank(want) ? std::optional<uint8_t>(have) : std::nullopt;
    case 1:
      return rank(have) < rank(want) ? std::optional<uint8_t>(have) : std::nullopt;
    case 2:
      return rank(have) >= rank(want) ? std::optional<uint8_t>(want) : std::nullopt;
    default:
      return have;
  }
}

struct Answer {
  uint16_t status = 0;
  size_t rec_size = 0;
  std::vector<uint8_t> records;
  size_t count = 0;
};

// Everything one request needs, so the record builders stay small.
struct Query {
  const SaContext& ctx;
  const SaAgent::Index& idx;
  const uint8_t* rec;  // the request's record (200 bytes after the SA header)
  uint64_t mask;
  bool table;            // GetTable: every match; Get: exactly one
  bool trusted = false;  // the request carried the SA_Key
};

// Adds `cand` when it matches the request's components; false when it does not (or the
// answer is full: status NO_RESOURCES).
bool add(Answer& a, const Layout& l, const uint8_t* cand, const Query& q);
// Components beyond a record's known fields make a request this SA cannot honour.
bool mask_ok(const Layout& l, uint64_t mask);

// --- node and port records (node_port.cpp) ------------------------------------------
const Layout& node_record();
const Layout& port_info_record();
const Layout& sm_info_record();
const Layout& link_record();
const Layout& pkey_table_record();
const Layout& switch_info_record();
const Layout& lft_record();
const Layout& sl2vl_record();
const Layout& vlarb_record();
void node_records(const Query& q, Answer& a);
void port_info_records(const Query& q, Answer& a);
void sm_info_records(const Query& q, Answer& a);
void link_records(const Query& q, Answer& a);
void pkey_table_records(const Query& q, Answer& a);
void switch_info_records(const Query& q, Answer& a);
void lft_records(const Query& q, Answer& a);
void sl2vl_records(const Query& q, Answer& a);
void vlarb_records(const Query& q, Answer& a);

// --- PathRecord and MultiPathRecord (path.cpp) --------------------------------------
// An end port, or an SR-IOV virtual port behind one (vport: its index in the
// snapshot's fabric.vports(); its GID is its own GUID, its P_Keys its own, its LID its
// own or its port's).
struct PathEnd {
  NodeIndex n;
  PortNum p;
  uint16_t lid;
  size_t vport = SIZE_MAX;
};
// One PathRecord from `s` to `d`, or nothing when no path meets the request.
bool path_record(const Query& q, const PathEnd& s, const PathEnd& d, Answer& a);
void path_records(const Query& q, Answer& a);
// `rec`: the MultiPathRecord and the GIDs after it.
void multipath_records(const SaContext& ctx, const SaAgent::Index& idx,
                       std::span<const uint8_t> rec, uint64_t mask, Answer& a);

// --- MCMemberRecord (multicast.cpp) -------------------------------------------------
const Layout& mc_member_record();
void mc_member_records(const Query& q, Answer& a, McDb& db);
// SubnAdmSet: join (creating the group if needed). Returns the member's record.
std::optional<std::array<uint8_t, 56>> mc_join(const Query& q, Answer& a, McDb& db,
                                               std::vector<McChange>& changed);
// SubnAdmDelete: leave (the JoinState bits given).
std::optional<std::array<uint8_t, 56>> mc_leave(const Query& q, Answer& a, McDb& db,
                                                std::vector<McChange>& changed);

// --- ServiceRecord, InformInfo, InformInfoRecord (service.cpp) ----------------------
const Layout& service_record();
const Layout& inform_info_record();
// ServiceRecord Set (register, with a lease), Delete, and Get/GetTable.
void service_request(const Query& q, Answer& a, uint8_t method,
                     std::vector<SaAgent::Service>& services);
// InformInfo Set: subscribe (or unsubscribe) the requester to a trap.
void inform_request(const Query& q, Answer& a, std::vector<SaAgent::Subscription>& subs);
void inform_info_records(const Query& q, Answer& a, const std::vector<SaAgent::Subscription>& subs);

}  // namespace weft::sa::detail
