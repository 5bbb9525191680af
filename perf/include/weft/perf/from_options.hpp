// weft/perf/from_options.hpp — the PerfMgr's options from the option table (OpenSM's
// perfmgr_* names, unhealthy_port_policy), with the error thresholds file it names
// read and checked.
//
//   auto po = weft::perf::perf_from_options(values);   // or an error naming the option
#pragma once

#include "weft/config/options.hpp"
#include "weft/perf/view.hpp"
#include "weft/result.hpp"

namespace weft::perf {

Result<PerfOptions> perf_from_options(const config::Values& v);

}  // namespace weft::perf
