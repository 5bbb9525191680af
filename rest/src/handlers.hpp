// What every handler gets, and the helpers they share: path parameters, the query,
// body parsing that takes what UFM's clients send (booleans as strings, P_Keys with or
// without padding, GUIDs with or without 0x), and the one error builder.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "weft/rest/api.hpp"
#include "weft/rest/auth.hpp"

namespace weft::rest {

class Jobs;

// An error a handler answers with: its HTTP status, a stable code and a message.
struct ApiError {
  int status;
  std::string code;
  std::string message;
};

template <class T>
using ApiResult = std::expected<T, ApiError>;

inline std::unexpected<ApiError> api_error(int status, std::string code, std::string message) {
  return std::unexpected(ApiError{status, std::move(code), std::move(message)});
}

struct Ctx {
  const Request& req;
  Identity who;
  std::map<std::string, std::string> params;  // from the route's {name} segments
  Reply reply;
  Backend& backend;
  Auth& auth;
  Jobs& jobs;

  const std::string& param(const std::string& name) const { return params.at(name); }
  std::optional<std::string> query(const std::string& name) const {
    auto it = req.query.find(name);
    if (it == req.query.end()) return std::nullopt;
    return it->second;
  }
  void ok(const nlohmann::json& j, int status = 200) const { reply(json_response(status, j)); }
  void fail(const ApiError& e) const { reply(error_response(e.status, e.code, e.message)); }
};

using Handler = std::function<void(Ctx&)>;

struct Api::Route {
  std::string method;        // GET, POST, PUT, DELETE
  std::string pattern;       // "/api/v1/nodes/{guid}"; a {name} is one path segment
  std::optional<Role> role;  // the least role that may call it; nullopt: no authentication
  Auth::Scheme scheme = Auth::Scheme::kNative;
  std::string summary;  // one line, for openapi.json
  Handler handler;
  nlohmann::json doc = nlohmann::json::object();  // more OpenAPI: requestBody, responses
  std::vector<std::string> segments;              // the pattern split at '/'
  // A GET whose answer depends only on the published subnet snapshot and partitions:
  // answered from the response cache while both stay the same objects.
  bool cacheable = false;
};

// Adds a route; UFM's routes are added under /ufmRest (Basic) and /ufmRestV3 (token).
void add_route(std::vector<Api::Route>& routes, std::string method, std::string pattern,
               std::optional<Role> role, std::string summary, Handler h,
               nlohmann::json doc = nlohmann::json::object());
void add_ufm_route(std::vector<Api::Route>& routes, std::string method, const std::string& tail,
                   std::optional<Role> role, std::string summary, Handler h,
                   nlohmann::json doc = nlohmann::json::object());

// The body as a JSON object whose keys are all among `fields`: 400 when it is not JSON
// (a byte-order mark before it included), 422 when not an object or a key is not one
// of `fields` (named, with the fields the request takes).
ApiResult<nlohmann::json> body_object(const Request& req, std::span<const std::string_view> fields);
inline ApiResult<nlohmann::json> body_object(const Request& req,
                                             std::initializer_list<std::string_view> fields) {
  return body_object(req, std::span(fields.begin(), fields.size()));
}
// The same check of an object inside a body (`what` names it: "a member").
ApiResult<void> only_fields(const nlohmann::json& obj, std::span<const std::string_view> fields,
                            const std::string& what);
inline ApiResult<void> only_fields(const nlohmann::json& obj,
                                   std::initializer_list<std::string_view> fields,
                                   const std::string& what) {
  return only_fields(obj, std::span(fields.begin(), fields.size()), what);
}
// A boolean as clients send it: true/false, "true"/"True"/"false", 1/0, "1"/"0".
ApiResult<bool> as_bool(const nlohmann::json& v, const std::string& field);
ApiResult<bool> query_bool(const Ctx& c, const std::string& name, bool dflt);
// ?name=N, a count 0..most (`dflt` when absent); 400 otherwise.
ApiResult<size_t> query_count(const Ctx& c, const std::string& name, size_t dflt, size_t most);
// A P_Key (string or number) into its low 15 bits.
ApiResult<uint16_t> as_pkey(const nlohmann::json& v, const std::string& field);
ApiResult<uint16_t> pkey_param(const std::string& s);
// A port GUID list: a JSON array of strings, or one string of comma-separated GUIDs.
ApiResult<std::vector<Guid>> as_guids(const nlohmann::json& v, const std::string& field);
// limit/offset paging of a JSON array: {"total", "offset", "limit", "items"}.
ApiResult<nlohmann::json> page(const Ctx& c, nlohmann::json items);
// "0x0002c903000e0b72" (native) and "0002c903000e0b72" (UFM).
std::string guid_hex(uint64_t g);
std::string guid_ufm(uint64_t g);

// Prometheus text exposition (metrics.cpp): the SM's counters as published, and the
// REST requests by route and status.
std::string prometheus_text(const sm::Published& p,
                            const std::map<std::pair<std::string, int>, uint64_t>& requests,
                            uint64_t events);

// Handlers, by family.
void register_native(std::vector<Api::Route>& routes);
void register_ufm(std::vector<Api::Route>& routes);
void register_health(std::vector<Api::Route>& routes);      // health.cpp
void register_congestion(std::vector<Api::Route>& routes);  // congestion.cpp
void register_topology(std::vector<Api::Route>& routes);    // topology.cpp

// Switch tiers for the topology page: 0 for a switch with a CA, then by hops from one.
struct TopologyTiers {
  std::vector<int> tier;  // by node; -1: a CA, or a switch no leaf reaches
  int levels = 0;
  bool tree = false;  // every switch reached, every switch link between adjacent tiers
};
TopologyTiers topology_tiers(const fabric::Fabric& f);
// Trees by tier; tori and meshes on their grid ("grid": radix and wrap, and each
// switch's "coord"); anything else by force.
nlohmann::json topology_json(const sm::Published& p);

}  // namespace weft::rest
