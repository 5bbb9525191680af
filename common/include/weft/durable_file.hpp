// weft/durable_file.hpp — a file replaced whole and on disk before the call returns:
// written to a temporary beside it, fsync'd, renamed over the old one, and the
// directory fsync'd, so a crash (kill -9, power loss) leaves the old file or the new
// one, never a part of either.
//
//   if (auto r = weft::write_file_durably(dir + "/guid2lid", text); !r) return r;
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "weft/result.hpp"

namespace weft {

// Creates the parent directory when missing. `mode` applies to a new file (the
// temporary is created with it, so a 0600 file is never readable by others).
[[nodiscard]] Result<void> write_file_durably(const std::string& path, std::string_view text,
                                              mode_t mode = 0644);

}  // namespace weft
