// What the SM serves between (and during) sweeps: the SA's requests and reports, traps,
// and other SMs' SMInfo and the standby's poll of its master.
#include <chrono>

#include "program/multicast_programmer.hpp"
#include "program/programmer.hpp"
#include "weft/log.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::sm {

using fabric::NodeIndex;

const SaStats& SubnetManager::sa_stats() const {
  static const SaStats none;
  return sa_ ? sa_->stats() : none;
}

SaContext SubnetManager::sa_context() const {
  SaContext ctx;
  ctx.snap = snapshot_;
  ctx.mc = &prog_->multicast().groups();
  ctx.mft_cap = prog_->multicast().mft_cap();
  ctx.mlid_free = [mc = &prog_->multicast()](uint16_t m) { return mc->mlid_free(m); };
  ctx.qos_cfg = &opts_.qos;
  ctx.now_s = sa_now_s();
  ctx.sm_guid = peers_.guid();
  ctx.sm_priority = opts_.sm_priority;
  ctx.sm_act_count = peers_.act_count();
  ctx.qos = opts_.qos.enabled;
  ctx.sa_key = opts_.sa_key;
  ctx.vport_hop_limit = opts_.virt_default_hop_limit;
  return ctx;
}

void SubnetManager::send_reports(uint16_t trap, const Gid& gid) {
  send_reports(sm_notice(trap, gid, peers_.lid(), port_gid(peers_.guid().value)));
}

void SubnetManager::send_reports(const Notice& n) {
  if (!sa_) return;
  for (auto& r : sa_->reports(n, sa_context())) {
    mad::MadBuf b{};
    std::copy_n(r.mad.begin(), std::min(r.mad.size(), b.size()), b.begin());
    auto g = mad::decode_gmp(b.data(), b.size(), true);
    if (!g) continue;  // the SA's own MAD: cannot happen
    mad::GmpRequest req{*g, r.lid};
    req.qpn = r.qpn, req.pkey_index = r.pkey_index, req.sl = r.sl;
    ++reports_.sent;
    eng_.submit(
        std::move(req), [this, r = std::move(r), trap = notice_trap(n)](Result<mad::Gmp> res) {
          if (res) {
            ++reports_.answered;
            return;
          }
          ++reports_.unanswered;
          const size_t gone = sa_->report_unanswered(r);
          reports_.subscriptions_dropped += gone;
          WEFT_LOG(Warn, "SA-0004") << "Report of trap " << trap << " to LID " << r.lid.value
                                    << " QP " << r.qpn << " unanswered (" << res.error().message
                                    << "); " << gone << " subscriptions of that subscriber dropped";
          if (sa_->take_records_changed()) save_sa_records(nullptr);
        });
  }
  if (sa_->take_records_changed()) save_sa_records(nullptr);  // o13-17.1.2 drops
}

void SubnetManager::serve_sa(const mad::InMad& in) {
  if (!sa_) return;
  SaContext ctx = sa_context();
  ctx.requester = in.slid;
  ctx.requester_qpn = in.sqpn;
  ctx.requester_pkey_index = in.pkey_index;
  ctx.requester_sl = in.sl;
  auto ans = sa_->answer(std::span<const uint8_t>(in.mad.data(), in.len), ctx);
  const std::vector<McChange> changes = sa_->take_mc_changes();
  const bool records = sa_->take_records_changed();
  const auto to = mad::SendAddr::gsi(in.slid, in.sqpn, in.pkey_index, in.sl);
  if (!changes.empty() || records) {
    // A join, a leave, a service registered or a subscription is in the state store
    // before the answer says it happened. The answers wait for one write after the
    // batch of MADs being delivered: after a takeover's ClientReregister thousands of
    // hosts re-join at once, and the SA's state is written once per batch, not once
    // per request.
    if (ans) held_answers_.push_back({std::move(*ans), to});
    if (!flush_posted_) {
      flush_posted_ = true;
      driver_->post([this] { flush_groups(); });
    }
  } else if (ans) {
    send_answer(*ans, to);
  }
  // Groups that came or went: traps 66 and 67 to subscribers. Joins and leaves: the
  // groups' trees change now, on the published snapshot.
  bool changed = false;
  std::vector<uint16_t> mlids;
  for (const auto& c : changes) {
    if (c.kind == McChange::kCreated) send_reports(kTrapMcCreated, c.mgid), changed = true;
    if (c.kind == McChange::kDeleted) send_reports(kTrapMcDeleted, c.mgid), changed = true;
    mlids.push_back(c.mlid);
  }
  if (snapshot_) prog_->multicast().route_changed(mlids);
  if (changed || !mlids.empty()) publish();
}

void SubnetManager::send_answer(const std::vector<uint8_t>& ans, const mad::SendAddr& to) {
  if (auto r = t_.send_long(ans, to); !r)
    WEFT_LOG(Warn, "SA-0001") << "answer to LID " << to.dlid.value << " QP " << to.qpn
                              << " failed: " << r.error().message;
}

void SubnetManager::flush_groups() {
  flush_posted_ = false;
  save_groups(nullptr);
  save_sa_records(nullptr);
  auto held = std::move(held_answers_);
  held_answers_.clear();
  for (const auto& [ans, to] : held) send_answer(ans, to);
}

void SubnetManager::save_sa_doc(const std::string& name, std::string text, const char* what,
                                const char* id, SweepReport* rep) {
  auto r = books_.save_doc(name, std::move(text));
  if (r) return;
  const std::string why = std::string(what) + " not persisted: " + r.error().message +
                          " (a restart or a standby's takeover would not know them)";
  if (rep)
    add_problem(*rep, why, id);
  else
    WEFT_LOG(Warn, id) << why;
}

void SubnetManager::save_groups(SweepReport* rep) {
  if (peers_.role().state() != mad::SmState::kMaster) return;  // the master's to write
  save_sa_doc("mcast-groups", prog_->multicast().groups().text(), "multicast groups", "MC-0005",
              rep);
}

void SubnetManager::save_sa_records(SweepReport* rep) {
  if (!sa_ || peers_.role().state() != mad::SmState::kMaster) return;
  save_sa_doc("sa-records", sa_->records_text(sa_now_s(), unix_now_s()),
              "services and subscriptions", "SA-0006", rep);
}

int64_t SubnetManager::sa_now_s() const {
  return std::chrono::duration_cast<std::chrono::seconds>(t_.clock().now()).count();
}

int64_t SubnetManager::unix_now_s() {
  // The wall clock as an offset from the SA's clock, taken once: the leases written
  // are the same seconds every time (no rewrite for a clock read a second later).
  if (!unix_offset_s_)
    unix_offset_s_ = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count() -
                     sa_now_s();
  return sa_now_s() + *unix_offset_s_;
}

void SubnetManager::on_unsolicited(const mad::Smp& s, const mad::InMad& in) {
  if (s.method == mad::kMethodTrap) {
    // Repressed first, whatever it says (IBTA 13.4.8.2): else the SMA repeats it.
    mad::Smp repress = s;
    repress.method = mad::kMethodTrapRepress;
    repress.status = 0;
    if (in.slid.is_unicast()) (void)t_.send(mad::encode_smp(repress), mad::SendAddr::lid(in.slid));
    // The master's SA tells its subscribers, whatever the SM makes of the trap.
    if (sa_ && peers_.role().state() == mad::SmState::kMaster) {
      Notice n{};
      std::copy(s.data.begin(), s.data.end(), n.begin());
      Lid issuer{static_cast<uint16_t>(n[6] << 8 | n[7])};
      if (!issuer.value)
        issuer = in.slid, n[6] = uint8_t(in.slid.value >> 8), n[7] = uint8_t(in.slid.value);
      if (snapshot_)
        if (auto at = snapshot_->ends.at(issuer.value)) {  // IssuerGID: the SA fills it
          const Gid g = port_gid(snapshot_->fabric.node(at->first).ports[at->second].guid.value);
          std::copy(g.begin(), g.end(), n.begin() + 64);
        }
      send_reports(n);
    }
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
    asks_.deferred = true;
    WEFT_LOG(Info, "SM-0023") << t.describe() << "; LID " << from
                              << " trapped again within trap_holdoff: folded into the next sweep";
  } else {
    // A link change at a switch of the model: that switch is read again. Anything else
    // (or a LID the model does not know, checked when the sweep starts) asks for a full
    // discovery.
    if (t.number == 128 && t.lid.value && model_)
      asks_.dirty_lids.insert(t.lid.value);
    else
      asks_.now = true;
    WEFT_LOG(Info, "SM-0020") << t.describe() << "; a sweep is due";
  }
  ev["sweep"] = !held;
  ev["held"] = held;
  ev["holdoff_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(holdoff).count();
  ev["flapping"] = flapping_here;
  emit("trap", ev);
}

void SubnetManager::touch_port(Lid lid) {
  // Someone without the key tried the port, and its lease timer runs: an SMP with the
  // right key stops it before the port drops its protection. Read its PortInfo.
  if (!model_ || peers_.role().state() != mad::SmState::kMaster) return;
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
  auto c = peers_.on_sm_info(s, in);
  if (!c) return;
  if (c->sweep) asks_.now = true;  // the service sweeps at once
  emit("sm_control", std::move(c->event));
  publish();
}

void SubnetManager::poll_master(std::function<void(bool)> done) {
  if (!peers_.role().polled() || run_) return done(false);
  peers_.poll([this, done = std::move(done)](SmPeers::Poll p) {
    if (p.gone) {
      asks_.now = true;
      emit("sm_lost", {{"sm", p.name}, {"state", mad::sm_state_name(peers_.role().state())}});
    }
    publish();
    done(p.gone);
  });
  // In place with the SyncDriver (tests); the daemon's loop runs the completion.
  if (driver_ == &sync_driver_) sync_driver_.when_idle([](Result<void>) {});
}

}  // namespace weft::sm
