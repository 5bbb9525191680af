// Host formats: the dcb/sysfs/configfs script and the `weft roce collect` snapshot.
#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <sstream>

#include "json.hpp"
#include "weft/roce/formats.hpp"

namespace weft::roce {

using nlohmann::json;

namespace {

const char* const kTsaNames[] = {"ets", "strict", "vendor"};

std::string on_off_list(uint8_t m) {
  std::string s;
  for (int i = 0; i < 8; ++i)
    fmt::format_to(std::back_inserter(s), "{}{}:{}", i ? " " : "", i, (m >> i & 1) ? "on" : "off");
  return s;
}

}  // namespace

std::string render_dcb(const HostConfig& h, const std::string& rdma, int rdma_port) {
  std::ostringstream o;
  const std::string& dev = h.port;
  const std::string net = "/sys/class/net/" + dev + "/ecn/";
  o << "#!/bin/sh\n"
    << "# weft roce render: host " << h.device << " port " << dev << "\n";
  if (h.pfc_mask)
    o << "# Note: when this changes " << dev << "'s PFC priorities, mlx5 resets the link: " << dev
      << " goes down and up once.\n";
  o << "set -e\n";
  if (h.trust)
    o << "dcb apptrust set dev " << dev << " order " << roce::trust_name(*h.trust) << "\n";
  if (h.dscp_prio) {
    // Every DSCP, so nothing is left to the NIC's default (mlx5 starts from DSCP >> 3);
    // replace drops any other priority an entry had.
    o << "dcb app replace dev " << dev << " dscp-prio";
    for (int d = 0; d < 64; ++d) o << " " << d << ":" << int((*h.dscp_prio)[d]);
    o << "\n";
  }
  if (h.pfc_mask) {
    o << "dcb pfc set dev " << dev << " prio-pfc " << on_off_list(*h.pfc_mask);
    if (h.pfc_delay) o << " delay " << *h.pfc_delay;
    o << "\n";
  }
  if (h.ets || h.prio_tc) {
    o << "dcb ets set dev " << dev;
    if (h.ets) {
      o << " tc-tsa";
      for (int i = 0; i < 8; ++i)
        o << " " << i << ":" << kTsaNames[static_cast<int>((*h.ets)[i].tsa)];
      o << " tc-bw";
      for (int i = 0; i < 8; ++i)
        o << " " << i << ":" << ((*h.ets)[i].tsa == Tsa::kEts ? (*h.ets)[i].bw : 0);
    }
    if (h.prio_tc) o << " prio-tc " << prio_map_text(*h.prio_tc);
    o << "\n";
  }
  if (h.prio_buffer)
    o << "dcb buffer set dev " << dev << " prio-buffer " << prio_map_text(*h.prio_buffer) << "\n";
  if (h.mtu) o << "ip link set dev " << dev << " mtu " << *h.mtu << "\n";
  for (auto [mask, side] : {std::pair{h.np_mask, "roce_np"}, std::pair{h.rp_mask, "roce_rp"}})
    if (mask)
      for (int i = 0; i < 8; ++i)
        o << "echo " << (*mask >> i & 1) << " > " << net << side << "/enable/" << i << "\n";
  if (h.cnp_dscp) o << "echo " << *h.cnp_dscp << " > " << net << "roce_np/cnp_dscp\n";
  if (h.cnp_prio) o << "echo " << *h.cnp_prio << " > " << net << "roce_np/cnp_802p_prio\n";
  for (const auto& k : roce::dcqcn_knobs())
    if (auto it = h.dcqcn.find(k.name); it != h.dcqcn.end())
      o << "echo " << it->second << " > " << net << (k.rp ? "roce_rp/" : "roce_np/") << k.name
        << "\n";
  if (h.tos || h.roce_mode) {
    if (rdma.empty())
      o << "RDMA=$(basename \"$(ls -d /sys/class/net/" << dev
        << "/device/infiniband/* | head -n 1)\")\n";
    else
      o << "RDMA=" << rdma << "\n";
    const std::string cm = "/sys/kernel/config/rdma_cm/$RDMA";
    o << "mkdir -p " << cm << "\n";
    if (h.tos)
      o << "echo " << *h.tos << " > " << cm << "/ports/" << rdma_port << "/default_roce_tos\n";
    if (h.roce_mode)
      o << "echo \"" << (*h.roce_mode == 2 ? "RoCE v2" : "IB/RoCE v1") << "\" > " << cm << "/ports/"
        << rdma_port << "/default_roce_mode\n";
  }
  return o.str();
}

namespace {

// Shell words: whitespace-separated, "double quotes" kept together.
std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (any) out.push_back(cur), cur.clear(), any = false;
    } else {
      cur += c;
      any = true;
    }
  }
  if (any) out.push_back(cur);
  return out;
}

bool to_int(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Result<Parsed<HostConfig>> parse_dcb_script(std::string_view text, const std::string& source) {
  Parsed<HostConfig> out;
  HostConfig& h = out.config;
  std::vector<std::string> errs;
  std::istringstream in{std::string(text)};
  std::string line;
  int ln = 0;
  auto err = [&](const std::string& m) {
    errs.push_back(source + ":" + std::to_string(ln) + ": " + m);
  };
  auto same_dev = [&](const std::string& dev) {
    if (h.port.empty()) h.port = dev;
    if (dev != h.port) {
      err("this line configures " + dev + ", the script " + h.port + " (one port per script)");
      return false;
    }
    return true;
  };
  // "K:V" pairs after a keyword, until the next keyword; K may be "all".
  auto pairs = [&](const std::vector<std::string>& w, size_t& i, int max_key, auto&& set) {
    for (; i < w.size() && w[i].find(':') != std::string::npos; ++i) {
      const std::string& t = w[i];
      const size_t c = t.find(':');
      const std::string k = t.substr(0, c), v = t.substr(c + 1);
      int64_t key = 0;
      if (k == "all") {
        for (int x = 0; x <= max_key; ++x)
          if (!set(x, v)) return false;
        continue;
      }
      if (!to_int(k, &key) || key < 0 || key > max_key) {
        err("\"" + t + "\": key is not 0.." + std::to_string(max_key));
        return false;
      }
      if (!set(static_cast<int>(key), v)) return false;
    }
    return true;
  };
  auto number = [&](const std::string& v, int64_t lo, int64_t hi, const std::string& what,
                    int64_t* x) {
    if (!to_int(v, x) || *x < lo || *x > hi) {
      err(what + ": \"" + v + "\" is not " + std::to_string(lo) + ".." + std::to_string(hi));
      return false;
    }
    return true;
  };
  while (std::getline(in, line)) {
    ++ln;
    const auto w = words(line);
    if (w.empty() || w[0][0] == '#') {
      if (line.starts_with("# weft roce render: host ")) {
        const auto hw = words(line.substr(25));
        if (!hw.empty()) h.device = hw[0];
      }
      continue;
    }
    if (w[0] == "set" || w[0].starts_with("RDMA=") || w[0] == "mkdir") continue;
    if (w[0] == "dcb") {
      if (w.size() < 5 || w[3] != "dev") {
        err("expected dcb OBJECT COMMAND dev DEV ...");
        continue;
      }
      if (!same_dev(w[4])) continue;
      const std::string& obj = w[1];
      const std::string& cmd = w[2];
      size_t i = 5;
      if (obj == "apptrust" && cmd == "set" && i + 1 < w.size() && w[i] == "order") {
        for (size_t j = i + 1; j < w.size(); ++j)
          if (w[j] == "dscp" || w[j] == "pcp") {
            h.trust = w[j] == "dscp" ? Trust::kDscp : Trust::kPcp;
            break;
          }
      } else if (obj == "app" && cmd == "flush") {
        h.dscp_prio = DscpMap{};
      } else if (obj == "app" && (cmd == "add" || cmd == "replace")) {
        if (!h.dscp_prio) h.dscp_prio = DscpMap{};
        while (i < w.size()) {
          if (w[i] != "dscp-prio") {
            out.warnings.push_back(source + ":" + std::to_string(ln) + ": dcb app " + w[i] +
                                   " entries ignored");
            ++i;
            while (i < w.size() && w[i].find(':') != std::string::npos) ++i;
            continue;
          }
          ++i;
          pairs(w, i, 63, [&](int d, const std::string& v) {
            int64_t x = 0;
            if (!number(v, 0, 7, "dscp-prio", &x)) return false;
            (*h.dscp_prio)[d] = static_cast<uint8_t>(x);
            return true;
          });
        }
      } else if (obj == "pfc" && cmd == "set") {
        uint8_t m = h.pfc_mask.value_or(0);
        while (i < w.size()) {
          if (w[i] == "prio-pfc") {
            ++i;
            pairs(w, i, 7, [&](int p, const std::string& v) {
              if (v != "on" && v != "off")
                return err("prio-pfc: \"" + v + "\" is not on or off"), false;
              m = static_cast<uint8_t>(v == "on" ? m | 1u << p : m & ~(1u << p));
              return true;
            });
          } else if (w[i] == "delay" && i + 1 < w.size()) {
            int64_t x = 0;
            if (number(w[i + 1], 0, 65535, "delay", &x)) h.pfc_delay = static_cast<int>(x);
            i += 2;
          } else {
            err("dcb pfc set: unknown argument \"" + w[i] + "\"");
            break;
          }
        }
        h.pfc_mask = m;
      } else if (obj == "ets" && cmd == "set") {
        auto ets = h.ets.value_or(std::array<EtsTc, 8>{});
        PrioMap tc = h.prio_tc.value_or(PrioMap{});
        bool has_ets = h.ets.has_value(), has_tc = h.prio_tc.has_value();
        while (i < w.size()) {
          const std::string kw = w[i++];
          if (kw == "tc-tsa") {
            has_ets = true;
            pairs(w, i, 7, [&](int t, const std::string& v) {
              if (v != "ets" && v != "strict" && v != "vendor")
                return err("tc-tsa: \"" + v + "\" is not ets, strict or vendor"), false;
              ets[t].tsa = v == "strict" ? Tsa::kStrict : v == "vendor" ? Tsa::kVendor : Tsa::kEts;
              return true;
            });
          } else if (kw == "tc-bw") {
            has_ets = true;
            pairs(w, i, 7, [&](int t, const std::string& v) {
              int64_t x = 0;
              if (!number(v, 0, 100, "tc-bw", &x)) return false;
              ets[t].bw = static_cast<int>(x);
              return true;
            });
          } else if (kw == "prio-tc") {
            has_tc = true;
            pairs(w, i, 7, [&](int p, const std::string& v) {
              int64_t x = 0;
              if (!number(v, 0, 7, "prio-tc", &x)) return false;
              tc[p] = static_cast<uint8_t>(x);
              return true;
            });
          } else {
            err("dcb ets set: unknown argument \"" + kw + "\"");
            break;
          }
        }
        for (auto& e : ets)
          if (e.tsa != Tsa::kEts) e.bw = 0;
        if (has_ets) h.ets = ets;
        if (has_tc) h.prio_tc = tc;
      } else if (obj == "buffer" && cmd == "set" && i < w.size() && w[i] == "prio-buffer") {
        ++i;
        PrioMap b = h.prio_buffer.value_or(PrioMap{});
        pairs(w, i, 7, [&](int p, const std::string& v) {
          int64_t x = 0;
          if (!number(v, 0, 7, "prio-buffer", &x)) return false;
          b[p] = static_cast<uint8_t>(x);
          return true;
        });
        h.prio_buffer = b;
      } else {
        out.warnings.push_back(source + ":" + std::to_string(ln) + ": dcb " + obj + " " + cmd +
                               " not read");
      }
    } else if (w[0] == "ip" && w.size() == 7 && w[1] == "link" && w[2] == "set" && w[3] == "dev" &&
               w[5] == "mtu") {
      int64_t x = 0;
      if (same_dev(w[4]) && number(w[6], 68, 65535, "mtu", &x)) h.mtu = static_cast<int>(x);
    } else if (w[0] == "echo" && w.size() >= 4 && w[w.size() - 2] == ">") {
      std::string value;
      for (size_t j = 1; j + 2 < w.size(); ++j) value += (j > 1 ? " " : "") + w[j];
      const std::string& path = w.back();
      int64_t x = 0;
      if (path.starts_with("/sys/class/net/")) {
        const size_t e = path.find("/ecn/");
        if (e == std::string::npos) {
          err("unknown sysfs path " + path);
          continue;
        }
        if (!same_dev(path.substr(15, e - 15))) continue;
        const std::string rest = path.substr(e + 5);
        const bool np = rest.starts_with("roce_np/"), rp = rest.starts_with("roce_rp/");
        if (!np && !rp) {
          err("unknown ecn path " + path);
          continue;
        }
        const std::string knob = rest.substr(8);
        if (knob.starts_with("enable/")) {
          int64_t p = 0;
          if (!number(knob.substr(7), 0, 7, "enable priority", &p) ||
              !number(value, 0, 1, "enable", &x))
            continue;
          auto& m = np ? h.np_mask : h.rp_mask;
          m = static_cast<uint8_t>(x ? m.value_or(0) | 1u << p : m.value_or(0) & ~(1u << p));
        } else if (np && knob == "cnp_dscp") {
          if (number(value, 0, 63, "cnp_dscp", &x)) h.cnp_dscp = static_cast<int>(x);
        } else if (np && knob == "cnp_802p_prio") {
          if (number(value, 0, 7, "cnp_802p_prio", &x)) h.cnp_prio = static_cast<int>(x);
        } else {
          const roce::DcqcnKnob* k = nullptr;
          for (const auto& kn : roce::dcqcn_knobs())
            if (knob == kn.name && kn.rp == rp) k = &kn;
          if (!k) {
            err("unknown DCQCN knob " + rest);
            continue;
          }
          if (number(value, k->lo, k->hi, k->name, &x)) h.dcqcn[k->name] = x;
        }
      } else if (path.starts_with("/sys/kernel/config/rdma_cm/")) {
        if (path.ends_with("/default_roce_tos")) {
          if (number(value, 0, 255, "default_roce_tos", &x)) h.tos = static_cast<int>(x);
        } else if (path.ends_with("/default_roce_mode")) {
          if (value == "RoCE v2")
            h.roce_mode = 2;
          else if (value == "IB/RoCE v1")
            h.roce_mode = 1;
          else
            err("default_roce_mode: \"" + value + "\" is not \"RoCE v2\" or \"IB/RoCE v1\"");
        } else {
          err("unknown rdma_cm configfs path " + path);
        }
      } else {
        err("writes to an unknown path " + path);
      }
    } else {
      out.warnings.push_back(source + ":" + std::to_string(ln) +
                             ": not a dcb, ip, echo or mkdir line: ignored");
    }
  }
  if (!errs.empty()) {
    std::string m;
    for (auto& e : errs) m += (m.empty() ? "" : "\n") + e;
    return fail(Errc::kInvalidInput, m);
  }
  if (h.port.empty()) return fail(Errc::kInvalidInput, source + ": no dcb command names a device");
  return out;
}

json render_host_snapshot(const HostConfig& h) {
  json dcb = json::object();
  if (h.dscp_prio) {
    json entries = json::array();
    for (int d = 0; d < 64; ++d) entries.push_back(json::array({d, (*h.dscp_prio)[d]}));
    dcb["app"] = json::object();
    if (!entries.empty()) dcb["app"]["dscp_prio"] = entries;
  }
  if (h.trust) dcb["apptrust"] = {{"order", json::array({roce::trust_name(*h.trust)})}};
  if (h.pfc_mask) {
    json prio = json::array();
    for (int i = 0; i < 8; ++i) prio.push_back((*h.pfc_mask >> i & 1) != 0);
    dcb["pfc"] = {{"pfc_cap", 8},
                  {"macsec_bypass", false},
                  {"delay", h.pfc_delay.value_or(0)},
                  {"prio_pfc", prio}};
  }
  if (h.ets || h.prio_tc) {
    json e = {{"willing", false}, {"ets_cap", 8}, {"cbs", false}};
    if (h.ets) {
      json bw = json::array(), tsa = json::array();
      for (const auto& t : *h.ets)
        bw.push_back(t.tsa == Tsa::kEts ? t.bw : 0), tsa.push_back(kTsaNames[int(t.tsa)]);
      e["tc_bw"] = bw;
      e["tc_tsa"] = tsa;
    }
    if (h.prio_tc) e["prio_tc"] = *h.prio_tc;
    dcb["ets"] = e;
  }
  if (h.prio_buffer) dcb["buffer"] = {{"prio_buffer", *h.prio_buffer}};
  dcb["dcbx"] = {{"host", true}, {"ieee", true}};
  json snap = {{"host", h.device}, {"ifname", h.port}, {"dcb", dcb}};
  json ecn = json::object();
  for (auto [mask, side] : {std::pair{h.np_mask, "roce_np"}, std::pair{h.rp_mask, "roce_rp"}}) {
    json s = json::object();
    if (mask) {
      s["enable"] = json::object();
      for (int i = 0; i < 8; ++i) s["enable"][std::to_string(i)] = *mask >> i & 1;
    }
    for (const auto& k : roce::dcqcn_knobs())
      if (auto it = h.dcqcn.find(k.name); it != h.dcqcn.end() && k.rp == (side[5] == 'r'))
        s[k.name] = it->second;
    if (!s.empty()) ecn[side] = s;
  }
  if (h.cnp_dscp) ecn["roce_np"]["cnp_dscp"] = *h.cnp_dscp;
  if (h.cnp_prio) ecn["roce_np"]["cnp_802p_prio"] = *h.cnp_prio;
  snap["ecn"] = ecn;
  json cm = json::object();
  if (h.tos) cm["default_roce_tos"] = *h.tos;
  if (h.roce_mode) cm["default_roce_mode"] = *h.roce_mode == 2 ? "RoCE v2" : "IB/RoCE v1";
  snap["rdma_cm"] = cm;
  if (h.mtu) snap["mtu"] = *h.mtu;
  return snap;
}

Result<Parsed<HostConfig>> parse_host_snapshot(std::string_view text, const std::string& source) {
  auto doc = parse_json(text, source);
  if (!doc) return std::unexpected(doc.error());
  JsonReader r(source);
  Parsed<HostConfig> out;
  HostConfig& h = out.config;
  const json& j = *doc;
  if (!j.is_object())
    return fail(Errc::kInvalidInput,
                source + ": expected a JSON object {\"host\": ..., \"dcb\": ...}");
  for (auto& [k, v] : j.items())
    if (k != "host" && k != "ifname" && k != "dcb" && k != "ecn" && k != "rdma_cm" && k != "mtu")
      out.warnings.push_back(source + ": unknown key \"" + k + "\" ignored");
  r.string(j, "host", "host", &h.device, true);
  r.string(j, "ifname", "ifname", &h.port, true);
  if (j.contains("mtu")) {
    int64_t x = 0;
    if (r.integer(j["mtu"], "mtu", 68, 65535, &x)) h.mtu = static_cast<int>(x);
  }
  if (const json* dcb = r.object(j, "dcb", "dcb")) {
    for (auto& [k, v] : dcb->items())
      if (k != "app" && k != "apptrust" && k != "pfc" && k != "ets" && k != "buffer" &&
          k != "dcbx" && k != "maxrate")
        out.warnings.push_back(source + ": dcb." + k + ": unknown dcb object ignored");
    if (const json* app = r.object(*dcb, "app", "dcb.app")) {
      DscpMap m{};
      if (app->contains("dscp_prio")) {
        const json& list = (*app)["dscp_prio"];
        if (!list.is_array()) {
          r.error("dcb.app.dscp_prio", "expected a list of [dscp, prio] entries");
        } else {
          for (size_t i = 0; i < list.size(); ++i) {
            const std::string where = "dcb.app.dscp_prio[" + std::to_string(i) + "]";
            const json& e = list[i];
            // [dscp, prio], or [dscp, prio, " "] as some iproute2 releases print it.
            if (!e.is_array() || e.size() < 2 ||
                (e.size() > 2 && !(e.size() == 3 && e[2].is_string()))) {
              r.error(where, "expected [dscp, prio]");
              continue;
            }
            int64_t d = 0, p = 0;
            if (r.integer(e[0], where + "[0]", 0, 63, &d) &&
                r.integer(e[1], where + "[1]", 0, 7, &p))
              m[d] = static_cast<uint8_t>(p);
          }
        }
      }
      if (app->contains("pcp_prio")) {
        const json& list = (*app)["pcp_prio"];
        if (!list.is_array())
          r.error("dcb.app.pcp_prio", "expected a list of [pcp, prio] entries");
        else
          for (size_t i = 0; i < list.size(); ++i) {
            const json& e = list[i];
            const std::string where = "dcb.app.pcp_prio[" + std::to_string(i) + "]";
            // The PCP key prints as "3nd"/"3de" (or a number with dcb -N).
            const bool key_ok =
                e.is_array() && e.size() >= 2 &&
                ((e[0].is_string() && e[0].get<std::string>().size() == 3 &&
                  e[0].get<std::string>()[0] >= '0' && e[0].get<std::string>()[0] <= '7' &&
                  (e[0].get<std::string>().substr(1) == "nd" ||
                   e[0].get<std::string>().substr(1) == "de")) ||
                 (e[0].is_number_unsigned() && e[0].get<uint64_t>() <= 15));
            if (!key_ok) r.error(where, "expected [\"<0-7>nd|de\", prio]");
          }
      }
      h.dscp_prio = m;
    }
    if (const json* at = r.object(*dcb, "apptrust", "dcb.apptrust")) {
      if (at->contains("order")) {
        const json& order = (*at)["order"];
        if (!order.is_array()) {
          r.error("dcb.apptrust.order", "expected a list of selectors");
        } else {
          for (const auto& s : order) {
            if (!s.is_string()) {
              r.error("dcb.apptrust.order", "expected selector names");
              break;
            }
            if (s == "dscp" || s == "pcp") {
              h.trust = s == "dscp" ? Trust::kDscp : Trust::kPcp;
              break;
            }
          }
        }
      }
    } else if (!dcb->contains("apptrust")) {
      out.warnings.push_back(source +
                             ": dcb.apptrust missing (iproute2 before 6.1?): trust not known");
    }
    if (const json* pfc = r.object(*dcb, "pfc", "dcb.pfc")) {
      std::array<bool, 8> on{};
      if (r.per_prio_bool(*pfc, "prio_pfc", "dcb.pfc.prio_pfc", &on)) {
        uint8_t m = 0;
        for (int i = 0; i < 8; ++i) m = static_cast<uint8_t>(m | (on[i] ? 1u << i : 0));
        h.pfc_mask = m;
      }
      int64_t x = 0;
      if (pfc->contains("delay") && r.integer((*pfc)["delay"], "dcb.pfc.delay", 0, 65535, &x) && x)
        h.pfc_delay = static_cast<int>(x);
    }
    if (const json* ets = r.object(*dcb, "ets", "dcb.ets")) {
      std::array<int64_t, 8> bw{}, tc{};
      std::array<std::string, 8> tsa{};
      const bool has_bw = r.per_prio_int(*ets, "tc_bw", "dcb.ets.tc_bw", 0, 100, &bw);
      const bool has_tsa = r.per_prio_string(*ets, "tc_tsa", "dcb.ets.tc_tsa", &tsa);
      if (has_bw && has_tsa) {
        std::array<EtsTc, 8> e{};
        for (int i = 0; i < 8; ++i) {
          if (tsa[i] == "strict")
            e[i] = {Tsa::kStrict, 0};
          else if (tsa[i] == "vendor")  // mlx5's start: every TC, until ETS is set
            e[i] = {Tsa::kVendor, 0};
          else if (tsa[i] == "ets")
            e[i] = {Tsa::kEts, static_cast<int>(bw[i])};
          else
            r.error("dcb.ets.tc_tsa[" + std::to_string(i) + "]",
                    "\"" + tsa[i] + "\": weft models ets, strict and vendor");
        }
        h.ets = e;
      }
      if (r.per_prio_int(*ets, "prio_tc", "dcb.ets.prio_tc", 0, 7, &tc)) {
        PrioMap m{};
        for (int i = 0; i < 8; ++i) m[i] = static_cast<uint8_t>(tc[i]);
        h.prio_tc = m;
      }
    }
    if (const json* buf = r.object(*dcb, "buffer", "dcb.buffer")) {
      std::array<int64_t, 8> b{};
      if (r.per_prio_int(*buf, "prio_buffer", "dcb.buffer.prio_buffer", 0, 7, &b)) {
        PrioMap m{};
        for (int i = 0; i < 8; ++i) m[i] = static_cast<uint8_t>(b[i]);
        h.prio_buffer = m;
      }
      std::array<int64_t, 8> size{};
      if (buf->contains("buffer_size"))
        r.per_prio_int(*buf, "buffer_size", "dcb.buffer.buffer_size", 0, INT64_MAX, &size);
    }
    if (const json* mr = r.object(*dcb, "maxrate", "dcb.maxrate")) {
      std::array<int64_t, 8> rate{};  // bytes per second
      if (mr->contains("tc_maxrate"))
        r.per_prio_int(*mr, "tc_maxrate", "dcb.maxrate.tc_maxrate", 0, INT64_MAX, &rate);
    }
    r.object(*dcb, "dcbx", "dcb.dcbx");
  }
  if (const json* ecn = r.object(j, "ecn", "ecn")) {
    for (const char* side : {"roce_np", "roce_rp"}) {
      const json* s = r.object(*ecn, side, std::string("ecn.") + side);
      if (!s) continue;
      const bool rp = side[5] == 'r';
      for (auto& [k, v] : s->items()) {
        const std::string where = std::string("ecn.") + side + "." + k;
        int64_t x = 0;
        if (k == "enable") {
          std::array<int64_t, 8> en{};
          if (!r.per_prio_int(*s, "enable", where, 0, 1, &en)) continue;
          uint8_t m = 0;
          for (int i = 0; i < 8; ++i) m = static_cast<uint8_t>(m | (en[i] ? 1u << i : 0));
          (rp ? h.rp_mask : h.np_mask) = m;
        } else if (!rp && k == "cnp_dscp") {
          if (r.integer(v, where, 0, 63, &x)) h.cnp_dscp = static_cast<int>(x);
        } else if (!rp && k == "cnp_802p_prio") {
          if (r.integer(v, where, 0, 7, &x)) h.cnp_prio = static_cast<int>(x);
        } else {
          const roce::DcqcnKnob* knob = nullptr;
          for (const auto& kn : roce::dcqcn_knobs())
            if (k == kn.name && kn.rp == rp) knob = &kn;
          if (!knob) {
            out.warnings.push_back(source + ": " + where + ": unknown knob ignored");
            continue;
          }
          if (r.integer(v, where, knob->lo, knob->hi, &x)) h.dcqcn[k] = x;
        }
      }
    }
  }
  if (const json* cm = r.object(j, "rdma_cm", "rdma_cm")) {
    int64_t x = 0;
    if (cm->contains("default_roce_tos") &&
        r.integer((*cm)["default_roce_tos"], "rdma_cm.default_roce_tos", 0, 255, &x))
      h.tos = static_cast<int>(x);
    std::string mode;
    if (r.string(*cm, "default_roce_mode", "rdma_cm.default_roce_mode", &mode, false) &&
        !mode.empty()) {
      if (mode == "RoCE v2")
        h.roce_mode = 2;
      else if (mode == "IB/RoCE v1")
        h.roce_mode = 1;
      else
        r.error("rdma_cm.default_roce_mode",
                "\"" + mode + "\" is not \"RoCE v2\" or \"IB/RoCE v1\"");
    }
  }
  if (!r.ok()) return fail(Errc::kInvalidInput, r.message());
  return out;
}

}  // namespace weft::roce
