#include "weft/roce/profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "weft/text.hpp"
#include "weft/text_file.hpp"
#include "yaml_util.hpp"

namespace weft::roce {

const char* roce_mode_name(RoceMode m) {
  return m == RoceMode::kLossless ? "lossless" : "lossy";
}
const char* trust_name(Trust t) {
  return t == Trust::kDscp ? "dscp" : "pcp";
}
const char* tsa_name(Tsa t) {
  return t == Tsa::kStrict ? "strict" : t == Tsa::kVendor ? "vendor" : "ets";
}

const std::vector<DcqcnKnob>& dcqcn_knobs() {
  // Ranges as the mlx5 firmware accepts them; defaults as the driver starts.
  static const std::vector<DcqcnKnob> kKnobs = {
      {"rpg_time_reset", true, 1, 131071, 300},
      {"rpg_byte_reset", true, 1, 32767, 32767},
      {"rpg_threshold", true, 1, 31, 1},
      {"rpg_max_rate", true, 0, 2147483647, 0},
      {"rpg_ai_rate", true, 1, 2147483647, 5},
      {"rpg_hai_rate", true, 1, 2147483647, 50},
      {"rpg_gd", true, 1, 15, 11},
      {"rpg_min_dec_fac", true, 1, 100, 50},
      {"rpg_min_rate", true, 0, 2147483647, 1},
      {"rate_to_set_on_first_cnp", true, 0, 2147483647, 0},
      {"dce_tcp_g", true, 0, 1023, 1019},
      {"dce_tcp_rtt", true, 1, 131071, 1},
      {"rate_reduce_monitor_period", true, 1, 2147483647, 4},
      {"initial_alpha_value", true, 0, 1023, 1023},
      {"min_time_between_cnps", false, 0, 4095, 4},
  };
  return kKnobs;
}

std::string RoceProfile::where(const std::string& key) const {
  auto it = lines.find(key);
  if (source.empty()) return "profile";
  return it == lines.end() ? source : source + ":" + std::to_string(it->second);
}

RoceProfile default_roce_profile() {
  RoceProfile p;
  p.dscp_prio.fill(0);
  p.dscp_prio[26] = 3;
  p.dscp_prio[48] = 6;
  p.prio_tc.fill(0);
  p.prio_tc[3] = 3;
  p.prio_tc[6] = 6;
  p.pfc_mask = 1u << 3;
  p.ets[0] = {Tsa::kEts, 50};
  p.ets[3] = {Tsa::kEts, 50};
  p.ets[6] = {Tsa::kStrict, 0};
  p.ecn[3] = {150000, 1500000, 100};
  p.dcqcn_mask = 1u << 3;
  for (const auto& k : dcqcn_knobs()) p.dcqcn[k.name] = k.dflt;
  return p;
}

namespace {

// "<number><unit>" with units scaled by `units`; the number may have a fraction.
template <size_t N>
bool parse_scaled(std::string_view s, const std::pair<const char*, double> (&units)[N],
                  double dflt_scale, uint64_t* out) {
  std::string t = text::trim(s);
  if (t.empty() || !(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.')) return false;
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  const std::string num = t.substr(0, i), unit = text::trim(t.substr(i));
  if (std::count(num.begin(), num.end(), '.') > 1 || num == ".") return false;
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (*end) return false;
  double scale = -1;
  if (unit.empty()) {
    scale = dflt_scale;
  } else {
    for (const auto& [name, mult] : units) {
      std::string a = name, b = unit;
      for (auto& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (a == b) scale = mult;
    }
  }
  if (scale < 0) return false;
  const double r = std::round(v * scale);
  if (!(r >= 0 && r < 1.8e19) || std::fabs(v * scale - r) > 1e-6 * std::max(1.0, r)) return false;
  *out = static_cast<uint64_t>(r);
  return true;
}

}  // namespace

bool parse_bytes(std::string_view s, uint64_t* out) {
  static const std::pair<const char*, double> kUnits[] = {
      {"B", 1},        {"KB", 1e3},        {"MB", 1e6}, {"GB", 1e9},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"K", 1e3},  {"M", 1e6}};
  return parse_scaled(s, kUnits, 1, out);
}

bool parse_speed_mbps(std::string_view s, uint64_t* out) {
  static const std::pair<const char*, double> kUnits[] = {
      {"G", 1000}, {"Gb", 1000}, {"Gbps", 1000}, {"M", 1}, {"Mb", 1}, {"Mbps", 1}, {"T", 1e6}};
  return parse_scaled(s, kUnits, 1, out);
}

bool parse_length_m(std::string_view s, uint64_t* out) {
  static const std::pair<const char*, double> kUnits[] = {{"m", 1}, {"km", 1000}};
  return parse_scaled(s, kUnits, 1, out);
}

bool parse_ms(std::string_view s, uint64_t* out) {
  static const std::pair<const char*, double> kUnits[] = {{"ms", 1}, {"s", 1000}};
  return parse_scaled(s, kUnits, 1, out);
}

namespace {

// A set of priorities written as a list [3, 4] (or one number).
bool priority_set(YamlReader& r, const YNode& n, const std::string& what, uint8_t* mask) {
  uint8_t m = 0;
  bool good = true;
  auto one = [&](const YNode& e) {
    int64_t p = 0;
    if (r.integer(e, what, 0, 7, &p))
      m |= static_cast<uint8_t>(1u << p);
    else
      good = false;
  };
  if (n.IsSequence()) {
    for (const auto& e : n.seq) one(e);
  } else if (n.IsScalar()) {
    one(n);
  } else if (!n.IsNull()) {
    r.error(n, what + ": expected a list of priorities 0..7");
    return false;
  }
  if (good) *mask = m;
  return good;
}

// A map {key: value} with integer keys lo..hi; `each` reads one value.
template <class Each>
void int_map(YamlReader& r, const YNode& n, const std::string& what, int64_t lo, int64_t hi,
             Each each) {
  if (!n.IsMap()) {
    r.error(n, what + ": expected a mapping");
    return;
  }
  for (const auto& kv : n.map) {
    int64_t k = 0;
    if (r.integer(kv.first, what + " key", lo, hi, &k)) each(static_cast<int>(k), kv.second);
  }
}

}  // namespace

Result<RoceProfile> parse_roce_profile(std::string_view text, const std::string& source) {
  YamlReader r(source);
  RoceProfile p = default_roce_profile();
  p.source = source;
  const YNode root = r.load(text);
  if (!r.ok()) return fail(Errc::kInvalidInput, r.message());
  if (root.IsNull()) return p;  // an empty file: the reference profile
  if (!root.IsMap())
    return fail(Errc::kInvalidInput, r.at(root) + ": expected a mapping of profile keys");
  r.keys(root, "profile",
         {"mode", "trust", "roce", "cnp", "dscp_to_priority", "priority_to_tc", "pfc",
          "pfc_watchdog", "ets", "ecn", "dcqcn", "mtu",
          "rdma_cm"});  // unknown keys are errors; the known ones are still read
  for (const auto& kv : root.map) p.lines[kv.first.Scalar()] = r.line(kv.first);

  size_t idx = 0;
  int64_t v = 0;
  if (const auto& n = root["mode"]; n && r.choice(n, "mode", {"lossless", "lossy"}, &idx))
    p.mode = static_cast<RoceMode>(idx);
  if (const auto& n = root["trust"]; n && r.choice(n, "trust", {"dscp", "pcp"}, &idx))
    p.trust = static_cast<Trust>(idx);
  auto dscp_prio_pair = [&](const char* key, int* dscp, int* prio) {
    const auto& n = root[key];
    if (!n) return;
    if (!r.keys(n, key, {"dscp", "priority"})) return;
    if (n["dscp"] && r.integer(n["dscp"], std::string(key) + ".dscp", 0, 63, &v))
      *dscp = static_cast<int>(v);
    if (n["priority"] && r.integer(n["priority"], std::string(key) + ".priority", 0, 7, &v))
      *prio = static_cast<int>(v);
  };
  const int ref_roce_dscp = p.roce_dscp, ref_roce_prio = p.roce_prio;
  const int ref_cnp_prio = p.cnp_prio;
  dscp_prio_pair("roce", &p.roce_dscp, &p.roce_prio);
  dscp_prio_pair("cnp", &p.cnp_dscp, &p.cnp_prio);

  if (const auto& n = root["dscp_to_priority"]) {
    p.dscp_prio.fill(0);
    int_map(r, n, "dscp_to_priority", 0, 63, [&](int d, const YNode& val) {
      if (r.integer(val, "dscp_to_priority[" + std::to_string(d) + "]", 0, 7, &v))
        p.dscp_prio[d] = static_cast<uint8_t>(v);
    });
  } else {
    // The reference map follows the RoCE and CNP code points the file names.
    p.dscp_prio.fill(0);
    p.dscp_prio[p.roce_dscp] = static_cast<uint8_t>(p.roce_prio);
    p.dscp_prio[p.cnp_dscp] = static_cast<uint8_t>(p.cnp_prio);
  }
  if (const auto& n = root["priority_to_tc"]) {
    p.prio_tc.fill(0);
    if (n.IsSequence()) {
      if (n.size() != 8)
        r.error(n, "priority_to_tc: a list needs 8 entries (priority 0..7), got " +
                       std::to_string(n.size()));
      for (size_t i = 0; i < n.size() && i < 8; ++i)
        if (r.integer(n[i], "priority_to_tc[" + std::to_string(i) + "]", 0, 7, &v))
          p.prio_tc[i] = static_cast<uint8_t>(v);
    } else {
      int_map(r, n, "priority_to_tc", 0, 7, [&](int pr, const YNode& val) {
        if (r.integer(val, "priority_to_tc[" + std::to_string(pr) + "]", 0, 7, &v))
          p.prio_tc[pr] = static_cast<uint8_t>(v);
      });
    }
  } else if (p.roce_prio != ref_roce_prio || p.cnp_prio != ref_cnp_prio) {
    p.prio_tc.fill(0);
    p.prio_tc[p.roce_prio] = static_cast<uint8_t>(p.roce_prio);
    p.prio_tc[p.cnp_prio] = static_cast<uint8_t>(p.cnp_prio);
  }

  if (const auto& n = root["pfc"]) {
    if (r.keys(n, "pfc", {"priorities"}) && n["priorities"])
      priority_set(r, n["priorities"], "pfc.priorities", &p.pfc_mask);
  } else if (p.mode == RoceMode::kLossy) {
    p.pfc_mask = 0;
  } else {
    p.pfc_mask = static_cast<uint8_t>(1u << p.roce_prio);
  }
  if (const auto& n = root["pfc_watchdog"];
      n && r.keys(n, "pfc_watchdog", {"enable", "detection_time", "restoration_time", "action"})) {
    if (n["enable"]) r.boolean(n["enable"], "pfc_watchdog.enable", &p.watchdog.enable);
    uint64_t ms = 0;
    if (n["detection_time"] && r.unit(n["detection_time"], "pfc_watchdog.detection_time", parse_ms,
                                      "a time like 200ms", 1, 5000, &ms))
      p.watchdog.detection_ms = static_cast<int>(ms);
    if (n["restoration_time"] && r.unit(n["restoration_time"], "pfc_watchdog.restoration_time",
                                        parse_ms, "a time like 200ms", 1, 60000, &ms))
      p.watchdog.restoration_ms = static_cast<int>(ms);
    if (n["action"] &&
        r.choice(n["action"], "pfc_watchdog.action", {"drop", "forward", "alert"}, &idx))
      p.watchdog.action = idx == 0 ? "drop" : idx == 1 ? "forward" : "alert";
  }
  if (const auto& n = root["ets"]) {
    p.ets.fill(EtsTc{});
    int_map(r, n, "ets", 0, 7, [&](int tc, const YNode& val) {
      const std::string what = "ets[" + std::to_string(tc) + "]";
      if (val.IsScalar() && val.Scalar() == "strict") {
        p.ets[tc] = {Tsa::kStrict, 0};
      } else if (r.integer(val, what + " (bandwidth % or strict)", 0, 100, &v)) {
        p.ets[tc] = {Tsa::kEts, static_cast<int>(v)};
      }
    });
  } else if (p.prio_tc[p.roce_prio] != 3 || p.prio_tc[p.cnp_prio] != 6) {
    // The reference shares, moved to the TCs the RoCE and CNP priorities now use.
    p.ets.fill(EtsTc{});
    p.ets[p.prio_tc[0]] = {Tsa::kEts, 50};
    p.ets[p.prio_tc[p.roce_prio]] = {Tsa::kEts, p.prio_tc[p.roce_prio] == p.prio_tc[0] ? 100 : 50};
    p.ets[p.prio_tc[p.cnp_prio]] = {Tsa::kStrict, 0};
  }
  if (!root["ecn"] && p.prio_tc[p.roce_prio] != 3) {
    p.ecn.clear();
    p.ecn[p.prio_tc[p.roce_prio]] = {150000, 1500000, 100};
  }
  if (const auto& n = root["ecn"]) {
    p.ecn.clear();
    int_map(r, n, "ecn", 0, 7, [&](int tc, const YNode& val) {
      const std::string what = "ecn[" + std::to_string(tc) + "]";
      if (!r.keys(val, what, {"min", "max", "probability"})) return;
      EcnThresholds t;
      bool good = true;
      for (const char* k : {"min", "max", "probability"})
        if (!val[k]) r.error(val, what + ": " + k + " is required"), good = false;
      if (!good) return;
      good &= r.unit(val["min"], what + ".min", parse_bytes, "a size like 150KB", 1, 1ull << 32,
                     &t.kmin);
      good &= r.unit(val["max"], what + ".max", parse_bytes, "a size like 1.5MB", 1, 1ull << 32,
                     &t.kmax);
      good &= r.integer(val["probability"], what + ".probability", 0, 100, &v);
      t.pmax = static_cast<int>(v);
      if (good) p.ecn[tc] = t;
    });
  }
  if (const auto& n = root["dcqcn"]; n && r.keys(n, "dcqcn", {"priorities", "rp", "np"})) {
    if (n["priorities"]) priority_set(r, n["priorities"], "dcqcn.priorities", &p.dcqcn_mask);
    for (const char* side : {"rp", "np"}) {
      const auto& s = n[side];
      if (!s) continue;
      if (!s.IsMap()) {
        r.error(s, std::string("dcqcn.") + side + ": expected a mapping of knob: value");
        continue;
      }
      std::vector<std::string_view> names;
      for (const auto& k : dcqcn_knobs())
        if (k.rp == (side[0] == 'r')) names.push_back(k.name);
      for (const auto& kv : s.map) {
        const std::string k = kv.first.Scalar();
        const DcqcnKnob* knob = nullptr;
        for (const auto& kn : dcqcn_knobs())
          if (k == kn.name && kn.rp == (side[0] == 'r')) knob = &kn;
        if (!knob) {
          std::string extra =
              (k == "cnp_dscp" || k == "cnp_802p_prio") ? " (set cnp.dscp / cnp.priority)" : "";
          r.error(kv.first, std::string("dcqcn.") + side + ": unknown knob \"" + k + "\"" + extra +
                                text::did_you_mean(k, names));
          continue;
        }
        if (r.integer(kv.second, std::string("dcqcn.") + side + "." + k, knob->lo, knob->hi, &v))
          p.dcqcn[k] = v;
      }
    }
  } else if (p.roce_prio != ref_roce_prio) {
    p.dcqcn_mask = static_cast<uint8_t>(1u << p.roce_prio);
  }
  if (const auto& n = root["mtu"]; n && r.integer(n, "mtu", 1280, 9216, &v))
    p.mtu = static_cast<int>(v);
  if (const auto& n = root["rdma_cm"]; n && r.keys(n, "rdma_cm", {"tos", "roce_mode"})) {
    if (n["tos"] && r.integer(n["tos"], "rdma_cm.tos", 0, 255, &v)) p.tos = static_cast<int>(v);
    if (n["roce_mode"]) {
      std::string s;
      if (r.scalar(n["roce_mode"], "rdma_cm.roce_mode", &s)) {
        if (s == "2" || s == "RoCE v2" || s == "v2")
          p.roce_version = 2;
        else if (s == "1" || s == "IB/RoCE v1" || s == "v1")
          p.roce_version = 1;
        else
          r.error(n["roce_mode"],
                  "rdma_cm.roce_mode: expected 1 or 2 (\"IB/RoCE v1\" or \"RoCE v2\"), got \"" + s +
                      "\"");
      }
    }
  } else if (p.roce_dscp != ref_roce_dscp) {
    p.tos = p.roce_dscp << 2 | 2;  // the RoCE code point, ECT(0)
  }
  if (!r.ok()) return fail(Errc::kInvalidInput, r.message());
  return p;
}

Result<RoceProfile> load_roce_profile(const std::string& path) {
  return parse_text_file(
      path, [](std::string_view t, const std::string& src) { return parse_roce_profile(t, src); });
}

}  // namespace weft::roce
