// weft — InfiniBand subnet manager and RoCE fabric controller. This file is the
// command table; each command lives in a file of its own (commands.hpp).
#include <malloc.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "commands.hpp"

namespace po = boost::program_options;
using namespace weft::app;

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

namespace {

struct Entry {
  const Help* help;
  int (*run)(int, char**);
  po::options_description (*options)();  // nullptr for a group (roce)
};

const Entry kCommands[] = {
    {&kSmHelp, cmd_sm, sm_command_options},
    {&kSimHelp, cmd_sim, sim_command_options},
    {&kTopoHelp, cmd_topo, topo_command_options},
    {&kRouteHelp, cmd_route, route_command_options},
    {&kConfigHelp, cmd_config, config_command_options},
    {&kRoceHelp, cmd_roce, nullptr},
};

void usage(FILE* out) {
  std::fputs(
      "Usage: weft COMMAND [OPTIONS]\n"
      "  or:  weft help [COMMAND]\n"
      "  or:  weft --version\n\n"
      "weft is an InfiniBand subnet manager: it discovers a subnet, assigns LIDs,\n"
      "routes it, programs every switch and port, and serves SubnAdm queries, on a\n"
      "real HCA port, on ibsim, or on its own simulator. It also checks and renders a\n"
      "lossless RoCE profile for Ethernet fabrics.\n\n"
      "Options:\n"
      "  -h, --help     this help\n"
      "  -V, --version  print the version\n\n"
      "Commands:\n",
      out);
  for (const auto& c : kCommands)
    std::fprintf(out, "  %-8s %s\n", std::string(c.help->name).c_str(),
                 std::string(c.help->summary).c_str());
  std::fputs("\nweft COMMAND --help (or weft help COMMAND) describes one command.\n", out);
}

// weft help [COMMAND | --man]
int cmd_help(int argc, char** argv) {
  if (argc < 2) return usage(stdout), 0;
  const std::string_view what = argv[1];
  if (what == "--man") {
    std::vector<ManEntry> entries;
    for (const auto& c : kCommands) {
      if (c.options)
        entries.push_back({c.help, c.options()});
      else
        for (auto& e : roce_man_entries()) entries.push_back(std::move(e));
    }
    std::fputs(man_include(entries).c_str(), stdout);
    return 0;
  }
  for (const auto& c : kCommands)
    if (c.help->name == what) {
      char help[] = "--help";
      char* args[] = {argv[1], help, nullptr};
      return c.run(2, args);
    }
  std::fprintf(stderr, "weft: help: no command \"%s\"\n", argv[1]);
  return 2;
}

// glibc's malloc asks the kernel for transparent huge pages only when told so as the
// process starts (the glibc.malloc.hugetlb tunable), and most machines give them only to
// who asks (transparent_hugepage/enabled = madvise, Debian's default). The commands that
// route build tables of hundreds of megabytes in 48 KB rows on the largest fabrics, read
// at random across rows: with huge pages their page faults and TLB misses fall, and
// routing the radix-56 tree takes 10-40 % less CPU (bench/bench_scale.py). So those
// commands run themselves again, once, with the tunable added, unless:
//  - GLIBC_TUNABLES already names glibc.malloc.hugetlb (the user's choice stands: =0
//    turns this off);
//  - LD_PRELOAD is set: a preloaded library (umad2sim, valgrind's) may hold state, such
//    as a connection, that a second start would duplicate, or lose its hold on us;
//  - the process runs with privileges it was given (setuid, file capabilities): glibc
//    then strips GLIBC_TUNABLES, and the tunable would never take;
//  - the loader was run as the program (ld.so weft ...): /proc/self/exe is the loader;
//  - the kernel gives every process huge pages (always) or none (never), or exec fails:
//    then weft simply goes on as it is.
// WEFT_RAN_AGAIN marks the second start, which runs once whatever glibc did with the
// environment, and gets back the name the first had (execv of /proc/self/exe names it
// "exe": ps, pgrep, top and systemctl status would show that).
// The PID, arguments and open files stay; the environment gains the tunable.
void run_again_with_huge_pages(char** argv) {
  if (std::getenv("WEFT_RAN_AGAIN")) {
    unsetenv("WEFT_RAN_AGAIN");
    const std::string_view self = argv[0];
    const std::string name(self.substr(self.rfind('/') + 1).substr(0, 15));
    prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
    return;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string have = tunables ? tunables : "";
  if (have.find("glibc.malloc.hugetlb") != std::string::npos) return;
  if (const char* pre = std::getenv("LD_PRELOAD"); pre && *pre) return;
  if (getauxval(AT_SECURE) || getauxval(AT_BASE) == 0) return;
  std::string modes;
  {
    std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
    if (!std::getline(thp, modes) || modes.find("[madvise]") == std::string::npos) return;
  }  // (closed before exec: the stream's descriptor is not close-on-exec)
  const std::string want = (have.empty() ? "" : have + ":") + "glibc.malloc.hugetlb=1";
  if (setenv("WEFT_RAN_AGAIN", "1", 1) == 0 && setenv("GLIBC_TUNABLES", want.c_str(), 1) == 0)
    execv("/proc/self/exe", argv);
  // Still here: exec failed; go on without. (From the copy: setenv may have freed what
  // getenv returned.)
  unsetenv("WEFT_RAN_AGAIN");
  if (tunables)
    setenv("GLIBC_TUNABLES", have.c_str(), 1);
  else
    unsetenv("GLIBC_TUNABLES");
}

// The SM's working set is its largest sweep's: the snapshot the switches hold and the
// one being built beside it (on the radix-56 tree, 187 MB of tables each). glibc's malloc
// by default hands freed memory back (blocks over 128 KB to 32 MB mapped apart, the
// heap's free top trimmed) and gives each thread that meets a busy arena one of its own
// (where glibc 2.36 asks for no huge pages): every reroute then faulted its tables in
// afresh, on the routing thread in 4 KB pages (0.6 s of CPU of a 1.8 s reroute on that
// tree, bench_reroute.py --huge). So the commands that route keep what they free, for
// the next sweep: one arena, nothing mapped apart, no trim. A tunable the user names in
// GLIBC_TUNABLES (or in glibc's older MALLOC_* variables) stands, and so do huge pages
// of hugetlbfs (glibc.malloc.hugetlb=2: glibc maps those only apart). (Set before any
// thread starts.)
std::vector<std::string> kept_settings;

// glibc.malloc.hugetlb's value in GLIBC_TUNABLES ('0' when not named).
char hugetlb_mode() {
  const char* t = std::getenv("GLIBC_TUNABLES");
  const std::string_view v = t ? t : "", key = "glibc.malloc.hugetlb=";
  const size_t at = v.find(key);
  return at == std::string_view::npos || at + key.size() >= v.size() ? '0' : v[at + key.size()];
}

void keep_freed_memory() {
  const char* t = std::getenv("GLIBC_TUNABLES");
  const std::string_view v = t ? t : "";
  auto named = [&v](std::string_view key, const char* old_name) {
    return v.find(key) != std::string_view::npos || std::getenv(old_name) != nullptr;
  };
  if (!named("glibc.malloc.arena_max", "MALLOC_ARENA_MAX") && mallopt(M_ARENA_MAX, 1))
    kept_settings.emplace_back("arena_max");
  const char mode = hugetlb_mode();
  const bool hugetlbfs = mode != '0' && mode != '1';
  if (!named("glibc.malloc.mmap_max", "MALLOC_MMAP_MAX_") &&
      !named("glibc.malloc.mmap_threshold", "MALLOC_MMAP_THRESHOLD_") && !hugetlbfs &&
      mallopt(M_MMAP_MAX, 0))
    kept_settings.emplace_back("mmap_max");
  if (!named("glibc.malloc.trim_threshold", "MALLOC_TRIM_THRESHOLD_") &&
      mallopt(M_TRIM_THRESHOLD, INT_MAX))
    kept_settings.emplace_back("trim_threshold");
}

}  // namespace

namespace weft::app {

const std::vector<std::string>& malloc_kept() {
  return kept_settings;
}

bool malloc_keeps_freed() {
  auto kept = [](std::string_view what) {
    return std::find(kept_settings.begin(), kept_settings.end(), what) != kept_settings.end();
  };
  return kept("mmap_max") && kept("trim_threshold");
}

bool malloc_huge_pages() {
  return hugetlb_mode() != '0';
}

int die(const std::string& msg, int code) {
  std::fprintf(stderr, "weft: %s\n", msg.c_str());
  return code;
}

std::optional<int> parse_command_line(int argc, char** argv, const po::options_description& desc,
                                      po::variables_map& vm, const Help& help,
                                      const po::positional_options_description* pos) {
  try {
    auto parser = po::command_line_parser(argc, argv).options(desc);
    if (pos) parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    return die(std::string(help.name) + ": " + e.what() + " (weft " + std::string(help.name) +
               " --help)");
  }
  if (vm.count("help")) {
    print_help(std::cout, help, &desc);
    return 0;
  }
  return std::nullopt;
}

}  // namespace weft::app

int main(int argc, char** argv) {
  if (argc < 2) return usage(stderr), 2;
  const std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help") return usage(stdout), 0;
  if (cmd == "--version" || cmd == "-V") {
    std::printf("weft %s\n", WEFT_VERSION);
    return 0;
  }
  if (cmd == "help") return cmd_help(argc - 1, argv + 1);
  if (cmd == "sm" || cmd == "sim" || cmd == "route") {
    run_again_with_huge_pages(argv);
    keep_freed_memory();
  }
  for (const auto& c : kCommands)
    if (c.help->name == cmd) return c.run(argc - 1, argv + 1);
  std::fprintf(stderr, "weft: unknown command \"%s\"\n\n", argv[1]);
  usage(stderr);
  return 2;
}
