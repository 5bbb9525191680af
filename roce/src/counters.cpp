// The RoCE doctor's inputs: counter files as hosts' tools print them, and a directory of
// them as one snapshot.
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

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

Result<CounterFile> parse_ethtool_stats(std::string_view text, const std::string& where) {
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
    return put(f, name, *v, where, line);
  });
  if (!r) return std::unexpected(r.error());
  if (!header) return bad(where + ": no \"NIC statistics:\" line: not ethtool -S output");
  return f;
}

Result<CounterFile> parse_hw_counters(std::string_view text, const std::string& where) {
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

Result<CounterFile> parse_rdma_stat(std::string_view text, const std::string& where) {
  CounterFile f;
  f.source = "rdma_stat";
  // "link DEV/PORT NAME VALUE NAME VALUE ...": on one line (iproute2 before 6.7), one
  // counter a line indented (6.7 on, and -p before), or joined by "\\" (-o).
  std::vector<std::pair<std::string_view, size_t>> words;
  auto r = each_line(text, [&](std::string_view l, size_t line) -> Result<void> {
    while (!l.empty()) {
      const size_t sp = l.find_first_of(" \t");
      const std::string_view w = l.substr(0, sp);
      // `rdma -o` joins a record's lines with "\\": not a word of it.
      if (!w.empty() && w != "\\") words.emplace_back(w, line);
      if (sp == std::string_view::npos) break;
      l = trim(l.substr(sp));
    }
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
    if (auto p = put(f, words[i].first, *v, where, words[i].second); !p)
      return std::unexpected(p.error());
  }
  return f;
}

Result<CounterSnapshot> load_counter_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  CounterSnapshot s;
  s.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return bad(dir + ": not a directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  if (ec) return bad(dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty())
    return bad(dir + ": no counter files (DEVICE.ethtool, DEVICE.hw_counters, ...)");
  for (const auto& p : files) {
    const std::string name = p.filename().string(), where = p.string();
    const size_t dot = name.rfind('.');
    const std::string device = dot == std::string::npos ? "" : name.substr(0, dot);
    const std::string kind = dot == std::string::npos ? "" : name.substr(dot + 1);
    Result<CounterFile> (*parse)(std::string_view, const std::string&) = nullptr;
    if (kind == "ethtool") parse = parse_ethtool_stats;
    if (kind == "hw_counters") parse = parse_hw_counters;
    if (kind == "rdma_stat") parse = parse_rdma_stat;
    if (!parse || device.empty())
      return bad(where +
                 ": not DEVICE.ethtool, DEVICE.hw_counters or DEVICE.rdma_stat (the name says "
                 "which device and which tool printed it)");
    std::ifstream in(p, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return bad(where + ": cannot be read");
    auto f = parse(text.str(), where);
    if (!f) return std::unexpected(f.error());
    s.devices[device][kind] = std::move(*f);
    struct stat st {};
    if (::stat(where.c_str(), &st) == 0)
      s.mtime_s = std::max(s.mtime_s, double(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9);
  }
  return s;
}

}  // namespace weft::roce
