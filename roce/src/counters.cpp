// The RoCE doctor's inputs: counter files as hosts' tools print them, and a directory of
// them as one snapshot.
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "json.hpp"
#include "weft/roce/doctor.hpp"

namespace weft::roce {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> number(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::unexpected<Error> bad(std::string what) {
  return fail(Errc::kInvalidInput, std::move(what));
}

std::unexpected<Error> at(const std::string& where, size_t line, const std::string& what) {
  return bad(where + ":" + std::to_string(line) + ": " + what);
}

// One counter into `f`; the same name twice is an error (which one would be meant?).
Result<void> put(CounterFile& f, std::string_view name, uint64_t v, const std::string& where,
                 size_t line) {
  if (!f.values.emplace(std::string(name), v).second)
    return at(where, line, "counter \"" + std::string(name) + "\" given twice");
  return {};
}

// The words of a line, split at spaces and tabs.
std::vector<std::string_view> words_of(std::string_view l) {
  std::vector<std::string_view> w;
  while (!l.empty()) {
    const size_t b = l.find_first_not_of(" \t");
    if (b == std::string_view::npos) break;
    l.remove_prefix(b);
    const size_t e = l.find_first_of(" \t");
    w.emplace_back(l.substr(0, e));
    if (e == std::string_view::npos) break;
    l.remove_prefix(e);
  }
  return w;
}

template <class F>
Result<void> each_line(std::string_view text, F&& f) {
  size_t line = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line;
    if (auto r = f(trim(l), line); !r) return r;
  }
  return {};
}

}  // namespace

Result<CounterFile> parse_ethtool_stats(std::string_view text, const std::string& where,
                                        CounterFilter keep) {
  CounterFile f;
  f.source = "ethtool";
  bool header = false;
  auto r = each_line(text, [&](std::string_view l, size_t line) -> Result<void> {
    if (l.empty()) return {};
    if (l == "NIC statistics:") {
      if (header || !f.values.empty()) return at(where, line, "a second \"NIC statistics:\"");
      header = true;
      return {};
    }
    const size_t colon = l.rfind(':');
    if (colon == std::string_view::npos)
      return at(where, line,
                "not \"name: value\" as ethtool -S prints: \"" + std::string(l) + "\"");
    const std::string_view name = trim(l.substr(0, colon)), val = trim(l.substr(colon + 1));
    auto v = number(val);
    if (name.empty() || !v)
      return at(where, line,
                "not \"name: value\" as ethtool -S prints: \"" + std::string(l) + "\"");
    if (keep && !keep(name)) return {};
    return put(f, name, *v, where, line);
  });
  if (!r) return std::unexpected(r.error());
  if (!header) return bad(where + ": no \"NIC statistics:\" line: not ethtool -S output");
  return f;
}

Result<CounterFile> parse_hw_counters(std::string_view text, const std::string& where,
                                      CounterFilter keep) {
  CounterFile f;
  f.source = "hw_counters";
  std::string dir;
  auto r = each_line(text, [&](std::string_view l, size_t line) -> Result<void> {
    if (l.empty()) return {};
    // PATH:VALUE, PATH .../infiniband/DEV/ports/N/hw_counters/NAME (grep -H . DIR/*).
    const size_t colon = l.rfind(':');
    const std::string_view path = colon == std::string_view::npos ? l : l.substr(0, colon);
    const size_t slash = path.rfind('/');
    auto v = colon == std::string_view::npos ? std::nullopt : number(trim(l.substr(colon + 1)));
    if (slash == std::string_view::npos || !v)
      return at(
          where, line,
          "not \"PATH/hw_counters/NAME:VALUE\" as grep -H prints: \"" + std::string(l) + "\"");
    const std::string_view d = path.substr(0, slash), name = path.substr(slash + 1);
    if (!d.ends_with("/hw_counters"))
      return at(where, line, "\"" + std::string(path) + "\" is not in a hw_counters directory");
    if (dir.empty())
      dir = d;
    else if (d != dir)
      return at(
          where, line,
          "a second port's counters (" + std::string(d) + "; the file began with " + dir + ")");
    if (name == "lifespan") return {};  // a setting (ms the counters are cached), not a counter
    if (keep && !keep(name)) return {};
    return put(f, name, *v, where, line);
  });
  if (!r) return std::unexpected(r.error());
  if (dir.empty()) return bad(where + ": no counters");
  // .../infiniband/DEV/ports/N/hw_counters -> DEV/N
  const std::string base = dir.substr(0, dir.size() - std::string_view("/hw_counters").size());
  const size_t ports = base.rfind("/ports/");
  if (ports != std::string::npos) {
    const size_t dev = base.rfind('/', ports - 1);
    f.port = base.substr(dev == std::string::npos ? 0 : dev + 1,
                         ports - (dev == std::string::npos ? 0 : dev + 1)) +
             "/" + base.substr(ports + 7);
  }
  return f;
}

Result<CounterFile> parse_rdma_stat(std::string_view text, const std::string& where,
                                    CounterFilter keep) {
  CounterFile f;
  f.source = "rdma_stat";
  // "link DEV/PORT NAME VALUE NAME VALUE ...": on one line (iproute2 before 6.7), one
  // counter a line indented (6.7 on, and -p before), or joined by "\\" (-o).
  std::vector<std::pair<std::string_view, size_t>> words;
  auto r = each_line(text, [&](std::string_view l, size_t line) -> Result<void> {
    for (std::string_view w : words_of(l))
      if (w != "\\") words.emplace_back(w, line);  // `rdma -o` joins a record's lines with it
    return {};
  });
  if (!r) return std::unexpected(r.error());
  if (words.size() < 2 || words[0].first != "link")
    return bad(where + ": not \"link DEV/PORT NAME VALUE ...\" as rdma statistic show prints");
  f.port = words[1].first;
  for (size_t i = 2; i < words.size(); i += 2) {
    if (words[i].first == "link")
      return at(where, words[i].second, "a second link: one port per file");
    if (i + 1 >= words.size())
      return at(where, words[i].second,
                "counter \"" + std::string(words[i].first) + "\" has no value");
    auto v = number(words[i + 1].first);
    if (!v)
      return at(where, words[i + 1].second,
                "counter \"" + std::string(words[i].first) + "\": \"" +
                    std::string(words[i + 1].first) + "\" is not a count");
    if (keep && !keep(words[i].first)) continue;
    if (auto p = put(f, words[i].first, *v, where, words[i].second); !p)
      return std::unexpected(p.error());
  }
  return f;
}

// ---- SONiC's CLI tables (sonic-utilities: pfcstat, queuestat, pfcwd) ----
// tabulate's "simple" layout: a header line, a rule of dash groups one per column, then
// rows whose cells hold no spaces (headers may: "Port Rx", "STORM DETECTED/RESTORED").
// Lines between tables ("Last cached time was ...", "For namespace :") are skipped.
namespace {

struct Table {
  std::string title;  // the line above the header ("Ingress PG dropped packets:"), if any
  std::vector<std::string> header;
  size_t header_line = 0;
  std::vector<std::pair<std::vector<std::string>, size_t>> rows;  // cells, line
};

bool is_rule(std::string_view l) {
  return !trim(l).empty() && l.find_first_not_of("- \t\r") == std::string_view::npos;
}

std::vector<Table> tables_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  std::vector<Table> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!is_rule(lines[i]) || trim(lines[i - 1]).empty()) continue;
    Table t;
    t.header_line = i;  // 1-based: the line before the rule
    if (i >= 2) t.title = trim(lines[i - 2]);
    // Each dash group spans its column; the header's text lies within it.
    const std::string_view rule = lines[i], head = lines[i - 1];
    for (size_t p = 0; p < rule.size();) {
      const size_t b = rule.find('-', p);
      if (b == std::string_view::npos) break;
      size_t e = rule.find_first_not_of('-', b);
      if (e == std::string_view::npos) e = rule.size();
      t.header.emplace_back(trim(b < head.size() ? head.substr(b, e - b) : std::string_view()));
      p = e;
    }
    size_t j = i + 1;
    for (; j < lines.size() && !trim(lines[j]).empty(); ++j) {
      const auto cells = words_of(lines[j]);
      t.rows.push_back({std::vector<std::string>(cells.begin(), cells.end()), j + 1});
    }
    out.push_back(std::move(t));
    i = j;
  }
  return out;
}

// "1,200" -> 1200; "N/A" -> nullopt (the counter is not there).
Result<std::optional<uint64_t>> sonic_number(std::string_view s, const std::string& where,
                                             size_t line) {
  if (s == "N/A") return std::optional<uint64_t>();
  std::string digits;
  for (char c : s)
    if (c != ',') digits += c;
  auto v = number(digits);
  if (!v) return at(where, line, "\"" + std::string(s) + "\" is not a count");
  return std::optional<uint64_t>(*v);
}

Result<void> need_columns(const Table& t, const std::vector<std::string>& want,
                          const std::string& where) {
  if (t.header.size() >= want.size() && std::equal(want.begin(), want.end(), t.header.begin()))
    return {};
  std::string cols;
  for (const auto& w : want) cols += (cols.empty() ? "\"" : ", \"") + w + "\"";
  return at(where, t.header_line,
            "the columns are not " + cols + " as the SONiC command prints them");
}

Result<void> row_size(const Table& t, const std::vector<std::string>& cells,
                      const std::string& where, size_t line) {
  if (cells.size() == t.header.size()) return {};
  return at(where, line,
            std::to_string(cells.size()) + " cells in a table of " +
                std::to_string(t.header.size()) + " columns");
}

// Runs `row` on every row of every table whose columns begin with `want(table)`; with a
// `title`, every table must be under it, rows or none (the line above its header).
template <class Want, class Row>
Result<CounterFile> sonic_tables(std::string_view text, const std::string& where,
                                 const char* source, const char* command, Want&& want, Row&& row,
                                 const char* title = nullptr) {
  CounterFile f;
  f.source = source;
  const auto tables = tables_of(text);
  if (tables.empty()) return bad(where + ": no table: not " + command + " output");
  for (const auto& t : tables) {
    if (title && t.title != title)
      return at(
          where, std::max<size_t>(t.header_line, 2) - 1,
          "the title is \"" + t.title + "\", not \"" + title + "\" as " + command + " prints it");
    if (auto r = need_columns(t, want(t), where); !r) return std::unexpected(r.error());
    for (const auto& [cells, line] : t.rows) {
      if (auto r = row_size(t, cells, where, line); !r) return std::unexpected(r.error());
      if (auto r = row(f, t, cells, line); !r) return std::unexpected(r.error());
    }
  }
  return f;
}

}  // namespace

Result<CounterFile> parse_sonic_pfc(std::string_view text, const std::string& where,
                                    CounterFilter) {
  auto dir = [](const Table& t) {
    return std::string(!t.header.empty() && t.header[0] == "Port Tx" ? "tx" : "rx");
  };
  return sonic_tables(
      text, where, "pfc", "show pfc counters",
      [&](const Table& t) {
        std::vector<std::string> want = {dir(t) == "tx" ? "Port Tx" : "Port Rx"};
        for (int q = 0; q < 8; ++q) want.push_back("PFC" + std::to_string(q));
        return want;
      },
      [&](CounterFile& f, const Table& t, const std::vector<std::string>& cells,
          size_t line) -> Result<void> {
        for (int q = 0; q < 8; ++q) {
          auto v = sonic_number(cells[size_t(q) + 1], where, line);
          if (!v) return std::unexpected(v.error());
          if (*v)
            if (auto r =
                    put(f, cells[0] + "|" + dir(t) + "_pfc" + std::to_string(q), **v, where, line);
                !r)
              return r;
        }
        return {};
      });
}

namespace {

// A per-queue table: Port, TxQ, then one counter a column ("Ethernet0|UC3|NAME").
Result<CounterFile> queue_table(std::string_view text, const std::string& where, const char* source,
                                const char* command, const std::vector<std::string>& head,
                                const std::vector<const char*>& names) {
  return sonic_tables(
      text, where, source, command, [&](const Table&) { return head; },
      [&](CounterFile& f, const Table&, const std::vector<std::string>& cells,
          size_t line) -> Result<void> {
        for (size_t c = 0; c < names.size(); ++c) {
          auto v = sonic_number(cells[c + 2], where, line);
          if (!v) return std::unexpected(v.error());
          if (*v)
            if (auto r = put(f, cells[0] + "|" + cells[1] + "|" + names[c], **v, where, line); !r)
              return r;
        }
        return {};
      });
}

// A per-PG table (pg-drop, watermarkstat) under its title: Port, then PG<n> columns;
// into `values` ("Ethernet0|PG3|NAME") or, for a watermark, `levels`.
Result<CounterFile> pg_table(std::string_view text, const std::string& where, const char* source,
                             const char* command, const char* title, const char* name, bool level) {
  // Under its title: the shared pool's table differs from the headroom's only in it.
  return sonic_tables(
      text, where, source, command,
      [&](const Table& t) {
        std::vector<std::string> want = {"Port"};
        for (size_t c = 1; c < t.header.size(); ++c)
          want.push_back(t.header[c].starts_with("PG") &&
                                 number(std::string_view(t.header[c]).substr(2))
                             ? t.header[c]
                             : "PG" + std::to_string(c - 1));
        return want;
      },
      [&](CounterFile& f, const Table& t, const std::vector<std::string>& cells,
          size_t line) -> Result<void> {
        for (size_t c = 1; c < cells.size(); ++c) {
          auto v = sonic_number(cells[c], where, line);
          if (!v) return std::unexpected(v.error());
          if (!*v) continue;
          const std::string key = cells[0] + "|" + t.header[c] + "|" + name;
          if (!level) {
            if (auto r = put(f, key, **v, where, line); !r) return r;
          } else if (!f.levels.emplace(key, **v).second) {
            return at(where, line, key + " twice");
          }
        }
        return {};
      },
      title);
}

}  // namespace

Result<CounterFile> parse_sonic_pg_drop(std::string_view text, const std::string& where,
                                        CounterFilter) {
  return pg_table(text, where, "pg_drop", "show priority-group drop counters",
                  "Ingress PG dropped packets:", "drop_pkts", false);
}

Result<CounterFile> parse_sonic_pg_headroom(std::string_view text, const std::string& where,
                                            CounterFilter) {
  return pg_table(text, where, "pg_headroom", "show priority-group persistent-watermark headroom",
                  "Ingress headroom per PG:", "headroom_wm", true);
}

Result<CounterFile> parse_sonic_queue(std::string_view text, const std::string& where,
                                      CounterFilter) {
  return queue_table(text, where, "queue", "show queue counters",
                     {"Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes"},
                     {"pkts", "bytes", "drop_pkts", "drop_bytes"});
}

Result<CounterFile> parse_sonic_wred(std::string_view text, const std::string& where,
                                     CounterFilter) {
  return queue_table(
      text, where, "wred", "show queue wredcounters",
      {"Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"},
      {"wred_drop_pkts", "wred_drop_bytes", "ecn_marked", "ecn_marked_bytes"});
}

Result<CounterFile> parse_sonic_pfcwd(std::string_view text, const std::string& where,
                                      CounterFilter) {
  // The cumulative pairs; the LAST ones are the last storm's, not counters.
  static const char* const kPairs[][2] = {
      {"storm_detected", "storm_restored"}, {"tx_ok", "tx_drop"}, {"rx_ok", "rx_drop"}};
  return sonic_tables(
      text, where, "pfcwd", "show pfcwd stats",
      [](const Table&) {
        return std::vector<std::string>{"QUEUE", "STATUS", "STORM DETECTED/RESTORED", "TX OK/DROP",
                                        "RX OK/DROP"};
      },
      [&](CounterFile& f, const Table&, const std::vector<std::string>& cells,
          size_t line) -> Result<void> {
        const std::string& queue = cells[0];
        const size_t colon = queue.rfind(':');
        if (colon == std::string::npos || colon == 0 ||
            !number(std::string_view(queue).substr(colon + 1)) || queue.size() - colon > 6)
          return at(where, line, "queue \"" + queue + "\" is not PORT:INDEX");
        if (cells[1] != "operational" && cells[1] != "stormed" && cells[1] != "N/A")
          return at(where, line, "status \"" + cells[1] + "\" is not operational, stormed or N/A");
        f.states[queue] = cells[1];
        for (size_t c = 0; c < 3; ++c) {
          const std::string& cell = cells[c + 2];
          const size_t slash = cell.find('/');
          auto a = slash == std::string::npos ? std::nullopt
                                              : number(std::string_view(cell).substr(0, slash));
          auto b = slash == std::string::npos ? std::nullopt
                                              : number(std::string_view(cell).substr(slash + 1));
          if (!a || !b) return at(where, line, "\"" + cell + "\" is not COUNT/COUNT");
          if (auto r = put(f, queue + "|" + kPairs[c][0], *a, where, line); !r) return r;
          if (auto r = put(f, queue + "|" + kPairs[c][1], *b, where, line); !r) return r;
        }
        return {};
      });
}

// SONiC's COUNTERS_DB as JSON: {KEY: {FIELD: VALUE}}, or as sonic-db-dump prints it,
// {KEY: {"type": "hash", "value": {FIELD: VALUE}, ...}}. The name maps give each port's
// and queue's object; the SAI fields become the CLI tables' counters.
Result<CounterFile> parse_counters_db(std::string_view text, const std::string& where,
                                      CounterFilter) {
  auto doc = parse_json(text, where);
  if (!doc) return std::unexpected(doc.error());
  if (!doc->is_object()) return bad(where + ": not a JSON object of COUNTERS_DB keys");
  auto hash = [&](const std::string& key) -> const nlohmann::json* {
    auto it = doc->find(key);
    if (it == doc->end() || !it->is_object()) return nullptr;
    if (it->contains("type") && it->contains("value") && (*it)["value"].is_object())
      return &(*it)["value"];
    return &*it;
  };
  const nlohmann::json* ports = hash("COUNTERS_PORT_NAME_MAP");
  const nlohmann::json* queues = hash("COUNTERS_QUEUE_NAME_MAP");
  const nlohmann::json* pgs = hash("COUNTERS_PG_NAME_MAP");
  if (!ports && !queues && !pgs)
    return bad(where +
               ": no COUNTERS_PORT_NAME_MAP, COUNTERS_QUEUE_NAME_MAP or COUNTERS_PG_NAME_MAP: "
               "not COUNTERS_DB");
  CounterFile f;
  f.source = "counters_db";
  // Each field of the object `oid` that `name_of` names, as a counter.
  auto take = [&](const std::string& oid, const std::string& what, auto&& name_of) -> Result<void> {
    const nlohmann::json* h = hash("COUNTERS:" + oid);
    if (!h) return {};  // not polled (yet): nothing to say
    for (const auto& [field, v] : h->items()) {
      const std::string name = name_of(field);
      if (name.empty()) continue;
      const std::string sv = v.is_string() ? v.template get<std::string>() : v.dump();
      auto n = number(sv);
      if (!n)
        return bad(where + ": " + what + " (COUNTERS:" + oid + ") " + field + ": \"" + sv +
                   "\" is not a count");
      if (auto r = put(f, name, *n, where, 0); !r) return r;
    }
    return {};
  };
  if (ports)
    for (const auto& [port, oid] : ports->items()) {
      if (!oid.is_string()) return bad(where + ": COUNTERS_PORT_NAME_MAP " + port + ": not an oid");
      auto r = take(oid.get<std::string>(), port, [&](const std::string& fl) -> std::string {
        // SAI_PORT_STAT_PFC_3_RX_PKTS -> PORT|rx_pfc3
        if (fl.size() == 27 && fl.starts_with("SAI_PORT_STAT_PFC_") && fl[18] >= '0' &&
            fl[18] <= '7' && (fl.ends_with("_RX_PKTS") || fl.ends_with("_TX_PKTS")))
          return port + "|" + (fl[20] == 'R' ? "rx" : "tx") + "_pfc" + fl[18];
        return "";
      });
      if (!r) return std::unexpected(r.error());
    }
  const nlohmann::json* types = hash("COUNTERS_QUEUE_TYPE_MAP");
  if (queues)
    for (const auto& [queue, oid] : queues->items()) {
      const size_t colon = queue.rfind(':');
      if (!oid.is_string() || colon == std::string::npos || colon + 1 == queue.size() ||
          !number(std::string_view(queue).substr(colon + 1)))
        return bad(where + ": COUNTERS_QUEUE_NAME_MAP \"" + queue + "\": not PORT:INDEX to an oid");
      const std::string port = queue.substr(0, colon), index = queue.substr(colon + 1);
      // The CLI's TxQ label: the type's prefix and the index (queuestat).
      std::string type = "ALL";
      if (types && types->contains(oid.get<std::string>())) {
        const auto& t = (*types)[oid.get<std::string>()];
        if (t == "SAI_QUEUE_TYPE_UNICAST") type = "UC";
        if (t == "SAI_QUEUE_TYPE_MULTICAST") type = "MC";
      }
      static const std::map<std::string, std::string, std::less<>> kQueue = {
          {"SAI_QUEUE_STAT_PACKETS", "pkts"},
          {"SAI_QUEUE_STAT_BYTES", "bytes"},
          {"SAI_QUEUE_STAT_DROPPED_PACKETS", "drop_pkts"},
          {"SAI_QUEUE_STAT_DROPPED_BYTES", "drop_bytes"},
          {"SAI_QUEUE_STAT_WRED_DROPPED_PACKETS", "wred_drop_pkts"},
          {"SAI_QUEUE_STAT_WRED_DROPPED_BYTES", "wred_drop_bytes"},
          {"SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "ecn_marked"},
          {"SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES", "ecn_marked_bytes"}};
      static const std::map<std::string, std::string, std::less<>> kWatchdog = {
          {"PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "storm_detected"},
          {"PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED", "storm_restored"},
          {"PFC_WD_QUEUE_STATS_TX_PACKETS", "tx_ok"},
          {"PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS", "tx_drop"},
          {"PFC_WD_QUEUE_STATS_RX_PACKETS", "rx_ok"},
          {"PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS", "rx_drop"}};
      auto r = take(oid.get<std::string>(), queue, [&](const std::string& fl) -> std::string {
        if (auto q = kQueue.find(fl); q != kQueue.end())
          return port + "|" + type + index + "|" + q->second;
        if (auto w = kWatchdog.find(fl); w != kWatchdog.end()) return queue + "|" + w->second;
        return "";
      });
      if (!r) return std::unexpected(r.error());
      if (const auto* h = hash("COUNTERS:" + oid.get<std::string>()))
        if (auto st = h->find("PFC_WD_STATUS"); st != h->end() && st->is_string())
          f.states[queue] = st->get<std::string>();
    }
  // Ingress priority groups (pg-drop, watermarkstat): "Ethernet0:3" -> the PG's object.
  if (pgs)
    for (const auto& [pg, oid] : pgs->items()) {
      const size_t colon = pg.rfind(':');
      if (!oid.is_string() || colon == std::string::npos || colon == 0 || colon + 1 == pg.size() ||
          !number(std::string_view(pg).substr(colon + 1)))
        return bad(where + ": COUNTERS_PG_NAME_MAP \"" + pg + "\": not PORT:INDEX to an oid");
      const std::string o = oid.get<std::string>();
      const std::string key = pg.substr(0, colon) + "|PG" + pg.substr(colon + 1) + "|";
      auto r = take(o, pg, [&](const std::string& fl) -> std::string {
        return fl == "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS" ? key + "drop_pkts" : "";
      });
      if (!r) return std::unexpected(r.error());
      // The peak since the last clear: the persistent table's (cleared by hand only), else
      // the user's, else the telemetry period's.
      for (const char* table :
           {"PERSISTENT_WATERMARKS:", "USER_WATERMARKS:", "PERIODIC_WATERMARKS:"}) {
        const nlohmann::json* h = hash(table + o);
        if (!h) continue;
        auto wm = h->find("SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES");
        if (wm == h->end()) continue;
        const std::string sv = wm->is_string() ? wm->get<std::string>() : wm->dump();
        auto n = number(sv);
        if (!n)
          return bad(where + ": " + pg + " (" + table + o +
                     ") SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES: \"" + sv +
                     "\" is not a count");
        f.levels[key + "headroom_wm"] = *n;
        break;
      }
    }
  return f;
}

Result<void> add_counter_file(CounterSnapshot& s, const std::string& name, std::string_view text,
                              CounterFilter keep) {
  const std::string where = s.dir.empty() ? name : s.dir + "/" + name;
  const size_t dot = name.rfind('.');
  const std::string device = dot == std::string::npos ? "" : name.substr(0, dot);
  const std::string kind = dot == std::string::npos ? "" : name.substr(dot + 1);
  Result<CounterFile> (*parse)(std::string_view, const std::string&, CounterFilter) = nullptr;
  if (kind == "ethtool") parse = parse_ethtool_stats;
  if (kind == "hw_counters") parse = parse_hw_counters;
  if (kind == "rdma_stat") parse = parse_rdma_stat;
  if (kind == "pfc") parse = parse_sonic_pfc;
  if (kind == "queue") parse = parse_sonic_queue;
  if (kind == "pfcwd") parse = parse_sonic_pfcwd;
  if (kind == "counters_db") parse = parse_counters_db;
  if (kind == "wred") parse = parse_sonic_wred;
  if (kind == "pg_drop") parse = parse_sonic_pg_drop;
  if (kind == "pg_headroom") parse = parse_sonic_pg_headroom;
  if (!parse || device.empty() || device.find('/') != std::string::npos)
    return bad(where +
               ": not DEVICE.ethtool, .hw_counters, .rdma_stat, .pfc, .queue, .wred, .pfcwd, "
               ".pg_drop, .pg_headroom or .counters_db (the name says which device and which "
               "tool printed it)");
  auto f = parse(text, where, keep);
  if (!f) return std::unexpected(f.error());
  s.devices[device][kind] = std::move(*f);
  return {};
}

Result<CounterSnapshot> load_counter_dir(const std::string& dir, CounterFilter keep) {
  namespace fs = std::filesystem;
  CounterSnapshot s;
  s.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return bad(dir + ": not a directory");
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (std::error_code fe; it->is_regular_file(fe)) files.push_back(it->path());
  if (ec) return bad(dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty())
    return bad(dir + ": no counter files (DEVICE.ethtool, DEVICE.hw_counters, ...)");
  for (const auto& p : files) {
    const std::string where = p.string();
    std::string text;
    {
      std::ifstream in(p, std::ios::binary | std::ios::ate);
      const auto size = in.tellg();
      if (!in || size < 0) return bad(where + ": cannot be read");
      text.resize(size_t(size));
      in.seekg(0);
      if (!in.read(text.data(), size)) return bad(where + ": cannot be read");
    }
    if (auto r = add_counter_file(s, p.filename().string(), text, keep); !r)
      return std::unexpected(r.error());
    struct stat st {};
    if (::stat(where.c_str(), &st) == 0)
      s.mtime_s = std::max(s.mtime_s, double(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9);
  }
  return s;
}

}  // namespace weft::roce
