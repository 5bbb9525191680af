// weft topo: a generated fabric written as an ibsim net file.
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "weft/fabric/topology_file.hpp"
#include "weft/simulator/generators.hpp"

namespace weft::app {

namespace po = boost::program_options;

const Help kTopoHelp{
    "topo", "write a generated fabric as an ibsim net file", "weft topo SPEC [-o FILE.net]",
    R"(Writes the fabric SPEC describes as an ibsim net file (the format ibsim -s reads),
with deterministic node names and GUIDs: the same SPEC always gives the same file.
SPEC is a generator spec (see weft sim) or a topology file, which is then rewritten
in net-file form.)",
    R"(Exit status:
  0  written
  2  bad usage, a bad spec, or the file cannot be written

Examples:
  weft topo ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2 -o ft3.net
  weft topo ibnetdiscover.out -o fabric.net)"};

po::options_description topo_command_options() {
  po::options_description desc("Options");
  desc.add_options()("help,h", "this help")("spec", po::value<std::string>(),
                                            "generator spec or topology file")(
      "out,o", po::value<std::string>(), "net file to write (default: stdout)");
  return desc;
}

int cmd_topo(int argc, char** argv) {
  const po::options_description desc = topo_command_options();
  po::positional_options_description pos;
  pos.add("spec", 1);
  po::variables_map vm;
  if (auto rc = parse_command_line(argc, argv, desc, vm, kTopoHelp, &pos)) return *rc;
  if (!vm.count("spec"))
    return die("topo: name a generator spec or topology file (weft topo SPEC)");
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
}  // namespace weft::app
