// qos-policy.conf: a hand-written line parser (OpenSM's own grammar; no library
// reads it). Sections and subsections open and close with keywords on lines of
// their own; everything inside is `key: value`.
#include "weft/config/qos_policy.hpp"
#include "weft/text.hpp"
#include "weft/text_file.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

namespace weft::config {

const QosLevel* QosPolicy::level(std::string_view name) const {
  for (const auto& l : levels)
    if (l.name == name) return &l;
  return nullptr;
}

const PortGroup* QosPolicy::group(std::string_view name) const {
  for (const auto& g : groups)
    if (g.name == name) return &g;
  return nullptr;
}

namespace {

using text::trim;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!trim(item).empty()) out.push_back(trim(item));
  return out;
}

class Parser {
 public:
  Parser(const std::string& src, QosPolicy& out) : src_(src), out_(out) {}
  void error(int line, const std::string& what) {
    errors_ += (errors_.empty() ? "" : "\n") + src_ + ":" + std::to_string(line) + ": " + what;
  }
  void warn(int line, const std::string& what) {
    out_.warnings.push_back(src_ + ":" + std::to_string(line) + ": " + what);
  }
  const std::string& errors() const { return errors_; }

  // "0x10, 0x20-0x2f, 7" -> ranges, each within [0, max].
  std::vector<Range64> ranges(const std::string& v, int line, uint64_t max, const char* what) {
    std::vector<Range64> out;
    for (const auto& item : split(v, ',')) {
      const size_t dash = item.find('-', 1);
      uint64_t lo, hi;
      const bool ok = dash == std::string::npos
                          ? text::parse_u64(item, &lo) && (hi = lo, true)
                          : text::parse_u64(trim(item.substr(0, dash)), &lo) &&
                                text::parse_u64(trim(item.substr(dash + 1)), &hi);
      if (!ok || lo > hi || hi > max) {
        error(line, std::string(what) + " \"" + item + "\" is not a number or range within 0-" +
                        std::to_string(max));
        continue;
      }
      out.push_back({lo, hi});
    }
    if (out.empty() && split(v, ',').empty()) error(line, std::string(what) + " has no value");
    return out;
  }

  std::optional<uint8_t> small(const std::string& v, int line, uint64_t lo, uint64_t hi,
                               const char* what) {
    uint64_t x;
    if (!text::parse_u64(v, &x) || x < lo || x > hi) {
      error(line, std::string(what) + " wants " + std::to_string(lo) + "-" + std::to_string(hi) +
                      ", got \"" + v + "\"");
      return std::nullopt;
    }
    return static_cast<uint8_t>(x);
  }

  void ulp(const std::string& text, int line) {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      error(line, "qos-ulps line wants ULP[, criterion value] : SL, got \"" + text + "\"");
      return;
    }
    UlpRule r;
    r.line = line;
    auto sl = small(trim(text.substr(colon + 1)), line, 0, 15, "SL");
    if (!sl) return;
    r.sl = *sl;
    const std::string head = trim(text.substr(0, colon));
    const size_t comma = head.find(',');
    const std::string name = trim(head.substr(0, comma));
    std::string crit, value;
    if (comma != std::string::npos) {
      const std::string rest = trim(head.substr(comma + 1));
      const size_t sp = rest.find_first_of(" \t");
      crit = rest.substr(0, sp);
      value = sp == std::string::npos ? "" : trim(rest.substr(sp));
    }
    using K = UlpRule::Kind;
    // Service IDs of the ULPs (OpenSM's QoS documentation): SDP 0x1PPPP, RDS and iSER
    // 0x106PPPP with default ports 0x48CA and 0x0CBC.
    auto port_ids = [&](uint64_t base, std::optional<uint64_t> dflt_port) {
      r.kind = K::kServiceId;
      if (crit == "port-num") {
        for (auto pr : ranges(value, line, 0xffff, "port-num"))
          r.values.push_back({base + pr.lo, base + pr.hi});
      } else if (crit.empty()) {
        r.values.push_back(dflt_port ? Range64{base + *dflt_port, base + *dflt_port}
                                     : Range64{base, base + 0xffff});
      } else {
        error(line, name + " takes port-num, not \"" + crit + "\"");
      }
    };
    if (name == "default") {
      if (!crit.empty()) error(line, "default takes no criterion");
      r.kind = K::kDefault;
    } else if (name == "sdp") {
      port_ids(0x10000, std::nullopt);
    } else if (name == "rds") {
      port_ids(0x1060000, 0x48CA);
    } else if (name == "iser") {
      port_ids(0x1060000, 0x0CBC);
    } else if (name == "ipoib") {
      r.kind = K::kPkey;
      if (crit == "pkey")
        r.values = ranges(value, line, 0xffff, "pkey");
      else if (crit.empty())
        r.values.push_back({0x7fff, 0x7fff});
      else
        error(line, "ipoib takes pkey, not \"" + crit + "\"");
    } else if (name == "srp" || name == "any") {
      if (crit == "target-port-guid") {
        r.kind = K::kTargetGuid;
        r.values = ranges(value, line, ~uint64_t(0), "target-port-guid");
      } else if (name == "any" && crit == "source-port-guid") {
        r.kind = K::kSourceGuid;
        r.values = ranges(value, line, ~uint64_t(0), "source-port-guid");
      } else if (name == "any" && crit == "service-id") {
        r.kind = K::kServiceId;
        r.values = ranges(value, line, ~uint64_t(0), "service-id");
      } else if (name == "any" && crit == "pkey") {
        r.kind = K::kPkey;
        r.values = ranges(value, line, 0xffff, "pkey");
      } else {
        error(line, name + " needs a criterion (" +
                        (name == "srp" ? std::string("target-port-guid")
                                       : std::string("service-id, pkey, target-port-guid or "
                                                     "source-port-guid")) +
                        ")");
        return;
      }
    } else {
      error(line, "unknown ULP \"" + name + "\" (default, sdp, rds, iser, ipoib, srp or any)");
      return;
    }
    for (auto& v : r.values)
      if (r.kind == K::kPkey) v.lo &= 0x7fff, v.hi &= 0x7fff;
    out_.ulps.push_back(std::move(r));
  }

  void run(std::string_view text) {
    enum class S {
      kTop,
      kGroups,
      kGroup,
      kSetup,
      kLevels,
      kLevel,
      kRules,
      kRule,
      kUlps
    } st = S::kTop;
    std::istringstream in{std::string(text)};
    std::string raw;
    int no = 0, opened = 0;
    PortGroup g;
    QosLevel l;
    MatchRule r;
    while (std::getline(in, raw)) {
      ++no;
      if (auto h = raw.find('#'); h != std::string::npos) raw.resize(h);
      const std::string t = trim(raw);
      if (t.empty()) continue;
      const size_t colon = t.find(':');
      const std::string key = trim(t.substr(0, colon));
      const std::string val = colon == std::string::npos ? "" : trim(t.substr(colon + 1));
      auto expect_kv = [&]() {
        if (colon == std::string::npos) error(no, "\"" + t + "\" is not key: value");
        return colon != std::string::npos;
      };
      switch (st) {
        case S::kTop:
          opened = no;
          if (t == "port-groups")
            st = S::kGroups;
          else if (t == "qos-setup")
            st = S::kSetup, warn(no,
                                 "qos-setup is read and ignored, as OpenSM ignores it (SL2VL and "
                                 "VLArb come from the qos_* options)");
          else if (t == "qos-levels")
            st = S::kLevels;
          else if (t == "qos-match-rules")
            st = S::kRules;
          else if (t == "qos-ulps")
            st = S::kUlps;
          else
            error(no, "unknown section \"" + t +
                          "\" (port-groups, qos-setup, qos-levels, qos-match-rules or qos-ulps)");
          break;
        case S::kSetup:
          if (t == "end-qos-setup") st = S::kTop;
          break;
        case S::kGroups:
          if (t == "end-port-groups")
            st = S::kTop;
          else if (t == "port-group")
            st = S::kGroup, g = PortGroup{}, g.line = no, opened = no;
          else
            error(no, "expected port-group or end-port-groups, got \"" + t + "\"");
          break;
        case S::kGroup:
          if (t == "end-port-group") {
            if (g.name.empty())
              error(g.line, "port-group without a name");
            else if (out_.group(g.name))
              error(g.line, "port-group \"" + g.name + "\" defined twice");
            out_.groups.push_back(g);
            st = S::kGroups;
          } else if (!expect_kv()) {
          } else if (key == "name")
            g.name = val;
          else if (key == "use") {
          } else if (key == "port-guid") {
            for (auto x : ranges(val, no, ~uint64_t(0), "port-guid")) g.port_guids.push_back(x);
          } else if (key == "port-name") {
            for (const auto& x : split(val, ',')) g.port_names.push_back(x);
          } else if (key == "partition") {
            for (const auto& x : split(val, ',')) g.partitions.push_back(x);
          } else if (key == "pkey") {
            for (auto x : ranges(val, no, 0xffff, "pkey"))
              g.pkeys.push_back({x.lo & 0x7fff, x.hi & 0x7fff});
          } else if (key == "node-type") {
            for (const auto& x : split(val, ',')) {
              if (x == "CA")
                g.node_types |= PortGroup::kCa;
              else if (x == "SWITCH")
                g.node_types |= PortGroup::kSwitch;
              else if (x == "ROUTER")
                g.node_types |= PortGroup::kRouter;
              else if (x == "SELF")
                g.node_types |= PortGroup::kSelf;
              else if (x == "ALL")
                g.node_types |= PortGroup::kCa | PortGroup::kSwitch | PortGroup::kRouter;
              else
                error(no, "node-type \"" + x + "\" is not CA, SWITCH, ROUTER, SELF or ALL");
            }
          } else
            error(no, "unknown port-group key \"" + key + "\"");
          break;
        case S::kLevels:
          if (t == "end-qos-levels")
            st = S::kTop;
          else if (t == "qos-level")
            st = S::kLevel, l = QosLevel{}, l.line = no, opened = no;
          else
            error(no, "expected qos-level or end-qos-levels, got \"" + t + "\"");
          break;
        case S::kLevel:
          if (t == "end-qos-level") {
            if (l.name.empty())
              error(l.line, "qos-level without a name");
            else if (out_.level(l.name))
              error(l.line, "qos-level \"" + l.name + "\" defined twice");
            out_.levels.push_back(l);
            st = S::kLevels;
          } else if (!expect_kv()) {
          } else if (key == "name")
            l.name = val;
          else if (key == "use") {
          } else if (key == "sl") {
            if (auto x = small(val, no, 0, 15, "sl")) l.sl = *x;
          } else if (key == "mtu-limit") {
            l.mtu_limit = small(val, no, 1, 5, "mtu-limit (IBTA code: 4 = 2048)");
          } else if (key == "rate-limit") {
            l.rate_limit = small(val, no, 2, 23, "rate-limit (IBTA code: 3 = 10 Gb/s)");
          } else if (key == "packet-life") {
            l.packet_life = small(val, no, 0, 63, "packet-life");
          } else if (key == "pkey") {
            for (auto x : ranges(val, no, 0xffff, "pkey"))
              l.pkeys.push_back({x.lo & 0x7fff, x.hi & 0x7fff});
          } else if (key == "path-bits") {
            warn(no, "path-bits is not implemented by weft; ignored");
          } else
            error(no, "unknown qos-level key \"" + key + "\"");
          break;
        case S::kRules:
          if (t == "end-qos-match-rules")
            st = S::kTop;
          else if (t == "qos-match-rule")
            st = S::kRule, r = MatchRule{}, r.line = no, opened = no;
          else
            error(no, "expected qos-match-rule or end-qos-match-rules, got \"" + t + "\"");
          break;
        case S::kRule:
          if (t == "end-qos-match-rule") {
            if (r.level.empty()) error(r.line, "qos-match-rule without qos-level-name");
            out_.rules.push_back(r);
            st = S::kRules;
          } else if (!expect_kv()) {
          } else if (key == "use") {
          } else if (key == "source") {
            for (const auto& x : split(val, ',')) r.sources.push_back(x);
          } else if (key == "destination") {
            for (const auto& x : split(val, ',')) r.destinations.push_back(x);
          } else if (key == "service-id") {
            for (auto x : ranges(val, no, ~uint64_t(0), "service-id")) r.service_ids.push_back(x);
          } else if (key == "pkey") {
            for (auto x : ranges(val, no, 0xffff, "pkey"))
              r.pkeys.push_back({x.lo & 0x7fff, x.hi & 0x7fff});
          } else if (key == "qos-class") {
            for (auto x : ranges(val, no, 0xfff, "qos-class")) r.qos_classes.push_back(x);
          } else if (key == "qos-level-name")
            r.level = val;
          else
            error(no, "unknown qos-match-rule key \"" + key + "\"");
          break;
        case S::kUlps:
          if (t == "end-qos-ulps")
            st = S::kTop;
          else
            ulp(t, no);
          break;
      }
    }
    if (st != S::kTop) error(opened, "section opened here is not closed by the end of the file");
    // References: levels the rules name, groups the rules name, and DEFAULT.
    for (const auto& rule : out_.rules) {
      if (!rule.level.empty() && !out_.level(rule.level))
        error(rule.line, "qos-level-name \"" + rule.level + "\" names no qos-level");
      for (const auto& v : {rule.sources, rule.destinations})
        for (const auto& gname : v)
          if (!out_.group(gname)) error(rule.line, "port group \"" + gname + "\" is not defined");
    }
    if ((!out_.levels.empty() || !out_.rules.empty()) && !out_.level("DEFAULT"))
      error(1,
            "no qos-level named DEFAULT (it applies to what no rule matches; OpenSM requires it)");
  }

 private:
  std::string src_;
  QosPolicy& out_;
  std::string errors_;
};

}  // namespace

Result<QosPolicy> parse_qos_policy(std::string_view text, const std::string& source) {
  QosPolicy pol;
  Parser p(source, pol);
  p.run(text);
  if (!p.errors().empty()) return fail(Errc::kInvalidInput, p.errors());
  return pol;
}

Result<QosPolicy> load_qos_policy(const std::string& path) {
  return parse_text_file(
      path, [](std::string_view t, const std::string& src) { return parse_qos_policy(t, src); });
}

}  // namespace weft::config
