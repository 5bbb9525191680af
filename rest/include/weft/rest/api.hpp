// weft/rest/api.hpp — weft's HTTP API apart from the HTTP server: requests in,
// responses out, over what the SM publishes (a Backend). The native API is under
// /api/v1; a facade of NVIDIA UFM's REST shapes under /ufmRest (HTTP Basic) and
// /ufmRestV3 (a token) serves the orchestrators that speak UFM (Kubernetes'
// ib-kubernetes, UFM's Slurm prolog and epilog, OpenStack's UFM ML2 client)
// unchanged. The route table is one list (api.cpp); openapi.json is made from it, so
// every route served is documented and every documented route is served. Every error
// is {"error": {"code": ..., "message": ...}} with its HTTP status.
//
//   Api api(backend, auth);
//   api.handle(req, [](Response r) { send(r); });   // may answer later (a partition change)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "weft/daemon/command.hpp"
#include "weft/daemon/events.hpp"
#include "weft/daemon/partitions.hpp"
#include "weft/rest/throttle.hpp"
#include "weft/result.hpp"
#include "weft/sm/snapshot.hpp"

namespace weft::rest {

struct Request {
  std::string method;                          // "GET", ...
  std::string path;                            // without the query, percent-decoded
  std::map<std::string, std::string> query;    // decoded
  std::map<std::string, std::string> headers;  // names lower-case
  std::string body;
  std::string source;  // the client's address ("127.0.0.1"); "" in process
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // A body shared with the response cache (then `body` is empty): sent without a copy.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;
  const std::string& text() const { return shared_body ? *shared_body : body; }
  // A Server-Sent Events stream: the server keeps the connection and writes events
  // from `sse_after` on (the body is not sent).
  bool sse = false;
  uint64_t sse_after = 0;
};

using Reply = std::function<void(Response)>;

// The errors every handler answers with, and their statuses.
Response error_response(int status, std::string_view code, std::string_view message);
// JSON text that never throws: bytes that are not UTF-8 (a device's NodeDescription, a
// path segment) become U+FFFD.
std::string json_text(const nlohmann::json& j);
Response json_response(int status, const nlohmann::json& j);

// What the API reads and asks of the SM. Thread-safe: handlers run on the server's
// threads; the SM answers commands on its own loop.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::shared_ptr<const sm::Published> published() const = 0;
  virtual std::shared_ptr<const daemon::PartitionView> partitions() const = 0;
  // A command to the SM (weft/daemon/command.hpp); its `done` may run on another thread.
  virtual void submit(daemon::Command c) = 0;
  virtual daemon::EventLog& events() = 0;
};

class Auth;
class Jobs;

enum class Role : uint8_t { kMonitor = 0, kOperator = 1, kAdmin = 2 };
const char* role_name(Role r);

// REST counters for /metrics: requests by route and status.
struct RouteStats;
// Answers of the cacheable GETs for the snapshot they were made from.
struct ResponseCache;

class Api {
 public:
  // `now`: the login throttle's clock (tests move it; empty: steady_clock).
  Api(Backend& b, Auth& auth, Jobs& jobs, LoginThrottle::Clock now = {});
  ~Api();
  // Answers `req`, now or later, exactly once.
  void handle(const Request& req, Reply reply);
  // The OpenAPI 3 document of every route.
  nlohmann::json openapi() const;
  // Every route as "METHOD /pattern", for tests.
  std::vector<std::string> routes() const;

  struct Route;

 private:
  Backend& b_;
  Auth& auth_;
  Jobs& jobs_;
  std::vector<Route> routes_;
  std::unique_ptr<RouteStats> stats_;
  std::unique_ptr<ResponseCache> cache_;
  std::unique_ptr<LoginThrottle> throttle_;
};

}  // namespace weft::rest
