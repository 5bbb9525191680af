// weft/rest/server.hpp — the HTTP server (RESTinio, on Boost.Asio) in front of the
// Api: on threads of its own, reading what the SM publishes and posting commands to
// the SM's loop, never touching the SM's live state. Limits: body size (413 past
// rest_max_body; a body four times larger is cut off), header sizes, connection
// count, and time limits on reading a request, handling it and writing the answer.
// Server-Sent Events stream from one pusher thread. TLS when a certificate and key
// are given.
//
//   auto srv = RestServer::start(opts, backend);   // binds now, or fails saying why
//   srv->url();                                    // "http://127.0.0.1:7443"
//   srv->stop();
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "weft/rest/api.hpp"
#include "weft/rest/auth.hpp"

namespace weft::rest {

struct RestOptions {
  std::string listen = "127.0.0.1:7443";  // ADDR:PORT; port 0 picks a free one
  std::string tls_cert, tls_key;          // PEM files; both or neither
  AuthOptions auth;
  size_t max_body = 16u << 20;
  size_t max_connections = 256;
  size_t max_per_source = 32;                     // from one client address; more are closed
  std::chrono::milliseconds read_timeout{10000};  // reading a request; idle between two
  std::chrono::milliseconds timeout{30000};       // handling a request, writing its answer
  size_t threads = 2;
};

class RestServer {
 public:
  [[nodiscard]] static Result<std::unique_ptr<RestServer>> start(RestOptions o, Backend& b);
  // Whether `e` (from start) says the server could not listen where asked (the address
  // in use, or not this host's): worth trying again later. Any other error is the
  // options' (a malformed address, TLS files, the users file).
  static bool could_not_listen(const Error& e);
  ~RestServer();
  void stop();
  std::string url() const;
  Auth& auth();
  Api& api();

  struct Impl;

 private:
  explicit RestServer(std::unique_ptr<Impl> i);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::rest
