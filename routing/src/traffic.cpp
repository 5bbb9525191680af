// The flow-level traffic model (weft/routing/traffic.hpp).
#include "weft/routing/traffic.hpp"

#include <algorithm>
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

  // Route each flow in turn; a directed link is (node, port out of it).
  std::map<std::pair<NodeIndex, PortNum>, uint32_t> load;
  std::vector<std::vector<std::pair<NodeIndex, PortNum>>> paths;
  TrafficResult r;
  r.flows = pairs.size();
  for (auto [si, di] : pairs) {
    const auto [sn, sp] = ranks[si];
    const auto [dn, dp] = ranks[di];
    const uint16_t dlid = f.node(dn).ports[dp].attrs.lid.value;
    std::vector<std::pair<NodeIndex, PortNum>> path;
    bool arrived = false;
    const auto& first = f.node(sn).ports[sp];
    if (first.linked()) {
      path.push_back({sn, sp});
      NodeIndex at = first.peer;
      PortNum in = first.peer_port;
      for (size_t hops = 0; hops < 64; ++hops) {
        if (at == dn && in == dp) {
          arrived = true;
          break;
        }
        if (!f.node(at).is_switch() || at >= t.lft.size() || dlid >= t.lft[at].size()) break;
        PortNum out = t.lft[at][dlid];
        if (out == 0 || out > f.node(at).num_ports) break;
        if (adaptive && at < t.ar_group.size() && dlid < t.ar_group[at].size() &&
            t.ar_group[at][dlid] != Tables::kNoArGroup && at < t.ar_sets.size() &&
            t.ar_group[at][dlid] < t.ar_sets[at].size()) {
          uint32_t best = f.node(at).ports[out].linked() ? load[{at, out}]
                                                         : std::numeric_limits<uint32_t>::max();
          for (PortNum q : t.ar_sets[at][t.ar_group[at][dlid]])
            if (q <= f.node(at).num_ports && f.node(at).ports[q].linked() && load[{at, q}] < best)
              best = load[{at, q}], out = q;
        }
        const auto& port = f.node(at).ports[out];
        if (!port.linked()) break;
        path.push_back({at, out});
        at = port.peer;
        in = port.peer_port;
      }
    }
    if (!arrived) {
      ++r.blackholed;
      path.clear();
    }
    for (const auto& l : path) r.max_link_flows = std::max(r.max_link_flows, ++load[l]);
    paths.push_back(std::move(path));
  }

  // Max-min fair rates (progressive filling): the link whose remaining capacity shared
  // among its unfrozen flows is least fixes those flows at that share; again until
  // every flow that arrives is fixed.
  std::map<std::pair<NodeIndex, PortNum>, size_t> index;
  for (const auto& [l, c] : load) index.emplace(l, index.size());
  std::vector<double> cap(index.size(), 1.0);
  std::vector<uint32_t> unfrozen(index.size(), 0);
  std::vector<std::vector<size_t>> on(index.size());  // flows per link
  std::vector<double> rate(paths.size(), 0);
  std::vector<bool> done(paths.size(), false);
  size_t left = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].empty()) {
      done[i] = true;
      continue;
    }
    ++left;
    for (const auto& l : paths[i]) {
      const size_t k = index.at(l);
      ++unfrozen[k];
      on[k].push_back(i);
    }
  }
  while (left > 0) {
    size_t bottleneck = 0;
    double share = std::numeric_limits<double>::max();
    for (size_t k = 0; k < cap.size(); ++k)
      if (unfrozen[k] && cap[k] / unfrozen[k] < share) share = cap[k] / unfrozen[k], bottleneck = k;
    for (size_t i : on[bottleneck]) {
      if (done[i]) continue;
      done[i] = true;
      rate[i] = share;
      --left;
      for (const auto& l : paths[i]) {
        const size_t k = index.at(l);
        cap[k] -= share;
        --unfrozen[k];
      }
    }
  }
  if (!rate.empty()) {
    r.min_flow_throughput = *std::min_element(rate.begin(), rate.end());
    r.mean_flow_throughput = std::accumulate(rate.begin(), rate.end(), 0.0) / double(rate.size());
  }
  return r;
}

}  // namespace weft::routing
