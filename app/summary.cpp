#include "summary.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace weft::app {

namespace po = boost::program_options;

void print_summary(const sm::SweepReport& r, const mad::EngineStats& s) {
  if (r.sm_state != mad::SmState::kMaster) {
    // Not master: it read the fabric and the other SMs, and wrote nothing.
    std::printf("weft: %s\n", r.reason.c_str());
    std::printf("  fabric   %zu switches, %zu CAs, %zu routers, %zu links\n", r.switches, r.cas,
                r.routers, r.links);
    for (const auto& o : r.sms)
      std::printf("  SM       %s %s%s\n", o.name.c_str(),
                  o.answered ? mad::sm_state_name(o.info.state) : "(no answer)",
                  o.answered ? (", priority " + std::to_string(o.info.priority) +
                                (o.key_ok ? "" : ", another SM_Key: ignored"))
                                   .c_str()
                             : "");
    return;
  }
  std::printf("weft: %s\n", r.subnet_up ? "SUBNET UP" : ("subnet NOT up: " + r.reason).c_str());
  for (const auto& o : r.sms)
    std::printf("  SM       %s %s, priority %d (this SM is master)\n", o.name.c_str(),
                o.answered ? mad::sm_state_name(o.info.state) : "(no answer)",
                o.answered ? int(o.info.priority) : 0);
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
      "  writes   %llu PortInfo, %llu SwitchInfo, %llu LFT blocks (%llu read, %llu spot-checked, "
      "%llu switches found changed), %llu ports activated, %llu told to re-register%s\n",
      (unsigned long long)r.portinfo_sets, (unsigned long long)r.switchinfo_sets,
      (unsigned long long)r.lft_blocks_written, (unsigned long long)r.lft_blocks_read,
      (unsigned long long)r.lft_blocks_checked, (unsigned long long)r.lft_switches_changed,
      (unsigned long long)r.ports_activated, (unsigned long long)r.client_reregisters,
      r.new_term ? "; a new master term: every table read back" : "");
  std::printf(
      "  tables   P_Key blocks %llu written (%llu read), %llu switch ports enforce P_Keys; SL2VL "
      "%llu written (%llu read); VLArb blocks %llu written (%llu read); %llu blocks "
      "spot-checked, %llu found changed\n",
      (unsigned long long)r.pkey_blocks_written, (unsigned long long)r.pkey_blocks_read,
      (unsigned long long)r.ports_enforcing, (unsigned long long)r.sl2vl_written,
      (unsigned long long)r.sl2vl_read, (unsigned long long)r.vlarb_written,
      (unsigned long long)r.vlarb_read, (unsigned long long)r.table_blocks_checked,
      (unsigned long long)r.table_blocks_changed);
  std::printf("  ports    %zu of %zu linked port ends ACTIVE\n", r.ports_active, r.ports_linked);
  if (r.virt_ports)
    std::printf(
        "  vports   %zu on %zu CA ports with virtualization, %zu with a LID of their own; %llu "
        "SMPs to find them; VPortPKeyTable %llu blocks written (%llu read); %llu brought to "
        "ACTIVE, %llu failures\n",
        r.vports_found, r.virt_ports, r.vports_with_lid, (unsigned long long)r.vport_reads,
        (unsigned long long)r.vport_pkey_blocks_written,
        (unsigned long long)r.vport_pkey_blocks_read, (unsigned long long)r.vports_activated,
        (unsigned long long)r.vport_failures);
  std::printf(
      "  time ms  discovery %.1f, LIDs %.1f, routing %.1f, programming %.1f, activation %.1f, "
      "total %.1f\n",
      r.ms_discovery, r.ms_lids, r.ms_routing, r.ms_program, r.ms_activate, r.ms_total);
  std::printf(
      "  MADs     %llu retried, %llu lost and resent, %llu timed out, %llu error status, %llu "
      "malformed, %llu unmatched\n",
      (unsigned long long)s.retried, (unsigned long long)s.lost, (unsigned long long)s.timed_out,
      (unsigned long long)s.error_status, (unsigned long long)s.malformed,
      (unsigned long long)s.unmatched);
  std::printf("  problems %zu\n", r.problems.size());
  for (size_t i = 0; i < r.problems.size() && i < 10; ++i)
    std::printf("    %s\n", r.problems[i].c_str());
  if (r.problems.size() > 10)
    std::printf("    ... (%zu more in the log)\n", r.problems.size() - 10);
  std::fflush(stdout);
}

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

Result<void> dump_model(const po::variables_map& vm, const sm::SubnetSnapshot* snap) {
  if (!vm.count("dump-model") || !snap) return {};
  const std::string path = vm["dump-model"].as<std::string>();
  const std::string text = model_text(snap->fabric);
  FILE* fp = std::fopen(path.c_str(), "w");
  if (!fp || std::fwrite(text.data(), 1, text.size(), fp) != text.size() || std::fclose(fp) != 0)
    return fail(Errc::kIo, "--dump-model " + path + ": cannot write");
  return {};
}

// Flow-level traffic lines: per pattern, static beside adaptive; with failures, until the
// SM reroutes ("traffic") and after ("traffic_rerouted").
void print_traffic(const nlohmann::json& j) {
  for (const char* key : {"traffic", "traffic_rerouted"}) {
    if (!j.contains(key)) continue;
    for (const auto& [p, sides] : j[key].items()) {
      if (!sides.is_object()) {  // "error": why there is no traffic to show
        std::printf("  %s: %s\n", key, sides.dump().c_str());
        continue;
      }
      const auto& s = sides["static"];
      const auto& a = sides["adaptive"];
      std::printf(
          "  %s %-11s busiest link %.4g static, %.4g adaptive; slowest flow %.3f, %.3f; "
          "mean %.3f, %.3f; black-holed %llu, %llu\n",
          key, p.c_str(), s["max_link_flows"].get<double>(), a["max_link_flows"].get<double>(),
          s["min_flow_throughput"].get<double>(), a["min_flow_throughput"].get<double>(),
          s["mean_flow_throughput"].get<double>(), a["mean_flow_throughput"].get<double>(),
          s["blackholed_flows"].get<unsigned long long>(),
          a["blackholed_flows"].get<unsigned long long>());
    }
  }
}

}  // namespace weft::app
