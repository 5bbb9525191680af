// etcd's v3 API through its JSON gateway (weft/store/etcd.hpp).
#include "weft/store/etcd.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace weft::store {

using nlohmann::json;

namespace {

void curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t append_body(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

// A 64-bit field as the gateway writes it (a string), or a plain number; 0 when absent.
int64_t i64(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return 0;
  const std::string& s = it->get_ref<const std::string&>();
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  return end && *end == 0 ? v : 0;
}

// The first key after every key that starts with `key` (etcd's range_end for a prefix).
std::string prefix_end(std::string key) {
  while (!key.empty()) {
    if (static_cast<unsigned char>(key.back()) < 0xff) {
      key.back() = static_cast<char>(static_cast<unsigned char>(key.back()) + 1);
      return key;
    }
    key.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Result<EtcdKv> kv_of(const json& j) {
  EtcdKv kv;
  if (!j.is_object()) return fail(Errc::kBadReply, "etcd: a key-value that is no object");
  auto key = EtcdClient::unb64(j.value("key", ""));
  auto value = EtcdClient::unb64(j.value("value", ""));
  if (!key || !value) return fail(Errc::kBadReply, "etcd: a key or value that is not base64");
  kv.key = std::move(*key);
  kv.value = std::move(*value);
  kv.create_revision = i64(j, "create_revision");
  kv.mod_revision = i64(j, "mod_revision");
  kv.version = i64(j, "version");
  kv.lease = i64(j, "lease");
  return kv;
}

Result<json> parse(const std::string& body, const std::string& where) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(Errc::kBadReply,
                where + ": the answer is not a JSON object: " + body.substr(0, 200));
  return j;
}

bool unavailable_message(const std::string& m) {
  // etcd up but unable to serve: try another member.
  for (const char* s : {"no leader", "timed out", "not capable", "unhealthy", "too many requests"})
    if (m.find(s) != std::string::npos) return true;
  return false;
}

// One POST of `body` to /v3/PATH at `ep` on `h`, as every call and the watch make it:
// JSON, the token when there is one, a connect timeout, no proxy from the environment,
// TLS as configured. The returned header list is the caller's to free after the call.
curl_slist* prepare(CURL* h, const EtcdConfig& cfg, const std::string& ep, const std::string& path,
                    const std::string& body, const std::string& token) {
  curl_easy_reset(h);
  const std::string url = (cfg.tls() ? "https://" : "http://") + ep + "/v3/" + path;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: " + token).c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());  // libcurl copies the URL
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(cfg.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  if (!cfg.cacert.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, cfg.cacert.c_str());
  if (!cfg.cert.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, cfg.cert.c_str());
  if (!cfg.key.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, cfg.key.c_str());
  return headers;
}

}  // namespace

struct EtcdClient::Http {
  CURL* h = nullptr;
  Http() : h(curl_easy_init()) {}
  ~Http() {
    if (h) curl_easy_cleanup(h);
  }
};

Result<EtcdConfig> parse_etcd_url(std::string_view url) {
  constexpr std::string_view scheme = "etcd://";
  const std::string expected =
      "expected etcd://HOST:PORT[,HOST:PORT...]/PREFIX, got \"" + std::string(url) + "\"";
  if (url.substr(0, scheme.size()) != scheme) return fail(Errc::kInvalidInput, expected);
  url.remove_prefix(scheme.size());
  const size_t slash = url.find('/');
  if (slash == std::string_view::npos || slash + 1 >= url.size())
    return fail(Errc::kInvalidInput, expected + " (no PREFIX)");
  EtcdConfig c;
  std::string_view hosts = url.substr(0, slash);
  while (true) {
    const size_t comma = hosts.find(',');
    std::string_view ep = hosts.substr(0, comma);
    const size_t colon = ep.rfind(':');
    if (ep.empty() || colon == std::string_view::npos || colon == 0 || colon + 1 == ep.size())
      return fail(Errc::kInvalidInput,
                  expected + " (\"" + std::string(ep) + "\" has no HOST:PORT)");
    const std::string port(ep.substr(colon + 1));
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end || p < 1 || p > 65535)
      return fail(Errc::kInvalidInput, expected + " (port \"" + port + "\")");
    c.endpoints.emplace_back(ep);
    if (comma == std::string_view::npos) break;
    hosts.remove_prefix(comma + 1);
  }
  if (c.endpoints.empty()) return fail(Errc::kInvalidInput, expected + " (no HOST:PORT)");
  c.prefix = std::string(url.substr(slash));
  if (c.prefix.back() != '/') c.prefix += '/';
  return c;
}

EtcdClient::EtcdClient(EtcdConfig cfg) : cfg_(std::move(cfg)) {
  curl_once();
  http_ = std::make_unique<Http>();
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::endpoint() const {
  std::lock_guard lk(mu_);
  return reached_;
}

std::string EtcdClient::b64(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(raw.data()),
                                static_cast<int>(raw.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

Result<std::string> EtcdClient::unb64(std::string_view text) {
  if (text.empty()) return std::string();
  if (text.size() % 4) return fail(Errc::kBadReply, "base64 of a length not a multiple of 4");
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return fail(Errc::kBadReply, "not base64");
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++pad;
  if (pad > 2) return fail(Errc::kBadReply, "not base64");
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

Result<std::string> EtcdClient::call_once(const std::string& path, const std::string& body) {
  const std::string& ep = cfg_.endpoints[current_];
  CURL* h = http_->h;
  if (!h) return fail(Errc::kInternal, "etcd: no curl handle");
  std::string out;
  curl_slist* headers =
      prepare(h, cfg_, ep, path, body, path == "auth/authenticate" ? std::string() : token_);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(cfg_.timeout.count()));
  const CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  const std::string where = "etcd at " + ep;
  if (rc != CURLE_OK) return fail(Errc::kUnreachable, where + ": " + curl_easy_strerror(rc));
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  reached_ = ep;
  if (status == 200) return out;
  // etcd's own error: {"error": "...", "code": N, "message": "..."}.
  std::string msg = out.substr(0, 300);
  json j = json::parse(out, nullptr, false);
  if (j.is_object()) msg = j.value("message", j.value("error", msg));
  if (status >= 500 && unavailable_message(msg))
    return fail(Errc::kUnreachable, where + ": " + msg + " (HTTP " + std::to_string(status) + ")");
  return fail(Errc::kBadReply, where + ": " + msg + " (HTTP " + std::to_string(status) + ")");
}

Result<void> EtcdClient::authenticate() {
  const std::string body = json{{"name", cfg_.user}, {"password", cfg_.password}}.dump();
  auto r = call_once("auth/authenticate", body);
  if (!r) return std::unexpected(r.error());
  auto j = parse(*r, "etcd authenticate");
  if (!j) return std::unexpected(j.error());
  token_ = j->value("token", "");
  if (token_.empty()) return fail(Errc::kBadReply, "etcd: authentication gave no token");
  return {};
}

Result<std::string> EtcdClient::call(const std::string& path, const std::string& body) {
  std::lock_guard lk(mu_);
  Error last{Errc::kUnreachable, "etcd: no endpoint"};
  for (size_t tried = 0; tried < cfg_.endpoints.size(); ++tried) {
    Result<std::string> r;
    if (!cfg_.user.empty() && token_.empty()) {
      if (auto a = authenticate(); !a) r = std::unexpected(a.error());
    }
    if (cfg_.user.empty() || !token_.empty()) {
      r = call_once(path, body);
      // A token that expired (etcd's simple tokens last 5 minutes): take a new one once.
      if (!r && !cfg_.user.empty() && r.error().message.find("token") != std::string::npos) {
        token_.clear();
        if (auto a = authenticate(); !a)
          r = std::unexpected(a.error());
        else
          r = call_once(path, body);
      }
    }
    if (r || r.error().code != Errc::kUnreachable) return r;
    last = r.error();
    current_ = (current_ + 1) % cfg_.endpoints.size();
    token_.clear();  // tokens are per member with simple tokens
  }
  return std::unexpected(last);
}

Result<EtcdRange> EtcdClient::range(const std::string& key, bool prefix) {
  json body = {{"key", b64(key)}};
  if (prefix) body["range_end"] = b64(prefix_end(key));
  auto r = call("kv/range", body.dump());
  if (!r) return std::unexpected(r.error());
  auto j = parse(*r, "etcd range");
  if (!j) return std::unexpected(j.error());
  EtcdRange out;
  out.revision = i64(j->value("header", json::object()), "revision");
  for (const auto& k : j->value("kvs", json::array())) {
    auto kv = kv_of(k);
    if (!kv) return std::unexpected(kv.error());
    out.kvs.push_back(std::move(*kv));
  }
  return out;
}

Result<EtcdTxn> EtcdClient::txn(const std::vector<EtcdCompare>& when,
                                const std::vector<EtcdOp>& then) {
  json compares = json::array(), ops = json::array();
  for (const auto& c : when) {
    json j = {{"key", b64(c.key)}, {"result", "EQUAL"}};
    switch (c.target) {
      case EtcdCompare::Target::kValue:
        j["target"] = "VALUE";
        j["value"] = b64(c.value);
        break;
      case EtcdCompare::Target::kCreateRevision:
        j["target"] = "CREATE";
        j["create_revision"] = std::to_string(c.number);
        break;
      case EtcdCompare::Target::kModRevision:
        j["target"] = "MOD";
        j["mod_revision"] = std::to_string(c.number);
        break;
      case EtcdCompare::Target::kVersion:
        j["target"] = "VERSION";
        j["version"] = std::to_string(c.number);
        break;
      case EtcdCompare::Target::kLease:
        j["target"] = "LEASE";
        j["lease"] = std::to_string(c.number);
        break;
    }
    compares.push_back(std::move(j));
  }
  for (const auto& o : then) {
    if (o.del) {
      ops.push_back({{"request_delete_range", {{"key", b64(o.key)}}}});
      continue;
    }
    json put = {{"key", b64(o.key)}, {"value", b64(o.value)}};
    if (o.lease) put["lease"] = std::to_string(o.lease);
    ops.push_back({{"request_put", std::move(put)}});
  }
  auto r = call("kv/txn", json{{"compare", compares}, {"success", ops}}.dump());
  if (!r) return std::unexpected(r.error());
  auto j = parse(*r, "etcd txn");
  if (!j) return std::unexpected(j.error());
  return EtcdTxn{j->value("succeeded", false), i64(j->value("header", json::object()), "revision")};
}

Result<int64_t> EtcdClient::grant(int64_t ttl_s) {
  auto r = call("lease/grant", json{{"TTL", std::to_string(ttl_s)}, {"ID", "0"}}.dump());
  if (!r) return std::unexpected(r.error());
  auto j = parse(*r, "etcd lease grant");
  if (!j) return std::unexpected(j.error());
  if (j->contains("error") && !(*j)["error"].get<std::string>().empty())
    return fail(Errc::kBadReply, "etcd lease grant: " + (*j)["error"].get<std::string>());
  const int64_t id = i64(*j, "ID");
  if (id == 0)
    return fail(Errc::kBadReply, "etcd lease grant: no lease ID in " + r->substr(0, 200));
  return id;
}

Result<int64_t> EtcdClient::keepalive(int64_t lease) {
  auto r = call("lease/keepalive", json{{"ID", std::to_string(lease)}}.dump());
  if (!r) return std::unexpected(r.error());
  auto j = parse(*r, "etcd lease keepalive");
  if (!j) return std::unexpected(j.error());
  if (j->contains("error"))
    return fail(Errc::kBadReply, "etcd lease keepalive: " + (*j)["error"].dump());
  return i64(j->value("result", json::object()), "TTL");
}

Result<void> EtcdClient::revoke(int64_t lease) {
  auto r = call("lease/revoke", json{{"ID", std::to_string(lease)}}.dump());
  if (!r) {
    // A lease already gone is what revoking wanted.
    if (r.error().message.find("not found") != std::string::npos) return {};
    return std::unexpected(r.error());
  }
  return {};
}

namespace {

struct WatchState {
  const EtcdClient::WatchFn* on = nullptr;
  std::stop_token stop;
  std::string buf;
  std::optional<Error> error;  // why the stream was given up
  bool created = false;
};

// One message of the stream: {"result": {...}} or {"error": {...}}.
void watch_message(WatchState& w, const std::string& line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    w.error = Error{Errc::kBadReply, "etcd watch: not JSON: " + line.substr(0, 200)};
    return;
  }
  if (j.contains("error")) {
    w.error = Error{Errc::kBadReply, "etcd watch: " + j["error"].dump().substr(0, 300)};
    return;
  }
  const json res = j.value("result", json::object());
  if (res.value("canceled", false)) {
    w.error = Error{Errc::kBadReply, "etcd watch canceled (" + res.value("cancel_reason", "") +
                                         "), compacted at revision " +
                                         std::to_string(i64(res, "compact_revision"))};
    return;
  }
  if (res.value("created", false)) w.created = true;
  std::vector<EtcdEvent> events;
  for (const auto& e : res.value("events", json::array())) {
    auto kv = kv_of(e.value("kv", json::object()));
    if (!kv) {
      w.error = kv.error();
      return;
    }
    events.push_back({e.value("type", "PUT") == "DELETE", std::move(*kv)});
  }
  const int64_t rev = i64(res.value("header", json::object()), "revision");
  if (!events.empty() || w.created) (*w.on)(events, rev);
}

size_t watch_body(char* p, size_t size, size_t n, void* ud) {
  auto& w = *static_cast<WatchState*>(ud);
  w.buf.append(p, size * n);
  try {
    for (size_t nl; !w.error && (nl = w.buf.find('\n')) != std::string::npos;) {
      const std::string line = w.buf.substr(0, nl);
      w.buf.erase(0, nl + 1);
      if (line.find_first_not_of(" \r\t") != std::string::npos) watch_message(w, line);
    }
  } catch (const std::exception& e) {
    w.error = Error{Errc::kInternal, std::string("etcd watch: ") + e.what()};
  }
  return w.error ? 0 : size * n;  // 0 ends the transfer
}

int watch_progress(void* ud, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<WatchState*>(ud)->stop.stop_requested() ? 1 : 0;
}

}  // namespace

Result<void> EtcdClient::watch(const std::string& prefix, int64_t from_revision, const WatchFn& on,
                               std::stop_token stop) {
  std::string ep, token;
  {
    std::lock_guard lk(mu_);
    if (!cfg_.user.empty() && token_.empty())
      if (auto a = authenticate(); !a) return a;
    ep = cfg_.endpoints[current_];
    token = token_;
  }
  json req = {{"key", b64(prefix)}, {"range_end", b64(prefix_end(prefix))}};
  if (from_revision > 0) req["start_revision"] = std::to_string(from_revision);
  const std::string body = json{{"create_request", req}}.dump();
  Http http;
  if (!http.h) return fail(Errc::kInternal, "etcd: no curl handle");
  WatchState w;
  w.on = &on;
  w.stop = stop;
  CURL* h = http.h;
  curl_slist* headers = prepare(h, cfg_, ep, "watch", body, token);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 2L);
  const CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  if (stop.stop_requested()) return {};
  if (w.error) return std::unexpected(*w.error);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (rc != CURLE_OK)
    return fail(Errc::kUnreachable, "etcd watch at " + ep + ": " + curl_easy_strerror(rc));
  if (status != 200)
    return fail(Errc::kBadReply, "etcd watch at " + ep + ": HTTP " + std::to_string(status));
  return fail(Errc::kUnreachable, "etcd watch at " + ep + ": the stream ended");
}

}  // namespace weft::store
