// The native API, /api/v1: the SM, the fabric as programmed, routes, partitions, QoS,
// sweeps, what-ifs and RoCE checks (as jobs), events, tokens; and /healthz.
#include <fmt/format.h>
#include <algorithm>
#include <charconv>

#include "handlers.hpp"
#include "jobs.hpp"
#include "partitions.hpp"
#include "views.hpp"
#include "weft/fabric/topology_file.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/rest/hostlist.hpp"
#include "weft/roce/doctor.hpp"
#include "weft/roce/fabric.hpp"
#include "weft/roce/profile.hpp"
#include "weft/roce/report.hpp"
#include "weft/sa/path.hpp"
#include "weft/simulator/route_report.hpp"
#include "weft/simulator/whatif.hpp"
#include "weft/sm/lid_manager.hpp"
#include "weft/sm/options.hpp"

namespace weft::rest {

using fabric::NodeIndex;
using nlohmann::json;

namespace {

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const sm::SubnetSnapshot* swept(Ctx& c, std::shared_ptr<const sm::Published>& keep) {
  keep = c.backend.published();
  if (!keep->subnet) {
    c.fail({503, "no_fabric", "the SM has not finished a sweep yet"});
    return nullptr;
  }
  return keep->subnet.get();
}

json report_json(const sm::SweepReport& r) {
  json fb = json::array();
  for (const auto& f : r.routing_fallbacks)
    fb.push_back({{"engine", f.engine},
                  {"refusal", routing::refusal_name(f.failure.kind)},
                  {"reason", f.failure.message}});
  json problems = json::array();
  for (size_t i = 0; i < r.problems.size() && i < 100; ++i) problems.push_back(r.problems[i]);
  return {{"heavy", r.heavy},
          {"updated", r.updated},
          {"subnet_up", r.subnet_up},
          {"reason", r.reason},
          {"switches", r.switches},
          {"cas", r.cas},
          {"routers", r.routers},
          {"links", r.links},
          {"lids", r.lids},
          {"top_lid", r.top_lid},
          {"phases_ms",
           {{"discovery", r.ms_discovery},
            {"lids", r.ms_lids},
            {"routing", r.ms_routing},
            {"programming", r.ms_program},
            {"activation", r.ms_activate},
            {"total", r.ms_total}}},
          {"smps",
           {{"discovery", r.smps_discovery},
            {"programming", r.smps_program},
            {"activation", r.smps_activate}}},
          {"writes",
           {{"portinfo", r.portinfo_sets},
            {"client_reregister", r.client_reregisters},
            {"switchinfo", r.switchinfo_sets},
            {"lft_blocks", r.lft_blocks_written},
            {"pkey_blocks", r.pkey_blocks_written},
            {"sl2vl", r.sl2vl_written},
            {"vlarb", r.vlarb_written},
            {"mft_blocks", r.mft_blocks_written}}},
          {"ports",
           {{"linked", r.ports_linked},
            {"active", r.ports_active},
            {"disabled", r.ports_disabled},
            {"enabled", r.ports_enabled}}},
          {"switches_by_lid", r.switches_by_lid},
          {"multicast", {{"groups", r.mcast_groups}, {"unknown_mlids", r.mcast_foreign}}},
          {"adaptive_routing",
           {{"switches", r.ar_capable},
            {"enabled", r.ar_enabled},
            {"static", r.ar_static},
            {"groups_dropped", r.ar_groups_dropped},
            {"group_blocks_written", r.ar_group_blocks_written},
            {"lft_blocks_written", r.ar_lft_blocks_written},
            {"blocks_checked", r.ar_blocks_checked},
            {"switches_changed", r.ar_switches_changed},
            {"failures", r.ar_failures}}},
          {"routing", {{"engine", r.routing_engine}, {"fallbacks", fb}}},
          {"problems", problems},
          {"problem_count", r.problems.size()}};
}

void get_sm(Ctx& c) {
  auto p = c.backend.published();
  json j = {{"state", mad::sm_state_name(p->state)},
            {"priority", p->priority},
            {"guid", guid_hex(p->guid.value)},
            {"lid", p->lid.value},
            {"act_count", p->act_count},
            {"sweeps", {{"heavy", p->heavy_sweeps}, {"light", p->light_sweeps}}},
            {"sweeping", p->sweeping},
            {"uptime_s", now_s() - p->started_unix_s},
            {"version", WEFT_VERSION_STRING},
            {"partitions",
             {{"generation", p->partitions_generation}, {"applied", p->partitions_applied}}},
            {"versions",
             {{"nodes", p->versions.nodes},
              {"ports", p->versions.ports},
              {"links", p->versions.links},
              {"partitions", p->versions.partitions},
              {"multicast", p->versions.multicast},
              {"sm", p->versions.sm}}},
            {"mads",
             {{"sent", p->mad.sent},
              {"sets", p->mad.sets},
              {"retried", p->mad.retried},
              {"lost", p->mad.lost},
              {"rounds_again", p->mad.rounds_again},
              {"timed_out", p->mad.timed_out},
              {"error_status", p->mad.error_status},
              {"malformed", p->mad.malformed},
              {"unmatched", p->mad.unmatched},
              {"unserved_dropped", p->mad.unserved}}}};
  if (p->options) j["routing_engine"] = p->options->routing_engine;
  if (p->store) {
    // Where the master's state lives, and whether this SM runs on its local copy only.
    const auto& st = *p->store;
    json s = st.detail;
    s["kind"] = st.kind;
    s["degraded"] = st.degraded;
    j["state_store"] = std::move(s);
  }
  j["master"] = p->master_guid.value ? json{{"guid", guid_hex(p->master_guid.value)},
                                            {"lid", p->master_lid.value},
                                            {"name", p->master_name},
                                            {"self", p->master_guid == p->guid}}
                                     : json(nullptr);
  json sms = json::array();
  for (const auto& r : p->sms) {
    json one = {{"guid", guid_hex(r.guid.value)},
                {"lid", r.lid.value},
                {"name", r.name},
                {"answered", r.answered},
                {"sm_key_matches", r.key_ok}};
    if (r.answered) {
      one["state"] = mad::sm_state_name(r.info.state);
      one["priority"] = r.info.priority;
      one["act_count"] = r.info.act_count;
    } else {
      one["error"] = r.error;
    }
    sms.push_back(std::move(one));
  }
  j["other_sms"] = std::move(sms);
  json traps = json::object();
  for (const auto& [num, n] : p->traps) traps[num ? std::to_string(num) : "vendor"] = n;
  j["traps"] = std::move(traps);
  json flapping = json::array();
  for (const auto& [guid, port] : p->flapping)
    flapping.push_back({{"guid", guid_hex(guid)}, {"port", port}});
  j["flapping_ports"] = std::move(flapping);
  json down = json::array();
  for (const auto& d : p->ports_down)
    down.push_back({{"guid", guid_hex(d.guid)},
                    {"port", d.port},
                    {"reason", d.reason},
                    {"since", d.since_unix_s}});
  j["ports_down"] = std::move(down);
  j["last_sweep"] = p->report ? report_json(*p->report) : json(nullptr);
  c.ok(j);
}

void get_nodes(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  auto type = c.query("type");
  if (type && *type != "switch" && *type != "ca" && *type != "router" && *type != "CA" &&
      *type != "Switch" && *type != "Router")
    return c.fail({400, "bad_query", "type wants switch, ca or router"});
  json items = json::array();
  for (NodeIndex n = 0; n < s->fabric.size(); ++n) {
    const auto& nd = s->fabric.node(n);
    if (type) {
      std::string t = *type;
      for (char& ch : t) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      std::string mine = fabric::node_type_name(nd.type);
      for (char& ch : mine) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      if (t != mine) continue;
    }
    items.push_back(node_json(*s, n));
  }
  auto pg = page(c, std::move(items));
  if (!pg) return c.fail(pg.error());
  c.ok(*pg);
}

void get_node(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  auto g = daemon::parse_port_guid(c.param("guid"));
  if (!g) return c.fail({400, "bad_guid", "\"" + c.param("guid") + "\" is not a GUID"});
  auto n = find_node(*s, *g);
  if (!n) return c.fail({404, "not_found", "no node " + g->str()});
  json j = node_json(*s, *n);
  json ports = json::array();
  const auto& nd = s->fabric.node(*n);
  for (PortNum p = nd.is_switch() ? 0 : 1; p <= nd.num_ports; ++p)
    if (p == 0 || nd.ports[p].linked()) ports.push_back(port_json(*s, *n, p));
  j["port_list"] = std::move(ports);
  c.ok(j);
}

void get_ports(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  std::optional<NodeIndex> only;
  if (auto q = c.query("node")) {
    auto g = daemon::parse_port_guid(*q);
    only = g ? find_node(*s, *g) : std::nullopt;
    if (!only) return c.fail({404, "not_found", "no node " + *q});
  }
  auto state = c.query("state");
  json items = json::array();
  for (NodeIndex n = 0; n < s->fabric.size(); ++n) {
    if (only && n != *only) continue;
    const auto& nd = s->fabric.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      const auto& port = nd.ports[p];
      if (!port.linked() && !only) continue;
      if (state && fabric::port_state_name(port.attrs.state) != *state) continue;
      items.push_back(port_json(*s, n, p));
    }
  }
  auto pg = page(c, std::move(items));
  if (!pg) return c.fail(pg.error());
  c.ok(*pg);
}

void get_port(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  auto g = daemon::parse_port_guid(c.param("guid"));
  if (!g) return c.fail({400, "bad_guid", "\"" + c.param("guid") + "\" is not a GUID"});
  auto n = find_node(*s, *g);
  if (!n) return c.fail({404, "not_found", "no node or port " + g->str()});
  unsigned num = 0;
  const std::string& ps = c.param("num");
  auto [ptr, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), num);
  const auto& nd = s->fabric.node(*n);
  if (ec != std::errc() || ptr != ps.data() + ps.size() || num > nd.num_ports)
    return c.fail({404, "not_found", fmt::format("{} has ports 0-{}", g->str(), nd.num_ports)});
  c.ok(port_json(*s, *n, PortNum(num)));
}

void get_links(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  json items = json::array();
  for (const auto& l : s->fabric.links()) items.push_back(link_json(*s, l));
  auto pg = page(c, std::move(items));
  if (!pg) return c.fail(pg.error());
  c.ok(*pg);
}

void get_lft(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  auto g = daemon::parse_port_guid(c.param("guid"));
  auto n = g ? s->fabric.find(*g) : std::nullopt;
  if (!n || !s->fabric.node(*n).is_switch())
    return c.fail({404, "not_found", "no switch " + c.param("guid")});
  const auto& row = s->tables.lft[*n];
  auto bound = [&](const char* name, unsigned dflt) -> std::optional<unsigned> {
    auto q = c.query(name);
    if (!q) return dflt;
    unsigned v = 0;
    auto [p, ec] = std::from_chars(q->data(), q->data() + q->size(), v);
    if (ec != std::errc() || p != q->data() + q->size()) return std::nullopt;
    return v;
  };
  auto from = bound("from", 0), to = bound("to", s->tables.top_lid);
  if (!from || !to || *from > *to)
    return c.fail({400, "bad_query", "from and to want LIDs, from <= to"});
  json entries = json::array();
  for (unsigned lid = *from; lid <= *to && lid < row.size(); ++lid)
    if (row[lid] != 0xff) entries.push_back({{"lid", lid}, {"port", row[lid]}});
  c.ok({{"guid", guid_hex(s->fabric.node(*n).guid.value)},
        {"name", fabric::port_ref(s->fabric, *n, 0)},
        {"top", s->tables.top_lid},
        {"entries", entries}});
}

void get_ar(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  auto g = daemon::parse_port_guid(c.param("guid"));
  auto n = g ? s->fabric.find(*g) : std::nullopt;
  if (!n || !s->fabric.node(*n).is_switch())
    return c.fail({404, "not_found", "no switch " + c.param("guid")});
  const Guid guid = s->fabric.node(*n).guid;
  json j = {{"guid", guid_hex(guid.value)},
            {"name", fabric::port_ref(s->fabric, *n, 0)},
            {"asked", false},
            {"supported", false},
            {"enabled", false}};
  auto it = s->ar.find(guid.value);
  if (it != s->ar.end()) {
    const sm::ArView& v = it->second;
    json groups = json::array(), entries = json::array();
    for (size_t grp = 1; grp < v.groups.size(); ++grp)
      groups.push_back({{"group", grp}, {"ports", v.groups[grp]}});
    for (const auto& e : v.entries)
      entries.push_back({{"lid", e.lid}, {"group", e.group}, {"default_port", e.default_port}});
    j["asked"] = true;
    j["supported"] = v.supported;
    j["enabled"] = v.enabled;
    j["group_cap"] = v.group_cap;
    j["group_top"] = v.group_top;
    j["groups"] = std::move(groups);
    j["entries"] = std::move(entries);
  }
  c.ok(j);
}

void get_route(Ctx& c) {
  std::shared_ptr<const sm::Published> keep;
  auto* s = swept(c, keep);
  if (!s) return;
  auto src_q = c.query("src"), dst_q = c.query("dst");
  if (!src_q || !dst_q)
    return c.fail(
        {400, "bad_query", "src and dst are required (a GUID, a LID or a node description)"});
  std::string why;
  auto src = find_end_port(*s, *src_q, &why);
  if (!src) return c.fail({404, "not_found", "src: " + why});
  auto dst = find_end_port(*s, *dst_q, &why);
  if (!dst) return c.fail({404, "not_found", "dst: " + why});
  auto traced = sm::trace_route(*s, *src, *dst);
  auto pr = sa::path_record(*keep, *src, *dst);
  json hops = json::array();
  for (const auto& h : traced.hops) {
    const auto& nd = s->fabric.node(h.node);
    json e = {{"guid", guid_hex(nd.guid.value)},
              {"name", nd.description},
              {"type", fabric::node_type_name(nd.type)},
              {"in_port", h.in},
              {"out_port", h.out}};
    if (pr && h.out && keep->options) {
      // The VL this hop sends on: the output port's SL2VL for the path's SL (per input
      // port too, where the routes pick a VL per hop).
      const auto& a = nd.ports[h.out].attrs;
      const auto& cfg = keep->options->qos.for_port(nd, h.out);
      const auto hop = s->tables.hop_map(s->fabric, h.node, h.in, h.out);
      e["vl"] = (hop ? qos::hop_sl2vl(cfg, a.oper_vls, *hop)
                     : qos::port_sl2vl(cfg, a.oper_vls, s->tables.vls))[pr->sl];
    }
    hops.push_back(std::move(e));
  }
  json j = {{"src", port_json(*s, src->first, src->second)},
            {"dst", port_json(*s, dst->first, dst->second)},
            {"complete", traced.complete},
            {"hops", hops}};
  if (!traced.complete) j["problem"] = traced.problem;
  if (pr)
    j["path_record"] = {{"slid", pr->slid},
                        {"dlid", pr->dlid},
                        {"pkey", fmt::format("0x{:04x}", pr->pkey)},
                        {"sl", pr->sl},
                        {"mtu", mtu_bytes(pr->mtu)},
                        {"rate_code", pr->rate},
                        {"packet_life", pr->packet_life}};
  else
    j["path_record"] = nullptr;  // the SA has none: no shared partition, or no route
  c.ok(j);
}

// ---- partitions -----------------------------------------------------------------

// Members in a native body: plain GUID strings or {"guid", "membership"} objects, each
// member its own membership (the body's "membership" otherwise); "hosts" a hostlist
// string, taking the body's membership and index0.
// What a partition body may hold (POST, PUT and POST members alike; "pkey" where the
// path does not name it, or names the same).
constexpr std::string_view kPartitionFields[] = {
    "pkey", "name", "ipoib", "mtu", "rate", "sl", "membership", "index0", "members", "hosts"};

ApiResult<AddSpec> native_spec(Ctx& c, const json& b, uint16_t pkey) {
  AddSpec s;
  s.pkey = pkey;
  if (b.contains("name")) {
    if (!b["name"].is_string()) return api_error(422, "bad_value", "\"name\" wants a string");
    s.name = b["name"].get<std::string>();
  }
  if (b.contains("ipoib")) {
    auto v = as_bool(b["ipoib"], "ipoib");
    if (!v) return std::unexpected(v.error());
    s.ipoib = *v;
  }
  if (b.contains("mtu")) {
    if (!b["mtu"].is_number_integer() || !mtu_code(b["mtu"].get<int64_t>()))
      return api_error(422, "bad_value", "\"mtu\" wants an MTU code 1-5 or 256-4096 bytes");
    s.mtu = mtu_code(b["mtu"].get<int64_t>());
  }
  if (b.contains("rate")) {
    if (!b["rate"].is_number_integer() || b["rate"].get<int64_t>() < 2 ||
        b["rate"].get<int64_t>() > 23)
      return api_error(422, "bad_value", "\"rate\" wants an IBTA rate code 2-23 (3 = 10 Gb/s)");
    s.rate = uint8_t(b["rate"].get<int64_t>());
  }
  if (b.contains("sl")) {
    if (!b["sl"].is_number_integer() || b["sl"].get<int64_t>() < 0 || b["sl"].get<int64_t>() > 15)
      return api_error(422, "bad_value", "\"sl\" wants 0-15");
    s.sl = uint8_t(b["sl"].get<int64_t>());
  }
  if (b.contains("membership")) {
    auto m = as_membership(b["membership"], "membership");
    if (!m) return std::unexpected(m.error());
    s.membership = *m;
  }
  if (b.contains("index0")) {
    auto v = as_bool(b["index0"], "index0");
    if (!v) return std::unexpected(v.error());
    s.index0 = *v;
  }
  if (b.contains("members")) {
    if (!b["members"].is_array())
      return api_error(422, "bad_value", "\"members\" wants a list of GUIDs or member objects");
    for (const auto& m : b["members"]) {
      if (m.is_string()) {
        auto g = daemon::parse_port_guid(m.get<std::string>());
        if (!g) return api_error(422, "bad_guid", json_text(m) + " is not a port GUID");
        s.guids.push_back(*g);
        continue;
      }
      if (!m.is_object() || !m.contains("guid"))
        return api_error(422, "bad_value", "a member is a GUID string or {\"guid\": ...}");
      if (auto ok = only_fields(m, {"guid", "membership"}, "a member"); !ok)
        return std::unexpected(ok.error());
      auto g = m["guid"].is_string() ? daemon::parse_port_guid(m["guid"].get<std::string>())
                                     : std::nullopt;
      if (!g) return api_error(422, "bad_guid", json_text(m["guid"]) + " is not a port GUID");
      s.guids.push_back(*g);
      if (m.contains("membership")) {
        auto ms = as_membership(m["membership"], "membership");
        if (!ms) return std::unexpected(ms.error());
        s.memberships.resize(s.guids.size() - 1, s.membership);
        s.memberships.push_back(*ms);
      }
    }
    if (!s.memberships.empty()) s.memberships.resize(s.guids.size(), s.membership);
  }
  if (b.contains("hosts")) {
    if (!b["hosts"].is_string())
      return api_error(422, "bad_value", "\"hosts\" wants a hostlist string (node[01-04])");
    auto hosts = expand_hostlist(b["hosts"].get<std::string>());
    if (!hosts) return api_error(422, "bad_hostlist", hosts.error().message);
    auto pub = c.backend.published();
    auto r = resolve_hosts(pub->subnet.get(), *hosts);
    if (!r.unknown.empty())
      return api_error(404, "unknown_hosts",
                       fmt::format("no InfiniBand port on the fabric for {} of {} hosts (e.g. {}); "
                                   "nothing changed",
                                   r.unknown.size(), hosts->size(), r.unknown.front()));
    s.guids.insert(s.guids.end(), r.guids.begin(), r.guids.end());
  }
  return s;
}

// A "pkey" in the body of a request whose path names one: the same, or 422.
ApiResult<void> path_pkey(const json& b, uint16_t pkey) {
  if (!b.contains("pkey")) return {};
  auto pk = as_pkey(b["pkey"], "pkey");
  if (!pk) return std::unexpected(pk.error());
  if (*pk != pkey)
    return api_error(422, "bad_value",
                     fmt::format("\"pkey\" is 0x{:04x} but the path names 0x{:04x}", *pk, pkey));
  return {};
}

std::optional<PartitionItem> find_item(Ctx& c, uint16_t pkey) {
  for (auto& it : partition_items(*c.backend.published(), *c.backend.partitions()))
    if (it.pkey == pkey) return it;
  return std::nullopt;
}

json changed(uint16_t pkey, uint64_t gen) {
  return {{"pkey", fmt::format("0x{:04x}", pkey)},
          {"generation", gen},
          {"note",
           "on disk; the P_Key tables follow with the sweep this change asked for "
           "(GET /api/v1/sm: partitions.applied)"}};
}

void list_partitions(Ctx& c) {
  auto with = query_bool(c, "members", false);
  if (!with) return c.fail(with.error());
  json items = json::array();
  for (const auto& it : partition_items(*c.backend.published(), *c.backend.partitions()))
    items.push_back(it.to_json(*with));
  auto pg = page(c, std::move(items));
  if (!pg) return c.fail(pg.error());
  c.ok(*pg);
}

void create_partition(Ctx& c) {
  auto b = body_object(c.req, kPartitionFields);
  if (!b) return c.fail(b.error());
  if (!b->contains("pkey")) return c.fail({422, "missing_field", "\"pkey\" is required"});
  auto pk = as_pkey((*b)["pkey"], "pkey");
  if (!pk) return c.fail(pk.error());
  if (find_item(c, *pk))
    return c.fail(
        {409, "exists", fmt::format("partition 0x{:04x} exists: PUT or POST members", *pk)});
  auto s = native_spec(c, *b, *pk);
  if (!s) return c.fail(s.error());
  const std::string where = fmt::format("/api/v1/partitions/0x{:04x}", *pk);
  Reply reply = c.reply;
  c.reply = [reply, where](Response r) {
    if (r.status == 201) r.headers.push_back({"Location", where});
    reply(std::move(r));
  };
  commit(
      c,
      [s = *s](const daemon::RestPartitions& cur,
               const daemon::PartitionView&) -> ApiResult<daemon::RestPartitions> {
        if (cur.count(s.pkey))
          return api_error(409, "exists", fmt::format("partition 0x{:04x} exists", s.pkey));
        return op_add(cur, s);
      },
      201, [pk = *pk](uint64_t gen) { return changed(pk, gen); });
}

void get_partition(Ctx& c) {
  auto pk = pkey_param(c.param("pkey"));
  if (!pk) return c.fail(pk.error());
  auto it = find_item(c, *pk);
  if (!it) return c.fail({404, "not_found", fmt::format("no partition 0x{:04x}", *pk)});
  c.ok(it->to_json(true));
}

void put_partition(Ctx& c) {
  auto pk = pkey_param(c.param("pkey"));
  if (!pk) return c.fail(pk.error());
  auto b = body_object(c.req, kPartitionFields);
  if (!b) return c.fail(b.error());
  if (auto same = path_pkey(*b, *pk); !same) return c.fail(same.error());
  auto s = native_spec(c, *b, *pk);
  if (!s) return c.fail(s.error());
  const bool members = b->contains("members") || b->contains("hosts");
  commit(
      c,
      [s = *s, members](const daemon::RestPartitions& cur, const daemon::PartitionView&) {
        return members ? op_replace(cur, s) : op_define(cur, s);
      },
      200, [pk = *pk](uint64_t gen) { return changed(pk, gen); });
}

void delete_partition(Ctx& c) {
  auto pk = pkey_param(c.param("pkey"));
  if (!pk) return c.fail(pk.error());
  commit(
      c,
      [pk = *pk](const daemon::RestPartitions& cur, const daemon::PartitionView& v) {
        return op_delete(cur, v, pk);
      },
      200, [pk = *pk](uint64_t gen) { return changed(pk, gen); });
}

void add_members(Ctx& c) {
  auto pk = pkey_param(c.param("pkey"));
  if (!pk) return c.fail(pk.error());
  auto b = body_object(c.req, kPartitionFields);
  if (!b) return c.fail(b.error());
  if (auto same = path_pkey(*b, *pk); !same) return c.fail(same.error());
  auto s = native_spec(c, *b, *pk);
  if (!s) return c.fail(s.error());
  if (s->guids.empty())
    return c.fail({422, "missing_field", "\"members\" or \"hosts\" is required"});
  if (!find_item(c, *pk))
    return c.fail(
        {404, "not_found", fmt::format("no partition 0x{:04x}: POST /api/v1/partitions", *pk)});
  commit(
      c,
      [s = *s](const daemon::RestPartitions& cur, const daemon::PartitionView&) {
        return op_add(cur, s);
      },
      200, [pk = *pk](uint64_t gen) { return changed(pk, gen); });
}

void remove_members(Ctx& c) {
  auto pk = pkey_param(c.param("pkey"));
  if (!pk) return c.fail(pk.error());
  // GUIDs, or host names (hostlist syntax), comma-separated.
  std::vector<Guid> guids;
  std::vector<std::string> hosts;
  auto list = expand_hostlist(c.param("members"));
  if (!list) return c.fail({400, "bad_members", list.error().message});
  for (const auto& m : *list) {
    if (auto g = daemon::parse_port_guid(m))
      guids.push_back(*g);
    else
      hosts.push_back(m);
  }
  if (!hosts.empty()) {
    auto pub = c.backend.published();
    auto r = resolve_hosts(pub->subnet.get(), hosts);
    if (!r.unknown.empty())
      return c.fail(
          {404, "unknown_hosts", "no InfiniBand port on the fabric for " + r.unknown.front()});
    guids.insert(guids.end(), r.guids.begin(), r.guids.end());
  }
  commit(
      c,
      [pk = *pk, guids](const daemon::RestPartitions& cur, const daemon::PartitionView& v) {
        return op_remove(cur, v, pk, guids);
      },
      200, [pk = *pk](uint64_t gen) { return changed(pk, gen); });
}

// ---- QoS, sweeps, jobs, events, tokens -----------------------------------------------

void get_qos(Ctx& c) {
  auto p = c.backend.published();
  if (!p->options) return c.fail({503, "no_options", "the SM has not published its options"});
  const auto& o = *p->options;
  auto arb = [](const std::vector<config::VlArbEntry>& v) {
    json a = json::array();
    for (const auto& e : v) a.push_back({{"vl", e.vl}, {"weight", e.weight}});
    return a;
  };
  auto cls = [&](const qos::QosPortConfig& q) {
    return json{{"max_vls", q.max_vls},
                {"high_limit", q.high_limit},
                {"sl2vl", qos::sl2vl_str(q.sl2vl)},
                {"vlarb_high", arb(q.high)},
                {"vlarb_low", arb(q.low)}};
  };
  json j = {{"enabled", o.qos.enabled},
            {"max_op_vls", o.max_op_vls},
            {"classes",
             {{"ca", cls(o.qos.ca)},
              {"switch_port0", cls(o.qos.sw0)},
              {"switch_external", cls(o.qos.swe)},
              {"router", cls(o.qos.rtr)}}}};
  if (p->subnet) j["routing_vls"] = p->subnet->tables.vls;
  if (o.qos_policy) {
    json levels = json::array();
    for (const auto& l : o.qos_policy->levels) levels.push_back(l.name);
    j["policy"] = {{"port_groups", o.qos_policy->groups.size()},
                   {"levels", levels},
                   {"match_rules", o.qos_policy->rules.size()},
                   {"ulp_rules", o.qos_policy->ulps.size()},
                   {"applied", o.qos.enabled}};
  } else {
    j["policy"] = nullptr;
  }
  c.ok(j);
}

void post_sweep(Ctx& c) {
  bool heavy = true;
  if (!c.req.body.empty()) {
    auto b = body_object(c.req, {"type"});
    if (!b) return c.fail(b.error());
    if (b->contains("type")) {
      const auto& t = (*b)["type"];
      if (!t.is_string() || (t != "heavy" && t != "light"))
        return c.fail({422, "bad_value", "\"type\" wants \"heavy\" or \"light\""});
      heavy = t == "heavy";
    }
  }
  c.backend.submit(daemon::RequestSweep{heavy});
  c.ok({{"requested", heavy ? "heavy" : "light"}}, 202);
}

void post_enable_port(Ctx& c) {
  auto g = daemon::parse_port_guid(c.param("guid"));
  if (!g) return c.fail({400, "bad_guid", "\"" + c.param("guid") + "\" is not a GUID"});
  unsigned num = 0;
  const std::string& ps = c.param("num");
  auto [ptr, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), num);
  if (ec != std::errc() || ptr != ps.data() + ps.size() || num == 0 || num > 254)
    return c.fail({400, "bad_port", "\"" + ps + "\" is not a switch port number (1-254)"});
  Reply reply = c.reply;
  const Guid sw = *g;
  c.backend.submit(daemon::EnablePort{
      sw, PortNum(num), [reply, sw, num](Result<void> r) {
        if (!r) {
          const bool io = r.error().code == Errc::kIo;
          return reply(
              error_response(io ? 503 : 404, io ? "not_saved" : "not_found", r.error().message));
        }
        reply(json_response(
            202, {{"guid", guid_hex(sw.value)}, {"port", num}, {"enabled", "next sweep"}}));
      }});
}

void accepted_job(Ctx& c, std::optional<std::string> id) {
  if (!id) return c.fail({503, "busy", "too many jobs queued; try again later"});
  Response r = json_response(202, {{"job", *id}, {"location", "/api/v1/jobs/" + *id}});
  r.headers.push_back({"Location", "/api/v1/jobs/" + *id});
  c.reply(std::move(r));
}

void post_whatif(Ctx& c) {
  auto b = body_object(c.req, {"engines", "fail_links", "fail_switches", "fail_random", "seed",
                               "patterns", "topology"});
  if (!b) return c.fail(b.error());
  simulator::Failures fl;
  std::vector<std::string> engines{"minhop"};
  auto strings = [&](const char* k, std::vector<std::string>& out) -> bool {
    if (!b->contains(k)) return true;
    if (!(*b)[k].is_array()) return false;
    out.clear();
    for (const auto& e : (*b)[k]) {
      if (!e.is_string()) return false;
      out.push_back(e.get<std::string>());
    }
    return true;
  };
  if (!strings("engines", engines) || engines.empty())
    return c.fail({422, "bad_value", "\"engines\" wants a list of chains (\"ftree,updn\")"});
  for (auto& e : engines) std::replace(e.begin(), e.end(), '+', ',');
  for (const auto& e : engines)
    if (auto ch = routing::EngineChain::parse(e); !ch)
      return c.fail({422, "bad_engine", ch.error().message});
  if (!strings("fail_links", fl.links) || !strings("fail_switches", fl.switches))
    return c.fail({422, "bad_value", "\"fail_links\" and \"fail_switches\" want lists of names"});
  if (b->contains("fail_random")) {
    if (!(*b)["fail_random"].is_number_unsigned() || (*b)["fail_random"].get<uint64_t>() > 100000)
      return c.fail({422, "bad_value", "\"fail_random\" wants a count of links"});
    fl.random_links = uint32_t((*b)["fail_random"].get<uint64_t>());
  }
  if (b->contains("seed")) {
    if (!(*b)["seed"].is_number_unsigned())
      return c.fail({422, "bad_value", "\"seed\" wants a number"});
    fl.seed = (*b)["seed"].get<uint64_t>();
  }
  simulator::Grading g;
  g.process_cpu = false;  // the SM's and REST's threads share the process
  if (b->contains("patterns")) {
    auto v = as_bool((*b)["patterns"], "patterns");
    if (!v) return c.fail(v.error());
    g.patterns = *v;
  }
  // The fabric: an uploaded dump (ibnetdiscover output or an ibsim net file), or the
  // one the SM last swept, with its LIDs.
  std::shared_ptr<const fabric::Fabric> fab;
  if (b->contains("topology")) {
    if (!(*b)["topology"].is_string())
      return c.fail({422, "bad_value", "\"topology\" wants the text of a dump"});
    auto f = fabric::parse_topology((*b)["topology"].get<std::string>(), "topology");
    if (!f) return c.fail({422, "bad_topology", f.error().message});
    sm::Guid2Lid fresh;
    if (auto r = sm::assign_lids(*f, fresh, 0); !r)
      return c.fail({422, "bad_topology", r.error().message});
    fab = std::make_shared<const fabric::Fabric>(std::move(*f));
  } else {
    std::shared_ptr<const sm::Published> keep;
    auto* s = swept(c, keep);
    if (!s) return;
    fab = std::shared_ptr<const fabric::Fabric>(keep->subnet, &keep->subnet->fabric);
  }
  routing::Options ro;
  if (auto p = c.backend.published(); p->options) {
    ro.roots = p->options->roots;
    ro.torus = p->options->torus;
    ro.max_vls = qos::data_vls(p->options->max_op_vls);
  }
  accepted_job(c, c.jobs.submit("whatif", [fab, fl, engines, g, ro]() -> Result<json> {
    fabric::Fabric f = *fab;
    auto applied = simulator::apply_failures(f, fl);
    if (!applied) return std::unexpected(applied.error());
    json out = json::array();
    for (const auto& e : engines) {
      json j = simulator::route_one(f, e, ro, g, nullptr);
      if (!applied->failed.empty()) j["failed"] = applied->failed;
      out.push_back(std::move(j));
    }
    return out;
  }));
}

// POST /roce/doctor: {"before": {"h1.ethtool": TEXT, ...}, "after": {...}, "interval_s": S,
// "profile": YAML, "fabric": YAML}: the two snapshots as weft roce doctor's directories
// hold them, by file name.
void post_roce_doctor(Ctx& c) {
  auto b = body_object(c.req, {"before", "after", "interval_s", "profile", "fabric"});
  if (!b) return c.fail(b.error());
  if (!b->contains("interval_s") || !(*b)["interval_s"].is_number() ||
      !((*b)["interval_s"].get<double>() > 0))
    return c.fail(
        {422, "bad_value", "\"interval_s\" wants the seconds between the snapshots, above 0"});
  for (const char* k : {"profile", "fabric"})
    if (b->contains(k) && !(*b)[k].is_string())
      return c.fail({422, "bad_value", fmt::format("\"{}\" wants a YAML text (a string)", k)});
  roce::CounterSnapshot snaps[2];
  const char* const sides[2] = {"before", "after"};
  for (int i = 0; i < 2; ++i) {
    const char* k = sides[i];
    if (!b->contains(k) || !(*b)[k].is_object() || (*b)[k].empty())
      return c.fail({422, "missing_field",
                     fmt::format("\"{}\" wants {{\"DEVICE.SOURCE\": TEXT, ...}}: ethtool, "
                                 "hw_counters, rdma_stat, pfc, queue or pfcwd files",
                                 k)});
    snaps[i].dir = k;
    for (const auto& [name, text] : (*b)[k].items()) {
      if (!text.is_string())
        return c.fail(
            {422, "bad_value", fmt::format("\"{}\": \"{}\" wants the file's text", k, name)});
      if (auto r = roce::add_counter_file(snaps[i], name, text.get_ref<const std::string&>(),
                                          roce::doctor_reads);
          !r)
        return c.fail({422, "bad_counters", r.error().message});
    }
  }
  roce::RoceProfile profile = roce::default_roce_profile();
  if (b->contains("profile")) {
    auto p = roce::parse_roce_profile((*b)["profile"].get<std::string>(), "profile");
    if (!p) return c.fail({422, "bad_profile", p.error().message});
    profile = std::move(*p);
  }
  std::optional<roce::RoceFabric> fab;
  if (b->contains("fabric")) {
    auto f = roce::parse_roce_fabric((*b)["fabric"].get<std::string>(), "fabric");
    if (!f) return c.fail({422, "bad_fabric", f.error().message});
    fab = std::move(*f);
  }
  const double interval = (*b)["interval_s"].get<double>();
  accepted_job(c, c.jobs.submit("roce-doctor",
                                [before = std::move(snaps[0]), after = std::move(snaps[1]),
                                 interval, profile, fab]() -> Result<json> {
                                  auto d = roce::diagnose(before, after, interval, profile,
                                                          fab ? &*fab : nullptr);
                                  if (!d) return std::unexpected(d.error());
                                  json j = roce::diagnosis_json(*d);
                                  size_t errors = 0;
                                  for (const auto& f : d->findings)
                                    errors += f.severity == roce::Severity::kError;
                                  j["errors"] = errors;
                                  return j;
                                }));
}

void post_roce(Ctx& c, bool diff) {
  auto b = diff ? body_object(c.req, {"profile", "fabric", "mode", "observed"})
                : body_object(c.req, {"profile", "fabric"});
  if (!b) return c.fail(b.error());
  for (const char* k : {"profile", "fabric"})
    if (b->contains(k) && !(*b)[k].is_string())
      return c.fail({422, "bad_value", fmt::format("\"{}\" wants a YAML text (a string)", k)});
  auto text = [&](const char* k) -> std::optional<std::string> {
    if (!b->contains(k)) return std::nullopt;
    return (*b)[k].get<std::string>();
  };
  roce::RoceProfile profile = roce::default_roce_profile();
  if (auto t = text("profile")) {
    auto p = roce::parse_roce_profile(*t, "profile");
    if (!p) return c.fail({422, "bad_profile", p.error().message});
    profile = std::move(*p);
  }
  std::optional<roce::RoceFabric> fab;
  if (auto t = text("fabric")) {
    auto f = roce::parse_roce_fabric(*t, "fabric");
    if (!f) return c.fail({422, "bad_fabric", f.error().message});
    fab = std::move(*f);
  } else if (!diff) {
    return c.fail({422, "missing_field", "\"fabric\" (a RoCE fabric YAML text) is required"});
  }
  std::vector<roce::Observed> seen;
  auto mode = roce::DiffMode::kEffect;
  if (diff && b->contains("mode")) {
    const auto& m = (*b)["mode"];
    if (!m.is_string() || (m != "effect" && m != "literal"))
      return c.fail({422, "bad_value", "\"mode\" is \"effect\" (the default) or \"literal\""});
    if (m == "literal") mode = roce::DiffMode::kLiteral;
  }
  if (diff) {
    if (!b->contains("observed") || !(*b)["observed"].is_array() || (*b)["observed"].empty())
      return c.fail({422, "missing_field",
                     "\"observed\" wants [{\"name\": ..., \"text\": ...}]: host snapshots, dcb "
                     "scripts, SONiC config_db or NVUE"});
    for (const auto& o : (*b)["observed"]) {
      if (!o.is_object() || !o.contains("text") || !o["text"].is_string())
        return c.fail({422, "bad_value", "an observed entry wants \"text\""});
      if (auto ok = only_fields(o, {"name", "device", "text"}, "an observed entry"); !ok)
        return c.fail(ok.error());
      const std::string name =
          o.contains("name") && o["name"].is_string() ? o["name"].get<std::string>() : "observed";
      const std::string device =
          o.contains("device") && o["device"].is_string() ? o["device"].get<std::string>() : "";
      auto ob = roce::parse_observed(o["text"].get<std::string>(), name, device);
      if (!ob) return c.fail({422, "bad_observed", ob.error().message});
      seen.push_back(std::move(*ob));
    }
  }
  accepted_job(c, c.jobs.submit(diff ? "roce-diff" : "roce-check",
                                [profile, fab, seen, diff, mode]() -> Result<json> {
                                  std::vector<roce::Finding> f;
                                  json j;
                                  if (diff) {
                                    auto d = roce::diff_observed(profile, fab ? &*fab : nullptr,
                                                                 seen, mode);
                                    f = std::move(d.findings);
                                    roce::sort_findings(d.unreached);
                                    json un = json::array();
                                    for (const auto& x : d.unreached)
                                      un.push_back(roce::finding_json(x));
                                    j["unreached"] = std::move(un);
                                    j["hosts"] = d.hosts;
                                    j["switches"] = d.switches;
                                  } else {
                                    auto r = roce::check_fabric(profile, *fab);
                                    f = std::move(r.findings);
                                    j["inherited"] = r.inherited;
                                  }
                                  roce::sort_findings(f);
                                  json list = json::array();
                                  for (const auto& x : f) list.push_back(roce::finding_json(x));
                                  j["errors"] = roce::errors(f);
                                  j["findings"] = std::move(list);
                                  return j;
                                }));
}

void get_events(Ctx& c) {
  uint64_t after = 0;
  const std::string last = c.req.header("last-event-id");
  auto since = c.query("since");
  const std::string& from = since ? *since : last;
  if (!from.empty()) {
    auto [p, ec] = std::from_chars(from.data(), from.data() + from.size(), after);
    if (ec != std::errc() || p != from.data() + from.size())
      return c.fail({400, "bad_query", "since / Last-Event-ID want an event id"});
  }
  const std::string accept = c.req.header("accept");
  if (since || accept.find("text/event-stream") == std::string::npos) {
    auto pg = c.backend.events().since(after, 1000);
    json events = json::array();
    for (const auto& e : pg.events) events.push_back(e.to_json());
    return c.ok({{"events", events}, {"lost", pg.lost}, {"last_id", pg.last_id}});
  }
  Response r;
  r.sse = true;
  r.sse_after = after;
  r.content_type = "text/event-stream";
  c.reply(std::move(r));
}

json token_info(const TokenInfo& t) {
  return {{"id", t.id},
          {"user", t.user},
          {"role", role_name(t.role)},
          {"created_s", t.created_s},
          {"expires_s", t.expires_s},
          {"revoked", t.revoked}};
}

}  // namespace

void register_native(std::vector<Api::Route>& r) {
  const auto kMon = Role::kMonitor, kOp = Role::kOperator;
  add_route(r, "GET", "/healthz", std::nullopt,
            "200 when weft is the master SM and the subnet is up, else 503 with why", [](Ctx& c) {
              auto p = c.backend.published();
              std::string why;
              if (p->state != mad::SmState::kMaster)
                why = std::string("the SM is ") + mad::sm_state_name(p->state);
              else if (!p->report || !p->report->subnet_up)
                why =
                    "the subnet is not up" + (p->report ? ": " + p->report->reason : std::string());
              if (why.empty()) return c.ok({{"status", "ok"}, {"state", "MASTER"}});
              c.fail({503, "unhealthy", why});
            });
  add_route(r, "GET", "/api/v1/sm", kMon,
            "the SM: state (MASTER, STANDBY, ...), priority, GUID, LID, the master, the other SMs "
            "seen, sweeps, the last sweep's report, routing",
            get_sm);
  add_route(
      r, "GET", "/api/v1/nodes", kMon, "nodes (paged), ?type=switch|ca|router", get_nodes,
      {{"query",
        {{"type", "switch, ca or router"}, {"limit", "page size"}, {"offset", "first item"}}}});
  add_route(r, "GET", "/api/v1/nodes/{guid}", kMon, "one node and its ports (node or port GUID)",
            get_node);
  add_route(r, "GET", "/api/v1/ports", kMon, "linked ports (paged), ?node=GUID&state=ACTIVE",
            get_ports,
            {{"query",
              {{"node", "a node GUID"},
               {"state", "DOWN, INIT, ARMED or ACTIVE"},
               {"limit", "page size"},
               {"offset", "first item"}}}});
  add_route(r, "GET", "/api/v1/ports/{guid}/{num}", kMon,
            "one port as programmed: LID, state, width, speed, MTU, VLs, P_Keys, its SR-IOV vports",
            get_port);
  add_route(r, "POST", "/api/v1/ports/{guid}/{num}/enable", kOp,
            "lets a switch port weft keeps down (flap_policy down) come up at the next sweep",
            post_enable_port,
            {{"responses",
              {{"202", {{"description", "released, on disk"}}},
               {"404", {{"description", "not kept down"}}}}}});
  add_route(r, "GET", "/api/v1/links", kMon, "links (paged)", get_links,
            {{"query", {{"limit", "page size"}, {"offset", "first item"}}}});
  add_route(r, "GET", "/api/v1/switches/{guid}/lft", kMon,
            "a switch's linear forwarding table as programmed, ?from=LID&to=LID", get_lft,
            {{"query", {{"from", "first LID"}, {"to", "last LID"}}}});
  add_route(r, "GET", "/api/v1/switches/{guid}/ar", kMon,
            "a switch's adaptive routing as weft last read or wrote it: whether it was asked "
            "(adaptive routing asked for), supported and enabled, GroupCap, its groups' ports "
            "and the LIDs routed adaptively (group, default port)",
            get_ar);
  add_route(r, "GET", "/api/v1/routes", kMon,
            "the hops from src to dst through the programmed tables, and the PathRecord's SL, "
            "VL, MTU and rate",
            get_route,
            {{"query", {{"src", "GUID, LID or node description"}, {"dst", "likewise"}}}});
  add_route(r, "GET", "/api/v1/partitions", kMon,
            "partitions from the file and from REST, ?members=true", list_partitions,
            {{"query", {{"members", "true: with members"}}}});
  json part_body = {{"type", "object"},
                    {"required", {"pkey"}},
                    {"properties",
                     {{"pkey", {{"type", "string"}}},
                      {"name", {{"type", "string"}}},
                      {"ipoib", {{"type", "boolean"}}},
                      {"mtu", {{"type", "integer"}}},
                      {"rate", {{"type", "integer"}}},
                      {"sl", {{"type", "integer"}}},
                      {"membership", {{"type", "string"}}},
                      {"index0", {{"type", "boolean"}}},
                      {"members", {{"type", "array"}}},
                      {"hosts", {{"type", "string"}}}}}};
  add_route(r, "POST", "/api/v1/partitions", kOp, "makes a partition (409 if it exists)",
            create_partition,
            {{"body", part_body}, {"responses", {{"201", {{"description", "made"}}}}}});
  add_route(r, "GET", "/api/v1/partitions/{pkey}", kMon, "one partition and its members",
            get_partition);
  add_route(r, "PUT", "/api/v1/partitions/{pkey}", kOp,
            "sets a partition's properties, and its REST members when given", put_partition,
            {{"body", part_body}});
  add_route(r, "DELETE", "/api/v1/partitions/{pkey}", kOp, "deletes a partition made over REST",
            delete_partition);
  add_route(r, "POST", "/api/v1/partitions/{pkey}/members", kOp,
            "adds members by port GUID (members) or host name (hosts, hostlist syntax)",
            add_members, {{"body", part_body}});
  add_route(r, "DELETE", "/api/v1/partitions/{pkey}/members/{members}", kOp,
            "removes members: port GUIDs or host names, comma-separated", remove_members);
  add_route(r, "GET", "/api/v1/qos", kMon,
            "SL2VL and VL arbitration per port class, the QoS policy", get_qos);
  add_route(r, "POST", "/api/v1/sweep", kOp, "asks for a sweep: {\"type\": \"heavy\"|\"light\"}",
            post_sweep, {{"responses", {{"202", {{"description", "requested"}}}}}});
  add_route(r, "POST", "/api/v1/whatif", kOp,
            "routes the current fabric (or an uploaded dump) with links or switches failed: "
            "a job whose result is weft route --json's",
            post_whatif, {{"responses", {{"202", {{"description", "a job"}}}}}});
  add_route(r, "POST", "/api/v1/roce/check", kOp,
            "checks a RoCE profile on a fabric (YAML texts): a job with weft roce check's findings",
            [](Ctx& c) { post_roce(c, false); },
            {{"responses", {{"202", {{"description", "a job"}}}}}});
  add_route(r, "POST", "/api/v1/roce/diff", kOp,
            "compares observed device configurations with the profile: a job",
            [](Ctx& c) { post_roce(c, true); },
            {{"responses", {{"202", {{"description", "a job"}}}}}});
  add_route(r, "POST", "/api/v1/roce/doctor", kOp,
            "diagnoses a lossless fabric from two snapshots of its counters (files by name, as "
            "weft roce doctor reads them): a job with its findings and who pauses whom",
            post_roce_doctor, {{"responses", {{"202", {{"description", "a job"}}}}}});
  add_route(r, "GET", "/api/v1/jobs/{id}", kMon, "a job's state and, once done, its result",
            [](Ctx& c) {
              auto s = c.jobs.status(c.param("id"));
              if (!s) return c.fail({404, "not_found", "no job " + c.param("id")});
              c.ok(*s);
            });
  add_route(r, "GET", "/api/v1/events", kMon,
            "Server-Sent Events (Accept: text/event-stream; Last-Event-ID resumes), or ?since=N",
            get_events, {{"query", {{"since", "the last event id seen"}}}});
  add_route(r, "POST", "/api/v1/tokens", kMon,
            "a new token for the caller (Authorization: Bearer <token>), {\"ttl_s\": N}",
            [](Ctx& c) {
              std::optional<std::chrono::seconds> ttl;
              if (!c.req.body.empty()) {
                auto b = body_object(c.req, {"ttl_s"});
                if (!b) return c.fail(b.error());
                if (b->contains("ttl_s")) {
                  if (!(*b)["ttl_s"].is_number_unsigned() || (*b)["ttl_s"].get<uint64_t>() == 0)
                    return c.fail({422, "bad_value", "\"ttl_s\" wants seconds"});
                  ttl = std::chrono::seconds((*b)["ttl_s"].get<uint64_t>());
                }
              }
              auto t = c.auth.issue_token(c.who, ttl);
              if (!t) return c.fail({503, "not_saved", t.error().message});
              json j = token_info(t->second);
              j["token"] = t->first;
              c.ok(j, 201);
            },
            {{"responses", {{"201", {{"description", "the token, shown once"}}}}}});
  add_route(r, "GET", "/api/v1/tokens", kMon, "tokens: the caller's, or every one for an admin",
            [](Ctx& c) {
              json out = json::array();
              for (const auto& t : c.auth.tokens())
                if (c.who.role == Role::kAdmin || t.user == c.who.user)
                  out.push_back(token_info(t));
              c.ok(out);
            });
  add_route(r, "DELETE", "/api/v1/tokens/{id}", kMon, "revokes a token (by its id or itself)",
            [](Ctx& c) {
              auto res = c.auth.revoke(c.param("id"), c.who);
              if (!res)
                return c.fail({res.error().code == Errc::kUnsupported ? 403 : 404,
                               res.error().code == Errc::kUnsupported ? "forbidden" : "not_found",
                               res.error().message});
              c.ok({{"revoked", c.param("id")}});
            });
}

}  // namespace weft::rest
