// weft/sm/from_options.hpp — the SM's options from the option table (opensm.conf names),
// each module's part built by that module (the engine's by mad/, the PerfMgr's by perf/,
// QoS by qos/), with the files they name read and checked: root_guid_file, torus_config
// (when dor is in the chain), partition_config_file, qos_policy_file,
// perfmgr_error_thresholds_file. An error names the option and where it was set.
//
//   auto o = weft::sm::sm_from_options(values);
#pragma once

#include "weft/config/options.hpp"
#include "weft/result.hpp"
#include "weft/sm/options.hpp"

namespace weft::sm {

Result<SmOptions> sm_from_options(const config::Values& v);

}  // namespace weft::sm
