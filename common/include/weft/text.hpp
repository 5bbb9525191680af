// weft/text.hpp — small text helpers the readers share (config/ and roce/).
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace weft::text {

inline std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

// A whole-string unsigned number in C syntax (0x.., decimal); no sign.
inline bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(s.c_str(), &end, 0);
  if (errno || *end) return false;
  *out = x;
  return true;
}

inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean "x"?)" for the candidate one typo away from `name`, else "".
template <class Names>
std::string did_you_mean(std::string_view name, const Names& candidates) {
  std::string_view best;
  size_t bd = std::min<size_t>(4, name.size() / 4 + 2);  // a typo, not a different word
  for (std::string_view n : candidates) {
    const size_t d = edit_distance(name, n);
    if (d < bd) bd = d, best = n;
  }
  return best.empty() ? "" : " (did you mean \"" + std::string(best) + "\"?)";
}

}  // namespace weft::text
