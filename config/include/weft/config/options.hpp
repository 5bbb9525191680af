// weft/config/options.hpp — the SM's options as one declarative table (name,
// type, default, range, reloadable, help) and a reader for OpenSM-style
// `key value` files. Options that mean what an OpenSM option means carry
// OpenSM's name. Unknown keys and bad values are errors naming file:line.
//
//   weft::config::Values v = weft::config::defaults();
//   if (auto r = weft::config::load_file("weft.conf", v); !r) die(r.error().message);
//   if (auto r = weft::config::set(v, "max_wire_smps", "32", "--window"); !r) ...
//   int window = v.get_int("max_wire_smps");
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"

namespace weft::config {

enum class Type { kInt, kString };

struct OptionSpec {
  std::string_view name;
  Type type;
  std::string_view default_value;
  long min = 0, max = 0;  // for kInt
  bool reloadable;
  std::string_view help;
};

const std::vector<OptionSpec>& option_table();

class Values {
 public:
  long get_int(std::string_view name) const;
  const std::string& get_str(std::string_view name) const;
  // Where a value came from: "default", "FILE:LINE" or the CLI flag.
  const std::string& origin(std::string_view name) const;

 private:
  friend Values defaults();
  friend Result<void> set(Values&, std::string_view, std::string_view, const std::string&);
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> v_;  // value, origin
};

Values defaults();
// Validates and stores one value; `origin` is used in error messages and kept.
Result<void> set(Values& v, std::string_view name, std::string_view value,
                 const std::string& origin);
// Reads `key value` lines ('#' comments, blank lines). The first error stops the read.
Result<void> load_file(const std::string& path, Values& v);
Result<void> load_text(std::string_view text, const std::string& source, Values& v);

}  // namespace weft::config
