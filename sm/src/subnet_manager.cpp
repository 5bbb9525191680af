#include "weft/sm/subnet_manager.hpp"

#include <algorithm>
#include <chrono>

#include "weft/log.hpp"

namespace weft::sm {

using fabric::NodeIndex;
using fabric::PortState;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void add_problem(SweepReport& rep, std::string s, const char* id = "SM-0010") {
  WEFT_LOG(Warn, id) << s;
  rep.problems.push_back(std::move(s));
}

}  // namespace

SubnetManager::SubnetManager(Transport& t, SmOptions o)
    : t_(t), opts_(std::move(o)), eng_(t, opts_.engine) {
  eng_.on_unsolicited([this](const Smp& s, const InMad& in) { on_unsolicited(s, in); });
}

void SubnetManager::on_unsolicited(const Smp& s, const InMad& in) {
  if (s.method == kMethodTrap) {
    trap_seen_ = true;
    WEFT_LOG(Info, "SM-0020") << "trap received (attribute mod " << s.attr_mod << ") from LID "
                              << in.slid.value << "; a sweep is due";
    Smp repress = s;
    repress.method = kMethodTrapRepress;
    repress.status = 0;
    if (in.slid.is_unicast()) (void)t_.send(encode_smp(repress), SendAddr::lid(in.slid));
    return;
  }
  if (s.method != kMethodGet && s.method != kMethodSet) return;  // nothing else is for us
  Smp resp = s;
  resp.method = kMethodGetResp;
  resp.direction = true;
  if (s.attr_id == kAttrSmInfo) {
    SmInfo si;
    si.guid = sm_guid_;
    si.act_count = ++act_count_;
    si.priority = opts_.sm_priority;
    si.state = snapshot_ ? SmState::kMaster : SmState::kDiscovering;
    resp.data = encode_sm_info(si);
    resp.status = 0;
  } else {
    resp.status = 0x000C;  // method/attribute combination not supported
  }
  SendAddr to = s.mgmt_class == kClassSmiDirect ? SendAddr::directed() : SendAddr::lid(in.slid);
  if (auto r = t_.send(encode_smp(resp), to); !r)
    WEFT_LOG(Warn, "SM-0021") << "answer to " << attr_name(s.attr_id)
                              << " query failed: " << r.error().message;
}

Result<void> SubnetManager::serve_for(Duration d) {
  return eng_.poll_for(d);
}

Result<SweepReport> SubnetManager::light_sweep() {
  // A bring-up that did not complete is retried in full: nothing may have changed that
  // a switch would report, yet ports are not ACTIVE or tables not written.
  if (!snapshot_ || trap_seen_ || !snapshot_->report.subnet_up) return sweep();
  bool changed = false;
  for (const DrPath& p : last_switch_paths_) {
    eng_.submit(SmpRequest::get(kAttrSwitchInfo, 0, p), [&changed](Result<Smp> r) {
      if (!r || decode_switch_info(r->data).port_state_change) changed = true;
    });
  }
  if (auto r = eng_.run(); !r) return std::unexpected(r.error());
  if (changed) {
    WEFT_LOG(Info, "SM-0030") << "light sweep: a switch reports a port change; full sweep";
    return sweep();
  }
  SweepReport rep = snapshot_->report;
  rep.heavy = false;
  return rep;
}

Result<SweepReport> SubnetManager::sweep() {
  const auto t0 = std::chrono::steady_clock::now();
  trap_seen_ = false;
  SweepReport rep;
  const std::string db_path = opts_.state_dir + "/guid2lid";
  if (!db_loaded_) {
    auto w = db_.load(db_path);
    if (!w) return std::unexpected(w.error());
    for (const auto& s : *w) WEFT_LOG(Warn, "LID-0001") << s;
    db_loaded_ = true;
    WEFT_LOG(Info, "LID-0002") << db_path << ": " << db_.entries().size() << " GUID->LID entries";
    if (auto r = t_.set_is_sm(true); !r)
      WEFT_LOG(Warn, "SM-0002") << "cannot advertise IsSM: " << r.error().message;
  }
  WEFT_LOG(Info, "SM-0001") << "sweep: discovering the subnet";

  // 1. discovery
  auto tp = std::chrono::steady_clock::now();
  auto disc = discover(eng_);
  if (!disc) return std::unexpected(disc.error());
  Discovered& d = *disc;
  rep.ms_discovery = ms_since(tp);
  rep.smps_discovery = d.smps;
  for (auto& p : d.problems) rep.problems.push_back(p);
  const auto& dn = d.fabric.node(d.local_node);
  sm_guid_ = dn.is_switch() ? dn.ports[0].guid : dn.ports[d.local_port].guid;
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

  // 2. LIDs
  tp = std::chrono::steady_clock::now();
  fabric::Fabric target = d.fabric;
  auto la = assign_lids(target, db_, opts_.lmc);
  if (!la) {
    rep.reason = la.error().message;
    WEFT_LOG(Error, "SM-0004") << "LID assignment failed: " << rep.reason;
    return rep;
  }
  rep.lid_assignment = *la;
  rep.top_lid = la->top;
  if (auto r = db_.save(db_path); !r)
    add_problem(rep, "LIDs not persisted: " + r.error().message + " (a restart may renumber ports)",
                "LID-0003");
  const auto& tn = target.node(d.local_node);
  sm_lid_ = tn.is_switch() ? tn.ports[0].attrs.lid : tn.ports[d.local_port].attrs.lid;
  rep.ms_lids = ms_since(tp);
  rep.lids = la->from_file + la->from_fabric + la->fresh;
  WEFT_LOG(Info, "SM-0005") << "LIDs: " << rep.lids << " ports (" << la->from_file
                            << " from the state file, " << la->from_fabric
                            << " kept from the fabric, " << la->fresh << " new), top " << la->top
                            << ", SM LID " << sm_lid_.value;

  // 3. routing
  tp = std::chrono::steady_clock::now();
  auto chain = routing::EngineChain::parse(opts_.routing_engine);
  if (!chain) return std::unexpected(chain.error());
  routing::Options ro;
  ro.roots = opts_.roots;
  ro.progress = [](const std::string& what) { WEFT_LOG(Info, "SM-0009") << "routing: " << what; };
  ro.torus = opts_.torus;
  // OperVLs encoding to a count of data VLs: 1 -> 1, 2 -> 2, 3 -> 4, 4 -> 8, 5 -> 15.
  static constexpr uint8_t kDataVls[] = {1, 1, 2, 4, 8, 15};
  ro.max_vls = kDataVls[std::min<uint8_t>(opts_.max_op_vls, 5)];
  routing::ChainResult routed = chain->compute(target, ro);
  for (const auto& fb : routed.fallbacks)
    WEFT_LOG(Warn, "SM-0008") << "routing: " << fb.engine << " refused ("
                              << routing::refusal_name(fb.failure.kind)
                              << "): " << fb.failure.message;
  if (!routed.tables) {
    rep.reason = "routing (" + opts_.routing_engine + ") failed: " + routed.summary();
    WEFT_LOG(Error, "SM-0006") << rep.reason;
    return rep;
  }
  rep.ms_routing = ms_since(tp);
  rep.routing_engine = routed.engine;
  rep.routing_fallbacks = routed.fallbacks;
  routing::Tables tables = std::move(*routed.tables);
  for (const auto& note : tables.notes) WEFT_LOG(Info, "SM-0007") << "routing: " << note;

  // 4. programming, 5. activation
  tp = std::chrono::steady_clock::now();
  std::vector<std::vector<PortInfo>> after = d.port_info;
  uint64_t s0 = eng_.stats().sent;
  program(d, target, tables, sm_lid_, rep, after);
  rep.smps_program = eng_.stats().sent - s0;
  rep.ms_program = ms_since(tp);
  tp = std::chrono::steady_clock::now();
  s0 = eng_.stats().sent;
  activate(d, target, after, rep);
  rep.smps_activate = eng_.stats().sent - s0;
  rep.ms_activate = ms_since(tp);
  rep.ms_total = ms_since(t0);

  last_switch_paths_.clear();
  for (NodeIndex n = 0; n < d.fabric.size(); ++n)
    if (d.fabric.node(n).is_switch()) last_switch_paths_.push_back(d.paths[n]);
  // The snapshot's model carries the state the ports reached.
  for (NodeIndex n = 0; n < target.size(); ++n)
    for (size_t p = 0; p < target.node(n).ports.size(); ++p)
      if (d.port_read[n][p]) {
        auto& a = target.node(n).ports[p].attrs;
        const auto& now = after[n][p].attrs;
        a.state = now.state;
        a.neighbor_mtu = now.neighbor_mtu;
        a.oper_vls = now.oper_vls;
        a.sm_lid = now.sm_lid;
      }
  if (rep.ports_active != rep.ports_linked) {
    rep.reason = std::to_string(rep.ports_linked - rep.ports_active) + " of " +
                 std::to_string(rep.ports_linked) + " linked ports are not ACTIVE";
  }
  if (rep.lft_failures) {
    rep.reason += std::string(rep.reason.empty() ? "" : "; ") + std::to_string(rep.lft_failures) +
                  " forwarding-table writes failed";
  }
  if (rep.lft_capped) {
    rep.reason += std::string(rep.reason.empty() ? "" : "; ") + std::to_string(rep.lft_capped) +
                  " switches cannot hold LIDs up to " + std::to_string(rep.top_lid) +
                  " (LinearFDBCap)";
  }
  if (d.unexplored) {
    rep.reason += std::string(rep.reason.empty() ? "" : "; ") + std::to_string(d.unexplored) +
                  " live links lead to nodes that did not answer";
  }
  rep.subnet_up = rep.reason.empty();
  auto snap = std::make_shared<SubnetSnapshot>();
  snap->fabric = std::move(target);
  snap->tables = std::move(tables);
  snap->report = rep;
  snap->sm_lid = sm_lid_;
  snapshot_ = std::move(snap);
  if (rep.subnet_up) {
    WEFT_LOG(Info, "SM-0100") << "SUBNET UP: " << rep.switches << " switches, " << rep.cas
                              << " CAs, " << rep.lids << " LIDs, "
                              << (rep.smps_discovery + rep.smps_program + rep.smps_activate)
                              << " SMPs, " << static_cast<long>(rep.ms_total) << " ms";
  } else {
    WEFT_LOG(Error, "SM-0101") << "subnet NOT up: " << rep.reason << " (" << rep.problems.size()
                               << " problems logged)";
  }
  return rep;
}

void SubnetManager::remember_block(Guid sw, size_t block, const LftBlock& blk) {
  auto& h = lft_cache_[sw];
  if (h.size() < (block + 1) * 64) h.resize((block + 1) * 64, kDropPort);
  std::copy(blk.begin(), blk.end(), h.begin() + block * 64);
}

void SubnetManager::program(const Discovered& d, fabric::Fabric& target, const routing::Tables& t,
                            Lid sm_lid, SweepReport& rep,
                            std::vector<std::vector<PortInfo>>& after) {
  program_ports(d, target, sm_lid, rep, after);
  program_lfts(d, target, t, rep);
  if (auto r = eng_.run(); !r)
    add_problem(rep, "transport failed while programming: " + r.error().message);
}

// PortInfo: LIDs, SM LID, neighbour MTU, operational VLs; ports in INIT go to ARMED.
void SubnetManager::program_ports(const Discovered& d, fabric::Fabric& target, Lid sm_lid,
                                  SweepReport& rep, std::vector<std::vector<PortInfo>>& after) {
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 0; p <= nd.num_ports; ++p) {
      if (!d.port_read[n][p]) continue;
      const auto& port = nd.ports[p];
      const bool mgmt = nd.is_switch() && p == 0;
      if (!mgmt && !port.linked()) continue;
      const PortInfo& cur = d.port_info[n][p];
      PortInfo want = cur;
      bool change = false;
      if (mgmt || !nd.is_switch()) {
        want.attrs.lid = port.attrs.lid;
        want.attrs.lmc = port.attrs.lmc;
        want.attrs.sm_lid = sm_lid;
        want.subnet_timeout = opts_.subnet_timeout;
        // SubnetTimeout rides along with a needed Set but does not trigger one: some
        // devices (ibsim) never store it, and re-setting it every sweep would be noise.
        change |= cur.attrs.lid != want.attrs.lid || cur.attrs.lmc != want.attrs.lmc ||
                  cur.attrs.sm_lid != sm_lid;
      }
      want.attrs.state = PortState::kNoChange;
      if (!mgmt) {
        const bool peer_read = d.port_read[port.peer][port.peer_port];
        const auto& pa = peer_read ? d.port_info[port.peer][port.peer_port].attrs : cur.attrs;
        uint8_t mtu = std::min(cur.attrs.mtu_cap, pa.mtu_cap);
        uint8_t vls = std::min({cur.attrs.vl_cap, pa.vl_cap, opts_.max_op_vls});
        want.attrs.neighbor_mtu = mtu;
        want.attrs.oper_vls = vls;
        change |= cur.attrs.neighbor_mtu != mtu || cur.attrs.oper_vls != vls;
        if (cur.attrs.state == PortState::kInit) {
          want.attrs.state = PortState::kArmed;
          change = true;
        }
      }
      if (!change) continue;
      want.attrs.phys_state = 0;     // no change
      want.attrs.width_enabled = 0;  // no change
      want.attrs.speed_enabled = 0;  // no change
      const DrPath path = dr_path_to(d, n, p);
      eng_.submit(SmpRequest::set(kAttrPortInfo, p, path, encode_port_info(want)),
                  [this, &rep, &after, &target, n, p](Result<Smp> r) {
                    if (!r) {
                      add_problem(rep, "PortInfo Set on " + fabric::port_ref(target, n, p) + ": " +
                                           r.error().message);
                      return;
                    }
                    ++rep.portinfo_sets;
                    after[n][p] = decode_port_info(r->data);
                  });
    }
  }
}

// LFTs: only blocks that differ from what the switch holds; then LinearFDBTop.
void SubnetManager::program_lfts(const Discovered& d, fabric::Fabric& target,
                                 const routing::Tables& t, SweepReport& rep) {
  const uint16_t top = t.top_lid;
  const size_t nblocks = size_t(top) / 64 + 1;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    if (!nd.is_switch()) continue;
    const SwitchInfo& si = d.switch_info[n];
    if (si.lft_cap == 0) {
      ++rep.lft_failures;
      add_problem(rep, "switch " + fabric::port_ref(target, n, 0) +
                           ": SwitchInfo unknown, LFT not programmed");
      continue;
    }
    size_t writable = std::min(nblocks, (size_t(si.lft_cap) + 63) / 64);
    if (writable < nblocks) {
      ++rep.lft_capped;
      add_problem(rep, "switch " + fabric::port_ref(target, n, 0) + ": LinearFDBCap " +
                           std::to_string(si.lft_cap) + " < top LID " + std::to_string(top) +
                           "; LIDs above it are not routed there");
    }
    std::vector<uint8_t> want(writable * 64, kDropPort);
    std::copy(t.lft[n].begin(), t.lft[n].begin() + std::min(t.lft[n].size(), want.size()),
              want.begin());
    const Guid g = nd.guid;
    auto cached = lft_cache_.find(g);
    // A cache is valid only while the switch still holds the top we left it with.
    if (cached != lft_cache_.end() && cached->second.size() / 64 != size_t(si.lft_top) / 64 + 1)
      lft_cache_.erase(cached), cached = lft_cache_.end();
    auto& held = lft_cache_[g];
    const bool fresh = cached == lft_cache_.end();
    const DrPath path = d.paths[n];
    auto pending = std::make_shared<size_t>(0);
    auto finish = [this, &rep, &target, n, si, top, path, pending]() {
      if (--*pending != 0) return;
      if (si.lft_top == top && !si.port_state_change) return;
      SwitchInfo set = si;
      set.lft_top = top;
      set.port_state_change = true;  // writing 1 clears it
      eng_.submit(SmpRequest::set(kAttrSwitchInfo, 0, path, encode_switch_info(set)),
                  [&rep, &target, n](Result<Smp> r) {
                    if (r)
                      ++rep.switchinfo_sets;
                    else
                      ++rep.lft_failures,
                          add_problem(rep, "SwitchInfo Set on " + fabric::port_ref(target, n, 0) +
                                               ": " + r.error().message);
                  });
    };
    auto write_block = [this, &rep, &target, n, path, g, pending, finish](size_t b,
                                                                          const LftBlock& blk) {
      eng_.submit(SmpRequest::set(kAttrLft, static_cast<uint32_t>(b), path, encode_lft_block(blk)),
                  [this, &rep, &target, n, b, g, blk, finish](Result<Smp> r) {
                    if (r) {
                      ++rep.lft_blocks_written;
                      remember_block(g, b, blk);
                    } else {
                      ++rep.lft_failures;
                      add_problem(rep, "LFT block " + std::to_string(b) + " on " +
                                           fabric::port_ref(target, n, 0) + ": " +
                                           r.error().message);
                      lft_cache_.erase(g);
                    }
                    finish();
                  });
    };
    const size_t device_blocks = si.lft_top == 0 ? 0 : size_t(si.lft_top) / 64 + 1;
    ++*pending;  // held until every block is queued
    for (size_t b = 0; b < writable; ++b) {
      LftBlock blk;
      std::copy(want.begin() + b * 64, want.begin() + (b + 1) * 64, blk.begin());
      if (!fresh && held.size() >= (b + 1) * 64) {
        if (std::equal(blk.begin(), blk.end(), held.begin() + b * 64)) continue;
        ++*pending;
        write_block(b, blk);
      } else if (fresh && b < device_blocks) {
        // Unknown content below the switch's current top (another SM, or our restart): read first.
        ++*pending;
        eng_.submit(SmpRequest::get(kAttrLft, static_cast<uint32_t>(b), path),
                    [this, &rep, b, blk, g, write_block, finish](Result<Smp> r) {
                      ++rep.lft_blocks_read;
                      if (r) {
                        LftBlock have = decode_lft_block(r->data);
                        if (have == blk) {
                          remember_block(g, b, blk);
                          finish();
                          return;
                        }
                      }
                      write_block(b, blk);  // keeps *pending for the write's own finish()
                    });
      } else {
        ++*pending;
        write_block(b, blk);
      }
    }
    finish();
  }
}

void SubnetManager::activate(const Discovered& d, const fabric::Fabric& target,
                             std::vector<std::vector<PortInfo>>& after, SweepReport& rep) {
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked() || !d.port_read[n][p]) continue;
      if (after[n][p].attrs.state != PortState::kArmed) continue;
      PortInfo want = after[n][p];
      want.attrs.state = PortState::kActive;
      want.attrs.phys_state = 0;
      want.attrs.width_enabled = 0;
      want.attrs.speed_enabled = 0;
      eng_.submit(SmpRequest::set(kAttrPortInfo, p, dr_path_to(d, n, p), encode_port_info(want)),
                  [&rep, &after, &target, n, p](Result<Smp> r) {
                    if (!r) {
                      add_problem(rep, "PortInfo Set ACTIVE on " + fabric::port_ref(target, n, p) +
                                           ": " + r.error().message);
                      return;
                    }
                    ++rep.ports_activated;
                    after[n][p] = decode_port_info(r->data);
                  });
    }
  }
  if (auto r = eng_.run(); !r)
    add_problem(rep, "transport failed while activating: " + r.error().message);
  rep.ports_linked = rep.ports_active = 0;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked()) continue;
      ++rep.ports_linked;
      if (d.port_read[n][p] && after[n][p].attrs.state == PortState::kActive) ++rep.ports_active;
    }
  }
}

}  // namespace weft::sm
