// Options to SmOptions: the command line and the config file (opensm.conf syntax)
// merged into config::Values, the files they name loaded, logging set up.
#pragma once

#include <boost/program_options.hpp>
#include <optional>

#include "weft/config/options.hpp"
#include "weft/config/partitions.hpp"
#include "weft/config/qos_policy.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::app {

// The options `weft sm` and `weft sim` share.
boost::program_options::options_description sm_options();
// Defaults, then --config FILE, then the flags.
Result<config::Values> build_config(const boost::program_options::variables_map& vm);
Result<sm::SmOptions> sm_opts(const config::Values& v);
// The state store state_store names (the state directory, or etcd with STATE_DIR as
// its local copy and the etcd_* TLS and auth options); `self` names this SM in etcd.
// `rest_partition_file` is where the REST partitions' local copy lives. Not started.
Result<std::shared_ptr<store::StateStore>> state_store(const config::Values& v,
                                                       const std::string& self,
                                                       const std::string& rest_partition_file);
Result<void> setup_logging(const boost::program_options::variables_map& vm,
                           const config::Values& v);

}  // namespace weft::app
