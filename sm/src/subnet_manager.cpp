#include "weft/sm/subnet_manager.hpp"

#include <algorithm>
#include <chrono>
#include <set>

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
  eng_.on_sa([this](const InMad& in) { serve_sa(in); });
}

void SubnetManager::sync_groups(const qos::PartitionPlan& plan) {
  auto scopes = [](uint16_t mask, uint8_t dflt) {
    std::vector<uint8_t> v;
    for (uint8_t s = 1; s < 16; ++s)
      if (mask & (1u << s)) v.push_back(s);
    if (v.empty()) v.push_back(dflt);
    return v;
  };
  for (const auto& part : plan.partitions) {
    const uint16_t pkey = uint16_t(part.pkey | 0x8000);
    McGroup base;
    base.pkey = pkey;
    base.mtu = part.flags.mtu;
    base.rate = part.flags.rate;
    base.sl = opts_.qos.enabled ? part.flags.sl : 0;  // as OpenSM: the SL needs QoS
    base.tclass = part.flags.tclass;
    base.flow_label = part.flags.flow_label;
    if (part.ipoib) {
      // The IPv4 broadcast group of the partition: ff1S:401b:PKEY::ffff:ffff.
      for (uint8_t sc : scopes(part.flags.scope_mask, 2)) {
        McGroup g = base;
        g.mgid = {0xff,
                  uint8_t(0x10 | sc),
                  0x40,
                  0x1b,
                  uint8_t(pkey >> 8),
                  uint8_t(pkey),
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0xff,
                  0xff,
                  0xff,
                  0xff};
        g.scope = sc;
        g.qkey = part.flags.qkey ? part.flags.qkey : 0x0b1b;
        mc_.ensure(g);
      }
    }
    for (const auto& mg : part.groups) {
      const uint8_t own = mg.mgid[1] & 0x0f;
      for (uint8_t sc : scopes(mg.flags.scope_mask, own)) {
        McGroup g = base;
        std::copy(mg.mgid.begin(), mg.mgid.end(), g.mgid.begin());
        g.mgid[1] = uint8_t((g.mgid[1] & 0xf0) | sc);
        g.scope = sc;
        g.mtu = mg.flags.mtu;
        g.rate = mg.flags.rate;
        g.sl = opts_.qos.enabled ? mg.flags.sl : 0;
        g.qkey = mg.flags.qkey;
        g.tclass = mg.flags.tclass;
        g.flow_label = mg.flags.flow_label;
        mc_.ensure(g);
      }
    }
  }
  for (uint16_t mlid : mc_.prune([this](uint64_t g) { return end_ports_.count(g) > 0; }))
    WEFT_LOG(Info, "MC-0001") << "multicast group MLID 0x" << std::hex << mlid << std::dec
                              << ": members whose ports left the fabric removed";
}

std::vector<std::pair<NodeIndex, uint32_t>> SubnetManager::route_mlid(const fabric::Fabric& f,
                                                                      uint16_t mlid) {
  std::vector<std::pair<NodeIndex, uint32_t>> touched;
  if (mlid < kMlidBase) return touched;
  const uint32_t block = (mlid - kMlidBase) / 32, idx = (mlid - kMlidBase) % 32;
  auto positions = [&](NodeIndex sw) { return (uint32_t(f.node(sw).num_ports) + 1 + 15) / 16; };
  for (NodeIndex sw : mlid_switches_[mlid])
    for (uint32_t pos = 0; pos < positions(sw); ++pos) {
      const uint32_t key = pos << 28 | block;
      mft_want_[sw][key][idx] = 0;
      touched.push_back({sw, key});
    }
  mlid_switches_.erase(mlid);
  const McGroup* g = mc_.by_mlid(mlid);
  if (!g) return touched;
  std::vector<std::pair<NodeIndex, PortNum>> receivers, senders;
  for (const auto& [guid, state] : g->members) {
    auto it = end_ports_.find(guid);
    if (it == end_ports_.end()) continue;
    (state & (kJoinFull | kJoinNon) ? receivers : senders).push_back(it->second);
  }
  for (const auto& [sw, mask] : multicast_tree(f, receivers, senders)) {
    for (uint32_t pos = 0; pos < positions(sw); ++pos) {
      uint16_t bits = 0;
      for (uint32_t i = 0; i < 16; ++i)
        if (16 * pos + i < mask.size() && mask[16 * pos + i]) bits = uint16_t(bits | (1u << i));
      const uint32_t key = pos << 28 | block;
      mft_want_[sw][key][idx] = bits;
      touched.push_back({sw, key});
    }
    mlid_switches_[mlid].push_back(sw);
  }
  return touched;
}

void SubnetManager::write_mfts(const fabric::Fabric& f,
                               const std::vector<std::pair<NodeIndex, uint32_t>>& blocks_in,
                               SweepReport* rep) {
  auto blocks = blocks_in;
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  for (auto [sw, key] : blocks) {
    if (sw >= node_paths_.size()) continue;
    const uint64_t guid = f.node(sw).guid.value;
    const MftBlock want = mft_want_[sw][key];
    const DrPath path = node_paths_[sw];
    const std::string where = fabric::port_ref(f, sw, 0);
    auto write = [this, rep, guid, key, want, path, where]() {
      eng_.submit(SmpRequest::set(kAttrMft, key, path, encode_mft_block(want)),
                  [this, rep, guid, key, want, where](Result<Smp> r) {
                    if (r) {
                      mft_held_[{guid, key}] = want;
                      if (rep) ++rep->mft_blocks_written;
                      return;
                    }
                    mft_held_.erase({guid, key});
                    if (rep)
                      ++rep->table_failures,
                          add_problem(*rep, "MFT Set on " + where + ": " + r.error().message);
                    else
                      WEFT_LOG(Warn, "MC-0002")
                          << "MFT Set on " << where << ": " << r.error().message;
                  });
    };
    auto held = mft_held_.find({guid, key});
    if (held != mft_held_.end()) {
      if (held->second != want) write();
      continue;
    }
    eng_.submit(SmpRequest::get(kAttrMft, key, path),
                [this, rep, guid, key, want, write](Result<Smp> r) {
                  if (rep) ++rep->mft_blocks_read;
                  if (r) {
                    const MftBlock have = decode_mft_block(r->data);
                    mft_held_[{guid, key}] = have;
                    if (have == want) return;
                  }
                  write();
                });
  }
}

void SubnetManager::send_reports(uint16_t trap, const Gid& gid) {
  for (auto& r : sa_.reports(trap, gid, sm_lid_, sm_guid_, kDefaultSubnetPrefix)) {
    if (auto res = t_.send_long(r.mad, SendAddr::gsi(r.lid, r.qpn, r.pkey_index, r.sl)); !res)
      WEFT_LOG(Warn, "SA-0004") << "Report of trap " << trap << " to LID " << r.lid.value
                                << " failed: " << res.error().message;
  }
}

void SubnetManager::serve_sa(const InMad& in) {
  SaContext ctx;
  ctx.snap = snapshot_;
  ctx.mc = &mc_;
  ctx.mft_cap = mft_cap_;
  ctx.qos_cfg = &opts_.qos;
  ctx.now_s = std::chrono::duration_cast<std::chrono::seconds>(t_.clock().now()).count();
  ctx.requester = in.slid;
  ctx.requester_qpn = in.sqpn;
  ctx.requester_pkey_index = in.pkey_index;
  ctx.requester_sl = in.sl;
  std::vector<Gid> groups_before;
  for (const auto& [mlid, g] : mc_.groups()) groups_before.push_back(g.mgid);
  ctx.sm_guid = sm_guid_;
  ctx.sm_priority = opts_.sm_priority;
  ctx.sm_act_count = act_count_;
  ctx.qos = opts_.qos.enabled;
  auto ans = sa_.answer(std::span<const uint8_t>(in.mad.data(), in.len), ctx);
  if (!ans) return;
  if (auto r = t_.send_long(*ans, SendAddr::gsi(in.slid, in.sqpn, in.pkey_index, in.sl)); !r)
    WEFT_LOG(Warn, "SA-0001") << "answer to LID " << in.slid.value << " QP " << in.sqpn
                              << " failed: " << r.error().message;
  // Groups that came or went: traps 66 and 67 to subscribers.
  std::vector<Gid> groups_after;
  for (const auto& [mlid, g] : mc_.groups()) groups_after.push_back(g.mgid);
  for (const auto& g : groups_after)
    if (std::find(groups_before.begin(), groups_before.end(), g) == groups_before.end())
      send_reports(kTrapMcCreated, g);
  for (const auto& g : groups_before)
    if (std::find(groups_after.begin(), groups_after.end(), g) == groups_after.end())
      send_reports(kTrapMcDeleted, g);
  // Joins and leaves: the groups' trees change now, not at the next sweep.
  if (snapshot_) {
    std::vector<std::pair<NodeIndex, uint32_t>> blocks;
    for (uint16_t mlid : sa_.take_changed()) {
      auto b = route_mlid(snapshot_->fabric, mlid);
      blocks.insert(blocks.end(), b.begin(), b.end());
    }
    if (!blocks.empty()) write_mfts(snapshot_->fabric, blocks, nullptr);
  }
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
  ro.max_vls = qos::data_vls(opts_.max_op_vls);
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

  // Partitions: who holds which P_Key.
  qos::PartitionPlan plan = qos::plan_partitions(opts_.partitions ? &*opts_.partitions : nullptr,
                                                 target, sm_guid_, {opts_.allow_both_pkeys});
  for (const auto& w : plan.warnings) WEFT_LOG(Warn, "PRT-0001") << w;
  if (tables.vls > 1)
    WEFT_LOG(Info, "SM-0011") << "routing uses " << int(tables.vls) << " VLs: SLs 0-"
                              << int(tables.vls) - 1 << " map to VLs 0-" << int(tables.vls) - 1
                              << " on every port";

  // 4. programming, 5. activation
  tp = std::chrono::steady_clock::now();
  std::vector<std::vector<PortInfo>> after = d.port_info;
  uint64_t s0 = eng_.stats().sent;
  program(d, target, tables, plan, sm_lid_, rep, after);
  // Multicast: groups, trees and MFTs on the fabric as it now stands.
  node_paths_ = d.paths;
  end_ports_.clear();
  mft_cap_ = 0xffff;
  bool any_switch = false;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    if (nd.is_switch()) {
      any_switch = true;
      mft_cap_ = std::min(mft_cap_, d.switch_info[n].mft_cap);
      if (!steady(d, n, 0))
        std::erase_if(mft_held_, [&](const auto& e) { return e.first.first == nd.guid.value; });
      end_ports_[nd.ports[0].guid.value] = {n, 0};
    } else {
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        if (nd.ports[p].linked()) end_ports_[nd.ports[p].guid.value] = {n, p};
    }
  }
  if (!any_switch) mft_cap_ = 0;
  sync_groups(plan);
  mft_want_.clear();
  mlid_switches_.clear();
  std::vector<std::pair<NodeIndex, uint32_t>> blocks;
  for (const auto& [mlid, g] : mc_.groups()) {
    auto b = route_mlid(target, mlid);
    blocks.insert(blocks.end(), b.begin(), b.end());
  }
  for (const auto& [key, held] : mft_held_)
    if (auto n = target.find(Guid{key.first}))
      if (std::any_of(held.begin(), held.end(), [](uint16_t m) { return m != 0; }))
        blocks.push_back({*n, key.second});
  write_mfts(target, blocks, &rep);
  if (auto r = eng_.run(); !r)
    add_problem(rep, "transport failed while programming MFTs: " + r.error().message);
  rep.mcast_groups = mc_.groups().size();
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
  if (rep.table_failures) {
    rep.reason += std::string(rep.reason.empty() ? "" : "; ") + std::to_string(rep.table_failures) +
                  " P_Key, SL2VL or VLArb writes failed";
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
  if (opts_.qos.enabled && opts_.qos_policy)
    snap->qos_policy =
        std::make_shared<const qos::PolicyMatcher>(*opts_.qos_policy, snap->fabric, plan, sm_guid_);
  snap->partitions = std::move(plan);
  snap->pkey_tables = std::move(pkey_tables_);
  snap->vlarb_caps.resize(d.port_info.size());
  for (NodeIndex n = 0; n < d.port_info.size(); ++n)
    for (const auto& pi : d.port_info[n])
      snap->vlarb_caps[n].push_back({pi.vl_arb_low_cap, pi.vl_arb_high_cap});
  pkey_tables_.clear();
  snap->report = rep;
  snap->sm_lid = sm_lid_;
  // Ports that came or went since the last sweep: traps 64 and 65 to subscribers;
  // the services and subscriptions of ports that went go too.
  std::set<uint64_t> now_ports;
  for (const auto& [guid, np] : end_ports_) now_ports.insert(guid);
  auto gid_of = [](uint64_t guid) {
    Gid g{};
    for (int i = 0; i < 8; ++i) g[i] = uint8_t(kDefaultSubnetPrefix >> (56 - 8 * i));
    for (int i = 0; i < 8; ++i) g[8 + i] = uint8_t(guid >> (56 - 8 * i));
    return g;
  };
  if (snapshot_) {
    for (uint64_t g : now_ports)
      if (!last_ports_.count(g)) send_reports(kTrapGidIn, gid_of(g));
    for (uint64_t g : last_ports_)
      if (!now_ports.count(g)) send_reports(kTrapGidOut, gid_of(g));
  }
  sa_.forget_ports([&](uint64_t g) { return now_ports.count(g) > 0; });
  last_ports_ = std::move(now_ports);
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
                            const qos::PartitionPlan& plan, Lid sm_lid, SweepReport& rep,
                            std::vector<std::vector<PortInfo>>& after) {
  program_ports(d, target, plan, sm_lid, rep, after);
  program_lfts(d, target, t, rep);
  if (auto r = eng_.run(); !r)
    add_problem(rep, "transport failed while programming: " + r.error().message);
  // The tables below depend on the operational VLs the PortInfo Sets left.
  program_tables(d, target, t, plan, after, rep);
  if (auto r = eng_.run(); !r)
    add_problem(rep, "transport failed while programming tables: " + r.error().message);
}

const qos::QosPortConfig& SubnetManager::qos_for(const fabric::Fabric& f, NodeIndex n,
                                                 PortNum p) const {
  const auto& nd = f.node(n);
  if (nd.is_switch()) return p == 0 ? opts_.qos.sw0 : opts_.qos.swe;
  return nd.type == fabric::NodeType::kRouter ? opts_.qos.rtr : opts_.qos.ca;
}

bool SubnetManager::enforces(const Discovered& d, const fabric::Fabric& f,
                             const qos::PartitionPlan& plan, NodeIndex n, PortNum p) const {
  if (opts_.no_partition_enforcement || opts_.part_enforce == "off") return false;
  const auto& nd = f.node(n);
  if (!nd.is_switch() || p == 0 || !nd.ports[p].linked()) return false;
  const auto& port = nd.ports[p];
  if (f.node(port.peer).is_switch()) return false;
  const SwitchInfo& si = d.switch_info[n];
  const bool can = (si.inbound_enforce_cap && opts_.part_enforce != "out") ||
                   (si.outbound_enforce_cap && opts_.part_enforce != "in");
  return can && si.partition_enforce_cap > 0 &&
         plan.pkeys[port.peer][port.peer_port].size() <= si.partition_enforce_cap;
}

// PortInfo: LIDs, SM LID, neighbour MTU, operational VLs, P_Key enforcement on switch
// ports facing end ports, VLHighLimit under QoS; ports in INIT go to ARMED.
void SubnetManager::program_ports(const Discovered& d, fabric::Fabric& target,
                                  const qos::PartitionPlan& plan, Lid sm_lid, SweepReport& rep,
                                  std::vector<std::vector<PortInfo>>& after) {
  const bool enf_in = opts_.part_enforce == "in" || opts_.part_enforce == "both";
  const bool enf_out = opts_.part_enforce == "out" || opts_.part_enforce == "both";
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
      // Fields a device was seen to drop from a Set are still sent, but do not by
      // themselves cause one (or every sweep would rewrite the port).
      const uint64_t pkey = port_key(target, n, p);
      const uint8_t ignored = [&] {
        auto it = ignores_.find(pkey);
        return it == ignores_.end() ? uint8_t(0) : it->second;
      }();
      if (nd.is_switch() && !mgmt) {
        const bool en = enforces(d, target, plan, n, p);
        want.part_enf_in = en && enf_in && d.switch_info[n].inbound_enforce_cap;
        want.part_enf_out = en && enf_out && d.switch_info[n].outbound_enforce_cap;
        if (!(ignored & kIgnoresEnforcement))
          change |= cur.part_enf_in != want.part_enf_in || cur.part_enf_out != want.part_enf_out;
      }
      if (opts_.qos.enabled && (!mgmt || d.switch_info[n].enhanced_port0)) {
        want.vl_high_limit = qos_for(target, n, p).high_limit;
        if (!(ignored & kIgnoresHighLimit)) change |= cur.vl_high_limit != want.vl_high_limit;
      }
      if (!change) continue;
      want.attrs.phys_state = 0;     // no change
      want.attrs.width_enabled = 0;  // no change
      want.attrs.speed_enabled = 0;  // no change
      const DrPath path = dr_path_to(d, n, p);
      eng_.submit(SmpRequest::set(kAttrPortInfo, p, path, encode_port_info(want)),
                  [this, &rep, &after, &target, n, p, want, pkey](Result<Smp> r) {
                    if (!r) {
                      add_problem(rep, "PortInfo Set on " + fabric::port_ref(target, n, p) + ": " +
                                           r.error().message);
                      return;
                    }
                    ++rep.portinfo_sets;
                    after[n][p] = decode_port_info(r->data);
                    note_ignored(target, n, p, pkey, want, after[n][p], rep);
                  });
    }
  }
}

uint64_t SubnetManager::port_key(const fabric::Fabric& f, NodeIndex n, PortNum p) {
  const auto& nd = f.node(n);
  return nd.is_switch() ? (nd.guid.value ^ (uint64_t(p) << 56)) : nd.ports[p].guid.value;
}

void SubnetManager::note_ignored(const fabric::Fabric& f, NodeIndex n, PortNum p, uint64_t key,
                                 const PortInfo& want, const PortInfo& got, SweepReport& rep) {
  uint8_t bits = 0;
  if (want.part_enf_in != got.part_enf_in || want.part_enf_out != got.part_enf_out)
    bits |= kIgnoresEnforcement;
  if (want.vl_high_limit != got.vl_high_limit) bits |= kIgnoresHighLimit;
  uint8_t& known = ignores_[key];
  const uint8_t fresh = bits & ~known;
  known |= bits;
  if (fresh & kIgnoresEnforcement)
    add_problem(
        rep,
        fabric::port_ref(f, n, p) + " did not keep the P_Key enforcement bits of a PortInfo Set",
        "PRT-0008");
  if (fresh & kIgnoresHighLimit)
    add_problem(rep,
                fabric::port_ref(f, n, p) + " did not keep VLHighLimit " +
                    std::to_string(want.vl_high_limit) + " (holds " +
                    std::to_string(got.vl_high_limit) + ")",
                "SM-0013");
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
    auto finish = [this, &rep, &target, n, si, top, path, pending, g]() {
      if (--*pending != 0) return;
      if (si.lft_top == top && !si.port_state_change) {
        switch_top_[g.value] = top;
        return;
      }
      SwitchInfo set = si;
      set.lft_top = top;
      set.port_state_change = true;  // writing 1 clears it
      eng_.submit(SmpRequest::set(kAttrSwitchInfo, 0, path, encode_switch_info(set)),
                  [this, &rep, &target, n, g, top](Result<Smp> r) {
                    if (r)
                      ++rep.switchinfo_sets, switch_top_[g.value] = top;
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

bool SubnetManager::steady(const Discovered& d, NodeIndex n, PortNum p) const {
  const auto& nd = d.fabric.node(n);
  if (!nd.is_switch()) return d.port_info[n][p].attrs.state == PortState::kActive;
  // A switch that rebooted comes back with another LinearFDBTop than the one we left.
  auto it = switch_top_.find(nd.guid.value);
  return it != switch_top_.end() && it->second != 0 && it->second == d.switch_info[n].lft_top;
}

SubnetManager::TableKey SubnetManager::table_key(const Discovered& d, NodeIndex n, PortNum p,
                                                 uint16_t attr, uint32_t mod) const {
  const auto& nd = d.fabric.node(n);
  return {nd.is_switch() ? nd.guid.value : nd.ports[p].guid.value, mod, attr, p};
}

const SmpData* SubnetManager::held(const Discovered& d, NodeIndex n, PortNum p, uint16_t attr,
                                   uint32_t mod) const {
  if (!steady(d, n, p)) return nullptr;
  auto it = table_cache_.find(table_key(d, n, p, attr, mod));
  return it == table_cache_.end() ? nullptr : &it->second;
}

void SubnetManager::write_pkeys(const Discovered& d, const fabric::Fabric& target, NodeIndex n,
                                PortNum p, uint32_t mod_base, size_t cap,
                                const std::vector<uint16_t>& want, SweepReport& rep) {
  const size_t blocks = (cap + 31) / 32;
  if (blocks == 0) {
    ++rep.table_failures;
    add_problem(rep, fabric::port_ref(target, n, p) + " reports no P_Key table (capacity 0)",
                "PRT-0002");
    return;
  }
  struct Job {
    std::vector<uint16_t> held;
    size_t pending;
    bool failed = false;
  };
  auto job = std::make_shared<Job>(Job{std::vector<uint16_t>(blocks * 32, 0), blocks});
  const DrPath path = dr_path_to(d, n, p);
  // Once every block is known: lay the table out and write the blocks that differ.
  auto on_block = [this, &d, &rep, &target, n, p, cap, blocks, mod_base, path, want, job](
                      size_t b, const Result<Smp>& r) {
    if (!r) {
      if (!job->failed)
        ++rep.table_failures,
            add_problem(rep, "P_KeyTable read on " + fabric::port_ref(target, n, p) + ": " +
                                 r.error().message);
      job->failed = true;
    } else {
      table_cache_[table_key(d, n, p, kAttrPkeyTable, mod_base | uint32_t(b))] = r->data;
      const PkeyBlock blk = decode_pkey_block(r->data);
      std::copy(blk.begin(), blk.end(), job->held.begin() + b * 32);
    }
    if (--job->pending != 0 || job->failed) return;
    std::vector<uint16_t> have(job->held.begin(), job->held.begin() + cap);
    qos::PkeyLayout lay = qos::layout_pkeys(want, have, cap, opts_.keep_pkey_indexes);
    pkey_tables_[n][p] = lay.table;
    if (!lay.dropped.empty())
      add_problem(rep,
                  fabric::port_ref(target, n, p) + " holds " + std::to_string(cap) + " P_Keys; " +
                      std::to_string(lay.dropped.size()) +
                      " of its partitions do not fit and are left out",
                  "PRT-0003");
    lay.table.resize(blocks * 32, 0);
    for (size_t w = 0; w < blocks; ++w) {
      if (std::equal(lay.table.begin() + w * 32, lay.table.begin() + (w + 1) * 32,
                     job->held.begin() + w * 32))
        continue;
      PkeyBlock out{};
      std::copy(lay.table.begin() + w * 32, lay.table.begin() + (w + 1) * 32, out.begin());
      const TableKey key = table_key(d, n, p, kAttrPkeyTable, mod_base | uint32_t(w));
      eng_.submit(SmpRequest::set(kAttrPkeyTable, mod_base | static_cast<uint32_t>(w), path,
                                  encode_pkey_block(out)),
                  [this, &rep, &target, n, p, key](Result<Smp> r) {
                    if (r) {
                      ++rep.pkey_blocks_written;
                      table_cache_[key] = r->data;
                      return;
                    }
                    table_cache_.erase(key);
                    ++rep.table_failures;
                    add_problem(rep, "P_KeyTable Set on " + fabric::port_ref(target, n, p) + ": " +
                                         r.error().message);
                  });
    }
  };
  for (size_t b = 0; b < blocks; ++b) {
    const uint32_t mod = mod_base | static_cast<uint32_t>(b);
    if (const SmpData* h = held(d, n, p, kAttrPkeyTable, mod)) {
      Smp known;
      known.data = *h;
      on_block(b, known);
      continue;
    }
    eng_.submit(SmpRequest::get(kAttrPkeyTable, mod, path), [&rep, b, on_block](Result<Smp> r) {
      ++rep.pkey_blocks_read;
      on_block(b, r);
    });
  }
}

// Writes `want` where the device holds something else; what it holds is read unless
// the cache knows it (see steady()).
void SubnetManager::write_table(const Discovered& d, const fabric::Fabric& target, NodeIndex n,
                                PortNum p, uint16_t attr, uint32_t mod, const SmpData& want,
                                size_t compare_bytes, SweepReport& rep,
                                std::function<void(bool)> done) {
  auto same = [compare_bytes, want](const SmpData& have) {
    return std::equal(have.begin(), have.begin() + compare_bytes, want.begin());
  };
  const TableKey key = table_key(d, n, p, attr, mod);
  const DrPath path = dr_path_to(d, n, p);
  auto write = [this, &rep, &target, n, p, attr, mod, want, key, path, done]() {
    eng_.submit(SmpRequest::set(attr, mod, path, want),
                [this, &rep, &target, n, p, attr, mod, key, done](Result<Smp> r) {
                  if (r) {
                    ++(attr == kAttrSl2Vl ? rep.sl2vl_written : rep.vlarb_written);
                    table_cache_[key] = r->data;
                    if (done) done(true);
                    return;
                  }
                  table_cache_.erase(key);
                  ++rep.table_failures;
                  add_problem(
                      rep, std::string(attr_name(attr)) + " Set (modifier 0x" +
                               [&] {
                                 char b[16];
                                 std::snprintf(b, sizeof b, "%x", mod);
                                 return std::string(b);
                               }() +
                               ") on " + fabric::port_ref(target, n, p) + ": " + r.error().message);
                  if (done) done(false);
                });
  };
  if (const SmpData* h = held(d, n, p, attr, mod)) {
    if (same(*h)) {
      if (done) done(true);
      return;
    }
    write();
    return;
  }
  eng_.submit(SmpRequest::get(attr, mod, path),
              [this, &rep, key, same, write, done, attr](Result<Smp> r) {
                ++(attr == kAttrSl2Vl ? rep.sl2vl_read : rep.vlarb_read);
                if (r) {
                  table_cache_[key] = r->data;
                  if (same(r->data)) {
                    if (done) done(true);
                    return;
                  }
                }
                write();
              });
}

void SubnetManager::program_tables(const Discovered& d, const fabric::Fabric& target,
                                   const routing::Tables& t, const qos::PartitionPlan& plan,
                                   const std::vector<std::vector<PortInfo>>& after,
                                   SweepReport& rep) {
  // P_Keys: every end port; switch ports facing end ports hold their peer's keys.
  pkey_tables_.assign(target.size(), {});
  for (NodeIndex n = 0; n < target.size(); ++n) pkey_tables_[n].resize(target.node(n).ports.size());
  size_t cannot_enforce = 0;
  for (NodeIndex n = 0; n < target.size(); ++n)
    if (target.node(n).is_switch() && !d.switch_info[n].inbound_enforce_cap &&
        !d.switch_info[n].outbound_enforce_cap)
      ++cannot_enforce;
  if (cannot_enforce && !opts_.no_partition_enforcement && opts_.part_enforce != "off")
    WEFT_LOG(Info, "PRT-0007") << cannot_enforce
                               << " switches report no P_Key enforcement capability (SwitchInfo): "
                                  "partitions are enforced by the end ports' tables only";
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 0; p <= nd.num_ports; ++p) {
      if (!d.port_read[n][p]) continue;
      if (!nd.is_switch() || p == 0) {
        if (!plan.pkeys[n][p].empty())
          write_pkeys(d, target, n, p, 0, nd.partition_cap, plan.pkeys[n][p], rep);
        continue;
      }
      const auto& port = nd.ports[p];
      if (!port.linked() || target.node(port.peer).is_switch()) continue;
      const auto& keys = plan.pkeys[port.peer][port.peer_port];
      if (enforces(d, target, plan, n, p)) {
        ++rep.ports_enforcing;
        write_pkeys(d, target, n, p, uint32_t(p) << 16, d.switch_info[n].partition_enforce_cap,
                    keys, rep);
      } else if (!opts_.no_partition_enforcement && opts_.part_enforce != "off" &&
                 keys.size() > d.switch_info[n].partition_enforce_cap &&
                 d.switch_info[n].partition_enforce_cap > 0) {
        add_problem(rep,
                    fabric::port_ref(target, n, p) + " faces a port of " +
                        std::to_string(keys.size()) + " P_Keys but enforces at most " +
                        std::to_string(d.switch_info[n].partition_enforce_cap) +
                        ": P_Keys are not filtered there",
                    "PRT-0004");
      }
    }
  }

  // SL2VL: under QoS, or whenever the routing engine layers paths on VLs.
  const uint8_t layers = t.vls;
  auto check_vls = [&](NodeIndex n, PortNum p, uint8_t oper) {
    if (layers > qos::data_vls(oper))
      add_problem(rep,
                  fabric::port_ref(target, n, p) + " operates " +
                      std::to_string(qos::data_vls(oper)) + " data VLs but the routes need " +
                      std::to_string(layers) +
                      ": layers share VLs there and deadlock freedom is lost",
                  "SM-0012");
  };
  if (opts_.qos.enabled || layers > 1) {
    for (NodeIndex n = 0; n < target.size(); ++n) {
      const auto& nd = target.node(n);
      if (!nd.is_switch()) {
        for (PortNum p = 1; p <= nd.num_ports; ++p) {
          if (!nd.ports[p].linked() || !d.port_read[n][p]) continue;
          if (!(d.port_info[n][p].attrs.capability_mask & kCapSlMap)) continue;
          const uint8_t oper = after[n][p].attrs.oper_vls;
          check_vls(n, p, oper);
          write_table(d, target, n, p, kAttrSl2Vl, 0,
                      encode_sl2vl(qos::port_sl2vl(qos_for(target, n, p), oper, layers)), 8, rep);
        }
        continue;
      }
      if (!d.port_read[n][0] || !(d.port_info[n][0].attrs.capability_mask & kCapSlMap)) continue;
      for (PortNum out = d.switch_info[n].enhanced_port0 ? 0 : 1; out <= nd.num_ports; ++out) {
        if (out != 0 && (!nd.ports[out].linked() || !d.port_read[n][out])) continue;
        const uint8_t oper = after[n][out].attrs.oper_vls;
        if (out != 0) check_vls(n, out, oper);
        const SmpData want = encode_sl2vl(qos::port_sl2vl(qos_for(target, n, out), oper, layers));
        // Every input port maps alike toward one output port: the cache keeps one table
        // per output port, recorded once every input port is known to hold it.
        const uint32_t kAllIn = 0xffffffffu;
        if (const SmpData* h = held(d, n, out, kAttrSl2Vl, kAllIn);
            h && std::equal(h->begin(), h->begin() + 8, want.begin()))
          continue;
        std::vector<PortNum> ins;
        for (PortNum in = 0; in <= nd.num_ports; ++in)
          if (in == 0 || nd.ports[in].linked()) ins.push_back(in);
        struct Tally {
          size_t pending;
          bool ok = true;
        };
        auto tally = std::make_shared<Tally>(Tally{ins.size()});
        const TableKey all_key = table_key(d, n, out, kAttrSl2Vl, kAllIn);
        for (PortNum in : ins)
          write_table(d, target, n, out, kAttrSl2Vl, uint32_t(in) << 8 | out, want, 8, rep,
                      [this, tally, all_key, want](bool ok) {
                        tally->ok &= ok;
                        if (--tally->pending) return;
                        if (tally->ok)
                          table_cache_[all_key] = want;
                        else
                          table_cache_.erase(all_key);
                      });
      }
    }
  }

  // VL arbitration: under QoS only.
  if (!opts_.qos.enabled) return;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 0; p <= nd.num_ports; ++p) {
      if (!d.port_read[n][p]) continue;
      if (p == 0 && !(nd.is_switch() && d.switch_info[n].enhanced_port0)) continue;
      if (p != 0 && !nd.ports[p].linked()) continue;
      const PortInfo& pi = d.port_info[n][p];
      const auto& cfg = qos_for(target, n, p);
      const uint8_t oper = after[n][p].attrs.oper_vls;
      const uint32_t port_mod = nd.is_switch() ? p : 0;
      for (auto [list, cap, first_block] :
           {std::tuple{&cfg.low, size_t(pi.vl_arb_low_cap), 1u},
            std::tuple{&cfg.high, size_t(pi.vl_arb_high_cap), 3u}}) {
        for (size_t bi = 0; bi < 2 && bi * 32 < cap; ++bi) {
          const size_t len = std::min<size_t>(32, cap - bi * 32);
          write_table(d, target, n, p, kAttrVlArb, (first_block + uint32_t(bi)) << 16 | port_mod,
                      encode_vlarb(qos::vlarb_block(*list, bi, cap, oper)), 2 * len, rep);
        }
      }
    }
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
