#include "weft/roce/report.hpp"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "weft/roce/device.hpp"
#include "weft/roce/formats.hpp"

namespace weft::roce {

CheckReport check_fabric(const RoceProfile& p, const RoceFabric& f) {
  CheckReport r;
  r.findings = check_profile(p);
  const FabricView view = intended(p, &f);
  // Devices rendered from the profile differ from it only in cable-dependent checks,
  // which the profile's own findings never carry.
  const size_t from_profile = r.findings.size();
  for (auto& x : check(p, &f, view)) {
    const auto first = r.findings.begin(), last = r.findings.begin() + long(from_profile);
    if (std::any_of(first, last, [&](const Finding& y) {
          return y.check == x.check && y.expected == x.expected && y.observed == x.observed;
        }))
      ++r.inherited;
    else
      r.findings.push_back(std::move(x));
  }
  return r;
}

Result<Observed> parse_observed(std::string_view text, const std::string& source,
                                const std::string& device) {
  Observed o;
  const std::string kind = sniff_format(text);
  const std::string stem = std::filesystem::path(source).stem().string();
  const std::string name = device.empty() ? stem : device;
  if (kind == "host" || kind == "dcb") {
    auto h = kind == "host" ? parse_host_snapshot(text, source) : parse_dcb_script(text, source);
    if (!h) return std::unexpected(h.error());
    if (h->config.device.empty()) h->config.device = name;
    o.host = std::move(h->config);
    o.warnings = std::move(h->warnings);
  } else if (kind == "sonic" || kind == "nvue") {
    auto s = kind == "sonic" ? parse_sonic(text, source, name) : parse_nvue(text, source, name);
    if (!s) return std::unexpected(s.error());
    o.sw = std::move(s->config);
    o.warnings = std::move(s->warnings);
  } else {
    return fail(Errc::kInvalidInput,
                source + ": not a host snapshot, dcb script, SONiC config_db or NVUE commands");
  }
  return o;
}

DiffReport diff_observed(const RoceProfile& profile, const RoceFabric* f,
                         const std::vector<Observed>& observed, DiffMode mode) {
  DiffReport r;
  FabricView seen;
  std::vector<Finding>& findings = r.findings;
  std::vector<Finding> diffs;  // the device diffs, before the checks run
  auto take = [&](const auto& want, const auto& have) {
    if (mode == DiffMode::kLiteral) {
      auto df = diff(want, have);
      diffs.insert(diffs.end(), df.begin(), df.end());
      return;
    }
    auto e = diff_effect(profile, want, have);
    diffs.insert(diffs.end(), e.findings.begin(), e.findings.end());
    r.unreached.insert(r.unreached.end(), e.unreached.begin(), e.unreached.end());
  };
  for (const Observed& ob : observed) {
    const std::string name = ob.host ? ob.host->device : ob.sw->device;
    const int d = f ? f->device(name) : -1;
    if (f && d < 0)
      findings.push_back(Finding{name, "", "device", "in the fabric", "unknown", Severity::kWarning,
                                 "fabric", "observed device is not in the fabric file"});
    if (ob.host) {
      const HostConfig& h = *ob.host;
      const int p = d >= 0 ? f->devices[d].port(h.port) : -1;
      HostConfig want =
          p >= 0 ? intend_host(profile, f, d, p) : intend_host(profile, h.device, h.port);
      if (p < 0) want.pfc_delay = h.pfc_delay;  // the cable is known only from a fabric
      take(want, h);
      if (h.pfc_mask && want.pfc_mask && *h.pfc_mask != *want.pfc_mask)
        findings.push_back(Finding{
            h.device, h.port, "pfc.prio-pfc", "", "", Severity::kWarning, "apply",
            "applying the profile changes the PFC priorities: mlx5 resets the link (a flap)"});
      seen.hosts.push_back(h);
    } else {
      const SwitchConfig& s = *ob.sw;
      SwitchConfig want;
      if (d >= 0 && f->devices[d].kind == roce::DeviceKind::kSwitch) {
        want = intend_switch(profile, f, d);
      } else {
        // Not in a fabric: the profile's view of the ports it reports, without cable facts.
        roce::RoceFabric one;
        roce::RoceDevice dev;
        dev.name = s.device;
        dev.kind = roce::DeviceKind::kSwitch;
        const int i = one.add_device(dev);
        for (const auto& p : s.ports) one.add_port(i, p.name);
        want = intend_switch(profile, &one, i);
        for (auto& p : want.ports) {
          const SwitchPort* have = s.port(p.name);
          p.pgs.clear();  // headroom depends on the cable: compared only with a fabric
          if (have) p.pgs = have->pgs;
          if (have) p.speed_mbps = have->speed_mbps, p.cable_m = have->cable_m;
        }
      }
      take(want, s);
      seen.switches.push_back(s);
    }
  }
  auto more = check(profile, f, seen);
  if (mode == DiffMode::kEffect) {
    // The checks' literal mapping notes are the effect's to make; a fault a check names
    // (same device, port and field) is not named twice.
    std::erase_if(more, [](const Finding& x) { return x.check == "mapping"; });
    std::erase_if(diffs, [&](const Finding& d) {
      return std::any_of(more.begin(), more.end(), [&](const Finding& c) {
        return c.device == d.device && c.port == d.port && c.field == d.field &&
               c.severity <= d.severity;
      });
    });
  }
  findings.insert(findings.end(), diffs.begin(), diffs.end());
  findings.insert(findings.end(), more.begin(), more.end());
  r.hosts = seen.hosts.size();
  r.switches = seen.switches.size();
  return r;
}

nlohmann::json finding_json(const Finding& f) {
  return {{"device", f.device},     {"port", f.port},
          {"field", f.field},       {"expected", f.expected},
          {"observed", f.observed}, {"severity", severity_name(f.severity)},
          {"check", f.check},       {"message", f.message}};
}

void sort_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.severity, a.device, a.port) < std::tie(b.severity, b.device, b.port);
  });
}

}  // namespace weft::roce
