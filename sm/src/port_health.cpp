// Ports the SM keeps an eye on between sweeps: link changes counted into flapping
// (flap_policy), counter sweeps and their unhealthy ports (unhealthy_port_policy), and
// what an admin releases or marks healthy again. Each takes effect with the next heavy
// sweep, through the port book and the sweep asks.
#include <chrono>
#include <optional>

#include "weft/log.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::sm {

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void SubnetManager::note_flaps(
    const std::vector<std::tuple<uint64_t, PortNum, std::string>>& changed) {
  const auto now = t_.clock().now();
  for (const auto& [guid, port, name] : changed) {
    const auto flap =
        traps_.link_changed({guid, port}, now, opts_.flap_threshold, opts_.flap_window);
    if (flap.started) {
      WEFT_LOG(Warn, "SM-0024")
          << "port " << name << " is flapping: " << flap.changes << " link changes within "
          << std::chrono::duration_cast<std::chrono::seconds>(opts_.flap_window).count() << " s";
      emit("port_flapping",
           {{"guid", hex_guid(guid)}, {"port", port}, {"name", name}, {"changes", flap.changes}});
      // flap_policy down: a switch port is disabled (a CA port cannot be: nothing
      // could enable it again; its switch end is among the changed ends too).
      const bool at_switch = snapshot_ && [&] {
        auto n = snapshot_->fabric.find(Guid{guid});
        return n && snapshot_->fabric.node(*n).is_switch();
      }();
      if (opts_.flap_policy == FlapPolicy::kDown && at_switch &&
          !books_.down().contains({guid, port})) {
        const auto why = DownCause::flapping(
            uint32_t(flap.changes),
            uint32_t(std::chrono::duration_cast<std::chrono::seconds>(opts_.flap_window).count()));
        if (auto r = books_.down().keep_down({guid, port}, why, unix_now()); !r)
          WEFT_LOG(Error, "SM-0026") << "ports-down not saved: " << r.error().message;
        WEFT_LOG(Warn, "SM-0025") << "port " << name
                                  << " left down (flap_policy down): " << why.text();
        emit("port_left_down", {{"guid", hex_guid(guid)}, {"port", port}, {"name", name}});
        asks_.deferred = true;
      }
    }
  }
  // Ports that calmed down: no change within the window.
  for (const auto& [guid, port] : traps_.calmed(now, opts_.flap_window))
    emit("port_stable", {{"guid", hex_guid(guid)}, {"port", port}});
}

void SubnetManager::set_perf(std::shared_ptr<const perf::PerfView> v) {
  if (v) perf_ = std::move(v);
}

void SubnetManager::counters_swept(const perf::PerfSweep& r) {
  for (const auto& [key, u] : r.unhealthy) apply_unhealthy(key, u);
  emit("counters", {{"ports", r.ports},
                    {"read", r.read},
                    {"failed", r.failed},
                    {"mads", r.mads},
                    {"ms", r.ms},
                    {"unhealthy", perf_->unhealthy.size()},
                    {"congested", r.congested.size()}});
}

void SubnetManager::congestion_read(const cc::CcLogRead& r) {
  if (!r.events) return;
  constexpr size_t kShown = 5;
  nlohmann::json ports = nlohmann::json::array();
  for (size_t i = 0; i < r.ports.size() && i < kShown; ++i)
    ports.push_back({{"guid", hex_guid(r.ports[i].guid)},
                     {"port", r.ports[i].port},
                     {"log_events", r.ports[i].log_events}});
  emit("congestion", {{"events", r.events},
                      {"ports", r.ports.size()},
                      {"flows", r.flows},
                      {"devices_read", r.read},
                      {"top", std::move(ports)}});
}

void SubnetManager::apply_unhealthy(const perf::PortKey& key, const perf::Unhealthy& u) {
  const auto* st = perf_->find(key.first, key.second);
  nlohmann::json ev = {{"guid", hex_guid(key.first)},
                       {"port", key.second},
                       {"reason", u.reason},
                       {"counter", u.counter},
                       {"policy", perf::policy_name(u.policy)}};
  if (st) ev["name"] = st->node_desc;
  // isolate: the link is left down at its switch end (this port, or the switch port
  // facing a CA's), as flap_policy down leaves it.
  std::optional<std::pair<uint64_t, PortNum>> at;
  if (snapshot_) {
    const auto& f = snapshot_->fabric;
    if (auto n = f.find(Guid{key.first}); n && key.second <= f.node(*n).num_ports) {
      const auto& p = f.node(*n).ports[key.second];
      if (f.node(*n).is_switch())
        at = key;
      else if (p.linked() && f.node(p.peer).is_switch())
        at = {f.node(p.peer).guid.value, p.peer_port};
    }
  }
  if (u.policy == perf::UnhealthyPolicy::kIsolate && at && !books_.down().contains(*at)) {
    if (auto r = books_.down().keep_down(*at, DownCause::unhealthy(key.first, key.second, u.reason),
                                         unix_now());
        !r)
      WEFT_LOG(Error, "SM-0026") << "ports-down not saved: " << r.error().message;
    ev["isolated"] = hex_guid(at->first) + "/" + std::to_string(at->second);
  }
  // reroute and isolate take effect with the next heavy sweep.
  if (u.policy != perf::UnhealthyPolicy::kReport) asks_.deferred = true;
  emit("port_unhealthy", ev);
}

void SubnetManager::port_healthy(Guid node, PortNum port, const perf::Unhealthy& was) {
  // Whatever isolate left down for this port comes up again.
  for (const auto& key : books_.down().isolating(node.value, port))
    if (auto r = enable_port(Guid{key.first}, key.second); !r)
      WEFT_LOG(Warn, "SM-0029") << "port " << hex_guid(key.first) << "/" << int(key.second) << ": "
                                << r.error().message;
  if (was.policy != perf::UnhealthyPolicy::kReport)
    asks_.now = true;  // routes come back at the next sweep
  emit("port_healthy", {{"guid", node.str()}, {"port", port}, {"was", was.reason}});
  publish();
}

Result<void> SubnetManager::enable_port(Guid sw, PortNum port) {
  if (auto r = books_.down().release({sw.value, port}); !r) return std::unexpected(r.error());
  traps_.forget({sw.value, port});
  asks_.now = true;  // a heavy sweep enables it
  WEFT_LOG(Info, "SM-0029") << "port " << sw.str() << "/" << int(port)
                            << " released: enabled at the next sweep";
  emit("port_released", {{"guid", hex_guid(sw.value)}, {"port", port}});
  publish();
  return {};
}

}  // namespace weft::sm
