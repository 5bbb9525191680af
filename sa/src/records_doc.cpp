// The SA's services and subscriptions as a document of the state store ("sa-records"):
// what a restarted SM, or a standby taking over, serves from. Each record is kept as the
// bytes the SA holds (a ServiceRecord's 176, an InformInfo's 36) in hex, with where a
// subscriber's Reports go and who subscribed; a lease is kept as the wall-clock second it runs out,
// so it runs out on time on another host.
#include <cctype>
#include <climits>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "weft/sa/sa.hpp"
#include "weft/text.hpp"
#include "weft/types.hpp"

namespace weft::sa {

namespace {

std::string to_hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = d[p[i] >> 4];
    s[2 * i + 1] = d[p[i] & 15];
  }
  return s;
}

template <size_t N>
bool from_hex(const nlohmann::json& v, std::array<uint8_t, N>& out) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() != 2 * N) return false;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < N; ++i) {
    const int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = uint8_t(hi << 4 | lo);
  }
  return true;
}

bool uint_in(const nlohmann::json& o, const char* key, uint64_t max, uint64_t& out) {
  if (!o.contains(key) || !o[key].is_number_unsigned()) return false;
  out = o[key].get<uint64_t>();
  return out <= max;
}

}  // namespace

std::string SaAgent::records_text(int64_t now_s, int64_t now_unix) const {
  nlohmann::json services = nlohmann::json::array();
  for (const auto& sv : services_) {
    nlohmann::json j = {{"record", to_hex(sv.rec.data(), sv.rec.size())}};
    j["expires_unix"] = sv.expires_s == INT64_MAX
                            ? nlohmann::json(nullptr)
                            : nlohmann::json(now_unix + (sv.expires_s - now_s));
    if (sv.owner) j["owner"] = hex_guid(sv.owner);
    services.push_back(std::move(j));
  }
  nlohmann::json subs = nlohmann::json::array();
  for (const auto& s : subs_)
    subs.push_back({{"lid", s.lid.value},
                    {"qpn", s.qpn},
                    {"pkey_index", s.pkey_index},
                    {"sl", s.sl},
                    {"subscriber_gid", to_hex(s.subscriber.data(), s.subscriber.size())},
                    {"trusted", s.trusted},
                    {"inform_info", to_hex(s.info.data(), s.info.size())}});
  nlohmann::json doc = {{"weft_sa_records", 2}, {"services", services}, {"subscriptions", subs}};
  return doc.dump(1) + "\n";
}

Result<void> SaAgent::restore_records(std::string_view text, std::string_view where, int64_t now_s,
                                      int64_t now_unix) {
  auto bad = [&](const std::string& what) -> Result<void> {
    return fail(Errc::kInvalidInput, std::string(where) + ": " + what);
  };
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  // Version 1 (before subscribers were kept apart) held the subscriber's GID in the
  // InformInfo's GID, which it never used as a filter.
  const int version = !doc.contains("weft_sa_records") ? 0
                      : doc["weft_sa_records"] == 1    ? 1
                      : doc["weft_sa_records"] == 2    ? 2
                                                       : 0;
  if (!version) return bad("not a weft SA records document (weft_sa_records 1 or 2)");
  if (!doc.contains("services") || !doc["services"].is_array()) return bad("no services array");
  if (!doc.contains("subscriptions") || !doc["subscriptions"].is_array())
    return bad("no subscriptions array");
  std::vector<Service> services;
  size_t i = 0;
  for (const auto& j : doc["services"]) {
    const std::string at = "service " + std::to_string(++i);
    if (!j.is_object()) return bad(at + ": not an object");
    Service sv;
    if (!j.contains("record") || !from_hex(j["record"], sv.rec))
      return bad(at + ": record: not " + std::to_string(2 * sv.rec.size()) + " hex digits");
    if (!j.contains("expires_unix")) return bad(at + ": expires_unix missing");
    const auto& e = j["expires_unix"];
    if (e.is_null()) {
      sv.expires_s = INT64_MAX;
    } else if (e.is_number_integer()) {
      const int64_t left = e.get<int64_t>() - now_unix;
      if (left <= 0) continue;  // its lease ran out meanwhile
      sv.expires_s = now_s + left;
    } else {
      return bad(at + ": expires_unix: not a time or null");
    }
    // The registering port (optional: documents before owners were kept have none).
    if (j.contains("owner") &&
        (!j["owner"].is_string() || !text::parse_u64(j["owner"].get<std::string>(), &sv.owner)))
      return bad(at + ": owner: not a port GUID");
    services.push_back(sv);
  }
  std::vector<Subscription> subs;
  i = 0;
  for (const auto& j : doc["subscriptions"]) {
    const std::string at = "subscription " + std::to_string(++i);
    if (!j.is_object()) return bad(at + ": not an object");
    Subscription s;
    uint64_t v = 0;
    if (!uint_in(j, "lid", 0xbfff, v) || v == 0) return bad(at + ": lid: not a unicast LID");
    s.lid = Lid{uint16_t(v)};
    if (!uint_in(j, "qpn", 0xffffff, v)) return bad(at + ": qpn: not a QP number");
    s.qpn = uint32_t(v);
    if (!uint_in(j, "pkey_index", 0xffff, v)) return bad(at + ": pkey_index: not 0-65535");
    s.pkey_index = uint16_t(v);
    if (!uint_in(j, "sl", 15, v)) return bad(at + ": sl: not 0-15");
    s.sl = uint8_t(v);
    if (!j.contains("inform_info") || !from_hex(j["inform_info"], s.info))
      return bad(at + ": inform_info: not " + std::to_string(2 * s.info.size()) + " hex digits");
    if (version == 1) {
      std::copy(s.info.begin(), s.info.begin() + 16, s.subscriber.begin());
      std::fill(s.info.begin(), s.info.begin() + 16, 0);
    } else if (!j.contains("subscriber_gid") || !from_hex(j["subscriber_gid"], s.subscriber)) {
      return bad(at + ": subscriber_gid: not 32 hex digits");
    }
    if (j.contains("trusted")) {  // optional: false in documents from before
      if (!j["trusted"].is_boolean()) return bad(at + ": trusted: not true or false");
      s.trusted = j["trusted"].get<bool>();
    }
    subs.push_back(s);
  }
  services_ = std::move(services);
  subs_ = std::move(subs);
  return {};
}

}  // namespace weft::sa
