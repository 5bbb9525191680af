#include "partitions.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <unordered_map>

namespace weft::rest {

using config::Membership;
using nlohmann::json;

namespace {

const char* membership_word(Membership m) {
  return m == Membership::kFull ? "full" : m == Membership::kLimited ? "limited" : "both";
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

json PartitionItem::to_json(bool with_members) const {
  json j = {{"pkey", fmt::format("0x{:04x}", pkey)},
            {"name", name},
            {"ipoib", ipoib},
            {"mtu", flags.mtu},
            {"rate", flags.rate},
            {"sl", flags.sl},
            {"defined_by", json::array()}};
  if (!file_where.empty()) j["defined_by"].push_back("file " + file_where);
  if (in_rest) j["defined_by"].push_back("rest");
  size_t full = 0, limited = 0;
  for (const auto& m : members) (m.membership == Membership::kLimited ? limited : full) += 1;
  j["members_full"] = full;
  j["members_limited"] = limited;
  if (with_members) {
    json ms = json::array();
    for (const auto& m : members) {
      json e = {{"guid", guid_hex(m.guid)},
                {"membership", membership_word(m.membership)},
                {"index0", m.index0},
                {"source", m.source},
                {"on_fabric", m.on_fabric}};
      if (!m.port.empty()) e["port"] = m.port;
      ms.push_back(std::move(e));
    }
    j["members"] = std::move(ms);
  }
  return j;
}

std::vector<PartitionItem> partition_items(const sm::Published& pub,
                                           const daemon::PartitionView& v) {
  std::map<uint16_t, PartitionItem> items;
  std::map<uint16_t, std::map<uint64_t, MemberView>> members;
  auto item = [&](uint16_t pk) -> PartitionItem& {
    auto& it = items[pk];
    it.pkey = pk;
    return it;
  };
  // The built-in Default partition exists whatever the files say.
  item(config::kDefaultPkey).name = "Default";
  if (v.file)
    for (const auto& spec : v.file->partitions) {
      auto& it = item(spec.pkey);
      if (it.file_where.empty()) {
        it.file_where = spec.where;
        if (!spec.name.empty()) it.name = spec.name;
        it.flags = spec.flags;
      }
      it.ipoib |= spec.ipoib;
      for (const auto& m : spec.members)
        if (m.kind == config::MemberSpec::Kind::kGuid)
          members[spec.pkey][m.guid.value] = {m.guid.value, m.membership, m.indx0,
                                              "file",       false,        ""};
    }
  for (const auto& [pk, p] : v.rest) {
    auto& it = item(pk);
    it.in_rest = true;
    if (it.name.empty()) it.name = p.name;
    if (it.file_where.empty()) it.flags = p.flags;
    it.ipoib |= p.ipoib;
    for (const auto& [g, m] : p.members) {
      auto& mv = members[pk][g];
      if (mv.source == "file") continue;  // the file's definition comes first
      mv = {g, m.membership, m.index0, "rest", false, ""};
    }
  }
  // Members by rule (ALL, ALL_CAS, ..., and the Default partition's implicit ones) are
  // the ports that hold the P_Key on the fabric, as the last sweep planned it. The
  // explicit ones are as the policy says now, whether or not a sweep has applied it.
  std::set<uint16_t> by_rule{config::kDefaultPkey};
  if (v.file)
    for (const auto& spec : v.file->partitions)
      for (const auto& m : spec.members)
        if (m.kind != config::MemberSpec::Kind::kGuid) by_rule.insert(spec.pkey);
  if (pub.subnet) {
    const auto& snap = *pub.subnet;
    for (const auto& [guid, np] : snap.end_ports) {
      const auto& keys = snap.partitions.pkeys[np.first][np.second];
      for (size_t i = 0; i < keys.size(); ++i) {
        const uint16_t pk = keys[i] & 0x7fff;
        auto known = members[pk].find(guid);
        if (known == members[pk].end()) {
          if (!by_rule.count(pk)) continue;  // no longer a member: its removal is pending
          auto& mv = members[pk][guid];
          mv.guid = guid;
          mv.source = "fabric";
          mv.membership = (keys[i] & 0x8000) ? Membership::kFull : Membership::kLimited;
          mv.index0 = i == 0;
          known = members[pk].find(guid);
        }
        known->second.on_fabric = true;
        known->second.port = fabric::port_ref(snap.fabric, np.first, np.second);
      }
    }
    // Explicit members on the fabric that the last sweep did not yet give the key.
    for (auto& [pk, ms] : members)
      for (auto& [g, m] : ms)
        if (auto it = snap.end_ports.find(g); it != snap.end_ports.end() && m.port.empty()) {
          m.on_fabric = true;
          m.port = fabric::port_ref(snap.fabric, it->second.first, it->second.second);
        }
  }
  std::vector<PartitionItem> out;
  for (auto& [pk, it] : items) {
    if (it.name.empty()) it.name = fmt::format("pkey_0x{:04x}", pk);
    for (auto& [g, m] : members[pk]) it.members.push_back(m);
    out.push_back(std::move(it));
  }
  return out;
}

HostPorts resolve_hosts(const sm::SubnetSnapshot* snap, const std::vector<std::string>& hosts) {
  HostPorts out;
  std::unordered_map<std::string, std::vector<Guid>> by_host;
  if (snap)
    for (const auto& n : snap->fabric.nodes()) {
      if (n.is_switch()) continue;
      std::string h = n.description.substr(0, n.description.find_first_of(" \t"));
      if (h.empty()) continue;
      auto& v = by_host[lower(h)];
      for (const auto& p : n.ports)
        if (p.num && p.linked()) v.push_back(p.guid);
    }
  for (const auto& h : hosts) {
    auto it = by_host.find(lower(h));
    if (it == by_host.end() || it->second.empty()) {
      out.unknown.push_back(h);
      continue;
    }
    out.guids.insert(out.guids.end(), it->second.begin(), it->second.end());
  }
  return out;
}

namespace {

void set_props(daemon::RestPartition& p, const AddSpec& s) {
  if (s.ipoib) p.ipoib = *s.ipoib;
  if (s.name) p.name = *s.name;
  if (s.mtu) p.flags.mtu = *s.mtu;
  if (s.rate) p.flags.rate = *s.rate;
  if (s.sl) p.flags.sl = *s.sl;
}

daemon::RestPartition& ensure(daemon::RestPartitions& parts, const AddSpec& s) {
  auto [it, fresh] = parts.try_emplace(s.pkey);
  if (fresh) {
    it->second.pkey = s.pkey;
    it->second.ipoib = s.ipoib.value_or(true);  // UFM's default for ip_over_ib
  }
  set_props(it->second, s);
  return it->second;
}

}  // namespace

namespace {
template <class P>
void put_members(P& p, const AddSpec& s) {
  for (size_t i = 0; i < s.guids.size(); ++i)
    p.members[s.guids[i].value] = {i < s.memberships.size() ? s.memberships[i] : s.membership,
                                   s.index0};
}
}  // namespace

ApiResult<daemon::RestPartitions> op_add(const daemon::RestPartitions& cur, const AddSpec& s) {
  daemon::RestPartitions next = cur;
  auto& p = ensure(next, s);
  put_members(p, s);
  return next;
}

ApiResult<daemon::RestPartitions> op_replace(const daemon::RestPartitions& cur, const AddSpec& s) {
  daemon::RestPartitions next = cur;
  auto& p = ensure(next, s);
  p.members.clear();
  put_members(p, s);
  return next;
}

ApiResult<daemon::RestPartitions> op_remove(const daemon::RestPartitions& cur,
                                            const daemon::PartitionView& v, uint16_t pkey,
                                            const std::vector<Guid>& guids) {
  const auto* spec = v.file ? v.file->find(pkey) : nullptr;
  if (!cur.count(pkey) && !spec)
    return api_error(404, "not_found", fmt::format("no partition 0x{:04x}", pkey));
  daemon::RestPartitions next = cur;
  for (Guid g : guids) {
    if (spec)
      for (const auto& m : spec->members)
        if (m.kind == config::MemberSpec::Kind::kGuid && m.guid == g)
          return api_error(
              409, "defined_in_file",
              fmt::format("{} is a member of 0x{:04x} by {}:{}, which weft does not "
                          "rewrite; nothing was removed",
                          g.str(), pkey, spec->where.substr(0, spec->where.rfind(':')), m.line));
    if (auto it = next.find(pkey); it != next.end()) it->second.members.erase(g.value);
  }
  return next;
}

ApiResult<daemon::RestPartitions> op_delete(const daemon::RestPartitions& cur,
                                            const daemon::PartitionView& v, uint16_t pkey) {
  if (pkey == config::kDefaultPkey)
    return api_error(409, "default_partition", "the Default partition 0x7fff cannot be deleted");
  if (const auto* spec = v.file ? v.file->find(pkey) : nullptr)
    return api_error(409, "defined_in_file",
                     fmt::format("partition 0x{:04x} is defined by {}, which weft does not rewrite",
                                 pkey, spec->where));
  if (!cur.count(pkey))
    return api_error(404, "not_found", fmt::format("no partition 0x{:04x}", pkey));
  daemon::RestPartitions next = cur;
  next.erase(pkey);
  return next;
}

ApiResult<daemon::RestPartitions> op_define(const daemon::RestPartitions& cur, const AddSpec& s) {
  daemon::RestPartitions next = cur;
  ensure(next, s);
  return next;
}

ApiResult<Membership> as_membership(const json& v, const std::string& field) {
  if (v.is_string()) {
    const std::string s = lower(v.get<std::string>());
    if (s == "full") return Membership::kFull;
    if (s == "limited") return Membership::kLimited;
    if (s == "both") return Membership::kBoth;
  }
  return api_error(
      422, "bad_membership",
      "\"" + field + "\" wants \"full\", \"limited\" or \"both\", got " + json_text(v));
}

std::optional<uint8_t> rate_code_of_gbps(double gbps) {
  // IBTA 15.2.5.16 rate codes and their Gb/s.
  static const std::pair<double, uint8_t> kRates[] = {
      {2.5, 2},  {10, 3},   {30, 4},   {5, 5},   {20, 6},   {40, 7},   {60, 8},
      {80, 9},   {120, 10}, {14, 11},  {56, 12}, {112, 13}, {168, 14}, {25, 15},
      {100, 16}, {200, 17}, {300, 18}, {28, 19}, {50, 20},  {400, 21}, {600, 22}};
  for (auto [g, code] : kRates)
    if (std::fabs(g - gbps) < 1e-6) return code;
  return std::nullopt;
}

std::optional<uint8_t> mtu_code(int64_t v) {
  if (v >= 1 && v <= 5) return uint8_t(v);
  for (uint8_t c = 1; c <= 5; ++c)
    if (v == (int64_t(128) << c)) return c;
  return std::nullopt;
}

void commit(Ctx& c, PartitionOp op, int status, std::function<json(uint64_t)> body) {
  auto err = std::make_shared<std::optional<ApiError>>();
  auto view = c.backend.partitions();
  Reply reply = c.reply;
  c.backend.submit(daemon::ChangePartitions{
      [op = std::move(op), err,
       view](const daemon::RestPartitions& cur) -> Result<daemon::RestPartitions> {
        auto next = op(cur, *view);
        if (!next) {
          *err = next.error();
          return fail(Errc::kInvalidInput, next.error().message);
        }
        return std::move(*next);
      },
      [reply, err, status, body = std::move(body)](Result<uint64_t> gen) {
        if (*err) return reply(error_response((*err)->status, (*err)->code, (*err)->message));
        if (!gen) {
          const Errc e = gen.error().code;
          // kUnsupported: the state store would not take it (a standby, or a master that
          // lost the store's key): ask the master.
          const int code = e == Errc::kIo || e == Errc::kUnsupported ? 503
                           : e == Errc::kInvalidInput                ? 422
                                                                     : 500;
          return reply(error_response(code,
                                      e == Errc::kUnsupported ? "not_master"
                                      : code == 503           ? "not_saved"
                                      : code == 422           ? "rejected"
                                                              : "internal",
                                      gen.error().message));
        }
        reply(json_response(status, body(*gen)));
      }});
}

}  // namespace weft::rest
