// weft/sm/subnet_manager.hpp — the master SM. A heavy sweep discovers the subnet,
// assigns LIDs, computes routes, programs every switch and port (writing only what
// differs from what the devices hold), brings ports to ACTIVE, publishes a snapshot
// and then the multicast trees on it. A light sweep asks every switch whether a port
// changed and goes heavy when one did. Between and during sweeps it answers SMInfo
// queries and SA requests (from the published snapshot) and notes traps.
//
// A sweep is a sequence of phases (sm/src/subnet_manager.cpp); between two phases
// the SM waits through its Driver: the SyncDriver pumps in place (tests, weft sim),
// the AsioDriver is the daemon's event loop.
//
//   SubnetManager sm(transport, opts);
//   auto rep = sm.sweep();                 // SyncDriver: runs to completion; "SUBNET UP"
//   sm.set_driver(asio_driver);            // the daemon, on its loop:
//   sm.start_sweep(true, [](Result<SweepReport> r) { ... });
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "weft/cc/view.hpp"
#include "weft/config/partitions.hpp"
#include "weft/config/qos_policy.hpp"
#include "weft/mad/driver.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/perf/view.hpp"
#include "weft/qos/partitions.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/routing/engine.hpp"
#include "weft/sm/discovery.hpp"
#include "weft/sm/lid_manager.hpp"
#include "weft/sm/mkey.hpp"
#include "weft/sm/options.hpp"
#include "weft/sm/port_book.hpp"
#include "weft/sm/publisher.hpp"
#include "weft/sm/sm_peers.hpp"
#include "weft/sm/snapshot.hpp"
#include "weft/sm/state_books.hpp"
#include "weft/sm/subn_adm.hpp"
#include "weft/sm/trap_book.hpp"
#include "weft/sm/traps.hpp"
#include "weft/store/state_store.hpp"

namespace weft::sm {

// Something that happened, for the daemon's event stream: "sweep_started",
// "sweep_finished", "subnet_up", "subnet_down", "port_state", "port_added",
// "port_removed", "link_up", "link_down", "trap", "multicast", "sm_state", "counters"
// (a counter sweep), "port_unhealthy", "port_healthy".
struct SmEvent {
  std::string type;
  nlohmann::json data;
};

class Programmers;
struct SweepRun;

class SubnetManager {
 public:
  // `sa`: the Subnet Administrator that answers the SubnAdm MADs, beside the SM and
  // outliving it (none: they are dropped).
  // `state`: where the state is written (state_store; etcd's store keeps its local copy
  // in state_dir); none: the state directory itself. The SM tells it its role and its
  // fabric contact.
  SubnetManager(mad::Transport& t, SmOptions o, SubnAdm* sa = nullptr,
                std::shared_ptr<store::StateStore> state = nullptr);
  ~SubnetManager();
  SubnetManager(const SubnetManager&) = delete;
  SubnetManager& operator=(const SubnetManager&) = delete;

  // How the SM waits for its MADs and runs routing: a SyncDriver of its own until set.
  void set_driver(mad::Driver& d) { driver_ = &d; }
  mad::MadEngine& engine() { return eng_; }
  const SmOptions& options() const { return opts_; }
  // The state store this SM writes through (chosen at construction; not reloaded).
  const std::shared_ptr<store::StateStore>& state_store() const { return books_.shared_store(); }
  // New options (a reload): they take effect with the next sweep. Not during one.
  void set_options(SmOptions o);
  void on_event(std::function<void(const SmEvent&)> f) { on_event_ = std::move(f); }

  using SweepDone = std::function<void(Result<SweepReport>)>;
  // Starts a sweep (heavy, or light: a heavy one when a switch reports a change, or
  // when no sweep has brought the subnet up yet); `done` runs when it has finished.
  // Fails (through `done`) when one is already under way.
  void start_sweep(bool heavy, SweepDone done);
  bool sweeping() const { return run_ != nullptr; }
  // With the SyncDriver: a sweep run to completion. A heavy one fails only when it
  // cannot start (no local node, bad state file directory); a partial bring-up
  // returns a report with subnet_up = false and the reasons.
  [[nodiscard]] Result<SweepReport> sweep();
  [[nodiscard]] Result<SweepReport> light_sweep();
  // With the SyncDriver: serves MADs addressed to the SM for `d` (SMInfo, traps, SA).
  [[nodiscard]] Result<void> serve_for(mad::Duration d);
  // A trap, or another SM's SMInfo Set (HANDOVER, DISCOVER), asked for a heavy sweep.
  bool needs_sweep() const { return asks_.due(); }
  // The SMInfo state: MASTER programs; STANDBY polls the master (poll_master) and
  // sweeps only to read; NOTACTIVE does nothing until a master sends STANDBY.
  mad::SmState sm_state() const { return peers_.role().state(); }
  // Ports weft keeps disabled (flap_policy down, unhealthy_port_policy isolate): switch
  // port -> why, since when.
  const std::map<SwitchPort, PortBook::Entry>& ports_down() const { return books_.down().down(); }
  // Lets a port weft left down come up again (on disk before it returns); its next
  // heavy sweep enables it. Fails for a port weft did not leave down.
  [[nodiscard]] Result<void> enable_port(Guid sw, PortNum port);
  // The PerfMgr beside the SM (its owner, daemon::Managers, tells it): the PerfMgr's
  // latest view (counters and unhealthy marks), published with the SM's and read by the
  // sweep (unhealthy_port_policy reroute routes around the marked links).
  void set_perf(std::shared_ptr<const perf::PerfView> v);
  // What a counter sweep found, with set_perf's view already its own: an event and the
  // policy for each port newly marked unhealthy (applied by the next heavy sweep), the
  // sweep's "counters" event.
  void counters_swept(const perf::PerfSweep& r);
  // A mark an admin cleared (`was`, on disk already): what isolate left down for the port
  // comes up and routes come back at the next sweep; an event; published.
  void port_healthy(Guid node, PortNum port, const perf::Unhealthy& was);
  // The congestion-control manager beside it (daemon::Managers tells it): its latest
  // view, published with the SM's.
  void set_cc(std::shared_ptr<const cc::CcView> v) { cc_ = std::move(v); }
  // What a read of the congestion logs found: a "congestion" event when anything was
  // logged (the ports, ranked, the first few).
  void congestion_read(const cc::CcLogRead& r);
  // One poll of the SM this one watches (STANDBY: the master; MASTER: a lower master
  // that has yet to hand over). `done(true)`: it is gone (or yielded), a heavy sweep
  // is due.
  void poll_master(std::function<void(bool)> done);
  bool polling() const { return peers_.role().polled().has_value(); }

  // On the SM's own thread: what the SA answers from.
  std::shared_ptr<const SubnetSnapshot> snapshot() const { return snapshot_; }
  const mad::EngineStats& mad_stats() const { return eng_.stats(); }
  const SaStats& sa_stats() const;
  const McDb& multicast() const;
  // From any thread: what the SM last published.
  std::shared_ptr<const Published> published() const { return pub_.published(); }
  // Publishes again with the engine's current counters (the daemon does so each second).
  void publish_stats();
  // Documents of the state store that changed under this SM (another master's, from
  // etcd): read again before they are used (LIDs, keys and kept-down ports at the next
  // sweep's discovery).
  void state_changed(const std::vector<std::string>& names);

 private:
  // The phases of a heavy sweep, in order; each waits for the previous one's MADs.
  void phase_discover();
  // Instead of phase_discover after a link change: the last sweep's model, with only
  // the switches that reported a change read again (a trap 128, a PortStateChange).
  void phase_update(std::vector<fabric::NodeIndex> dirty, const std::string& why);
  void phase_lids(Result<void> pumped);
  void phase_role(Result<void> pumped);
  void phase_handover(Result<void> pumped);
  void phase_vports();  // as master: the CA ports' virtual ports, then the LIDs
  void phase_adopt_vports(Result<void> pumped);
  void phase_assign_lids();
  void phase_route();
  void phase_program();
  void phase_program_lfts(Result<void> pumped);
  void phase_tables(Result<void> pumped);
  void phase_write_tables(Result<void> pumped);
  void phase_activate(Result<void> pumped);
  void phase_publish(Result<void> pumped);
  void phase_finish(Result<void> pumped);
  // A light sweep's one phase: every switch's PortStateChange.
  void phase_light_check();
  void finish_run(Result<SweepReport> r);
  void next_phase(void (SubnetManager::*phase)(Result<void>));

  void on_unsolicited(const mad::Smp& s, const mad::InMad& in);
  void on_sm_info(const mad::Smp& s, const mad::InMad& in);
  void on_trap(const Trap& t, const mad::InMad& in);
  void note_flaps(const std::vector<std::tuple<uint64_t, PortNum, std::string>>& changed);
  void finish_standby(const std::string& why);
  // A PortInfo Get with the key to the port at `lid` (after its trap 256).
  void touch_port(Lid lid);
  void serve_sa(const mad::InMad& in);
  // The multicast groups into the state store when they changed (as master only); a
  // failure is a problem of `rep`, or logged when null.
  void save_groups(SweepReport* rep);
  // The SA's services and subscriptions into the store when they changed (as master).
  void save_sa_records(SweepReport* rep);
  // One of the SA's documents (its `text`) into the store when it changed; a failure,
  // named by `what` and logged as `id`, is a problem of `rep` (or logged when null).
  void save_sa_doc(const std::string& name, std::string text, const char* what, const char* id,
                   SweepReport* rep);
  // At a discovery that read the documents: the groups, services and subscriptions as
  // the last master left them (a document that cannot be read: said so, none kept).
  void restore_sa_state();
  int64_t sa_now_s() const;  // the SA's clock (the transport's), in seconds
  int64_t unix_now_s();
  // The groups written once, then the answers held for it sent.
  void flush_groups();
  void send_answer(const std::vector<uint8_t>& ans, const mad::SendAddr& to);
  // What the SA answers from now (without a requester).
  SaContext sa_context() const;
  // Report(Notice) of a trap the SM raises (64-67, about `gid`) or a device sent (its
  // SMP's Notice) to the SA's subscribers; each sent until answered (ReportResponse) or
  // out of retries, when the subscriptions it served are dropped.
  void send_reports(uint16_t trap, const Gid& gid);
  void send_reports(const Notice& n);
  void emit(std::string type, nlohmann::json data);
  void publish();
  void diff_events(const SubnetSnapshot* before, const SubnetSnapshot& after);
  void apply_unhealthy(const perf::PortKey& key, const perf::Unhealthy& u);

  mad::Transport& t_;
  SmOptions opts_;
  SubnAdm* sa_;  // not owned
  mad::MadEngine eng_;
  mad::SyncDriver sync_driver_;
  mad::Driver* driver_;
  // The programmers (sm/src/program/): each kind of device state, and what weft
  // believes the devices hold of it for as long as its master term lasts.
  std::unique_ptr<Programmers> prog_;
  // guid2lid, the port keys and the ports kept down, in the state store.
  StateBooks books_;
  // The PerfMgr's view as its owner last gave it (never null).
  std::shared_ptr<const perf::PerfView> perf_ = std::make_shared<perf::PerfView>();
  std::shared_ptr<const cc::CcView> cc_;
  SweepAsks asks_;
  // The devices as the last sweep that brought the subnet up as master left them
  // (its discovery, with the LIDs, port states and LinearFDBTop it set): what an
  // update starts from. Also kept after a sweep as master that was not up only
  // because some ports or links could not be read (retry_: the switches that hold
  // them, read again by the next sweep rather than everything). Empty otherwise.
  std::unique_ptr<const Discovered> model_;
  std::vector<fabric::NodeIndex> retry_;
  TrapBook traps_;
  // The SMInfo role, this SM's port and the other SMs found: the MADs between SMs.
  SmPeers peers_;
  std::shared_ptr<const SubnetSnapshot> snapshot_;
  std::shared_ptr<const SweepReport> last_report_;
  std::string ar_told_;  // the routing_engine whose AR engine names were last logged (SM-0058)
  std::shared_ptr<SweepRun> run_;  // the sweep under way
  uint64_t partitions_applied_ = 0;
  Publisher pub_;
  std::function<void(const SmEvent&)> on_event_;
  // Answers to SA requests that changed the multicast groups, sent once the groups are
  // in the store (flush_groups, posted once per batch of MADs).
  std::vector<std::pair<std::vector<uint8_t>, mad::SendAddr>> held_answers_;
  bool flush_posted_ = false;
  bool heap_reserved_ = false;            // SmOptions::reserve_heap, done once
  std::optional<int64_t> unix_offset_s_;  // wall clock - the SA's clock (unix_now_s)
  SaStats::Reports reports_;
};

}  // namespace weft::sm
