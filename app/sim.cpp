// weft sim: the SM on weft's in-process fabric simulator, its tables read back and
// checked after every sweep.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "sm_config.hpp"
#include "summary.hpp"
#include "weft/daemon/managers.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/cc_check.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/route_report.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/simulator/sim_vports.hpp"
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

SR-IOV: --vports N gives every CA port N virtual ports (VFs) as NVIDIA's
ConnectX-4 and later have them, with GUIDs a host admin has written; the SM
(virt_enabled 2, which --vports sets unless a --config says otherwise) finds
them, partitions them by GUID and brings them to ACTIVE. --vports-lid-required K: the first K of each port want a LID.

Adaptive routing: --ar-cap N gives every simulated switch NVIDIA's AR attributes
with GroupCap N (none by default, as ibsim; --no-ar NODE leaves one switch
without), and --adaptive-routing (or routing_engine ar_ftree, ar_updn, ...) asks
the SM to program them. Each sweep then also checks, on what the switches hold,
that every port of every group brings a packet nearer its destination.

--json prints one JSON object per sweep instead of the summary: "sweep",
"subnet_up", "reason", "switches", "cas", "lids", "smps", "lft_blocks_written",
"routes_verified", "unreachable", "loops", and "ar": {"switches" (holding AR),
"enabled", "static", "group_blocks_written", "lft_blocks_written",
"groups_dropped", "verified"}, with --vports "vports": {"found", "with_lid",
"pkey_blocks_written", "activated", "failures"}, and with --congestion-control "cc": {"switches", "cas",
"configured", "unavailable", "locked", "failed", "mads", "mads_written", "verified"}
(verified: every configured device holds what the options ask, read from it).
"cost": {"cpu_ms" (the sweep's process CPU), "simulator_ms" (the part spent in the
simulated devices and wire), "sm_cpu_ms" (the rest: the SM's own), "sm_ns_per_smp",
"peak_rss_mib" (the process's peak resident set up to the sweep's end),
"peak_queued_smps" (the most SMPs the engine held queued at once, so far)}.
With --hotspot NODE also "congestion": {"events", "flows", "ports": [{"name", "port",
"log_events"}...]} (the first five ports, ranked by the events the logs counted).

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
  weft sim --topology ft2:leaves=8,spines=4,hosts=4,links=2 --ar-cap 64 \
      --routing-engine ar_ftree --sweeps 2 --json
  weft sim --topology torus:dims=4x4x4,hosts=2 --drop-rate 0.05 --seed 3)"};

// What a sweep cost the process: its CPU (all threads), the part of it spent in the
// simulator (its devices and wire, which on hardware are not the SM's), and the peak
// resident set so far. The simulator runs on the SM's thread, so its real time is CPU.
struct SweepCost {
  double cpu_s = 0;
  double sim_s = 0;
  double peak_rss_mib = 0;
  double cpu_ms() const { return cpu_s * 1e3; }
  double sim_ms() const { return sim_s * 1e3; }
  double sm_ms() const { return std::max(0.0, cpu_s - sim_s) * 1e3; }
  double sm_ns_per(uint64_t smps) const { return smps ? sm_ms() * 1e6 / double(smps) : 0.0; }
  SweepCost operator-(const SweepCost& o) const {
    return {cpu_s - o.cpu_s, sim_s - o.sim_s, peak_rss_mib};
  }
};

SweepCost sweep_cost_now(const simulator::SimTransport& t) {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
  return {secs(ru.ru_utime) + secs(ru.ru_stime), std::chrono::duration<double>(t.busy()).count(),
          double(ru.ru_maxrss) / 1024.0};
}

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
      "LinearFDBCap of the simulated switches (ibsim's default: 30720)")(
      "ar-cap", po::value<int>()->default_value(0),
      "adaptive-routing GroupCap of the simulated switches (0: no AR, as ibsim)")(
      "no-ar", po::value<std::vector<std::string>>(),
      "a switch (by name) without adaptive routing; repeatable")(
      "cc-agents", po::bool_switch(),
      "congestion-control agents on every simulated switch and CA port (none by default, as "
      "ibsim)")("no-cc", po::value<std::vector<std::string>>(),
                "a node (by name) without a congestion-control agent; repeatable")(
      "congestion-control", po::bool_switch(),
      "congestion_control TRUE: a congestion-control pass after each sweep")(
      "hotspot", po::value<std::string>(),
      "with congestion control: after each pass, every other CA port sends to NODE's port 1 "
      "(SL 0) through what the switches hold; the congestion logs are read and the ports "
      "ranked (marking needs cc_sw_cong_setting_threshold above 0)")(
      "vports", po::value<int>()->default_value(0),
      "SR-IOV virtual ports: every CA port gets N VFs (1..127), each with a GUID derived from "
      "its port's as a host admin writes it (none by default, as ibsim)")(
      "vports-lid-required", po::value<int>()->default_value(0),
      "with --vports: the first K VFs of each port want a LID of their own")(
      "json", po::bool_switch(), "one JSON object per sweep instead of the summary")(
      "traffic", po::value<std::string>(),
      "after each sweep, flow-level traffic through what the switches hold (their LFTs, and "
      "their AR groups where AR is on), static beside adaptive: patterns among shift, "
      "permutation, all-to-all, allreduce, hotspot, comma-separated");
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
  const int ar_cap = vm["ar-cap"].as<int>();
  if (ar_cap < 0 || ar_cap > 0xfff) return die("sim: --ar-cap must be in 0..4095");
  simulator::SimDefaults defaults;
  defaults.lft_cap = static_cast<uint16_t>(lft_cap);
  defaults.ar_group_cap = static_cast<uint16_t>(ar_cap);
  defaults.cc_agents = vm["cc-agents"].as<bool>();
  simulator::SimFabric sim(std::move(*fab), defaults);
  if (vm.count("no-cc"))
    for (const auto& name : vm["no-cc"].as<std::vector<std::string>>()) {
      auto n = sim.model().find_by_name(name);
      if (!n) return die("sim: --no-cc: no node named \"" + name + "\"");
      sim.set_cc(*n, simulator::CcSupport::kNone);
    }
  if (vm["congestion-control"].as<bool>())
    (void)config::set(*v, "congestion_control", "TRUE", "--congestion-control");
  std::optional<fabric::NodeIndex> hotspot;
  if (vm.count("hotspot")) {
    const std::string name = vm["hotspot"].as<std::string>();
    hotspot = sim.model().find_by_name(name);
    if (!hotspot || sim.model().node(*hotspot).is_switch() ||
        !sim.model().node(*hotspot).ports.at(1).linked())
      return die("sim: --hotspot: no CA named \"" + name + "\" with port 1 linked");
    if (v->get_bool("congestion_control") == false)
      return die(
          "sim: --hotspot needs congestion control (--congestion-control or "
          "congestion_control TRUE in --config)");
  }
  if (const int nv = vm["vports"].as<int>(), lr = vm["vports-lid-required"].as<int>(); nv || lr) {
    if (nv < 1 || nv > 127 || lr < 0 || lr > nv)
      return die("sim: --vports must be in 1..127 and --vports-lid-required in 0..--vports");
    // The simulated VFs are there to be managed: virt_enabled 2 unless a config says.
    if (v->origin("virt_enabled") == "default")
      (void)config::set(*v, "virt_enabled", "2", "--vports");
    if (auto r =
            simulator::add_vports_everywhere(sim.vports(), sim.model(), uint16_t(nv), uint16_t(lr));
        !r)
      return die("sim: " + r.error().message);
  }
  if (vm.count("no-ar"))
    for (const auto& name : vm["no-ar"].as<std::vector<std::string>>()) {
      auto n = sim.model().find_by_name(name);
      if (!n || !sim.model().node(*n).is_switch())
        return die("sim: --no-ar: no switch named \"" + name + "\"");
      sim.set_ar_cap(*n, 0);
    }
  const bool as_json = vm["json"].as<bool>();
  simulator::Grading traffic;
  if (vm.count("traffic")) {
    std::string list = vm["traffic"].as<std::string>();
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      auto p = routing::parse_pattern(list.substr(at, comma - at));
      if (!p) return die("sim: --traffic: " + p.error().message);
      traffic.traffic.push_back(*p);
      at = comma + 1;
    }
    traffic.traffic_seed = vm["seed"].as<uint64_t>();
  }
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
    const SweepCost before = sweep_cost_now(t);
    auto rep = smgr.sweep();
    if (!rep) {
      rc = die(rep.error().message, 1);
      break;
    }
    const SweepCost cost = sweep_cost_now(t) - before;
    const uint64_t smps = rep->smps_discovery + rep->smps_program + rep->smps_activate;
    if (!as_json) {
      print_summary(*rep, smgr.mad_stats());
      std::printf(
          "  cost     SM %.0f ms CPU (%.0f ns per SMP), simulator %.0f ms; peak RSS %.0f MiB, "
          "at most %llu SMPs queued\n",
          cost.sm_ms(), cost.sm_ns_per(smps), cost.sim_ms(), cost.peak_rss_mib,
          static_cast<unsigned long long>(smgr.mad_stats().peak_queued));
    }
    if (i == 0) {
      if (auto r = dump_model(vm, smgr.snapshot().get()); !r) {
        rc = die(r.error().message, 1);
        break;
      }
    }
    // Congestion control after the sweep, judged by what the devices then hold.
    std::optional<Result<cc::CcSweep>> ccr;
    if (managers.cc().options().enabled && rep->subnet_up) {
      managers.cc_pass([&ccr](Result<cc::CcSweep> r) { ccr = std::move(r); });
      if (auto r = smgr.engine().run_all(); !r) ccr = std::unexpected(r.error());
    }
    const auto cc_held =
        simulator::check_cc_held(sim, managers.cc().options(), managers.cc().view());
    // A hot spot: every other CA port sends to one; the logs read after.
    std::optional<Result<cc::CcLogRead>> hot;
    if (hotspot && ccr && *ccr) {
      std::vector<simulator::SimFabric::Flow> flows;
      const uint16_t dlid = sim.model().node(*hotspot).ports[1].attrs.lid.value;
      for (fabric::NodeIndex n = 0; n < sim.model().size(); ++n) {
        const auto& nd = sim.model().node(n);
        if (nd.is_switch() || n == *hotspot) continue;
        for (PortNum p = 1; p <= nd.num_ports; ++p)
          if (nd.ports[p].linked()) flows.push_back({n, p, dlid, 0});
      }
      sim.congest(flows);
      managers.cc_read_logs([&hot](Result<cc::CcLogRead> r) { hot = std::move(r); });
      if (auto r = smgr.engine().run_all(); !r) hot = std::unexpected(r.error());
    }
    auto hot_ports = [&](size_t most) {
      std::vector<std::tuple<std::string, PortNum, uint64_t>> out;
      for (const auto& pc : (*hot)->ports) {
        if (out.size() == most) break;
        const auto n = sim.model().find(Guid{pc.guid});
        out.push_back({n ? sim.model().node(*n).name : hex_guid(pc.guid), pc.port, pc.log_events});
      }
      return out;
    };
    // Check what the devices hold, not what the SM meant to write.
    const auto held = sim.held_tables();
    auto vr = routing::verify_lfts(sim.model(), held);
    auto av = routing::verify_adaptive(
        sim.model(), held, [&sim](fabric::NodeIndex n, uint16_t lid, std::vector<PortNum>& out) {
          sim.ar_choices(n, lid, out);
        });
    if (as_json) {
      nlohmann::json j = {{"sweep", i + 1},
                          {"subnet_up", rep->subnet_up},
                          {"reason", rep->reason},
                          {"switches", rep->switches},
                          {"cas", rep->cas},
                          {"lids", rep->lids},
                          {"smps", smps},
                          {"cost",
                           {{"cpu_ms", cost.cpu_ms()},
                            {"simulator_ms", cost.sim_ms()},
                            {"sm_cpu_ms", cost.sm_ms()},
                            {"sm_ns_per_smp", cost.sm_ns_per(smps)},
                            {"peak_rss_mib", cost.peak_rss_mib},
                            {"peak_queued_smps", smgr.mad_stats().peak_queued}}},
                          {"lft_blocks_written", rep->lft_blocks_written},
                          {"routes_verified", vr.ok()},
                          {"unreachable", vr.unreachable},
                          {"loops", vr.loops},
                          {"ar",
                           {{"switches", rep->ar_capable},
                            {"enabled", rep->ar_enabled},
                            {"static", rep->ar_static},
                            {"group_blocks_written", rep->ar_group_blocks_written},
                            {"lft_blocks_written", rep->ar_lft_blocks_written},
                            {"groups_dropped", rep->ar_groups_dropped},
                            {"entries", av.entries},
                            {"verified", av.ok()}}}};
      if (!av.ok()) j["ar"]["first_problem"] = av.first_problem;
      if (vm["vports"].as<int>())
        j["vports"] = {{"found", rep->vports_found},
                       {"with_lid", rep->vports_with_lid},
                       {"pkey_blocks_written", rep->vport_pkey_blocks_written},
                       {"activated", rep->vports_activated},
                       {"failures", rep->vport_failures}};
      if (!traffic.traffic.empty()) j["traffic"] = simulator::traffic(sim.model(), held, traffic);
      if (ccr && *ccr)
        j["cc"] = {{"switches", (*ccr)->switches},
                   {"cas", (*ccr)->cas},
                   {"configured", (*ccr)->configured},
                   {"unavailable", (*ccr)->unavailable},
                   {"locked", (*ccr)->locked},
                   {"failed", (*ccr)->failed},
                   {"mads", (*ccr)->mads},
                   {"mads_written", (*ccr)->mads_written},
                   {"verified", (*ccr)->verified && cc_held.ok()}};
      else if (ccr)
        j["cc"] = {{"error", ccr->error().message}};
      if (ccr && !cc_held.ok()) j["cc"]["first_problem"] = cc_held.first_problem;
      if (hot && *hot) {
        nlohmann::json ports = nlohmann::json::array();
        for (const auto& [name, port, events] : hot_ports(5))
          ports.push_back({{"name", name}, {"port", port}, {"log_events", events}});
        j["congestion"] = {
            {"events", (*hot)->events}, {"flows", (*hot)->flows}, {"ports", std::move(ports)}};
      } else if (hot) {
        j["congestion"] = {{"error", hot->error().message}};
      }
      std::cout << j.dump() << std::endl;
    } else {
      std::printf(
          "  routes   %zu (switch, LID) pairs read back: %zu unreachable, %zu loops, max %zu "
          "hops\n",
          vr.pairs, vr.unreachable, vr.loops, vr.max_hops);
      if (!vr.ok()) std::printf("    first: %s\n", vr.first_problem.c_str());
      if (rep->ar_capable || rep->ar_static)
        std::printf(
            "  AR       %zu switches on, %zu static; %zu (switch, LID) entries adaptive%s\n",
            rep->ar_enabled, rep->ar_static, av.entries,
            av.ok() ? ", every group port nearer" : "");
      if (!av.ok()) std::printf("    first: %s\n", av.first_problem.c_str());
      if (!traffic.traffic.empty())
        print_traffic({{"traffic", simulator::traffic(sim.model(), held, traffic)}});
      if (ccr && *ccr)
        std::printf("  CC       %s; %zu of them read back as asked\n", (*ccr)->summary().c_str(),
                    cc_held.checked - cc_held.wrong);
      else if (ccr)
        std::printf("  CC       %s\n", ccr->error().message.c_str());
      if (!cc_held.ok()) std::printf("    first: %s\n", cc_held.first_problem.c_str());
      if (hot && *hot) {
        std::printf("  congestion %llu events logged, %zu flows named; ports:",
                    static_cast<unsigned long long>((*hot)->events), (*hot)->flows);
        for (const auto& [name, port, events] : hot_ports(5))
          std::printf(" %s/%u %llu", name.c_str(), unsigned(port),
                      static_cast<unsigned long long>(events));
        std::printf("\n");
      } else if (hot) {
        std::printf("  congestion %s\n", hot->error().message.c_str());
      }
    }
    if (!rep->subnet_up || !vr.ok() || !av.ok() || !cc_held.ok() || (ccr && !*ccr) ||
        (hot && !*hot))
      rc = 1;
  }
  if (!tmp_state.empty()) std::filesystem::remove_all(tmp_state);
  return rc;
}
}  // namespace weft::app
