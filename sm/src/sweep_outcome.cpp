// A heavy sweep's outcome: the model, the snapshot, and what the snapshot changed.
#include "sweep_outcome.hpp"

#include <algorithm>
#include <vector>

#include "program/ar_programmer.hpp"
#include "program/device_tables.hpp"
#include "program/lft_programmer.hpp"

namespace weft::sm {

using fabric::NodeIndex;

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t mix(uint64_t h, const std::string& s) {
  return mix(h, std::hash<std::string>()(s));
}

using LinkKey = std::tuple<uint64_t, PortNum, uint64_t, PortNum>;

// SubnetSnapshot::link_keys of a fabric: the radix-56 tree's 131,711 links in a tree of
// nodes cost tens of milliseconds to build, so each snapshot's is built once.
std::vector<LinkKey> link_keys(const fabric::Fabric& fab) {
  std::vector<LinkKey> out;
  const auto links = fab.links();
  out.reserve(links.size());
  for (const auto& l : links) {
    LinkKey a{fab.node(l.a).guid.value, l.pa, fab.node(l.b).guid.value, l.pb};
    LinkKey b{std::get<2>(a), std::get<3>(a), std::get<0>(a), std::get<1>(a)};
    out.push_back(std::min(a, b));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::shared_ptr<SubnetSnapshot> make_snapshot(SweepRun& run, Programmers& prog, const SmOptions& o,
                                              Guid sm_guid, Lid sm_lid) {
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
    si.lifetime = o.packet_life_time;  // written with the top where it differed
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
      if (!prog.lfts().steady(nd.guid, d.switch_info[n].lft_top)) run.reset.insert(nd.guid);
      snap->end_ports[nd.ports[0].guid.value] = {n, 0};
    } else {
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        if (nd.ports[p].linked()) snap->end_ports[nd.ports[p].guid.value] = {n, p};
    }
  }
  if (!any_switch) snap->mft_cap = 0;
  snap->fabric = std::move(target);
  snap->link_keys = link_keys(snap->fabric);
  snap->ends = EndPortIndex::of(snap->fabric);
  snap->tables = std::move(run.tables);
  snap->ar = prog.ar().view(snap->fabric);
  if (o.qos.enabled && o.qos_policy)
    snap->qos_policy =
        std::make_shared<const qos::PolicyMatcher>(*o.qos_policy, snap->fabric, run.plan, sm_guid);
  snap->pkey_tables = prog.tables().take_pkey_tables();
  snap->vlarb_caps.resize(d.port_info.size());
  for (NodeIndex n = 0; n < d.port_info.size(); ++n)
    for (const auto& pi : d.port_info[n])
      snap->vlarb_caps[n].push_back({pi.vl_arb_low_cap, pi.vl_arb_high_cap});
  snap->sm_lid = sm_lid;
  snap->sm_guid = sm_guid;
  return snap;
}

// ---- what changed, for the event stream and the version counters --------------------

SnapshotDiff diff_snapshots(const SubnetSnapshot* before, const SubnetSnapshot& after) {
  SnapshotDiff out;
  const fabric::Fabric& f = after.fabric;
  uint64_t nodes = 0, ports = 0, links = 0, parts = 0;
  // Each snapshot's links as make_snapshot keyed them (built here for one made otherwise).
  auto link_set = [](const SubnetSnapshot& snap,
                     std::vector<LinkKey>& built) -> const std::vector<LinkKey>& {
    if (!snap.link_keys.empty() || snap.fabric.size() == 0) return snap.link_keys;
    return built = link_keys(snap.fabric);
  };
  std::vector<LinkKey> built_now, built_old;
  auto holds = [](const std::vector<LinkKey>& set, const LinkKey& l) {
    return std::binary_search(set.begin(), set.end(), l);
  };
  // Each node, port and P_Key table is hashed on its own and the hashes summed, so a
  // signature does not depend on the order discovery found the nodes in (a link cut
  // changes it). A switch's external ports hold no LID of their own (what they report
  // is port 0's, or nothing before the switch has one): only LID-holding ports sign one.
  for (const auto& n : f.nodes()) {
    nodes += mix(mix(mix(0, n.guid.value), n.description), uint64_t(n.type));
    for (const auto& p : n.ports) {
      const bool holds_lid = !n.is_switch() || p.num == 0;
      ports += mix(mix(mix(mix(0, n.guid.value), p.guid.value ^ p.num), uint64_t(p.attrs.state)),
                   uint64_t(holds_lid ? p.attrs.lid.value : 0) << 8 | p.attrs.width_active);
    }
  }
  const std::vector<LinkKey>& now_links = link_set(after, built_now);
  for (const auto& l : now_links)
    links = mix(mix(links, std::get<0>(l) ^ std::get<1>(l)), std::get<2>(l) ^ std::get<3>(l));
  for (const auto& pt : after.partitions.partitions)
    parts = mix(mix(parts, pt.pkey), pt.full_members << 20 | pt.limited_members);
  for (NodeIndex n = 0; n < after.partitions.pkeys.size() && n < f.size(); ++n)
    for (size_t p = 0; p < after.partitions.pkeys[n].size(); ++p) {
      uint64_t h = mix(mix(0, f.node(n).guid.value), p);
      for (uint16_t k : after.partitions.pkeys[n][p]) h = mix(h, k);
      parts += h;
    }
  out.signatures = {nodes, ports, links, parts};
  if (!before) return out;
  // Links, by their two ends' GUIDs and ports; at most a bounded number of events each
  // way, then a count (a switch reboot takes dozens of links at once).
  constexpr size_t kMaxEach = 256;
  const std::vector<LinkKey>& old_links = link_set(*before, built_old);
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
  auto& changed_ends = out.changed_ends;
  auto ends = [&](const fabric::Fabric& fab, const LinkKey& l) {
    changed_ends.emplace_back(std::get<0>(l), std::get<1>(l),
                              name(fab, std::get<0>(l), std::get<1>(l)));
    changed_ends.emplace_back(std::get<2>(l), std::get<3>(l),
                              name(fab, std::get<2>(l), std::get<3>(l)));
  };
  for (const auto& l : old_links)
    if (!holds(now_links, l)) {
      ends(before->fabric, l);
      if (++down <= kMaxEach)
        out.link_events.push_back({"link_down", link_json(before->fabric, l)});
    }
  for (const auto& l : now_links)
    if (!holds(old_links, l)) {
      ends(f, l);
      if (++up <= kMaxEach) out.link_events.push_back({"link_up", link_json(f, l)});
    }
  if (down > kMaxEach || up > kMaxEach)
    out.port_events.push_back({"links_changed", {{"down", down}, {"up", up}}});
  size_t added = 0, removed = 0, changed = 0;
  for (const auto& [guid, np] : after.end_ports) {
    auto it = before->end_ports.find(guid);
    const auto& a = f.node(np.first).ports[np.second].attrs;
    if (it == before->end_ports.end()) {
      if (++added <= kMaxEach)
        out.port_events.push_back({"port_added",
                                   {{"guid", hex_guid(guid)},
                                    {"port", np.second},
                                    {"name", fabric::port_ref(f, np.first, np.second)},
                                    {"lid", a.lid.value}}});
      continue;
    }
    const auto& b = before->fabric.node(it->second.first).ports[it->second.second].attrs;
    if ((a.state != b.state || a.lid != b.lid) && ++changed <= kMaxEach)
      out.port_events.push_back({"port_state",
                                 {{"guid", hex_guid(guid)},
                                  {"port", np.second},
                                  {"name", fabric::port_ref(f, np.first, np.second)},
                                  {"state", fabric::port_state_name(a.state)},
                                  {"was", fabric::port_state_name(b.state)},
                                  {"lid", a.lid.value}}});
  }
  for (const auto& [guid, np] : before->end_ports)
    if (!after.end_ports.count(guid) && ++removed <= kMaxEach)
      out.port_events.push_back(
          {"port_removed",
           {{"guid", hex_guid(guid)},
            {"port", np.second},
            {"name", fabric::port_ref(before->fabric, np.first, np.second)}}});
  return out;
}

}  // namespace weft::sm
