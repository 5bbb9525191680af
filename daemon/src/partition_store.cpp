#include "weft/daemon/partition_store.hpp"

#include <fmt/format.h>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <set>

#include "weft/durable_file.hpp"
#include "weft/sm/documents.hpp"
#include "weft/text_file.hpp"

namespace weft::daemon {

namespace {

constexpr std::string_view kGenerationTag = "# weft generation ";

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (unsigned char c : n)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

const char* member_word(config::Membership m) {
  switch (m) {
    case config::Membership::kFull:
      return "full";
    case config::Membership::kLimited:
      return "limited";
    case config::Membership::kBoth:
      return "both";
  }
  return "full";
}

}  // namespace

std::optional<uint16_t> parse_pkey(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  } else if (s.find_first_of("abcdefABCDEF") != std::string_view::npos) {
    base = 16;
  }
  if (s.empty() || s.size() > 6) return std::nullopt;
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size() || v > 0xffff || (v & 0x7fff) == 0)
    return std::nullopt;
  return uint16_t(v & 0x7fff);
}

std::optional<Guid> parse_port_guid(std::string_view s) {
  std::string hex;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  for (char c : s) {
    if (c == ':' || c == '-') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    hex += c;
  }
  // UFM takes 16 to 20 hex digits: any beyond 16 must be leading zeros.
  if (hex.size() < 16 || hex.size() > 20) return std::nullopt;
  if (hex.find_first_not_of('0') < hex.size() - 16) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(hex.data() + hex.size() - 16, hex.data() + hex.size(), v, 16);
  if (ec != std::errc() || v == 0) return std::nullopt;
  return Guid{v};
}

std::string PartitionStore::render(const RestPartitions& parts) {
  std::string out =
      "# Partitions made through weft's REST API (OpenSM's partitions.conf grammar).\n"
      "# weft rewrites this file whole on every change; edit partition_config_file instead.\n";
  for (const auto& [pkey, p] : parts) {
    std::string head = fmt::format(
        "{}=0x{:04x}", p.name.empty() ? fmt::format("pkey_0x{:04x}", pkey) : p.name, pkey);
    if (p.ipoib) head += ",ipoib";
    const config::GroupFlags dflt;
    if (p.flags.mtu != dflt.mtu) head += fmt::format(",mtu={}", p.flags.mtu);
    if (p.flags.rate != dflt.rate) head += fmt::format(",rate={}", p.flags.rate);
    if (p.flags.sl != dflt.sl) head += fmt::format(",sl={}", p.flags.sl);
    // OpenSM reads index0 per definition: one definition per value that members have.
    bool wrote = false;
    for (bool idx0 : {false, true}) {
      std::string members;
      for (const auto& [guid, m] : p.members) {
        if (m.index0 != idx0) continue;
        members += fmt::format("{}\n    0x{:016x}={}", members.empty() ? "" : ",", guid,
                               member_word(m.membership));
      }
      if (members.empty()) continue;
      out += fmt::format("{}{} :{}\n;\n", head, idx0 ? ",indx0" : "", members);
      wrote = true;
    }
    if (!wrote) out += head + " : NONE ;\n";
  }
  return out;
}

Result<RestPartitions> PartitionStore::parse(std::string_view text, const std::string& source) {
  auto pol = config::parse_partitions(text, source);
  if (!pol) return std::unexpected(pol.error());
  RestPartitions out;
  for (const auto& spec : pol->partitions) {
    if (!spec.pkey_given)
      return fail(Errc::kInvalidInput, spec.where + ": a REST partition names its P_Key");
    RestPartition& p = out[spec.pkey];
    p.pkey = spec.pkey;
    if (p.name.empty()) p.name = spec.name;
    p.ipoib |= spec.ipoib;
    p.flags = spec.flags;
    for (const auto& m : spec.members) {
      if (m.kind != config::MemberSpec::Kind::kGuid)
        return fail(Errc::kInvalidInput, source + ":" + std::to_string(m.line) +
                                             ": a REST partition's members are port GUIDs");
      p.members[m.guid.value] = {m.membership, m.indx0};
    }
  }
  return out;
}

Result<PartitionStore> PartitionStore::open(std::string path,
                                            std::optional<config::PartitionPolicy> file) {
  const auto dir = std::filesystem::path(path).parent_path().string();
  return open(store::directory_store(dir, sm::state_documents(), {{"partitions.rest.conf", path}}),
              std::move(file));
}

Result<PartitionStore> PartitionStore::open(std::shared_ptr<store::StateStore> store,
                                            std::optional<config::PartitionPolicy> file) {
  PartitionStore s(store->path("partitions.rest.conf"), std::move(file));
  s.store_ = std::move(store);
  if (auto r = s.reload(); !r) return std::unexpected(r.error());
  return s;
}

Result<bool> PartitionStore::reload() {
  std::error_code ec;
  RestPartitions parts;
  uint64_t gen = 1;
  if (std::filesystem::exists(path_, ec)) {
    auto text = read_text_file(path_);
    if (!text) return std::unexpected(text.error());
    auto p = parse(*text, path_);
    if (!p) return std::unexpected(p.error());
    parts = std::move(*p);
    if (auto at = text->find(kGenerationTag); at != std::string::npos) {
      uint64_t g = 0;
      const char* b = text->data() + at + kGenerationTag.size();
      std::from_chars(b, text->data() + text->size(), g);
      if (g > 0) gen = g;
    }
  }
  const bool changed = parts != rest_ || gen != generation_;
  rest_ = std::move(parts);
  generation_ = gen;
  return changed;
}

std::optional<std::string> PartitionStore::defined_by_file(uint16_t pkey) const {
  if (!file_) return std::nullopt;
  if (const auto* spec = file_->find(pkey)) return spec->where;
  return std::nullopt;
}

Result<uint64_t> PartitionStore::commit(RestPartitions next) {
  for (auto& [pkey, p] : next) {
    if (p.name.empty()) p.name = fmt::format("pkey_0x{:04x}", pkey);  // the file needs one
    if (pkey != p.pkey || pkey == 0 || pkey > 0x7fff)
      return fail(Errc::kInvalidInput, fmt::format("P_Key 0x{:04x} is not 0x0001-0x7fff", pkey));
    if (!p.name.empty() && !valid_name(p.name))
      return fail(Errc::kInvalidInput,
                  "partition name \"" + p.name +
                      "\": 1-64 letters, digits, '_', '-' or '.' (it goes into partitions.conf)");
    for (const auto& [guid, m] : p.members)
      if (guid == 0) return fail(Errc::kInvalidInput, "port GUID 0 is no port");
  }
  uint64_t gen = generation_ + 1;
  const std::string text = std::string(kGenerationTag) + std::to_string(gen) + "\n" + render(next);
  // What is written must read back as what was meant: the grammar is the contract.
  auto back = parse(text, path_);
  if (!back || *back != next)
    return fail(Errc::kInternal, "the REST partitions do not read back as written");
  if (auto r = store_->write("partitions.rest.conf", text); !r) return std::unexpected(r.error());
  rest_ = std::move(next);
  generation_ = gen;
  return gen;
}

std::optional<config::PartitionPolicy> PartitionStore::merged() const {
  if (!file_ && rest_.empty()) return std::nullopt;
  config::PartitionPolicy pol;
  if (file_) {
    pol = *file_;
  } else {
    // No partition_config_file: what OpenSM does without one (every end port a full
    // member of the Default partition, with its IPoIB group) stays true. A REST
    // partition must not turn everyone else into a limited Default member.
    auto dflt = config::parse_partitions("Default=0x7fff,ipoib : ALL=full ;",
                                         "built in (no partition_config_file)");
    if (dflt) pol = std::move(*dflt);
  }
  for (const auto& [pkey, p] : rest_) {
    config::PartitionSpec* spec = nullptr;
    for (auto& s : pol.partitions)
      if (s.pkey == pkey) spec = &s;
    if (!spec) {
      pol.partitions.emplace_back();
      spec = &pol.partitions.back();
      spec->name = p.name.empty() ? fmt::format("pkey_0x{:04x}", pkey) : p.name;
      spec->pkey = pkey;
      spec->pkey_given = true;
      spec->flags = p.flags;
      spec->where = path_;
    }
    spec->ipoib |= p.ipoib;
    for (const auto& [guid, m] : p.members) {
      config::MemberSpec ms;
      ms.kind = config::MemberSpec::Kind::kGuid;
      ms.guid = Guid{guid};
      ms.membership = m.membership;
      ms.indx0 = m.index0;
      spec->indx0 |= m.index0;
      spec->members.push_back(ms);
    }
  }
  return pol;
}

}  // namespace weft::daemon
