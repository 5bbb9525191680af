// Reading device JSON (dcb -j output, config_db) with every mistake named by file and
// JSON path (private to roce/).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"

namespace weft::roce {

// A JSON document, or an error naming file:line:column.
inline Result<nlohmann::json> parse_json(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    std::string what = e.what();
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    return fail(Errc::kInvalidInput, source + ":" + std::to_string(line) + ":" +
                                         std::to_string(col) + ": not valid JSON: " + what);
  }
}

class JsonReader {
 public:
  explicit JsonReader(std::string source) : source_(std::move(source)) {}
  void error(const std::string& path, const std::string& what) {
    errors_.push_back(source_ + ": " + path + ": " + what);
  }
  bool ok() const { return errors_.empty(); }
  std::string message() const {
    std::string m;
    for (size_t i = 0; i < errors_.size() && i < 50; ++i) m += (m.empty() ? "" : "\n") + errors_[i];
    if (errors_.size() > 50)
      m += "\n... and " + std::to_string(errors_.size() - 50) + " more errors";
    return m;
  }

  // A member that must be an object (absent: nullptr, no error).
  const nlohmann::json* object(const nlohmann::json& parent, const std::string& key,
                               const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return nullptr;
    if (!it->is_object()) {
      error(path, std::string("expected an object, got ") + it->type_name());
      return nullptr;
    }
    return &*it;
  }

  bool string(const nlohmann::json& parent, const std::string& key, const std::string& path,
              std::string* out, bool required) {
    auto it = parent.find(key);
    if (it == parent.end()) {
      if (required) error(path, "missing");
      return false;
    }
    if (!it->is_string()) {
      error(path, std::string("expected a string, got ") + it->type_name());
      return false;
    }
    *out = it->get<std::string>();
    return true;
  }

  // An integer, written as a JSON number or (as config_db writes every value) a string.
  bool integer(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi,
               int64_t* out) {
    int64_t x = 0;
    if (v.is_number_integer()) {
      x = v.get<int64_t>();
    } else if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        return error(path, "number too large"), false;
      x = static_cast<int64_t>(v.get<uint64_t>());
    } else if (v.is_string()) {
      const std::string s = v.get<std::string>();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if (s.empty() || ec != std::errc() || p != s.data() + s.size())
        return error(path, "expected an integer, got \"" + s + "\""), false;
    } else {
      return error(path, std::string("expected an integer, got ") + v.type_name()), false;
    }
    if (x < lo || x > hi)
      return error(path,
                   std::to_string(x) + " is not " + std::to_string(lo) + ".." + std::to_string(hi)),
             false;
    *out = x;
    return true;
  }

  // Eight per-priority (or per-TC) values: a list [v0..v7], or an object {"0": v0, ...}
  // as different iproute2 releases print them.
  template <class T, class One>
  bool per_prio(const nlohmann::json& parent, const std::string& key, const std::string& path,
                std::array<T, 8>* out, One one) {
    auto it = parent.find(key);
    if (it == parent.end()) return false;
    std::array<T, 8> vals{};
    bool good = true;
    if (it->is_array()) {
      if (it->size() != 8)
        return error(path, "expected 8 entries, got " + std::to_string(it->size())), false;
      for (size_t i = 0; i < 8; ++i)
        good &= one((*it)[i], path + "[" + std::to_string(i) + "]", &vals[i]);
    } else if (it->is_object()) {
      std::array<bool, 8> seen{};
      for (auto& [k, v] : it->items()) {
        int idx = -1;
        auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), idx);
        if (ec != std::errc() || p != k.data() + k.size() || idx < 0 || idx > 7) {
          error(path, "key \"" + k + "\" is not 0..7");
          good = false;
          continue;
        }
        seen[idx] = true;
        good &= one(v, path + "." + k, &vals[idx]);
      }
      for (int i = 0; i < 8; ++i)
        if (!seen[i]) error(path, "no entry for " + std::to_string(i)), good = false;
    } else {
      return error(path,
                   std::string("expected 8 values (a list or an object), got ") + it->type_name()),
             false;
    }
    if (good) *out = vals;
    return good;
  }

  bool per_prio_int(const nlohmann::json& parent, const std::string& key, const std::string& path,
                    int64_t lo, int64_t hi, std::array<int64_t, 8>* out) {
    return per_prio(parent, key, path, out,
                    [&](const nlohmann::json& v, const std::string& p, int64_t* x) {
                      return integer(v, p, lo, hi, x);
                    });
  }
  bool per_prio_bool(const nlohmann::json& parent, const std::string& key, const std::string& path,
                     std::array<bool, 8>* out) {
    return per_prio(parent, key, path, out,
                    [&](const nlohmann::json& v, const std::string& p, bool* x) {
                      if (v.is_boolean()) return *x = v.get<bool>(), true;
                      if (v == "on" || v == 1) return *x = true, true;
                      if (v == "off" || v == 0) return *x = false, true;
                      error(p, "expected true/false or on/off, got " + v.dump());
                      return false;
                    });
  }
  bool per_prio_string(const nlohmann::json& parent, const std::string& key,
                       const std::string& path, std::array<std::string, 8>* out) {
    return per_prio(
        parent, key, path, out, [&](const nlohmann::json& v, const std::string& p, std::string* x) {
          if (!v.is_string())
            return error(p, std::string("expected a string, got ") + v.type_name()), false;
          *x = v.get<std::string>();
          return true;
        });
  }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

}  // namespace weft::roce
