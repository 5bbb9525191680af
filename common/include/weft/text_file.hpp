// weft/text_file.hpp — a whole (small) input file as text, or an error naming it.
//
//   auto text = weft::read_text_file("/etc/opensm/partitions.conf");
//   if (!text) return std::unexpected(text.error());   // "PATH: cannot open for reading"
//   return weft::parse_text_file(path, [](std::string_view t, const std::string& src) { ... });
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

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

// `parse(text, path)` on the file's contents, or the error reading it.
template <class Parse>
auto parse_text_file(const std::string& path, Parse&& parse)
    -> decltype(parse(std::string_view{}, path)) {
  auto text = read_text_file(path);
  if (!text) return std::unexpected(text.error());
  return parse(*text, path);
}

// A state file of one record per line, as the SM's own files (and OpenSM's) are: `take`
// gets each line with its '#' comment cut and "PATH:N: " to name it in a warning, and
// blank lines are skipped. A missing file has no lines.
template <class Take>
Result<void> for_each_state_line(const std::string& path, Take&& take) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return {};
    return fail(Errc::kIo, path + ": cannot read: " + std::strerror(errno));
  }
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    take(line, path + ":" + std::to_string(no) + ": ");
  }
  if (in.bad()) return fail(Errc::kIo, path + ": read error");
  return {};
}

}  // namespace weft
