// weft — InfiniBand subnet manager. Subcommands:
//   weft sm    the master SM on an HCA port (libibumad; ibsim under umad2sim)
//   weft sim   the same SM on an in-process simulated fabric
//   weft topo  write a generated topology as an ibsim net file
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stop_token>
#include <thread>

#include "read_file.hpp"
#include "roce.hpp"
#include "route.hpp"
#include "weft/config/options.hpp"
#include "weft/config/partitions.hpp"
#include "weft/config/qos_policy.hpp"
#include "weft/fabric/topology_file.hpp"
#include "weft/log.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/routing/analysis.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/lid_manager.hpp"
#include "weft/sm/state_dir.hpp"
#include "weft/sm/subnet_manager.hpp"
#include "weft/sm/umad_transport.hpp"

namespace po = boost::program_options;
using namespace weft;

namespace {

constexpr const char* kUsage =
    "usage: weft <command> [options]\n"
    "  sm     run the master SM on an HCA port      (weft sm --help)\n"
    "  sim    run the SM on a simulated fabric      (weft sim --help)\n"
    "  topo   write a generated fabric as a net file (weft topo --help)\n"
    "  route  route a topology offline and grade the tables (weft route --help)\n"
    "  config check FILE  load an opensm.conf (and its partitions file) and report\n"
    "  roce   check, render, diff, collect and apply the lossless RoCE profile (weft roce help)\n";

int die(const std::string& msg, int code = 2) {
  std::fprintf(stderr, "weft: %s\n", msg.c_str());
  return code;
}

po::options_description sm_options() {
  po::options_description o("SM options");
  o.add_options()("help,h", "this help")(
      "once", "one bring-up, then exit: 0 when the subnet is up, 1 (with the reason) when not")(
      "config", po::value<std::string>(), "OpenSM-style option file (key value lines)")(
      "state-dir", po::value<std::string>(), "persistent state (guid2lid); default /var/lib/weft")(
      "log-file", po::value<std::string>(), "log here instead of stderr")(
      "log-level", po::value<std::string>()->default_value("info"), "debug, info, warn, error")(
      "window", po::value<std::string>(), "SMPs on the wire at once (max_wire_smps)")(
      "timeout", po::value<std::string>(), "ms per SMP attempt (transaction_timeout)")(
      "retries", po::value<std::string>(), "extra attempts (transaction_retries)")(
      "sweep-interval", po::value<std::string>(), "seconds between light sweeps (sweep_interval)")(
      "routing-engine", po::value<std::string>(),
      "routing engines, a fallback chain: ftree,updn,minhop (routing_engine)")(
      "torus-config", po::value<std::string>(), "dor's torus or mesh shape (torus_config)")(
      "root-guids", po::value<std::string>(),
      "updn/dnup roots, one GUID per line (root_guid_file)")("lmc", po::value<std::string>(),
                                                             "LID mask control (lmc)")(
      "priority", po::value<std::string>(), "SMInfo priority (sm_priority)")(
      "dump-model", po::value<std::string>(),
      "after the bring-up, write the discovered model here");
  return o;
}

Result<config::Values> build_config(const po::variables_map& vm) {
  config::Values v = config::defaults();
  if (vm.count("config"))
    if (auto r = config::load_file(vm["config"].as<std::string>(), v); !r)
      return std::unexpected(r.error());
  const std::pair<const char*, const char*> flags[] = {
      {"state-dir", "state_dir"},           {"log-file", "log_file"},
      {"window", "max_wire_smps"},          {"timeout", "transaction_timeout"},
      {"retries", "transaction_retries"},   {"sweep-interval", "sweep_interval"},
      {"routing-engine", "routing_engine"}, {"lmc", "lmc"},
      {"priority", "sm_priority"},          {"guid", "guid"},
      {"root-guids", "root_guid_file"},     {"torus-config", "torus_config"}};
  for (auto [flag, key] : flags)
    if (vm.count(flag))
      if (auto r = config::set(v, key, vm[flag].as<std::string>(), std::string("--") + flag); !r)
        return std::unexpected(r.error());
  if (auto e = routing::EngineChain::parse(v.get_str("routing_engine")); !e)
    return fail(Errc::kInvalidInput, v.origin("routing_engine") + ": " + e.error().message);
  return v;
}

// A file an option names (`key`): nullopt when none is set, or when it is OpenSM's
// default path and that file does not exist (OpenSM's rule: no partitions file means
// Default=0x7fff : ALL=full; no policy file, no policy). Any other missing file is an
// error naming the option and where it was set.
template <class T>
Result<std::optional<T>> load_option_file(const config::Values& v, const char* key,
                                          const char* opensm_default,
                                          Result<T> (*load)(const std::string&)) {
  const std::string path = v.get_str(key);
  if (path.empty() || (path == opensm_default && !std::filesystem::exists(path)))
    return std::optional<T>{};
  auto got = load(path);
  if (!got) {
    if (got.error().code == Errc::kIo)
      return fail(Errc::kIo, v.origin(key) + ": " + key + " " + got.error().message);
    return std::unexpected(got.error());
  }
  return std::optional<T>(std::move(*got));
}

Result<std::optional<config::PartitionPolicy>> load_partition_file(const config::Values& v) {
  return load_option_file<config::PartitionPolicy>(
      v, "partition_config_file", "/etc/opensm/partitions.conf", &config::load_partitions);
}

Result<std::optional<config::QosPolicy>> load_qos_policy_file(const config::Values& v) {
  return load_option_file<config::QosPolicy>(v, "qos_policy_file", "/etc/opensm/qos-policy.conf",
                                             &config::load_qos_policy);
}

bool chain_has(const std::string& chain, std::string_view engine) {
  std::stringstream ss(chain);
  std::string e;
  while (std::getline(ss, e, ','))
    if (e == engine) return true;
  return false;
}

Result<sm::SmOptions> sm_opts(const config::Values& v) {
  sm::SmOptions o;
  for (const auto& w : v.warnings()) WEFT_LOG(Warn, "CFG-0001") << w;
  if (const std::string path = v.get_str("root_guid_file"); !path.empty()) {
    auto roots = app::read_file(path, routing::read_guid_list, v.origin("root_guid_file"));
    if (!roots) return std::unexpected(roots.error());
    o.roots = std::move(*roots);
  }
  // OpenSM writes a torus_config path into every opensm.conf; only dor reads it.
  if (const std::string path = v.get_str("torus_config");
      !path.empty() && chain_has(v.get_str("routing_engine"), "dor")) {
    auto t = app::read_file(path, routing::read_torus_spec, v.origin("torus_config"));
    if (!t) return std::unexpected(t.error());
    o.torus = std::move(*t);
  }
  o.engine.window = static_cast<int>(v.get_int("max_wire_smps"));
  o.engine.timeout = std::chrono::milliseconds(v.get_int("transaction_timeout"));
  o.engine.retries = static_cast<int>(v.get_int("transaction_retries"));
  o.state_dir = v.get_str("state_dir");
  o.lmc = static_cast<uint8_t>(v.get_int("lmc"));
  o.routing_engine = v.get_str("routing_engine");
  o.sm_priority = static_cast<uint8_t>(v.get_int("sm_priority"));
  o.max_op_vls = static_cast<uint8_t>(v.get_int("max_op_vls"));
  o.subnet_timeout = static_cast<uint8_t>(v.get_int("subnet_timeout"));
  auto parts = load_partition_file(v);
  if (!parts) return std::unexpected(parts.error());
  o.partitions = std::move(*parts);
  if (o.partitions)
    for (const auto& w : o.partitions->warnings) WEFT_LOG(Warn, "PRT-0005") << w;
  else
    WEFT_LOG(Info, "PRT-0006") << "no partition file: every end port is a full member of the "
                                  "Default partition 0x7fff";
  o.part_enforce = v.get_str("part_enforce");
  o.no_partition_enforcement = v.get_bool("no_partition_enforcement");
  o.allow_both_pkeys = v.get_bool("allow_both_pkeys");
  o.keep_pkey_indexes = v.get_bool("keep_pkey_indexes");
  auto q = qos::qos_from_options(v);
  if (!q) return std::unexpected(q.error());
  o.qos = std::move(*q);
  auto pol = load_qos_policy_file(v);
  if (!pol) return std::unexpected(pol.error());
  if (*pol) {
    for (const auto& w : (*pol)->warnings) WEFT_LOG(Warn, "QOS-0001") << w;
    if (!o.qos.enabled)
      WEFT_LOG(Warn, "QOS-0002") << v.origin("qos_policy_file")
                                 << ": qos_policy_file is set but qos is FALSE: the policy is "
                                    "not applied (as in OpenSM)";
    o.qos_policy = std::move(**pol);
  }
  return o;
}

Result<void> setup_logging(const po::variables_map& vm, const config::Values& v) {
  log::Level lvl;
  if (!log::parse_level(vm["log-level"].as<std::string>(), &lvl))
    return fail(Errc::kInvalidInput, "--log-level: expected debug, info, warn or error");
  log::set_level(lvl);
  const auto& file = v.get_str("log_file");
  if (!file.empty() && !log::set_file(file))
    return fail(Errc::kIo, "--log-file " + file + ": cannot open: " + std::strerror(errno));
  return {};
}

void print_summary(const sm::SweepReport& r, const sm::EngineStats& s) {
  std::printf("weft: %s\n", r.subnet_up ? "SUBNET UP" : ("subnet NOT up: " + r.reason).c_str());
  std::printf("  fabric   %zu switches, %zu CAs, %zu routers, %zu links, %zu LIDs (top %u)\n",
              r.switches, r.cas, r.routers, r.links, r.lids, r.top_lid);
  std::printf(
      "  LIDs     %zu from the state file, %zu kept from the fabric, %zu new, %zu changed\n",
      r.lid_assignment.from_file, r.lid_assignment.from_fabric, r.lid_assignment.fresh,
      r.lid_assignment.changed);
  std::printf("  SMPs     discovery %llu, programming %llu, activation %llu, total %llu\n",
              (unsigned long long)r.smps_discovery, (unsigned long long)r.smps_program,
              (unsigned long long)r.smps_activate,
              (unsigned long long)(r.smps_discovery + r.smps_program + r.smps_activate));
  std::printf(
      "  writes   %llu PortInfo, %llu SwitchInfo, %llu LFT blocks (%llu read), %llu ports "
      "activated\n",
      (unsigned long long)r.portinfo_sets, (unsigned long long)r.switchinfo_sets,
      (unsigned long long)r.lft_blocks_written, (unsigned long long)r.lft_blocks_read,
      (unsigned long long)r.ports_activated);
  std::printf(
      "  tables   P_Key blocks %llu written (%llu read), %llu switch ports enforce P_Keys; SL2VL "
      "%llu written (%llu read); VLArb blocks %llu written (%llu read)\n",
      (unsigned long long)r.pkey_blocks_written, (unsigned long long)r.pkey_blocks_read,
      (unsigned long long)r.ports_enforcing, (unsigned long long)r.sl2vl_written,
      (unsigned long long)r.sl2vl_read, (unsigned long long)r.vlarb_written,
      (unsigned long long)r.vlarb_read);
  std::printf("  ports    %zu of %zu linked port ends ACTIVE\n", r.ports_active, r.ports_linked);
  std::printf(
      "  time ms  discovery %.1f, LIDs %.1f, routing %.1f, programming %.1f, activation %.1f, "
      "total %.1f\n",
      r.ms_discovery, r.ms_lids, r.ms_routing, r.ms_program, r.ms_activate, r.ms_total);
  std::printf(
      "  MADs     %llu retried, %llu timed out, %llu error status, %llu malformed, %llu "
      "unmatched\n",
      (unsigned long long)s.retried, (unsigned long long)s.timed_out,
      (unsigned long long)s.error_status, (unsigned long long)s.malformed,
      (unsigned long long)s.unmatched);
  std::printf("  problems %zu\n", r.problems.size());
  for (size_t i = 0; i < r.problems.size() && i < 10; ++i)
    std::printf("    %s\n", r.problems[i].c_str());
  if (r.problems.size() > 10)
    std::printf("    ... (%zu more in the log)\n", r.problems.size() - 10);
  std::fflush(stdout);
}

// SIGINT/SIGTERM request a stop, received by one waiting thread.
// block() must run before any thread starts (libumad2sim starts one when the
// transport opens), so that every thread leaves these signals to the waiter.
// SIGUSR1 only wakes the waiter when the object goes away, so exit is immediate.
class Signals {
 public:
  static sigset_t block() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
  }
  Signals() {
    set_ = block();
    waiter_ = std::jthread([this](std::stop_token st) {
      while (!st.stop_requested()) {
        int sig = sigwaitinfo(&set_, nullptr);
        if (sig == SIGINT || sig == SIGTERM) {
          WEFT_LOG(Info, "APP-0001") << "signal " << sig << ": stopping";
          source_.request_stop();
          return;
        }
      }
    });
  }
  ~Signals() {
    waiter_.request_stop();
    pthread_kill(waiter_.native_handle(), SIGUSR1);
  }
  std::stop_token token() const { return source_.get_token(); }

 private:
  sigset_t set_;
  std::stop_source source_;
  std::jthread waiter_;
};

// One line per node and per linked port, sorted by GUID: the same fabric discovered
// through any transport gives the same text.
std::string model_text(const fabric::Fabric& f) {
  std::vector<std::string> lines;
  char buf[512];
  for (const auto& n : f.nodes()) {
    std::snprintf(buf, sizeof buf, "%s %s ports %d lid %u \"%s\"", n.guid.str().c_str(),
                  fabric::node_type_name(n.type), n.num_ports,
                  n.is_switch() ? n.ports[0].attrs.lid.value : 0u, n.description.c_str());
    lines.emplace_back(buf);
    for (const auto& p : n.ports) {
      if (!p.linked()) continue;
      const auto& a = p.attrs;
      const auto& peer = f.node(p.peer);
      std::snprintf(buf, sizeof buf,
                    "%s port %d guid %s lid %u -> %s port %d width %u speed %u/%u mtucap %u vlcap "
                    "%u state %s",
                    n.guid.str().c_str(), p.num, p.guid.str().c_str(),
                    n.is_switch() ? 0u : a.lid.value, peer.guid.str().c_str(), p.peer_port,
                    a.width_active, a.speed_active, a.speed_ext_active, a.mtu_cap, a.vl_cap,
                    fabric::port_state_name(a.state));
      lines.emplace_back(buf);
    }
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (auto& l : lines) out += l + "\n";
  return out;
}

Result<void> dump_model(const po::variables_map& vm, const sm::SubnetManager& smgr) {
  if (!vm.count("dump-model") || !smgr.snapshot()) return {};
  const std::string path = vm["dump-model"].as<std::string>();
  const std::string text = model_text(smgr.snapshot()->fabric);
  FILE* fp = std::fopen(path.c_str(), "w");
  if (!fp || std::fwrite(text.data(), 1, text.size(), fp) != text.size() || std::fclose(fp) != 0)
    return fail(Errc::kIo, "--dump-model " + path + ": cannot write");
  return {};
}

int run_daemon(sm::SubnetManager& smgr, const config::Values& v, const po::variables_map& vm) {
  const bool once = vm.count("once") > 0;
  Signals sig;
  auto rep = smgr.sweep();
  if (!rep) return die(rep.error().message, 1);
  print_summary(*rep, smgr.mad_stats());
  if (auto r = dump_model(vm, smgr); !r) return die(r.error().message, 1);
  if (once) return rep->subnet_up ? 0 : 1;
  const long interval_s = v.get_int("sweep_interval");
  auto next = std::chrono::steady_clock::now() + std::chrono::seconds(interval_s);
  while (!sig.token().stop_requested()) {
    if (auto r = smgr.serve_for(std::chrono::milliseconds(200)); !r)
      return die(r.error().message, 1);
    if (sig.token().stop_requested()) break;
    const bool due = interval_s > 0 && std::chrono::steady_clock::now() >= next;
    if (smgr.needs_sweep() || due) {
      auto r = smgr.needs_sweep() ? smgr.sweep() : smgr.light_sweep();
      if (!r) return die(r.error().message, 1);
      if (r->heavy) print_summary(*r, smgr.mad_stats());
      next = std::chrono::steady_clock::now() + std::chrono::seconds(interval_s);
    }
  }
  WEFT_LOG(Info, "APP-0002") << "stopped";
  return 0;
}

int cmd_sm(int argc, char** argv) {
  Signals::block();
  auto desc = sm_options();
  desc.add_options()("ca", po::value<std::string>(), "CA name (default: any)")(
      "port", po::value<int>()->default_value(0),
      "CA port number (default: first port that is up)")("guid", po::value<std::string>(),
                                                         "bind to the port with this GUID");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return die(std::string("sm: ") + e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: weft sm [options]\n" << desc;
    return 0;
  }
  auto v = build_config(vm);
  if (!v) return die(v.error().message);
  if (auto r = setup_logging(vm, *v); !r) return die(r.error().message);
  // Before the port: a second SM on this state directory stops here, its file untouched.
  auto state = sm::StateDir::acquire(v->get_str("state_dir"));
  if (!state) return die(state.error().message, 1);
  sm::UmadPortSpec spec;
  if (vm.count("ca")) spec.ca = vm["ca"].as<std::string>();
  spec.port = vm["port"].as<int>();
  spec.guid = std::strtoull(v->get_str("guid").c_str(), nullptr, 0);
  auto t = sm::UmadTransport::open(spec);
  if (!t) return die(t.error().message, 1);
  auto so = sm_opts(*v);
  if (!so) return die(so.error().message);
  sm::SubnetManager smgr(**t, std::move(*so));
  return run_daemon(smgr, *v, vm);
}

int cmd_sim(int argc, char** argv) {
  auto desc = sm_options();
  desc.add_options()(
      "topology", po::value<std::string>(),
      "generator spec (ft2:..., ft3:..., torus:..., mesh:..., random:...) or a topology file")(
      "attach", po::value<std::string>(), "node name the SM runs on (default: the first node)")(
      "drop-rate", po::value<double>()->default_value(0.0), "share of SMPs lost (0..1)")(
      "delay-rate", po::value<double>()->default_value(0.0), "share of replies delayed by 150 ms")(
      "seed", po::value<uint64_t>()->default_value(1), "seed for the fault injection")(
      "dead", po::value<std::vector<std::string>>(),
      "a node (by name) that never answers; repeatable")(
      "sweeps", po::value<int>()->default_value(1),
      "full sweeps to run (later ones show what is rewritten)")(
      "lft-cap", po::value<int>()->default_value(49152),
      "LinearFDBCap of the simulated switches (ibsim's default: 30720)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return die(std::string("sim: ") + e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: weft sim --topology SPEC [options]\n" << desc;
    return 0;
  }
  if (!vm.count("topology"))
    return die("sim: --topology is required (e.g. ft2:leaves=8,spines=4,hosts=8)");
  auto v = build_config(vm);
  if (!v) return die(v.error().message);
  if (auto r = setup_logging(vm, *v); !r) return die(r.error().message);
  std::string tmp_state;
  if (!vm.count("state-dir") && v->origin("state_dir") == "default") {
    tmp_state = (std::filesystem::temp_directory_path() / ("weft-sim-" + std::to_string(getpid())))
                    .string();
    (void)config::set(*v, "state_dir", tmp_state, "sim");
  }
  auto state = sm::StateDir::acquire(v->get_str("state_dir"));
  if (!state) return die(state.error().message, 1);
  const double drop = vm["drop-rate"].as<double>(), delay = vm["delay-rate"].as<double>();
  if (drop < 0 || drop >= 1 || delay < 0 || delay > 1)
    return die("sim: --drop-rate must be in [0,1), --delay-rate in [0,1]");
  auto fab = simulator::make_fabric(vm["topology"].as<std::string>());
  if (!fab) return die(fab.error().message);
  const int lft_cap = vm["lft-cap"].as<int>();
  if (lft_cap < 64 || lft_cap > 49152 || lft_cap % 64)
    return die("sim: --lft-cap must be a multiple of 64 in 64..49152");
  simulator::SimDefaults defaults;
  defaults.lft_cap = static_cast<uint16_t>(lft_cap);
  simulator::SimFabric sim(std::move(*fab), defaults);
  simulator::SimTransportOptions to;
  if (vm.count("attach")) {
    auto n = sim.model().find_by_name(vm["attach"].as<std::string>());
    if (!n) return die("sim: --attach: no node named \"" + vm["attach"].as<std::string>() + "\"");
    to.attach = *n;
  }
  if (vm.count("dead"))
    for (const auto& name : vm["dead"].as<std::vector<std::string>>()) {
      auto n = sim.model().find_by_name(name);
      if (!n) return die("sim: --dead: no node named \"" + name + "\"");
      sim.set_unresponsive(*n, true);
    }
  to.drop_rate = drop;
  to.delay_rate = delay;
  to.seed = vm["seed"].as<uint64_t>();
  simulator::SimTransport t(sim, to);
  auto so = sm_opts(*v);
  if (!so) return die(so.error().message);
  sm::SubnetManager smgr(t, std::move(*so));
  int rc = 0;
  for (int i = 0; i < std::max(1, vm["sweeps"].as<int>()); ++i) {
    auto rep = smgr.sweep();
    if (!rep) {
      rc = die(rep.error().message, 1);
      break;
    }
    print_summary(*rep, smgr.mad_stats());
    if (i == 0) {
      if (auto r = dump_model(vm, smgr); !r) {
        rc = die(r.error().message, 1);
        break;
      }
    }
    // Check what the devices hold, not what the SM meant to write.
    auto vr = routing::verify_lfts(sim.model(), sim.held_tables());
    std::printf(
        "  routes   %zu (switch, LID) pairs read back: %zu unreachable, %zu loops, max %zu hops\n",
        vr.pairs, vr.unreachable, vr.loops, vr.max_hops);
    if (!vr.ok()) std::printf("    first: %s\n", vr.first_problem.c_str());
    if (!rep->subnet_up || !vr.ok()) rc = 1;
  }
  if (!tmp_state.empty()) std::filesystem::remove_all(tmp_state);
  return rc;
}

int cmd_topo(int argc, char** argv) {
  po::options_description desc("topo options");
  desc.add_options()("help,h", "this help")("spec", po::value<std::string>(),
                                            "generator spec or topology file")(
      "out,o", po::value<std::string>(), "net file to write (default: stdout)");
  po::positional_options_description pos;
  pos.add("spec", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return die(std::string("topo: ") + e.what());
  }
  if (vm.count("help") || !vm.count("spec")) {
    std::cout << "usage: weft topo SPEC [-o FILE.net]\n" << desc;
    return vm.count("help") ? 0 : 2;
  }
  auto f = simulator::make_fabric(vm["spec"].as<std::string>());
  if (!f) return die(f.error().message);
  const std::string text = fabric::write_netfile(*f);
  if (!vm.count("out")) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  const std::string out = vm["out"].as<std::string>();
  FILE* fp = std::fopen(out.c_str(), "w");
  if (!fp || std::fwrite(text.data(), 1, text.size(), fp) != text.size() || std::fclose(fp) != 0)
    return die("topo: cannot write " + out);
  std::fprintf(stderr, "weft: wrote %s: %zu switches, %zu CAs, %zu links\n", out.c_str(),
               f->num_switches(), f->num_endpoints(), f->links().size());
  return 0;
}

// weft config check FILE [--strict]: every error and warning of an opensm.conf and of
// the partitions file it names; exit 1 on errors (and on warnings with --strict).
int cmd_config(int argc, char** argv) {
  po::options_description desc("config check options");
  desc.add_options()("help,h", "this help")("action", po::value<std::string>(), "check")(
      "file", po::value<std::string>(), "opensm.conf-style file")(
      "strict", "warnings (OpenSM options weft does not implement) fail the check too");
  po::positional_options_description pos;
  pos.add("action", 1).add("file", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return die(std::string("config: ") + e.what());
  }
  if (vm.count("help") || !vm.count("action") || vm["action"].as<std::string>() != "check" ||
      !vm.count("file")) {
    std::cout << "usage: weft config check FILE [--strict]\n" << desc;
    return vm.count("help") ? 0 : 2;
  }
  const std::string file = vm["file"].as<std::string>();
  config::Values v = config::defaults();
  auto r = config::load_file(file, v);
  size_t errors = 0, warnings = v.warnings().size();
  if (!r) {
    std::stringstream ss(r.error().message);
    for (std::string line; std::getline(ss, line); ++errors)
      std::printf("error: %s\n", line.c_str());
  }
  for (const auto& w : v.warnings()) std::printf("warning: %s\n", w.c_str());
  size_t set = 0;
  for (const auto& o : config::option_table())
    if (!v.is_default(o.name)) ++set;
  std::printf(
      "%s: %zu options weft implements, %zu OpenSM options at OpenSM's default, %zu not "
      "implemented (warnings)\n",
      file.c_str(), set, v.opensm_defaults_seen(), warnings);
  if (r) {
    auto parts = load_partition_file(v);
    if (!parts) {
      std::stringstream ss(parts.error().message);
      for (std::string line; std::getline(ss, line); ++errors)
        std::printf("error: %s\n", line.c_str());
    } else if (!*parts) {
      std::printf("partitions: none (Default 0x7fff, every end port a full member)\n");
    } else {
      for (const auto& w : (*parts)->warnings) std::printf("warning: %s\n", w.c_str());
      warnings += (*parts)->warnings.size();
      std::printf("partitions: %s: %zu partitions\n", v.get_str("partition_config_file").c_str(),
                  (*parts)->partitions.size());
      for (const auto& p : (*parts)->partitions)
        std::printf("  0x%04x %-16s %zu member rules, %zu multicast groups%s%s (%s)\n", p.pkey,
                    p.name.empty() ? "(no name)" : p.name.c_str(), p.members.size(),
                    p.groups.size(), p.ipoib ? ", ipoib" : "", p.indx0 ? ", indx0" : "",
                    p.where.c_str());
    }
    auto qp = load_qos_policy_file(v);
    if (!qp) {
      std::stringstream ss(qp.error().message);
      for (std::string line; std::getline(ss, line); ++errors)
        std::printf("error: %s\n", line.c_str());
    } else if (*qp) {
      for (const auto& w : (*qp)->warnings) std::printf("warning: %s\n", w.c_str());
      warnings += (*qp)->warnings.size();
      std::printf("qos policy: %s: %zu port groups, %zu levels, %zu match rules, %zu ulp rules%s\n",
                  v.get_str("qos_policy_file").c_str(), (*qp)->groups.size(), (*qp)->levels.size(),
                  (*qp)->rules.size(), (*qp)->ulps.size(),
                  v.get_bool("qos") ? "" : " (not applied: qos is FALSE)");
    }
    auto q = qos::qos_from_options(v);
    if (!q) {
      ++errors;
      std::printf("error: %s\n", q.error().message.c_str());
    } else if (q->enabled) {
      for (auto [name, c] : {std::pair{"CA", &q->ca}, std::pair{"switch port 0", &q->sw0},
                             std::pair{"switch external", &q->swe}, std::pair{"router", &q->rtr}})
        std::printf("qos %-16s sl2vl %s, high limit %d, %zu high and %zu low arbitration entries\n",
                    name, qos::sl2vl_str(c->sl2vl).c_str(), c->high_limit, c->high.size(),
                    c->low.size());
    }
  }
  if (errors) return 1;
  return vm.count("strict") && warnings ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "sm") return cmd_sm(argc - 1, argv + 1);
  if (cmd == "sim") return cmd_sim(argc - 1, argv + 1);
  if (cmd == "topo") return cmd_topo(argc - 1, argv + 1);
  if (cmd == "route") return app::cmd_route(argc - 1, argv + 1);
  if (cmd == "config") return cmd_config(argc - 1, argv + 1);
  if (cmd == "roce") return app::cmd_roce(argc - 1, argv + 1);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "weft: unknown command \"%s\"\n%s", cmd.c_str(), kUsage);
  return 2;
}
