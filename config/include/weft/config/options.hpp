// weft/config/options.hpp — the SM's options as one declarative table (name,
// type, default, range, reloadable, help) and a reader for opensm.conf files.
// Options that mean what an OpenSM option means carry OpenSM's name. A real
// opensm.conf loads: every other OpenSM option is known, and one set to
// anything but OpenSM's default is reported (file:line, "not implemented")
// instead of silently doing nothing. Keys neither weft nor OpenSM knows and
// bad values are errors naming file:line; every error in a file is reported.
//
//   weft::config::Values v = weft::config::defaults();
//   if (auto r = weft::config::load_file("opensm.conf", v); !r) die(r.error().message);
//   for (auto& w : v.warnings()) log(w);
//   if (auto r = weft::config::set(v, "max_wire_smps", "32", "--window"); !r) ...
//   int window = v.get_int("max_wire_smps");
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"

namespace weft::config {

enum class Type { kInt, kString, kBool };

struct OptionSpec {
  std::string_view name;
  Type type;
  std::string_view default_value;
  long min = 0, max = 0;  // for kInt
  bool reloadable;
  std::string_view help;
};

// The options weft implements.
const std::vector<OptionSpec>& option_table();

// OpenSM 3.3 options weft knows but does not implement, with OpenSM's defaults.
struct ForeignOption {
  std::string_view name;
  std::string_view opensm_default;  // NVIDIA's: empty where its default is not public
};
const std::vector<ForeignOption>& opensm_only_options();
// Options NVIDIA's SM (MLNX OpenSM 5.x) adds beyond OpenSM 3.3 (adaptive routing,
// virtualization, SA trust, keys, health monitoring, ...): known so that an
// opensm.conf written for it loads, with no effect in weft; their names and defaults
// as NVIDIA's public headers, release notes and manuals give them.
const std::vector<ForeignOption>& nvidia_only_options();

class Values {
 public:
  long get_int(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  const std::string& get_str(std::string_view name) const;
  // Where a value came from: "default", "FILE:LINE" or the CLI flag.
  const std::string& origin(std::string_view name) const;
  bool is_default(std::string_view name) const { return origin(name) == "default"; }
  // "FILE:LINE: ..." for OpenSM options that have no effect in weft.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // OpenSM options a file set to OpenSM's own default (no effect either way).
  size_t opensm_defaults_seen() const { return opensm_defaults_; }
  // Options given once per SL (per_sl): every value set, in order, with its origin.
  const std::vector<std::pair<std::string, std::string>>& each(std::string_view name) const;

 private:
  friend Values defaults();
  friend Result<void> set(Values&, std::string_view, std::string_view, const std::string&);
  friend Result<void> load_text(std::string_view, const std::string&, Values&);
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> v_;  // value, origin
  std::vector<std::string> warnings_;
  size_t opensm_defaults_ = 0;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>, std::less<>> each_;
};

// Options OpenSM takes once per SL ("cc_ca_cong_setting_ccti_timer SL VALUE" on one line
// per SL): each line sets its SL, Values::each keeps them all.
bool per_sl(std::string_view name);

Values defaults();
// Validates and stores one value; `origin` is used in error messages and kept.
Result<void> set(Values& v, std::string_view name, std::string_view value,
                 const std::string& origin);
// Reads `key value` lines ('#' comments, blank lines; the value is the rest of the
// line, "(null)" is empty). Every error is reported, one per line of the message.
Result<void> load_file(const std::string& path, Values& v);
Result<void> load_text(std::string_view text, const std::string& source, Values& v);

// A config file in opensm.conf syntax with every option weft implements commented out
// at its default, each under its help: /etc/weft/weft.conf (`weft config template`).
std::string template_text();

// OpenSM's QoS list syntaxes, shared by the option check and the QoS module.
// qos_sl2vl: 16 comma-separated VLs (0-15), one per SL.
Result<std::array<uint8_t, 16>> parse_sl2vl(std::string_view s);
// qos_vlarb_high / qos_vlarb_low: up to 64 comma-separated VL:weight pairs.
struct VlArbEntry {
  uint8_t vl = 0;
  uint8_t weight = 0;
  bool operator==(const VlArbEntry&) const = default;
};
Result<std::vector<VlArbEntry>> parse_vlarb(std::string_view s);

}  // namespace weft::config
