// weft sim: the SM on weft's in-process fabric simulator, its tables read back and
// checked after every sweep.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "sm_config.hpp"
#include "summary.hpp"
#include "weft/daemon/managers.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"
#include "weft/store/state_dir.hpp"

namespace weft::app {

namespace po = boost::program_options;

const Help kSimHelp{
    "sim", "run the subnet manager on a simulated fabric",
    "weft sim --topology SPEC|FILE [--sweeps N] [--drop-rate R] [--dead NODE]... [OPTIONS]",
    R"(Runs the same SM code as weft sm against weft's in-process fabric simulator:
switches and CAs that answer SMPs as hardware does, directed-route and LID-routed
through the forwarding tables the SM programmed, on a simulated clock. After each
sweep it reads back what every switch holds and checks every (switch, LID) route:
reachable, loop-free, and how many hops. --drop-rate, --delay-rate and --dead
inject faults; later --sweeps show what a second sweep rewrites (nothing, on a
fabric that did not change).

SPEC is a generator spec or a topology file (an ibsim net file, or ibnetdiscover
output):
  ft2:leaves=L,spines=S,hosts=H[,links=K][,radix=R]       2-level fat tree
  ft3:pods=P,leaves=L,aggs=A,hosts=H,cores=C[,radix=R][,links=K]
  torus:dims=4x4x4,hosts=H       mesh:dims=6x6,hosts=H
  dragonfly:groups=G,routers=A,global=H,hosts=P
  random:switches=N,degree=D,hosts=H,seed=S

Without --state-dir the LIDs live in a temporary directory removed at exit.)",
    R"(Exit status:
  0  every sweep brought the subnet up and every route read back is good
  1  a sweep did not bring the subnet up, or a route read back is broken
  2  bad usage or input

Examples:
  weft sim --topology ft2:leaves=16,spines=8,hosts=8
  weft sim --topology fabric.net --routing-engine ftree --sweeps 2
  weft sim --topology torus:dims=4x4x4,hosts=2 --drop-rate 0.05 --seed 3)"};

po::options_description sim_command_options() {
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
  return desc;
}

int cmd_sim(int argc, char** argv) {
  auto desc = sim_command_options();
  po::variables_map vm;
  if (auto rc = parse_command_line(argc, argv, desc, vm, kSimHelp)) return *rc;
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
  auto state = store::StateDir::acquire(v->get_str("state_dir"));
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
  daemon::Managers managers(t, std::move(*so));
  sm::SubnetManager& smgr = managers.sm();
  int rc = 0;
  for (int i = 0; i < std::max(1, vm["sweeps"].as<int>()); ++i) {
    auto rep = smgr.sweep();
    if (!rep) {
      rc = die(rep.error().message, 1);
      break;
    }
    print_summary(*rep, smgr.mad_stats());
    if (i == 0) {
      if (auto r = dump_model(vm, smgr.snapshot().get()); !r) {
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
}  // namespace weft::app
