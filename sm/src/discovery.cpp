#include "weft/sm/discovery.hpp"

#include <algorithm>
#include <deque>

#include "weft/log.hpp"

namespace weft::sm {

using fabric::Fabric;
using fabric::NodeIndex;
using fabric::NodeType;
using fabric::PortState;

namespace {

struct Raw {
  Fabric f;
  std::vector<mad::DrPath> paths;
  std::vector<std::vector<mad::PortInfo>> pi;
  std::vector<std::vector<bool>> pi_read;
  std::vector<mad::SwitchInfo> si;
  std::vector<std::string> problems;
  size_t unexplored = 0;
  std::vector<NodeIndex> unexplored_at;  // the nodes those links leave from
  // Ports whose PortInfo read failed where what lies beyond would have been explored.
  std::vector<std::pair<NodeIndex, PortNum>> unread;
  NodeIndex local = fabric::kNoNode;
  PortNum local_port = 0;
};

class Walker {
 public:
  Walker(mad::MadEngine& e, const DiscoveryOptions& o) : eng_(e), opts_(o) {}

  void start() {
    eng_.submit(mad::SmpRequest::get(mad::kAttrNodeInfo, 0, mad::DrPath{}),
                [this](Result<mad::Smp> r) {
                  if (!r) {
                    local_error_ = r.error();
                    return;
                  }
                  auto ni = mad::decode_node_info(r->data);
                  if (!ni) {
                    local_error_ = ni.error();
                    return;
                  }
                  auto idx = add(*ni, mad::DrPath{});
                  if (!idx) {
                    local_error_ = idx.error();
                    return;
                  }
                  raw_.local = *idx;
                  raw_.local_port = ni->local_port;
                  explore(*idx, ni->local_port);
                });
  }

  // An update of a model this walker did not read: `prev` as the devices were left,
  // and the switches that reported a change. Each one's SwitchInfo and every PortInfo
  // are read again through its known route. A port now down loses its link; a port
  // up but not ACTIVE (it trained since the last sweep, which left every linked port
  // ACTIVE) is probed again across, and whatever is found there is explored as in a
  // full discovery; an ACTIVE port keeps its link. Any read that fails makes the
  // update fail (take()), for the caller to discover in full.
  void update(const Discovered& prev, const std::vector<NodeIndex>& dirty) {
    updating_ = true;
    raw_.f = prev.fabric;
    raw_.paths = prev.paths;
    raw_.pi = prev.port_info;
    raw_.pi_read = prev.port_read;
    raw_.si = prev.switch_info;
    raw_.local = prev.local_node;
    raw_.local_port = prev.local_port;
    // The link that changed joins two of the dirty switches (both ends report it), and a
    // route across it may be dead: reach them by routes that avoid every link between
    // two of them where there is one.
    std::vector<uint8_t> is_dirty(raw_.f.size(), 0);
    for (NodeIndex n : dirty)
      if (n < raw_.f.size()) is_dirty[n] = 1;
    std::vector<uint8_t> seen(raw_.f.size(), 0);
    std::deque<NodeIndex> q{raw_.local};
    seen[raw_.local] = 1;
    std::vector<mad::DrPath> around = raw_.paths;
    around[raw_.local] = mad::DrPath{};
    while (!q.empty()) {
      const NodeIndex n = q.front();
      q.pop_front();
      const auto& nd = raw_.f.node(n);
      if (!nd.is_switch() && n != raw_.local) continue;
      for (const auto& port : nd.ports) {
        if (port.num == 0 || !port.linked() || seen[port.peer]) continue;
        if (!nd.is_switch() && port.num != raw_.local_port) continue;
        if (is_dirty[n] && is_dirty[port.peer]) continue;
        if (around[n].hops >= opts_.max_hops) continue;
        seen[port.peer] = 1;
        around[port.peer] = around[n].extended(port.num);
        q.push_back(port.peer);
      }
    }
    for (NodeIndex n = 0; n < raw_.f.size(); ++n)
      if (seen[n]) raw_.paths[n] = around[n];
    for (NodeIndex n : dirty) {
      if (n >= raw_.f.size() || !raw_.f.node(n).is_switch()) continue;
      const mad::DrPath path = raw_.paths[n];
      eng_.submit(mad::SmpRequest::get(mad::kAttrSwitchInfo, 0, path),
                  [this, n](Result<mad::Smp> r) {
                    if (!r)
                      return update_failed("SwitchInfo of " + raw_.f.node(n).guid.str(), r.error());
                    raw_.si[n] = mad::decode_switch_info(r->data);
                    raw_.f.node(n).sw.lft_top = raw_.si[n].lft_top;
                  });
      for (PortNum p = 0; p <= raw_.f.node(n).num_ports; ++p)
        eng_.submit(mad::SmpRequest::get(mad::kAttrPortInfo, p, path), [this, n, p,
                                                                        path](Result<mad::Smp> r) {
          if (!r) return update_failed("PortInfo " + fabric::port_ref(raw_.f, n, p), r.error());
          mad::PortInfo pi = mad::decode_port_info(r->data);
          auto& port = raw_.f.node(n).ports[p];
          raw_.pi[n][p] = pi;
          raw_.pi_read[n][p] = true;
          port.attrs = pi.attrs;
          if (p == 0) return;
          const bool up = pi.attrs.state != PortState::kDown && pi.attrs.phys_state == 5;
          if (up && pi.attrs.state == PortState::kActive && port.linked()) return;
          if (port.linked()) {
            ++update_links_lost_;
            raw_.f.disconnect(n, p);
          }
          if (!up) return;
          if (path.hops >= opts_.max_hops)
            return update_failed("port " + fabric::port_ref(raw_.f, n, p),
                                 Error{Errc::kUnreachable, "beyond the directed-route hop limit"});
          probe(n, p, path.extended(p));
        });
    }
  }
  size_t update_links_lost() const { return update_links_lost_; }
  size_t update_links_found() const { return update_links_found_; }

  // Once the engine is idle (every completion has run).
  Result<Raw> take(const Result<void>& pumped) {
    if (!pumped) return std::unexpected(pumped.error());
    if (local_error_)
      return fail(local_error_->code, "cannot read the SM's own node: " + local_error_->message);
    if (update_error_) return std::unexpected(*update_error_);
    return std::move(raw_);
  }

 private:
  void problem(std::string s) {
    if (updating_) {
      if (!update_error_) update_error_ = Error{Errc::kBadReply, std::move(s)};
      return;
    }
    WEFT_LOG(Warn, "DISC-0001") << s;
    raw_.problems.push_back(std::move(s));
  }
  void update_failed(const std::string& what, const Error& why) {
    if (!update_error_) update_error_ = Error{why.code, what + ": " + why.message};
  }

  Result<NodeIndex> add(const mad::NodeInfo& ni, const mad::DrPath& path) {
    fabric::Node n;
    n.type = ni.type;
    n.guid = ni.node_guid;
    n.system_guid = ni.system_guid;
    n.num_ports = ni.num_ports;
    n.vendor_id = ni.vendor_id;
    n.device_id = ni.device_id;
    n.revision = ni.revision;
    n.partition_cap = ni.partition_cap;
    auto idx = raw_.f.add_node(std::move(n));
    if (!idx) return idx;
    auto& nd = raw_.f.node(*idx);
    if (nd.is_switch())
      for (auto& p : nd.ports) p.guid = ni.port_guid;
    else
      nd.ports[ni.local_port].guid = ni.port_guid;
    raw_.paths.push_back(path);
    raw_.pi.emplace_back(nd.ports.size());
    raw_.pi_read.emplace_back(nd.ports.size(), false);
    raw_.si.emplace_back();
    return idx;
  }

  // Reads what a newly found node holds; `entry` is the port we reached it through.
  void explore(NodeIndex n, PortNum entry) {
    const mad::DrPath path = raw_.paths[n];
    eng_.submit(mad::SmpRequest::get(mad::kAttrNodeDesc, 0, path), [this, n](Result<mad::Smp> r) {
      if (r) {
        raw_.f.node(n).description = mad::decode_node_desc(r->data);
        return;
      }
      problem("NodeDescription of " + raw_.f.node(n).guid.str() + ": " + r.error().message);
    });
    const auto& nd = raw_.f.node(n);
    if (nd.is_switch()) {
      eng_.submit(
          mad::SmpRequest::get(mad::kAttrSwitchInfo, 0, path), [this, n](Result<mad::Smp> r) {
            if (r) {
              raw_.si[n] = mad::decode_switch_info(r->data);
              auto& sw = raw_.f.node(n).sw;
              sw.lft_cap = raw_.si[n].lft_cap;
              sw.mft_cap = raw_.si[n].mft_cap;
              sw.lft_top = raw_.si[n].lft_top;
              sw.lifetime = raw_.si[n].lifetime;
              sw.enhanced_port0 = raw_.si[n].enhanced_port0;
            } else {
              problem("SwitchInfo of " + raw_.f.node(n).guid.str() + ": " + r.error().message);
            }
          });
      for (PortNum p = 0; p <= nd.num_ports; ++p) read_port(n, p, path, true);
    } else {
      read_port(n, entry, path, n == raw_.local);
    }
  }

  void read_port(NodeIndex n, PortNum p, const mad::DrPath& path, bool probe_beyond) {
    eng_.submit(mad::SmpRequest::get(mad::kAttrPortInfo, p, path),
                [this, n, p, path, probe_beyond](Result<mad::Smp> r) {
                  auto& nd = raw_.f.node(n);
                  if (!r) {
                    if (probe_beyond && p != 0) raw_.unread.push_back({n, p});
                    problem("PortInfo " + fabric::port_ref(raw_.f, n, p) + " via DR " + path.str() +
                            ": " + r.error().message);
                    return;
                  }
                  mad::PortInfo pi = mad::decode_port_info(r->data);
                  raw_.pi[n][p] = pi;
                  raw_.pi_read[n][p] = true;
                  nd.ports[p].attrs = pi.attrs;
                  if (!probe_beyond || p == 0) return;
                  if (pi.attrs.state == PortState::kDown || pi.attrs.phys_state != 5) return;
                  if (nd.ports[p].linked()) return;  // found from the other side already
                  if (path.hops >= opts_.max_hops) {
                    problem("port " + fabric::port_ref(raw_.f, n, p) + " is beyond " +
                            std::to_string(opts_.max_hops) + " directed-route hops; not explored");
                    return;
                  }
                  probe(n, p, path.extended(p));
                });
  }

  void probe(NodeIndex from, PortNum from_port, const mad::DrPath& path) {
    eng_.submit(mad::SmpRequest::get(mad::kAttrNodeInfo, 0, path), [this, from, from_port,
                                                                    path](Result<mad::Smp> r) {
      if (!r) {
        ++raw_.unexplored;
        raw_.unexplored_at.push_back(from);
        problem("NodeInfo beyond " + fabric::port_ref(raw_.f, from, from_port) + ": " +
                r.error().message);
        return;
      }
      auto ni = mad::decode_node_info(r->data);
      if (!ni) {
        ++raw_.unexplored;
        raw_.unexplored_at.push_back(from);
        problem("NodeInfo beyond " + fabric::port_ref(raw_.f, from, from_port) + ": " +
                ni.error().message);
        return;
      }
      if (ni->local_port == 0 && ni->type != NodeType::kSwitch) {
        problem("NodeInfo beyond " + fabric::port_ref(raw_.f, from, from_port) +
                ": a CA reports LocalPortNum 0");
        return;
      }
      NodeIndex to;
      bool fresh = false;
      if (auto known = raw_.f.find(ni->node_guid)) {
        to = *known;
        const auto& nd = raw_.f.node(to);
        if (nd.type != ni->type || nd.num_ports != ni->num_ports) {
          problem("duplicate GUID " + ni->node_guid.str() + ": seen as " +
                  fabric::node_type_name(nd.type) + " with " + std::to_string(nd.num_ports) +
                  " ports and beyond " + fabric::port_ref(raw_.f, from, from_port) + " as " +
                  fabric::node_type_name(ni->type) + " with " + std::to_string(ni->num_ports) +
                  "; link ignored");
          return;
        }
      } else {
        auto idx = add(*ni, path);
        if (!idx) {
          problem(idx.error().message);
          return;
        }
        to = *idx;
        fresh = true;
      }
      PortNum q = ni->local_port;
      if (q == 0) {
        problem("switch " + ni->node_guid.str() + " reports LocalPortNum 0 on a link");
        return;
      }
      if (updating_) {
        // The far port can hold only this cable: a link the model still gives it is
        // gone (or is this one, found first from the other side).
        const auto& far = raw_.f.node(to).ports[q];
        if (far.linked() && (far.peer != from || far.peer_port != from_port)) {
          ++update_links_lost_;
          raw_.f.disconnect(to, q);
        }
        if (!raw_.f.node(from).ports[from_port].linked()) {
          if (auto c = raw_.f.connect(from, from_port, to, q); !c)
            return problem("inconsistent link: " + c.error().message);
          ++update_links_found_;
        }
        if (fresh) return explore(to, q);
        if (!raw_.f.node(to).is_switch()) raw_.f.node(to).ports[q].guid = ni->port_guid;
        return read_port(to, q, path, false);
      }
      auto c = raw_.f.connect(from, from_port, to, q);
      if (!c) {
        problem("inconsistent link: " + c.error().message);
        return;
      }
      auto& nd = raw_.f.node(to);
      if (!nd.is_switch()) nd.ports[q].guid = ni->port_guid;
      if (fresh)
        explore(to, q);
      else if (!nd.is_switch() && !raw_.pi_read[to][q])
        read_port(to, q, path, false);
    });
  }

  mad::MadEngine& eng_;
  DiscoveryOptions opts_;
  Raw raw_;
  std::optional<Error> local_error_;
  bool updating_ = false;
  std::optional<Error> update_error_;
  size_t update_links_lost_ = 0, update_links_found_ = 0;
};

// Rebuilds the model in canonical order (BFS from the SM, ports ascending).
Discovered canonicalise(Raw&& raw) {
  const Fabric& f = raw.f;
  std::vector<NodeIndex> order;
  std::vector<NodeIndex> new_index(f.size(), fabric::kNoNode);
  std::vector<mad::DrPath> path(f.size());
  std::deque<NodeIndex> q;
  auto visit = [&](NodeIndex n, const mad::DrPath& p) {
    new_index[n] = static_cast<NodeIndex>(order.size());
    order.push_back(n);
    path[n] = p;
    q.push_back(n);
  };
  visit(raw.local, mad::DrPath{});
  while (!q.empty()) {
    NodeIndex n = q.front();
    q.pop_front();
    const auto& nd = f.node(n);
    const bool forwards = nd.is_switch() || n == raw.local;
    if (!forwards) continue;
    for (const auto& p : nd.ports) {
      if (p.num == 0 || !p.linked()) continue;
      if (!nd.is_switch() && p.num != raw.local_port) continue;
      if (new_index[p.peer] == fabric::kNoNode) visit(p.peer, path[n].extended(p.num));
    }
  }
  Discovered d;
  d.problems = std::move(raw.problems);
  d.unexplored = raw.unexplored;
  // An unread port whose link was found from its other end hid nothing.
  for (auto [n, p] : raw.unread)
    if (!f.node(n).ports[p].linked()) {
      ++d.failed_reads;
      if (new_index[n] != fabric::kNoNode) d.incomplete.push_back(new_index[n]);
    }
  for (NodeIndex n : raw.unexplored_at)
    if (new_index[n] != fabric::kNoNode) d.incomplete.push_back(new_index[n]);
  std::sort(d.incomplete.begin(), d.incomplete.end());
  d.incomplete.erase(std::unique(d.incomplete.begin(), d.incomplete.end()), d.incomplete.end());
  // A walk whose model is already in this order, every node reached (an update that
  // found nothing new, as after a link cut; most full discoveries too): its model is
  // taken as it is, not rebuilt (on the largest fabric 47,824 nodes, their ports and
  // GUID index, and 131,711 links: 50 ms of the loop's time in each such update).
  bool in_order = order.size() == f.size() && raw.pi.size() == f.size() &&
                  raw.pi_read.size() == f.size() && raw.si.size() == f.size();
  for (size_t i = 0; in_order && i < order.size(); ++i) in_order = order[i] == i;
  if (in_order) {
    d.fabric = std::move(raw.f);
    d.fabric.vports().clear();  // (found again later in the sweep, as by a rebuild)
    d.paths = std::move(path);
    d.port_info = std::move(raw.pi);
    d.port_read = std::move(raw.pi_read);
    d.switch_info = std::move(raw.si);
    d.local_node = 0;
    d.local_port = raw.local_port;
    return d;
  }
  // The links first: the nodes are then moved out of the raw model, each whole (every
  // update rebuilds the largest fabric's 47,824 nodes and 355,000 ports).
  const auto links = f.links();
  d.fabric.reserve(order.size());
  d.paths.reserve(order.size());
  d.port_info.reserve(order.size());
  d.port_read.reserve(order.size());
  d.switch_info.reserve(order.size());
  for (NodeIndex old : order) {
    fabric::Node node = std::move(raw.f.node(old));
    std::vector<fabric::Port> ports = std::move(node.ports);
    node.ports.clear();
    auto idx = d.fabric.add_node(std::move(node));
    auto& nn = d.fabric.node(*idx);
    for (size_t p = 0; p < nn.ports.size() && p < ports.size(); ++p) {
      nn.ports[p].guid = ports[p].guid;
      nn.ports[p].attrs = ports[p].attrs;
    }
    d.paths.push_back(path[old]);
    d.port_info.push_back(std::move(raw.pi[old]));
    d.port_read.push_back(std::move(raw.pi_read[old]));
    d.switch_info.push_back(raw.si[old]);
  }
  for (const auto& l : links) {
    if (new_index[l.a] == fabric::kNoNode || new_index[l.b] == fabric::kNoNode) continue;
    (void)d.fabric.connect(new_index[l.a], l.pa, new_index[l.b], l.pb);
  }
  d.local_node = 0;
  d.local_port = raw.local_port;
  return d;
}

}  // namespace

mad::DrPath dr_path_to(const Discovered& d, NodeIndex node, PortNum port) {
  const auto& nd = d.fabric.node(node);
  if (nd.is_switch()) return d.paths[node];
  // The SM's own port is reached with an empty path; any other CA port (including a
  // second port of the SM's own HCA) only through the switch it is cabled to.
  if (node == d.local_node && port == d.local_port) return mad::DrPath{};
  const auto& p = nd.ports[port];
  if (!p.linked() || !d.fabric.node(p.peer).is_switch()) return d.paths[node];
  return d.paths[p.peer].extended(p.peer_port);
}

struct Discovery::Walk {
  Walker walker;
};

Discovery::Discovery(mad::MadEngine& eng, const DiscoveryOptions& opts)
    : eng_(eng), walk_(std::make_unique<Walk>(Walk{Walker(eng, opts)})) {}

Discovery::~Discovery() = default;

void Discovery::start() {
  sent0_ = eng_.stats().sent;
  walk_->walker.start();
}

void Discovery::start_update(const Discovered& prev, const std::vector<NodeIndex>& dirty) {
  sent0_ = eng_.stats().sent;
  reread_ = dirty.size();
  walk_->walker.update(prev, dirty);
}

Result<Discovered> Discovery::finish(const Result<void>& pumped) {
  auto raw = walk_->walker.take(pumped);
  if (!raw) return std::unexpected(raw.error());
  Discovered d = canonicalise(std::move(*raw));
  d.smps = eng_.stats().sent - sent0_;
  if (reread_) {
    d.update = true;
    d.reread = *reread_;
    d.links_lost = walk_->walker.update_links_lost();
    d.links_found = walk_->walker.update_links_found();
  }
  return d;
}

Result<Discovered> discover(mad::MadEngine& eng, const DiscoveryOptions& opts) {
  Discovery disc(eng, opts);
  disc.start();
  return disc.finish(eng.run());
}

void route_paths_over(Discovered& d, const fabric::Fabric& f) {
  std::vector<uint8_t> seen(f.size(), 0);
  std::deque<fabric::NodeIndex> todo;
  const auto& local = f.node(d.local_node);
  if (local.is_switch()) {
    d.paths[d.local_node] = mad::DrPath{};
    seen[d.local_node] = 1;
    todo.push_back(d.local_node);
  } else if (local.ports[d.local_port].linked()) {
    const fabric::NodeIndex sw = local.ports[d.local_port].peer;
    d.paths[sw] = mad::DrPath{}.extended(d.local_port);
    seen[sw] = 1;
    todo.push_back(sw);
  }
  while (!todo.empty()) {
    const fabric::NodeIndex n = todo.front();
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

}  // namespace weft::sm
