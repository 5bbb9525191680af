// weft/sm/documents.hpp — the documents the SM keeps in its state store, each named by
// its owner here and nowhere in the store: the LID manager's guid2lid, the M_Key
// manager's guid2mkey and neighbors, the PerfMgr's unhealthy-port marks, the sweep's
// ports kept down, the partition ledger's partitions.rest.conf (what REST created), and
// the multicast groups, services and subscriptions the SA holds (mcast-groups,
// sa-records).
//
//   auto store = weft::store::directory_store(dir, weft::sm::state_documents());
#pragma once

#include <vector>

#include "weft/store/state_store.hpp"

namespace weft::sm {

inline std::vector<store::StateDoc> state_documents() {
  return {
      {"guid2lid", 0644},        {"guid2mkey", 0600},  {"neighbors", 0644},
      {"unhealthy-ports", 0644}, {"ports-down", 0644}, {"partitions.rest.conf", 0640},
      {"mcast-groups", 0644},    {"sa-records", 0640},
  };
}

}  // namespace weft::sm
