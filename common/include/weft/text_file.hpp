// weft/text_file.hpp — a whole (small) input file as text, or an error naming it.
//
//   auto text = weft::read_text_file("/etc/opensm/partitions.conf");
//   if (!text) return std::unexpected(text.error());   // "PATH: cannot open for reading"
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "weft/result.hpp"

namespace weft {

inline Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(Errc::kIo, path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(Errc::kIo, path + ": read error");
  return ss.str();
}

}  // namespace weft
