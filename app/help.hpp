// weft's help: one text per command, printed by `weft COMMAND --help` and gathered
// into the manual page (`weft help --man` writes the sections help2man includes in
// weft.8), so the two never disagree.
//
//   const Help kTopoHelp{"topo", "write a generated fabric as an ibsim net file",
//                        "weft topo SPEC [-o FILE.net]", "Writes ...", "Exit status:\n  0 ..."};
//   if (vm.count("help")) return print_help(std::cout, kTopoHelp, desc), 0;
#pragma once

#include <boost/program_options.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace weft::app {

struct Help {
  std::string_view name;         // "sm", "roce check"
  std::string_view summary;      // one line, for the command list
  std::string_view synopsis;     // usage lines, one per form
  std::string_view description;  // paragraphs, separated by blank lines
  // Titled sections after the options ("Files:", "Exit status:", "Examples:", ...):
  // each title on a line of its own ending in ':', its lines indented by two spaces.
  std::string_view sections;
};

void print_help(std::ostream& os, const Help& h,
                const boost::program_options::options_description* o);

// One command's page for the manual: its help and its options (none for a group).
struct ManEntry {
  const Help* help;
  boost::program_options::options_description options;
};

// The help2man include file: a COMMANDS section with a subsection per command.
std::string man_include(const std::vector<ManEntry>& commands);

}  // namespace weft::app
