// A YAML document as a small tree with a line number on every node, read with libyaml's
// event parser (private to roce/). libyaml reads a 5 MB fabric file in about 70 ms;
// yaml-cpp's node API took 1.2 s on the same file.
//
//   auto doc = parse_yaml(text, "fabric.yaml");      // an error names file:line
//   if (const YNode& links = (*doc)["links"]) for (const YNode& l : links.seq) ...
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/result.hpp"

namespace weft::roce {

struct YNode {
  enum class Kind : uint8_t { kNull, kScalar, kSeq, kMap };
  Kind kind = Kind::kNull;
  int line = 0;      // 1-based
  std::string text;  // scalars
  std::vector<YNode> seq;
  std::vector<std::pair<YNode, YNode>> map;  // in file order

  bool present = true;  // false only for absent(): what a missing key or index reads as

  bool IsDefined() const { return present; }
  explicit operator bool() const { return present; }
  bool IsNull() const { return kind == Kind::kNull; }
  bool IsScalar() const { return kind == Kind::kScalar; }
  bool IsSequence() const { return kind == Kind::kSeq; }
  bool IsMap() const { return kind == Kind::kMap; }
  const std::string& Scalar() const { return text; }
  size_t size() const { return kind == Kind::kSeq ? seq.size() : map.size(); }
  // The value under a scalar key of a mapping, or absent().
  const YNode& operator[](std::string_view key) const {
    if (kind == Kind::kMap)
      for (const auto& [k, v] : map)
        if (k.kind == Kind::kScalar && k.text == key) return v;
    return absent();
  }
  const YNode& operator[](size_t i) const {
    return kind == Kind::kSeq && i < seq.size() ? seq[i] : absent();
  }
  static const YNode& absent() {
    static const YNode none = [] {
      YNode n;
      n.present = false;
      return n;
    }();
    return none;
  }
};

// The first document of `text`. Anchors and aliases are expanded, within a bound: no more
// nodes than the text has bytes (or 100,000), so an alias bomb is refused, not built.
Result<YNode> parse_yaml(std::string_view text, const std::string& source);

}  // namespace weft::roce
