#include "weft/cc/options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace weft::cc {

namespace {

constexpr size_t kMaxCct = 128;  // OpenSM's OSM_CCT_ENTRY_MAX

bool parse_number(const std::string& s, unsigned long long max, unsigned long long* out) {
  if (s.empty() || s.front() == '-') return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(s.c_str(), &end, 0);
  return *end == '\0' && errno != ERANGE && *out <= max;
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace

Result<Mask256> parse_mask256(const std::string& in) {
  std::string s = trimmed(in);
  if (s.starts_with("0x") || s.starts_with("0X")) s = s.substr(2);
  if (s.empty()) return fail(Errc::kInvalidInput, "an empty mask");
  if (s.size() > 64)
    return fail(Errc::kInvalidInput,
                "a mask of " + std::to_string(s.size()) + " hex digits (at most 64: 256 bits)");
  Mask256 m{};
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[s.size() - 1 - i];  // from the least significant digit
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return fail(Errc::kInvalidInput, std::string("'") + c + "' is no hex digit");
    const unsigned d = std::isdigit(static_cast<unsigned char>(c))
                           ? unsigned(c - '0')
                           : unsigned(std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    m[31 - i / 2] = static_cast<uint8_t>(m[31 - i / 2] | (d << (4 * (i % 2))));
  }
  return m;
}

Result<CctEntry> parse_cct_entry(const std::string& in) {
  const std::string s = trimmed(in);
  const size_t colon = s.find(':');
  unsigned long long shift = 0, mult = 0;
  if (colon == std::string::npos || !parse_number(trimmed(s.substr(0, colon)), 3, &shift) ||
      !parse_number(trimmed(s.substr(colon + 1)), 0x3FFF, &mult))
    return fail(Errc::kInvalidInput,
                "\"" + s + "\" is not SHIFT:MULTIPLIER (shift 0..3, multiplier 0..16383)");
  return CctEntry{static_cast<uint8_t>(shift), static_cast<uint16_t>(mult)};
}

Result<std::vector<CctEntry>> parse_cct(const std::string& in) {
  std::vector<CctEntry> out;
  const std::string s = trimmed(in);
  if (s.empty()) return out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    const std::string tok =
        s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    auto e = parse_cct_entry(tok);
    if (!e)
      return fail(Errc::kInvalidInput,
                  "entry " + std::to_string(out.size()) + ": " + e.error().message);
    out.push_back(*e);
    if (out.size() > kMaxCct)
      return fail(Errc::kInvalidInput, "more than " + std::to_string(kMaxCct) + " entries");
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

double packet_time_ns(const fabric::PortAttrs& a) {
  const uint8_t mtu = fabric::link_mtu(a);
  const double gbps = fabric::data_gbps(a);
  if (mtu < 1 || mtu > 5 || gbps <= 0) return 0;
  return (double(128u << mtu) + 40) * 8 / gbps;
}

std::vector<CctEntry> generate_cct(uint32_t max_delay_ns, uint16_t limit, double packet_ns) {
  std::vector<CctEntry> out(size_t(limit) + 1);
  if (!limit || packet_ns <= 0) return out;
  constexpr double kMaxMultiplier = 0x3FFF;
  uint8_t shift = 3;
  auto multiplier = [&](uint8_t s) { return double(max_delay_ns) * double(1u << s) / packet_ns; };
  while (shift > 0 && multiplier(shift) > kMaxMultiplier) --shift;
  const double top = std::min(multiplier(shift), kMaxMultiplier);
  for (size_t i = 1; i <= limit; ++i)
    out[i] = {shift, static_cast<uint16_t>(std::lround(top * double(i) / double(limit)))};
  return out;
}

std::vector<CongestionControlTableBlock> CcOptions::cct_blocks(size_t cap, double packet_ns) const {
  if (generates_cct() && packet_ns > 0 && cap > 0) {
    CcOptions made = *this;
    const size_t most = cap == SIZE_MAX ? SIZE_MAX : cap * kCctEntriesPerBlock - 1;
    made.cct = generate_cct(cct_max_delay_ns,
                            static_cast<uint16_t>(std::min<size_t>(cct_limit, most)), packet_ns);
    return made.cct_blocks(cap);
  }
  const size_t n =
      std::max<size_t>(1, (cct.size() + kCctEntriesPerBlock - 1) / kCctEntriesPerBlock);
  std::vector<CongestionControlTableBlock> blocks(n);
  const uint16_t limit = cct.empty() ? 0 : static_cast<uint16_t>(cct.size() - 1);
  for (size_t b = 0; b < n; ++b) {
    blocks[b].ccti_limit = limit;
    for (size_t i = 0; i < kCctEntriesPerBlock && b * kCctEntriesPerBlock + i < cct.size(); ++i)
      blocks[b].entries[i] = cct[b * kCctEntriesPerBlock + i];
  }
  if (blocks.size() > cap) {
    blocks.resize(cap);
    const auto last = static_cast<uint16_t>(cap * kCctEntriesPerBlock - (cap ? 1 : 0));
    for (auto& b : blocks) b.ccti_limit = std::min(b.ccti_limit, last);
  }
  return blocks;
}

SwitchPortCongestionElement CcOptions::port_element() const {
  return {true, false, sw.threshold, sw.packet_size, sw.marking_rate};
}

Result<CcOptions> cc_from_options(const config::Values& v) {
  CcOptions o;
  auto bad = [&](const char* name, const std::string& why) {
    return fail(Errc::kInvalidInput, v.origin(name) + ": " + name + ": " + why);
  };
  o.enabled = v.get_bool("congestion_control");
  unsigned long long n = 0;
  if (!parse_number(v.get_str("cc_key"), ~0ull, &n))
    return bad("cc_key", "wants a 64-bit number, got \"" + v.get_str("cc_key") + "\"");
  o.key = n;
  o.max_outstanding = static_cast<uint32_t>(v.get_int("cc_max_outstanding_mads"));
  o.log_interval = std::chrono::seconds(v.get_int("cc_log_interval_s"));
  if (!parse_number(v.get_str("cc_sw_cong_setting_control_map"), 0xFFFFFFFFull, &n))
    return bad(
        "cc_sw_cong_setting_control_map",
        "wants a 32-bit number, got \"" + v.get_str("cc_sw_cong_setting_control_map") + "\"");
  o.sw.control_map = static_cast<uint32_t>(n);
  for (auto [name, mask] : {std::pair{"cc_sw_cong_setting_victim_mask", &o.sw.victim_mask},
                            std::pair{"cc_sw_cong_setting_credit_mask", &o.sw.credit_mask}}) {
    auto m = parse_mask256(v.get_str(name));
    if (!m) return bad(name, m.error().message);
    *mask = *m;
  }
  o.sw.threshold = static_cast<uint8_t>(v.get_int("cc_sw_cong_setting_threshold"));
  o.sw.packet_size = static_cast<uint8_t>(v.get_int("cc_sw_cong_setting_packet_size"));
  o.sw.cs_threshold =
      static_cast<uint8_t>(v.get_int("cc_sw_cong_setting_credit_starvation_threshold"));
  auto delay = parse_cct_entry(v.get_str("cc_sw_cong_setting_credit_starvation_return_delay"));
  if (!delay)
    return bad("cc_sw_cong_setting_credit_starvation_return_delay", delay.error().message);
  o.sw.cs_return_delay = static_cast<uint16_t>(delay->shift << 14 | delay->multiplier);
  o.sw.marking_rate = static_cast<uint16_t>(v.get_int("cc_sw_cong_setting_marking_rate"));
  o.ca.port_control = static_cast<uint16_t>(v.get_int("cc_ca_cong_setting_port_control"));
  o.ca.control_map = static_cast<uint16_t>(v.get_int("cc_ca_cong_setting_control_map"));
  // The per-SL four: "SL VALUE", one line per SL.
  struct PerSl {
    const char* name;
    unsigned long long max;
    void (*put)(CaCongestionEntry&, unsigned long long);
  };
  const PerSl per_sl[] = {
      {"cc_ca_cong_setting_ccti_timer", 0xFFFF,
       [](CaCongestionEntry& e, unsigned long long x) { e.ccti_timer = uint16_t(x); }},
      {"cc_ca_cong_setting_ccti_increase", 0xFF,
       [](CaCongestionEntry& e, unsigned long long x) { e.ccti_increase = uint8_t(x); }},
      {"cc_ca_cong_setting_trigger_threshold", 0xFF,
       [](CaCongestionEntry& e, unsigned long long x) { e.trigger_threshold = uint8_t(x); }},
      {"cc_ca_cong_setting_ccti_min", 0xFF,
       [](CaCongestionEntry& e, unsigned long long x) { e.ccti_min = uint8_t(x); }},
  };
  for (const PerSl& p : per_sl)
    for (const auto& [value, origin] : v.each(p.name)) {
      const std::string s = trimmed(value);
      const size_t sp = s.find_first_of(" \t");
      unsigned long long sl = 0, x = 0;
      if (sp == std::string::npos || !parse_number(s.substr(0, sp), 15, &sl) ||
          !parse_number(trimmed(s.substr(sp)), p.max, &x))
        return fail(Errc::kInvalidInput, origin + ": " + p.name + ": \"" + s +
                                             "\" is not SL VALUE (SL 0..15, VALUE 0.." +
                                             std::to_string(p.max) + ")");
      p.put(o.ca.sl[sl], x);
    }
  auto cct = parse_cct(v.get_str("cc_cct"));
  if (!cct) return bad("cc_cct", cct.error().message);
  o.cct = *cct;
  o.cct_max_delay_ns = static_cast<uint32_t>(v.get_int("cc_cct_max_delay_ns"));
  o.cct_limit = static_cast<uint16_t>(v.get_int("cc_cct_limit"));
  return o;
}

}  // namespace weft::cc
