// The HTTP server on a loopback port: framing, keep-alive, percent-decoding, limits,
// time limits, event streams, and thousands of malformed requests, after which it
// still answers.
#include <gtest/gtest.h>

#include <cerrno>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <random>

#include "../fuzz.hpp"
#include "rest_fixture.hpp"
#include "weft/rest/server.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

// One TCP connection to 127.0.0.1:port with receive and send timeouts, from `from` (a
// loopback address: 127.0.0.1 when 0).
class Conn {
 public:
  explicit Conn(uint16_t port, int timeout_ms = 3000, uint32_t from = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (from) {
      sockaddr_in b{};
      b.sin_family = AF_INET;
      b.sin_addr.s_addr = htonl(from);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0) return;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return ok_; }
  bool send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += size_t(n);
    }
    return true;
  }
  // Reads until `done(buffer)` or the peer closes or the timeout passes.
  std::string read_until(const std::function<bool(const std::string&)>& done) {
    char buf[65536];
    while (!done(in_)) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = n == 0 || errno == ECONNRESET;  // closed by the server (a reset: unread data)
        break;
      }
      in_.append(buf, size_t(n));
    }
    return in_;
  }
  bool closed() const { return closed_; }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  struct Reply {
    int status = 0;
    std::string head, body;
  };
  // One response (Content-Length framed); consumes it from the buffer.
  Reply response() {
    Reply r;
    read_until([](const std::string& s) {
      const auto h = s.find("\r\n\r\n");
      if (h == std::string::npos) return false;
      const auto cl = s.find("Content-Length: ");
      if (cl == std::string::npos || cl > h) return true;
      return s.size() >= h + 4 + std::stoul(s.substr(cl + 16));
    });
    const auto h = in_.find("\r\n\r\n");
    if (h == std::string::npos || in_.rfind("HTTP/1.1 ", 0) != 0) return r;
    r.status = std::stoi(in_.substr(9, 3));
    r.head = in_.substr(0, h);
    size_t len = 0;
    if (auto cl = r.head.find("Content-Length: "); cl != std::string::npos)
      len = std::stoul(r.head.substr(cl + 16));
    r.body = in_.substr(h + 4, len);
    in_.erase(0, h + 4 + len);
    return r;
  }

 private:
  int fd_ = -1;
  bool ok_ = false, closed_ = false;
  std::string in_;
};

std::string get(const std::string& target, const std::string& authz = "",
                const std::string& extra = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
         (authz.empty() ? "" : "Authorization: " + authz + "\r\n") + extra + "\r\n";
}

std::string with_body(const std::string& method, const std::string& target, const std::string& body,
                      const std::string& authz) {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + authz +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

struct ServerRig {
  explicit ServerRig(size_t max_body = 4096,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(1500),
                     size_t per_source = 32, std::chrono::milliseconds read_timeout = {}) {
    rest::RestOptions o;
    o.listen = "127.0.0.1:0";
    o.auth = {.users_file = rig.users_file, .state_dir = rig.dir.path()};
    o.max_body = max_body;
    o.max_connections = 32;
    o.max_per_source = per_source;
    o.timeout = timeout;
    o.read_timeout = read_timeout.count() ? read_timeout : timeout;
    auto s = rest::RestServer::start(std::move(o), *rig.backend);
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    server = std::move(*s);
    const std::string url = server->url();
    port = uint16_t(std::stoi(url.substr(url.rfind(':') + 1)));
  }
  RestRig rig;
  std::unique_ptr<rest::RestServer> server;
  uint16_t port = 0;
  const std::string admin = basic("admin", "adminpw");
  const std::string op = basic("op", "oppw");
};

}  // namespace

TEST(RestServer, KeepAliveHeadAndPercentDecoding) {
  ServerRig s;
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send(get("/healthz") + get("/api/v1/sm", s.admin)));
  auto a = c.response();
  EXPECT_EQ(a.status, 200) << a.head;
  auto b = c.response();
  EXPECT_EQ(b.status, 200) << b.head;
  EXPECT_NE(b.head.find("Content-Type: application/json"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(b.body).at("state"), "MASTER");

  // HEAD: the headers of GET, no body.
  ASSERT_TRUE(
      c.send("HEAD /api/v1/nodes HTTP/1.1\r\nHost: x\r\nAuthorization: " + s.admin + "\r\n\r\n"));
  auto h =
      c.read_until([](const std::string& x) { return x.find("\r\n\r\n") != std::string::npos; });
  EXPECT_EQ(h.rfind("HTTP/1.1 200", 0), 0u) << h;

  // Slurm's epilog path with the hostlist's brackets raw and percent-encoded.
  Conn d(s.port);
  ASSERT_TRUE(d.send(with_body("POST", "/ufmRest/resources/pkeys/hosts",
                               R"({"hosts_names": "h0-[0-1]", "pkey": "0x77"})", s.op)));
  EXPECT_EQ(d.response().status, 200);
  ASSERT_TRUE(
      d.send("DELETE /ufmRest/resources/pkeys/0x77/hosts/h0-%5B0-1%5D HTTP/1.1\r\nHost: "
             "x\r\nAuthorization: " +
             s.op + "\r\n\r\n"));
  auto del = d.response();
  EXPECT_EQ(del.status, 200) << del.body;
  auto pk =
      nlohmann::json::parse(s.rig.op("GET", "/ufmRest/resources/pkeys/0x77?guids_data=1").body);
  EXPECT_TRUE(pk.at("guids").empty()) << pk.dump();
  // Query strings are decoded too: guids_data%3Dtrue is a key, not a flag.
  ASSERT_TRUE(d.send(get("/ufmRest/resources/pkeys/0x7fff?guids%5Fdata=true", s.op)));
  auto q = d.response();
  EXPECT_EQ(q.status, 200);
  EXPECT_TRUE(nlohmann::json::parse(q.body).contains("guids")) << q.body;
}

TEST(RestServer, LimitsAndTimeouts) {
  ServerRig s(1024, std::chrono::milliseconds(800));
  {
    Conn c(s.port);
    ASSERT_TRUE(c.send(with_body("POST", "/api/v1/partitions", std::string(2000, ' '), s.op)));
    auto r = c.response();
    EXPECT_EQ(r.status, 413) << r.head;
    EXPECT_EQ(nlohmann::json::parse(r.body).at("error").at("code"), "too_large");
  }
  {
    // Far past the limit: cut off, not buffered.
    Conn c(s.port);
    c.send("POST /api/v1/partitions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n" +
           std::string(64 * 1024, 'x'));
    auto r = c.response();
    EXPECT_TRUE(r.status == 413 || r.status == 400 || c.closed()) << r.head;
  }
  {
    // A request that never finishes is dropped after the read time limit (the server
    // closes it; the socket's own 20 s timeout would leave it open).
    Conn c(s.port, 20000);
    ASSERT_TRUE(c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
    c.read_until([](const std::string&) { return false; });
    EXPECT_TRUE(c.closed());
  }
  {
    // More connections than allowed: the extra ones are closed as they come; once the
    // first ones go, everyone is answered.
    std::vector<std::unique_ptr<Conn>> idle;
    for (int i = 0; i < 40; ++i) idle.push_back(std::make_unique<Conn>(s.port));
    idle.clear();
    Conn c(s.port);
    ASSERT_TRUE(c.send(get("/healthz")));
    EXPECT_EQ(c.response().status, 200);
  }
  // A header that is too long is refused, not buffered.
  Conn c(s.port);
  c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n");
  auto r = c.response();
  EXPECT_TRUE(r.status == 400 || r.status == 431 || c.closed()) << r.head;
}

// Issue 33, item 3: slow clients never starve the API. 40 connections from one address
// that send a header byte now and then (more than rest_max_connections, 32 here): the
// address keeps rest_max_connections_per_source (8) of them, the others are closed as
// they come, and another address is answered at once, the SM's state and health alike.
TEST(RestServer, SlowClientsFromOneAddressLeaveTheApiToOthers) {
  ServerRig s(4096, std::chrono::milliseconds(1500), 8, std::chrono::milliseconds(60000));
  const uint32_t slow_from = 0x7f000002;  // 127.0.0.2
  std::vector<std::unique_ptr<Conn>> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(std::make_unique<Conn>(s.port, 20000, slow_from));
    ASSERT_TRUE(slow.back()->ok()) << i;
    slow.back()->send("G");
  }
  // Another address is answered while they are open.
  for (int i = 0; i < 3; ++i) {
    Conn c(s.port, 20000);
    ASSERT_TRUE(c.send(get("/api/v1/sm", s.admin)));
    EXPECT_EQ(c.response().status, 200) << i;
    Conn h(s.port, 20000);
    ASSERT_TRUE(h.send(get("/healthz")));
    EXPECT_EQ(h.response().status, 200) << i;
  }
  // The server accepts in the order they connected: the 32 past the cap were closed
  // (read returns 0 long before the socket's 20 s timeout would end it) ...
  for (size_t i = 8; i < slow.size(); ++i) {
    slow[i]->read_until([](const std::string&) { return false; });
    EXPECT_TRUE(slow[i]->closed()) << i;
  }
  // ... and the first 8 are held: one finishes its request and is answered.
  ASSERT_TRUE(slow[0]->send("ET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(slow[0]->response().status, 200);
}

// The login throttle keys on the client's address as the socket gives it.
TEST(RestServer, FailedLoginsAreThrottledByTheClientsAddress) {
  ServerRig s;
  for (int i = 0; i < 6; ++i) {
    Conn c(s.port);
    ASSERT_TRUE(c.send(get("/api/v1/sm", basic("admin", "wrong"))));
    EXPECT_EQ(c.response().status, 401) << i;
  }
  Conn c(s.port);
  ASSERT_TRUE(c.send(get("/api/v1/sm", s.admin)));
  auto r = c.response();
  EXPECT_EQ(r.status, 429) << r.head;
  EXPECT_NE(r.head.find("Retry-After: "), std::string::npos) << r.head;
  EXPECT_NE(r.body.find("127.0.0.1"), std::string::npos) << r.body;
}

TEST(RestServer, PortInUseIsAClearError) {
  ServerRig s;
  rest::RestOptions o;
  o.listen = "127.0.0.1:" + std::to_string(s.port);
  o.auth = {.users_file = s.rig.users_file, .state_dir = s.rig.dir.path()};
  auto again = rest::RestServer::start(std::move(o), *s.rig.backend);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("rest_listen 127.0.0.1:" + std::to_string(s.port)),
            std::string::npos)
      << again.error().message;
  for (const char* bad : {"nohost", "127.0.0.1:99999", "127.0.0.1:x", ":80"}) {
    rest::RestOptions b;
    b.listen = bad;
    b.auth = {.users_file = s.rig.users_file, .state_dir = s.rig.dir.path()};
    auto r = rest::RestServer::start(std::move(b), *s.rig.backend);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("rest_listen"), std::string::npos) << r.error().message;
  }
}

TEST(RestServer, EventStream) {
  ServerRig s;
  const uint64_t first = s.rig.backend->events().append("before", {{"n", 1}});
  Conn c(s.port, 5000);
  ASSERT_TRUE(
      c.send(get("/api/v1/events", s.admin,
                 "Accept: text/event-stream\r\nLast-Event-ID: " + std::to_string(first) + "\r\n")));
  auto head =
      c.read_until([](const std::string& x) { return x.find("\r\n\r\n") != std::string::npos; });
  EXPECT_NE(head.find("text/event-stream"), std::string::npos) << head;
  s.rig.backend->events().append("link_down", {{"port", "leaf0/3"}});
  auto text = c.read_until(
      [](const std::string& x) { return x.find("event: link_down") != std::string::npos; });
  EXPECT_NE(text.find("event: link_down"), std::string::npos) << text;
  EXPECT_EQ(text.find("event: before"), std::string::npos) << "Last-Event-ID resumes after it";
  EXPECT_NE(text.find("leaf0/3"), std::string::npos);
  // The stream ends when the server stops, without hanging it.
  s.server->stop();
}

// Thousands of malformed requests, each on its own connection: each is answered with
// a 4xx or the connection closed, none with a 5xx; then the server still answers.
TEST(RestServer, FuzzedRequestsLeaveItServing) {
  ServerRig s(4096, std::chrono::milliseconds(300));
  const std::vector<std::string> seeds = {
      get("/api/v1/nodes?limit=2", s.admin),
      with_body(
          "POST", "/ufmRest/resources/pkeys",
          R"({"pkey": "0x0A12", "index0": true, "ip_over_ib": true, "membership": "full", "guids": ["0002c90400000001"]})",
          s.op),
      with_body("POST", "/ufmRest/resources/pkeys/hosts",
                R"({"hosts_names": "h0-[0-1]", "pkey": "0x1234"})", s.op),
      "DELETE /ufmRest/resources/pkeys/0x1234/hosts/h0-%5B0-1%5D HTTP/1.1\r\nHost: x\r\n"
      "Authorization: " +
          s.op + "\r\n\r\n",
      "POST /api/v1/partitions HTTP/1.1\r\nHost: x\r\nAuthorization: " + s.op +
          "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"pk\"\r\n0\r\n\r\n",
  };
  const std::string alphabet = "\r\n :/%?&=[]{}\"0123456789aAzZ\x00\x7f\xff-";
  std::mt19937 rng(7);
  int answered = 0, closed = 0;
  for (int i = 0; i < 1500; ++i) {
    Conn c(s.port, 2000);
    ASSERT_TRUE(c.ok()) << i;
    const std::string req = mutate(seeds[i % seeds.size()], alphabet, rng);
    c.send(req);
    c.shutdown_write();  // what is cut off ends here, not at the time limit
    auto r = c.response();
    if (r.status) {
      ++answered;
      ASSERT_LT(r.status, 500) << req << "\n-> " << r.head << "\n" << r.body;
    } else {
      ++closed;
    }
  }
  EXPECT_GT(answered, 300);
  // Still serving: health needs no credentials; the fuzzed ones were failed logins from
  // this address, so its right ones wait (429, Retry-After) and are answered all the same.
  Conn h(s.port);
  ASSERT_TRUE(h.send(get("/healthz", "")));
  EXPECT_EQ(h.response().status, 200);
  Conn c(s.port);
  ASSERT_TRUE(c.send(get("/api/v1/sm", s.admin)));
  const auto last = c.response();
  EXPECT_TRUE(last.status == 200 ||
              (last.status == 429 && last.head.find("Retry-After: ") != std::string::npos))
      << last.head;
  std::cerr << answered << " answered, " << closed << " closed or timed out\n";
}
