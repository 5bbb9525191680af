// Switch formats: SONiC config_db JSON and Cumulus NVUE commands.
#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "json.hpp"
#include "weft/roce/formats.hpp"
#include "weft/roce/profile.hpp"

namespace weft::roce {

using nlohmann::json;

namespace {

// Names objects by content: the first distinct one gets `base`, later ones base_1, base_2...
class Namer {
 public:
  explicit Namer(std::string base) : base_(std::move(base)) {}
  std::string name(const json& content) {
    for (size_t i = 0; i < seen_.size(); ++i)
      if (seen_[i] == content) return i ? base_ + "_" + std::to_string(i) : base_;
    seen_.push_back(content);
    return seen_.size() == 1 ? base_ : base_ + "_" + std::to_string(seen_.size() - 1);
  }
  const std::vector<json>& all() const { return seen_; }
  std::string nth(size_t i) const { return i ? base_ + "_" + std::to_string(i) : base_; }

 private:
  std::string base_;
  std::vector<json> seen_;
};

json prio_map_json(const PrioMap& m) {
  json j = json::object();
  for (int i = 0; i < 8; ++i) j[std::to_string(i)] = std::to_string(m[i]);
  return j;
}

}  // namespace

json render_sonic(const SwitchConfig& s) {
  json db = json::object();
  Namer dscp("AZURE"), dot1p("AZURE"), tcq("AZURE"), tcpg("AZURE"), pfcq("AZURE");
  auto add_map = [&](const char* table, Namer& n, const json& content) {
    const std::string name = n.name(content);
    db[table][name] = content;
    return name;
  };
  for (const auto& p : s.ports) {
    json qos = json::object();
    if (p.trust == Trust::kDscp && p.dscp_tc) {
      json m = json::object();
      for (int d = 0; d < 64; ++d) m[std::to_string(d)] = std::to_string((*p.dscp_tc)[d]);
      qos["dscp_to_tc_map"] = add_map("DSCP_TO_TC_MAP", dscp, m);
    } else if (p.trust == Trust::kPcp) {
      PrioMap id{};
      for (int i = 0; i < 8; ++i) id[i] = static_cast<uint8_t>(i);
      qos["dot1p_to_tc_map"] = add_map("DOT1P_TO_TC_MAP", dot1p, prio_map_json(id));
    }
    if (p.tc_queue)
      qos["tc_to_queue_map"] = add_map("TC_TO_QUEUE_MAP", tcq, prio_map_json(*p.tc_queue));
    if (p.tc_pg)
      qos["tc_to_pg_map"] = add_map("TC_TO_PRIORITY_GROUP_MAP", tcpg, prio_map_json(*p.tc_pg));
    if (p.pfc_queue)
      qos["pfc_to_queue_map"] =
          add_map("MAP_PFC_PRIORITY_TO_QUEUE", pfcq, prio_map_json(*p.pfc_queue));
    if (p.pfc_mask) qos["pfc_enable"] = priority_list(*p.pfc_mask, "");
    if (p.watchdog && p.watchdog->enable && p.pfc_mask)
      qos["pfcwd_sw_enable"] = priority_list(*p.pfc_mask, "");
    if (!qos.empty()) db["PORT_QOS_MAP"][p.name] = qos;
    for (const auto& [q, sc] : p.sched) {
      json entry = json::object();
      const std::string sname =
          sc.tsa == Tsa::kStrict ? "weft_strict" : "weft_dwrr_" + std::to_string(sc.weight);
      db["SCHEDULER"][sname] = sc.tsa == Tsa::kStrict
                                   ? json{{"type", "STRICT"}}
                                   : json{{"type", "DWRR"}, {"weight", std::to_string(sc.weight)}};
      entry["scheduler"] = sname;
      db["QUEUE"][p.name + "|" + std::to_string(q)] = entry;
    }
    for (const auto& [q, w] : p.wred) {
      const auto e = p.wred_ecn.find(q);
      const bool ecn = e != p.wred_ecn.end() && e->second;
      json prof = {{"wred_green_enable", "true"},
                   {"wred_yellow_enable", "true"},
                   {"wred_red_enable", "true"},
                   {"ecn", ecn ? "ecn_all" : "ecn_none"}};
      for (const char* colour : {"green", "yellow", "red"}) {
        const std::string c = colour;
        prof[c + "_min_threshold"] = std::to_string(w.kmin);
        prof[c + "_max_threshold"] = std::to_string(w.kmax);
        prof[c + "_drop_probability"] = std::to_string(w.pmax);
      }
      const std::string wname = "WEFT_ECN_" + std::to_string(w.kmin) + "_" +
                                std::to_string(w.kmax) + "_" + std::to_string(w.pmax) +
                                (ecn ? "" : "_DROP");
      db["WRED_PROFILE"][wname] = prof;
      db["QUEUE"][p.name + "|" + std::to_string(q)]["wred_profile"] = wname;
    }
    for (const auto& [g, b] : p.pgs) {
      std::string prof;
      if (!b.lossless) {
        prof = "ingress_lossy_profile";
        db["BUFFER_PROFILE"][prof] = {
            {"pool", "ingress_lossy_pool"}, {"size", "0"}, {"dynamic_th", "3"}};
      } else if (p.headroom_by_device) {
        prof = "NULL";
      } else {
        prof = "pg_lossless_" + std::to_string(p.speed_mbps.value_or(0)) + "_" +
               std::to_string(p.cable_m.value_or(0)) + "m_" + std::to_string(b.size) + "_profile";
        db["BUFFER_PROFILE"][prof] = {{"pool", "ingress_lossless_pool"},
                                      {"size", std::to_string(b.size)},
                                      {"xon", std::to_string(b.xon)},
                                      {"xoff", std::to_string(b.xoff)},
                                      {"dynamic_th", "0"}};
      }
      db["BUFFER_PG"][p.name + "|" + std::to_string(g)] = {{"profile", prof}};
    }
    if (p.cable_m) db["CABLE_LENGTH"]["AZURE"][p.name] = std::to_string(*p.cable_m) + "m";
    if (p.watchdog && p.watchdog->enable)
      db["PFC_WD"][p.name] = {{"action", p.watchdog->action},
                              {"detection_time", std::to_string(p.watchdog->detection_ms)},
                              {"restoration_time", std::to_string(p.watchdog->restoration_ms)}};
    json port = json::object();
    if (p.mtu) port["mtu"] = std::to_string(*p.mtu);
    if (p.speed_mbps) port["speed"] = std::to_string(*p.speed_mbps);
    if (!port.empty()) db["PORT"][p.name] = port;
  }
  return db;
}

namespace {

// config_db tables weft reads, and common ones it knows it does not need.
const std::set<std::string>& known_tables() {
  static const std::set<std::string> k = {
      "PORT_QOS_MAP", "DSCP_TO_TC_MAP", "DOT1P_TO_TC_MAP", "TC_TO_QUEUE_MAP",
      "TC_TO_PRIORITY_GROUP_MAP", "MAP_PFC_PRIORITY_TO_QUEUE", "WRED_PROFILE", "QUEUE", "SCHEDULER",
      "BUFFER_PROFILE", "BUFFER_PG", "CABLE_LENGTH", "PFC_WD", "PORT", "DEVICE_METADATA",
      // Known, not read:
      "BUFFER_POOL", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST",
      "BUFFER_PORT_EGRESS_PROFILE_LIST", "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
      "LOSSLESS_TRAFFIC_PATTERN", "FLEX_COUNTER_TABLE", "VLAN", "VLAN_MEMBER", "VLAN_INTERFACE",
      "INTERFACE", "LOOPBACK_INTERFACE", "MGMT_INTERFACE", "MGMT_PORT", "PORTCHANNEL",
      "PORTCHANNEL_MEMBER", "PORTCHANNEL_INTERFACE", "BGP_NEIGHBOR", "BGP_PEER_RANGE",
      "DEVICE_NEIGHBOR", "DEVICE_NEIGHBOR_METADATA", "FEATURE", "CRM", "SYSLOG_SERVER",
      "NTP_SERVER", "NTP", "DHCP_SERVER", "ACL_TABLE", "ACL_RULE", "TELEMETRY", "RESTAPI", "SNMP",
      "SNMP_COMMUNITY", "AAA", "TACPLUS", "KDUMP", "LLDP", "MIRROR_SESSION", "BREAKOUT_CFG",
      "VERSIONS", "AUTO_TECHSUPPORT", "AUTO_TECHSUPPORT_FEATURE", "CONSOLE_SWITCH",
      "DSCP_TO_FC_MAP", "EXP_TO_FC_MAP", "TC_TO_DSCP_MAP", "TC_TO_DOT1P_MAP", "SYSTEM_DEFAULTS",
      "PASSW_HARDENING", "BANNER_MESSAGE", "LOGGER", "SFLOW", "SFLOW_COLLECTOR", "WATERMARK_TABLE",
      "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "SUPPRESS_ASIC_SDK_HEALTH_EVENT"};
  return k;
}

// "3", "3-4", "0,3-4" -> indexes 0..7 (false if malformed).
bool index_set(const std::string& s, std::vector<int>* out) {
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int a = -1, b = -1;
    const size_t dash = part.find('-');
    auto num = [](const std::string& t, int* x) {
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *x);
      return !t.empty() && ec == std::errc() && p == t.data() + t.size() && *x >= 0 && *x <= 7;
    };
    if (dash == std::string::npos) {
      if (!num(part, &a)) return false;
      b = a;
    } else if (!num(part.substr(0, dash), &a) || !num(part.substr(dash + 1), &b) || b < a) {
      return false;
    }
    for (int i = a; i <= b; ++i) out->push_back(i);
  }
  return !out->empty();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  return out;
}

}  // namespace

Result<Parsed<SwitchConfig>> parse_sonic(std::string_view text, const std::string& source,
                                         const std::string& device) {
  auto doc = parse_json(text, source);
  if (!doc) return std::unexpected(doc.error());
  return parse_sonic_db(*doc, source, device);
}

Result<Parsed<SwitchConfig>> parse_sonic_db(const json& db, const std::string& source,
                                            const std::string& device) {
  JsonReader r(source);
  Parsed<SwitchConfig> out;
  SwitchConfig& sw = out.config;
  sw.device = device;
  if (!db.is_object())
    return fail(Errc::kInvalidInput, source + ": expected a config_db object of tables");
  for (auto& [table, content] : db.items()) {
    if (!known_tables().count(table))
      out.warnings.push_back(source + ": unknown SONiC table \"" + table + "\" ignored");
    else if (!content.is_object())
      r.error(table, std::string("expected an object of keys, got ") + content.type_name());
  }
  if (!r.ok()) return fail(Errc::kInvalidInput, r.message());
  auto table = [&](const char* name) -> const json& {
    static const json kEmpty = json::object();
    auto it = db.find(name);
    return it == db.end() ? kEmpty : *it;
  };
  if (auto it = table("DEVICE_METADATA").find("localhost");
      it != table("DEVICE_METADATA").end() && it->is_object())
    if (auto h = it->find("hostname");
        h != it->end() && h->is_string() && !h->get<std::string>().empty())
      sw.device = h->get<std::string>();
  if (sw.device.empty())
    return fail(Errc::kInvalidInput,
                source + ": no DEVICE_METADATA|localhost hostname; name the device");

  // "AZURE" or "[DSCP_TO_TC_MAP|AZURE]" -> the referenced entry of `tname`, or null.
  auto deref = [&](const json& ref, const char* tname, const std::string& path) -> const json* {
    if (!ref.is_string()) return r.error(path, "expected a reference string"), nullptr;
    std::string name = ref.get<std::string>();
    if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
      name = name.substr(1, name.size() - 2);
      const size_t bar = name.find('|');
      if (bar == std::string::npos || name.substr(0, bar) != tname)
        return r.error(path, "reference " + ref.get<std::string>() + " is not to " + tname),
               nullptr;
      name = name.substr(bar + 1);
    }
    const json& t = table(tname);
    auto it = t.find(name);
    if (it == t.end())
      return r.error(path, std::string("no ") + tname + " named \"" + name + "\""), nullptr;
    if (!it->is_object())
      return r.error(std::string(tname) + "|" + name, "expected an object"), nullptr;
    return &*it;
  };
  auto string_field = [&](const json& obj, const char* key, const std::string& path,
                          std::string* v) {
    auto it = obj.find(key);
    if (it == obj.end()) return false;
    if (!it->is_string()) return r.error(path + "." + key, "expected a string"), false;
    *v = it->get<std::string>();
    return true;
  };
  auto int_field = [&](const json& obj, const char* key, const std::string& path, int64_t lo,
                       int64_t hi, int64_t* v) {
    auto it = obj.find(key);
    if (it == obj.end()) return false;
    return r.integer(*it, path + "." + key, lo, hi, v);
  };

  std::map<std::string, SwitchPort> ports;
  std::map<std::string, uint8_t> wd_cover;  // PORT_QOS_MAP's pfcwd_sw_enable per port
  auto port = [&](const std::string& n) -> SwitchPort& {
    auto& p = ports[n];
    p.name = n;
    return p;
  };
  // Keys "Ethernet0|3-4" or "Ethernet0,Ethernet4|3".
  auto keyed = [&](const char* tname, auto&& each) {
    for (auto& [key, v] : table(tname).items()) {
      const size_t bar = key.find('|');
      std::vector<int> idx;
      if (bar == std::string::npos || !index_set(key.substr(bar + 1), &idx)) {
        r.error(std::string(tname) + "|" + key,
                "expected PORT|INDEX (INDEX 0..7, a range a-b or a list)");
        continue;
      }
      if (!v.is_object()) {
        r.error(std::string(tname) + "|" + key, "expected an object");
        continue;
      }
      for (const auto& pn : split(key.substr(0, bar), ','))
        for (int i : idx) each(port(pn), i, v, std::string(tname) + "|" + key);
    }
  };

  for (auto& [pn, q] : table("PORT_QOS_MAP").items()) {
    const std::string path = "PORT_QOS_MAP|" + pn;
    if (!q.is_object()) {
      r.error(path, "expected an object");
      continue;
    }
    for (const auto& name : split(pn, ',')) {
      SwitchPort& p = port(name);
      auto prio_map = [&](const char* field, const char* tname, std::optional<PrioMap>* out_map) {
        auto it = q.find(field);
        if (it == q.end()) return;
        const json* m = deref(*it, tname, path + "." + field);
        if (!m) return;
        PrioMap pm{};
        for (auto& [k, v] : m->items()) {
          int64_t a = 0, b = 0;
          if (r.integer(json(k), std::string(tname) + " key", 0, 7, &a) &&
              r.integer(v, std::string(tname) + "." + k, 0, 7, &b))
            pm[a] = static_cast<uint8_t>(b);
        }
        *out_map = pm;
      };
      if (auto it = q.find("dscp_to_tc_map"); it != q.end()) {
        p.trust = Trust::kDscp;
        if (const json* m = deref(*it, "DSCP_TO_TC_MAP", path + ".dscp_to_tc_map")) {
          DscpMap dm{};
          for (auto& [k, v] : m->items()) {
            int64_t a = 0, b = 0;
            if (r.integer(json(k), "DSCP_TO_TC_MAP key", 0, 63, &a) &&
                r.integer(v, "DSCP_TO_TC_MAP." + k, 0, 7, &b))
              dm[a] = static_cast<uint8_t>(b);
          }
          p.dscp_tc = dm;
        }
      } else if (q.contains("dot1p_to_tc_map")) {
        p.trust = Trust::kPcp;
      }
      prio_map("tc_to_queue_map", "TC_TO_QUEUE_MAP", &p.tc_queue);
      prio_map("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", &p.tc_pg);
      prio_map("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", &p.pfc_queue);
      std::string s;
      std::vector<int> idx;
      if (string_field(q, "pfc_enable", path, &s)) {
        uint8_t m = 0;
        if (!s.empty() && !index_set(s, &idx))
          r.error(path + ".pfc_enable", "\"" + s + "\" is not a list of 0..7");
        for (int i : idx) m = static_cast<uint8_t>(m | 1u << i);
        p.pfc_mask = m;
      }
      for (const char* wd : {"pfcwd_sw_enable", "pfc_wd_sw_enable"}) {
        idx.clear();
        if (!string_field(q, wd, path, &s)) continue;
        if (!s.empty() && !index_set(s, &idx))
          r.error(path + "." + wd, "\"" + s + "\" is not a list of 0..7");
        uint8_t m = 0;
        for (int i : idx) m = static_cast<uint8_t>(m | 1u << i);
        wd_cover[name] = m;
      }
    }
  }
  keyed("QUEUE", [&](SwitchPort& p, int q, const json& v, const std::string& path) {
    if (auto it = v.find("scheduler"); it != v.end()) {
      if (const json* sc = deref(*it, "SCHEDULER", path + ".scheduler")) {
        std::string type;
        string_field(*sc, "type", "SCHEDULER", &type);
        int64_t w = 0;
        if (type == "STRICT") {
          p.sched[q] = {Tsa::kStrict, 0};
        } else if (type == "DWRR" || type == "WRR") {
          int_field(*sc, "weight", "SCHEDULER", 0, 100, &w);
          p.sched[q] = {Tsa::kEts, static_cast<int>(w)};
        } else {
          r.error(path + ".scheduler",
                  "scheduler type \"" + type + "\" is not STRICT, DWRR or WRR");
        }
      }
    }
    if (auto it = v.find("wred_profile"); it != v.end()) {
      if (const json* w = deref(*it, "WRED_PROFILE", path + ".wred_profile")) {
        EcnThresholds t;
        int64_t x = 0;
        const std::string wp = "WRED_PROFILE";
        if (int_field(*w, "green_min_threshold", wp, 0, INT64_MAX, &x))
          t.kmin = static_cast<uint64_t>(x);
        if (int_field(*w, "green_max_threshold", wp, 0, INT64_MAX, &x))
          t.kmax = static_cast<uint64_t>(x);
        if (int_field(*w, "green_drop_probability", wp, 0, 100, &x)) t.pmax = static_cast<int>(x);
        std::string ecn = "ecn_none";
        string_field(*w, "ecn", wp, &ecn);
        p.wred[q] = t;
        p.wred_ecn[q] = ecn != "ecn_none";
      }
    }
  });
  keyed("BUFFER_PG", [&](SwitchPort& p, int g, const json& v, const std::string& path) {
    auto it = v.find("profile");
    if (it == v.end()) return r.error(path, "no profile");
    if (*it == "NULL" ||
        *it == "[BUFFER_PROFILE|NULL]") {  // dynamic buffer model: sized by buffermgrd
      p.pgs[g] = BufferPg{true, 0, 0, 0};
      p.headroom_by_device = true;
      return;
    }
    const json* b = deref(*it, "BUFFER_PROFILE", path + ".profile");
    if (!b) return;
    BufferPg pg;
    std::string pool;
    string_field(*b, "pool", "BUFFER_PROFILE", &pool);
    int64_t x = 0;
    if (int_field(*b, "size", "BUFFER_PROFILE", 0, INT64_MAX, &x))
      pg.size = static_cast<uint64_t>(x);
    if (int_field(*b, "xon", "BUFFER_PROFILE", 0, INT64_MAX, &x)) pg.xon = static_cast<uint64_t>(x);
    if (int_field(*b, "xoff", "BUFFER_PROFILE", 0, INT64_MAX, &x))
      pg.xoff = static_cast<uint64_t>(x);
    pg.lossless = pool.find("lossless") != std::string::npos || b->contains("xoff");
    p.pgs[g] = pg;
  });
  for (auto& [name, cl] : table("CABLE_LENGTH").items()) {
    if (!cl.is_object()) {
      r.error("CABLE_LENGTH|" + name, "expected an object of port: length");
      continue;
    }
    for (auto& [pn, v] : cl.items()) {
      uint64_t m = 0;
      if (!v.is_string() || !roce::parse_length_m(v.get<std::string>(), &m))
        r.error("CABLE_LENGTH|" + name + "." + pn,
                "expected a length like \"5m\", got " + v.dump());
      else
        port(pn).cable_m = m;
    }
  }
  for (auto& [pn, v] : table("PFC_WD").items()) {
    if (pn == "GLOBAL") continue;
    const std::string path = "PFC_WD|" + pn;
    if (!v.is_object()) {
      r.error(path, "expected an object");
      continue;
    }
    SwitchPort& p = port(pn);
    const auto cover = wd_cover.find(pn);
    const uint8_t pfc = p.pfc_mask.value_or(0);
    const bool covered = cover == wd_cover.end() || (cover->second & pfc) == pfc;
    PfcWatchdog wd;
    int64_t x = 0;
    std::string action = "drop";
    string_field(v, "action", path, &action);
    if (action != "drop" && action != "forward" && action != "alert")
      r.error(path + ".action", "\"" + action + "\" is not drop, forward or alert");
    wd.action = action;
    if (int_field(v, "detection_time", path, 1, 5000, &x)) wd.detection_ms = static_cast<int>(x);
    if (int_field(v, "restoration_time", path, 1, 60000, &x))
      wd.restoration_ms = static_cast<int>(x);
    wd.enable = covered;
    p.watchdog = wd;
  }
  for (auto& [pn, v] : table("PORT").items()) {
    const std::string path = "PORT|" + pn;
    if (!v.is_object()) {
      r.error(path, "expected an object");
      continue;
    }
    SwitchPort& p = port(pn);
    int64_t x = 0;
    if (int_field(v, "mtu", path, 68, 9216, &x)) p.mtu = static_cast<int>(x);
    if (int_field(v, "speed", path, 1, 1600000, &x)) p.speed_mbps = static_cast<uint64_t>(x);
  }
  if (!r.ok()) return fail(Errc::kInvalidInput, r.message());
  for (auto& [n, p] : ports) {
    // pfcwd_sw_enable without PFC_WD timers: the watchdog does not run on the port.
    if (wd_cover.count(n) && !p.watchdog) {
      p.watchdog = PfcWatchdog{};
      p.watchdog->enable = false;
    }
    sw.ports.push_back(std::move(p));
  }
  return out;
}

// ---- NVUE ----

std::string render_nvue(const SwitchConfig& s) {
  std::ostringstream o;
  o << "# weft roce render: switch " << s.device << " (Cumulus NVUE)\n";
  if (s.ports.empty()) return o.str();
  // One set of global profiles from the first port; ports that differ get their own.
  Namer mapping("weft"), queue_map("weft"), cc("weft"), sched("weft");
  std::map<uint64_t, Namer> pfc;  // by cable length: weft-3m, weft-300m
  std::ostringstream ports;
  std::set<std::string> emitted;
  auto once = [&](const std::string& key) { return emitted.insert(key).second; };
  for (const auto& p : s.ports) {
    const std::string ifc = "nv set interface " + p.name + " ";
    if (p.trust || p.dscp_tc) {
      json c = {{"trust", p.trust ? roce::trust_name(*p.trust) : ""},
                {"dscp", p.dscp_tc ? json(*p.dscp_tc) : json()}};
      const std::string n = mapping.name(c);
      if (once("mapping " + n)) {
        const std::string base = "nv set qos mapping " + n + " ";
        if (p.trust) o << base << "trust " << (*p.trust == Trust::kDscp ? "l3" : "l2") << "\n";
        // Every DSCP: Cumulus maps the ones a profile leaves out to DSCP >> 3, not to 0.
        if (p.dscp_tc)
          for (int prio = 0; prio < 8; ++prio) {
            std::string list;
            for (int d = 0; d < 64; ++d) {
              if ((*p.dscp_tc)[d] != prio) continue;
              int e = d;
              while (e + 1 < 64 && (*p.dscp_tc)[e + 1] == prio) ++e;
              list += (list.empty() ? "" : ",") + std::to_string(d) +
                      (e > d ? "-" + std::to_string(e) : "");
              d = e;
            }
            if (!list.empty()) o << base << "dscp " << list << " switch-priority " << prio << "\n";
          }
      }
      ports << ifc << "qos mapping profile " << n << "\n";
    }
    if (p.tc_queue) {
      const std::string n = queue_map.name(json(*p.tc_queue));
      if (once("queue " + n))
        for (int i = 0; i < 8; ++i)
          o << "nv set qos egress-queue-mapping " << n << " switch-priority " << i
            << " traffic-class " << int((*p.tc_queue)[i]) << "\n";
      ports << ifc << "qos egress-queue-mapping profile " << n << "\n";
    }
    if (p.pfc_mask) {
      const uint64_t cable = p.cable_m.value_or(0);
      const std::string n = pfc.try_emplace(cable, "weft-" + std::to_string(cable) + "m")
                                .first->second.name(*p.pfc_mask);
      if (once("pfc " + n)) {
        const std::string base = "nv set qos pfc " + n + " ";
        for (int i = 0; i < 8; ++i)
          if (*p.pfc_mask >> i & 1) o << base << "switch-priority " << i << "\n";
        if (p.cable_m) o << base << "cable-length " << *p.cable_m << "\n";
        o << base << "tx enable\n" << base << "rx enable\n";
      }
      ports << ifc << "qos pfc profile " << n << "\n";
    }
    if (!p.wred.empty()) {
      json c = json::array();
      for (const auto& [q, w] : p.wred) {
        auto e = p.wred_ecn.find(q);
        c.push_back({q, w.kmin, w.kmax, w.pmax, e != p.wred_ecn.end() && e->second});
      }
      const std::string n = cc.name(c);
      if (once("cc " + n))
        for (const auto& [q, w] : p.wred) {
          const std::string base =
              "nv set qos congestion-control " + n + " traffic-class " + std::to_string(q) + " ";
          auto e = p.wred_ecn.find(q);
          o << base << "ecn " << (e != p.wred_ecn.end() && e->second ? "enable" : "disable") << "\n"
            << base << "min-threshold " << w.kmin << "\n"
            << base << "max-threshold " << w.kmax << "\n"
            << base << "probability " << w.pmax << "\n";
        }
      ports << ifc << "qos congestion-control profile " << n << "\n";
    }
    if (!p.sched.empty()) {
      json c = json::array();
      for (const auto& [q, sc] : p.sched) c.push_back({q, static_cast<int>(sc.tsa), sc.weight});
      const std::string n = sched.name(c);
      if (once("sched " + n))
        for (const auto& [q, sc] : p.sched) {
          const std::string base =
              "nv set qos egress-scheduler " + n + " traffic-class " + std::to_string(q) + " ";
          if (sc.tsa == Tsa::kStrict)
            o << base << "mode strict\n";
          else
            o << base << "mode dwrr\n" << base << "bw-percent " << sc.weight << "\n";
        }
      ports << ifc << "qos egress-scheduler profile " << n << "\n";
    }
    if (p.watchdog)
      ports << ifc << "qos pfc-watchdog state " << (p.watchdog->enable ? "enable" : "disable")
            << "\n";
    if (p.mtu) ports << ifc << "link mtu " << *p.mtu << "\n";
    if (p.speed_mbps) ports << ifc << "link speed " << *p.speed_mbps / 1000 << "G\n";
  }
  o << ports.str();
  return o.str();
}

Result<Parsed<SwitchConfig>> parse_nvue(std::string_view text, const std::string& source,
                                        const std::string& device) {
  Parsed<SwitchConfig> out;
  SwitchConfig& sw = out.config;
  sw.device = device;
  std::vector<std::string> errs;
  struct Mapping {
    std::optional<Trust> trust;
    DscpMap dscp{};
  };
  struct Pfc {
    uint8_t mask = 0;
    std::optional<uint64_t> cable;
  };
  std::map<std::string, Mapping> mappings;
  auto mapping = [&](const std::string& name) -> Mapping& {
    auto [it, fresh] = mappings.try_emplace(name);
    if (fresh)
      for (int d = 0; d < 64; ++d)
        it->second.dscp[d] = static_cast<uint8_t>(d >> 3);  // Cumulus's default
    return it->second;
  };
  std::map<std::string, PrioMap> queue_maps;
  std::map<std::string, Pfc> pfcs;
  std::map<std::string, std::map<int, std::pair<EcnThresholds, bool>>> ccs;
  std::map<std::string, std::map<int, QueueSched>> scheds;
  struct Ifc {
    std::string mapping, queue_map, pfc, cc, sched;
    std::optional<bool> watchdog;
    std::optional<int> mtu;
    std::optional<uint64_t> speed;
  };
  std::map<std::string, Ifc> ifcs;
  std::istringstream in{std::string(text)};
  std::string line;
  int ln = 0;
  auto err = [&](const std::string& m) {
    errs.push_back(source + ":" + std::to_string(ln) + ": " + m);
  };
  auto num = [&](const std::string& s, int64_t lo, int64_t hi, const std::string& what,
                 int64_t* x) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *x);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || *x < lo || *x > hi) {
      err(what + ": \"" + s + "\" is not " + std::to_string(lo) + ".." + std::to_string(hi));
      return false;
    }
    return true;
  };
  while (std::getline(in, line)) {
    ++ln;
    std::istringstream ls(line);
    std::vector<std::string> w;
    for (std::string t; ls >> t;) w.push_back(t);
    if (w.empty() || w[0][0] == '#') {
      if (line.starts_with("# weft roce render: switch ")) {  // the file's own name comes first
        std::istringstream hs(line.substr(27));
        hs >> sw.device;
      }
      continue;
    }
    if (w.size() < 4 || w[0] != "nv" || w[1] != "set") {
      if (w.size() >= 2 && w[0] == "nv" && (w[1] == "config" || w[1] == "unset")) {
        out.warnings.push_back(source + ":" + std::to_string(ln) + ": nv " + w[1] +
                               " not modelled: ignored");
        continue;
      }
      err("expected an `nv set` command");
      continue;
    }
    int64_t x = 0;
    auto understood = [&] {
      out.warnings.push_back(source + ":" + std::to_string(ln) +
                             ": not a RoCE setting weft reads: ignored");
    };
    if (w[2] == "qos" && w.size() >= 6) {
      const std::string& obj = w[3];
      const std::string& name = w[4];
      if (obj == "mapping" && w[5] == "trust" && w.size() == 7) {
        if (w[6] == "l3")
          mapping(name).trust = Trust::kDscp;
        else if (w[6] == "l2")
          mapping(name).trust = Trust::kPcp;
        else
          err("trust \"" + w[6] + "\" is not l3 or l2 (l3 and both are not modelled)");
      } else if (obj == "mapping" && w[5] == "dscp" && w.size() == 9 && w[7] == "switch-priority") {
        // "26", "0-25,27-47": DSCPs, single or ranges.
        if (!num(w[8], 0, 7, "switch-priority", &x)) continue;
        Mapping& m = mapping(name);
        for (const auto& part : split(w[6], ',')) {
          const size_t dash = part.find('-');
          int64_t a = 0, b = 0;
          if (dash == std::string::npos
                  ? !num(part, 0, 63, "dscp", &a)
                  : !num(part.substr(0, dash), 0, 63, "dscp", &a) ||
                        !num(part.substr(dash + 1), a, 63, "dscp range end", &b))
            break;
          if (dash == std::string::npos) b = a;
          for (int64_t d = a; d <= b; ++d) m.dscp[d] = static_cast<uint8_t>(x);
        }
      } else if (obj == "egress-queue-mapping" && w[5] == "switch-priority" && w.size() == 9 &&
                 w[7] == "traffic-class") {
        int64_t p = 0;
        if (num(w[6], 0, 7, "switch-priority", &p) && num(w[8], 0, 7, "traffic-class", &x))
          queue_maps[name][p] = static_cast<uint8_t>(x);
      } else if (obj == "pfc" && w[5] == "switch-priority" && w.size() == 7) {
        if (num(w[6], 0, 7, "switch-priority", &x))
          pfcs[name].mask |= static_cast<uint8_t>(1u << x);
      } else if (obj == "pfc" && w[5] == "cable-length" && w.size() == 7) {
        if (num(w[6], 0, 100000, "cable-length", &x)) pfcs[name].cable = static_cast<uint64_t>(x);
      } else if (obj == "pfc" && (w[5] == "tx" || w[5] == "rx") && w.size() == 7) {
        pfcs[name];
      } else if (obj == "congestion-control" && w[5] == "traffic-class" && w.size() == 9) {
        int64_t tc = 0;
        if (!num(w[6], 0, 7, "traffic-class", &tc)) continue;
        auto& [t, ecn] = ccs[name][static_cast<int>(tc)];
        if (w[7] == "ecn")
          ecn = w[8] == "enable";
        else if (w[7] == "min-threshold" && num(w[8], 0, INT64_MAX, "min-threshold", &x))
          t.kmin = static_cast<uint64_t>(x);
        else if (w[7] == "max-threshold" && num(w[8], 0, INT64_MAX, "max-threshold", &x))
          t.kmax = static_cast<uint64_t>(x);
        else if (w[7] == "probability" && num(w[8], 0, 100, "probability", &x))
          t.pmax = static_cast<int>(x);
        else if (w[7] != "min-threshold" && w[7] != "max-threshold" && w[7] != "probability")
          understood();
      } else if (obj == "egress-scheduler" && w[5] == "traffic-class" && w.size() == 9) {
        int64_t tc = 0;
        if (!num(w[6], 0, 7, "traffic-class", &tc)) continue;
        auto& s = scheds[name][static_cast<int>(tc)];
        if (w[7] == "mode" && (w[8] == "strict" || w[8] == "dwrr"))
          s.tsa = w[8] == "strict" ? Tsa::kStrict : Tsa::kEts;
        else if (w[7] == "bw-percent" && num(w[8], 0, 100, "bw-percent", &x))
          s.weight = static_cast<int>(x);
        else if (w[7] == "mode")
          err("egress-scheduler mode \"" + w[8] + "\" is not strict or dwrr");
      } else {
        understood();
      }
    } else if (w[2] == "interface" && w.size() >= 6) {
      for (const auto& name : split(w[3], ',')) {
        Ifc& i = ifcs[name];
        if (w[4] == "qos" && w.size() == 8 && w[6] == "profile") {
          const std::string& what = w[5];
          if (what == "mapping")
            i.mapping = w[7];
          else if (what == "egress-queue-mapping")
            i.queue_map = w[7];
          else if (what == "pfc")
            i.pfc = w[7];
          else if (what == "congestion-control")
            i.cc = w[7];
          else if (what == "egress-scheduler")
            i.sched = w[7];
          else
            understood();
        } else if (w[4] == "qos" && w.size() == 8 && w[5] == "pfc-watchdog" && w[6] == "state") {
          i.watchdog = w[7] == "enable";
        } else if (w[4] == "link" && w.size() == 7 && w[5] == "mtu") {
          if (num(w[6], 552, 9216, "mtu", &x)) i.mtu = static_cast<int>(x);
        } else if (w[4] == "link" && w.size() == 7 && w[5] == "speed") {
          uint64_t s = 0;
          if (!roce::parse_speed_mbps(w[6], &s))
            err("speed \"" + w[6] + "\" is not a speed like 100G");
          else
            i.speed = s;
        } else {
          understood();
        }
      }
    } else {
      understood();
    }
  }
  // Interfaces without a profile of their own take default-global.
  for (auto& [name, i] : ifcs) {
    SwitchPort p;
    p.name = name;
    auto pick = [&](const std::string& own, const auto& table,
                    const char* what) -> decltype(&table.begin()->second) {
      const std::string n = own.empty() ? "default-global" : own;
      auto it = table.find(n);
      if (it == table.end()) {
        if (!own.empty())
          errs.push_back(source + ": interface " + name + ": no " + what + " profile \"" + own +
                         "\"");
        return nullptr;
      }
      return &it->second;
    };
    if (auto* m = pick(i.mapping, mappings, "qos mapping")) {
      p.trust = m->trust.value_or(Trust::kPcp);  // Cumulus trusts 802.1p unless told l3
      if (p.trust == Trust::kDscp) p.dscp_tc = m->dscp;
    }
    if (auto* q = pick(i.queue_map, queue_maps, "egress-queue-mapping")) {
      p.tc_queue = *q;
      p.pfc_queue = *q;  // Cumulus pauses the queue a priority is mapped to
    }
    if (auto* f = pick(i.pfc, pfcs, "pfc")) {
      p.pfc_mask = f->mask;
      p.cable_m = f->cable;
      PrioMap pg{};
      for (int k = 0; k < 8; ++k) pg[k] = (f->mask >> k & 1) ? static_cast<uint8_t>(k) : 0;
      p.tc_pg = pg;
      p.pgs[0] = BufferPg{};
      for (int k = 0; k < 8; ++k)
        if (f->mask >> k & 1) p.pgs[k] = BufferPg{true, 0, 0, 0};
      p.headroom_by_device = true;
    }
    if (auto* c = pick(i.cc, ccs, "congestion-control"))
      for (const auto& [q, te] : *c) {
        p.wred[q] = te.first;
        p.wred_ecn[q] = te.second;
      }
    if (auto* s = pick(i.sched, scheds, "egress-scheduler")) p.sched = *s;
    if (i.watchdog) {
      p.watchdog = PfcWatchdog{};
      p.watchdog->enable = *i.watchdog;
      p.watchdog_timing_by_device = true;
    }
    p.mtu = i.mtu;
    p.speed_mbps = i.speed;
    sw.ports.push_back(std::move(p));
  }
  if (!errs.empty()) {
    std::string m;
    for (auto& e : errs) m += (m.empty() ? "" : "\n") + e;
    return fail(Errc::kInvalidInput, m);
  }
  if (sw.device.empty())
    return fail(Errc::kInvalidInput, source + ": no device name; name the device");
  return out;
}

std::string sniff_format(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < text.size() && text[i] == '{') {
    const std::string_view head = text.substr(i, 4096);
    if (head.find("\"dcb\"") != std::string_view::npos ||
        head.find("\"ifname\"") != std::string_view::npos)
      return "host";
    return "sonic";
  }
  if (text.find("\nnv set ") != std::string_view::npos || text.substr(i).starts_with("nv set "))
    return "nvue";
  if (text.find("dcb ") != std::string_view::npos) return "dcb";
  return "";
}

}  // namespace weft::roce
