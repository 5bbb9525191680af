// weft/daemon/from_options.hpp — the state store the options name (state_store: the
// state directory, or etcd with STATE_DIR as its local copy and the etcd_* TLS and auth
// options), holding the SM's and the partition ledger's documents and `more` (REST's,
// which the caller names). `self` names this SM in etcd; `rest_partition_file` is where
// the REST partitions' local copy lives. Made, not started.
//
//   auto st = daemon::state_store_from_options(values, "0x... host pid 42", rest_file, {});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/config/options.hpp"
#include "weft/result.hpp"
#include "weft/store/state_store.hpp"

namespace weft::daemon {

Result<std::shared_ptr<store::StateStore>> state_store_from_options(
    const config::Values& v, const std::string& self, const std::string& rest_partition_file,
    std::vector<store::StateDoc> more);

}  // namespace weft::daemon
