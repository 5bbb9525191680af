// weft route: offline routing what-ifs. Loads a topology, optionally fails links
// or switches, routes it with one or more engines (or a fallback chain), or reads
// another SM's LFT dump, and grades every result with the same analyzer.
#include "commands.hpp"
#include "summary.hpp"
#include "weft/read_file.hpp"

#include <unistd.h>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "weft/routing/analysis.hpp"
#include "weft/routing/lft_dump.hpp"
#include "weft/routing/verify.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/route_report.hpp"
#include "weft/simulator/whatif.hpp"
#include "weft/sm/lid_manager.hpp"

namespace weft::app {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

int route_die(const std::string& msg, int code = 2) {
  return app::die("route: " + msg, code);
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream ss(list);
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void print_table(const json& rows) {
  std::printf("%-18s %-10s %8s %5s %9s %9s %7s %7s %6s %4s %5s %10s\n", "engine", "status",
              "reach %", "loops", "max load", "mean load", "stretch", "eBB", "shift", "VLs", "CDG",
              "compute ms");
  for (const auto& j : rows) {
    const std::string name = j["engine"], status = j["status"];
    if (status == "refused" || status == "error") {
      std::printf("%-18s %-10s %s\n", name.c_str(), status.c_str(),
                  j["reason"].get<std::string>().c_str());
      continue;
    }
    auto num = [&](const char* k) { return j.contains(k) ? j[k].get<double>() : -1.0; };
    if (!j.contains("loops")) {  // --no-grade
      std::printf("%-18s %-10s %s; VLs %d, compute %.1f ms\n", name.c_str(), status.c_str(),
                  j["reason"].get<std::string>().c_str(), j["vls"].get<int>(), num("compute_ms"));
      print_traffic(j);
      continue;
    }
    std::printf(
        "%-18s %-10s %8.3f %5llu %9llu %9.1f %7.3f %7.4f %6s %4u %5s %10.1f\n", name.c_str(),
        status.c_str(), num("reachable_pct"), (unsigned long long)j["loops"].get<uint64_t>(),
        (unsigned long long)j["max_link_load"].get<uint64_t>(), num("mean_link_load"),
        num("stretch_max"), num("ebb"),
        j.contains("shift_max_congestion")
            ? std::to_string(j["shift_max_congestion"].get<uint32_t>()).c_str()
            : "-",
        j["vls"].get<uint32_t>(), j["cdg_acyclic"].get<bool>() ? "ok" : "CYCLE", num("compute_ms"));
    if (j.contains("fallbacks"))
      for (const auto& fb : j["fallbacks"])
        std::printf("  %s refused (%s): %s\n", fb["engine"].get<std::string>().c_str(),
                    fb["refusal"].get<std::string>().c_str(),
                    fb["reason"].get<std::string>().c_str());
    if (j.contains("routed_by") && j["routed_by"] != j["engine"])
      std::printf("  routed by %s\n", j["routed_by"].get<std::string>().c_str());
    if (j.contains("notes"))
      for (const auto& n : j["notes"]) std::printf("  %s\n", n.get<std::string>().c_str());
    print_traffic(j);
    if (status != "ok") std::printf("  %s\n", j["reason"].get<std::string>().c_str());
  }
}

}  // namespace

const Help kRouteHelp{
    "route", "route a topology offline and grade the tables",
    "weft route --topology SPEC|FILE [--engine E[,E...]] [--lfts [NAME=]FILE]... [--json]\n"
    "weft route --topology SPEC|FILE --fault-sweep N [--engine E[,E...]]",
    R"(Loads a topology (a generator spec, an ibsim net file or ibnetdiscover output),
assigns LIDs as weft sm would on a fresh fabric, optionally takes out links and
switches, routes it with each engine named (a comma-separated list compares them;
A+B+C is one fallback chain, as routing_engine takes it) and grades every result
with one analyzer; --lfts grades another SM's tables (ibroute, dump_lfts.sh or
dump_fts output) on the same topology, for a side-by-side with weft's engines.

Engines: minhop, updn, dnup, ftree, dfsssp, dor (dor needs --torus).

The grades: CA-to-CA reachability, routing loops, path stretch, all-to-all load
per directed inter-switch link (max, mean, unused links), effective bisection
bandwidth (eBB: the mean over --bisections random bisections of each flow's share
of its busiest link), shift all-to-all, the VLs used and whether each VL's
channel dependency graph is acyclic (deadlock freedom). --json prints one object
per engine; --fault-sweep fails 0..N random links (nested sets) and records eBB
and the first failure count at which each engine refuses.)",
    R"(Exit status:
  0  every engine routed the fabric and every table set graded is complete (with
     --fault-sweep: the sweep ran)
  1  an engine refused or a graded table set is incomplete or loops; a table file
     cannot be written
  2  bad usage or input

Examples:
  weft route --topology ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2 \
      --engine minhop,updn,ftree,dfsssp
  weft route --topology ibnetdiscover.out --lfts opensm=dump_fts.out --engine ftree
  weft route --topology fabric.net --fail-random 4 --engine ftree+updn+minhop --json)"};

po::options_description route_command_options() {
  po::options_description desc("Options");
  desc.add_options()("help,h", "this help")(
      "topology", po::value<std::string>(),
      "generator spec or topology file (ibsim net, ibnetdiscover)")(
      "engine", po::value<std::string>(),
      "engines to compare, comma-separated (default minhop); A+B+C is one fallback chain")(
      "lfts", po::value<std::vector<std::string>>(),
      "grade an LFT dump (ibroute / dump_lfts.sh / dump_fts output) as NAME=FILE or FILE; "
      "repeatable")("fail-link", po::value<std::vector<std::string>>(),
                    "take out a link, NAME:PORT (repeatable)")(
      "fail-switch", po::value<std::vector<std::string>>(),
      "take out a switch, by name or GUID (repeatable)")(
      "fail-random", po::value<uint32_t>()->default_value(0),
      "take out N random inter-switch links")("seed", po::value<uint64_t>()->default_value(1),
                                              "seed for --fail-random and the eBB patterns")(
      "fault-sweep", po::value<uint32_t>(),
      "for f = 0..N random failed links (nested sets), route again and record eBB(f) and the "
      "first f where each engine refuses")("root-guids", po::value<std::string>(),
                                           "up/down roots: a file of switch GUIDs, one per line")(
      "max-vls", po::value<unsigned>()->default_value(8), "data VLs a layered engine may use")(
      "adaptive", "also compute adaptive-routing port groups beside the static tables")(
      "traffic", po::value<std::string>(),
      "flow-level traffic, static beside adaptive (implies --adaptive): patterns among shift, "
      "permutation, all-to-all, allreduce, hotspot, comma-separated; with failures, on the "
      "tables routed before them (until the SM reroutes; the rerouted tables' in "
      "traffic_rerouted)")(
      "ar-rule", po::value<std::string>()->default_value("split"),
      "how a switch uses a flow's AR group in --traffic: split (per packet, spread over the "
      "group's ports) or least-loaded (the whole flow by the least loaded port)")(
      "torus", po::value<std::string>(),
      "the torus or mesh shape for dor (OpenSM's torus-2QoS.conf)")(
      "bisections", po::value<uint32_t>()->default_value(100), "random bisection patterns for eBB")(
      "no-patterns", "skip eBB and shift all-to-all")(
      "no-grade", "compute only: no verification or grades (for timing and memory runs)")(
      "write-lfts", po::value<std::string>(),
      "write the tables in ibroute format (FILE, or FILE.ENGINE with several engines)")(
      "json", "one JSON object per engine instead of a table")(
      "cdg", "accepted for compatibility: the dependency check always runs")(
      "progress", "report each stage on stderr (default when stderr is a terminal)");
  return desc;
}

int cmd_route(int argc, char** argv) {
  const po::options_description desc = route_command_options();
  po::variables_map vm;
  if (auto rc = parse_command_line(argc, argv, desc, vm, kRouteHelp)) return *rc;
  if (!vm.count("topology")) return route_die("--topology is required");
  const bool progress = vm.count("progress") || isatty(2);
  auto say = [&](const std::string& what) {
    if (progress) std::fprintf(stderr, "weft: %s\n", what.c_str());
  };
  auto t_load = std::chrono::steady_clock::now();
  auto fab = simulator::make_fabric(vm["topology"].as<std::string>());
  if (!fab) return route_die(fab.error().message);
  say("loaded " + std::to_string(fab->num_switches()) + " switches, " +
      std::to_string(fab->num_endpoints()) + " CAs in " + std::to_string(int(ms_since(t_load))) +
      " ms");
  sm::Guid2Lid fresh;  // offline: LIDs as a first bring-up would give them
  const auto t_lids = std::chrono::steady_clock::now();
  if (auto r = sm::assign_lids(*fab, fresh, 0); !r) return route_die(r.error().message, 1);
  say("LIDs assigned in " + std::to_string(int(ms_since(t_lids))) + " ms");

  routing::Options ro;
  const unsigned max_vls = vm["max-vls"].as<unsigned>();
  if (max_vls < 1 || max_vls > 15) return route_die("--max-vls must be 1..15");
  ro.max_vls = static_cast<uint8_t>(max_vls);
  ro.adaptive = vm.count("adaptive") > 0;
  if (progress)
    ro.progress = [](const std::string& what) { std::fprintf(stderr, "weft: %s\n", what.c_str()); };
  if (vm.count("torus")) {
    auto t = read_file(vm["torus"].as<std::string>(), routing::read_torus_spec);
    if (!t) return route_die(t.error().message);
    ro.torus = std::move(*t);
  }
  if (vm.count("root-guids")) {
    auto roots = read_file(vm["root-guids"].as<std::string>(), routing::read_guid_list);
    if (!roots) return route_die(roots.error().message);
    ro.roots = std::move(*roots);
  }
  simulator::Grading g;
  g.patterns = !vm.count("no-patterns");
  if (vm.count("traffic")) {
    for (const auto& name : split(vm["traffic"].as<std::string>())) {
      auto p = routing::parse_pattern(name);
      if (!p) return route_die("--traffic: " + p.error().message);
      g.traffic.push_back(*p);
    }
    if (g.traffic.empty()) return route_die("--traffic names no pattern");
    g.traffic_seed = vm["seed"].as<uint64_t>();
    ro.adaptive = true;
  }
  if (const std::string rule = vm["ar-rule"].as<std::string>(); rule == "least-loaded")
    g.ar_rule = routing::ArRule::kLeastLoaded;
  else if (rule != "split")
    return route_die("--ar-rule: \"" + rule + "\" is not split or least-loaded");
  g.any = !vm.count("no-grade");
  g.pattern.bisections = vm["bisections"].as<uint32_t>();
  g.pattern.seed = vm["seed"].as<uint64_t>();

  std::vector<std::string> engines;
  if (vm.count("engine")) {
    engines = split(vm["engine"].as<std::string>());
    if (engines.empty()) return route_die("--engine names no engine");
  } else if (!vm.count("lfts")) {
    engines = {"minhop"};
  }
  for (auto& e : engines) std::replace(e.begin(), e.end(), '+', ',');
  for (const auto& e : engines)
    if (auto c = routing::EngineChain::parse(e); !c) return route_die(c.error().message);

  simulator::Failures fl;
  if (vm.count("fail-link")) fl.links = vm["fail-link"].as<std::vector<std::string>>();
  if (vm.count("fail-switch")) fl.switches = vm["fail-switch"].as<std::vector<std::string>>();
  fl.random_links = vm["fail-random"].as<uint32_t>();
  fl.seed = vm["seed"].as<uint64_t>();

  json out = json::array();
  int rc = 0;
  if (vm.count("fault-sweep")) {
    // eBB as links fail: the same seed fails nested link sets (the first f of one shuffle).
    const uint32_t max_f = vm["fault-sweep"].as<uint32_t>();
    for (const auto& e : engines) {
      json sweep = json::array();
      json row{{"engine", e}, {"first_refusal", nullptr}};
      for (uint32_t k = 0; k <= max_f; ++k) {
        fabric::Fabric f = *fab;
        simulator::Failures fk = fl;
        fk.random_links = k;
        auto applied = simulator::apply_failures(f, fk);
        if (!applied) return route_die(applied.error().message);
        say(e + ": " + std::to_string(k) + " failed links");
        json j = simulator::route_one(f, e, ro, g, nullptr);
        json point{{"failed_links", k},
                   {"status", j["status"]},
                   {"cut_off_nodes", applied->cut_off_nodes}};
        if (j.contains("ebb")) point["ebb"] = j["ebb"];
        if (j.contains("vls")) point["vls"] = j["vls"];
        if (j.contains("reachable_pct")) point["reachable_pct"] = j["reachable_pct"];
        if (j["status"] != "ok") {
          point["reason"] = j["reason"];
          if (row["first_refusal"].is_null()) row["first_refusal"] = k;
        }
        sweep.push_back(point);
      }
      row["sweep"] = sweep;
      out.push_back(row);
    }
    if (vm.count("json")) {
      std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return 0;
    }
    std::printf("%-18s %6s %-10s %8s %8s\n", "engine", "failed", "status", "reach %", "eBB");
    for (const auto& row : out)
      for (const auto& p : row["sweep"])
        std::printf("%-18s %6u %-10s %8.3f %8.4f\n", row["engine"].get<std::string>().c_str(),
                    p["failed_links"].get<uint32_t>(), p["status"].get<std::string>().c_str(),
                    p.contains("reachable_pct") ? p["reachable_pct"].get<double>() : 0.0,
                    p.contains("ebb") ? p["ebb"].get<double>() : 0.0);
    return 0;
  }

  // Traffic meets a failure on the tables routed before it: the fabric before, and the
  // same with the failed links gone and every node kept where it was.
  std::optional<fabric::Fabric> intact, broken;
  if (!g.traffic.empty()) {
    intact = *fab;
    broken = *fab;
    simulator::Failures keep = fl;
    keep.keep_cut_off = true;
    if (auto b = simulator::apply_failures(*broken, keep); !b) return route_die(b.error().message);
  }
  auto applied = simulator::apply_failures(*fab, fl);
  if (!applied) return route_die(applied.error().message);
  for (const auto& what : applied->failed) say("failed " + what);
  if (applied->cut_off_nodes)
    say(std::to_string(applied->cut_off_nodes) + " nodes cut off from the largest part");

  const std::string write_to = vm.count("write-lfts") ? vm["write-lfts"].as<std::string>() : "";
  for (const auto& e : engines) {
    say("routing with " + e);
    routing::Tables kept;
    json j = simulator::route_one(*fab, e, ro, g, write_to.empty() ? nullptr : &kept);
    // A condition of the compute figures (main.cpp: run_again_with_huge_pages).
    j["malloc_huge_pages"] = malloc_huge_pages();
    j["malloc_kept"] = malloc_kept();  // (main.cpp: keep_freed_memory)
    say(e + ": " + j["status"].get<std::string>() +
        (j.contains("compute_ms")
             ? " in " + std::to_string(int(j["compute_ms"].get<double>())) + " ms"
             : ""));
    if (j["status"] != "ok") rc = 1;
    if (!write_to.empty() && !kept.lft.empty()) {
      const std::string path = engines.size() > 1 ? write_to + "." + e : write_to;
      std::ofstream os(path);
      routing::write_lft_dump(os, *fab, kept);
      if (!os.flush()) return route_die("cannot write " + path, 1);
      say("wrote " + path);
    }
    if (!applied->failed.empty()) {
      j["failed"] = applied->failed;
      if (j.contains("traffic")) {
        j["traffic_rerouted"] = std::move(j["traffic"]);
        j["traffic"] = simulator::traffic_until_reroute(*intact, *broken, e, ro, g);
      }
    }
    out.push_back(std::move(j));
  }
  if (vm.count("lfts"))
    for (const auto& item : vm["lfts"].as<std::vector<std::string>>()) {
      const auto eq = item.find('=');
      const std::string name = eq == std::string::npos ? item : item.substr(0, eq);
      const std::string path = eq == std::string::npos ? item : item.substr(eq + 1);
      std::ifstream in(path);
      if (!in) return route_die("cannot read " + path);
      fabric::Fabric f = *fab;  // the dump's LIDs replace the offline ones
      auto dump = routing::read_lft_dump(in, f, path);
      if (!dump) return route_die(dump.error().message);
      say("read " + path + ": " + std::to_string(dump->switches) + " switches, " +
          std::to_string(dump->entries) + " entries");
      json j{{"engine", name}, {"switches", f.num_switches()}, {"cas", f.num_endpoints()}};
      simulator::grade(f, dump->tables, g, j);
      if (j["status"] != "ok") rc = 1;
      out.push_back(std::move(j));
    }
  if (vm.count("json"))
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else
    print_table(out);
  return rc;
}

}  // namespace weft::app
