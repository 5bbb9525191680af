// weft/simulator/cc_check.hpp — congestion control judged by what the simulated devices
// hold, not by what the manager says it wrote: every device it calls configured must
// hold the options' settings (its switch setting and every port's element, or its CA
// setting and table cut to its ControlTableCap).
#pragma once

#include <map>
#include <string>

#include "weft/cc/manager.hpp"
#include "weft/simulator/sim_fabric.hpp"

namespace weft::simulator {

struct CcHeldReport {
  size_t checked = 0;  // configured devices read
  size_t wrong = 0;    // of them holding something else (each counted once)
  std::string first_problem;
  bool ok() const { return wrong == 0; }
};
CcHeldReport check_cc_held(const SimFabric& sim, const cc::CcOptions& o,
                           const std::map<cc::DeviceKey, cc::CcDeviceView>& view);

}  // namespace weft::simulator
