#include "weft/simulator/cc_check.hpp"

namespace weft::simulator {

CcHeldReport check_cc_held(const SimFabric& sim, const cc::CcOptions& o,
                           const std::map<cc::DeviceKey, cc::CcDeviceView>& view) {
  CcHeldReport rep;
  const auto& f = sim.model();
  bool bad = false;  // the device under check already counted
  auto wrong = [&](const std::string& what) {
    if (bad) return;
    bad = true;
    if (!rep.wrong++) rep.first_problem = what;
  };
  for (const auto& [key, v] : view) {
    if (v.state != cc::DeviceState::kConfigured) continue;
    auto n = f.find(Guid{key.first});
    if (!n) continue;
    const auto& nd = f.node(*n);
    const CcDevice* d = sim.cc().find(*n, key.second);
    ++rep.checked;
    bad = false;
    const std::string who = "\"" + nd.name + "\" port " + std::to_string(key.second);
    if (!d) {
      wrong(who + ": no CC agent");
      continue;
    }
    if (o.key && d->key.cc_key != o.key) wrong(who + ": holds another CC_Key");
    if (nd.is_switch()) {
      if (!(d->sw == o.sw)) wrong(who + ": SwitchCongestionSetting differs");
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        if (p / cc::kPortsPerBlock >= d->port_blocks.size() ||
            !(d->port_blocks[p / cc::kPortsPerBlock][p % cc::kPortsPerBlock] == o.port_element())) {
          wrong(who + ": SwitchPortCongestionSetting of port " + std::to_string(p) + " differs");
          break;
        }
      continue;
    }
    if (!(d->ca == o.ca)) wrong(who + ": CACongestionSetting differs");
    const auto blocks =
        o.cct_blocks(d->info.control_table_cap, cc::packet_time_ns(nd.ports.at(key.second).attrs));
    for (size_t b = 0; b < blocks.size(); ++b)
      if (b >= d->cct.size() || !(d->cct[b] == blocks[b])) {
        wrong(who + ": CongestionControlTable block " + std::to_string(b) + " differs");
        break;
      }
  }
  return rep;
}

}  // namespace weft::simulator
