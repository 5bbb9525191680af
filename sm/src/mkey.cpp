// M_Keys: derivation (OpenSSL's HMAC), the key of each SMP, and the two state files.
#include "weft/sm/mkey.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cerrno>
#include <functional>
#include <sstream>

#include "weft/durable_file.hpp"
#include "weft/sm/documents.hpp"
#include "weft/text_file.hpp"

namespace weft::sm {

namespace {

void put_be64(unsigned char* out, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<unsigned char>(v & 0xff);
}

bool parse_u64(const std::string& s, uint64_t& v) {
  if (s.empty() || s.front() == '-') return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtoull(s.c_str(), &end, 0);
  return errno == 0 && *end == 0;
}

// "0xGUID:PORT", as OpenSM's neighbors file writes a port.
bool parse_end(const std::string& s, std::pair<uint64_t, uint8_t>& e) {
  auto colon = s.find(':');
  if (colon == std::string::npos) return false;
  uint64_t g = 0, p = 0;
  if (!parse_u64(s.substr(0, colon), g) || !parse_u64(s.substr(colon + 1), p)) return false;
  if (g == 0 || p > 254) return false;
  e = {g, static_cast<uint8_t>(p)};
  return true;
}

// Each record of `path` as two words, or a warning.
Result<std::vector<std::string>> read_pairs(
    const std::string& path,
    const std::function<std::string(const std::string&, const std::string&)>& take) {
  std::vector<std::string> warnings;
  auto r = for_each_state_line(path, [&](const std::string& line, const std::string& where) {
    std::istringstream ss(line);
    std::string a, b, extra;
    ss >> a;
    if (!(ss >> b) || (ss >> extra)) {
      warnings.push_back(where + "expected two fields, got \"" + line + "\"");
      return;
    }
    if (auto w = take(a, b); !w.empty()) warnings.push_back(where + w);
  });
  if (!r) return std::unexpected(r.error());
  return warnings;
}

std::string hex16(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uint64_t derive_m_key(uint64_t secret, Guid port) {
  unsigned char key[8], msg[8], mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  put_be64(key, secret);
  put_be64(msg, port.value);
  HMAC(EVP_sha256(), key, sizeof key, msg, sizeof msg, mac, &len);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | mac[i];
  return v ? v : 1;  // 0 would switch the port's protection off
}

uint64_t MKeyOptions::key_of(Guid port) const {
  if (!enabled()) return 0;
  return per_port ? derive_m_key(m_key, port) : m_key;
}

uint64_t MKeyBook::held(Guid port) const {
  auto it = g2m_.find(port.value);
  return it != g2m_.end() ? it->second : wanted(port);
}

std::string MKeyBook::path_key(const mad::DrPath& p, uint8_t hops) {
  return std::string(reinterpret_cast<const char*>(p.ports.data()) + 1, hops);
}

std::optional<Guid> MKeyBook::port_of(const mad::SmpRequest& req) const {
  if (!req.directed) {
    auto it = at_lid_.find(req.dlid.value);
    if (it != at_lid_.end()) return Guid{it->second};
    return std::nullopt;
  }
  const mad::DrPath& p = req.path;
  if (auto it = at_path_.find(path_key(p, p.hops)); it != at_path_.end())
    return Guid{it->second.guid};
  if (p.hops == 0 && local_) return Guid{local_};
  // Not reached in this process yet: the port behind the last hop, by the links known.
  if (p.hops > 0) {
    if (auto up = at_path_.find(path_key(p, p.hops - 1)); up != at_path_.end()) {
      auto far = neighbors_.find({up->second.guid, p.ports[p.hops]});
      if (far != neighbors_.end()) return Guid{far->second.first};
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> MKeyBook::key_change(const mad::SmpRequest& req, Guid port) const {
  if (req.attr_id != mad::kAttrPortInfo || req.method != mad::kMethodSet) return std::nullopt;
  // A switch's key is port 0's: a Set of another of its ports carries no key of its own.
  if (req.directed) {
    auto it = at_path_.find(path_key(req.path, req.path.hops));
    if (it != at_path_.end() && it->second.is_switch && req.attr_mod != 0) return std::nullopt;
  }
  const uint64_t next = mad::decode_port_info(req.data).m_key;
  if (next == held(port)) return std::nullopt;
  return next;
}

uint64_t MKeyBook::key_for(const mad::SmpRequest& req, int attempt) const {
  if (!keyed()) return 0;
  if (!o_.lookup) return o_.m_key;
  const auto port = port_of(req);
  if (!port) return o_.m_key;
  const uint64_t now = held(*port);
  // The old key or the new one: a port that took a key change whose reply was lost
  // refuses the old key, one that never saw it the new key (weft's choice: alternate,
  // the held key first, rather than be locked out until the lease runs out, which
  // with m_key_lease_period 0 it never does).
  std::optional<uint64_t> other = pending(*port);
  if (!other) other = key_change(req, *port);
  if (other && *other != now && attempt % 2 == 0) return *other;
  return now;
}

std::optional<uint64_t> MKeyBook::pending(Guid port) const {
  auto it = pending_.find(port.value);
  if (it == pending_.end()) return std::nullopt;
  return it->second;
}

void MKeyBook::unanswered(const mad::SmpRequest& req) {
  if (!keyed() || !o_.lookup) return;
  const auto port = port_of(req);
  if (!port) return;
  if (auto next = key_change(req, *port)) pending_[port->value] = *next;
}

void MKeyBook::observe(const mad::SmpRequest& req, const mad::Smp& reply) {
  // Without keys there is nothing to learn: every port then holds 0 and takes any key.
  if (!req.directed || !keyed()) return;
  const std::string at = path_key(req.path, req.path.hops);
  if (req.attr_id == mad::kAttrNodeInfo && req.method == mad::kMethodGet) {
    if (auto ni = mad::decode_node_info(reply.data))
      at_path_[at] = {ni->port_guid.value, ni->type == fabric::NodeType::kSwitch};
    return;
  }
  // PortInfo, a Get or a Set (whose answer shows what the port now holds).
  if (req.attr_id != mad::kAttrPortInfo) return;
  auto it = at_path_.find(at);
  if (it == at_path_.end()) return;
  // A switch's key is port 0's; a CA port's is its own (the one the SMP reached).
  if (it->second.is_switch && req.attr_mod != 0) return;
  const mad::PortInfo pi = mad::decode_port_info(reply.data);
  // A key of 0 under protection is a hidden key, not the one held (as OpenSM reads it).
  if (pi.m_key == 0 && pi.m_key_protect != 0) return;
  note_held(Guid{it->second.guid}, pi.m_key);
}

void MKeyBook::note_held(Guid port, uint64_t key) {
  pending_.erase(port.value);  // known now
  auto [it, fresh] = g2m_.try_emplace(port.value, key);
  if (!fresh && it->second == key) return;
  if (!fresh && it->second != 0) --nonzero_held_;
  it->second = key;
  if (key != 0) ++nonzero_held_;
  dirty_keys_ = true;
}

void MKeyBook::learn(const fabric::Fabric& f) {
  // Without keys no SMP needs them (ports take any key while they hold 0): the first
  // sweep with a key learns the links and LIDs before it sets one.
  if (!keyed()) return;
  for (const auto& l : f.links()) {
    const End a{f.node(l.a).ports[l.pa].guid.value, l.pa};
    const End b{f.node(l.b).ports[l.pb].guid.value, l.pb};
    for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      auto [it, fresh] = neighbors_.try_emplace(x, y);
      if (!fresh && it->second == y) continue;
      it->second = y;
      dirty_links_ = true;
    }
  }
  at_lid_.clear();
  for (const auto& nd : f.nodes())
    for (const auto& p : nd.ports) {
      if (nd.is_switch() && p.num != 0) continue;
      if (p.attrs.lid.is_unicast()) at_lid_[p.attrs.lid.value] = p.guid.value;
    }
}

Result<std::vector<std::string>> MKeyBook::load(const std::string& dir) {
  g2m_.clear();
  pending_.clear();
  neighbors_.clear();
  nonzero_held_ = 0;
  auto keys = read_pairs(dir + "/guid2mkey", [this](const std::string& g, const std::string& k) {
    uint64_t gv = 0, kv = 0;
    if (!parse_u64(g, gv) || gv == 0) return "bad port GUID \"" + g + "\"";
    if (!parse_u64(k, kv)) return "bad M_Key \"" + k + "\"";
    if (g2m_.contains(gv)) return "second entry for " + hex_guid(gv) + " dropped";
    g2m_[gv] = kv;
    if (kv) ++nonzero_held_;
    return std::string();
  });
  if (!keys) return keys;
  auto links = read_pairs(dir + "/neighbors", [this](const std::string& a, const std::string& b) {
    End x, y;
    if (!parse_end(a, x)) return "bad port \"" + a + "\" (0xGUID:PORT)";
    if (!parse_end(b, y)) return "bad port \"" + b + "\" (0xGUID:PORT)";
    neighbors_[x] = y;
    return std::string();
  });
  if (!links) return links;
  keys->insert(keys->end(), links->begin(), links->end());
  dirty_keys_ = dirty_links_ = false;
  return keys;
}

Result<void> MKeyBook::save(const std::string& dir) {
  return save(*store::directory_store(dir, state_documents()));
}

Result<void> MKeyBook::save(store::StateStore& store) {
  if (dirty_keys_) {
    std::string text;
    for (const auto& [g, k] : g2m_) text += hex16(g) + " " + hex16(k) + "\n";
    if (auto r = store.write("guid2mkey", text); !r) return r;
    dirty_keys_ = false;
  }
  if (dirty_links_) {
    std::string text;
    for (const auto& [a, b] : neighbors_)
      text += hex16(a.first) + ":" + std::to_string(a.second) + " " + hex16(b.first) + ":" +
              std::to_string(b.second) + "\n";
    if (auto r = store.write("neighbors", text); !r) return r;
    dirty_links_ = false;
  }
  return {};
}

}  // namespace weft::sm
