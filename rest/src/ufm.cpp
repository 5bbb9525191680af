// The UFM-compatible facade: the calls ib-kubernetes (pkg/sm/plugins/ufm/ufm.go), UFM's
// Slurm prolog and epilog (ufm_slurm_utils.py) and OpenStack's UFM ML2 client
// (ufmclient/modules/resources/pkey.py) make, in the shapes they parse. Where UFM's
// behaviour is not written down, these answers keep those clients working:
// - success is 200 (ib-kubernetes accepts nothing else), failures JSON errors;
// - P_Keys are accepted as "0x0a12", "0xa12", "a12" or a number and answered as
//   "0xa12" (UFM's own spelling in its answers); GUIDs are accepted with or without
//   0x or colons and answered as 16 lower-case hex digits;
// - booleans may come as strings ("True", "false");
// - a trailing slash is the same route; GUIDs not yet on the fabric are kept and
//   take effect when their ports appear.
#include <fmt/format.h>

#include "handlers.hpp"
#include "partitions.hpp"
#include "views.hpp"
#include "weft/rest/hostlist.hpp"

namespace weft::rest {

using nlohmann::json;

namespace {

std::string ufm_pkey(uint16_t pk) {
  return fmt::format("0x{:x}", pk);
}

const char* member_word(config::Membership m) {
  return m == config::Membership::kFull      ? "full"
         : m == config::Membership::kLimited ? "limited"
                                             : "both";
}

json ufm_partition(const PartitionItem& it, bool with_guids) {
  json j = {{"partition_name", it.name},
            {"pkey", ufm_pkey(it.pkey)},
            {"ip_over_ib", it.ipoib},
            {"qos_parameters",
             {{"mtu_limit", it.flags.mtu},
              {"service_level", it.flags.sl},
              {"rate_limit", it.flags.rate}}}};
  if (with_guids) {
    json guids = json::array();
    for (const auto& m : it.members)
      guids.push_back({{"guid", guid_ufm(m.guid)},
                       {"membership", member_word(m.membership)},
                       {"index0", m.index0}});
    j["guids"] = std::move(guids);
  }
  return j;
}

// The fields UFM's pkey calls take (UFM Enterprise REST API, PKey GUIDs): pkey, guids,
// membership or memberships (one per GUID, in order), index0, ip_over_ib, and the QoS
// ones pkeys/add documents (which the others take too).
constexpr std::string_view kPkeyFields[] = {
    "pkey",       "guids",     "membership",    "memberships", "index0",
    "ip_over_ib", "mtu_limit", "service_level", "rate_limit",  "partition_name"};
constexpr std::string_view kHostsFields[] = {"pkey",          "hosts_names", "membership",
                                             "index0",        "ip_over_ib",  "mtu_limit",
                                             "service_level", "rate_limit",  "partition_name"};

// UFM takes P_Keys 0x0-0x7fff exclusive: the default partition (0x7fff, 0xffff) is
// the SM's own, never an orchestrator's to add GUIDs to or remove them from.
ApiResult<uint16_t> not_default(ApiResult<uint16_t> pk, int status) {
  if (pk && *pk == 0x7fff)
    return api_error(status, "bad_pkey",
                     "\"pkey\": 0x7fff (0xffff) is the default partition, which the UFM API "
                     "does not change; it takes 0x0001-0x7ffe");
  return pk;
}

ApiResult<AddSpec> add_spec(const json& b, bool guids_required) {
  AddSpec s;
  if (!b.contains("pkey")) return api_error(422, "missing_field", "\"pkey\" is required");
  auto pk = not_default(as_pkey(b["pkey"], "pkey"), 422);
  if (!pk) return std::unexpected(pk.error());
  s.pkey = *pk;
  if (b.contains("guids")) {
    auto g = as_guids(b["guids"], "guids");
    if (!g) return std::unexpected(g.error());
    s.guids = std::move(*g);
  } else if (guids_required) {
    return api_error(422, "missing_field", "\"guids\" is required");
  }
  if (b.contains("membership")) {
    auto m = as_membership(b["membership"], "membership");
    if (!m) return std::unexpected(m.error());
    s.membership = *m;
  }
  if (b.contains("memberships")) {
    if (b.contains("membership"))
      return api_error(422, "bad_value",
                       "\"membership\" and \"memberships\" conflict: send one of them");
    const auto& ms = b["memberships"];
    if (!ms.is_array() || ms.size() != s.guids.size())
      return api_error(
          422, "bad_value",
          fmt::format("\"memberships\" wants a list as long as \"guids\" ({})", s.guids.size()));
    for (size_t i = 0; i < ms.size(); ++i) {
      auto m = as_membership(ms[i], fmt::format("memberships[{}]", i));
      if (!m) return std::unexpected(m.error());
      s.memberships.push_back(*m);
    }
  }
  if (b.contains("index0")) {
    auto v = as_bool(b["index0"], "index0");
    if (!v) return std::unexpected(v.error());
    s.index0 = *v;
  }
  if (b.contains("ip_over_ib")) {
    auto v = as_bool(b["ip_over_ib"], "ip_over_ib");
    if (!v) return std::unexpected(v.error());
    s.ipoib = *v;
  }
  if (b.contains("partition_name")) {
    if (!b["partition_name"].is_string())
      return api_error(422, "bad_value", "\"partition_name\" wants a string");
    s.name = b["partition_name"].get<std::string>();
  }
  if (b.contains("mtu_limit")) {
    if (!b["mtu_limit"].is_number_integer() || !mtu_code(b["mtu_limit"].get<int64_t>()))
      return api_error(422, "bad_value", "\"mtu_limit\" wants an MTU code 1-5 or 256-4096 bytes");
    s.mtu = mtu_code(b["mtu_limit"].get<int64_t>());
  }
  if (b.contains("rate_limit")) {
    if (!b["rate_limit"].is_number() || !rate_code_of_gbps(b["rate_limit"].get<double>()))
      return api_error(422, "bad_value", "\"rate_limit\" wants a rate in Gb/s (2.5, 10, 100, ...)");
    s.rate = rate_code_of_gbps(b["rate_limit"].get<double>());
  }
  if (b.contains("service_level")) {
    if (!b["service_level"].is_number_integer() || b["service_level"].get<int64_t>() < 0 ||
        b["service_level"].get<int64_t>() > 15)
      return api_error(422, "bad_value", "\"service_level\" wants 0-15");
    s.sl = uint8_t(b["service_level"].get<int64_t>());
  }
  return s;
}

json generation_body(uint64_t gen) {
  return {{"generation", gen}};
}

void get_pkeys(Ctx& c) {
  auto with = query_bool(c, "guids_data", false);
  if (!with) return c.fail(with.error());
  json out = json::object();
  for (const auto& it : partition_items(*c.backend.published(), *c.backend.partitions()))
    out[ufm_pkey(it.pkey)] = ufm_partition(it, *with);
  c.ok(out);
}

void get_pkey(Ctx& c) {
  auto pk = pkey_param(c.param("pkey"));
  if (!pk) return c.fail(pk.error());
  auto with = query_bool(c, "guids_data", false);
  if (!with) return c.fail(with.error());
  for (const auto& it : partition_items(*c.backend.published(), *c.backend.partitions()))
    if (it.pkey == *pk) return c.ok(ufm_partition(it, *with));
  c.fail({404, "not_found", fmt::format("no partition 0x{:04x}", *pk)});
}

// Adds GUIDs (idempotent), replaces the set, or defines an empty P_Key.
void add_guids(Ctx& c, bool replace) {
  auto b = body_object(c.req, kPkeyFields);
  if (!b) return c.fail(b.error());
  auto s = add_spec(*b, true);
  if (!s) return c.fail(s.error());
  commit(
      c,
      [s = *s, replace](const daemon::RestPartitions& cur, const daemon::PartitionView&) {
        return replace ? op_replace(cur, s) : op_add(cur, s);
      },
      200, generation_body);
}

void define_pkey(Ctx& c) {
  auto b = body_object(c.req, kPkeyFields);
  if (!b) return c.fail(b.error());
  auto s = add_spec(*b, false);
  if (!s) return c.fail(s.error());
  commit(
      c,
      [s = *s](const daemon::RestPartitions& cur, const daemon::PartitionView&) {
        return op_define(cur, s);
      },
      200, generation_body);
}

void remove_guids(Ctx& c, uint16_t pkey, std::vector<Guid> guids) {
  commit(
      c,
      [pkey, guids = std::move(guids)](const daemon::RestPartitions& cur,
                                       const daemon::PartitionView& v) {
        return op_remove(cur, v, pkey, guids);
      },
      200, generation_body);
}

void delete_pkey(Ctx& c) {
  auto pk = not_default(pkey_param(c.param("pkey")), 400);
  if (!pk) return c.fail(pk.error());
  commit(
      c,
      [pk = *pk](const daemon::RestPartitions& cur, const daemon::PartitionView& v) {
        return op_delete(cur, v, pk);
      },
      200, generation_body);
}

// Slurm: host names in hostlist syntax, resolved through the node descriptions.
ApiResult<std::vector<Guid>> host_guids(Ctx& c, const std::string& list) {
  auto hosts = expand_hostlist(list);
  if (!hosts) return api_error(422, "bad_hostlist", hosts.error().message);
  if (hosts->empty()) return api_error(422, "bad_hostlist", "no host names given");
  auto pub = c.backend.published();
  auto r = resolve_hosts(pub->subnet.get(), *hosts);
  if (!r.unknown.empty()) {
    std::string names;
    for (size_t i = 0; i < r.unknown.size() && i < 20; ++i) names += (i ? ", " : "") + r.unknown[i];
    if (r.unknown.size() > 20) names += fmt::format(" and {} more", r.unknown.size() - 20);
    return api_error(
        pub->subnet ? 404 : 503, "unknown_hosts",
        fmt::format("{} of {} hosts have no InfiniBand port on the fabric{}: {}; nothing changed",
                    r.unknown.size(), hosts->size(), pub->subnet ? "" : " (no sweep yet)", names));
  }
  return r.guids;
}

void add_hosts(Ctx& c) {
  auto b = body_object(c.req, kHostsFields);
  if (!b) return c.fail(b.error());
  auto s = add_spec(*b, false);
  if (!s) return c.fail(s.error());
  if (!b->contains("hosts_names") || !(*b)["hosts_names"].is_string())
    return c.fail({422, "missing_field", "\"hosts_names\" (a hostlist string) is required"});
  auto guids = host_guids(c, (*b)["hosts_names"].get<std::string>());
  if (!guids) return c.fail(guids.error());
  s->guids = std::move(*guids);
  commit(
      c,
      [s = *s](const daemon::RestPartitions& cur, const daemon::PartitionView&) {
        return op_add(cur, s);
      },
      200, generation_body);
}

void remove_hosts(Ctx& c) {
  auto pk = not_default(pkey_param(c.param("pkey")), 400);
  if (!pk) return c.fail(pk.error());
  auto guids = host_guids(c, c.param("hosts"));
  if (!guids) return c.fail(guids.error());
  remove_guids(c, *pk, std::move(*guids));
}

const sm::SubnetSnapshot* swept(Ctx& c, std::shared_ptr<const sm::Published>& keep) {
  keep = c.backend.published();
  if (!keep->subnet) {
    c.fail({503, "no_fabric", "the SM has not finished a sweep yet"});
    return nullptr;
  }
  return keep->subnet.get();
}

}  // namespace

void register_ufm(std::vector<Api::Route>& r) {
  const auto kMon = Role::kMonitor, kOp = Role::kOperator;
  json pkey_body = {{"type", "object"},
                    {"required", {"pkey", "guids"}},
                    {"properties",
                     {{"pkey", {{"type", "string"}}},
                      {"guids", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                      {"membership", {{"type", "string"}, {"enum", {"full", "limited", "both"}}}},
                      {"index0", {{"type", "boolean"}}},
                      {"ip_over_ib", {{"type", "boolean"}}}}}};
  add_ufm_route(r, "GET", "app/ufm_version", kMon,
                "the facade's version (UFM: ufm_release_version)", [](Ctx& c) {
                  c.ok({{"ufm_release_version", std::string("weft-") + WEFT_VERSION_STRING}});
                });
  add_ufm_route(r, "POST", "app/tokens", kMon, "a new access token for the caller", [](Ctx& c) {
    auto t = c.auth.issue_token(c.who);
    if (!t) return c.fail({503, "not_saved", t.error().message});
    c.ok({{"access_token", t->first},
          {"id", t->second.id},
          {"expires_s", t->second.expires_s},
          {"revoked", false}});
  });
  add_ufm_route(r, "GET", "app/tokens", kMon, "the caller's tokens (an admin: every token)",
                [](Ctx& c) {
                  json out = json::array();
                  for (const auto& t : c.auth.tokens())
                    if (c.who.role == Role::kAdmin || t.user == c.who.user)
                      out.push_back({{"id", t.id},
                                     {"user", t.user},
                                     {"role", role_name(t.role)},
                                     {"created_s", t.created_s},
                                     {"expires_s", t.expires_s},
                                     {"revoked", t.revoked}});
                  c.ok(out);
                });
  add_ufm_route(
      r, "DELETE", "app/tokens/{token}", kMon, "revokes a token (by itself or its id)", [](Ctx& c) {
        auto res = c.auth.revoke(c.param("token"), c.who);
        if (!res)
          return c.fail({res.error().code == Errc::kUnsupported ? 403 : 404,
                         res.error().code == Errc::kUnsupported ? "forbidden" : "not_found",
                         res.error().message});
        c.ok(json::object());
      });
  add_ufm_route(r, "GET", "resources/pkeys", kMon,
                "every P_Key; with ?guids_data=true each one's members", get_pkeys,
                {{"query", {{"guids_data", "true: list each P_Key's GUIDs"}}}});
  add_ufm_route(r, "GET", "resources/pkeys/{pkey}", kMon,
                "one P_Key (?guids_data=true: with members)", get_pkey,
                {{"query", {{"guids_data", "true: list the GUIDs"}}}});
  add_ufm_route(r, "POST", "resources/pkeys", kOp,
                "adds GUIDs to a P_Key (made if missing); adding a member again is no error",
                [](Ctx& c) { add_guids(c, false); }, {{"body", pkey_body}});
  add_ufm_route(r, "PUT", "resources/pkeys", kOp, "sets a P_Key's GUIDs to exactly these",
                [](Ctx& c) { add_guids(c, true); }, {{"body", pkey_body}});
  add_ufm_route(r, "POST", "resources/pkeys/add", kOp,
                "defines a P_Key without GUIDs (mtu_limit, service_level, rate_limit, ip_over_ib)",
                define_pkey);
  add_ufm_route(r, "DELETE", "resources/pkeys/{pkey}", kOp, "deletes a P_Key made over REST",
                delete_pkey);
  add_ufm_route(r, "DELETE", "resources/pkeys/{pkey}/guids/{guids}", kOp,
                "removes GUIDs (comma-separated) from a P_Key", [](Ctx& c) {
                  auto pk = not_default(pkey_param(c.param("pkey")), 400);
                  if (!pk) return c.fail(pk.error());
                  auto g = as_guids(json(c.param("guids")), "guids");
                  if (!g) return c.fail(g.error());
                  remove_guids(c, *pk, std::move(*g));
                });
  add_ufm_route(r, "POST", "actions/remove_guids_from_pkey", kOp,
                "removes GUIDs from a P_Key (UFM's older action form)",
                [](Ctx& c) {
                  auto b = body_object(c.req, {"pkey", "guids"});
                  if (!b) return c.fail(b.error());
                  auto s = add_spec(*b, true);
                  if (!s) return c.fail(s.error());
                  remove_guids(c, s->pkey, std::move(s->guids));
                },
                {{"body", pkey_body}});
  add_ufm_route(r, "POST", "resources/pkeys/hosts", kOp,
                "adds every port of the named hosts (Slurm hostlist syntax) to a P_Key", add_hosts,
                {{"body",
                  {{"type", "object"},
                   {"required", {"pkey", "hosts_names"}},
                   {"properties",
                    {{"pkey", {{"type", "string"}}}, {"hosts_names", {{"type", "string"}}}}}}}});
  add_ufm_route(r, "DELETE", "resources/pkeys/{pkey}/hosts/{hosts}", kOp,
                "removes the named hosts' ports (hostlist syntax) from a P_Key", remove_hosts);
  add_ufm_route(r, "GET", "resources/systems", kMon, "every node, in UFM's system shape",
                [](Ctx& c) {
                  std::shared_ptr<const sm::Published> keep;
                  auto* s = swept(c, keep);
                  if (!s) return;
                  json out = json::array();
                  for (fabric::NodeIndex n = 0; n < s->fabric.size(); ++n)
                    out.push_back(ufm_system(*s, n));
                  c.ok(out);
                });
  add_ufm_route(r, "GET", "resources/systems/{guid}", kMon, "one node", [](Ctx& c) {
    std::shared_ptr<const sm::Published> keep;
    auto* s = swept(c, keep);
    if (!s) return;
    auto g = daemon::parse_port_guid(c.param("guid"));
    auto n = g ? find_node(*s, *g) : std::nullopt;
    if (!n) return c.fail({404, "not_found", "no system " + c.param("guid")});
    c.ok(ufm_system(*s, *n));
  });
  add_ufm_route(r, "GET", "resources/ports", kMon, "every linked port, in UFM's port shape",
                [](Ctx& c) {
                  std::shared_ptr<const sm::Published> keep;
                  auto* s = swept(c, keep);
                  if (!s) return;
                  std::optional<Guid> only;
                  if (auto q = c.query("system")) {
                    only = daemon::parse_port_guid(*q);
                    if (!only) return c.fail({400, "bad_query", "system wants a GUID"});
                  }
                  json out = json::array();
                  for (fabric::NodeIndex n = 0; n < s->fabric.size(); ++n) {
                    const auto& nd = s->fabric.node(n);
                    if (only && nd.guid != *only) continue;
                    for (PortNum p = 1; p <= nd.num_ports; ++p)
                      if (nd.ports[p].linked()) out.push_back(ufm_port(*s, n, p));
                  }
                  c.ok(out);
                },
                {{"query", {{"system", "only this system's ports"}}}});
  add_ufm_route(
      r, "GET", "resources/links", kMon,
      "every link; with page_number and rpp, one page as {\"data\": [...]}",
      [](Ctx& c) {
        std::shared_ptr<const sm::Published> keep;
        auto* s = swept(c, keep);
        if (!s) return;
        json all = json::array();
        for (const auto& l : s->fabric.links()) all.push_back(ufm_link(*s, l));
        if (!c.query("page_number") && !c.query("rpp")) return c.ok(all);
        auto num = [&](const char* n, uint64_t d) -> std::optional<uint64_t> {
          auto q = c.query(n);
          if (!q) return d;
          try {
            size_t used = 0;
            uint64_t v = std::stoull(*q, &used);
            if (used != q->size()) return std::nullopt;
            return v;
          } catch (...) {
            return std::nullopt;
          }
        };
        auto pn = num("page_number", 1), rpp = num("rpp", 1000);
        if (!pn || !rpp || *pn == 0 || *rpp == 0)
          return c.fail({400, "bad_query", "page_number and rpp want numbers from 1"});
        json data = json::array();
        const uint64_t from = *pn - 1 > all.size() / *rpp ? all.size() : (*pn - 1) * *rpp;
        for (uint64_t i = from; i < all.size() && data.size() < *rpp; ++i) data.push_back(all[i]);
        c.ok({{"data", data}, {"page_number", *pn}, {"rpp", *rpp}, {"total", all.size()}});
      },
      {{"query", {{"page_number", "page, from 1"}, {"rpp", "results per page"}}}});
}

}  // namespace weft::rest
