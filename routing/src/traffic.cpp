// The flow-level traffic model (weft/routing/traffic.hpp).
#include "weft/routing/traffic.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>

namespace weft::routing {

using fabric::NodeIndex;

namespace {
constexpr std::pair<std::string_view, Pattern> kPatterns[] = {
    {"shift", Pattern::kShift},         {"permutation", Pattern::kPermutation},
    {"all-to-all", Pattern::kAllToAll}, {"allreduce", Pattern::kAllreduce},
    {"hotspot", Pattern::kHotspot},
};
}  // namespace

Result<Pattern> parse_pattern(std::string_view name) {
  for (auto [n, p] : kPatterns)
    if (n == name) return p;
  return fail(Errc::kInvalidInput,
              "unknown traffic pattern \"" + std::string(name) +
                  "\" (known: shift, permutation, all-to-all, allreduce, hotspot)");
}

const char* pattern_name(Pattern p) {
  for (auto [n, q] : kPatterns)
    if (q == p) return n.data();
  return "?";
}

TrafficResult run_traffic(const fabric::Fabric& f, const Tables& t, Pattern p, bool adaptive,
                          const TrafficOptions& o) {
  const auto ranks = o.order.empty() ? topology_order(f) : o.order;
  const size_t n = ranks.size();
  std::vector<std::pair<size_t, size_t>> pairs;  // (source rank, destination rank)
  if (n >= 2) switch (p) {
      case Pattern::kShift:
        for (size_t i = 0; i < n; ++i) pairs.push_back({i, (i + n / 2) % n});
        break;
      case Pattern::kPermutation: {
        // A derangement: shuffle until no rank keeps its place (bounded; then rotate).
        std::vector<size_t> to(n);
        std::iota(to.begin(), to.end(), size_t(0));
        std::mt19937_64 rng(o.seed);
        bool ok = false;
        for (int tries = 0; tries < 100 && !ok; ++tries) {
          std::shuffle(to.begin(), to.end(), rng);
          ok = true;
          for (size_t i = 0; i < n && ok; ++i) ok = to[i] != i;
        }
        if (!ok) {  // a rotation of the identity is one
          std::iota(to.begin(), to.end(), size_t(0));
          std::rotate(to.begin(), to.begin() + 1, to.end());
        }
        for (size_t i = 0; i < n; ++i) pairs.push_back({i, to[i]});
        break;
      }
      case Pattern::kAllToAll:
        for (size_t i = 0; i < n; ++i)
          for (size_t j = 0; j < n; ++j)
            if (i != j) pairs.push_back({i, j});
        break;
      case Pattern::kAllreduce:
        for (size_t i = 0; i < n; ++i) pairs.push_back({i, (i + 1) % n});
        break;
      case Pattern::kHotspot:
        for (size_t i = 1; i < n; ++i) pairs.push_back({i, 0});
        break;
    }

  // Route each flow in turn; a directed link is (node, port out of it). A flow is a
  // set of links, each with the share of the flow it carries (1 unless split).
  using Link = std::pair<NodeIndex, PortNum>;
  using Path = std::vector<std::pair<Link, double>>;
  std::map<Link, double> load;
  std::vector<Path> paths;
  TrafficResult r;
  r.flows = pairs.size();
  // The ports a flow to `dlid` (at dn, dp) may leave switch `at` by: the static port; or,
  // under adaptive routing, its group's ports that lead somewhere the flow still
  // arrives from. That is fast recovery as NVIDIA's SHIELD does it: a dead port is left
  // for the group's others at once, and a switch whose ports toward a destination all
  // died tells the switches before it (fault routing notifications), which then leave
  // the port leading to it.
  std::map<std::pair<NodeIndex, uint16_t>, int8_t> delivers;  // 1 yes, 0 no, -1 asking
  // `depth`: switches asked on the way here; past 64 (a route longer than any directed
  // route may be) nothing is delivered.
  std::function<void(NodeIndex, uint16_t, NodeIndex, PortNum, std::vector<PortNum>&, int)> choices;
  auto arrives = [&](NodeIndex at, uint16_t dlid, NodeIndex dn, PortNum dp, int depth) {
    auto [it, fresh] = delivers.try_emplace({at, dlid}, -1);
    if (!fresh) return it->second == 1;
    std::vector<PortNum> out;
    if (depth < 64) choices(at, dlid, dn, dp, out, depth + 1);
    const int8_t yes = out.empty() ? 0 : 1;
    delivers[{at, dlid}] = yes;
    return yes == 1;
  };
  choices = [&](NodeIndex at, uint16_t dlid, NodeIndex dn, PortNum dp, std::vector<PortNum>& out,
                int depth) {
    out.clear();
    if (!f.node(at).is_switch() || at >= t.lft.size() || dlid >= t.lft[at].size()) return;
    const PortNum st = t.lft[at][dlid];
    if (st == 0 || st > f.node(at).num_ports) return;
    if (!adaptive) {
      if (f.node(at).ports[st].linked()) out.push_back(st);
      return;
    }
    auto viable = [&](PortNum q) {
      if (q > f.node(at).num_ports || !f.node(at).ports[q].linked()) return false;
      const auto& port = f.node(at).ports[q];
      return (port.peer == dn && port.peer_port == dp) ||
             (f.node(port.peer).is_switch() && arrives(port.peer, dlid, dn, dp, depth));
    };
    if (at < t.ar_group.size() && dlid < t.ar_group[at].size() && at < t.ar_sets.size() &&
        t.ar_group[at][dlid] < t.ar_sets[at].size()) {
      for (PortNum q : t.ar_sets[at][t.ar_group[at][dlid]])
        if (viable(q)) out.push_back(q);
    } else if (viable(st)) {
      out.push_back(st);
    }
  };
  std::vector<PortNum> ch;
  for (auto [si, di] : pairs) {
    const auto [sn, sp] = ranks[si];
    const auto [dn, dp] = ranks[di];
    const uint16_t dlid = f.node(dn).ports[dp].attrs.lid.value;
    std::map<Link, double> on;  // this flow's share of each link
    double arrived = 0;
    const auto& first = f.node(sn).ports[sp];
    if (first.linked()) {
      on[{sn, sp}] = 1;
      // Where the flow's shares are, one hop at a time: (node, port it came in by).
      std::map<Link, double> here{{{first.peer, first.peer_port}, 1.0}};
      for (size_t hops = 0; hops < 64 && !here.empty(); ++hops) {
        std::map<Link, double> next;
        for (const auto& [at_in, w] : here) {
          const auto [at, in] = at_in;
          if (at == dn && in == dp) {
            arrived += w;
            continue;
          }
          choices(at, dlid, dn, dp, ch, 0);
          if (ch.empty()) continue;  // lost here
          if (o.rule == ArRule::kLeastLoaded && ch.size() > 1) {
            // The port carrying the least so far (the static port on a tie).
            const PortNum st = t.lft[at][dlid];
            PortNum best = ch.front();
            for (PortNum q : ch)
              if (load[{at, q}] < load[{at, best}] ||
                  (q == st && load[{at, q}] == load[{at, best}]))
                best = q;
            ch.assign(1, best);
          }
          const double share = w / double(ch.size());
          for (PortNum q : ch) {
            const auto& port = f.node(at).ports[q];
            on[{at, q}] += share;
            next[{port.peer, port.peer_port}] += share;
          }
        }
        here = std::move(next);
      }
    }
    Path path;
    if (arrived < 1 - 1e-9) {
      ++r.blackholed;  // all or part of it never arrives
    } else {
      for (const auto& [l, w] : on) {
        path.push_back({l, w});
        r.max_link_flows = std::max(r.max_link_flows, load[l] += w);
      }
    }
    paths.push_back(std::move(path));
  }

  // Max-min fair rates (water filling): every unfrozen flow's rate rises together; the
  // first link to fill (its remaining capacity over the shares of it its unfrozen flows
  // carry) freezes the flows on it at that rate; again until every flow that arrives is
  // fixed.
  std::map<Link, size_t> index;
  for (const auto& [l, c] : load) index.emplace(l, index.size());
  std::vector<double> cap(index.size(), 1.0), demand(index.size(), 0.0);
  std::vector<std::vector<size_t>> users(index.size());  // flows per link
  std::vector<double> rate(paths.size(), 0);
  std::vector<bool> done(paths.size(), false);
  size_t left = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].empty()) {
      done[i] = true;
      continue;
    }
    ++left;
    for (const auto& [l, w] : paths[i]) {
      const size_t k = index.at(l);
      demand[k] += w;
      users[k].push_back(i);
    }
  }
  constexpr double kNone = 1e-12;
  double level = 0;
  while (left > 0) {
    size_t bottleneck = 0;
    double dt = std::numeric_limits<double>::max();
    for (size_t k = 0; k < cap.size(); ++k)
      if (demand[k] > kNone && cap[k] / demand[k] < dt) dt = cap[k] / demand[k], bottleneck = k;
    if (dt == std::numeric_limits<double>::max()) break;  // nothing left to fill
    level += dt;
    for (size_t k = 0; k < cap.size(); ++k)
      if (demand[k] > kNone) cap[k] -= dt * demand[k];
    cap[bottleneck] = 0;
    for (size_t i : users[bottleneck]) {
      if (done[i]) continue;
      done[i] = true;
      rate[i] = level;
      --left;
      for (const auto& [l, w] : paths[i]) demand[index.at(l)] -= w;
    }
    demand[bottleneck] = 0;
  }
  if (!rate.empty()) {
    r.min_flow_throughput = *std::min_element(rate.begin(), rate.end());
    r.mean_flow_throughput = std::accumulate(rate.begin(), rate.end(), 0.0) / double(rate.size());
  }
  return r;
}

}  // namespace weft::routing
