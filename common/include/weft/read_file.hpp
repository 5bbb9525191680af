// Reading a small input file with one of weft's stream readers.
#pragma once

#include <fstream>
#include <string>

#include "weft/result.hpp"

namespace weft {

// Opens `path` and hands it to `reader(stream, path)`; a file that cannot be opened
// is an error naming it (after `what`, e.g. the option it came from).
template <class Reader>
auto read_file(const std::string& path, Reader&& reader, const std::string& what = "")
    -> decltype(reader(std::declval<std::istream&>(), path)) {
  std::ifstream in(path);
  if (!in) return fail(Errc::kIo, (what.empty() ? "" : what + ": ") + "cannot read " + path);
  return reader(in, path);
}

}  // namespace weft
