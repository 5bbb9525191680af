#include "weft/config/options.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

namespace weft::config {

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = {
      {"guid", Type::kString, "0x0", 0, 0, false,
       "port GUID the SM binds to (0x0 = first port that is up)"},
      {"max_wire_smps", Type::kInt, "64", 1, 256, true,
       "SMPs outstanding on the wire at once (64: as fast as 256 on ibsim's 444-switch tree; "
       "384 and up deadlock ibsim's umad2sim)"},
      {"transaction_timeout", Type::kInt, "200", 1, 60000, true, "ms to wait for an SMP reply"},
      {"transaction_retries", Type::kInt, "3", 0, 100, true, "extra attempts after a timeout"},
      {"sweep_interval", Type::kInt, "10", 0, 86400, true,
       "seconds between light sweeps (0 = none)"},
      {"lmc", Type::kInt, "0", 0, 7, false, "LID mask control: 2^lmc LIDs per CA port"},
      {"sm_priority", Type::kInt, "0", 0, 15, true, "SMInfo priority"},
      {"routing_engine", Type::kString, "minhop", 0, 0, false,
       "routing engines, a fallback chain: ftree,updn,minhop"},
      {"torus_config", Type::kString, "", 0, 0, false,
       "torus or mesh shape for dor (OpenSM torus-2QoS.conf subset)"},
      {"root_guid_file", Type::kString, "", 0, 0, false,
       "updn/dnup roots: a file of switch GUIDs, one per line (empty = detect)"},
      {"max_op_vls", Type::kInt, "5", 1, 5, false,
       "operational VLs: 1=VL0 2=VL0-1 3=VL0-3 4=VL0-7 5=VL0-14"},
      {"subnet_timeout", Type::kInt, "18", 0, 31, false,
       "PortInfo:SubnetTimeout (4.096us * 2^x), written whenever a port is configured"},
      {"log_file", Type::kString, "", 0, 0, false, "log file (empty = stderr)"},
      {"state_dir", Type::kString, "/var/lib/weft", 0, 0, false,
       "directory of persistent state (guid2lid)"},
  };
  return table;
}

namespace {
const OptionSpec* find(std::string_view name) {
  for (const auto& o : option_table())
    if (o.name == name) return &o;
  return nullptr;
}
}  // namespace

Values defaults() {
  Values v;
  for (const auto& o : option_table())
    v.v_[std::string(o.name)] = {std::string(o.default_value), "default"};
  return v;
}

long Values::get_int(std::string_view name) const {
  auto it = v_.find(name);
  return it == v_.end() ? 0 : std::stol(it->second.first);
}

const std::string& Values::get_str(std::string_view name) const {
  static const std::string empty;
  auto it = v_.find(name);
  return it == v_.end() ? empty : it->second.first;
}

const std::string& Values::origin(std::string_view name) const {
  static const std::string none = "unset";
  auto it = v_.find(name);
  return it == v_.end() ? none : it->second.second;
}

Result<void> set(Values& v, std::string_view name, std::string_view value,
                 const std::string& origin) {
  const OptionSpec* o = find(name);
  if (!o)
    return fail(Errc::kInvalidInput, origin + ": unknown option \"" + std::string(name) + "\"");
  if (o->type == Type::kInt) {
    long x = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
    if (ec != std::errc() || p != value.data() + value.size())
      return fail(Errc::kInvalidInput, origin + ": " + std::string(name) +
                                           " wants an integer, got \"" + std::string(value) + "\"");
    if (x < o->min || x > o->max)
      return fail(Errc::kInvalidInput, origin + ": " + std::string(name) + " = " +
                                           std::to_string(x) + " is outside " +
                                           std::to_string(o->min) + ".." + std::to_string(o->max));
  }
  if (name == "guid") {
    char* end = nullptr;
    std::string s(value);
    (void)std::strtoull(s.c_str(), &end, 0);
    if (s.empty() || *end)
      return fail(Errc::kInvalidInput,
                  origin + ": guid wants a number like 0x0002c90300001001, got \"" + s + "\"");
  }
  v.v_[std::string(name)] = {std::string(value), origin};
  return {};
}

Result<void> load_text(std::string_view text, const std::string& source, Values& v) {
  std::istringstream in{std::string(text)};
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string key, value, extra;
    if (!(ls >> key)) continue;
    const std::string where = source + ":" + std::to_string(no);
    if (!(ls >> value)) return fail(Errc::kInvalidInput, where + ": \"" + key + "\" has no value");
    if (ls >> extra)
      return fail(Errc::kInvalidInput,
                  where + ": unexpected \"" + extra + "\" after " + key + " " + value);
    if (value == "(null)") value.clear();  // OpenSM writes empty strings so
    if (auto r = set(v, key, value, where); !r) return r;
  }
  return {};
}

Result<void> load_file(const std::string& path, Values& v) {
  std::ifstream in(path);
  if (!in) return fail(Errc::kIo, path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return load_text(ss.str(), path, v);
}

}  // namespace weft::config
