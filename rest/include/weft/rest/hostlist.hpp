// weft/rest/hostlist.hpp — Slurm's hostlist syntax, as SLURM_JOB_NODELIST spells a
// job's nodes: "node[01-04,07],gpu[1-2]-ib,login1". Brackets hold numbers and ranges
// (a range keeps its zero padding), several bracket groups in one name multiply, and
// top-level commas separate names.
//
//   auto hosts = expand_hostlist("n[1-3]");   // {"n1", "n2", "n3"}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"

namespace weft::rest {

// At most `limit` names; a longer list, a bad range or an unclosed bracket is an error
// saying where.
[[nodiscard]] Result<std::vector<std::string>> expand_hostlist(std::string_view list,
                                                               size_t limit = 100000);

}  // namespace weft::rest
