// The route table, dispatch (path match, 404, 405, authentication, roles), the shared
// parsing helpers, the REST counters and the OpenAPI document.
#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <mutex>
#include <set>
#include <unordered_map>

#include "handlers.hpp"
#include "jobs.hpp"
#include "weft/log.hpp"

namespace weft::rest {

using nlohmann::json;

struct RouteStats {
  std::mutex mu;
  std::map<std::pair<std::string, int>, uint64_t> count;  // (METHOD pattern, status)
};

// Answers of the cacheable GETs for the current (snapshot, partitions) pair. The cache
// holds that pair, so a newer snapshot cannot reuse its address. When a sweep
// publishes a new snapshot, the first request for a key builds its answer anew while
// the requests that come meanwhile get the previous snapshot's (a few milliseconds
// old, as if they had come a little earlier); a partition change serves nothing old:
// whoever changed one reads it back.
struct ResponseCache {
  static constexpr size_t kMaxBytes = 64u << 20;
  using Entries = std::unordered_map<std::string, std::shared_ptr<const Response>>;
  std::mutex mu;
  std::shared_ptr<const sm::SubnetSnapshot> subnet;
  std::shared_ptr<const daemon::PartitionView> parts;
  Entries entries, previous;
  std::set<std::string> building;  // keys whose answer a request is making now
  size_t bytes = 0;

  void sync(const std::shared_ptr<const sm::SubnetSnapshot>& s,
            const std::shared_ptr<const daemon::PartitionView>& p) {
    if (s == subnet && p == parts) return;
    if (p == parts)
      previous = std::move(entries);
    else
      previous.clear();
    entries.clear();
    building.clear();
    bytes = 0;
    subnet = s;
    parts = p;
  }
};

namespace {

std::vector<std::string> split_path(std::string_view p) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < p.size()) {
    while (i < p.size() && p[i] == '/') ++i;
    if (i >= p.size()) break;
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    out.emplace_back(p.substr(i, j - i));
    i = j;
  }
  return out;
}

bool match(const Api::Route& r, const std::vector<std::string>& segs,
           std::map<std::string, std::string>& params) {
  if (r.segments.size() != segs.size()) return false;
  params.clear();
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string& want = r.segments[i];
    if (want.size() > 2 && want.front() == '{' && want.back() == '}')
      params[want.substr(1, want.size() - 2)] = segs[i];
    else if (want != segs[i])
      return false;
  }
  return true;
}

}  // namespace

std::string json_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Response error_response(int status, std::string_view code, std::string_view message) {
  Response r;
  r.status = status;
  r.body = json_text(json{{"error", {{"code", code}, {"message", message}}}});
  return r;
}

Response json_response(int status, const json& j) {
  Response r;
  r.status = status;
  r.body = json_text(j);
  return r;
}

void add_route(std::vector<Api::Route>& routes, std::string method, std::string pattern,
               std::optional<Role> role, std::string summary, Handler h, json doc) {
  Api::Route r;
  r.method = std::move(method);
  r.pattern = std::move(pattern);
  r.role = role;
  r.scheme = Auth::Scheme::kNative;
  r.summary = std::move(summary);
  r.handler = std::move(h);
  r.doc = std::move(doc);
  r.segments = split_path(r.pattern);
  routes.push_back(std::move(r));
}

void add_ufm_route(std::vector<Api::Route>& routes, std::string method, const std::string& tail,
                   std::optional<Role> role, std::string summary, Handler h, json doc) {
  for (auto [prefix, scheme] : {std::pair{"/ufmRest/", Auth::Scheme::kUfmPassword},
                                std::pair{"/ufmRestV3/", Auth::Scheme::kUfmToken}}) {
    add_route(routes, method, prefix + tail, role, summary, h, doc);
    routes.back().scheme = scheme;
  }
}

Api::Api(Backend& b, Auth& auth, Jobs& jobs, LoginThrottle::Clock now)
    : b_(b),
      auth_(auth),
      jobs_(jobs),
      stats_(std::make_unique<RouteStats>()),
      cache_(std::make_unique<ResponseCache>()),
      throttle_(std::make_unique<LoginThrottle>(std::move(now))) {
  register_native(routes_);
  register_ufm(routes_);
  register_health(routes_);
  register_congestion(routes_);
  register_topology(routes_);
  for (auto& r : routes_) {
    static const std::set<std::string> kCacheable = {"/api/v1/nodes",
                                                     "/api/v1/nodes/{guid}",
                                                     "/api/v1/ports",
                                                     "/api/v1/ports/{guid}/{num}",
                                                     "/api/v1/links",
                                                     "/api/v1/switches/{guid}/lft",
                                                     "/api/v1/partitions",
                                                     "/api/v1/partitions/{pkey}",
                                                     "/ufmRest/resources/pkeys",
                                                     "/ufmRest/resources/pkeys/{pkey}",
                                                     "/ufmRest/resources/systems",
                                                     "/ufmRest/resources/systems/{guid}",
                                                     "/ufmRest/resources/ports",
                                                     "/ufmRest/resources/links"};
    std::string p = r.pattern;
    if (p.rfind("/ufmRestV3/", 0) == 0) p = "/ufmRest/" + p.substr(11);
    r.cacheable = r.method == "GET" && kCacheable.count(p);
  }
  // /metrics needs the counters of the routes themselves.
  add_route(routes_, "GET", "/metrics", Role::kMonitor,
            "Prometheus text exposition of the SM's and the REST server's counters",
            [this](Ctx& c) {
              std::map<std::pair<std::string, int>, uint64_t> counts;
              {
                std::lock_guard lk(stats_->mu);
                counts = stats_->count;
              }
              auto p = c.backend.published();
              Response r;
              r.content_type = "text/plain; version=0.0.4; charset=utf-8";
              r.body = prometheus_text(*p, counts, c.backend.events().last_id());
              c.reply(std::move(r));
            });
  routes_.push_back(routes_.back());
  routes_.back().pattern = "/api/v1/metrics";
  routes_.back().segments = split_path(routes_.back().pattern);
  add_route(routes_, "GET", "/api/v1/openapi.json", Role::kMonitor,
            "This document: every route weft serves", [this](Ctx& c) { c.ok(openapi()); });
  routes_.push_back(routes_.back());
  routes_.back().pattern = "/openapi.json";
  routes_.back().segments = split_path(routes_.back().pattern);
}

Api::~Api() = default;

std::vector<std::string> Api::routes() const {
  std::vector<std::string> out;
  for (const auto& r : routes_) out.push_back(r.method + " " + r.pattern);
  return out;
}

void Api::handle(const Request& req, Reply reply) {
  const auto segs = split_path(req.path);
  std::map<std::string, std::string> params;
  const Route* route = nullptr;
  std::vector<std::string> allowed;
  for (const auto& r : routes_) {
    std::map<std::string, std::string> p;
    if (!match(r, segs, p)) continue;
    if (r.method == req.method || (req.method == "HEAD" && r.method == "GET")) {
      route = &r;
      params = std::move(p);
      break;
    }
    allowed.push_back(r.method);
  }
  const std::string key = route ? route->method + " " + route->pattern : "unmatched";
  Reply counted = [this, key, reply = std::move(reply)](Response r) {
    {
      std::lock_guard lk(stats_->mu);
      ++stats_->count[{key, r.status}];
    }
    reply(std::move(r));
  };
  if (!route) {
    if (allowed.empty())
      return counted(error_response(404, "not_found", "no route " + req.method + " " + req.path));
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
    std::string allow;
    for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    Response r = error_response(405, "method_not_allowed",
                                req.method + " is not served on " + req.path + " (" + allow + ")");
    r.headers.push_back({"Allow", allow});
    return counted(std::move(r));
  }
  Identity who;
  if (route->role) {
    const std::string authz = req.header("authorization");
    // A source that kept failing waits before its credentials are tried again.
    if (const uint32_t wait = authz.empty() ? 0 : throttle_->admit(req.source)) {
      Response r =
          error_response(429, "too_many_failures",
                         fmt::format("too many failed logins from {}: try again in {} s",
                                     req.source.empty() ? "this client" : req.source, wait));
      r.headers.push_back({"Retry-After", std::to_string(wait)});
      return counted(std::move(r));
    }
    auto id = authz.empty() ? std::nullopt : auth_.check(authz, route->scheme);
    if (!authz.empty()) {
      if (id)
        throttle_->succeeded(req.source);
      else if (throttle_->failed(req.source))
        WEFT_LOG(Warn, "REST-0019")
            << "security: " << LoginThrottle::kFree + 1 << " failed logins in a row from "
            << (req.source.empty() ? "an in-process client" : req.source)
            << ": its credentials are answered 429 (not tried) for a time that doubles with "
               "each further failure, up to "
            << LoginThrottle::kMaxBlock.count() << " s, until one succeeds";
    }
    if (!id) {
      Response r = error_response(
          401, "unauthorized",
          authz.empty() ? "this route needs credentials"
          : route->scheme == Auth::Scheme::kUfmToken
              ? "the token is unknown, expired or revoked (Authorization: Basic <token>)"
              : "the credentials are not valid");
      if (route->scheme != Auth::Scheme::kUfmToken)
        r.headers.push_back({"WWW-Authenticate", "Basic realm=\"weft\""});
      return counted(std::move(r));
    }
    if (int(id->role) < int(*route->role))
      return counted(error_response(
          403, "forbidden",
          fmt::format("{} {} needs the {} role; {} is {}", route->method, route->pattern,
                      role_name(*route->role), id->user, role_name(id->role))));
    who = std::move(*id);
  }
  if (route->cacheable) {
    // The key: the route and the query as sent (the handler reads nothing else).
    std::string ckey = route->method + " " + route->pattern;
    for (const auto& s : segs) ckey += "/" + s;
    for (const auto& [k, v] : req.query) ckey += "&" + k + "=" + v;
    auto pub = b_.published();
    auto parts = b_.partitions();
    std::shared_ptr<const Response> ready;
    {
      std::lock_guard lk(cache_->mu);
      cache_->sync(pub->subnet, parts);
      if (auto it = cache_->entries.find(ckey); it != cache_->entries.end()) {
        ready = it->second;
      } else if (auto old = cache_->previous.find(ckey);
                 old != cache_->previous.end() && cache_->building.count(ckey)) {
        ready = old->second;
      } else {
        cache_->building.insert(ckey);
      }
    }
    if (ready) return counted(*ready);
    counted = [this, ckey, pub, parts, counted = std::move(counted)](Response r) {
      if (r.status == 200 && !r.shared_body) {
        r.shared_body = std::make_shared<const std::string>(std::move(r.body));
        r.body.clear();
      }
      {
        std::lock_guard lk(cache_->mu);
        if (cache_->subnet == pub->subnet && cache_->parts == parts) {
          cache_->building.erase(ckey);
          const size_t size = r.text().size();
          if (r.status == 200 && cache_->bytes + size <= ResponseCache::kMaxBytes) {
            cache_->bytes += size;
            cache_->entries.emplace(ckey, std::make_shared<const Response>(r));
          }
        }
      }
      counted(std::move(r));
    };
  }
  Ctx c{req, std::move(who), std::move(params), counted, b_, auth_, jobs_};
  try {
    route->handler(c);
  } catch (const std::exception& e) {
    // A handler that throws (a bug, or an allocation failure) still answers once.
    WEFT_LOG(Error, "REST-0009") << key << ": " << e.what();
    c.reply(error_response(500, "internal", e.what()));
  }
}

json Api::openapi() const {
  json paths = json::object();
  for (const auto& r : routes_) {
    json op = {{"summary", r.summary}, {"operationId", r.method + " " + r.pattern}};
    json params = json::array();
    for (const auto& s : r.segments)
      if (s.size() > 2 && s.front() == '{')
        params.push_back({{"name", s.substr(1, s.size() - 2)},
                          {"in", "path"},
                          {"required", true},
                          {"schema", {{"type", "string"}}}});
    if (r.doc.contains("query"))
      for (const auto& [name, desc] : r.doc["query"].items())
        params.push_back({{"name", name},
                          {"in", "query"},
                          {"required", false},
                          {"description", desc},
                          {"schema", {{"type", "string"}}}});
    if (!params.empty()) op["parameters"] = params;
    if (r.doc.contains("body"))
      op["requestBody"] = {{"required", true},
                           {"content", {{"application/json", {{"schema", r.doc["body"]}}}}}};
    op["responses"] =
        r.doc.contains("responses") ? r.doc["responses"] : json{{"200", {{"description", "OK"}}}};
    op["responses"]["default"] = {
        {"description", "an error: {\"error\": {\"code\", \"message\"}}"}};
    if (!r.role)
      op["security"] = json::array();
    else if (r.scheme == Auth::Scheme::kUfmToken)
      op["security"] = json::array({json{{"ufmToken", json::array()}}});
    else if (r.scheme == Auth::Scheme::kUfmPassword)
      op["security"] = json::array({json{{"basic", json::array()}}});
    else
      op["security"] =
          json::array({json{{"basic", json::array()}}, json{{"bearer", json::array()}}});
    if (r.role) op["x-weft-role"] = role_name(*r.role);
    std::string method = r.method;
    for (char& ch : method) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    paths[r.pattern][method] = op;
  }
  return {{"openapi", "3.0.3"},
          {"info",
           {{"title", "weft"},
            {"version", WEFT_VERSION_STRING},
            {"description",
             "weft's native API (/api/v1) and its UFM-compatible facade (/ufmRest with HTTP "
             "Basic, /ufmRestV3 with a token sent as Authorization: Basic <token>)."}}},
          {"paths", paths},
          {"components",
           {{"securitySchemes",
             {{"basic", {{"type", "http"}, {"scheme", "basic"}}},
              {"bearer", {{"type", "http"}, {"scheme", "bearer"}}},
              {"ufmToken",
               {{"type", "apiKey"},
                {"in", "header"},
                {"name", "Authorization"},
                {"description", "Basic <token>, the token from POST /ufmRest/app/tokens"}}}}}}}};
}

// ---- shared helpers ---------------------------------------------------------------------

ApiResult<void> only_fields(const json& obj, std::span<const std::string_view> fields,
                            const std::string& what) {
  for (const auto& [key, v] : obj.items()) {
    if (std::find(fields.begin(), fields.end(), key) != fields.end()) continue;
    std::string takes;
    for (auto f : fields) takes += (takes.empty() ? "" : ", ") + std::string(f);
    return api_error(422, "unknown_field",
                     fmt::format("\"{}\" is not a field of {}; it takes {}", key, what,
                                 takes.empty() ? "none" : takes));
  }
  return {};
}

ApiResult<json> body_object(const Request& req, std::span<const std::string_view> fields) {
  if (req.body.empty()) return api_error(400, "bad_request", "a JSON body is expected");
  // RFC 8259 forbids sending one; nlohmann would skip it: refused, as UFM does.
  if (req.body.starts_with("\xEF\xBB\xBF"))
    return api_error(400, "bad_json",
                     "the body starts with a byte-order mark (EF BB BF): send the JSON without it");
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return api_error(400, "bad_json", "the body is not JSON");
  if (!j.is_object()) return api_error(422, "bad_body", "the body must be a JSON object");
  if (auto ok = only_fields(j, fields, "this request's body"); !ok)
    return std::unexpected(ok.error());
  return j;
}

ApiResult<bool> as_bool(const json& v, const std::string& field) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1))
    return v.get<int64_t>() == 1;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (s == "true" || s == "1" || s == "t" || s == "yes") return true;
    if (s == "false" || s == "0" || s == "f" || s == "no") return false;
  }
  return api_error(422, "bad_value", "\"" + field + "\" wants true or false, got " + json_text(v));
}

ApiResult<bool> query_bool(const Ctx& c, const std::string& name, bool dflt) {
  auto q = c.query(name);
  if (!q) return dflt;
  if (q->empty()) return true;  // ?guids_data
  auto v = as_bool(json(*q), name);
  if (!v) return api_error(400, "bad_query", v.error().message);
  return *v;
}

ApiResult<size_t> query_count(const Ctx& c, const std::string& name, size_t dflt, size_t most) {
  auto q = c.query(name);
  if (!q) return dflt;
  size_t n = 0;
  auto [ptr, ec] = std::from_chars(q->data(), q->data() + q->size(), n);
  if (q->empty() || ec != std::errc() || ptr != q->data() + q->size() || n > most)
    return api_error(400, "bad_query",
                     fmt::format("\"{}\" wants a count 0-{}, got \"{}\"", name, most, *q));
  return n;
}

ApiResult<uint16_t> as_pkey(const json& v, const std::string& field) {
  std::optional<uint16_t> pk;
  if (v.is_string()) pk = daemon::parse_pkey(v.get<std::string>());
  if (v.is_number_unsigned() && v.get<uint64_t>() > 0 && v.get<uint64_t>() <= 0xffff &&
      (v.get<uint64_t>() & 0x7fff))
    pk = uint16_t(v.get<uint64_t>() & 0x7fff);
  if (!pk)
    return api_error(
        422, "bad_pkey",
        "\"" + field + "\" wants a P_Key 0x0001-0x7fff (\"0x0a12\"), got " + json_text(v));
  return *pk;
}

ApiResult<uint16_t> pkey_param(const std::string& s) {
  auto pk = daemon::parse_pkey(s);
  if (!pk) return api_error(400, "bad_pkey", "\"" + s + "\" is not a P_Key 0x0001-0x7fff");
  return *pk;
}

ApiResult<std::vector<Guid>> as_guids(const json& v, const std::string& field) {
  std::vector<std::string> items;
  if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_string())
        return api_error(422, "bad_guid", "\"" + field + "\" holds " + json_text(e));
      items.push_back(e.get<std::string>());
    }
  } else if (v.is_string()) {
    std::string s = v.get<std::string>();
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find(',', i);
      if (j == std::string::npos) j = s.size();
      std::string item = s.substr(i, j - i);
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      if (!item.empty()) items.push_back(item);
      i = j + 1;
    }
  } else {
    return api_error(422, "bad_guids", "\"" + field + "\" wants a list of port GUIDs");
  }
  constexpr size_t kMax = 100000;
  if (items.size() > kMax)
    return api_error(413, "too_many", fmt::format("\"{}\": more than {} GUIDs", field, kMax));
  std::vector<Guid> out;
  for (const auto& s : items) {
    auto g = daemon::parse_port_guid(s);
    if (!g)
      return api_error(422, "bad_guid",
                       "\"" + s + "\" is not a port GUID (16 hex digits, e.g. 0002c903000e0b72)");
    out.push_back(*g);
  }
  return out;
}

ApiResult<json> page(const Ctx& c, json items) {
  auto num = [&](const char* name, size_t dflt) -> ApiResult<size_t> {
    auto q = c.query(name);
    if (!q) return dflt;
    size_t v = 0;
    auto [p, ec] = std::from_chars(q->data(), q->data() + q->size(), v);
    if (ec != std::errc() || p != q->data() + q->size())
      return api_error(400, "bad_query", std::string(name) + " wants a number, got \"" + *q + "\"");
    return v;
  };
  auto limit = num("limit", 1000);
  if (!limit) return std::unexpected(limit.error());
  auto offset = num("offset", 0);
  if (!offset) return std::unexpected(offset.error());
  const size_t total = items.size();
  json out = json::array();
  for (size_t i = *offset; i < total && out.size() < *limit; ++i)
    out.push_back(std::move(items[i]));
  return json{{"total", total}, {"offset", *offset}, {"limit", *limit}, {"items", std::move(out)}};
}

std::string guid_hex(uint64_t g) {
  return fmt::format("0x{:016x}", g);
}
std::string guid_ufm(uint64_t g) {
  return fmt::format("{:016x}", g);
}

}  // namespace weft::rest
