// The SM's sweep: its phases in order. Each phase submits its MADs and asks the driver
// to call the next one when every completion has run; the programmers (program/) own
// the device state, SmPeers the MADs between SMs, StateBooks the state documents. What
// the SM serves between sweeps is in between_sweeps.cpp, what it watches of ports in
// port_health.cpp.
#include "weft/sm/subnet_manager.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <utility>

#include "program/ar_programmer.hpp"
#include "program/device_tables.hpp"
#include "program/lft_programmer.hpp"
#include "program/multicast_programmer.hpp"
#include "program/programmer.hpp"
#include "program/vport_programmer.hpp"
#include "sweep_outcome.hpp"
#include "weft/durable_file.hpp"
#include "weft/heap.hpp"
#include "weft/log.hpp"
#include "weft/sm/documents.hpp"
#include "weft/text_file.hpp"

namespace weft::sm {

using fabric::NodeIndex;
using fabric::PortState;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void add_problem(SweepReport& rep, std::string s, const char* id) {
  WEFT_LOG(Warn, id) << s;
  rep.problems.push_back(std::move(s));
}

std::optional<FlapPolicy> flap_policy_named(std::string_view word) {
  if (word == "report") return FlapPolicy::kReport;
  if (word == "down") return FlapPolicy::kDown;
  return std::nullopt;
}

std::optional<PartEnforce> part_enforce_named(std::string_view word) {
  if (word == "both") return PartEnforce::kBoth;
  if (word == "in") return PartEnforce::kIn;
  if (word == "out") return PartEnforce::kOut;
  if (word == "off") return PartEnforce::kOff;
  return std::nullopt;
}

SubnetManager::SubnetManager(mad::Transport& t, SmOptions o, SubnAdm* sa,
                             std::shared_ptr<store::StateStore> state)
    : t_(t),
      opts_(std::move(o)),
      sa_(sa),
      eng_(t, opts_.engine),
      sync_driver_(eng_),
      driver_(&sync_driver_),
      prog_(std::make_unique<Programmers>(eng_, opts_)),
      books_(state ? std::move(state) : store::directory_store(opts_.state_dir, state_documents()),
             opts_.state_dir, opts_.mkey),
      peers_(eng_, t, {opts_.sm_key, opts_.sm_priority, opts_.polling_retry_number},
             t.local_port().port_guid) {
  books_.keys().set_local_port(t.local_port().port_guid);
  eng_.set_keys(&books_.keys());
  eng_.on_unsolicited([this](const mad::Smp& s, const mad::InMad& in) { on_unsolicited(s, in); });
  eng_.on_sa([this](const mad::InMad& in) { serve_sa(in); });
  prog_->lfts().on_drift([this](Guid sw, size_t block, const std::string& where) {
    pub_.drift_found("lft");
    emit("drift",
         {{"table", "lft"}, {"switch", hex_guid(sw.value)}, {"block", block}, {"where", where}});
  });
  prog_->ar().on_drift([this](Guid sw, const std::string& where) {
    pub_.drift_found("ar");
    emit("drift", {{"table", "ar"}, {"switch", hex_guid(sw.value)}, {"where", where}});
  });
  prog_->tables().on_drift([this](std::string_view table, const std::string& where, uint32_t mod) {
    pub_.drift_found(table);
    emit("drift", {{"table", table}, {"where", where}, {"modifier", mod}});
  });
  pub_.set_options(std::make_shared<const SmOptions>(opts_));
  publish();
}

SubnetManager::~SubnetManager() = default;

const McDb& SubnetManager::multicast() const {
  return prog_->multicast().groups();
}

void SubnetManager::set_options(SmOptions o) {
  opts_ = std::move(o);  // the programmers hold a reference to opts_ (the store stays)
  eng_.set_options(opts_.engine);
  books_.keys().set_options(opts_.mkey);
  peers_.configure({opts_.sm_key, opts_.sm_priority, opts_.polling_retry_number});
  pub_.set_options(std::make_shared<const SmOptions>(opts_));
  publish();
}

void SubnetManager::emit(std::string type, nlohmann::json data) {
  if (on_event_) on_event_(SmEvent{std::move(type), std::move(data)});
}

// ---- sweeps -------------------------------------------------------------------------

void SubnetManager::start_sweep(bool heavy, SweepDone done) {
  if (run_) {
    done(fail(Errc::kUnsupported, "a sweep is already under way"));
    return;
  }
  if (peers_.role().state() == mad::SmState::kNotActive) {
    // Nothing to do until a master's STANDBY; what asked for this sweep is spent.
    asks_.now = asks_.deferred = false;
    SweepReport rep;
    rep.sm_state = mad::SmState::kNotActive;
    rep.reason = "NOTACTIVE: a master's SMInfo DISABLE stopped this SM (a STANDBY wakes it)";
    done(rep);
    return;
  }
  run_ = std::make_shared<SweepRun>();
  run_->done = std::move(done);
  run_->t0 = std::chrono::steady_clock::now();
  // A bring-up that did not complete is retried in full: nothing may have changed that
  // a switch would report, yet ports are not ACTIVE or tables not written. Only a
  // master sweeps light; any other state reads the fabric and its SMs.
  const bool same_term = prog_->same_term(peers_.role().epoch());
  const bool light = !heavy && snapshot_ && model_ && !asks_.full() && last_report_ &&
                     last_report_->subnet_up && peers_.role().state() == mad::SmState::kMaster &&
                     same_term;
  publish();
  if (light) return phase_light_check();
  // Only trap 128s asked (links changed at known switches): read those switches again.
  std::vector<NodeIndex> dirty;
  if (model_ && !asks_.full() && !asks_.dirty_lids.empty() && last_report_ &&
      last_report_->subnet_up && peers_.role().state() == mad::SmState::kMaster && same_term) {
    const auto& f = model_->fabric;
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch() && asks_.dirty_lids.count(f.node(n).ports[0].attrs.lid.value))
        dirty.push_back(n);
  }
  if (dirty.size() == asks_.dirty_lids.size() && !dirty.empty())
    return phase_update(std::move(dirty), "trap 128");
  // The last sweep as master could not read some ports or links (MADs lost): it keeps
  // what it learned, and this one reads again only the switches that hold them (and
  // any a trap 128 named), discovering in full if that fails too.
  if (model_ && !retry_.empty() && !asks_.full() && last_report_ && !last_report_->subnet_up &&
      peers_.role().state() == mad::SmState::kMaster && same_term) {
    std::vector<NodeIndex> again = std::exchange(retry_, {});
    const auto& f = model_->fabric;
    size_t named = 0;
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch() && asks_.dirty_lids.count(f.node(n).ports[0].attrs.lid.value)) {
        again.push_back(n);
        ++named;
      }
    std::sort(again.begin(), again.end());
    again.erase(std::unique(again.begin(), again.end()), again.end());
    // A trap from a LID the model does not hold: discover in full, as below.
    if (named == asks_.dirty_lids.size())
      return phase_update(std::move(again), "ports or links the last sweep could not read");
  }
  phase_discover();
}

void SubnetManager::next_phase(void (SubnetManager::*phase)(Result<void>)) {
  driver_->when_idle([this, phase](Result<void> r) { (this->*phase)(std::move(r)); });
}

void SubnetManager::finish_run(Result<SweepReport> r) {
  auto done = std::exchange(run_->done, nullptr);
  run_.reset();
  publish();
  if (done) done(std::move(r));
}

Result<SweepReport> SubnetManager::sweep() {
  std::optional<Result<SweepReport>> out;
  start_sweep(true, [&out](Result<SweepReport> r) { out = std::move(r); });
  if (!out) return fail(Errc::kInternal, "sweep() needs the SyncDriver: the sweep is under way");
  return std::move(*out);
}

Result<SweepReport> SubnetManager::light_sweep() {
  std::optional<Result<SweepReport>> out;
  start_sweep(false, [&out](Result<SweepReport> r) { out = std::move(r); });
  if (!out) return fail(Errc::kInternal, "light_sweep() needs the SyncDriver");
  return std::move(*out);
}

Result<void> SubnetManager::serve_for(mad::Duration d) {
  return eng_.poll_for(d);
}

void SubnetManager::phase_light_check() {
  prog_->multicast().settle();  // the first full sweep as master is over
  auto changed = std::make_shared<bool>(false);
  // Switches of the model whose PortStateChange is set: read again on the model, when
  // nothing else changed.
  auto psc = std::make_shared<std::vector<NodeIndex>>();
  auto silent = std::make_shared<std::vector<NodeIndex>>();  // switches that did not answer
  // start_sweep sweeps light only with a model: the last sweep brought the subnet up
  // as master.
  for (NodeIndex n = 0; n < model_->fabric.size(); ++n)
    if (model_->fabric.node(n).is_switch())
      eng_.submit(mad::SmpRequest::get(mad::kAttrSwitchInfo, 0, model_->paths[n]),
                  [this, changed, psc, silent, n](Result<mad::Smp> r) {
                    if (!r) {
                      *changed = true;
                      silent->push_back(n);
                      return;
                    }
                    // A port change, or a LinearFDBTop other than the one this SM
                    // left (a reboot, another SM's writes): read that switch again,
                    // and its tables are read back and rewritten.
                    const mad::SwitchInfo si = mad::decode_switch_info(r->data);
                    if (si.port_state_change || si.lft_top != model_->switch_info[n].lft_top)
                      psc->push_back(n);
                  });
  // A spot check of drift_check_blocks LFT blocks per switch (rotating): another writer
  // that kept LinearFDBTop (another SM, a tool) shows as a block that is not what weft
  // wrote; the switch is then believed in nothing and read again, its tables read back
  // whole. The same of the AR state weft believes switches hold.
  const uint64_t round = prog_->lfts().next_round(), ar_round = prog_->ar().next_round();
  for (NodeIndex n = 0; n < model_->fabric.size(); ++n) {
    if (!model_->fabric.node(n).is_switch()) continue;
    prog_->lfts().check_block(model_->fabric, n, model_->paths[n], round,
                              [this, psc, n](size_t answered, bool differs) {
                                run_->rep.lft_blocks_checked += answered;
                                if (!differs) return;
                                ++run_->rep.lft_switches_changed;
                                psc->push_back(n);
                              });
    prog_->ar().check_blocks(model_->fabric, n, model_->paths[n], ar_round,
                             [this, psc, n](size_t answered, bool differs) {
                               run_->rep.ar_blocks_checked += answered;
                               if (!differs) return;
                               ++run_->rep.ar_switches_changed;
                               psc->push_back(n);
                             });
  }
  // The same of the P_Key, SL2VL and VLArb blocks weft believes ports hold: a changed
  // one is read again by an update at the switch (the port's own, or a CA's neighbour;
  // a full sweep where there is none).
  prog_->tables().check(*model_, [this, psc, changed](NodeIndex n, PortNum p, bool differs) {
    ++run_->rep.table_blocks_checked;
    if (!differs) return;
    ++run_->rep.table_blocks_changed;
    const auto& f = model_->fabric;
    const NodeIndex sw =
        f.node(n).is_switch() || !f.node(n).ports[p].linked() ? n : f.node(n).ports[p].peer;
    if (f.node(sw).is_switch())
      psc->push_back(sw);
    else
      *changed = true;
  });
  // SR-IOV: a CA port whose vports changed (a host wrote a VF's GUID) is read again by
  // an update at its switch.
  auto vports = std::make_shared<size_t>(0);
  prog_->vports().check(*model_, [this, psc, changed, vports](NodeIndex n, PortNum p) {
    ++*vports;
    const auto& port = model_->fabric.node(n).ports[p];
    if (port.linked() && model_->fabric.node(port.peer).is_switch())
      psc->push_back(port.peer);
    else
      *changed = true;
  });
  // The other SMs, as OpenSM's light sweep polls them: one that became master, or now
  // outranks this one, calls for a heavy sweep (a handover either way).
  auto seen = peers_.recheck();
  driver_->when_idle(
      [this, changed, seen, psc, silent, vports](Result<void> pumped) {
        if (!pumped) return finish_run(std::unexpected(pumped.error()));
        peers_.set_sms(seen->sms);
        // A switch that did not answer may only be behind the link that changed (the
        // model's route to it crossed it, as it does to the link's far end): the update
        // reads it again too, by a route around the change, and discovers in full if
        // it still does not answer.
        if (!psc->empty() && !seen->changed) {
          psc->insert(psc->end(), silent->begin(), silent->end());
          std::sort(psc->begin(), psc->end());
          psc->erase(std::unique(psc->begin(), psc->end()), psc->end());
          const bool tables =
              run_->rep.table_blocks_changed > 0 || run_->rep.ar_switches_changed > 0;
          return phase_update(std::move(*psc),
                              tables    ? "a P_Key, SL2VL, VLArb or AR block changed, "
                                          "PortStateChange or LinearFDBTop"
                              : *vports ? "a CA port's virtual ports changed, PortStateChange "
                                          "or LinearFDBTop"
                                        : "PortStateChange or LinearFDBTop");
        }
        if (*changed || seen->changed) {
          WEFT_LOG(Info, "SM-0030")
              << "light sweep: a switch reports a port change, or another SM changed; full sweep";
          return phase_discover();
        }
        // MLIDs the term's settling freed: the partition file's groups still waiting
        // take them now, and are on disk before the sweep is done.
        prog_->multicast().place_waiting();
        if (prog_->multicast().take_placed()) save_groups(nullptr);
        pub_.light();
        SweepReport rep = *last_report_;
        rep.heavy = false;
        // This sweep's own checks (nothing found, or it would not be quiet).
        rep.lft_blocks_checked = run_->rep.lft_blocks_checked;
        rep.lft_switches_changed = 0;
        rep.table_blocks_checked = run_->rep.table_blocks_checked;
        rep.table_blocks_changed = 0;
        rep.ar_blocks_checked = run_->rep.ar_blocks_checked;
        rep.ar_switches_changed = 0;
        rep.mcast_foreign = prog_->multicast().foreign_mlids();  // settle() may have cleared
        rep.sms = peers_.sms();
        finish_run(rep);
      });
}

void SubnetManager::phase_discover() {
  SweepRun& run = *run_;
  asks_.clear();
  run.updating = false;
  run.partition_generation = opts_.partitions_generation;
  auto loaded = books_.load(opts_.mkey);
  if (!loaded) return finish_run(std::unexpected(loaded.error()));
  if (*loaded) {
    if (auto r = t_.set_is_sm(true); !r)
      WEFT_LOG(Warn, "SM-0002") << "cannot advertise IsSM: " << r.error().message;
    restore_sa_state();
  }
  WEFT_LOG(Info, "SM-0001") << "sweep: discovering the subnet";
  emit("sweep_started", {{"heavy", true}});
  run.phase_start = std::chrono::steady_clock::now();
  run.discovery = std::make_unique<Discovery>(eng_);
  run.discovery->start();
  next_phase(&SubnetManager::phase_lids);
}

void SubnetManager::restore_sa_state() {
  // The multicast groups: their MLIDs and members stay.
  if (auto g = books_.read_groups(); !g) {
    WEFT_LOG(Error, "MC-0003") << g.error().message
                               << "; starting with no multicast groups (hosts join again "
                                  "after ClientReregister)";
  } else if (*g) {
    size_t members = 0;
    for (const auto& [mlid, grp] : (*g)->groups()) members += grp.members.size();
    WEFT_LOG(Info, "MC-0004") << "multicast groups read back: " << (*g)->groups().size()
                              << " groups, " << members << " members";
    prog_->multicast().groups() = std::move(**g);
  }
  if (!sa_) return;
  auto text = books_.read_doc("sa-records");
  if (text && !*text) return;  // none written yet
  Result<void> r = text ? sa_->restore_records(**text, books_.store().path("sa-records"),
                                               sa_now_s(), unix_now_s())
                        : Result<void>(std::unexpected(text.error()));
  if (!r)
    WEFT_LOG(Error, "SA-0005") << r.error().message
                               << "; starting with no services or subscriptions (hosts "
                                  "register again after ClientReregister)";
  else
    WEFT_LOG(Info, "SA-0007") << "services and subscriptions read back";
}

void SubnetManager::phase_update(std::vector<NodeIndex> dirty, const std::string& why) {
  SweepRun& run = *run_;
  asks_.clear();
  run.partition_generation = opts_.partitions_generation;
  WEFT_LOG(Info, "SM-0032") << "sweep: " << why << " at " << dirty.size()
                            << " switches: reading them again on the last model";
  emit("sweep_started", {{"heavy", true}, {"update", true}, {"switches", dirty.size()}});
  run.phase_start = std::chrono::steady_clock::now();
  run.updating = true;
  run.discovery = std::make_unique<Discovery>(eng_);
  run.discovery->start_update(*model_, dirty);
  next_phase(&SubnetManager::phase_lids);
}

void SubnetManager::phase_lids(Result<void> pumped) {
  SweepRun& run = *run_;
  SweepReport& rep = run.rep;
  auto disc = run.discovery->finish(pumped);
  run.discovery.reset();
  if (!disc && run.updating && pumped) {
    WEFT_LOG(Warn, "SM-0033") << "update failed (" << disc.error().message
                              << "): discovering the subnet in full";
    run.updating = false;
    return phase_discover();
  }
  if (!disc) return finish_run(std::unexpected(disc.error()));
  run.d = std::move(*disc);
  const Discovered& d = run.d;
  books_.keys().learn(d.fabric);
  rep.ms_discovery = ms_since(run.phase_start);
  rep.smps_discovery = d.smps;
  rep.updated = d.update;
  if (d.update)
    WEFT_LOG(Info, "SM-0034") << "update: " << d.reread << " switches read again, " << d.links_lost
                              << " links gone, " << d.links_found << " links found, with " << d.smps
                              << " SMPs in " << static_cast<long>(rep.ms_discovery) << " ms";
  for (auto& p : d.problems) rep.problems.push_back(p);
  const auto& dn = d.fabric.node(d.local_node);
  // The LID the port holds; the LID assignment sets it again when this SM is master.
  peers_.set_self(dn.is_switch() ? dn.ports[0].guid : dn.ports[d.local_port].guid,
                  dn.is_switch() ? dn.ports[0].attrs.lid : dn.ports[d.local_port].attrs.lid);
  for (const auto& n : d.fabric.nodes()) {
    if (n.is_switch())
      ++rep.switches;
    else if (n.type == fabric::NodeType::kRouter)
      ++rep.routers;
    else
      ++rep.cas;
  }
  rep.links = d.fabric.links().size();
  WEFT_LOG(Info, "SM-0003") << "discovered " << rep.switches << " switches, " << rep.cas << " CAs, "
                            << rep.routers << " routers, " << rep.links << " links with " << d.smps
                            << " SMPs in " << static_cast<long>(rep.ms_discovery) << " ms";

  // Every other SM port on the subnet (CapabilityMask.IsSM): its SMInfo decides
  // whether this SM is master (IBTA 14.4.1).
  run.sms = SmPeers::find(d, peers_.guid());
  peers_.read(run.sms, run_);
  next_phase(&SubnetManager::phase_role);
}

void SubnetManager::phase_role(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped) return finish_run(std::unexpected(pumped.error()));
  SmPeers::log(run.sms);
  peers_.set_sms(run.sms);
  run.rep.sms = run.sms;
  const mad::SmState was = peers_.role().state();
  run.decision = peers_.role().after_discovery(run.sms);
  const auto& dec = run.decision;
  switch (dec.kind) {
    case SmRole::Decision::kStandby:
      if (was != mad::SmState::kStandby) peers_.send_trap144(*dec.peer);
      return finish_standby(dec.why);
    case SmRole::Decision::kHandover: {
      run.handover_error = peers_.send_handover(*dec.peer, dec.why);
      return next_phase(&SubnetManager::phase_handover);
    }
    case SmRole::Decision::kWaitForHandover:
      WEFT_LOG(Warn, "SM-0044") << dec.why << "; programming nothing meanwhile";
      peers_.send_trap144(*dec.peer);
      return finish_standby(dec.why);
    case SmRole::Decision::kMaster:
      break;
  }
  if (was != mad::SmState::kMaster)
    WEFT_LOG(Info, "SM-0045") << "entering MASTER state: " << dec.why;
  if (prog_->begin_term(peers_.role().epoch())) {
    // A new master term: another SM (OpenSM, another weft) may have programmed the
    // fabric since this SM's last sweep as master, leaving LinearFDBTop as it was. What
    // weft believes any device holds is void: LFTs, MFTs, P_Key, SL2VL and VLArb tables
    // are read back and written where they differ, and routing starts from nothing.
    if (prog_->had_term())
      WEFT_LOG(Info, "SM-0056") << "new master term: every table the devices hold is read back";
    run_->rep.new_term = true;
  }
  books_.set_master(true);  // before the LIDs are written
  phase_vports();
}

void SubnetManager::phase_handover(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped) return finish_run(std::unexpected(pumped.error()));
  if (*run.handover_error) {
    add_problem(run.rep,
                "HANDOVER to " + run.decision.peer->name +
                    " failed: " + (*run.handover_error)->message + "; staying master",
                "SM-0046");
    return phase_vports();
  }
  peers_.role().handover_sent(*run.decision.peer);
  finish_standby("handed over to " + run.decision.peer->name + ": " + run.decision.why);
}

void SubnetManager::finish_standby(const std::string& why) {
  model_.reset();
  books_.set_master(false);
  SweepRun& run = *run_;
  SweepReport& rep = run.rep;
  rep.sm_state = peers_.role().state();
  rep.reason = std::string(mad::sm_state_name(peers_.role().state())) + ": " + why;
  rep.subnet_up = false;
  rep.ms_total = ms_since(run.t0);
  WEFT_LOG(Info, "SM-0047") << rep.reason << "; this SM programs nothing";
  last_report_ = std::make_shared<const SweepReport>(rep);
  pub_.heavy_untimed();
  emit("sweep_finished", {{"heavy", true},
                          {"subnet_up", false},
                          {"ms", rep.ms_total},
                          {"sm_state", mad::sm_state_name(peers_.role().state())},
                          {"problems", rep.problems.size()}});
  finish_run(rep);
}

void SubnetManager::phase_vports() {
  prog_->vports().discover(*run_);
  next_phase(&SubnetManager::phase_adopt_vports);
}

void SubnetManager::phase_adopt_vports(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped) return finish_run(std::unexpected(pumped.error()));
  prog_->vports().adopt(run);
  if (run.rep.virt_ports)
    WEFT_LOG(Info, "VRT-0008") << run.d.fabric.vports().size() << " vports on "
                               << run.rep.virt_ports << " CA ports with virtualization, "
                               << run.rep.vport_reads << " SMPs";
  phase_assign_lids();
}

void SubnetManager::phase_assign_lids() {
  SweepRun& run = *run_;
  SweepReport& rep = run.rep;
  const Discovered& d = run.d;
  run.phase_start = std::chrono::steady_clock::now();
  run.target = d.fabric;
  // Links weft leaves down (flap_policy down) are routed around and disabled at their
  // switch port; links an admin released are enabled.
  run.leave_down.clear();
  bool cut = false;
  for (const auto& [key, why] : books_.down().down()) {
    auto n = run.target.find(Guid{key.first});
    if (!n || !run.target.node(*n).is_switch() || key.second > run.target.node(*n).num_ports)
      continue;
    run.leave_down[key] = why.cause.text();
    if (run.target.node(*n).ports[key.second].linked()) {
      run.target.disconnect(*n, key.second);
      cut = true;
    }
  }
  // Programming (the disabling Sets included) goes by routes that avoid those links.
  if (cut) route_paths_over(run.d, run.target);
  // Unhealthy switch-to-switch links under unhealthy_port_policy reroute: routed
  // around, their ports kept ACTIVE (a CA's link has no way around: reported only).
  run.route_on.reset();
  std::vector<std::pair<NodeIndex, PortNum>> reroute;  // cut from route_on once LIDs are in
  for (const auto& [key, u] : perf_->unhealthy) {
    if (u.policy != perf::UnhealthyPolicy::kReroute) continue;
    auto n = run.target.find(Guid{key.first});
    if (!n || key.second > run.target.node(*n).num_ports) continue;
    const auto& port = run.target.node(*n).ports[key.second];
    if (!port.linked() || !run.target.node(*n).is_switch() ||
        !run.target.node(port.peer).is_switch())
      continue;
    reroute.emplace_back(*n, key.second);
  }
  // Released ports stay asked for until a sweep reads them enabled.
  run.bring_up = books_.down().released();
  std::erase_if(books_.down().released(), [&d](const std::pair<uint64_t, PortNum>& key) {
    auto n = d.fabric.find(Guid{key.first});
    return !n || key.second >= d.port_read[*n].size() ||
           (d.port_read[*n][key.second] && d.port_info[*n][key.second].attrs.phys_state != 3);
  });
  // Out of standby (a takeover or a handover), the LIDs the ports hold win over this
  // SM's own state file: the master it replaces may have assigned them.
  const bool fabric_first = peers_.role().coming_out_of_standby();
  peers_.role().clear_coming_out_of_standby();
  auto la = assign_lids(run.target, books_.lids(), opts_.lmc, fabric_first);
  if (!la) {
    rep.reason = la.error().message;
    WEFT_LOG(Error, "SM-0004") << "LID assignment failed: " << rep.reason;
    return finish_run(rep);
  }
  // What routing runs on: the fabric with the LIDs just assigned, less those links.
  for (const auto& [n, p] : reroute) {
    if (!run.route_on) run.route_on = run.target;
    run.route_on->disconnect(n, p);
  }
  rep.lid_assignment = *la;
  rep.top_lid = la->top;
  books_.keys().learn(run.target);  // the LIDs LID-routed SMPs go to from now on
  books_.save_lids(rep);
  const auto& tn = run.target.node(d.local_node);
  peers_.set_lid(tn.is_switch() ? tn.ports[0].attrs.lid : tn.ports[d.local_port].attrs.lid);
  run.sm_lid = peers_.lid();
  rep.ms_lids = ms_since(run.phase_start);
  rep.lids = la->from_file + la->from_fabric + la->fresh;
  WEFT_LOG(Info, "SM-0005") << "LIDs: " << rep.lids << " ports (" << la->from_file
                            << " from the state file, " << la->from_fabric
                            << " kept from the fabric, " << la->fresh << " new), top " << la->top
                            << ", SM LID " << peers_.lid().value;
  phase_route();
}

void SubnetManager::phase_route() {
  SweepRun& run = *run_;
  run.phase_start = std::chrono::steady_clock::now();
  auto chain = routing::EngineChain::parse(opts_.routing_engine);
  if (!chain) return finish_run(std::unexpected(chain.error()));
  run.adaptive = opts_.adaptive_routing || !chain->adaptive_names().empty();
  if (!chain->adaptive_names().empty() && ar_told_ != opts_.routing_engine) {
    ar_told_ = opts_.routing_engine;
    WEFT_LOG(Info, "SM-0058") << "routing_engine " << opts_.routing_engine
                              << ": NVIDIA's adaptive-routing engine names are their static "
                                 "engines plus adaptive routing, programmed into the switches "
                                 "that hold it";
  }
  routing::Options ro;
  ro.adaptive = run.adaptive;
  ro.roots = opts_.roots;
  ro.progress = [](const std::string& what) { WEFT_LOG(Info, "SM-0009") << "routing: " << what; };
  ro.torus = opts_.torus;
  // OperVLs encoding to a count of data VLs: 1 -> 1, 2 -> 2, 3 -> 4, 4 -> 8, 5 -> 15.
  ro.max_vls = qos::data_vls(opts_.max_op_vls);
  // The last snapshot's tables, for an engine that repairs rather than recomputes when
  // only links went away (minhop): a failure then rewrites only what it touched.
  std::shared_ptr<const SubnetSnapshot> before =
      last_report_ && last_report_->subnet_up && peers_.role().state() == mad::SmState::kMaster &&
              !run.rep.new_term
          ? snapshot_
          : nullptr;
  if (before) ro.previous = {&before->fabric, &before->tables, last_report_->routing_engine};
  // What the switches hold is read back while the routing computes (the spot checks
  // need nothing of this sweep's tables): programming, after it, waits for the answers.
  // Their SMPs count as the programming's.
  run.sent_at_phase = eng_.stats().sent;
  prog_->step(Step::kSpotCheck, run);
  // Pure computation on the run's own copy of the fabric: off the loop, so SMInfo and
  // the SA keep being answered meanwhile.
  auto keep = run_;
  driver_->offload(
      [keep, before, chain = std::move(*chain), ro = std::move(ro)]() mutable {
        keep->routed = chain.compute(keep->route_on ? *keep->route_on : keep->target, ro);
      },
      [this, keep] {
        SweepRun& r = *keep;
        SweepReport& rep = r.rep;
        for (const auto& fb : r.routed.fallbacks)
          WEFT_LOG(Warn, "SM-0008")
              << "routing: " << fb.engine << " refused (" << routing::refusal_name(fb.failure.kind)
              << "): " << fb.failure.message;
        if (!r.routed.tables) {
          rep.reason = "routing (" + opts_.routing_engine + ") failed: " + r.routed.summary();
          WEFT_LOG(Error, "SM-0006") << rep.reason;
          // The spot checks' answers still come in to this run.
          return driver_->when_idle([this, keep](Result<void>) { finish_run(keep->rep); });
        }
        rep.ms_routing = ms_since(r.phase_start);
        rep.routing_engine = r.routed.engine;
        rep.routing_fallbacks = r.routed.fallbacks;
        r.tables = std::move(*r.routed.tables);
        r.routed.tables.reset();
        for (const auto& note : r.tables.notes) WEFT_LOG(Info, "SM-0007") << "routing: " << note;
        phase_program();
      });
}

void SubnetManager::phase_program() {
  SweepRun& run = *run_;
  // Partitions: who holds which P_Key.
  run.plan = qos::plan_partitions(opts_.partitions ? &*opts_.partitions : nullptr, run.target,
                                  peers_.guid(), {opts_.allow_both_pkeys});
  for (const auto& w : run.plan.warnings) WEFT_LOG(Warn, "PRT-0001") << w;
  if (!run.tables.hop_vl.empty())
    WEFT_LOG(Info, "SM-0011") << "routing uses " << int(run.tables.vls)
                              << " VLs, picked per hop: each switch's SL2VL tables differ by "
                                 "output (and input) port";
  else if (run.tables.vls > 1)
    WEFT_LOG(Info, "SM-0011") << "routing uses " << int(run.tables.vls) << " VLs: SLs 0-"
                              << int(run.tables.vls) - 1 << " map to VLs 0-"
                              << int(run.tables.vls) - 1 << " on every port";
  run.phase_start = std::chrono::steady_clock::now();
  run.after = run.d.port_info;
  // What the new tables write over, where weft does not know it (the spot checks, sent
  // while the routing computed, are answered before anything is sent by LID through the
  // switches' tables: the next phase waits for the engine to idle).
  prog_->step(Step::kCheck, run);
  next_phase(&SubnetManager::phase_program_lfts);
}

void SubnetManager::phase_program_lfts(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped)
    add_problem(run.rep, "transport failed while checking LFTs: " + pumped.error().message);
  // After the first bring-up, switches whose route there and back stays as it is are
  // programmed over their LIDs; not when a switch's tables were found changed by
  // another writer (the routes there may cross it).
  run.by_lid.clear();
  if (snapshot_ && last_report_ && last_report_->subnet_up &&
      peers_.role().state() == mad::SmState::kMaster && !run.rep.new_term &&
      run.rep.lft_switches_changed == 0) {
    run.rep.switches_by_lid = plan_lid_routes(run, *snapshot_, peers_.lid());
    if (run.rep.switches_by_lid)
      WEFT_LOG(Info, "SM-0037") << "programming " << run.rep.switches_by_lid << " of "
                                << run.rep.switches
                                << " switches' forwarding tables over their LIDs";
  }
  prog_->step(Step::kConfigure, run);
  next_phase(&SubnetManager::phase_tables);
}

void SubnetManager::phase_tables(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped)
    add_problem(run.rep, "transport failed while programming: " + pumped.error().message);
  books_.save_keys(run.rep);
  // LinearFDBTop; the tables depend on the operational VLs the PortInfo Sets left.
  prog_->step(Step::kCommit, run);
  next_phase(&SubnetManager::phase_write_tables);
}

void SubnetManager::phase_write_tables(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped)
    add_problem(run.rep, "transport failed while reading tables: " + pumped.error().message);
  prog_->step(Step::kTables, run);
  next_phase(&SubnetManager::phase_activate);
}

void SubnetManager::phase_activate(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped)
    add_problem(run.rep, "transport failed while programming tables: " + pumped.error().message);
  run.rep.smps_program = eng_.stats().sent - run.sent_at_phase;
  run.rep.ms_program = ms_since(run.phase_start);
  run.phase_start = std::chrono::steady_clock::now();
  run.sent_at_phase = eng_.stats().sent;
  prog_->step(Step::kActivate, run);
  next_phase(&SubnetManager::phase_publish);
}

void SubnetManager::phase_publish(Result<void> pumped) {
  SweepRun& run = *run_;
  SweepReport& rep = run.rep;
  if (!pumped) add_problem(rep, "transport failed while activating: " + pumped.error().message);
  prog_->step(Step::kCount, run);
  rep.smps_activate = eng_.stats().sent - run.sent_at_phase;
  rep.ms_activate = ms_since(run.phase_start);
  auto snap = make_snapshot(run, *prog_, opts_, peers_.guid(), peers_.lid());
  // Multicast next: the groups the policy asks for, then every tree on the new
  // snapshot. Joins served from here on route on it too.
  prog_->multicast().sync_groups(run.plan, opts_.qos.enabled, *snap);
  save_groups(&run.rep);
  snap->partitions = std::move(run.plan);
  diff_events(snapshot_.get(), *snap);
  run.before = snapshot_;
  snapshot_ = std::move(snap);
  publish();
  run.sent_at_phase = eng_.stats().sent;
  run.published = snapshot_;
  prog_->step(Step::kPublished, run);
  next_phase(&SubnetManager::phase_finish);
}

void SubnetManager::phase_finish(Result<void> pumped) {
  SweepRun& run = *run_;
  SweepReport& rep = run.rep;
  if (!pumped)
    add_problem(rep, "transport failed while programming MFTs: " + pumped.error().message);
  rep.smps_program += eng_.stats().sent - run.sent_at_phase;
  // The partition file's groups placed once the MFT scan had read: on disk too.
  if (prog_->multicast().take_placed()) save_groups(&rep);
  if (const size_t wait = prog_->multicast().unplaced())
    WEFT_LOG(Info, "MC-0008") << wait
                              << " of the partition file's multicast groups wait for an MLID "
                                 "no switch forwards to another group's ports";
  rep.mcast_groups = prog_->multicast().groups().groups().size();
  rep.mcast_foreign = prog_->multicast().foreign_mlids();
  auto because = [&rep](const std::string& why) {
    rep.reason += (rep.reason.empty() ? "" : "; ") + why;
  };
  if (rep.ports_active != rep.ports_linked)
    because(std::to_string(rep.ports_linked - rep.ports_active) + " of " +
            std::to_string(rep.ports_linked) + " linked ports are not ACTIVE");
  if (rep.table_failures)
    because(std::to_string(rep.table_failures) + " P_Key, SL2VL or VLArb writes failed");
  if (rep.lft_failures)
    because(std::to_string(rep.lft_failures) + " forwarding-table writes failed");
  if (rep.lft_capped)
    because(std::to_string(rep.lft_capped) + " switches cannot hold LIDs up to " +
            std::to_string(rep.top_lid) + " (LinearFDBCap)");
  if (run.d.unexplored)
    because(std::to_string(run.d.unexplored) + " live links lead to nodes that did not answer");
  if (run.d.failed_reads)
    because(std::to_string(run.d.failed_reads) +
            " ports could not be read (what lies beyond them is not known)");
  rep.subnet_up = rep.reason.empty();
  rep.ms_total = ms_since(run.t0);
  if (rep.subnet_up && rep.sm_state == mad::SmState::kMaster) {
    if (rep.mcast_foreign && !prog_->multicast().sweep_done_once())
      WEFT_LOG(Info, "MC-0006") << rep.mcast_foreign
                                << " MLIDs are forwarded by switches for groups weft does not "
                                   "know: left as they are until the next sweep, and given to "
                                   "no new group";
    prog_->multicast().sweep_done();
  }
  books_.save_keys(rep);
  if (rep.table_failures == 0) partitions_applied_ = run.partition_generation;
  // Ports that came or went since the last sweep: traps 64 and 65 to subscribers; the
  // services and subscriptions of ports that went go too.
  // (Sorted vectors: sets of the largest fabric's 47,824 ports cost milliseconds a sweep.)
  auto guids = [](const SubnetSnapshot* snap) {
    std::vector<uint64_t> out;
    if (snap) {
      out.reserve(snap->end_ports.size());
      for (const auto& [guid, np] : snap->end_ports) out.push_back(guid);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto has = [](const std::vector<uint64_t>& set, uint64_t g) {
    return std::binary_search(set.begin(), set.end(), g);
  };
  const std::vector<uint64_t> now_ports = guids(snapshot_.get());
  if (pub_.heavy_sweeps() > 0) {
    const std::vector<uint64_t> was_ports = guids(run.before.get());
    for (uint64_t g : now_ports)
      if (!has(was_ports, g)) send_reports(kTrapGidIn, port_gid(g));
    for (uint64_t g : was_ports)
      if (!has(now_ports, g)) send_reports(kTrapGidOut, port_gid(g));
  }
  if (sa_) {
    sa_->forget_ports([&](uint64_t g) { return has(now_ports, g); });
    save_sa_records(&rep);  // what forget_ports dropped, and leases that ran out
  }
  const bool was_up = last_report_ && last_report_->subnet_up;
  pub_.heavy(rep.ms_total);
  last_report_ = std::make_shared<const SweepReport>(rep);
  // Not up with ports or links it could not read, each on a switch of the model, and no
  // write failed (the model holds what the writes meant to leave, LinearFDBTop
  // included): the next sweep reads those switches again on this model.
  retry_.clear();
  bool retry = !rep.subnet_up && rep.sm_state == mad::SmState::kMaster && run.model &&
               !run.d.incomplete.empty() && rep.lft_failures == 0 && rep.table_failures == 0 &&
               rep.lft_capped == 0;
  for (NodeIndex n : run.d.incomplete)
    retry = retry && n < run.model->fabric.size() && run.model->fabric.node(n).is_switch();
  if (retry) retry_ = run.d.incomplete;
  // The last model is freed once SUBNET UP is told, off the loop: the largest fabric's
  // takes tens of milliseconds to free.
  std::shared_ptr<const Discovered> old_model = std::move(model_);
  if ((rep.subnet_up || retry) && rep.sm_state == mad::SmState::kMaster)
    model_ = std::move(run.model);
  if (rep.subnet_up) {
    WEFT_LOG(Info, "SM-0100") << "SUBNET UP: " << rep.switches << " switches, " << rep.cas
                              << " CAs, " << rep.lids << " LIDs, "
                              << (rep.smps_discovery + rep.smps_program + rep.smps_activate)
                              << " SMPs, " << static_cast<long>(rep.ms_total) << " ms";
    if (opts_.reserve_heap && !heap_reserved_ && rep.sm_state == mad::SmState::kMaster) {
      // Room for the next sweep's snapshot beside this one (SmOptions::reserve_heap), on
      // the routing's thread: a reroute that comes meanwhile waits for it there.
      heap_reserved_ = true;
      auto grown = std::make_shared<size_t>(0);
      driver_->offload([grown] { *grown = reserve_free_heap(); },
                       [grown] {
                         WEFT_LOG(Info, "SM-0060")
                             << "heap: " << (*grown >> 20)
                             << " MB more faulted in and kept free, as much as the SM holds, "
                                "for the next sweep's snapshot beside this one";
                       });
    }
  } else {
    WEFT_LOG(Error, "SM-0101") << "subnet NOT up: " << rep.reason << " (" << rep.problems.size()
                               << " problems logged)";
  }
  if (old_model) driver_->offload([m = std::move(old_model)]() mutable { m.reset(); }, [] {});
  emit("sweep_finished", {{"heavy", true},
                          {"subnet_up", rep.subnet_up},
                          {"ms", rep.ms_total},
                          {"problems", rep.problems.size()},
                          {"lft_blocks_written", rep.lft_blocks_written},
                          {"pkey_blocks_written", rep.pkey_blocks_written}});
  if (rep.subnet_up != was_up || pub_.heavy_sweeps() == 1)
    emit(rep.subnet_up ? "subnet_up" : "subnet_down",
         rep.subnet_up ? nlohmann::json::object() : nlohmann::json{{"reason", rep.reason}});
  finish_run(rep);
}

// ---- what changed, for the event stream and the version counters --------------------

void SubnetManager::diff_events(const SubnetSnapshot* before, const SubnetSnapshot& after) {
  auto diff = diff_snapshots(before, after);
  pub_.fabric_changed(diff.signatures);
  for (auto& e : diff.link_events) emit(std::move(e.type), std::move(e.data));
  note_flaps(diff.changed_ends);
  for (auto& e : diff.port_events) emit(std::move(e.type), std::move(e.data));
}

void SubnetManager::publish() {
  auto p = std::make_shared<Published>();
  p->subnet = snapshot_;
  p->report = last_report_;
  std::vector<McGroup> groups;
  for (const auto& [mlid, g] : prog_->multicast().groups().groups()) groups.push_back(g);
  p->multicast = std::make_shared<const std::vector<McGroup>>(std::move(groups));
  p->state = peers_.role().state();
  p->priority = opts_.sm_priority;
  // The store follows the role; a master's MADs answered (or another SM's polls) since
  // the last publish are fabric contact, which keeps its claim on a shared store.
  books_.set_master(p->state == mad::SmState::kMaster);
  const auto& es = eng_.stats();
  books_.heard(es.completed_ok + es.error_status + es.unsolicited + es.gmps_ok);
  p->guid = peers_.guid();
  p->lid = peers_.lid();
  p->act_count = peers_.act_count();
  if (peers_.role().state() == mad::SmState::kMaster && !peers_.role().polled()) {
    p->master_guid = peers_.guid();
    p->master_lid = peers_.lid();
    p->master_name = "this SM";
  } else if (peers_.role().polled()) {
    p->master_guid = peers_.role().polled()->guid;
    p->master_lid = peers_.role().polled()->lid;
    p->master_name = peers_.role().polled()->name;
  }
  p->sms = peers_.sms();
  p->perf = perf_;
  p->cc = cc_;
  p->store = books_.store().status();
  for (const auto& [key, n] : traps_.counts()) p->traps.push_back({key, n});
  for (const auto& fp : traps_.flapping()) p->flapping.push_back(fp);
  for (const auto& [key, d] : books_.down().down())
    p->ports_down.push_back({key.first, key.second, d.cause.text(), d.since_unix_s});
  p->sweeping = run_ != nullptr;
  p->partitions_generation = opts_.partitions_generation;
  p->partitions_applied = partitions_applied_;
  p->mad = eng_.stats();
  p->sa = sa_stats();
  p->sa.reports = reports_;
  const auto state = p->state;
  if (auto old = pub_.publish(std::move(p)); old && old->state != state)
    emit("sm_state",
         {{"state", mad::sm_state_name(state)}, {"was", mad::sm_state_name(old->state)}});
}

void SubnetManager::publish_stats() {
  publish();
}

void SubnetManager::state_changed(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    books_.changed(n);  // read again at the next discovery
  }
}

}  // namespace weft::sm
