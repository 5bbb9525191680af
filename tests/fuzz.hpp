// Test helper: a small mutation fuzzer's one step.
#pragma once

#include <random>
#include <string>

namespace weft::testing {

// `base` with 1 to 4 random edits: a byte replaced or inserted (from `alphabet`), or
// 1 to 5 bytes deleted.
inline std::string mutate(const std::string& base, const std::string& alphabet, std::mt19937& rng) {
  std::string s = base;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t pos = rng() % s.size();
    switch (rng() % 3) {
      case 0:
        s[pos] = alphabet[rng() % alphabet.size()];
        break;
      case 1:
        s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
        break;
      default:
        s.erase(pos, 1 + rng() % 5);
        break;
    }
  }
  return s;
}

}  // namespace weft::testing
