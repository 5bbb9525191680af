// weft/sa/path.hpp — what the SA answers about a path, in types, over the SM's published
// view: no MAD, no agent. REST's route view shows it beside the hops, so the SA a host
// asks and the route REST draws cannot disagree (both run the SA's PathRecord code).
//
//   auto pr = sa::path_record(*published, src, dst);   // pr->sl, pr->pkey, pr->mtu...
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "weft/sm/path_query.hpp"
#include "weft/sm/snapshot.hpp"

namespace weft::sa {

// A PathRecord question in types: from SLID to DLID, and what else it selects (the SL,
// the P_Key). What a host's Get(PathRecord) with those components asks, without a MAD.
struct PathQuery {
  uint16_t slid = 0, dlid = 0;
  std::optional<uint8_t> sl;
  std::optional<uint16_t> pkey;
};

// The PathRecord's answer, in types.
struct PathInfo {
  uint16_t slid = 0, dlid = 0, pkey = 0;
  uint8_t sl = 0, mtu = 0, rate = 0, packet_life = 0;
};

// "PathRecord", "NodeRecord", ... (the attribute's IBTA name; hex for others).
std::string sa_attr_name(uint16_t attr);

// The PathRecord weft's SA gives from `src` to `dst` (base LIDs) on `pub`'s snapshot,
// with the QoS settings in force there; nullopt before the first sweep or when it gives
// none.
std::optional<PathInfo> path_record(const sm::Published& pub, sm::EndPort src, sm::EndPort dst);

}  // namespace weft::sa
