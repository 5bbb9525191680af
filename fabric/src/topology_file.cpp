// One grammar for ibsim net files and ibnetdiscover output.
//
// A file is a list of records separated by blank lines. Outside records:
// comments (#...), `key=value` lines (vendid, devid, sysimgguid, switchguid,
// caguid/hcaguids, rtguid, width, speed). A record is a header line
//   Switch|Ca|Hca|Rt  NPORTS  "nodeid"  [# "description" [enhanced|base port 0] [lid N] [lmc N]]
// followed by port lines
//   [P](portguid)?  "remote-nodeid"[RP](remote-portguid)?  [w=N] [s=N] [# comment]
// Links must be listed consistently on both ends when both ends are listed.
#include <algorithm>
#include <bitset>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <sstream>

#include "weft/fabric/topology_file.hpp"
#include "weft/text_file.hpp"

namespace weft::fabric {
namespace {

struct PortLine {
  int line = 0;
  int port = 0;
  std::string remote;
  int remote_port = 1;
  std::optional<uint64_t> port_guid;
  uint8_t width_enabled = 0;  // from w=, 0 = default
  uint8_t speed_enabled = 0;  // from s=
  uint8_t width_active = 0;   // from "4xEDR" in the comment
  uint8_t speed_active = 0;
  uint8_t speed_ext_active = 0;
  std::optional<uint16_t> lid;
};

struct Record {
  int line = 0;
  NodeType type = NodeType::kCa;
  int nports = 0;
  std::string id;
  std::string desc;
  std::optional<uint64_t> guid;
  std::optional<uint64_t> sysguid;
  uint32_t vendid = 0;
  uint16_t devid = 0;
  std::optional<uint16_t> lid;
  bool enhanced_port0 = false;
  std::vector<PortLine> ports;
  std::bitset<256> listed;  // the port numbers of `ports`
};

class Parser {
 public:
  Parser(std::string_view text, std::string source, TopologyFormat fmt)
      : text_(text), src_(std::move(source)), fmt_(fmt) {}

  Result<Fabric> run() {
    if (auto r = tokenize(); !r) return std::unexpected(r.error());
    if (fmt_ == TopologyFormat::kAuto)
      fmt_ = saw_ibnetdiscover_marks_ ? TopologyFormat::kIbnetdiscover : TopologyFormat::kIbsimNet;
    return build();
  }

 private:
  std::unexpected<Error> err(int line, const std::string& what) const {
    return fail(Errc::kInvalidInput, src_ + ":" + std::to_string(line) + ": " + what);
  }

  // std::isspace in the "C" locale, inline (the library call was a twentieth of
  // reading a large file).
  static bool space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

  static std::string_view trim(std::string_view s) {
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
  }

  static std::optional<uint64_t> parse_uint(std::string_view s, int base_hint = 0) {
    s = trim(s);
    int base = 10;
    if (base_hint == 16) base = 16;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      s.remove_prefix(2);
      base = 16;
    }
    if (s.empty()) return std::nullopt;
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
  }

  // Reads `"..."` at the start of s; returns the content, advances s past it.
  static std::optional<std::string> take_quoted(std::string_view& s) {
    s = trim(s);
    if (s.empty() || s.front() != '"') return std::nullopt;
    auto end = s.find('"', 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string out(s.substr(1, end - 1));
    s.remove_prefix(end + 1);
    return out;
  }

  // Reads `[N]` at the start of s.
  static std::optional<int> take_bracket_num(std::string_view& s) {
    if (s.empty() || s.front() != '[') return std::nullopt;
    auto end = s.find(']');
    if (end == std::string_view::npos) return std::nullopt;
    auto v = parse_uint(s.substr(1, end - 1));
    if (!v || *v > 255) return std::nullopt;
    s.remove_prefix(end + 1);
    return static_cast<int>(*v);
  }

  // Reads `(hexguid)` at the start of s, if present.
  static std::optional<std::optional<uint64_t>> take_paren_guid(std::string_view& s) {
    if (s.empty() || s.front() != '(') return std::optional<uint64_t>{};
    auto end = s.find(')');
    if (end == std::string_view::npos) return std::nullopt;
    auto v = parse_uint(s.substr(1, end - 1), 16);
    if (!v) return std::nullopt;
    s.remove_prefix(end + 1);
    return std::optional<uint64_t>(*v);
  }

  // "lid N" inside a comment, before the first quote (that one is the node's own).
  static std::optional<uint16_t> own_lid(std::string_view comment) {
    auto q = comment.find('"');
    auto head = comment.substr(0, q);
    auto pos = head.find("lid ");
    if (pos == std::string_view::npos) return std::nullopt;
    auto rest = head.substr(pos + 4);
    size_t n = 0;
    while (n < rest.size() && std::isalnum(static_cast<unsigned char>(rest[n]))) ++n;
    auto v = parse_uint(rest.substr(0, n));
    if (!v || *v > 0xFFFF) return std::nullopt;
    return static_cast<uint16_t>(*v);
  }

  // "4xEDR"-style token in a comment -> active width and speed.
  static void width_speed(std::string_view comment, PortLine& pl) {
    static const std::pair<const char*, std::pair<uint8_t, uint8_t>> speeds[] = {
        {"FDR10", {4, 0}}, {"SDR", {1, 0}}, {"DDR", {2, 0}}, {"QDR", {4, 0}},
        {"FDR", {0, 1}},   {"EDR", {0, 2}}, {"HDR", {0, 4}}, {"NDR", {0, 8}}};
    for (size_t i = 0; i + 1 < comment.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(comment[i])) || comment[i + 1] != 'x') continue;
      if (i > 0 && std::isalnum(static_cast<unsigned char>(comment[i - 1]))) continue;
      size_t j = i;
      int w = 0;
      while (j < comment.size() && std::isdigit(static_cast<unsigned char>(comment[j])))
        w = w * 10 + (comment[j++] - '0');
      if (j >= comment.size() || comment[j] != 'x') continue;
      auto rest = comment.substr(j + 1);
      for (auto& [name, sp] : speeds) {
        if (rest.starts_with(name)) {
          uint8_t wa = w == 1 ? 1 : w == 4 ? 2 : w == 8 ? 4 : w == 12 ? 8 : w == 2 ? 16 : 0;
          if (!wa) return;
          pl.width_active = wa;
          pl.speed_active = sp.first ? sp.first : 4;  // ext speeds report QDR in the base field
          pl.speed_ext_active = sp.second;
          return;
        }
      }
    }
  }

  Result<void> parse_port_line(std::string_view s, int line, Record& rec) {
    PortLine pl;
    pl.line = line;
    auto comment_pos = s.find('#');
    std::string_view comment =
        comment_pos == std::string_view::npos ? "" : s.substr(comment_pos + 1);
    s = s.substr(0, comment_pos);
    auto port = take_bracket_num(s);
    if (!port) return err(line, "expected [PORT] at the start of a port line");
    pl.port = *port;
    auto pg = take_paren_guid(s);
    if (!pg) return err(line, "bad (port GUID) after [" + std::to_string(pl.port) + "]");
    pl.port_guid = *pg;
    auto remote = take_quoted(s);
    if (!remote) return err(line, "expected \"remote-nodeid\" after the port number");
    if (remote->empty()) return err(line, "empty remote node id");
    pl.remote = *remote;
    s = trim(s);
    if (!s.empty() && s.front() == '[') {
      auto rp = take_bracket_num(s);
      if (!rp || *rp == 0) return err(line, "bad remote [PORT] after \"" + pl.remote + "\"");
      pl.remote_port = *rp;
      if (auto rg = take_paren_guid(s); !rg) return err(line, "bad (remote port GUID)");
    }
    // options: w=N s=N
    // (split by hand: an istringstream per port line cost a fifth of reading a large file)
    for (size_t at = 0; at < s.size();) {
      while (at < s.size() && space(s[at])) ++at;
      if (at == s.size()) break;
      size_t end = at;
      while (end < s.size() && !space(s[end])) ++end;
      const std::string tok(s.substr(at, end - at));
      at = end;
      auto eq = tok.find('=');
      if (eq == std::string::npos || eq == 0)
        return err(line, "unexpected \"" + tok + "\" in a port line (options are w=N and s=N)");
      auto v = parse_uint(std::string_view(tok).substr(eq + 1));
      if (tok[0] == 'w' && v && *v >= 1 && *v <= 31)
        pl.width_enabled = static_cast<uint8_t>(*v);
      else if (tok[0] == 's' && v && *v >= 1 && *v <= 7)
        pl.speed_enabled = static_cast<uint8_t>(*v);
      else
        return err(line, "bad port option \"" + tok + "\" (w=1..31, s=1..7)");
    }
    if (rec.type != NodeType::kSwitch) pl.lid = own_lid(comment);
    width_speed(comment, pl);
    if (pl.port == 0) return err(line, "port 0 cannot be linked");
    if (pl.port > rec.nports)
      return err(line, "port " + std::to_string(pl.port) + " > the " + std::to_string(rec.nports) +
                           " ports of \"" + rec.id + "\"");
    if (rec.listed[pl.port])
      for (const PortLine& o : rec.ports)
        if (o.port == pl.port)
          return err(line, "port " + std::to_string(pl.port) + " of \"" + rec.id +
                               "\" listed twice (first on line " + std::to_string(o.line) + ")");
    rec.listed[pl.port] = true;
    rec.ports.push_back(std::move(pl));
    return {};
  }

  Result<void> parse_header(std::string_view s, int line, NodeType type, size_t kwlen) {
    Record rec;
    rec.line = line;
    rec.type = type;
    auto comment_pos = s.find('#');
    std::string_view comment =
        comment_pos == std::string_view::npos ? "" : s.substr(comment_pos + 1);
    std::string_view head =
        trim(s.substr(kwlen, comment_pos == std::string_view::npos ? std::string_view::npos
                                                                   : comment_pos - kwlen));
    size_t n = 0;
    while (n < head.size() && std::isdigit(static_cast<unsigned char>(head[n]))) ++n;
    auto np = parse_uint(head.substr(0, n));
    if (!np || *np < 1 || *np > 254)
      return err(line, "expected a port count 1..254 after the node type");
    rec.nports = static_cast<int>(*np);
    head.remove_prefix(n);
    auto id = take_quoted(head);
    if (!id || id->empty()) return err(line, "expected \"nodeid\" after the port count");
    rec.id = *id;
    if (!trim(head).empty())
      return err(line, "unexpected \"" + std::string(trim(head)) + "\" after the node id");
    std::string_view c = comment;
    if (auto d = take_quoted(c)) rec.desc = *d;
    if (comment.find("enhanced port 0") != std::string_view::npos) rec.enhanced_port0 = true;
    if (type == NodeType::kSwitch) {
      auto lp = c.find("lid ");
      if (lp != std::string_view::npos) {
        auto rest = c.substr(lp + 4);
        size_t k = 0;
        while (k < rest.size() && std::isalnum(static_cast<unsigned char>(rest[k]))) ++k;
        if (auto v = parse_uint(rest.substr(0, k)); v && *v <= 0xFFFF)
          rec.lid = static_cast<uint16_t>(*v);
      }
    }
    // A GUID line applies to the next record of its type; later ones continue from it.
    rec.guid = pending_guid_[static_cast<int>(type)];
    pending_guid_[static_cast<int>(type)].reset();
    rec.sysguid = pending_sysguid_;
    rec.vendid = vendid_;
    rec.devid = devid_;
    pending_sysguid_.reset();
    records_.push_back(std::move(rec));
    in_record_ = true;
    return {};
  }

  Result<void> parse_assignment(std::string_view s, int line) {
    auto eq = s.find('=');
    std::string key(trim(s.substr(0, eq)));
    std::string_view val = trim(s.substr(eq + 1));
    // ibnetdiscover: switchguid=0x2c90300001000(2c90300001000)
    auto paren = val.find('(');
    if (paren != std::string_view::npos) {
      val = val.substr(0, paren);
      saw_ibnetdiscover_marks_ = true;
    }
    auto v = parse_uint(val);
    if (!v) return err(line, "bad value \"" + std::string(val) + "\" for " + key);
    if (key == "switchguid")
      pending_guid_[static_cast<int>(NodeType::kSwitch)] = *v;
    else if (key == "caguid" || key == "hcaguids")
      pending_guid_[static_cast<int>(NodeType::kCa)] = *v;
    else if (key == "rtguid")
      pending_guid_[static_cast<int>(NodeType::kRouter)] = *v;
    else if (key == "sysimgguid")
      pending_sysguid_ = *v, saw_ibnetdiscover_marks_ = true;
    else if (key == "vendid")
      vendid_ = static_cast<uint32_t>(*v);
    else if (key == "devid")
      devid_ = static_cast<uint16_t>(*v);
    else if (key == "width") {
      if (*v < 1 || *v > 31) return err(line, "width must be 1..31");
      width_ = static_cast<uint8_t>(*v);
    } else if (key == "speed") {
      if (*v < 1 || *v > 7) return err(line, "speed must be 1..7");
      speed_ = static_cast<uint8_t>(*v);
    } else
      return err(line, "unknown setting \"" + key + "\"");
    return {};
  }

  Result<void> tokenize() {
    int line = 0;
    size_t pos = 0;
    if (text_.empty()) return err(1, "empty topology file");
    while (pos < text_.size()) {
      size_t nl = text_.find('\n', pos);
      std::string_view raw =
          text_.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? text_.size() : nl + 1;
      ++line;
      if (raw.find('\0') != std::string_view::npos) return err(line, "binary data (NUL byte)");
      std::string_view s = trim(raw);
      if (s.empty()) {
        in_record_ = false;
        continue;
      }
      if (s.front() == '#') continue;
      if (s.front() == '[') {
        if (!in_record_) return err(line, "port line outside a node record");
        if (auto r = parse_port_line(s, line, records_.back()); !r) return r;
        continue;
      }
      in_record_ = false;
      auto starts = [&](std::string_view kw) {
        return s.starts_with(kw) && s.size() > kw.size() && space(s[kw.size()]);
      };
      Result<void> r;
      if (starts("Switch"))
        r = parse_header(s, line, NodeType::kSwitch, 6);
      else if (starts("Hca"))
        r = parse_header(s, line, NodeType::kCa, 3);
      else if (starts("Ca"))
        r = parse_header(s, line, NodeType::kCa, 2);
      else if (starts("Rt"))
        r = parse_header(s, line, NodeType::kRouter, 2);
      else if (s.find('=') != std::string_view::npos)
        r = parse_assignment(s, line);
      else if (s.starts_with("include") || s.starts_with("module") || s.starts_with("do"))
        return err(line, "ibsim directive \"" + std::string(s.substr(0, s.find(' '))) +
                             "\" is not supported; flatten the file first");
      else
        return err(line, "unrecognised line \"" + std::string(s.substr(0, 60)) + "\"");
      if (!r) return r;
    }
    if (records_.empty()) return err(line, "no Switch, Ca or Rt record found");
    return {};
  }

  Result<Fabric> build() {
    Fabric f;
    f.reserve(records_.size());
    // ibsim's GUID numbering for records that give none (net files only).
    uint64_t next_guid[4] = {0, 0x100000, 0x200000, 0};
    std::vector<NodeIndex> idx(records_.size());
    for (size_t i = 0; i < records_.size(); ++i) {
      Record& r = records_[i];
      int t = static_cast<int>(r.type);
      uint64_t guid;
      if (r.guid) {
        guid = *r.guid;
        next_guid[t] = guid;
      } else {
        if (fmt_ == TopologyFormat::kIbnetdiscover)
          return err(r.line,
                     "node \"" + r.id + "\" has no GUID (expected switchguid=/caguid= before it)");
        guid = next_guid[t];
      }
      next_guid[t] = guid + (r.type == NodeType::kSwitch ? 1 : static_cast<uint64_t>(r.nports) + 1);
      // A guid line applies to one record only in ibnetdiscover output; in net files it
      // sets a base that later records continue from, which next_guid already does.
      Node n;
      n.type = r.type;
      n.guid = Guid{guid};
      n.system_guid = Guid{r.sysguid.value_or(guid)};
      n.num_ports = static_cast<uint8_t>(r.nports);
      n.name = r.id;
      n.description = r.desc.empty() ? r.id : r.desc;
      n.vendor_id = r.vendid;
      n.device_id = r.devid;
      n.sw.enhanced_port0 = r.enhanced_port0;
      auto added = f.add_node(std::move(n));
      if (!added) return err(r.line, added.error().message);
      idx[i] = *added;
      Node& nd = f.node(*added);
      for (PortNum p = 0; p < nd.ports.size(); ++p) {
        Port& port = nd.ports[p];
        port.guid = Guid{nd.is_switch() ? guid : guid + p};
        port.attrs.width_enabled = width_;
        port.attrs.speed_enabled = speed_;
      }
      if (r.lid && nd.is_switch()) nd.ports[0].attrs.lid = Lid{*r.lid};
    }
    for (size_t i = 0; i < records_.size(); ++i) {
      const Record& r = records_[i];
      Node& nd = f.node(idx[i]);
      for (const PortLine& pl : r.ports) {
        Port& port = nd.ports[pl.port];
        if (pl.port_guid && !nd.is_switch()) port.guid = Guid{*pl.port_guid};
        if (pl.width_enabled) port.attrs.width_enabled = pl.width_enabled;
        if (pl.speed_enabled) port.attrs.speed_enabled = pl.speed_enabled;
        port.attrs.width_active = pl.width_active;
        port.attrs.speed_active = pl.speed_active;
        port.attrs.speed_ext_active = pl.speed_ext_active;
        if (pl.lid) port.attrs.lid = Lid{*pl.lid};
      }
    }
    for (size_t i = 0; i < records_.size(); ++i) {
      const Record& r = records_[i];
      for (const PortLine& pl : r.ports) {
        const auto peer = f.find_by_name(pl.remote);  // node ids are the nodes' names
        if (!peer)
          return err(pl.line, "\"" + r.id + "\" port " + std::to_string(pl.port) +
                                  " names an unknown node \"" + pl.remote + "\"");
        const Node& remote = f.node(*peer);
        if (pl.remote_port > remote.num_ports)
          return err(pl.line, "remote port " + std::to_string(pl.remote_port) + " > the " +
                                  std::to_string(remote.num_ports) + " ports of \"" + pl.remote +
                                  "\"");
        const Port& back = remote.ports[pl.remote_port];
        if (back.linked() && !(back.peer == idx[i] && back.peer_port == pl.port))
          return err(pl.line, "\"" + pl.remote + "\" port " + std::to_string(pl.remote_port) +
                                  " is already linked to " +
                                  port_ref(f, back.peer, back.peer_port));
        if (auto c = f.connect(idx[i], static_cast<PortNum>(pl.port), *peer,
                               static_cast<PortNum>(pl.remote_port));
            !c)
          return err(pl.line, c.error().message);
      }
    }
    // Both ends listed must agree: a port whose record lists a link the other end's
    // record contradicts was caught above; one listed only on one side is accepted
    // when the other record lists no line for that port.
    for (size_t i = 0; i < records_.size(); ++i) {
      const Record& r = records_[i];
      const Node& nd = f.node(idx[i]);
      for (const PortLine& pl : r.ports) {
        const Port& p = nd.ports[pl.port];
        const Record& rr = records_[p.peer];  // records and nodes share indexes
        if (!rr.listed[p.peer_port] && fmt_ == TopologyFormat::kIbsimNet)
          return err(pl.line, "link to \"" + pl.remote + "\"[" + std::to_string(pl.remote_port) +
                                  "] is not listed on the remote side");
      }
    }
    return f;
  }

  std::string_view text_;
  std::string src_;
  TopologyFormat fmt_;
  std::vector<Record> records_;
  bool in_record_ = false;
  bool saw_ibnetdiscover_marks_ = false;
  std::optional<uint64_t> pending_guid_[4];
  std::optional<uint64_t> pending_sysguid_;
  uint32_t vendid_ = 0;
  uint16_t devid_ = 0;
  uint8_t width_ = 2;  // ibsim default: 4x enabled
  uint8_t speed_ = 1;  // ibsim default: SDR enabled
};

}  // namespace

Result<Fabric> parse_topology(std::string_view text, const std::string& source,
                              TopologyFormat format) {
  return Parser(text, source, format).run();
}

Result<Fabric> read_topology_file(const std::string& path, TopologyFormat format) {
  return parse_text_file(path, [&](std::string_view t, const std::string& src) {
    return parse_topology(t, src, format);
  });
}

std::string write_netfile(const Fabric& f) {
  std::ostringstream o;
  o << "# written by weft\n\n";
  for (NodeIndex i = 0; i < f.size(); ++i) {
    const Node& n = f.node(i);
    auto name = [&](const Node& x) { return x.name.empty() ? x.guid.str() : x.name; };
    o << (n.is_switch()                 ? "switchguid="
          : n.type == NodeType::kRouter ? "rtguid="
                                        : "caguid=")
      << n.guid.str() << "\n";
    o << node_type_name(n.type) << "\t" << int(n.num_ports) << " \"" << name(n) << "\"";
    if (n.description != name(n)) o << "\t# \"" << n.description << "\"";
    o << "\n";
    for (const Port& p : n.ports) {
      if (!p.linked()) continue;
      o << "[" << int(p.num) << "]\t\"" << name(f.node(p.peer)) << "\"[" << int(p.peer_port) << "]";
      if (p.attrs.width_enabled && p.attrs.width_enabled != 2)
        o << "\tw=" << int(p.attrs.width_enabled);
      if (p.attrs.speed_enabled && p.attrs.speed_enabled != 1)
        o << "\ts=" << int(p.attrs.speed_enabled);
      o << "\n";
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace weft::fabric
