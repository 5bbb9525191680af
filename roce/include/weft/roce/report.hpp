// weft/roce/report.hpp — the RoCE profile's whole check and diff, as `weft roce
// check` and `weft roce diff` print them and the REST API returns them: the profile's
// own findings, then each device port's (a mistake in the profile shows on every port
// rendered from it, so those are listed once, at the profile's line); and what devices
// hold against what the profile asks, plus the checks on what they hold.
//
//   auto r = check_fabric(profile, fabric);              // r.findings, r.inherited
//   auto ob = parse_observed(text, "h1.json", "");      // a host snapshot, dcb, SONiC, NVUE
//   auto d = diff_observed(profile, &fabric, {*ob});
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "weft/roce/check.hpp"

namespace weft::roce {

struct CheckReport {
  std::vector<Finding> findings;
  size_t inherited = 0;  // device findings that repeat the profile's own, left out
};
CheckReport check_fabric(const RoceProfile& p, const RoceFabric& f);

// What one device holds, read from a file's text: which format it is is sniffed.
struct Observed {
  std::optional<HostConfig> host;
  std::optional<SwitchConfig> sw;
  std::vector<std::string> warnings;
};
// `device`: the name for a file that does not carry one (default: the source's stem).
[[nodiscard]] Result<Observed> parse_observed(std::string_view text, const std::string& source,
                                              const std::string& device);

struct DiffReport {
  std::vector<Finding> findings;
  // By effect: entries that differ but change no value's treatment (info; --verbose).
  std::vector<Finding> unreached;
  size_t hosts = 0, switches = 0;  // host ports and switches observed
};
// kEffect (the default): diff_effect, the checks on what devices hold (their
// literal "mapping" notes left to the effect's own, and a fault the checks already
// name not named twice). kLiteral: diff(), field by field, and every check.
enum class DiffMode : uint8_t { kEffect, kLiteral };
DiffReport diff_observed(const RoceProfile& p, const RoceFabric* f,
                         const std::vector<Observed>& seen, DiffMode mode = DiffMode::kEffect);

nlohmann::json finding_json(const Finding& f);
// Findings sorted for reading: by severity, device, port.
void sort_findings(std::vector<Finding>& f);

}  // namespace weft::roce
