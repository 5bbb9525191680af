#include "weft/simulator/whatif.hpp"

#include <algorithm>
#include <charconv>
#include <deque>

#include "weft/splitmix.hpp"

namespace weft::simulator {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {

Result<NodeIndex> find_node(const Fabric& f, const std::string& what) {
  if (auto n = f.find_by_name(what)) return *n;
  if (what.starts_with("0x") || what.starts_with("0X")) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(what.data() + 2, what.data() + what.size(), v, 16);
    if (ec == std::errc() && p == what.data() + what.size())
      if (auto n = f.find(Guid{v})) return *n;
  }
  return fail(Errc::kInvalidInput, "no node named \"" + what + "\" in the fabric");
}

std::string link_text(const Fabric& f, NodeIndex n, PortNum p) {
  const auto& port = f.node(n).ports[p];
  return fabric::port_ref(f, n, p) + " -- " + fabric::port_ref(f, port.peer, port.peer_port);
}

// Nodes connected to the largest part (by node count; ties: the part with the lowest index).
std::vector<bool> largest_part(const Fabric& f) {
  std::vector<uint32_t> part(f.size(), ~0u);
  std::vector<size_t> sizes;
  for (NodeIndex s = 0; s < f.size(); ++s) {
    if (part[s] != ~0u) continue;
    const auto id = static_cast<uint32_t>(sizes.size());
    sizes.push_back(0);
    std::deque<NodeIndex> q{s};
    part[s] = id;
    while (!q.empty()) {
      const NodeIndex u = q.front();
      q.pop_front();
      ++sizes[id];
      for (const auto& p : f.node(u).ports)
        if (p.num && p.linked() && part[p.peer] == ~0u) part[p.peer] = id, q.push_back(p.peer);
    }
  }
  const auto best =
      static_cast<uint32_t>(std::max_element(sizes.begin(), sizes.end()) - sizes.begin());
  std::vector<bool> keep(f.size());
  for (NodeIndex n = 0; n < f.size(); ++n) keep[n] = part[n] == best;
  return keep;
}

}  // namespace

Result<FailureReport> apply_failures(Fabric& f, const Failures& fl) {
  FailureReport rep;
  for (const auto& spec : fl.links) {
    const auto colon = spec.rfind(':');
    if (colon == std::string::npos)
      return fail(Errc::kInvalidInput, "failed link \"" + spec + "\": expected NAME:PORT");
    auto n = find_node(f, spec.substr(0, colon));
    if (!n) return fail(Errc::kInvalidInput, "failed link \"" + spec + "\": " + n.error().message);
    unsigned port = 0;
    const std::string ps = spec.substr(colon + 1);
    auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
    if (ec != std::errc() || p != ps.data() + ps.size() || port == 0 || port > f.node(*n).num_ports)
      return fail(Errc::kInvalidInput, "failed link \"" + spec + "\": port must be 1.." +
                                           std::to_string(f.node(*n).num_ports));
    if (!f.node(*n).ports[port].linked())
      return fail(Errc::kInvalidInput, "failed link \"" + spec + "\": " +
                                           fabric::port_ref(f, *n, static_cast<PortNum>(port)) +
                                           " has no link");
    rep.failed.push_back("link " + link_text(f, *n, static_cast<PortNum>(port)));
    f.disconnect(*n, static_cast<PortNum>(port));
  }
  for (const auto& spec : fl.switches) {
    auto n = find_node(f, spec);
    if (!n) return fail(Errc::kInvalidInput, "failed switch: " + n.error().message);
    if (!f.node(*n).is_switch())
      return fail(Errc::kInvalidInput, "failed switch \"" + spec + "\" is not a switch");
    rep.failed.push_back("switch " + fabric::port_ref(f, *n, 0));
    for (const auto& p : f.node(*n).ports)
      if (p.num && p.linked()) f.disconnect(*n, p.num);
  }
  if (fl.random_links) {
    std::vector<std::pair<NodeIndex, PortNum>> isls;
    for (const auto& l : f.links())
      if (f.node(l.a).is_switch() && f.node(l.b).is_switch()) isls.emplace_back(l.a, l.pa);
    if (fl.random_links > isls.size())
      return fail(Errc::kInvalidInput, "cannot fail " + std::to_string(fl.random_links) +
                                           " random links: the fabric has " +
                                           std::to_string(isls.size()) + " inter-switch links");
    SplitMix64 rng(fl.seed);  // the same seed fails the same links everywhere
    for (uint32_t k = 0; k < fl.random_links; ++k) {
      std::swap(isls[k], isls[k + rng.next() % (isls.size() - k)]);
      rep.failed.push_back("link " + link_text(f, isls[k].first, isls[k].second));
      f.disconnect(isls[k].first, isls[k].second);
    }
  }
  // What an SM still sees: the largest connected part. Cut-off nodes keep no LID.
  const auto keep = largest_part(f);
  for (NodeIndex n = 0; n < f.size(); ++n) {
    if (keep[n]) continue;
    ++rep.cut_off_nodes;
    for (auto& p : f.node(n).ports) p.attrs.lid = Lid{};
  }
  if (rep.cut_off_nodes && !fl.keep_cut_off) {
    // Rebuild without them, links and all.
    Fabric g;
    std::vector<NodeIndex> map(f.size(), ~NodeIndex{0});
    for (NodeIndex n = 0; n < f.size(); ++n) {
      if (!keep[n]) continue;
      fabric::Node copy = f.node(n);
      for (auto& p : copy.ports) p.peer = fabric::kNoNode, p.peer_port = 0;
      auto idx = g.add_node(std::move(copy));
      if (!idx) return std::unexpected(idx.error());
      map[n] = *idx;
    }
    for (const auto& l : f.links())
      if (keep[l.a] && keep[l.b])
        if (auto r = g.connect(map[l.a], l.pa, map[l.b], l.pb); !r)
          return std::unexpected(r.error());
    f = std::move(g);
  }
  return rep;
}

}  // namespace weft::simulator
