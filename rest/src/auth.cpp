#include "weft/rest/auth.hpp"

#include <crypt.h>
#include <openssl/evp.h>
#include <strings.h>
#include <sys/random.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "weft/durable_file.hpp"
#include "weft/log.hpp"
#include "weft/text_file.hpp"

namespace weft::rest {

namespace {

constexpr auto kVerifiedFor = std::chrono::minutes(5);
constexpr size_t kMaxVerified = 4096;

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::string> random_bytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return fail(Errc::kIo, std::string("getrandom: ") + std::strerror(errno));
    }
    got += size_t(r);
  }
  return out;
}

std::string hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) fmt::format_to(std::back_inserter(out), "{:02x}", c);
  return out;
}

// Base64 of RFC 4648, for Basic credentials; nullopt on bad input.
std::optional<std::string> base64_decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const int v = val(in[i]);
    if (v < 0) return std::nullopt;
    acc = acc << 6 | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=') return std::nullopt;
  return out;
}

bool equal_ct(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::optional<Role> parse_role(std::string_view s) {
  if (s == "admin") return Role::kAdmin;
  if (s == "operator") return Role::kOperator;
  if (s == "monitor") return Role::kMonitor;
  return std::nullopt;
}

nlohmann::json token_json(const std::string& hash, const TokenInfo& t) {
  return {{"sha256", hash},           {"id", t.id},
          {"user", t.user},           {"role", role_name(t.role)},
          {"created_s", t.created_s}, {"expires_s", t.expires_s},
          {"revoked", t.revoked}};
}

}  // namespace

const char* role_name(Role r) {
  switch (r) {
    case Role::kAdmin:
      return "admin";
    case Role::kOperator:
      return "operator";
    case Role::kMonitor:
      return "monitor";
  }
  return "monitor";
}

std::string sha256_hex(std::string_view s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr);
  return hex(std::string_view(reinterpret_cast<const char*>(md), len));
}

Result<std::vector<Auth::User>> Auth::parse_users(std::string_view text,
                                                  const std::string& source) {
  std::vector<User> out;
  std::istringstream in{std::string(text)};
  std::string line, errors;
  int no = 0;
  auto err = [&](const std::string& what) {
    errors += (errors.empty() ? "" : "\n") + source + ":" + std::to_string(no) + ": " + what;
  };
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    // name:hash:role; a crypt hash has no ':' of its own.
    const auto a = line.find(':'), b = line.rfind(':');
    if (a == std::string::npos || a == b) {
      err("expected name:hash:role");
      continue;
    }
    User u;
    u.name = line.substr(first, a - first);
    u.hash = line.substr(a + 1, b - a - 1);
    const std::string role = line.substr(b + 1);
    if (u.name.empty() || u.name.find_first_of(" \t") != std::string::npos) {
      err("a user name without blanks is expected first");
      continue;
    }
    if (u.hash.size() < 4 || u.hash[0] != '$') {
      err("the hash of " + u.name + " is not a crypt(3) string ($y$..., $6$...)");
      continue;
    }
    auto r = parse_role(role);
    if (!r) {
      err("role \"" + role + "\" of " + u.name + " is not admin, operator or monitor");
      continue;
    }
    u.role = *r;
    for (const auto& o : out)
      if (o.name == u.name) err("user " + u.name + " is listed twice");
    out.push_back(std::move(u));
  }
  if (!errors.empty()) return fail(Errc::kInvalidInput, errors);
  return out;
}

Result<std::string> Auth::hash_password(const std::string& password) {
  auto rnd = random_bytes(16);
  if (!rnd) return std::unexpected(rnd.error());
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$y$", 0, rnd->data(), int(rnd->size()), salt, sizeof salt))
    return fail(Errc::kInternal, std::string("crypt_gensalt: ") + std::strerror(errno));
  auto data = std::make_unique<crypt_data>();
  const char* h = crypt_r(password.c_str(), salt, data.get());
  if (!h || h[0] == '*') return fail(Errc::kInternal, "crypt_r could not hash the password");
  return std::string(h);
}

Result<std::unique_ptr<Auth>> Auth::open(AuthOptions o) {
  std::unique_ptr<Auth> a(new Auth());
  a->ttl_ = o.token_ttl;
  a->write_tokens_ = std::move(o.tokens.write);
  a->tokens_file_ = o.tokens.path.empty() ? o.state_dir + "/rest-tokens" : o.tokens.path;
  a->users_file_ = o.users_file.empty() ? o.state_dir + "/rest-users" : o.users_file;
  std::error_code ec;
  if (o.users_file.empty() && !std::filesystem::exists(a->users_file_, ec)) {
    // A first start: an admin with a random password, both files readable by root only.
    auto rnd = random_bytes(18);
    if (!rnd) return std::unexpected(rnd.error());
    std::string pass;
    static const char kAlphabet[] =
        "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";  // no 0/O, 1/l/I
    for (unsigned char c : *rnd) pass += kAlphabet[c % (sizeof kAlphabet - 1)];
    auto h = hash_password(pass);
    if (!h) return std::unexpected(h.error());
    a->generated_ = o.state_dir + "/rest-admin-password";
    if (auto r = write_file_durably(a->generated_, "admin:" + pass + "\n", 0600); !r)
      return std::unexpected(r.error());
    if (auto r = write_file_durably(
            a->users_file_,
            "# weft REST users: name:crypt-hash:role (admin, operator or monitor).\n"
            "# Made at the first start; the admin's password is in rest-admin-password.\n"
            "admin:" +
                *h + ":admin\n",
            0600);
        !r)
      return std::unexpected(r.error());
    WEFT_LOG(Warn, "REST-0002") << "no REST users file: made " << a->users_file_
                                << " with the user admin; its password is in " << a->generated_;
  } else if (o.users_file.empty()) {
    if (std::filesystem::exists(o.state_dir + "/rest-admin-password", ec))
      a->generated_ = o.state_dir + "/rest-admin-password";
  }
  auto text = read_text_file(a->users_file_);
  if (!text) return fail(Errc::kIo, "rest_users_file: " + text.error().message);
  auto users = parse_users(*text, a->users_file_);
  if (!users) return std::unexpected(users.error());
  if (users->empty()) return fail(Errc::kInvalidInput, a->users_file_ + ": no users");
  a->users_ = std::move(*users);
  auto tokens = read_tokens(a->tokens_file_);
  if (!tokens) return std::unexpected(tokens.error());
  a->tokens_ = std::move(*tokens);
  return a;
}

Result<std::map<std::string, TokenInfo>> Auth::read_tokens(const std::string& path) {
  std::map<std::string, TokenInfo> out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  auto t = read_text_file(path);
  if (!t) return std::unexpected(t.error());
  std::istringstream in(*t);
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      TokenInfo ti;
      ti.id = j.at("id").get<std::string>();
      ti.user = j.at("user").get<std::string>();
      ti.role = parse_role(j.at("role").get<std::string>()).value_or(Role::kMonitor);
      ti.created_s = j.at("created_s").get<int64_t>();
      ti.expires_s = j.at("expires_s").get<int64_t>();
      ti.revoked = j.at("revoked").get<bool>();
      out[j.at("sha256").get<std::string>()] = ti;
    } catch (const std::exception& e) {
      return fail(Errc::kInvalidInput,
                  path + ":" + std::to_string(no) + ": not a token record: " + e.what());
    }
  }
  return out;
}

Result<size_t> Auth::reload_tokens() {
  auto tokens = read_tokens(tokens_file_);
  if (!tokens) return std::unexpected(tokens.error());
  std::lock_guard lk(mu_);
  tokens_ = std::move(*tokens);
  verified_.clear();  // a token revoked elsewhere is not taken from the cache
  return tokens_.size();
}

Result<void> Auth::save_tokens() {
  std::string text;
  const int64_t now = now_s();
  for (const auto& [hash, t] : tokens_)
    if (t.expires_s > now) text += token_json(hash, t).dump() + "\n";  // expired ones go
  if (write_tokens_) return write_tokens_(text);
  return write_file_durably(tokens_file_, text, 0600);
}

std::optional<Identity> Auth::password(std::string_view user, std::string_view pass,
                                       const std::string& cache_key) {
  std::optional<User> u;  // a copy: SIGHUP may replace users_ meanwhile
  uint64_t gen = 0;
  {
    std::lock_guard lk(mu_);
    gen = users_generation_;
    for (const auto& x : users_)
      if (x.name == user) u = x;
    if (!u) return std::nullopt;
  }
  // crypt_r outside the lock: it takes milliseconds.
  auto data = std::make_unique<crypt_data>();
  const char* h = crypt_r(std::string(pass).c_str(), u->hash.c_str(), data.get());
  if (!h || !equal_ct(h, u->hash)) return std::nullopt;
  Identity who{u->name, u->role, ""};
  std::lock_guard lk(mu_);
  if (users_generation_ != gen) return who;  // checked against a file since replaced
  if (verified_.size() >= kMaxVerified) verified_.clear();
  verified_[cache_key] = {who, std::chrono::steady_clock::now() + kVerifiedFor};
  return who;
}

std::optional<Identity> Auth::token(std::string_view tok) {
  const std::string h = sha256_hex(tok);
  std::lock_guard lk(mu_);
  auto it = tokens_.find(h);
  if (it == tokens_.end() || it->second.revoked || it->second.expires_s <= now_s())
    return std::nullopt;
  // A token is worth no more than its user now: gone from the users file, nothing; a
  // lower role since, that role.
  auto u = std::find_if(users_.begin(), users_.end(),
                        [&](const User& x) { return x.name == it->second.user; });
  if (u == users_.end()) return std::nullopt;
  return Identity{it->second.user, std::min(it->second.role, u->role), it->second.id};
}

Result<size_t> Auth::reload_users() {
  auto text = read_text_file(users_file_);
  if (!text) return fail(Errc::kIo, "rest_users_file: " + text.error().message);
  auto users = parse_users(*text, users_file_);
  if (!users) return std::unexpected(users.error());
  if (users->empty()) return fail(Errc::kInvalidInput, users_file_ + ": no users");
  std::lock_guard lk(mu_);
  users_ = std::move(*users);
  ++users_generation_;
  verified_.clear();  // a changed password or role counts from now
  return users_.size();
}

std::optional<Identity> Auth::check(std::string_view authz, Scheme scheme) {
  auto word = [&](std::string_view w) {
    return authz.size() > w.size() && strncasecmp(authz.data(), w.data(), w.size()) == 0 &&
           authz[w.size()] == ' ';
  };
  if (word("Bearer") && scheme == Scheme::kNative) {
    std::string_view t = authz.substr(7);
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    return token(t);
  }
  if (!word("Basic")) return std::nullopt;
  std::string_view cred = authz.substr(6);
  while (!cred.empty() && cred.front() == ' ') cred.remove_prefix(1);
  while (!cred.empty() && cred.back() == ' ') cred.remove_suffix(1);
  if (scheme == Scheme::kUfmToken) return token(cred);  // UFM: "Basic <token>"
  const std::string key = sha256_hex(authz);
  {
    std::lock_guard lk(mu_);
    if (auto it = verified_.find(key); it != verified_.end()) {
      if (it->second.until > std::chrono::steady_clock::now()) return it->second.who;
      verified_.erase(it);
    }
  }
  auto plain = base64_decode(cred);
  if (!plain) return std::nullopt;
  const auto colon = plain->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return password(std::string_view(*plain).substr(0, colon),
                  std::string_view(*plain).substr(colon + 1), key);
}

Result<std::pair<std::string, TokenInfo>> Auth::issue_token(
    const Identity& who, std::optional<std::chrono::seconds> ttl) {
  auto rnd = random_bytes(32);
  if (!rnd) return std::unexpected(rnd.error());
  const std::string tok = hex(*rnd);
  const std::string h = sha256_hex(tok);
  TokenInfo t;
  t.id = h.substr(0, 16);
  t.user = who.user;
  t.role = who.role;
  t.created_s = now_s();
  t.expires_s = t.created_s + (ttl ? ttl->count() : ttl_.count());
  std::lock_guard lk(mu_);
  tokens_[h] = t;
  if (auto r = save_tokens(); !r) {
    tokens_.erase(h);
    return std::unexpected(r.error());
  }
  return std::pair{tok, t};
}

Result<void> Auth::revoke(std::string_view token_or_id, const Identity& by) {
  const std::string h = sha256_hex(token_or_id);
  std::lock_guard lk(mu_);
  auto it = tokens_.find(h);
  if (it == tokens_.end())
    it = std::find_if(tokens_.begin(), tokens_.end(),
                      [&](const auto& e) { return e.second.id == token_or_id; });
  if (it == tokens_.end()) return fail(Errc::kInvalidInput, "no such token");
  if (by.role != Role::kAdmin && it->second.user != by.user)
    return fail(Errc::kUnsupported, "only an admin revokes another user's token");
  if (it->second.revoked) return {};
  it->second.revoked = true;
  if (auto r = save_tokens(); !r) {
    it->second.revoked = false;
    return std::unexpected(r.error());
  }
  return {};
}

std::vector<TokenInfo> Auth::tokens() const {
  std::lock_guard lk(mu_);
  std::vector<TokenInfo> out;
  for (const auto& [h, t] : tokens_) out.push_back(t);
  return out;
}

}  // namespace weft::rest
