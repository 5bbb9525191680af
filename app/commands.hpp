// The weft binary's commands: what each runs, its help and its options (for --help and
// the manual page). main.cpp holds the table.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "help.hpp"

namespace weft::app {

// Prints "weft: MSG" on stderr and returns `code` (2: bad usage or input).
int die(const std::string& msg, int code = 2);
// Whether glibc's malloc was told to ask for transparent huge pages (the
// glibc.malloc.hugetlb tunable, non-zero): main() sees to it for the routing commands.
bool malloc_huge_pages();
// Which of malloc's settings main() chose for the routing commands, to keep the memory
// they free (the user's own choices stand): "arena_max", "mmap_max", "trim_threshold".
const std::vector<std::string>& malloc_kept();
// Whether what the SM frees stays in its heap (main() kept both: nothing mapped apart,
// no trim), so that memory faulted in ahead is there for the next sweep.
bool malloc_keeps_freed();

// Parses a command line against `desc`: nullopt to go on; else the exit status, after
// printing the help (--help) or the parse error.
std::optional<int> parse_command_line(
    int argc, char** argv, const boost::program_options::options_description& desc,
    boost::program_options::variables_map& vm, const Help& help,
    const boost::program_options::positional_options_description* pos = nullptr);

extern const Help kSmHelp, kSimHelp, kTopoHelp, kConfigHelp, kRouteHelp, kRoceHelp;
boost::program_options::options_description sm_command_options();
boost::program_options::options_description sim_command_options();
boost::program_options::options_description topo_command_options();
boost::program_options::options_description config_command_options();
boost::program_options::options_description route_command_options();
// roce is a group: its commands' entries for the manual.
std::vector<ManEntry> roce_man_entries();

int cmd_sm(int argc, char** argv);
int cmd_sim(int argc, char** argv);
int cmd_topo(int argc, char** argv);
int cmd_config(int argc, char** argv);
int cmd_route(int argc, char** argv);
int cmd_roce(int argc, char** argv);

}  // namespace weft::app
