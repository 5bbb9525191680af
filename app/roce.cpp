// weft roce: the lossless-RoCE profile, checked against a fabric, rendered per device,
// diffed against what devices hold, collected from a host, applied to a SONiC switch.
#include "commands.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>

#include "weft/roce/check.hpp"
#include "weft/roce/doctor.hpp"
#include "weft/roce/fabric.hpp"
#include "weft/roce/formats.hpp"
#include "weft/roce/profile.hpp"
#include "weft/roce/report.hpp"
#include "weft/roce/sonic_redis.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/text_file.hpp"

extern char** environ;

namespace weft::app {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace weft::roce;

namespace {

int roce_die(const std::string& msg, int code = 2) {
  return app::die("roce: " + msg, code);
}

const char* const kExit =
    "Exit status:\n"
    "  0  no errors found (warnings may be listed)\n"
    "  1  errors found, or (apply) CONFIG_DB could not be written or read back\n"
    "  2  bad usage or input";

const char* const kInputs =
    "Inputs:\n"
    "  The profile (--profile, YAML; left out: NVIDIA's lossless reference) holds the\n"
    "  mode (lossless or lossy), DSCP or PCP trust, the RoCE and CNP DSCPs and\n"
    "  priorities, the DSCP-to-priority and priority-to-TC maps, the PFC priorities and\n"
    "  watchdog, ETS shares, ECN thresholds per TC, DCQCN, MTU and the rdma_cm defaults;\n"
    "  an unknown key or a bad value is an error naming file and line. The fabric\n"
    "  (--fabric) is a YAML file of switches (os: sonic|cumulus, buffer parameters),\n"
    "  hosts and links with speed and cable length, or any weft topology (generator\n"
    "  spec, ibnetdiscover output, ibsim net file) with --speed and --length.";

const Help kCheckHelp{"roce check", "check the RoCE profile on a fabric",
                      "weft roce check [--profile P] --fabric F [--json]",
                      R"(Checks the profile, and the configuration it gives every host port, switch
port and link of the fabric: trust, DSCP and priority maps, PFC, ETS shares, a strict
CNP TC, DCQCN on the RoCE priority, rdma_cm ToS; switch queues, priority groups,
headroom for the cable's real length, WRED with ECN on the RoCE queue, the PFC
watchdog; the same PFC set, MTU and trust at both ends of each link; one DSCP map
fabric-wide; and no cycle in the lossless buffer-dependency graph over the ECMP
shortest paths. Each finding names device, port, field, expected and observed.)",
                      R"(Examples:
  weft roce check --fabric fabric.yaml
  weft roce check --profile lossless.yaml --fabric ft2:leaves=8,spines=4,hosts=16 \
      --speed 200G --length 5m --json)"};
const Help kRenderHelp{
    "roce render", "render one device's configuration",
    "weft roce render [--profile P] [--fabric F] --device D --format dcb|sonic|nvue [--port IF]",
    R"(Writes what device D should hold: for a host, iproute2 dcb commands with the mlx5
sysfs and rdma_cm configfs settings (dcb); for a switch, SONiC config_db JSON
(sonic) or Cumulus NVUE commands (nvue).)",
    R"(Examples:
  weft roce render --fabric fabric.yaml --device leaf1 --format sonic > leaf1.json
  weft roce render --fabric fabric.yaml --device h1 --format dcb --port eth0)"};
const Help kDiffHelp{
    "roce diff", "compare what devices hold with what the profile asks",
    "weft roce diff [--profile P] [--fabric F] --observed FILE|redis://HOST:PORT/4 ... "
    "[--literal] [--verbose] [--json]",
    R"(Reads what devices hold (host snapshots from weft roce collect, dcb scripts,
SONiC config_db JSON, NVUE commands, or a switch's CONFIG_DB over redis://),
compares what traffic meets on them with what the profile asks, runs the same
checks on what was read, and warns where applying the profile would flap a link.

By effect (the default): for every DSCP (or PCP, under PCP trust) traffic can
carry, its priority, TC, queue and priority group on each side, and what they mean
for it: lossless or not, ECN marking, its scheduler (strict, or its share of the
weights in use), the CNP path. An error is a RoCE or CNP flow treated otherwise
(lossy, unmarked, starved, scheduled differently), or other traffic made lossy or
starved, and names the entry that causes it; other traffic treated otherwise is a
warning. Entries no traffic reaches, and spellings that mean the same (a
platform's identity TC-to-queue map beside weft's), are info, listed with
--verbose. --literal compares field by field with what weft would render
instead.)",
    R"(Examples:
  weft roce diff --fabric fabric.yaml --observed h1.json leaf1-config_db.json
  weft roce diff --fabric fabric.yaml --device leaf1 --observed redis://10.0.0.1:6379/4)"};
const Help kCollectHelp{"roce collect", "snapshot a host port's RoCE settings",
                        "weft roce collect IF [--host NAME] [-o FILE] [--counters DIR]\n"
                        "weft roce collect --sonic redis://HOST:PORT/2 --device D --counters DIR\n"
                        "weft roce collect --sonic redis://HOST:PORT/2 --device D --counters DIR",
                        R"(On a host: runs dcb -j show for the interface's app, apptrust, pfc, ets,
buffer, maxrate and dcbx tables, reads the mlx5 ecn/ sysfs knobs and the rdma_cm
configfs defaults of its RDMA device, and writes one JSON snapshot that weft roce
diff reads. With --counters DIR it also writes the port's counters as weft roce
doctor reads them: DIR/HOST.ethtool (ethtool -S IF) and DIR/HOST.hw_counters (its
RDMA device's hw_counters, as grep -H prints them). With --sonic it takes a SONiC
switch's side instead: DIR/D.counters_db, the ports' and queues' counters read
from its COUNTERS_DB.)",
                        R"(Examples:
  weft roce collect eth0 -o $(hostname)-eth0.json
  weft roce collect eth0 --counters t0 -o /dev/null; sleep 10
  weft roce collect eth0 --counters t1 -o /dev/null)"};
const Help kApplyHelp{
    "roce apply", "write a switch's configuration into its SONiC CONFIG_DB",
    "weft roce apply [--profile P] --fabric F --device D --sonic redis://HOST:PORT/4",
    R"(Renders switch D's tables, writes them into CONFIG_DB in one MULTI/EXEC
(replacing the entries weft owns, merging PORT so a port keeps its lanes and
alias), reads them back and prints the diff. A profile that fails its own checks
is not applied.)",
    R"(Examples:
  weft roce apply --fabric fabric.yaml --device leaf1 --sonic redis://127.0.0.1:6379/4)"};

// A roce command's page: its own help, then what every roce command takes.
std::string sections_of(const Help& h) {
  return std::string(h.sections) + (h.sections.empty() ? "" : "\n\n") + kInputs + "\n\n" + kExit;
}
// A roce command's line into `vm`: nullopt to go on, else the exit status.
std::optional<int> parse(int argc, char** argv, const po::options_description& o,
                         po::variables_map& vm, const Help& h,
                         const po::positional_options_description* pos = nullptr) {
  const std::string sections = sections_of(h);
  const Help full{h.name, h.summary, h.synopsis, h.description, sections};
  return parse_command_line(argc, argv, o, vm, full, pos);
}

po::options_description common_options() {
  po::options_description o("Options");
  o.add_options()("help,h", "this help")(
      "profile", po::value<std::string>(),
      "RoCE profile (YAML); default: NVIDIA's lossless reference")(
      "fabric", po::value<std::string>(), "fabric YAML, or a weft topology spec or file")(
      "speed", po::value<std::string>()->default_value("100G"), "link speed for a weft topology")(
      "length", po::value<std::string>()->default_value("3m"), "cable length for a weft topology")(
      "json", "findings as JSON");
  return o;
}

struct Inputs {
  roce::RoceProfile profile;
  std::optional<roce::RoceFabric> fabric;
};

Result<Inputs> load_inputs(const po::variables_map& vm, bool fabric_required) {
  Inputs in;
  if (vm.count("profile")) {
    auto p = roce::load_roce_profile(vm["profile"].as<std::string>());
    if (!p) return std::unexpected(p.error());
    in.profile = std::move(*p);
  } else {
    in.profile = roce::default_roce_profile();
  }
  if (!vm.count("fabric")) {
    if (fabric_required) return fail(Errc::kInvalidInput, "--fabric is required");
    return in;
  }
  const std::string f = vm["fabric"].as<std::string>();
  if (f.ends_with(".yaml") || f.ends_with(".yml")) {
    auto fab = roce::load_roce_fabric(f);
    if (!fab) return std::unexpected(fab.error());
    in.fabric = std::move(*fab);
    return in;
  }
  uint64_t speed = 0, length = 0;
  if (!roce::parse_speed_mbps(vm["speed"].as<std::string>(), &speed) || !speed)
    return fail(Errc::kInvalidInput, "--speed: expected a speed like 100G");
  if (!roce::parse_length_m(vm["length"].as<std::string>(), &length))
    return fail(Errc::kInvalidInput, "--length: expected a length like 3m");
  auto topo = simulator::make_fabric(f);
  if (!topo) return std::unexpected(topo.error());
  in.fabric = roce_fabric_from_topology(*topo, speed, length);
  in.fabric->source = f;
  return in;
}

int report(std::vector<Finding> findings, bool as_json, const std::string& summary) {
  sort_findings(findings);
  const size_t errs = errors(findings);
  if (as_json) {
    json out = json::array();
    for (const auto& f : findings) out.push_back(finding_json(f));
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const auto& f : findings) std::cout << to_text(f) << "\n";
    size_t warnings = 0;
    for (const auto& f : findings) warnings += f.severity == Severity::kWarning;
    std::cout << summary << (summary.empty() ? "" : ": ") << errs << " errors, " << warnings
              << " warnings\n";
  }
  return errs ? 1 : 0;
}

po::options_description check_options() {
  return common_options();
}

int cmd_check(int argc, char** argv) {
  const po::options_description o = check_options();
  po::variables_map vm;
  if (auto rc = parse(argc, argv, o, vm, kCheckHelp)) return *rc;
  const auto t0 = std::chrono::steady_clock::now();
  auto in = load_inputs(vm, true);
  if (!in) return roce_die(in.error().message);
  const auto t1 = std::chrono::steady_clock::now();
  auto checked = check_fabric(in->profile, *in->fabric);
  std::vector<Finding>& findings = checked.findings;
  const size_t inherited = checked.inherited;
  if (inherited && !vm.count("json"))
    std::printf("(%zu findings on device ports repeat the profile's own, listed once)\n",
                inherited);
  const auto t2 = std::chrono::steady_clock::now();
  size_t hosts = 0, switches = 0, ports = 0;
  for (const auto& d : in->fabric->devices) {
    (d.kind == roce::DeviceKind::kSwitch ? switches : hosts) += 1;
    ports += d.ports.size();
  }
  char summary[256];
  std::snprintf(
      summary, sizeof summary,
      "%zu switches, %zu hosts, %zu ports, %zu links; loaded in %.0f ms, checked in %.0f ms",
      switches, hosts, ports, in->fabric->links.size(),
      std::chrono::duration<double, std::milli>(t1 - t0).count(),
      std::chrono::duration<double, std::milli>(t2 - t1).count());
  return report(std::move(findings), vm.count("json"), summary);
}

po::options_description render_options() {
  po::options_description o = common_options();
  o.add_options()("device", po::value<std::string>(), "host or switch name")(
      "format", po::value<std::string>(), "dcb (hosts), sonic or nvue (switches)")(
      "port", po::value<std::string>(), "one host port (default: every port of the host)");
  return o;
}

int cmd_render(int argc, char** argv) {
  const po::options_description o = render_options();
  po::variables_map vm;
  if (auto rc = parse(argc, argv, o, vm, kRenderHelp)) return *rc;
  if (!vm.count("device") || !vm.count("format"))
    return roce_die("--device and --format are required");
  const std::string dev = vm["device"].as<std::string>(), fmt = vm["format"].as<std::string>();
  if (fmt != "dcb" && fmt != "sonic" && fmt != "nvue")
    return roce_die("--format: expected dcb, sonic or nvue");
  auto in = load_inputs(vm, false);
  if (!in) return roce_die(in.error().message);
  const roce::RoceFabric* f = in->fabric ? &*in->fabric : nullptr;
  const int d = f ? f->device(dev) : -1;
  if (fmt == "dcb") {
    if (d >= 0 && f->devices[d].kind != roce::DeviceKind::kHost)
      return roce_die(dev + " is a switch: use sonic or nvue");
    if (d < 0) {
      if (f) return roce_die("the fabric has no host \"" + dev + "\"");
      if (!vm.count("port")) return roce_die("without --fabric, name the host port with --port");
      std::cout << render_dcb(intend_host(in->profile, dev, vm["port"].as<std::string>()), "", 1);
      return 0;
    }
    int shown = 0;
    for (int p = 0; p < static_cast<int>(f->devices[d].ports.size()); ++p) {
      const auto& port = f->devices[d].ports[p];
      if (vm.count("port") && port.name != vm["port"].as<std::string>()) continue;
      std::cout << (shown++ ? "\n" : "")
                << render_dcb(intend_host(in->profile, f, d, p), port.rdma, port.rdma_port);
    }
    if (!shown) return roce_die(dev + " has no port " + vm["port"].as<std::string>());
    return 0;
  }
  if (d < 0)
    return roce_die(f ? "the fabric has no switch \"" + dev + "\""
                      : "rendering a switch needs --fabric");
  if (f->devices[d].kind != roce::DeviceKind::kSwitch) return roce_die(dev + " is a host: use dcb");
  const SwitchConfig s = intend_switch(in->profile, f, d);
  if (fmt == "sonic")
    std::cout << render_sonic(s).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  else
    std::cout << render_nvue(s);
  return 0;
}

// One observed device, whichever format it came in.
Result<Observed> read_observed(const std::string& src, const std::string& device) {
  Observed o;
  if (src.starts_with("redis://")) {
    auto url = parse_redis_url(src);
    if (!url) return std::unexpected(url.error());
    auto db = read_config_db(*url);
    if (!db) return std::unexpected(db.error());
    auto s = parse_sonic_db(*db, src, device);
    if (!s) return std::unexpected(s.error());
    o.sw = std::move(s->config);
    o.warnings = std::move(s->warnings);
    return o;
  }
  auto text = read_text_file(src);
  if (!text) return std::unexpected(text.error());
  return parse_observed(*text, src, device);
}

po::options_description diff_options() {
  po::options_description o = common_options();
  o.add_options()(
      "observed", po::value<std::vector<std::string>>()->multitoken(),
      "observed configurations: host snapshots, dcb scripts, config_db JSON, NVUE, redis:// URLs")(
      "device", po::value<std::string>(), "device name for a file that does not carry one")(
      "literal", "compare field by field with what weft renders, not by effect")(
      "verbose", "also list the entries that differ without changing any treatment");
  return o;
}

int cmd_diff(int argc, char** argv) {
  const po::options_description o = diff_options();
  po::variables_map vm;
  if (auto rc = parse(argc, argv, o, vm, kDiffHelp)) return *rc;
  if (!vm.count("observed")) return roce_die("--observed is required");
  auto in = load_inputs(vm, false);
  if (!in) return roce_die(in.error().message);
  const roce::RoceFabric* f = in->fabric ? &*in->fabric : nullptr;
  const std::string device = vm.count("device") ? vm["device"].as<std::string>() : "";
  std::vector<Observed> seen;
  for (const auto& src : vm["observed"].as<std::vector<std::string>>()) {
    auto ob = read_observed(src, device);
    if (!ob) return roce_die(ob.error().message);
    for (const auto& w : ob->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    seen.push_back(std::move(*ob));
  }
  auto d = diff_observed(in->profile, f, seen,
                         vm.count("literal") ? DiffMode::kLiteral : DiffMode::kEffect);
  std::string summary =
      std::to_string(d.hosts) + " host ports, " + std::to_string(d.switches) + " switches observed";
  if (!d.unreached.empty() && !vm.count("verbose"))
    summary += " (" + std::to_string(d.unreached.size()) +
               " entries differ without changing any treatment: --verbose lists them)";
  if (vm.count("verbose")) {
    sort_findings(d.unreached);
    if (!vm.count("json")) {
      std::cout << "Entries that differ without changing any treatment:\n";
      for (const auto& x : d.unreached) std::cout << "  " << to_text(x) << "\n";
      if (d.unreached.empty()) std::cout << "  none\n";
    } else {
      d.findings.insert(d.findings.end(), d.unreached.begin(), d.unreached.end());
    }
  }
  return report(std::move(d.findings), vm.count("json"), summary);
}

// Runs argv (no shell) and returns its standard output, or an error with its stderr.
Result<std::string> run_capture(const std::vector<std::string>& args) {
  int out[2], err[2];
  if (pipe(out) || pipe(err)) return fail(Errc::kIo, "pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  std::string o, e;
  auto drain = [](int fd, std::string& s) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<size_t>(n));
    close(fd);
  };
  drain(out[0], o);
  drain(err[0], e);
  if (rc != 0) return fail(Errc::kIo, args[0] + ": cannot run: " + std::strerror(rc));
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
    return fail(Errc::kIo, e.empty() ? args[0] + " failed" : e);
  }
  return o;
}

std::optional<int64_t> read_int_file(const fs::path& p) {
  std::ifstream in(p);
  int64_t x = 0;
  if (in >> x) return x;
  return std::nullopt;
}

po::options_description collect_options() {
  po::options_description o("Options");
  o.add_options()("help,h", "this help")("ifname", po::value<std::string>(), "the host port")(
      "host", po::value<std::string>(), "host name (default: this host's)")(
      "output,o", po::value<std::string>(), "write here instead of stdout")(
      "dcb", po::value<std::string>()->default_value("dcb"), "the dcb program")(
      "sysfs", po::value<std::string>()->default_value("/sys"), "sysfs root")(
      "configfs", po::value<std::string>()->default_value("/sys/kernel/config"), "configfs root")(
      "counters", po::value<std::string>(),
      "also write the port's counters into this directory for weft roce doctor: "
      "HOST.ethtool (ethtool -S) and HOST.hw_counters (the RDMA device's)")(
      "ethtool", po::value<std::string>()->default_value("ethtool"), "the ethtool program")(
      "sonic", po::value<std::string>(),
      "a SONiC switch instead: its COUNTERS_DB (redis://HOST:PORT/2) into --counters DIR")(
      "device", po::value<std::string>(), "the switch's name (with --sonic)");
  return o;
}

// weft roce collect --sonic URL --device D --counters DIR: a switch's side of a doctor
// snapshot, DIR/D.counters_db, read from its COUNTERS_DB and checked by the doctor's parser.
int collect_switch_counters(const po::variables_map& vm) {
  if (!vm.count("device") || !vm.count("counters"))
    return roce_die("collect: --sonic needs --device NAME and --counters DIR");
  auto url = parse_redis_url(vm["sonic"].as<std::string>());
  if (!url) return roce_die("collect: " + url.error().message);
  auto db = read_counters_db(*url);
  if (!db) return roce_die("collect: " + db.error().message, 1);
  const std::string text = db->dump(1) + "\n";
  if (auto ok = parse_counters_db(text, url->text()); !ok)
    return roce_die("collect: " + ok.error().message, 1);
  const fs::path dir = vm["counters"].as<std::string>();
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream out(dir / (vm["device"].as<std::string>() + ".counters_db"), std::ios::binary);
  if (ec || !(out << text)) return roce_die("collect: cannot write into " + dir.string());
  return 0;
}

// weft roce collect --counters DIR: the port's counters as weft roce doctor reads them,
// each checked by the doctor's own parser before it is written.
int collect_counters(const po::variables_map& vm, const std::string& ifname,
                     const std::string& host, const fs::path& net) {
  const fs::path dir = vm["counters"].as<std::string>();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return roce_die("collect: " + dir.string() + ": " + ec.message());
  auto save = [&](const std::string& name, const std::string& text) {
    std::ofstream out(dir / name, std::ios::binary);
    return bool(out << text);
  };
  auto eth = run_capture({vm["ethtool"].as<std::string>(), "-S", ifname});
  if (!eth) return roce_die("collect: ethtool -S " + ifname + ": " + eth.error().message, 1);
  if (auto ok = parse_ethtool_stats(*eth, "ethtool -S " + ifname, doctor_reads); !ok)
    return roce_die("collect: " + ok.error().message, 1);
  if (!save(host + ".ethtool", *eth)) return roce_die("collect: cannot write into " + dir.string());
  // The RDMA device behind the netdev, and its port (dev_port counts from 0).
  std::string rdma;
  for (const auto& e : fs::directory_iterator(net / "device/infiniband", ec)) {
    rdma = e.path().filename().string();
    break;
  }
  if (rdma.empty())
    return roce_die(
        "collect: " + ifname + " has no RDMA device (" + (net / "device/infiniband").string() + ")",
        1);
  const fs::path hw = fs::path(vm["sysfs"].as<std::string>()) / "class/infiniband" / rdma /
                      "ports" / std::to_string(read_int_file(net / "dev_port").value_or(0) + 1) /
                      "hw_counters";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(hw, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  if (files.empty()) return roce_die("collect: no RDMA counters in " + hw.string(), 1);
  std::sort(files.begin(), files.end());  // as grep -H . DIR/* prints them
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string v;
    if (std::getline(in, v)) text += f.string() + ":" + v + "\n";
  }
  if (auto ok = parse_hw_counters(text, hw.string(), doctor_reads); !ok)
    return roce_die("collect: " + ok.error().message, 1);
  if (!save(host + ".hw_counters", text))
    return roce_die("collect: cannot write into " + dir.string());
  return 0;
}

int cmd_collect(int argc, char** argv) {
  const po::options_description o = collect_options();
  po::positional_options_description pos;
  pos.add("ifname", 1);
  po::variables_map vm;
  if (auto rc = parse(argc, argv, o, vm, kCollectHelp, &pos)) return *rc;
  if (vm.count("sonic")) return collect_switch_counters(vm);
  if (!vm.count("ifname")) return roce_die("collect: name the interface (weft roce collect IF)");
  const std::string ifname = vm["ifname"].as<std::string>();
  const fs::path sys = vm["sysfs"].as<std::string>();
  const fs::path net = sys / "class/net" / ifname;
  if (!fs::exists(net))
    return roce_die("collect: no interface " + ifname + " (" + net.string() + ")");
  std::string host;
  if (vm.count("host")) {
    host = vm["host"].as<std::string>();
  } else {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    host = buf;
  }
  json snap = {{"host", host}, {"ifname", ifname}, {"dcb", json::object()}};
  int missing = 0;
  for (const char* obj : {"app", "apptrust", "pfc", "ets", "buffer", "maxrate", "dcbx"}) {
    auto r = run_capture({vm["dcb"].as<std::string>(), "-j", obj, "show", "dev", ifname});
    if (!r) {
      std::fprintf(stderr, "warning: dcb %s show dev %s: %s\n", obj, ifname.c_str(),
                   r.error().message.c_str());
      ++missing;
      continue;
    }
    try {
      snap["dcb"][obj] = json::parse(*r);
    } catch (const json::parse_error& e) {
      std::fprintf(stderr, "warning: dcb %s: not JSON: %s\n", obj, e.what());
      ++missing;
    }
  }
  json ecn = json::object();
  for (const char* side : {"roce_np", "roce_rp"}) {
    const fs::path dir = net / "ecn" / side;
    if (!fs::is_directory(dir)) continue;
    json s = json::object();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_directory()) {
        json sub = json::object();
        for (const auto& f : fs::directory_iterator(e.path(), ec))
          if (auto v = read_int_file(f.path())) sub[f.path().filename().string()] = *v;
        s[name] = sub;
      } else if (auto v = read_int_file(e.path())) {
        s[name] = *v;
      }
    }
    ecn[side] = s;
  }
  if (ecn.empty())
    std::fprintf(stderr, "warning: %s has no ecn/ directory (not an mlx5 port?)\n", ifname.c_str());
  snap["ecn"] = ecn;
  if (auto mtu = read_int_file(net / "mtu")) snap["mtu"] = *mtu;
  json cm = json::object();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(net / "device/infiniband", ec)) {
    const fs::path dir =
        fs::path(vm["configfs"].as<std::string>()) / "rdma_cm" / e.path().filename();
    const bool made = !fs::exists(dir) && fs::create_directory(dir, ec);
    // The netdev's port of the RDMA device: dev_port counts from 0, rdma_cm's ports from 1.
    const std::string port =
        "ports/" + std::to_string(read_int_file(net / "dev_port").value_or(0) + 1);
    if (auto v = read_int_file(dir / port / "default_roce_tos")) cm["default_roce_tos"] = *v;
    std::ifstream mode(dir / port / "default_roce_mode");
    std::string m;
    if (std::getline(mode, m)) cm["default_roce_mode"] = m;
    if (made) fs::remove(dir, ec);
    break;
  }
  snap["rdma_cm"] = cm;
  if (vm.count("counters"))
    if (int rc = collect_counters(vm, ifname, host, net)) return rc;
  const std::string text =
      snap.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (vm.count("output")) {
    std::ofstream out(vm["output"].as<std::string>());
    if (!(out << text)) return roce_die("cannot write " + vm["output"].as<std::string>());
  } else {
    std::cout << text;
  }
  if (missing == 7) return roce_die("dcb answered nothing for " + ifname + " (no DCB support?)", 1);
  return 0;
}

po::options_description apply_options() {
  po::options_description o = common_options();
  o.add_options()("device", po::value<std::string>(), "the switch")(
      "sonic", po::value<std::string>(), "the switch's CONFIG_DB: redis://HOST:PORT/4");
  return o;
}

int cmd_apply(int argc, char** argv) {
  const po::options_description o = apply_options();
  po::variables_map vm;
  if (auto rc = parse(argc, argv, o, vm, kApplyHelp)) return *rc;
  if (!vm.count("device") || !vm.count("sonic"))
    return roce_die("--device and --sonic are required");
  auto in = load_inputs(vm, true);
  if (!in) return roce_die(in.error().message);
  const auto& f = *in->fabric;
  const int d = f.device(vm["device"].as<std::string>());
  if (d < 0 || f.devices[d].kind != roce::DeviceKind::kSwitch)
    return roce_die("the fabric has no switch \"" + vm["device"].as<std::string>() + "\"");
  auto url = parse_redis_url(vm["sonic"].as<std::string>());
  if (!url) return roce_die(url.error().message);
  const SwitchConfig want = intend_switch(in->profile, &f, d);
  // Refuse to push a profile that fails its own checks.
  auto pre = check_profile(in->profile);
  if (errors(pre))
    return report(std::move(pre), vm.count("json"), "profile has errors; nothing applied");
  auto st = write_config_db(*url, render_sonic(want));
  if (!st) return roce_die(st.error().message, 1);
  std::fprintf(stderr, "applied to %s: %zu keys (%zu replaced whole), %zu fields\n",
               url->text().c_str(), st->keys, st->replaced, st->fields);
  auto back = read_config_db(*url);
  if (!back) return roce_die("read back: " + back.error().message, 1);
  auto have = parse_sonic_db(*back, url->text(), want.device);
  if (!have) return roce_die("read back: " + have.error().message, 1);
  have->config.device = want.device;
  return report(diff(want, have->config), vm.count("json"), "read back from " + url->text());
}

const Help kDoctorHelp{
    "roce doctor", "diagnose a lossless fabric from two snapshots of its counters",
    "weft roce doctor --before DIR --after DIR [--interval SECONDS] [--profile P] [--fabric F] "
    "[--json]",
    R"(Compares two snapshots of the counters hosts and switches keep, taken an interval apart, and says
why a fabric that looks configured right is slow: a PFC storm, pause on the wrong
priority or global pause, RoCE running lossy, no ECN marking under pressure, DCQCN
off at the notification or reaction point, CNPs that never arrive, drops on the
lossless priority, retransmission, link errors, slow restart; and what is the
host's own fault (receivers not ready, out of receive buffers). Each finding names
the device, port and priority, the counter deltas that show it, and what to do.

Each DIR holds one file per device and source, the text as the tool printed it:
  DEVICE.ethtool      ethtool -S IF
  DEVICE.hw_counters  grep -H . /sys/class/infiniband/DEV/ports/N/hw_counters/*
  DEVICE.rdma_stat    rdma statistic show link DEV/N
  DEVICE.pfc          show pfc counters      (SONiC)
  DEVICE.queue        show queue counters    (SONiC)
  DEVICE.pfcwd        show pfcwd stats       (SONiC)
  DEVICE.wred         show queue wredcounters  (SONiC: its ECN marks)
  DEVICE.pg_drop      show priority-group drop counters  (SONiC)
  DEVICE.pg_headroom  show priority-group persistent-watermark headroom  (SONiC)
  DEVICE.counters_db  sonic-db-dump -n COUNTERS_DB  (SONiC, instead of the tables)
Then it tells who pauses whom: each port that sent pause frames on a lossless
priority, and (with --fabric) the port at the other end of its link.
A file in one DIR only, a pair from two different ports, or a counter that went
down (the snapshots swapped, or a reset between them) is refused. A counter a
diagnosis needs that the files lack is said once per device ("cannot_tell").
The interval defaults to the difference of the newest files' modification times.)",
    R"(Examples:
  weft roce doctor --before t0 --after t1 --interval 10
  weft roce doctor --before t0 --after t1 --profile lossless.yaml --json)"};

po::options_description doctor_options() {
  po::options_description o("Options");
  o.add_options()("help,h", "this help")("before", po::value<std::string>(),
                                         "the first snapshot's directory")(
      "after", po::value<std::string>(), "the second snapshot's directory")(
      "interval", po::value<double>(), "seconds between them (default: the files' mtimes)")(
      "profile", po::value<std::string>(),
      "RoCE profile (YAML); default: NVIDIA's lossless reference")(
      "fabric", po::value<std::string>(),
      "fabric YAML, or a weft topology: names whom each pausing port pauses")(
      "speed", po::value<std::string>()->default_value("100G"), "link speed for a weft topology")(
      "length", po::value<std::string>()->default_value("3m"), "cable length for a weft topology")(
      "json", "findings as JSON");
  return o;
}

int cmd_doctor(int argc, char** argv) {
  const po::options_description o = doctor_options();
  po::variables_map vm;
  if (auto rc = parse(argc, argv, o, vm, kDoctorHelp)) return *rc;
  if (!vm.count("before") || !vm.count("after"))
    return roce_die("doctor: --before DIR and --after DIR are required");
  auto in = load_inputs(vm, false);
  if (!in) return roce_die("doctor: " + in.error().message);
  // The two directories read at once, one a thread.
  auto later =
      std::async(std::launch::async, load_counter_dir, vm["after"].as<std::string>(), doctor_reads);
  auto before = load_counter_dir(vm["before"].as<std::string>(), doctor_reads);
  auto after = later.get();
  if (!before) return roce_die("doctor: " + before.error().message);
  if (!after) return roce_die("doctor: " + after.error().message);
  const double interval =
      vm.count("interval") ? vm["interval"].as<double>() : after->mtime_s - before->mtime_s;
  auto d = diagnose(*before, *after, interval, in->profile, in->fabric ? &*in->fabric : nullptr);
  if (!d) return roce_die("doctor: " + d.error().message);
  if (vm.count("json"))
    std::cout << diagnosis_json(*d).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  else
    std::cout << render_diagnosis(*d);
  return d->any_error() ? 1 : 0;
}

}  // namespace

const Help kRoceHelp{
    "roce", "check, render, diff, collect and apply the lossless RoCE profile",
    "weft roce check [--profile P] --fabric F [--json]\n"
    "weft roce render [--profile P] [--fabric F] --device D --format dcb|sonic|nvue [--port IF]\n"
    "weft roce diff [--profile P] [--fabric F] --observed FILE|redis://HOST:PORT/4 ... [--json]\n"
    "weft roce collect IF [--host NAME] [-o FILE] [--counters DIR]\n"
    "weft roce apply [--profile P] --fabric F --device D --sonic redis://HOST:PORT/4\n"
    "weft roce doctor --before DIR --after DIR [--interval SECONDS] [--profile P] [--fabric F] "
    "[--json]",
    R"(weft's RoCE fabric controller holds one lossless-RoCE profile for a whole Ethernet
fabric (PFC, DSCP trust and mapping, ETS, ECN, DCQCN, buffer headroom): check
checks it against the fabric, render writes one device's configuration, diff
compares what devices hold with it, collect snapshots a host port, apply writes a
SONiC switch's CONFIG_DB, doctor says why a fabric is slow from its counters. weft
roce COMMAND --help describes each.)",
    ""};

std::vector<ManEntry> roce_man_entries() {
  return {{&kCheckHelp, check_options()}, {&kRenderHelp, render_options()},
          {&kDiffHelp, diff_options()},   {&kCollectHelp, collect_options()},
          {&kApplyHelp, apply_options()}, {&kDoctorHelp, doctor_options()}};
}

int cmd_roce(int argc, char** argv) {
  struct Sub {
    const char* name;
    int (*run)(int, char**);
  };
  static const Sub kSubs[] = {{"check", cmd_check}, {"render", cmd_render},
                              {"diff", cmd_diff},   {"collect", cmd_collect},
                              {"apply", cmd_apply}, {"doctor", cmd_doctor}};
  const std::string_view sub = argc < 2 ? "" : argv[1];
  if (sub == "-h" || sub == "--help" || sub == "help") {
    const std::string sections = sections_of(kRoceHelp);
    print_help(std::cout,
               Help{kRoceHelp.name, kRoceHelp.summary, kRoceHelp.synopsis, kRoceHelp.description,
                    sections},
               nullptr);
    return 0;
  }
  for (const auto& s : kSubs)
    if (sub == s.name) return s.run(argc - 1, argv + 1);
  if (sub.empty())
    return roce_die(
        "name a command: check, render, diff, collect, apply or doctor (weft roce --help)");
  return roce_die("unknown command \"" + std::string(sub) + "\" (weft roce --help)");
}

}  // namespace weft::app
