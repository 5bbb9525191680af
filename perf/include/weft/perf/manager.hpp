// weft/perf/manager.hpp — the PerfMgr: every port's PerformanceManagement counters
// read on an interval (OpenSM's perfmgr_* options), LID routed over GSI through the
// SM's MAD engine (in the GMP window, behind every SMP: a counter sweep never delays
// a sweep), turned into counts per interval with the counters' real semantics
// (perf/counters.hpp), and checked against error thresholds: a port past one is
// unhealthy, with the reason, until an admin marks it healthy again.
//
//   PerfManager pm(engine, opts, state_dir);
//   pm.start(fabric, [&](Result<PerfSweep> r) { for (auto& u : r->unhealthy) ...; });
//   auto view = pm.view();              // immutable: what the last sweep read
//   pm.mark_healthy(node_guid, port);   // on disk before it returns
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/perf/counters.hpp"
#include "weft/perf/view.hpp"
#include "weft/result.hpp"
#include "weft/store/state_store.hpp"

namespace weft::perf {

class PerfManager {
 public:
  // The unhealthy marks live in `store`'s "unhealthy-ports" (STATE_DIR/unhealthy-ports),
  // read now (null: kept in memory only).
  PerfManager(mad::MadEngine& eng, PerfOptions o, std::shared_ptr<store::StateStore> store);
  // The marks read again (another SM's, from a shared state store).
  void reload();
  void set_options(PerfOptions o) { opts_ = std::move(o); }
  const PerfOptions& options() const { return opts_; }
  // Reads every port of `fabric` (a sweep's, with its LIDs) once; `done` runs when the last reply
  // (or timeout) is in. Fails (through `done`) when a sweep is under way.
  void start(std::shared_ptr<const fabric::Fabric> fabric,
             std::function<void(Result<PerfSweep>)> done);
  bool running() const { return sweep_ != nullptr; }
  std::shared_ptr<const PerfView> view() const { return view_; }
  // The marks, as on disk.
  const std::map<PortKey, Unhealthy>& unhealthy() const { return unhealthy_; }
  // Clears a mark (on disk before it returns) and the counts in its window, so the
  // same errors do not mark it again. Fails for a port that is not marked.
  [[nodiscard]] Result<Unhealthy> mark_healthy(uint64_t node_guid, PortNum port);
  // Why the marks could not be read at start (empty: they were, or there were none).
  const std::string& load_error() const { return load_error_; }

 private:
  struct PortState {
    CounterSeries pc;
    ExtCounterSeries ext;
    uint32_t cleared = 0;  // counters a Set zeroed since the last read
    std::deque<std::pair<mad::TimePoint, std::array<uint64_t, kCounters>>> window;
    std::optional<mad::TimePoint> last_read;
    uint64_t sweep = 0;  // the last sweep that found the port in the fabric
    PortStats stats;
  };
  struct Sweep;
  void query_node(const std::shared_ptr<Sweep>& sw, size_t node);
  void query_port(const std::shared_ptr<Sweep>& sw, PortKey key, Lid lid, bool ext);
  void on_counters(Sweep& sw, PortKey key, Result<mad::Gmp> r);
  void on_ext(PortKey key, Result<mad::Gmp> r);
  void check_health(Sweep& sw, PortKey key, PortState& ps, mad::TimePoint now);
  void release(const std::shared_ptr<Sweep>& sw);
  void finish(const std::shared_ptr<Sweep>& sw);
  [[nodiscard]] Result<void> save() const;

  mad::MadEngine& eng_;
  PerfOptions opts_;
  std::shared_ptr<store::StateStore> store_;
  std::string load_error_;
  std::map<PortKey, PortState> ports_;
  std::map<uint64_t, PmaCapabilities> caps_;  // by node GUID, asked once per appearance
  std::map<PortKey, Unhealthy> unhealthy_;
  std::shared_ptr<Sweep> sweep_;
  uint64_t sweeps_ = 0;
  std::shared_ptr<const PerfView> view_ = std::make_shared<PerfView>();
};

}  // namespace weft::perf
