// partitions.conf: a hand-written parser. The grammar is OpenSM's own (no
// library parses it) and small; what it must get right is OpenSM's leniency
// where admins rely on it and a file:line error everywhere else.
#include "weft/config/partitions.hpp"
#include "weft/text.hpp"
#include "weft/text_file.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

namespace weft::config {

const char* membership_name(Membership m) {
  switch (m) {
    case Membership::kLimited:
      return "limited";
    case Membership::kFull:
      return "full";
    case Membership::kBoth:
      return "both";
  }
  return "?";
}

const PartitionSpec* PartitionPolicy::find(uint16_t pkey) const {
  for (const auto& p : partitions)
    if (p.pkey == (pkey & 0x7fff)) return &p;
  return nullptr;
}

std::optional<std::array<uint8_t, 16>> parse_mgid(std::string_view s) {
  std::array<uint8_t, 16> g{};
  const std::string str(s);
  if (inet_pton(AF_INET6, str.c_str(), g.data()) != 1 || g[0] != 0xff) return std::nullopt;
  return g;
}

std::string mgid_str(const std::array<uint8_t, 16>& gid) {
  char buf[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, gid.data(), buf, sizeof buf) ? buf : "?";
}

namespace {

using text::trim;

// A prefix of `word` (OpenSM matches "limi" as limited), at least one letter.
bool is_prefix_of(const std::string& s, std::string_view word) {
  return !s.empty() && s.size() <= word.size() && word.substr(0, s.size()) == s;
}

// A piece of text and the line it starts on.
struct Piece {
  std::string text;
  int line;
};

// Splits "name=value" (either side trimmed; no '=' gives an empty value, has_value false).
struct NameValue {
  std::string name, value;
  bool has_value = false;
};
NameValue split_nv(std::string_view s) {
  NameValue nv;
  const size_t eq = s.find('=');
  nv.name = trim(s.substr(0, eq));
  if (eq != std::string_view::npos) {
    nv.value = trim(s.substr(eq + 1));
    nv.has_value = true;
  }
  return nv;
}

class Parser {
 public:
  Parser(const std::string& source, PartitionPolicy& out) : src_(source), out_(out) {}

  std::string where(int line) const { return src_ + ":" + std::to_string(line); }
  void error(int line, const std::string& what) {
    if (!errors_.empty()) errors_ += '\n';
    errors_ += where(line);
    errors_ += ": ";
    errors_ += what;
  }
  void warn(int line, const std::string& what) {
    out_.warnings.push_back(where(line) + ": " + what);
  }
  const std::string& errors() const { return errors_; }

  // Group flags, shared by partition headers and mgid lines. Returns false when `nv`
  // is not a group flag at all.
  bool group_flag(const NameValue& nv, int line, GroupFlags& f) {
    auto number = [&](uint64_t lo, uint64_t hi, const char* what) -> std::optional<uint64_t> {
      uint64_t x;
      if (!nv.has_value || !text::parse_u64(nv.value, &x) || x < lo || x > hi) {
        error(line, "flag \"" + nv.name + "\" wants " + what + ", got \"" + nv.value + "\"");
        return std::nullopt;
      }
      return x;
    };
    if (nv.name == "mtu") {
      if (auto x = number(1, 5, "an IBTA MTU code 1-5 (4 = 2048)")) f.mtu = uint8_t(*x);
    } else if (nv.name == "rate") {
      if (auto x = number(2, 23, "an IBTA rate code 2-23 (3 = 10 Gb/s)")) f.rate = uint8_t(*x);
    } else if (nv.name == "sl") {
      if (auto x = number(0, 15, "an SL 0-15")) f.sl = uint8_t(*x);
    } else if (nv.name == "scope") {
      if (auto x = number(1, 15, "a multicast scope 1-15 (2 = link local)"))
        f.scope_mask = uint16_t(f.scope_mask | (1u << *x));
    } else if (nv.name == "Q_Key") {
      if (auto x = number(0, 0xffffffffull, "a 32-bit Q_Key")) f.qkey = uint32_t(*x);
    } else if (nv.name == "TClass") {
      if (auto x = number(0, 255, "a traffic class 0-255")) f.tclass = uint8_t(*x);
    } else if (nv.name == "FlowLabel") {
      if (auto x = number(0, 0xfffff, "a 20-bit flow label")) f.flow_label = uint32_t(*x);
    } else {
      return false;
    }
    return true;
  }

  // "Name[=PKey][,flag[=value]]..." before the ':'.
  std::optional<PartitionSpec> header(const std::string& text, int line, Membership& defmember) {
    PartitionSpec p;
    p.where = where(line);
    std::vector<std::string> parts;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) parts.push_back(item);
    if (parts.empty()) parts.emplace_back();
    NameValue first = split_nv(parts[0]);
    std::string id = first.value;
    bool has_id = first.has_value;
    p.name = first.name;
    // "0x8001 : ..." is a P_Key with no name, as OpenSM reads it.
    if (!has_id && !p.name.empty() && std::isdigit(static_cast<unsigned char>(p.name[0]))) {
      id = p.name;
      has_id = true;
      p.name.clear();
    }
    if (p.name.size() > 64) error(line, "partition name longer than 64 characters");
    if (has_id) {
      uint64_t x;
      if (!text::parse_u64(id, &x) || x > 0xffff) {
        error(line, "P_Key \"" + id + "\" is not a number 0x0001-0x7fff");
        return std::nullopt;
      }
      if ((x & 0x7fff) == 0) {
        error(line, "P_Key " + id + " is the invalid P_Key (low 15 bits 0)");
        return std::nullopt;
      }
      p.pkey = uint16_t(x & 0x7fff);
      p.pkey_given = true;
    }
    for (size_t i = 1; i < parts.size(); ++i) {
      NameValue nv = split_nv(parts[i]);
      if (nv.name.empty()) {
        error(line, "empty partition flag (a stray ',')");
        continue;
      }
      if (group_flag(nv, line, p.flags)) continue;
      if (nv.name == "ipoib") {
        p.ipoib = true;
      } else if (nv.name == "indx0") {
        p.indx0 = true;
      } else if (nv.name == "defmember") {
        if (is_prefix_of(nv.value, "full"))
          defmember = Membership::kFull;
        else if (is_prefix_of(nv.value, "both"))
          defmember = Membership::kBoth;
        else if (is_prefix_of(nv.value, "limited"))
          defmember = Membership::kLimited;
        else
          error(line, "defmember wants full, limited or both, got \"" + nv.value + "\"");
      } else {
        warn(line, "unknown partition flag \"" + nv.name + "\" ignored (as OpenSM ignores it)");
      }
    }
    return p;
  }

  void member(const std::string& text, int line, Membership defmember, PartitionSpec& p) {
    NameValue nv = split_nv(text);
    if (nv.name.empty() || nv.name == "NONE") return;
    MemberSpec m;
    m.line = line;
    m.membership = defmember;
    m.indx0 = p.indx0;
    if (nv.has_value) {
      if (is_prefix_of(nv.value, "full"))
        m.membership = Membership::kFull;
      else if (is_prefix_of(nv.value, "both"))
        m.membership = Membership::kBoth;
      else {
        m.membership = Membership::kLimited;
        if (!is_prefix_of(nv.value, "limited"))
          warn(line, "membership \"" + nv.value + "\" of " + nv.name +
                         " is not full, limited or both: limited (as OpenSM assumes)");
      }
    }
    using K = MemberSpec::Kind;
    if (nv.name == "ALL")
      m.kind = K::kAll;
    else if (nv.name == "ALL_CAS")
      m.kind = K::kAllCas;
    else if (nv.name == "ALL_SWITCHES")
      m.kind = K::kAllSwitches;
    else if (nv.name == "ALL_ROUTERS")
      m.kind = K::kAllRouters;
    else if (nv.name == "SELF")
      m.kind = K::kSelf;
    else {
      uint64_t g;
      if (!text::parse_u64(nv.name, &g) || g == 0) {
        error(line, "\"" + nv.name +
                        "\" is not a port GUID (0x... or decimal, not 0) nor ALL, ALL_CAS, "
                        "ALL_SWITCHES, ALL_ROUTERS, SELF or NONE");
        return;
      }
      m.guid = Guid{g};
    }
    p.members.push_back(m);
  }

  void mgroup(const std::string& text, int line, PartitionSpec& p) {
    std::vector<std::string> parts;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) parts.push_back(item);
    NameValue first = split_nv(parts.at(0));
    McGroupSpec g;
    g.line = line;
    auto mgid = parse_mgid(first.value);
    if (!mgid) {
      error(line, "mgid \"" + first.value + "\" is not a multicast GID (ff..:...)");
      return;
    }
    g.mgid = *mgid;
    g.flags = p.flags;  // inherits the partition's
    for (size_t i = 1; i < parts.size(); ++i) {
      NameValue nv = split_nv(parts[i]);
      if (nv.name.empty()) continue;
      if (!group_flag(nv, line, g.flags))
        warn(line, "unknown multicast group flag \"" + nv.name + "\" ignored");
    }
    // IPoIB groups (signature 0x401b / 0x601b) carry the partition's P_Key and must
    // match the broadcast group's rate and MTU.
    const bool ip = (g.mgid[2] == 0x40 || g.mgid[2] == 0x60) && g.mgid[3] == 0x1b;
    if (ip) {
      const uint16_t mp = uint16_t(g.mgid[4] << 8 | g.mgid[5]);
      if (mp != 0 && (mp & 0x7fff) != p.pkey) {
        error(line, "IP multicast group " + first.value + " carries P_Key 0x" + hex4(mp) +
                        ", not its partition's 0x" + hex4(p.pkey));
        return;
      }
      if (g.flags.rate != p.flags.rate || g.flags.mtu != p.flags.mtu) {
        error(line, "IP multicast group " + first.value +
                        " must have its partition's rate and mtu (" + std::to_string(p.flags.rate) +
                        ", " + std::to_string(p.flags.mtu) + ")");
        return;
      }
      const uint16_t full = uint16_t(p.pkey | 0x8000);
      g.mgid[4] = uint8_t(full >> 8);
      g.mgid[5] = uint8_t(full & 0xff);
      if (g.flags.qkey == 0) g.flags.qkey = 0x0b1b;
    }
    p.groups.push_back(g);
  }

  static std::string hex4(uint16_t x) {
    char b[8];
    std::snprintf(b, sizeof b, "%04x", x);
    return b;
  }

  // One definition: the text between two ';', as pieces per line.
  void definition(const std::vector<Piece>& pieces) {
    // The header runs to the first ':'.
    std::string head;
    int head_line = pieces.front().line;
    size_t pi = 0, off = 0;
    bool found = false;
    for (; pi < pieces.size() && !found; ++pi) {
      const size_t c = pieces[pi].text.find(':');
      if (c == std::string::npos) {
        head += pieces[pi].text + " ";
        continue;
      }
      head += pieces[pi].text.substr(0, c);
      off = c + 1;
      found = true;
      break;
    }
    if (!found) {
      error(head_line, "no partition definition: expected NAME[=PKEY][,flags] : members ; got \"" +
                           trim(head) + "\"");
      return;
    }
    Membership defmember = Membership::kLimited;
    auto p = header(trim(head), head_line, defmember);
    if (!p) return;
    // Members: comma-separated across lines; an mgid= item takes the rest of its line.
    for (; pi < pieces.size(); ++pi, off = 0) {
      const std::string rest = pieces[pi].text.substr(off);
      const int line = pieces[pi].line;
      const std::string t = trim(rest);
      if (t.rfind("mgid", 0) == 0 && split_nv(t).name == "mgid") {
        mgroup(t, line, *p);
        continue;
      }
      std::stringstream ss(rest);
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (trim(item).empty()) continue;
        if (item.find(':') != std::string::npos) {
          error(line, "unexpected ':' in the member list (\"" + trim(item) + "\")");
          continue;
        }
        member(item, line, defmember, *p);
      }
    }
    merge(std::move(*p), head_line);
  }

  void merge(PartitionSpec p, int line) {
    if (p.pkey_given) {
      for (auto& q : out_.partitions) {
        if (!q.pkey_given || q.pkey != p.pkey) continue;
        if (q.ipoib && p.ipoib && !(q.flags == p.flags))
          warn(line, "P_Key 0x" + hex4(p.pkey) +
                         " defined again with other IPoIB group flags; "
                         "the first definition's (" +
                         q.where + ") are kept");
        q.ipoib |= p.ipoib;
        q.indx0 |= p.indx0;
        q.members.insert(q.members.end(), p.members.begin(), p.members.end());
        q.groups.insert(q.groups.end(), p.groups.begin(), p.groups.end());
        return;
      }
    }
    out_.partitions.push_back(std::move(p));
  }

  void assign_missing_pkeys() {
    std::set<uint16_t> used{kDefaultPkey};
    for (const auto& p : out_.partitions)
      if (p.pkey_given) used.insert(p.pkey);
    uint16_t next = 1;
    for (auto& p : out_.partitions) {
      if (p.pkey_given) continue;
      while (used.count(next)) ++next;
      p.pkey = next;
      used.insert(next);
      warn(std::stoi(p.where.substr(p.where.rfind(':') + 1)),
           "partition \"" + p.name + "\" has no P_Key: 0x" + hex4(p.pkey) + " given");
    }
  }

 private:
  std::string src_;
  PartitionPolicy& out_;
  std::string errors_;
};

}  // namespace

Result<PartitionPolicy> parse_partitions(std::string_view text, const std::string& source) {
  PartitionPolicy pol;
  Parser ps(source, pol);
  std::istringstream in{std::string(text)};
  std::string line;
  int no = 0;
  std::vector<Piece> cur;
  while (std::getline(in, line)) {
    ++no;
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    size_t start = 0;
    for (;;) {
      const size_t semi = line.find(';', start);
      const std::string piece = line.substr(start, semi == std::string::npos ? semi : semi - start);
      if (!trim(piece).empty()) cur.push_back({piece, no});
      if (semi == std::string::npos) break;
      if (!cur.empty()) ps.definition(cur);
      cur.clear();
      start = semi + 1;
    }
  }
  if (!cur.empty()) {
    ps.warn(cur.front().line,
            "definition not closed with ';' at the end of the file (taken as is)");
    ps.definition(cur);
  }
  if (!ps.errors().empty()) return fail(Errc::kInvalidInput, ps.errors());
  ps.assign_missing_pkeys();
  return pol;
}

Result<PartitionPolicy> load_partitions(const std::string& path) {
  return parse_text_file(
      path, [](std::string_view t, const std::string& src) { return parse_partitions(t, src); });
}

}  // namespace weft::config
