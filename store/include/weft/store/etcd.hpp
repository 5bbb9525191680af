// weft/store/etcd.hpp — a client of etcd's v3 API, spoken through its gRPC JSON gateway
// (etcd 3.4's /v3/... routes: JSON bodies, keys and values in base64, 64-bit numbers
// as strings) with libcurl and nlohmann/json; Debian has no C++ etcd client. The
// calls the state store needs: range, transactions (compare, then put or delete),
// leases (grant, keep alive, revoke) and a watch. Endpoints are tried in turn; TLS
// and authentication as etcdctl takes them (--cacert, --cert, --key, --user).
// Calls block up to the configured timeout: run them off the SM's loop.
//
//   auto cfg = weft::store::parse_etcd_url("etcd://10.0.0.5:2379,10.0.0.6:2379/weft/fabric-a");
//   weft::store::EtcdClient etcd(*cfg);
//   auto lease = etcd.grant(10);                                    // seconds
//   auto t = etcd.txn({EtcdCompare::lease_is(cfg->prefix + "master", *lease)},
//                     {EtcdOp::put(cfg->prefix + "state/notes", text)});
//   if (t && !t->succeeded) ...                                     // fenced: not ours
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "weft/result.hpp"

namespace weft::store {

struct EtcdConfig {
  std::vector<std::string> endpoints;  // "HOST:PORT", tried in this order
  std::string prefix;                  // every key weft uses starts with it: "/weft/fabric-a/"
  // TLS (https) when any of these is set, as etcdctl's --cacert, --cert, --key.
  std::string cacert, cert, key;
  // Authentication (etcdctl's --user NAME[:PASSWORD], --password): a token from
  // /v3/auth/authenticate, taken again when etcd says it expired.
  std::string user, password;
  std::chrono::milliseconds timeout{2000};
  std::chrono::milliseconds connect_timeout{500};
  bool tls() const { return !cacert.empty() || !cert.empty() || !key.empty(); }
};

// state_store's value: "etcd://HOST:PORT[,HOST:PORT...]/PREFIX" (the prefix gets a
// trailing '/'). Errors say what was expected.
[[nodiscard]] Result<EtcdConfig> parse_etcd_url(std::string_view url);

struct EtcdKv {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

// One condition of a transaction, on one key. A key that does not exist has every
// revision, its version and its lease 0, and no value.
struct EtcdCompare {
  enum class Target { kValue, kCreateRevision, kModRevision, kVersion, kLease };
  std::string key;
  Target target = Target::kValue;
  std::string value;   // kValue
  int64_t number = 0;  // the others
  static EtcdCompare value_is(std::string key, std::string v) {
    return {std::move(key), Target::kValue, std::move(v), 0};
  }
  static EtcdCompare absent(std::string key) {
    return {std::move(key), Target::kCreateRevision, {}, 0};
  }
  static EtcdCompare lease_is(std::string key, int64_t lease) {
    return {std::move(key), Target::kLease, {}, lease};
  }
};

struct EtcdOp {
  bool del = false;
  std::string key, value;
  int64_t lease = 0;  // put: attach to this lease (0: none)
  static EtcdOp put(std::string key, std::string value, int64_t lease = 0) {
    return {false, std::move(key), std::move(value), lease};
  }
  static EtcdOp remove(std::string key) { return {true, std::move(key), {}, 0}; }
};

struct EtcdTxn {
  bool succeeded = false;  // every compare held, and the ops were applied
  int64_t revision = 0;    // the store's revision after it
};

struct EtcdRange {
  std::vector<EtcdKv> kvs;
  int64_t revision = 0;  // the store's revision the answer is of
};

struct EtcdEvent {
  bool deleted = false;
  EtcdKv kv;  // key only, for a delete
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdConfig cfg);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;
  const EtcdConfig& config() const { return cfg_; }

  // One key, or every key that starts with `key` (prefix).
  [[nodiscard]] Result<EtcdRange> range(const std::string& key, bool prefix = false);
  [[nodiscard]] Result<EtcdTxn> txn(const std::vector<EtcdCompare>& when,
                                    const std::vector<EtcdOp>& then);
  [[nodiscard]] Result<int64_t> grant(int64_t ttl_s);
  // The lease's TTL after the renewal; 0 when the lease is gone (expired or revoked).
  [[nodiscard]] Result<int64_t> keepalive(int64_t lease);
  [[nodiscard]] Result<void> revoke(int64_t lease);
  // Watches every key under `prefix` from `from_revision` on, calling `on` with each
  // batch of events and the revision they bring the store to, until `stop` is asked
  // (returns ok) or the stream ends (returns why: etcd gone, the revision compacted).
  using WatchFn = std::function<void(const std::vector<EtcdEvent>&, int64_t revision)>;
  [[nodiscard]] Result<void> watch(const std::string& prefix, int64_t from_revision,
                                   const WatchFn& on, std::stop_token stop);

  // The endpoint the last call reached ("" before the first).
  std::string endpoint() const;

  // For tests and the parsers: base64 as the gateway writes it.
  static std::string b64(std::string_view raw);
  [[nodiscard]] static Result<std::string> unb64(std::string_view text);

 private:
  struct Http;
  // POSTs `body` to /v3/PATH on the endpoints in turn; the parsed answer, or
  // kUnreachable when none answered, kBadReply (etcd's own error) otherwise.
  Result<std::string> call(const std::string& path, const std::string& body);
  Result<std::string> call_once(const std::string& path, const std::string& body);
  Result<void> authenticate();

  EtcdConfig cfg_;
  mutable std::mutex mu_;  // the unary handle, the token and the current endpoint
  std::unique_ptr<Http> http_;
  size_t current_ = 0;
  std::string token_;
  std::string reached_;
};

}  // namespace weft::store
