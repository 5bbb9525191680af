#include "weft/mad/from_options.hpp"

namespace weft::mad {

EngineOptions engine_from_options(const config::Values& v) {
  EngineOptions o;
  o.window = static_cast<int>(v.get_int("max_wire_smps"));
  o.timeout = std::chrono::milliseconds(v.get_int("transaction_timeout"));
  o.retries = static_cast<int>(v.get_int("transaction_retries"));
  o.long_timeout = std::chrono::milliseconds(v.get_int("long_transaction_timeout"));
  o.rounds = static_cast<int>(v.get_int("transaction_rounds"));
  o.gmp_window = static_cast<int>(v.get_int("perfmgr_max_outstanding_queries"));
  return o;
}

}  // namespace weft::mad
