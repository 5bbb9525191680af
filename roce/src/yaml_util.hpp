// Reading YAML the admin wrote, with every mistake named by file:line (private to roce/).
//
//   YamlReader r(source);
//   YNode root = r.load(text);            // a syntax error is recorded, root is null
//   r.keys(root, "profile", {"mode", "trust"}); // unknown keys: errors with "did you mean"
//   int64_t x; if (r.integer(root["mtu"], "mtu", 512, 9216, &x)) ...
//   if (!r.ok()) return fail(Errc::kInvalidInput, r.message());
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"
#include "weft/text.hpp"
#include "yaml_dom.hpp"

namespace weft::roce {

class YamlReader {
 public:
  explicit YamlReader(std::string source) : source_(std::move(source)) {}

  YNode load(std::string_view text) {
    auto doc = parse_yaml(text, source_);
    if (!doc) {
      errors_.push_back(doc.error().message);
      return YNode{};
    }
    return std::move(*doc);
  }

  int line(const YNode& n) const { return n.IsDefined() ? n.line : 0; }
  std::string at(const YNode& n) const {
    const int l = line(n);
    return l > 0 ? source_ + ":" + std::to_string(l) : source_;
  }
  void error(const YNode& n, const std::string& what) { errors_.push_back(at(n) + ": " + what); }
  void error_at(int line, const std::string& what) {
    errors_.push_back(source_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " + what);
  }
  bool ok() const { return errors_.empty(); }
  std::string message() const {
    std::string m;
    for (const auto& e : errors_) m += (m.empty() ? "" : "\n") + e;
    return m;
  }
  const std::string& source() const { return source_; }

  // A mapping (or absent); every key must be one of `known`.
  bool keys(const YNode& map, const std::string& what,
            std::initializer_list<std::string_view> known) {
    if (!map.IsDefined() || map.IsNull()) return true;
    if (!map.IsMap()) {
      error(map, what + ": expected a mapping (key: value)");
      return false;
    }
    bool good = true;
    for (const auto& kv : map.map) {
      const std::string k = kv.first.Scalar();
      bool found = false;
      for (auto n : known) found = found || n == k;
      if (!found) {
        error(kv.first, what + ": unknown key \"" + k + "\"" + text::did_you_mean(k, known));
        good = false;
      }
    }
    return good;
  }

  bool scalar(const YNode& n, const std::string& what, std::string* out) {
    if (!n.IsScalar()) {
      error(n, what + ": expected a single value");
      return false;
    }
    *out = n.Scalar();
    return true;
  }

  bool integer(const YNode& n, const std::string& what, int64_t lo, int64_t hi, int64_t* out) {
    std::string s;
    if (!scalar(n, what, &s)) return false;
    uint64_t u = 0;
    const bool neg = !s.empty() && s[0] == '-';
    if (!text::parse_u64(neg ? s.substr(1) : s, &u) || u > static_cast<uint64_t>(INT64_MAX)) {
      error(n, what + ": expected an integer, got \"" + s + "\"");
      return false;
    }
    const int64_t v = neg ? -static_cast<int64_t>(u) : static_cast<int64_t>(u);
    if (v < lo || v > hi) {
      error(n, what + ": " + s + " is not " + std::to_string(lo) + ".." + std::to_string(hi));
      return false;
    }
    *out = v;
    return true;
  }

  bool boolean(const YNode& n, const std::string& what, bool* out) {
    std::string s;
    if (!scalar(n, what, &s)) return false;
    if (s == "true" || s == "on" || s == "yes") return *out = true, true;
    if (s == "false" || s == "off" || s == "no") return *out = false, true;
    error(n, what + ": expected true or false, got \"" + s + "\"");
    return false;
  }

  // A value parsed by `parse` (parse_bytes, parse_speed_mbps, ...), within lo..hi.
  template <class Parse>
  bool unit(const YNode& n, const std::string& what, Parse parse, const char* expected, uint64_t lo,
            uint64_t hi, uint64_t* out) {
    std::string s;
    if (!scalar(n, what, &s)) return false;
    uint64_t v = 0;
    if (!parse(s, &v)) {
      error(n, what + ": expected " + expected + ", got \"" + s + "\"");
      return false;
    }
    if (v < lo || v > hi) {
      error(n, what + ": \"" + s + "\" is out of range");
      return false;
    }
    *out = v;
    return true;
  }

  // One of `choices`.
  bool choice(const YNode& n, const std::string& what,
              std::initializer_list<std::string_view> choices, size_t* index) {
    std::string s;
    if (!scalar(n, what, &s)) return false;
    size_t i = 0;
    for (auto c : choices) {
      if (c == s) return *index = i, true;
      ++i;
    }
    std::string list;
    for (auto c : choices) list += (list.empty() ? "" : " | ") + std::string(c);
    error(n, what + ": expected " + list + ", got \"" + s + "\"" + text::did_you_mean(s, choices));
    return false;
  }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

}  // namespace weft::roce
