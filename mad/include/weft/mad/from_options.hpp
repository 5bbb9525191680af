// weft/mad/from_options.hpp — the MAD engine's options from the option table: SMPs on
// the wire (max_wire_smps), the time per attempt (transaction_timeout), extra attempts
// (transaction_retries), and GMPs on the wire (perfmgr_max_outstanding_queries).
//
//   auto eo = weft::mad::engine_from_options(values);
#pragma once

#include "weft/config/options.hpp"
#include "weft/mad/mad_engine.hpp"

namespace weft::mad {

EngineOptions engine_from_options(const config::Values& v);

}  // namespace weft::mad
