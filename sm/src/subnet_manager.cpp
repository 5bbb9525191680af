// The SM: a sweep's phases in order, and what it serves between them (SMInfo, traps,
// the SA). Each phase submits its MADs and asks the driver to call the next one when
// every completion has run; the programmers (program/) own the device state.
#include "weft/sm/subnet_manager.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <set>
#include <sstream>

#include "program/device_tables.hpp"
#include "program/lft_programmer.hpp"
#include "program/multicast_programmer.hpp"
#include "program/programmer.hpp"
#include "weft/durable_file.hpp"
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

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t mix(uint64_t h, const std::string& s) {
  return mix(h, std::hash<std::string>()(s));
}

// Directed routes to every switch over `f` (the discovered fabric less the links weft
// disables): breadth-first from the SM, ports in increasing order.
void route_paths_over(Discovered& d, const fabric::Fabric& f) {
  std::vector<uint8_t> seen(f.size(), 0);
  std::deque<NodeIndex> todo;
  const auto& local = f.node(d.local_node);
  if (local.is_switch()) {
    d.paths[d.local_node] = mad::DrPath{};
    seen[d.local_node] = 1;
    todo.push_back(d.local_node);
  } else if (local.ports[d.local_port].linked()) {
    const NodeIndex sw = local.ports[d.local_port].peer;
    d.paths[sw] = mad::DrPath{}.extended(d.local_port);
    seen[sw] = 1;
    todo.push_back(sw);
  }
  while (!todo.empty()) {
    const NodeIndex n = todo.front();
    todo.pop_front();
    const auto& nd = f.node(n);
    if (!nd.is_switch() || d.paths[n].hops >= kMaxDrHops) continue;
    for (const auto& p : nd.ports) {
      if (!p.num || !p.linked() || seen[p.peer] || !f.node(p.peer).is_switch()) continue;
      seen[p.peer] = 1;
      d.paths[p.peer] = d.paths[n].extended(p.num);
      todo.push_back(p.peer);
    }
  }
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Gid gid_of(uint64_t guid) {
  Gid g{};
  for (int i = 0; i < 8; ++i) g[i] = uint8_t(kDefaultSubnetPrefix >> (56 - 8 * i));
  for (int i = 0; i < 8; ++i) g[8 + i] = uint8_t(guid >> (56 - 8 * i));
  return g;
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

SubnetManager::SubnetManager(mad::Transport& t, SmOptions o, std::unique_ptr<SubnAdm> sa)
    : t_(t),
      opts_(std::move(o)),
      sa_(std::move(sa)),
      eng_(t, opts_.engine),
      sync_driver_(eng_),
      driver_(&sync_driver_),
      prog_(std::make_unique<Programmers>(eng_, opts_)),
      perf_(std::make_unique<perf::PerfManager>(
          eng_, opts_.perf,
          opts_.store
              ? opts_.store
              : (opts_.store = store::directory_store(opts_.state_dir, state_documents())))),
      book_(opts_.store),
      keys_(opts_.mkey),
      role_(SmRole::Config{opts_.sm_key, opts_.sm_priority, t.local_port().port_guid}) {
  keys_.set_local_port(t.local_port().port_guid);
  eng_.set_keys(&keys_);
  eng_.on_unsolicited([this](const mad::Smp& s, const mad::InMad& in) { on_unsolicited(s, in); });
  eng_.on_sa([this](const mad::InMad& in) { serve_sa(in); });
  pub_.set_options(std::make_shared<const SmOptions>(opts_));
  publish();
}

SubnetManager::~SubnetManager() = default;

const McDb& SubnetManager::multicast() const {
  return prog_->multicast().groups();
}

void SubnetManager::set_options(SmOptions o) {
  o.store = opts_.store;  // chosen at start (state_store is not reloaded)
  opts_ = std::move(o);   // the programmers hold a reference to opts_
  eng_.set_options(opts_.engine);
  keys_.set_options(opts_.mkey);
  perf_->set_options(opts_.perf);
  role_.configure({opts_.sm_key, opts_.sm_priority, role_.config().guid});
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
  if (role_.state() == mad::SmState::kNotActive) {
    // Nothing to do until a master's STANDBY; what asked for this sweep is spent.
    trap_seen_ = false;
    deferred_heavy_ = false;
    SweepReport rep;
    rep.sm_state = mad::SmState::kNotActive;
    rep.reason = "NOTACTIVE: a master's SMInfo DISABLE stopped this SM (a STANDBY wakes it)";
    done(rep);
    return;
  }
  run_ = std::make_shared<SweepRun>();
  done_ = std::move(done);
  run_->t0 = std::chrono::steady_clock::now();
  // A bring-up that did not complete is retried in full: nothing may have changed that
  // a switch would report, yet ports are not ACTIVE or tables not written. Only a
  // master sweeps light; any other state reads the fabric and its SMs.
  const bool same_term = prog_->same_term(role_.epoch());
  light_ = !heavy && snapshot_ && model_ && !trap_seen_ && !deferred_heavy_ && last_report_ &&
           last_report_->subnet_up && role_.state() == mad::SmState::kMaster && same_term;
  publish();
  if (light_) return phase_light_check();
  // Only trap 128s asked (links changed at known switches): read those switches again.
  std::vector<NodeIndex> dirty;
  if (model_ && !trap_seen_ && !deferred_heavy_ && !dirty_lids_.empty() && last_report_ &&
      last_report_->subnet_up && role_.state() == mad::SmState::kMaster && same_term) {
    const auto& f = model_->fabric;
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (f.node(n).is_switch() && dirty_lids_.count(f.node(n).ports[0].attrs.lid.value))
        dirty.push_back(n);
  }
  if (dirty.size() == dirty_lids_.size() && !dirty.empty())
    return phase_update(std::move(dirty), "trap 128");
  phase_discover();
}

void SubnetManager::next_phase(void (SubnetManager::*phase)(Result<void>)) {
  driver_->when_idle([this, phase](Result<void> r) { (this->*phase)(std::move(r)); });
}

void SubnetManager::finish_run(Result<SweepReport> r) {
  run_.reset();
  auto done = std::exchange(done_, nullptr);
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
  auto changed = std::make_shared<bool>(false);
  // Switches of the model whose PortStateChange is set: read again on the model, when
  // nothing else changed.
  auto psc = std::make_shared<std::vector<NodeIndex>>();
  auto silent = std::make_shared<std::vector<NodeIndex>>();  // switches that did not answer
  auto sm_changed = std::make_shared<bool>(false);           // another SM changed: a full sweep
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
  // A spot check of one LFT block per switch (rotating): another writer that kept
  // LinearFDBTop (another SM, a tool) shows as a block that is not what weft wrote; the
  // switch is then believed in nothing and read again, its tables read back whole.
  const uint64_t round = pub_.heavy_sweeps() + pub_.light_sweeps();
  for (NodeIndex n = 0; n < model_->fabric.size(); ++n) {
    if (!model_->fabric.node(n).is_switch()) continue;
    prog_->lfts().check_block(model_->fabric, n, model_->paths[n], round,
                              [this, psc, n](bool, bool differs) {
                                if (!differs) return;
                                ++run_->rep.lft_switches_changed;
                                psc->push_back(n);
                              });
  }
  // The other SMs, as OpenSM's light sweep polls them: one that became master, or now
  // outranks this one, calls for a heavy sweep (a handover either way).
  auto seen = std::make_shared<std::vector<RemoteSm>>(sms_);
  for (size_t i = 0; i < seen->size(); ++i) {
    mad::SmpRequest req = sm_info_get((*seen)[i].path);
    req.retries = 0;
    eng_.submit(req, [this, seen, i, changed, sm_changed](Result<mad::Smp> r) {
      RemoteSm& sm = (*seen)[i];
      const bool was = sm.answered && sm.key_ok;
      sm.answered = r.has_value();
      if (!r) {
        sm.error = r.error().message;
        return;
      }
      sm.info = mad::decode_sm_info(r->data);
      sm.key_ok = key_matches(sm.info);
      if (sm.key_ok && sm.info.guid == sm.guid &&
          (sm.info.state == mad::SmState::kMaster ||
           sm_outranks(sm.info.priority, sm.guid, opts_.sm_priority, sm_guid_) || !was))
        *changed = *sm_changed = true;
    });
  }
  driver_->when_idle(
      [this, changed, sm_changed, seen, psc, silent](Result<void> pumped) {
        if (!pumped) return finish_run(std::unexpected(pumped.error()));
        sms_ = *seen;
        // A switch that did not answer may only be behind the link that changed (the
        // model's route to it crossed it, as it does to the link's far end): the update
        // reads it again too, by a route around the change, and discovers in full if
        // it still does not answer.
        if (!psc->empty() && !*sm_changed) {
          light_ = false;
          psc->insert(psc->end(), silent->begin(), silent->end());
          std::sort(psc->begin(), psc->end());
          psc->erase(std::unique(psc->begin(), psc->end()), psc->end());
          return phase_update(std::move(*psc), "PortStateChange or LinearFDBTop");
        }
        if (*changed) {
          WEFT_LOG(Info, "SM-0030")
              << "light sweep: a switch reports a port change, or another SM changed; full sweep";
          light_ = false;
          return phase_discover();
        }
        pub_.light();
        SweepReport rep = *last_report_;
        rep.heavy = false;
        rep.sms = sms_;
        finish_run(rep);
      });
}

void SubnetManager::phase_discover() {
  SweepRun& run = *run_;
  trap_seen_ = false;
  deferred_heavy_ = false;
  dirty_lids_.clear();
  run.updating = false;
  run.partition_generation = opts_.partitions_generation;
  const std::string db_path = opts_.store->path("guid2lid");
  if (!db_loaded_) {
    auto w = db_.load(db_path);
    if (!w) return finish_run(std::unexpected(w.error()));
    for (const auto& s : *w) WEFT_LOG(Warn, "LID-0001") << s;
    db_loaded_ = true;
    WEFT_LOG(Info, "LID-0002") << db_path << ": " << db_.entries().size() << " GUID->LID entries";
    if (auto r = book_.load(); !r) return finish_run(std::unexpected(r.error()));
    auto k = keys_.load(opts_.state_dir);
    if (!k) return finish_run(std::unexpected(k.error()));
    for (const auto& s : *k) WEFT_LOG(Warn, "MKY-0001") << s;
    if (opts_.mkey.enabled() || !keys_.guid2mkey().empty())
      WEFT_LOG(Info, "MKY-0002") << opts_.state_dir << "/guid2mkey: " << keys_.guid2mkey().size()
                                 << " port keys, " << keys_.links() << " links in neighbors; "
                                 << "M_Key " << (opts_.mkey.per_port ? "per port" : "shared")
                                 << ", protection level " << int(opts_.mkey.protect_bits)
                                 << ", lease " << opts_.mkey.lease_period << " s";
    if (auto r = t_.set_is_sm(true); !r)
      WEFT_LOG(Warn, "SM-0002") << "cannot advertise IsSM: " << r.error().message;
  }
  WEFT_LOG(Info, "SM-0001") << "sweep: discovering the subnet";
  emit("sweep_started", {{"heavy", true}});
  run.phase_start = std::chrono::steady_clock::now();
  run.discovery = std::make_unique<Discovery>(eng_);
  run.discovery->start();
  next_phase(&SubnetManager::phase_lids);
}

void SubnetManager::phase_update(std::vector<NodeIndex> dirty, const std::string& why) {
  SweepRun& run = *run_;
  trap_seen_ = false;
  deferred_heavy_ = false;
  dirty_lids_.clear();
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
  keys_.learn(d.fabric);
  rep.ms_discovery = ms_since(run.phase_start);
  rep.smps_discovery = d.smps;
  rep.updated = d.update;
  if (d.update)
    WEFT_LOG(Info, "SM-0034") << "update: " << d.reread << " switches read again, " << d.links_lost
                              << " links gone, " << d.links_found << " links found, with " << d.smps
                              << " SMPs in " << static_cast<long>(rep.ms_discovery) << " ms";
  for (auto& p : d.problems) rep.problems.push_back(p);
  const auto& dn = d.fabric.node(d.local_node);
  sm_guid_ = dn.is_switch() ? dn.ports[0].guid : dn.ports[d.local_port].guid;
  // The LID the port holds; the LID assignment sets it again when this SM is master.
  sm_lid_ = dn.is_switch() ? dn.ports[0].attrs.lid : dn.ports[d.local_port].attrs.lid;
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

  role_.configure({opts_.sm_key, opts_.sm_priority, sm_guid_});
  // Every other SM port on the subnet (CapabilityMask.IsSM): its SMInfo decides
  // whether this SM is master (IBTA 14.4.1).
  run.sms.clear();
  for (NodeIndex n = 0; n < d.fabric.size(); ++n) {
    const auto& nd = d.fabric.node(n);
    for (PortNum p = nd.is_switch() ? 0 : 1; p <= (nd.is_switch() ? 0 : nd.num_ports); ++p) {
      if (p >= d.port_read[n].size() || !d.port_read[n][p]) continue;
      const auto& port = nd.ports[p];
      if (!(port.attrs.capability_mask & mad::kCapIsSm) || port.guid == sm_guid_) continue;
      if (!nd.is_switch() && !port.linked()) continue;
      RemoteSm r;
      r.guid = port.guid;
      r.lid = port.attrs.lid;
      r.path = dr_path_to(d, n, p);
      r.name = fabric::port_ref(d.fabric, n, p);
      run.sms.push_back(std::move(r));
    }
  }
  for (size_t i = 0; i < run.sms.size(); ++i) {
    auto keep = run_;
    eng_.submit(sm_info_get(run.sms[i].path), [this, keep, i](Result<mad::Smp> r) {
      RemoteSm& sm = keep->sms[i];
      if (!r) {
        sm.error = r.error().message;
        return;
      }
      sm.answered = true;
      sm.info = mad::decode_sm_info(r->data);
      sm.key_ok = key_matches(sm.info);
      if (sm.info.guid != sm.guid) {
        sm.answered = false;
        sm.error = "its SMInfo names port " + hex_guid(sm.info.guid.value);
      }
    });
  }
  next_phase(&SubnetManager::phase_role);
}

void SubnetManager::phase_role(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped) return finish_run(std::unexpected(pumped.error()));
  for (const auto& sm : run.sms) {
    if (!sm.answered)
      WEFT_LOG(Warn, "SM-0040") << "SM port " << sm.name << " (" << hex_guid(sm.guid.value)
                                << ") did not answer SMInfo: " << sm.error;
    else if (!sm.key_ok)
      WEFT_LOG(Warn, "SM-0041") << "SM " << sm.name << " (" << hex_guid(sm.guid.value)
                                << ") answers with SM_Key " << hex_guid(sm.info.sm_key)
                                << ", not ours: ignored";
    else
      WEFT_LOG(Info, "SM-0042") << "SM " << sm.name << " (" << hex_guid(sm.guid.value)
                                << "): " << mad::sm_state_name(sm.info.state) << ", priority "
                                << int(sm.info.priority) << ", ActCount " << sm.info.act_count;
  }
  sms_ = run.sms;
  run.rep.sms = run.sms;
  const mad::SmState was = role_.state();
  run.decision = role_.after_discovery(run.sms);
  const auto& dec = run.decision;
  switch (dec.kind) {
    case SmRole::Decision::kStandby:
      if (was != mad::SmState::kStandby) send_trap144(*dec.peer);
      return finish_standby(dec.why);
    case SmRole::Decision::kHandover: {
      WEFT_LOG(Info, "SM-0043") << "handing mastership over: " << dec.why;
      mad::SmpRequest req =
          mad::SmpRequest::set(mad::kAttrSmInfo, uint32_t(SmControl::kHandover), dec.peer->path,
                               mad::encode_sm_info(role_.self(act_count(), true)));
      auto ok = std::make_shared<std::optional<Error>>();
      eng_.submit(req, [ok](Result<mad::Smp> r) {
        if (!r) *ok = r.error();
      });
      run.handover_error = ok;
      return next_phase(&SubnetManager::phase_handover);
    }
    case SmRole::Decision::kWaitForHandover:
      WEFT_LOG(Warn, "SM-0044") << dec.why << "; programming nothing meanwhile";
      send_trap144(*dec.peer);
      return finish_standby(dec.why);
    case SmRole::Decision::kMaster:
      break;
  }
  if (was != mad::SmState::kMaster)
    WEFT_LOG(Info, "SM-0045") << "entering MASTER state: " << dec.why;
  if (prog_->begin_term(role_.epoch())) {
    // A new master term: another SM (OpenSM, another weft) may have programmed the
    // fabric since this SM's last sweep as master, leaving LinearFDBTop as it was. What
    // weft believes any device holds is void: LFTs, MFTs, P_Key, SL2VL and VLArb tables
    // are read back and written where they differ, and routing starts from nothing.
    if (prog_->had_term())
      WEFT_LOG(Info, "SM-0056") << "new master term: every table the devices hold is read back";
    run_->rep.new_term = true;
  }
  opts_.store->set_master(true);  // before the LIDs are written
  phase_assign_lids();
}

void SubnetManager::phase_handover(Result<void> pumped) {
  SweepRun& run = *run_;
  if (!pumped) return finish_run(std::unexpected(pumped.error()));
  if (*run.handover_error) {
    add_problem(run.rep,
                "HANDOVER to " + run.decision.peer->name +
                    " failed: " + (*run.handover_error)->message + "; staying master",
                "SM-0046");
    return phase_assign_lids();
  }
  role_.handover_sent(*run.decision.peer);
  finish_standby("handed over to " + run.decision.peer->name + ": " + run.decision.why);
}

void SubnetManager::finish_standby(const std::string& why) {
  model_.reset();
  opts_.store->set_master(false);
  SweepRun& run = *run_;
  SweepReport& rep = run.rep;
  rep.sm_state = role_.state();
  rep.reason = std::string(mad::sm_state_name(role_.state())) + ": " + why;
  rep.subnet_up = false;
  rep.ms_total = ms_since(run.t0);
  WEFT_LOG(Info, "SM-0047") << rep.reason << "; this SM programs nothing";
  last_report_ = std::make_shared<const SweepReport>(rep);
  pub_.heavy_untimed();
  emit("sweep_finished", {{"heavy", true},
                          {"subnet_up", false},
                          {"ms", rep.ms_total},
                          {"sm_state", mad::sm_state_name(role_.state())},
                          {"problems", rep.problems.size()}});
  finish_run(rep);
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
  for (const auto& [key, why] : book_.down()) {
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
  for (const auto& [key, u] : perf_->unhealthy()) {
    if (u.policy != perf::UnhealthyPolicy::kReroute) continue;
    auto n = run.target.find(Guid{key.first});
    if (!n || key.second > run.target.node(*n).num_ports) continue;
    const auto& port = run.target.node(*n).ports[key.second];
    if (!port.linked() || !run.target.node(*n).is_switch() ||
        !run.target.node(port.peer).is_switch())
      continue;
    if (!run.route_on) run.route_on = run.target;
    run.route_on->disconnect(*n, key.second);
  }
  // Released ports stay asked for until a sweep reads them enabled.
  run.bring_up = book_.released();
  std::erase_if(book_.released(), [&d](const std::pair<uint64_t, PortNum>& key) {
    auto n = d.fabric.find(Guid{key.first});
    return !n || key.second >= d.port_read[*n].size() ||
           (d.port_read[*n][key.second] && d.port_info[*n][key.second].attrs.phys_state != 3);
  });
  // Out of standby (a takeover or a handover), the LIDs the ports hold win over this
  // SM's own state file: the master it replaces may have assigned them.
  const bool fabric_first = role_.coming_out_of_standby();
  role_.clear_coming_out_of_standby();
  auto la = assign_lids(run.target, db_, opts_.lmc, fabric_first);
  if (!la) {
    rep.reason = la.error().message;
    WEFT_LOG(Error, "SM-0004") << "LID assignment failed: " << rep.reason;
    return finish_run(rep);
  }
  rep.lid_assignment = *la;
  rep.top_lid = la->top;
  keys_.learn(run.target);  // the LIDs LID-routed SMPs go to from now on
  if (auto r = opts_.store->write("guid2lid", db_.text()); !r)
    add_problem(rep, "LIDs not persisted: " + r.error().message + " (a restart may renumber ports)",
                "LID-0003");
  const auto& tn = run.target.node(d.local_node);
  sm_lid_ = tn.is_switch() ? tn.ports[0].attrs.lid : tn.ports[d.local_port].attrs.lid;
  run.sm_lid = sm_lid_;
  rep.ms_lids = ms_since(run.phase_start);
  rep.lids = la->from_file + la->from_fabric + la->fresh;
  WEFT_LOG(Info, "SM-0005") << "LIDs: " << rep.lids << " ports (" << la->from_file
                            << " from the state file, " << la->from_fabric
                            << " kept from the fabric, " << la->fresh << " new), top " << la->top
                            << ", SM LID " << sm_lid_.value;
  phase_route();
}

void SubnetManager::phase_route() {
  SweepRun& run = *run_;
  run.phase_start = std::chrono::steady_clock::now();
  auto chain = routing::EngineChain::parse(opts_.routing_engine);
  if (!chain) return finish_run(std::unexpected(chain.error()));
  routing::Options ro;
  ro.roots = opts_.roots;
  ro.progress = [](const std::string& what) { WEFT_LOG(Info, "SM-0009") << "routing: " << what; };
  ro.torus = opts_.torus;
  // OperVLs encoding to a count of data VLs: 1 -> 1, 2 -> 2, 3 -> 4, 4 -> 8, 5 -> 15.
  ro.max_vls = qos::data_vls(opts_.max_op_vls);
  // The last snapshot's tables, for an engine that repairs rather than recomputes when
  // only links went away (minhop): a failure then rewrites only what it touched.
  std::shared_ptr<const SubnetSnapshot> before = last_report_ && last_report_->subnet_up &&
                                                         role_.state() == mad::SmState::kMaster &&
                                                         !run.rep.new_term
                                                     ? snapshot_
                                                     : nullptr;
  if (before) ro.previous = {&before->fabric, &before->tables, last_report_->routing_engine};
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
          return finish_run(rep);
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
                                  sm_guid_, {opts_.allow_both_pkeys});
  for (const auto& w : run.plan.warnings) WEFT_LOG(Warn, "PRT-0001") << w;
  if (run.tables.vls > 1)
    WEFT_LOG(Info, "SM-0011") << "routing uses " << int(run.tables.vls) << " VLs: SLs 0-"
                              << int(run.tables.vls) - 1 << " map to VLs 0-"
                              << int(run.tables.vls) - 1 << " on every port";
  run.phase_start = std::chrono::steady_clock::now();
  run.sent_at_phase = eng_.stats().sent;
  run.after = run.d.port_info;
  // Whether the switches still hold what weft believes, before anything is sent by LID
  // through their tables.
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
      role_.state() == mad::SmState::kMaster && !run.rep.new_term &&
      run.rep.lft_switches_changed == 0) {
    run.rep.switches_by_lid = plan_lid_routes(run, *snapshot_, sm_lid_);
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
  save_keys(run.rep);
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
  const Discovered& d = run.d;
  // The snapshot's model carries the state the ports reached.
  fabric::Fabric& target = run.target;
  for (NodeIndex n = 0; n < target.size(); ++n)
    for (size_t p = 0; p < target.node(n).ports.size(); ++p)
      if (d.port_read[n][p]) {
        auto& a = target.node(n).ports[p].attrs;
        const auto& now = run.after[n][p].attrs;
        a.state = now.state;
        a.neighbor_mtu = now.neighbor_mtu;
        a.oper_vls = now.oper_vls;
        a.sm_lid = now.sm_lid;
      }
  // What the next update starts from: the devices as this sweep leaves them.
  run.model = std::make_unique<Discovered>();
  run.model->fabric = target;
  run.model->local_node = d.local_node;
  run.model->local_port = d.local_port;
  run.model->paths = d.paths;
  run.model->port_info = std::move(run.after);  // not read after this phase
  run.model->port_read = d.port_read;
  run.model->switch_info = d.switch_info;
  for (auto& si : run.model->switch_info) {
    si.lft_top = run.tables.top_lid;
    si.port_state_change = false;
  }
  for (NodeIndex n = 0; n < target.size(); ++n)
    if (target.node(n).is_switch()) run.model->fabric.node(n).sw.lft_top = run.tables.top_lid;
  auto snap = std::make_shared<SubnetSnapshot>();
  snap->node_paths = d.paths;
  snap->mft_cap = 0xffff;
  bool any_switch = false;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    if (nd.is_switch()) {
      any_switch = true;
      snap->mft_cap = std::min(snap->mft_cap, d.switch_info[n].mft_cap);
      if (!prog_->lfts().steady(nd.guid, d.switch_info[n].lft_top)) run.reset.insert(nd.guid);
      snap->end_ports[nd.ports[0].guid.value] = {n, 0};
    } else {
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        if (nd.ports[p].linked()) snap->end_ports[nd.ports[p].guid.value] = {n, p};
    }
  }
  if (!any_switch) snap->mft_cap = 0;
  snap->fabric = std::move(target);
  snap->ends = EndPortIndex::of(snap->fabric);
  snap->tables = std::move(run.tables);
  if (opts_.qos.enabled && opts_.qos_policy)
    snap->qos_policy = std::make_shared<const qos::PolicyMatcher>(*opts_.qos_policy, snap->fabric,
                                                                  run.plan, sm_guid_);
  snap->pkey_tables = prog_->tables().take_pkey_tables();
  snap->vlarb_caps.resize(d.port_info.size());
  for (NodeIndex n = 0; n < d.port_info.size(); ++n)
    for (const auto& pi : d.port_info[n])
      snap->vlarb_caps[n].push_back({pi.vl_arb_low_cap, pi.vl_arb_high_cap});
  snap->sm_lid = sm_lid_;
  snap->sm_guid = sm_guid_;
  // Multicast next: the groups the policy asks for, then every tree on the new
  // snapshot. Joins served from here on route on it too.
  prog_->multicast().sync_groups(run.plan, opts_.qos.enabled, *snap);
  snap->partitions = std::move(run.plan);
  diff_events(snapshot_.get(), *snap);
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
  rep.mcast_groups = prog_->multicast().groups().groups().size();
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
  rep.subnet_up = rep.reason.empty();
  rep.ms_total = ms_since(run.t0);
  save_keys(rep);
  if (rep.table_failures == 0) partitions_applied_ = run.partition_generation;
  // Ports that came or went since the last sweep: traps 64 and 65 to subscribers; the
  // services and subscriptions of ports that went go too.
  std::set<uint64_t> now_ports;
  for (const auto& [guid, np] : snapshot_->end_ports) now_ports.insert(guid);
  if (pub_.heavy_sweeps() > 0) {
    for (uint64_t g : now_ports)
      if (!last_ports_.count(g)) send_reports(kTrapGidIn, gid_of(g));
    for (uint64_t g : last_ports_)
      if (!now_ports.count(g)) send_reports(kTrapGidOut, gid_of(g));
  }
  if (sa_) sa_->forget_ports([&](uint64_t g) { return now_ports.count(g) > 0; });
  last_ports_ = std::move(now_ports);
  const bool was_up = last_report_ && last_report_->subnet_up;
  pub_.heavy(rep.ms_total);
  last_report_ = std::make_shared<const SweepReport>(rep);
  if (rep.subnet_up && rep.sm_state == mad::SmState::kMaster)
    model_ = std::move(run.model);
  else
    model_.reset();
  if (rep.subnet_up) {
    WEFT_LOG(Info, "SM-0100") << "SUBNET UP: " << rep.switches << " switches, " << rep.cas
                              << " CAs, " << rep.lids << " LIDs, "
                              << (rep.smps_discovery + rep.smps_program + rep.smps_activate)
                              << " SMPs, " << static_cast<long>(rep.ms_total) << " ms";
  } else {
    WEFT_LOG(Error, "SM-0101") << "subnet NOT up: " << rep.reason << " (" << rep.problems.size()
                               << " problems logged)";
  }
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
  const fabric::Fabric& f = after.fabric;
  uint64_t nodes = 0, ports = 0, links = 0, parts = 0;
  using LinkKey = std::tuple<uint64_t, PortNum, uint64_t, PortNum>;
  auto link_set = [](const fabric::Fabric& fab) {
    std::set<LinkKey> out;
    for (const auto& l : fab.links()) {
      LinkKey a{fab.node(l.a).guid.value, l.pa, fab.node(l.b).guid.value, l.pb};
      LinkKey b{std::get<2>(a), std::get<3>(a), std::get<0>(a), std::get<1>(a)};
      out.insert(std::min(a, b));
    }
    return out;
  };
  for (const auto& n : f.nodes()) {
    nodes = mix(mix(mix(nodes, n.guid.value), n.description), uint64_t(n.type));
    for (const auto& p : n.ports)
      ports = mix(mix(mix(ports, p.guid.value ^ p.num), uint64_t(p.attrs.state)),
                  uint64_t(p.attrs.lid.value) << 8 | p.attrs.width_active);
  }
  const auto now_links = link_set(f);
  for (const auto& l : now_links)
    links = mix(mix(links, std::get<0>(l) ^ std::get<1>(l)), std::get<2>(l) ^ std::get<3>(l));
  for (const auto& pt : after.partitions.partitions)
    parts = mix(mix(parts, pt.pkey), pt.full_members << 20 | pt.limited_members);
  for (const auto& n : after.partitions.pkeys)
    for (const auto& keys : n)
      for (uint16_t k : keys) parts = mix(parts, k);
  pub_.fabric_changed({nodes, ports, links, parts});
  if (!before) return;
  // Links, by their two ends' GUIDs and ports; at most a bounded number of events each
  // way, then a count (a switch reboot takes dozens of links at once).
  constexpr size_t kMaxEach = 256;
  const auto old_links = link_set(before->fabric);
  auto name = [](const fabric::Fabric& fab, uint64_t guid, PortNum p) {
    auto n = fab.find(Guid{guid});
    return n ? fabric::port_ref(fab, *n, p) : hex_guid(guid) + "/" + std::to_string(p);
  };
  auto link_json = [&](const fabric::Fabric& fab, const LinkKey& l) {
    return nlohmann::json{{"a", {{"guid", hex_guid(std::get<0>(l))}, {"port", std::get<1>(l)}}},
                          {"b", {{"guid", hex_guid(std::get<2>(l))}, {"port", std::get<3>(l)}}},
                          {"a_name", name(fab, std::get<0>(l), std::get<1>(l))},
                          {"b_name", name(fab, std::get<2>(l), std::get<3>(l))}};
  };
  size_t down = 0, up = 0;
  std::vector<std::tuple<uint64_t, PortNum, std::string>> changed_ends;
  auto ends = [&](const fabric::Fabric& fab, const LinkKey& l) {
    changed_ends.emplace_back(std::get<0>(l), std::get<1>(l),
                              name(fab, std::get<0>(l), std::get<1>(l)));
    changed_ends.emplace_back(std::get<2>(l), std::get<3>(l),
                              name(fab, std::get<2>(l), std::get<3>(l)));
  };
  for (const auto& l : old_links)
    if (!now_links.count(l)) {
      ends(before->fabric, l);
      if (++down <= kMaxEach) emit("link_down", link_json(before->fabric, l));
    }
  for (const auto& l : now_links)
    if (!old_links.count(l)) {
      ends(f, l);
      if (++up <= kMaxEach) emit("link_up", link_json(f, l));
    }
  note_flaps(changed_ends);
  if (down > kMaxEach || up > kMaxEach) emit("links_changed", {{"down", down}, {"up", up}});
  size_t added = 0, removed = 0, changed = 0;
  for (const auto& [guid, np] : after.end_ports) {
    auto it = before->end_ports.find(guid);
    const auto& a = f.node(np.first).ports[np.second].attrs;
    if (it == before->end_ports.end()) {
      if (++added <= kMaxEach)
        emit("port_added", {{"guid", hex_guid(guid)},
                            {"port", np.second},
                            {"name", fabric::port_ref(f, np.first, np.second)},
                            {"lid", a.lid.value}});
      continue;
    }
    const auto& b = before->fabric.node(it->second.first).ports[it->second.second].attrs;
    if ((a.state != b.state || a.lid != b.lid) && ++changed <= kMaxEach)
      emit("port_state", {{"guid", hex_guid(guid)},
                          {"port", np.second},
                          {"name", fabric::port_ref(f, np.first, np.second)},
                          {"state", fabric::port_state_name(a.state)},
                          {"was", fabric::port_state_name(b.state)},
                          {"lid", a.lid.value}});
  }
  for (const auto& [guid, np] : before->end_ports)
    if (!after.end_ports.count(guid) && ++removed <= kMaxEach)
      emit("port_removed", {{"guid", hex_guid(guid)},
                            {"port", np.second},
                            {"name", fabric::port_ref(before->fabric, np.first, np.second)}});
}

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
      if (opts_.flap_policy == FlapPolicy::kDown && at_switch && !book_.contains({guid, port})) {
        const auto why = DownCause::flapping(
            uint32_t(flap.changes),
            uint32_t(std::chrono::duration_cast<std::chrono::seconds>(opts_.flap_window).count()));
        if (auto r = book_.keep_down({guid, port}, why, unix_now()); !r)
          WEFT_LOG(Error, "SM-0026") << "ports-down not saved: " << r.error().message;
        WEFT_LOG(Warn, "SM-0025") << "port " << name
                                  << " left down (flap_policy down): " << why.text();
        emit("port_left_down", {{"guid", hex_guid(guid)}, {"port", port}, {"name", name}});
        deferred_heavy_ = true;
      }
    }
  }
  // Ports that calmed down: no change within the window.
  for (const auto& [guid, port] : traps_.calmed(now, opts_.flap_window))
    emit("port_stable", {{"guid", hex_guid(guid)}, {"port", port}});
}

void SubnetManager::perf_sweep(std::function<void(Result<perf::PerfSweep>)> done) {
  if (role_.state() != mad::SmState::kMaster || !snapshot_)
    return done(fail(Errc::kUnsupported, "counters are read by the master, once the subnet is up"));
  // The PerfMgr reads the snapshot's fabric and keeps the snapshot alive while it does.
  perf_->start(std::shared_ptr<const fabric::Fabric>(snapshot_, &snapshot_->fabric),
               [this, done = std::move(done)](Result<perf::PerfSweep> r) {
                 if (r) {
                   for (const auto& [key, u] : r->unhealthy) apply_unhealthy(key, u);
                   emit("counters", {{"ports", r->ports},
                                     {"read", r->read},
                                     {"failed", r->failed},
                                     {"mads", r->mads},
                                     {"ms", r->ms},
                                     {"unhealthy", perf_->unhealthy().size()},
                                     {"congested", r->congested.size()}});
                 }
                 publish();
                 done(std::move(r));
               });
}

void SubnetManager::apply_unhealthy(const perf::PortKey& key, const perf::Unhealthy& u) {
  const auto* st = perf_->view()->find(key.first, key.second);
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
  if (u.policy == perf::UnhealthyPolicy::kIsolate && at && !book_.contains(*at)) {
    if (auto r =
            book_.keep_down(*at, DownCause::unhealthy(key.first, key.second, u.reason), unix_now());
        !r)
      WEFT_LOG(Error, "SM-0026") << "ports-down not saved: " << r.error().message;
    ev["isolated"] = hex_guid(at->first) + "/" + std::to_string(at->second);
  }
  // reroute and isolate take effect with the next heavy sweep.
  if (u.policy != perf::UnhealthyPolicy::kReport) deferred_heavy_ = true;
  emit("port_unhealthy", ev);
}

Result<perf::Unhealthy> SubnetManager::mark_healthy(Guid node, PortNum port) {
  auto was = perf_->mark_healthy(node.value, port);
  if (!was) return was;
  // Whatever isolate left down for this port comes up again.
  for (const auto& key : book_.isolating(node.value, port))
    if (auto r = enable_port(Guid{key.first}, key.second); !r)
      WEFT_LOG(Warn, "SM-0029") << "port " << hex_guid(key.first) << "/" << int(key.second) << ": "
                                << r.error().message;
  if (was->policy != perf::UnhealthyPolicy::kReport)
    trap_seen_ = true;  // routes come back at the next sweep
  emit("port_healthy", {{"guid", node.str()}, {"port", port}, {"was", was->reason}});
  publish();
  return was;
}

Result<void> SubnetManager::enable_port(Guid sw, PortNum port) {
  if (auto r = book_.release({sw.value, port}); !r) return std::unexpected(r.error());
  traps_.forget({sw.value, port});
  trap_seen_ = true;  // a heavy sweep enables it
  WEFT_LOG(Info, "SM-0029") << "port " << sw.str() << "/" << int(port)
                            << " released: enabled at the next sweep";
  emit("port_released", {{"guid", hex_guid(sw.value)}, {"port", port}});
  publish();
  return {};
}

void SubnetManager::publish() {
  auto p = std::make_shared<Published>();
  p->subnet = snapshot_;
  p->report = last_report_;
  std::vector<McGroup> groups;
  for (const auto& [mlid, g] : prog_->multicast().groups().groups()) groups.push_back(g);
  p->multicast = std::make_shared<const std::vector<McGroup>>(std::move(groups));
  p->state = role_.state();
  p->priority = opts_.sm_priority;
  // The store follows the role; a master's MADs answered (or another SM's polls) since
  // the last publish are fabric contact, which keeps its claim on a shared store.
  opts_.store->set_master(p->state == mad::SmState::kMaster);
  const auto& es = eng_.stats();
  const uint64_t heard = es.completed_ok + es.error_status + es.unsolicited + es.gmps_ok;
  if (heard != contact_mads_) {
    contact_mads_ = heard;
    opts_.store->fabric_contact();
  }
  p->guid = sm_guid_;
  p->lid = sm_lid_;
  p->act_count = act_count();
  if (role_.state() == mad::SmState::kMaster && !role_.polled()) {
    p->master_guid = sm_guid_;
    p->master_lid = sm_lid_;
    p->master_name = "this SM";
  } else if (role_.polled()) {
    p->master_guid = role_.polled()->guid;
    p->master_lid = role_.polled()->lid;
    p->master_name = role_.polled()->name;
  }
  p->sms = sms_;
  p->perf = perf_->view();
  for (const auto& [key, n] : traps_.counts()) p->traps.push_back({key, n});
  for (const auto& fp : traps_.flapping()) p->flapping.push_back(fp);
  for (const auto& [key, d] : book_.down())
    p->ports_down.push_back({key.first, key.second, d.cause.text(), d.since_unix_s});
  p->sweeping = run_ != nullptr;
  p->partitions_generation = opts_.partitions_generation;
  p->partitions_applied = partitions_applied_;
  p->mad = eng_.stats();
  p->sa = sa_stats();
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
    if (n == "guid2lid" || n == "guid2mkey" || n == "neighbors" || n == "ports-down")
      db_loaded_ = false;  // all four are read together, at the next discovery
    if (n == "unhealthy-ports") perf_->reload();
  }
}

// ---- between sweeps: SMInfo, traps, the SA --------------------------------------------

const SaStats& SubnetManager::sa_stats() const {
  static const SaStats none;
  return sa_ ? sa_->stats() : none;
}

void SubnetManager::send_reports(uint16_t trap, const Gid& gid) {
  if (!sa_) return;
  for (auto& r : sa_->reports(trap, gid, sm_lid_, sm_guid_, kDefaultSubnetPrefix)) {
    if (auto res = t_.send_long(r.mad, mad::SendAddr::gsi(r.lid, r.qpn, r.pkey_index, r.sl)); !res)
      WEFT_LOG(Warn, "SA-0004") << "Report of trap " << trap << " to LID " << r.lid.value
                                << " failed: " << res.error().message;
  }
}

void SubnetManager::serve_sa(const mad::InMad& in) {
  if (!sa_) return;
  SaContext ctx;
  ctx.snap = snapshot_;
  ctx.mc = &prog_->multicast().groups();
  ctx.mft_cap = prog_->multicast().mft_cap();
  ctx.qos_cfg = &opts_.qos;
  ctx.now_s = std::chrono::duration_cast<std::chrono::seconds>(t_.clock().now()).count();
  ctx.requester = in.slid;
  ctx.requester_qpn = in.sqpn;
  ctx.requester_pkey_index = in.pkey_index;
  ctx.requester_sl = in.sl;
  ctx.sm_guid = sm_guid_;
  ctx.sm_priority = opts_.sm_priority;
  ctx.sm_act_count = act_count();
  ctx.qos = opts_.qos.enabled;
  auto ans = sa_->answer(std::span<const uint8_t>(in.mad.data(), in.len), ctx);
  if (!ans) return;
  if (auto r = t_.send_long(*ans, mad::SendAddr::gsi(in.slid, in.sqpn, in.pkey_index, in.sl)); !r)
    WEFT_LOG(Warn, "SA-0001") << "answer to LID " << in.slid.value << " QP " << in.sqpn
                              << " failed: " << r.error().message;
  // Groups that came or went: traps 66 and 67 to subscribers. Joins and leaves: the
  // groups' trees change now, on the published snapshot.
  bool changed = false;
  std::vector<uint16_t> mlids;
  for (const auto& c : sa_->take_mc_changes()) {
    if (c.kind == McChange::kCreated) send_reports(kTrapMcCreated, c.mgid), changed = true;
    if (c.kind == McChange::kDeleted) send_reports(kTrapMcDeleted, c.mgid), changed = true;
    mlids.push_back(c.mlid);
  }
  if (snapshot_) prog_->multicast().route_changed(mlids);
  if (changed || !mlids.empty()) publish();
}

void SubnetManager::on_unsolicited(const mad::Smp& s, const mad::InMad& in) {
  if (s.method == mad::kMethodTrap) {
    // Repressed first, whatever it says (IBTA 13.4.8.2): else the SMA repeats it.
    mad::Smp repress = s;
    repress.method = mad::kMethodTrapRepress;
    repress.status = 0;
    if (in.slid.is_unicast()) (void)t_.send(mad::encode_smp(repress), mad::SendAddr::lid(in.slid));
    return on_trap(decode_trap(s.data), in);
  }
  if (s.method != mad::kMethodGet && s.method != mad::kMethodSet) return;  // nothing else is for us
  if (s.attr_id == mad::kAttrSmInfo) return on_sm_info(s, in);
  mad::Smp resp = s;
  resp.method = mad::kMethodGetResp;
  resp.direction = true;
  resp.status = 0x000C;  // method/attribute combination not supported
  mad::SendAddr to = s.mgmt_class == mad::kClassSmiDirect ? mad::SendAddr::directed()
                                                          : mad::SendAddr::lid(in.slid);
  if (auto r = t_.send(mad::encode_smp(resp), to); !r)
    WEFT_LOG(Warn, "SM-0021") << "answer to " << mad::attr_name(s.attr_id)
                              << " query failed: " << r.error().message;
}

void SubnetManager::on_trap(const Trap& t, const mad::InMad& in) {
  traps_.count(t.generic ? t.number : 0);
  nlohmann::json ev = t.to_json();
  ev["from_lid"] = in.slid.value;
  if (t.security()) {
    WEFT_LOG(Warn, "SEC-0001") << "security: " << t.describe();
    emit("security", ev);
    if (t.number == 256) touch_port(t.lid.value ? t.lid : t.issuer);
  } else if (t.link_integrity()) {
    const uint64_t n = traps_.port_error(t.lid.value, t.port);
    ev["count"] = n;
    WEFT_LOG(Warn, "SM-0022") << t.describe() << " (" << n << " so far there)";
  }
  if (!t.sweep()) {
    if (!t.security() && !t.link_integrity())
      WEFT_LOG(Info, "SM-0020") << t.describe() << "; no sweep";
    ev["sweep"] = false;
    emit("trap", ev);
    return;
  }
  // A switch that keeps trapping (a flapping link) costs at most one heavy sweep per
  // trap_holdoff: traps within it only mark the next (interval) sweep heavy.
  const auto now = t_.clock().now();
  const uint16_t from = t.number == 128 && t.lid.value ? t.lid.value : in.slid.value;
  // A switch with a flapping port: at most one trap-driven heavy sweep per flap_holdoff
  // (the sweep interval), however fast its link comes and goes.
  const bool flapping_here = t.number == 128 && snapshot_ && [&] {
    for (const auto& [guid, port] : traps_.flapping()) {
      auto n = snapshot_->fabric.find(Guid{guid});
      if (n && snapshot_->fabric.node(*n).is_switch() &&
          snapshot_->fabric.node(*n).ports[0].attrs.lid.value == from)
        return true;
    }
    return false;
  }();
  const mad::Duration holdoff =
      flapping_here ? std::max(opts_.trap_holdoff, opts_.flap_holdoff) : opts_.trap_holdoff;
  const bool held = traps_.hold(from, now, holdoff);
  if (held) {
    deferred_heavy_ = true;
    WEFT_LOG(Info, "SM-0023") << t.describe() << "; LID " << from
                              << " trapped again within trap_holdoff: folded into the next sweep";
  } else {
    // A link change at a switch of the model: that switch is read again. Anything else
    // (or a LID the model does not know, checked when the sweep starts) asks for a full
    // discovery.
    if (t.number == 128 && t.lid.value && model_)
      dirty_lids_.insert(t.lid.value);
    else
      trap_seen_ = true;
    WEFT_LOG(Info, "SM-0020") << t.describe() << "; a sweep is due";
  }
  ev["sweep"] = !held;
  ev["held"] = held;
  ev["holdoff_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(holdoff).count();
  ev["flapping"] = flapping_here;
  emit("trap", ev);
}

void SubnetManager::save_keys(SweepReport& rep) {
  if (!keys_.dirty()) return;
  if (auto r = keys_.save(*opts_.store); !r)
    add_problem(rep,
                "M_Keys not persisted: " + r.error().message +
                    " (after a restart, ports keyed since are reached once their lease runs out)",
                "MKY-0003");
}

void SubnetManager::touch_port(Lid lid) {
  // Someone without the key tried the port, and its lease timer runs: an SMP with the
  // right key stops it before the port drops its protection. Read its PortInfo.
  if (!model_ || role_.state() != mad::SmState::kMaster) return;
  const Discovered& d = *model_;
  for (NodeIndex n = 0; n < d.fabric.size(); ++n) {
    const auto& nd = d.fabric.node(n);
    for (const auto& p : nd.ports) {
      if (nd.is_switch() ? p.num != 0 : (p.num == 0 || !p.linked())) continue;
      if (p.attrs.lid != lid) continue;
      const std::string port = fabric::port_ref(d.fabric, n, p.num);
      eng_.submit(mad::SmpRequest::get(mad::kAttrPortInfo, p.num, dr_path_to(d, n, p.num)),
                  [port](Result<mad::Smp> r) {
                    if (r)
                      WEFT_LOG(Info, "MKY-0004") << "bad M_Key at " << port
                                                 << ": read with its key, its lease timer stopped";
                    else
                      WEFT_LOG(Warn, "MKY-0005")
                          << "bad M_Key at " << port
                          << ": reading it with its key failed: " << r.error().message;
                  });
      return;
    }
  }
}

void SubnetManager::on_sm_info(const mad::Smp& s, const mad::InMad& in) {
  const mad::SmInfo req = mad::decode_sm_info(s.data);
  const mad::SmState was = role_.state();
  auto a = role_.on_request(s.method, s.attr_mod, req, act_count());
  if (!a.log.empty()) {
    if (a.status)
      WEFT_LOG(Warn, "SM-0048") << a.log;
    else
      WEFT_LOG(Info, "SM-0049") << a.log;
  }
  mad::Smp resp = s;
  resp.method = mad::kMethodGetResp;
  resp.direction = true;
  resp.status = a.status;
  resp.data = mad::encode_sm_info(a.info);
  mad::SendAddr to = s.mgmt_class == mad::kClassSmiDirect ? mad::SendAddr::directed()
                                                          : mad::SendAddr::lid(in.slid);
  if (auto r = t_.send(mad::encode_smp(resp), to); !r)
    WEFT_LOG(Warn, "SM-0021") << "answer to SMInfo "
                              << (s.method == mad::kMethodSet ? "Set" : "Get")
                              << " failed: " << r.error().message;
  if (s.method != mad::kMethodSet || a.status) return;
  if (a.acknowledge) {
    // The old master hears that its HANDOVER was taken: SMInfo Set ACKNOWLEDGE, sent as
    // the standby this SM was when the HANDOVER came (IBTA 14.4.1).
    mad::SmInfo ack = role_.self(act_count(), true);
    ack.state = mad::SmState::kStandby;
    std::optional<mad::SmpRequest> req_ack;
    for (const auto& r : sms_)
      if (r.guid == req.guid && !r.path.ports.empty())
        req_ack = mad::SmpRequest::set(mad::kAttrSmInfo, uint32_t(SmControl::kAcknowledge), r.path,
                                       mad::encode_sm_info(ack));
    if (!req_ack && in.slid.is_unicast()) {
      req_ack = mad::SmpRequest::set(mad::kAttrSmInfo, uint32_t(SmControl::kAcknowledge), {},
                                     mad::encode_sm_info(ack));
      req_ack->directed = false;
      req_ack->dlid = in.slid;
    }
    if (req_ack)
      eng_.submit(*req_ack, [g = req.guid](Result<mad::Smp> r) {
        if (!r)
          WEFT_LOG(Warn, "SM-0050")
              << "ACKNOWLEDGE to " << hex_guid(g.value) << " failed: " << r.error().message;
      });
  }
  if (a.sweep) trap_seen_ = true;  // the service sweeps at once
  emit("sm_control", {{"control", sm_control_name(s.attr_mod)},
                      {"from", hex_guid(req.guid.value)},
                      {"state", mad::sm_state_name(role_.state())},
                      {"was", mad::sm_state_name(was)},
                      {"sweep", a.sweep}});
  publish();
}

void SubnetManager::send_trap144(const RemoteSm& to) {
  // Trap 144 (local changes: IsSM now set) to the master, so that it sweeps, finds this
  // SM and hands over if this one outranks it (OpenSM does the same on entering
  // STANDBY).
  if (!to.lid.is_unicast() || !sm_lid_.is_unicast()) return;
  mad::Smp t;
  t.mgmt_class = mad::kClassSmiLid;
  t.method = mad::kMethodTrap;
  t.attr_id = mad::kAttrNotice;
  t.tid = 0x7e000000ull | (eng_.stats().sent & 0xffffff);
  mad::SmpData& d = t.data;
  d[0] = 0x80 | 4;  // IsGeneric, Type 4 (informational)
  d[1] = 0;
  d[2] = 0;
  d[3] = 1;  // ProducerType: channel adapter
  d[4] = 144 >> 8;
  d[5] = 144 & 0xff;
  d[6] = uint8_t(sm_lid_.value >> 8);  // IssuerLID
  d[7] = uint8_t(sm_lid_.value);
  // DataDetails from byte 10: reserved(16), LIDAddr(16), reserved(15), LocalChanges(1),
  // CapabilityMask(32), reserved(10), ChangeFlags(6), CapabilityMask2(16).
  d[12] = uint8_t(sm_lid_.value >> 8);
  d[13] = uint8_t(sm_lid_.value);
  const uint32_t cap = mad::kCapIsSm;
  d[16] = uint8_t(cap >> 24);
  d[17] = uint8_t(cap >> 16);
  d[18] = uint8_t(cap >> 8);
  d[19] = uint8_t(cap);
  if (auto r = t_.send(mad::encode_smp(t), mad::SendAddr::lid(to.lid)); !r)
    WEFT_LOG(Warn, "SM-0051") << "trap 144 to the master at LID " << to.lid.value
                              << " failed: " << r.error().message;
  else
    WEFT_LOG(Info, "SM-0052") << "trap 144 sent to SM " << to.name << " at LID " << to.lid.value;
}

mad::SmpRequest SubnetManager::sm_info_get(const mad::DrPath& path) const {
  // The Get presents this SM's SMInfo and SM_Key: another weft answers it with its key
  // only when ours matches.
  mad::SmpRequest req = mad::SmpRequest::get(mad::kAttrSmInfo, 0, path);
  req.data = mad::encode_sm_info(role_.self(act_count(), true));
  return req;
}

bool SubnetManager::key_matches(const mad::SmInfo& theirs) const {
  return opts_.sm_key == 0 || theirs.sm_key == opts_.sm_key;
}

void SubnetManager::poll_master(std::function<void(bool)> done) {
  const auto& polled = role_.polled();
  if (!polled || run_) return done(false);
  mad::SmpRequest req = sm_info_get(polled->path);
  req.retries = 0;  // the polls are the retries: polling_retry_number of them
  const Guid want = polled->guid;
  eng_.submit(req, [this, want, done = std::move(done)](Result<mad::Smp> r) {
    std::optional<mad::SmInfo> info;
    if (r) {
      info = mad::decode_sm_info(r->data);
      if (info->guid != want || !key_matches(*info)) info.reset();
    }
    const mad::SmState was = role_.state();
    const auto name = role_.polled() ? role_.polled()->name : std::string();
    const auto lower_master = role_.polled();
    const int failed_before = role_.failed_polls();
    const bool gone = role_.poll_result(info, opts_.polling_retry_number);
    if (!gone && was == mad::SmState::kMaster && info && lower_master) send_trap144(*lower_master);
    if (!info)
      WEFT_LOG(Warn, "SM-0053") << "SM " << name << " did not answer its poll ("
                                << failed_before + 1 << " in a row): "
                                << (r ? std::string("wrong GUID or SM_Key") : r.error().message);
    if (gone) {
      WEFT_LOG(Warn, "SM-0054") << "SM " << name
                                << (was == mad::SmState::kStandby
                                        ? " is gone: taking over"
                                        : " no longer a master: programming");
      trap_seen_ = true;
      emit("sm_lost", {{"sm", name}, {"state", mad::sm_state_name(role_.state())}});
    }
    publish();
    done(gone);
  });
  // In place with the SyncDriver (tests); the daemon's loop runs the completion.
  if (driver_ == &sync_driver_) sync_driver_.when_idle([](Result<void>) {});
}

}  // namespace weft::sm
