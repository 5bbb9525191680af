#include "weft/rest/server.hpp"

#include <restinio/all.hpp>
#include <restinio/tls.hpp>

#include <fmt/format.h>
#include <atomic>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "jobs.hpp"
#include "thread_priority.hpp"
#include "weft/log.hpp"

namespace weft::rest {

namespace {

// Connections open at once, in all (rest_max_connections) and per client address
// (rest_max_connections_per_source): counted as RESTinio's IP blocker lets each in and as
// its closed notice comes (every connection let in gets one: a normal close, an error, a
// time-out, a failed TLS handshake); one more past either cap is closed as it is
// accepted, before anything is read. Slow clients from one address then hold a few
// connections and leave the rest to others. A TLS client that never finishes its
// handshake holds its connection until it goes (RESTinio 0.6.16 starts its time limits
// after the handshake): the per-address cap bounds what one address holds that way.
// RESTinio's own connection count limiter is
// off: in 0.6.16 every connection an IP blocker denies keeps one of its accept slots, and
// after max_parallel_connections denials it accepts nothing more. (A connection let in
// whose handler could not be made, an allocation failure, would keep its count: RESTinio
// gives no notice of it.)
class ConnectionLimiter {
 public:
  ConnectionLimiter(size_t total, size_t per_source) : total_(total), per_source_(per_source) {}
  restinio::ip_blocker::inspection_result_t inspect(
      const restinio::ip_blocker::incoming_info_t& in) noexcept {
    const auto a = in.remote_endpoint().address();
    std::lock_guard lk(mu_);
    size_t& open = open_[a];
    if (open < per_source_ && all_ < total_) {
      if (!conns_.insert(in.remote_endpoint()).second) {  // its endpoint is open already
        if (open == 0) open_.erase(a);
        return restinio::ip_blocker::deny();
      }
      ++open;
      ++all_;
      return restinio::ip_blocker::allow();
    }
    if (open == 0) open_.erase(a);
    const bool whole = all_ >= total_;
    if (!said_.count(whole ? restinio::asio_ns::ip::address{} : a)) {
      said_.insert(whole ? restinio::asio_ns::ip::address{} : a);
      if (whole)
        WEFT_LOG(Warn, "REST-0020")
            << all_ << " REST connections open (rest_max_connections): more are closed as they "
            << "come until some close";
      else
        WEFT_LOG(Warn, "REST-0020")
            << a.to_string() << " has " << per_source_
            << " REST connections open (rest_max_connections_per_source): more from it are "
               "closed as they come until some close";
    }
    return restinio::ip_blocker::deny();
  }
  void state_changed(const restinio::connection_state::notice_t& n) noexcept {
    if (!restinio::holds_alternative<restinio::connection_state::closed_t>(n.cause())) return;
    const auto a = n.remote_endpoint().address();
    std::lock_guard lk(mu_);
    // By the connection's own endpoint: a second notice for it changes nothing.
    if (conns_.erase(n.remote_endpoint()) == 0) return;
    if (auto it = open_.find(a); it != open_.end() && --it->second == 0) {
      open_.erase(it);
      said_.erase(a);  // said again only once it has none open
    }
    if (--all_ == 0) said_.erase(restinio::asio_ns::ip::address{});
  }

 private:
  const size_t total_, per_source_;
  std::mutex mu_;
  size_t all_ = 0;
  std::map<restinio::asio_ns::ip::address, size_t> open_;
  std::set<restinio::endpoint_t> conns_;  // the connections let in, by remote endpoint
  // REST-0020 said while at a cap: per address, and the default address for the total.
  std::set<restinio::asio_ns::ip::address> said_;
};

struct PlainTraits : public restinio::default_traits_t {
  using ip_blocker_t = ConnectionLimiter;
  using connection_state_listener_t = ConnectionLimiter;
};
struct TlsTraits : public restinio::default_tls_traits_t {
  using ip_blocker_t = ConnectionLimiter;
  using connection_state_listener_t = ConnectionLimiter;
};

// An io_context whose services can be shut down before it is destroyed. At stop, the
// handlers still queued (connections waiting to read) must go while the server is
// alive (each connection's limiter entry points into the acceptor), and the server
// must go while the context's services exist (its strands unlink from them):
// stop, join, shut_down(), destroy the server, then the context.
class ServerIo : public boost::asio::io_context {
 public:
  void shut_down() { shutdown(); }
};

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded; `plus` turns '+' into a space (query strings). Bad escapes stay as
// they are: a route will not match them, and the 404 says what came.
std::string unescape(std::string_view s, bool plus) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int a = hexval(s[i + 1]), b = hexval(s[i + 2]);
      if (a >= 0 && b >= 0) {
        out += char(a << 4 | b);
        i += 2;
        continue;
      }
    }
    out += plus && s[i] == '+' ? ' ' : s[i];
  }
  return out;
}

std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i <= q.size() && !q.empty()) {
    size_t amp = q.find('&', i);
    if (amp == std::string_view::npos) amp = q.size();
    const std::string_view item = q.substr(i, amp - i);
    if (!item.empty()) {
      const size_t eq = item.find('=');
      out[unescape(item.substr(0, eq), true)] =
          eq == std::string_view::npos ? std::string() : unescape(item.substr(eq + 1), true);
    }
    if (amp == q.size()) break;
    i = amp + 1;
  }
  return out;
}

std::string status_reason(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
  }
  return "Status";
}

}  // namespace

// Open Server-Sent Event streams, fed by one thread from the event log.
class SsePusher {
 public:
  using Send = std::function<void(std::string text, std::function<void(bool ok)> written)>;
  using Close = std::function<void()>;
  explicit SsePusher(daemon::EventLog& log)
      : log_(log), thread_([this](std::stop_token st) { run(st); }) {}
  ~SsePusher() { stop(); }
  void stop() {
    thread_.request_stop();
    log_.stop();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lk(mu_);
    for (auto& s : streams_) s->close();
    streams_.clear();
  }
  bool add(uint64_t after, Send send, Close close) {
    std::lock_guard lk(mu_);
    if (streams_.size() >= kMaxStreams) return false;
    auto s = std::make_shared<Stream>();
    s->after = after;
    s->send = std::move(send);
    s->close = std::move(close);
    streams_.push_back(std::move(s));
    return true;
  }

 private:
  static constexpr size_t kMaxStreams = 64;
  struct Stream {
    uint64_t after = 0;
    Send send;
    Close close;
    std::atomic<bool> dead{false};
    std::atomic<int> in_flight{0};
  };
  void run(std::stop_token st) {
    auto last_ping = std::chrono::steady_clock::now();
    while (!st.stop_requested()) {
      uint64_t low = UINT64_MAX;
      {
        std::lock_guard lk(mu_);
        for (auto& s : streams_) low = std::min(low, s->after);
      }
      log_.wait_after(low == UINT64_MAX ? log_.last_id() : low, std::chrono::milliseconds(500));
      if (st.stop_requested()) return;
      const bool ping = std::chrono::steady_clock::now() - last_ping > std::chrono::seconds(15);
      if (ping) last_ping = std::chrono::steady_clock::now();
      std::vector<std::shared_ptr<Stream>> now;
      {
        std::lock_guard lk(mu_);
        std::erase_if(streams_, [](const auto& s) {
          if (!s->dead) return false;
          s->close();
          return true;
        });
        now = streams_;
      }
      for (auto& s : now) {
        // A client that does not read its stream falls behind: it is dropped.
        if (s->in_flight > 256) {
          s->dead = true;
          continue;
        }
        auto page = log_.since(s->after, 200);
        std::string text;
        if (page.lost) text += "event: lost\ndata: {\"message\": \"events were dropped\"}\n\n";
        for (const auto& e : page.events)
          text +=
              fmt::format("id: {}\nevent: {}\ndata: {}\n\n", e.id, e.type, json_text(e.to_json()));
        if (!page.events.empty()) s->after = page.events.back().id;
        if (text.empty() && ping) text = ": keep-alive\n\n";
        if (text.empty()) continue;
        ++s->in_flight;
        s->send(std::move(text), [s](bool ok) {
          --s->in_flight;
          if (!ok) s->dead = true;
        });
      }
    }
  }
  daemon::EventLog& log_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Stream>> streams_;
  std::jthread thread_;
};

struct RestServer::Impl {
  // First, so destroyed last: the server (held by `stopper`) owns strands of it.
  ServerIo io;
  std::vector<std::thread> threads;
  RestOptions opts;
  Backend& backend;
  std::unique_ptr<Auth> auth;
  Jobs jobs;
  std::unique_ptr<Api> api;
  std::unique_ptr<SsePusher> sse;
  std::string url;
  std::function<void()> stopper;
  bool stopped = false;
  static constexpr int kNice = 5;  // nice levels below the SM's, for the HTTP threads

  Impl(RestOptions o, Backend& b) : opts(std::move(o)), backend(b) {}

  // One request through the Api, and its answer back through RESTinio.
  template <class Handle>
  restinio::request_handling_status_t handle(Handle req) {
    Request r;
    r.method = req->header().method().c_str();
    r.path = unescape(req->header().path(), false);
    r.query = parse_query(req->header().query());
    req->header().for_each_field([&](const restinio::http_header_field_t& f) {
      std::string name = f.name();
      for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      r.headers[name] = f.value();
    });
    r.body = req->body();
    r.source = req->remote_endpoint().address().to_string();
    const bool head = r.method == "HEAD";
    if (r.body.size() > opts.max_body) {
      send(req,
           error_response(413, "too_large",
                          fmt::format("the body has {} bytes; rest_max_body is {}", r.body.size(),
                                      opts.max_body)),
           head);
      return restinio::request_accepted();
    }
    auto once = std::make_shared<std::atomic<bool>>(false);
    api->handle(r, [this, req, once, head](Response resp) {
      if (once->exchange(true)) return;  // exactly one answer
      if (resp.sse)
        stream(req, resp.sse_after);
      else
        send(req, resp, head);
    });
    return restinio::request_accepted();
  }

  template <class Handle>
  void send(Handle req, const Response& resp, bool head) {
    auto out = req->create_response(restinio::http_status_line_t{
        restinio::http_status_code_t{static_cast<std::uint16_t>(resp.status)},
        status_reason(resp.status)});
    out.append_header(restinio::http_field::content_type, resp.content_type);
    out.append_header(restinio::http_field::cache_control, "no-store");
    for (const auto& [k, v] : resp.headers) out.append_header(k, v);
    if (!head) {
      if (resp.shared_body)
        out.set_body(resp.shared_body);
      else
        out.set_body(resp.body);
    }
    out.done();
  }

  template <class Handle>
  void stream(Handle req, uint64_t after) {
    using Builder = restinio::response_builder_t<restinio::chunked_output_t>;
    auto out =
        std::make_shared<Builder>(req->template create_response<restinio::chunked_output_t>());
    out->append_header(restinio::http_field::content_type, "text/event-stream");
    out->append_header(restinio::http_field::cache_control, "no-cache");
    out->flush();
    auto mu = std::make_shared<std::mutex>();
    const bool ok = sse->add(
        after,
        [out, mu](std::string text, std::function<void(bool)> written) {
          std::lock_guard lk(*mu);
          out->append_chunk(std::move(text));
          out->flush([written](const restinio::asio_ns::error_code& ec) { written(!ec); });
        },
        [out, mu] {
          std::lock_guard lk(*mu);
          try {
            out->done();
          } catch (...) {
          }
        });
    if (!ok) {
      out->append_chunk(
          std::string("event: error\ndata: {\"message\": \"too many event streams\"}\n\n"));
      out->done();
    }
  }

  template <class Traits>
  Result<void> run(const std::string& host, uint16_t port) {
    using Settings = restinio::server_settings_t<Traits>;
    Settings s;
    s.address(host)
        .port(port)
        .read_next_http_message_timelimit(opts.read_timeout)
        .write_http_response_timelimit(opts.timeout)
        .handle_request_timeout(opts.timeout)
        .incoming_http_msg_limits(restinio::incoming_http_msg_limits_t{}
                                      .max_url_size(16 * 1024)
                                      .max_field_name_size(1024)
                                      .max_field_value_size(16 * 1024)
                                      .max_field_count(100)
                                      .max_body_size(4 * opts.max_body))
        .request_handler([this](auto req) { return handle(std::move(req)); });
    auto limiter = std::make_shared<ConnectionLimiter>(opts.max_connections, opts.max_per_source);
    s.ip_blocker(limiter).connection_state_listener(limiter);
    if constexpr (std::is_same_v<Traits, TlsTraits>) {
      restinio::asio_ns::ssl::context ctx{restinio::asio_ns::ssl::context::tls_server};
      ctx.set_options(
          restinio::asio_ns::ssl::context::default_workarounds |
          restinio::asio_ns::ssl::context::no_sslv2 | restinio::asio_ns::ssl::context::no_sslv3 |
          restinio::asio_ns::ssl::context::no_tlsv1 | restinio::asio_ns::ssl::context::no_tlsv1_1);
      boost::system::error_code ec;
      ctx.use_certificate_chain_file(opts.tls_cert, ec);
      if (ec) return fail(Errc::kIo, "rest_tls_cert " + opts.tls_cert + ": " + ec.message());
      ctx.use_private_key_file(opts.tls_key, restinio::asio_ns::ssl::context::pem, ec);
      if (ec) return fail(Errc::kIo, "rest_tls_key " + opts.tls_key + ": " + ec.message());
      s.tls_context(std::move(ctx));
    }
    // Small answers go out at once (no Nagle wait for the last segment of a body).
    s.socket_options_setter([](restinio::socket_options_t& so) {
      so.set_option(restinio::asio_ns::ip::tcp::no_delay{true});
    });
    using Server = restinio::http_server_t<Traits>;
    auto srv = std::make_shared<Server>(restinio::external_io_context(io), std::move(s));
    // The server's threads run at a lower priority than the SM's loop: when the CPUs
    // are busy, sweeps and SA answers go first.
    for (size_t i = 0; i < opts.threads; ++i)
      threads.emplace_back([this] {
        lower_thread_priority(kNice);
        auto guard = boost::asio::make_work_guard(io);
        io.run();
      });
    std::promise<void> opened;
    srv->open_async([&opened] { opened.set_value(); },
                    [&opened](std::exception_ptr e) { opened.set_exception(e); });
    try {
      opened.get_future().get();
    } catch (const std::exception& e) {
      io.stop();
      for (auto& t : threads) t.join();
      threads.clear();
      io.shut_down();
      srv.reset();
      return fail(Errc::kIo, "rest_listen " + opts.listen + ": " + e.what());
    }
    stopper = [this, srv]() mutable {
      std::promise<void> closed;
      srv->close_async([&closed] { closed.set_value(); },
                       [&closed](std::exception_ptr) { closed.set_value(); });
      closed.get_future().wait();
      io.stop();
      for (auto& t : threads) t.join();
      threads.clear();
      io.shut_down();  // the queued connections go now, the server next, the context last
      srv.reset();
    };
    return {};
  }
};

Result<std::unique_ptr<RestServer>> RestServer::start(RestOptions o, Backend& b) {
  // ADDR:PORT, [v6]:PORT
  const std::string listen = o.listen;
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return fail(Errc::kInvalidInput, "rest_listen \"" + listen + "\": expected ADDR:PORT or off");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  const std::string ps = listen.substr(colon + 1);
  auto [pe, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
  if (ec != std::errc() || pe != ps.data() + ps.size() || port > 65535)
    return fail(Errc::kInvalidInput, "rest_listen \"" + listen + "\": bad port");
  if (o.tls_cert.empty() != o.tls_key.empty())
    return fail(Errc::kInvalidInput, "rest_tls_cert and rest_tls_key go together");
  auto impl = std::make_unique<Impl>(o, b);
  auto auth = Auth::open(o.auth);
  if (!auth) return std::unexpected(auth.error());
  impl->auth = std::move(*auth);
  impl->api = std::make_unique<Api>(b, *impl->auth, impl->jobs);
  impl->sse = std::make_unique<SsePusher>(b.events());
  const bool tls = !o.tls_cert.empty();
  // Port 0: find a free one first (RESTinio does not tell which it bound).
  if (port == 0) {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io);
    boost::system::error_code e;
    auto addr = boost::asio::ip::make_address(host, e);
    if (e) return fail(Errc::kInvalidInput, "rest_listen: bad address \"" + host + "\"");
    a.open(addr.is_v6() ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4());
    a.bind({addr, 0}, e);
    if (e) return fail(Errc::kIo, "rest_listen " + listen + ": " + e.message());
    port = a.local_endpoint().port();
  }
  auto r = tls ? impl->run<TlsTraits>(host, uint16_t(port))
               : impl->run<PlainTraits>(host, uint16_t(port));
  if (!r) return std::unexpected(r.error());
  const bool v6 = host.find(':') != std::string::npos;
  impl->url = fmt::format("{}://{}{}{}:{}", tls ? "https" : "http", v6 ? "[" : "", host,
                          v6 ? "]" : "", port);
  WEFT_LOG(Info, "REST-0001") << "REST API on " << impl->url
                              << " (users: " << impl->auth->users_file() << ")";
  return std::unique_ptr<RestServer>(new RestServer(std::move(impl)));
}

bool RestServer::could_not_listen(const Error& e) {
  // Both places start() binds say so this way (kIo, "rest_listen ADDR:PORT: why").
  return e.code == Errc::kIo && e.message.starts_with("rest_listen ");
}

RestServer::RestServer(std::unique_ptr<Impl> i) : impl_(std::move(i)) {}
RestServer::~RestServer() {
  stop();
}

void RestServer::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->sse->stop();
  if (impl_->stopper) impl_->stopper();
}

std::string RestServer::url() const {
  return impl_->url;
}
Auth& RestServer::auth() {
  return *impl_->auth;
}
Api& RestServer::api() {
  return *impl_->api;
}

}  // namespace weft::rest
