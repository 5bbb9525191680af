// weft/rest/auth.hpp — who may call the REST API. Users come from a file of
// `name:hash:role` lines, the hashes crypt(3) strings ($y$ yescrypt, $6$ SHA-512, as
// mkpasswd or `openssl passwd -6` write them), checked with libcrypt's crypt_r. Roles:
// admin (everything), operator (partitions, sweeps, what-ifs) and monitor (reading).
// Tokens are 256 random bits (getrandom), kept only as their SHA-256 in the state
// directory (written durably), with an expiry, and can be revoked. With no users file
// weft makes one in the state directory (mode 0600) with an admin whose random
// password goes, beside it, into rest-admin-password (mode 0600).
//
//   auto auth = Auth::open({.users_file = "", .state_dir = "/var/lib/weft"});
//   auto who = (*auth)->check(req.header("authorization"), Auth::Scheme::kBasicPassword);
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weft/rest/api.hpp"
#include "weft/result.hpp"

namespace weft::rest {

// REST's documents in the SM's state store, by name and file mode: the API tokens (their
// hashes), shared with standbys through etcd. Whoever makes the store lists them there.
struct Document {
  std::string name;
  unsigned mode = 0600;
};
inline std::vector<Document> state_documents() {
  return {{"rest-tokens", 0600}};
}

// Where the tokens live: the file they are read from, and how a new set is written.
// `write` null: written durably to `path` (the state directory's own file). The daemon
// gives a writer through its state store (shared with standbys, fenced in etcd), with
// the store's local copy as `path`.
struct TokenFile {
  std::string path;  // empty: STATE_DIR/rest-tokens
  std::function<Result<void>(const std::string& text)> write;
};

struct Identity {
  std::string user;
  Role role = Role::kMonitor;
  std::string token_id;  // set when a token authenticated the request
};

struct AuthOptions {
  std::string users_file;  // empty: STATE_DIR/rest-users (made when missing)
  std::string state_dir;
  TokenFile tokens{};
  std::chrono::seconds token_ttl{std::chrono::hours(24 * 7)};
};

struct TokenInfo {
  std::string id;  // the first 16 hex digits of the token's SHA-256
  std::string user;
  Role role = Role::kMonitor;
  int64_t created_s = 0, expires_s = 0;
  bool revoked = false;
};

class Auth {
 public:
  [[nodiscard]] static Result<std::unique_ptr<Auth>> open(AuthOptions o);
  // How a route takes its credentials: UFM's /ufmRest is Basic user:password, its
  // /ufmRestV3 is "Basic <token>"; the native API takes Basic user:password or
  // "Bearer <token>".
  enum class Scheme { kUfmPassword, kUfmToken, kNative };
  std::optional<Identity> check(std::string_view authorization, Scheme scheme);
  // A new token for `who` (its role at most theirs): the token itself, shown once.
  [[nodiscard]] Result<std::pair<std::string, TokenInfo>> issue_token(
      const Identity& who, std::optional<std::chrono::seconds> ttl = std::nullopt);
  // Revokes a token named by itself or its id; an admin may revoke anyone's.
  [[nodiscard]] Result<void> revoke(std::string_view token_or_id, const Identity& by);
  std::vector<TokenInfo> tokens() const;
  // Reads the users file again (SIGHUP): on success the users in it are the only ones,
  // with the roles it gives, tokens included; on an error the users stay as they were.
  [[nodiscard]] Result<size_t> reload_users();
  // Reads the tokens again (another master's, from the state store): how many.
  [[nodiscard]] Result<size_t> reload_tokens();
  const std::string& users_file() const { return users_file_; }
  // Where the generated admin password is, when weft made the users file.
  const std::string& generated_password_file() const { return generated_; }

  // For tests and the users-file checks: "name:hash:role" lines.
  struct User {
    std::string name, hash;
    Role role;
  };
  [[nodiscard]] static Result<std::vector<User>> parse_users(std::string_view text,
                                                             const std::string& source);
  // A crypt(3) hash of `password` with a fresh yescrypt salt.
  [[nodiscard]] static Result<std::string> hash_password(const std::string& password);

 private:
  Auth() = default;
  Result<void> save_tokens();
  static Result<std::map<std::string, TokenInfo>> read_tokens(const std::string& path);
  std::optional<Identity> password(std::string_view user, std::string_view pass,
                                   const std::string& cache_key);
  std::optional<Identity> token(std::string_view tok);

  std::string users_file_, tokens_file_, generated_;
  std::function<Result<void>(const std::string&)> write_tokens_;
  std::chrono::seconds ttl_{0};
  mutable std::mutex mu_;
  std::vector<User> users_;
  uint64_t users_generation_ = 0;
  // SHA-256 (hex) of a token -> what it is.
  std::map<std::string, TokenInfo> tokens_;
  // A verified Authorization header's SHA-256 -> who, for a while: crypt_r costs
  // milliseconds by design, and a client sends the same header each request.
  struct Cached {
    Identity who;
    std::chrono::steady_clock::time_point until;
  };
  std::unordered_map<std::string, Cached> verified_;
};

// Hex SHA-256 of `s` (OpenSSL's EVP).
std::string sha256_hex(std::string_view s);

}  // namespace weft::rest
