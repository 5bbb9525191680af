// weft config: check an opensm.conf (and the partition and QoS policy files it names),
// or write the commented template of every option.
#include <cstdio>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "sm_config.hpp"
#include "weft/cc/options.hpp"
#include "weft/config/option_files.hpp"
#include "weft/durable_file.hpp"
#include "weft/qos/vl_tables.hpp"

namespace weft::app {

namespace po = boost::program_options;

const Help kConfigHelp{
    "config", "check a config file, or write the commented template",
    "weft config check FILE [--strict]\nweft config template [FILE]",
    R"(check loads FILE as weft sm would (opensm.conf syntax) with the partition file
(partition_config_file) and QoS policy file (qos_policy_file) it names, and prints
every error and warning with file and line, then a summary: the options weft
implements that the file sets, the OpenSM options it sets to OpenSM's own default,
the OpenSM options weft does not implement (warnings), each partition with its
member rules and multicast groups, and the QoS tables per port type.

template writes every option weft implements, commented out at its default under
its help (the file installed as /etc/weft/weft.conf), to FILE or stdout.)",
    R"(Exit status:
  0  no errors (check: and no warnings, with --strict); the template was written
  1  errors were found (check: or warnings, with --strict); FILE cannot be written
  2  bad usage

Examples:
  weft config check /etc/opensm/opensm.conf
  opensm -c /tmp/opensm.conf && weft config check /tmp/opensm.conf --strict
  weft config template > weft.conf)"};

po::options_description config_command_options() {
  po::options_description desc("Options");
  desc.add_options()("help,h", "this help")("action", po::value<std::string>(),
                                            "check or template")("file", po::value<std::string>(),
                                                                 "opensm.conf-style file")(
      "strict", "warnings (OpenSM options weft does not implement) fail the check too");
  return desc;
}

int cmd_config(int argc, char** argv) {
  const po::options_description desc = config_command_options();
  po::positional_options_description pos;
  pos.add("action", 1).add("file", 1);
  po::variables_map vm;
  if (auto rc = parse_command_line(argc, argv, desc, vm, kConfigHelp, &pos)) return *rc;
  const std::string action = vm.count("action") ? vm["action"].as<std::string>() : "";
  if (action == "template") {
    const std::string text = config::template_text();
    if (!vm.count("file")) return std::fwrite(text.data(), 1, text.size(), stdout), 0;
    if (auto r = write_file_durably(vm["file"].as<std::string>(), text); !r)
      return die(r.error().message, 1);
    return 0;
  }
  if (action != "check" || !vm.count("file"))
    return die("config: usage: weft config check FILE [--strict] | weft config template [FILE]");
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
    auto parts = config::load_partition_file(v);
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
    auto qp = config::load_qos_policy_file(v);
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
    auto cco = cc::cc_from_options(v);
    if (!cco) {
      ++errors;
      std::printf("error: %s\n", cco.error().message.c_str());
    } else if (cco->enabled) {
      size_t sls = 0;
      for (unsigned sl = 0; sl < 16; ++sl) sls += (cco->ca.control_map >> sl) & 1;
      std::printf("congestion control: %s, switch Control_Map 0x%08x, CA entries for %zu SLs, ",
                  cco->key ? "a CC_Key" : "no CC_Key", cco->sw.control_map, sls);
      if (cco->generates_cct())
        std::printf("a table made for each CA port's link, up to %u ns over %u entries\n",
                    cco->cct_max_delay_ns, unsigned(cco->cct_limit) + 1);
      else
        std::printf("a table of %zu entries (%zu blocks)\n", cco->cct.size(),
                    cco->cct_blocks().size());
    }
    // The state store as the daemon would open it (nothing is contacted).
    auto st = state_store(v, "weft config check", v.get_str("state_dir") + "/partitions.rest.conf");
    if (!st) {
      ++errors;
      std::printf("error: %s\n", st.error().message.c_str());
    } else {
      const auto s = (*st)->status();
      if (s.kind == "etcd")
        std::printf(
            "state store: etcd %s, prefix %s, lease %d s%s\n", s.detail["endpoints"].dump().c_str(),
            s.detail["prefix"].get<std::string>().c_str(), s.detail["lease_s"].get<int>(),
            v.get_str("etcd_cacert").empty() && v.get_str("etcd_cert").empty() ? "" : ", TLS");
      else
        std::printf("state store: the state directory %s\n", v.get_str("state_dir").c_str());
    }
  }
  if (errors) return 1;
  return vm.count("strict") && warnings ? 1 : 0;
}

}  // namespace weft::app
