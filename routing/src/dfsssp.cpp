#include "dfsssp.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "minhop.hpp"
#include "switch_graph.hpp"
#include "weft/routing/analysis.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {

// One layer's channel dependency graph, kept acyclic.
class Layer {
 public:
  explicit Layer(size_t channels) : adj_(channels), seen_(channels, 0) {}

  // Adds the dependencies of one path (consecutive channels) if the graph stays
  // acyclic; otherwise leaves the layer as it was and returns false.
  bool try_add(const uint32_t* ch, size_t n) {
    added_.clear();
    for (size_t i = 0; i + 1 < n; ++i) {
      const uint32_t a = ch[i], b = ch[i + 1];
      const uint64_t key = uint64_t(a) << 32 | b;
      if (edges_.contains(key)) continue;
      if (reaches(b, a)) {
        for (uint64_t k : added_) {
          edges_.erase(k);
          adj_[k >> 32].pop_back();  // added last, so at the back
        }
        return false;
      }
      edges_.insert(key);
      adj_[a].push_back(b);
      added_.push_back(key);
    }
    return true;
  }

 private:
  bool reaches(uint32_t from, uint32_t to) {
    if (from == to) return true;
    ++stamp_;
    stack_.assign(1, from);
    seen_[from] = stamp_;
    while (!stack_.empty()) {
      const uint32_t v = stack_.back();
      stack_.pop_back();
      for (uint32_t w : adj_[v]) {
        if (w == to) return true;
        if (seen_[w] != stamp_) seen_[w] = stamp_, stack_.push_back(w);
      }
    }
    return false;
  }

  std::vector<std::vector<uint32_t>> adj_;
  std::unordered_set<uint64_t> edges_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<uint64_t> added_;
};

}  // namespace

Routed DfssspEngine::compute(const Fabric& f, const Options& o) const {
  auto routed = MinHopEngine().compute(f, o);
  if (!routed) {
    routed.error().message = "dfsssp: " + routed.error().message;
    return routed;
  }
  Tables out = std::move(*routed);
  out.notes.clear();
  if (channel_dependencies(f, out).acyclic) {
    out.notes.push_back("dfsssp: the minimum-hop routes have no dependency cycle: 1 VL");
    return out;
  }

  // Channels: directed inter-switch links, numbered by (node, port).
  std::vector<uint32_t> base(f.size() + 1, 0);
  for (NodeIndex n = 0; n < f.size(); ++n)
    base[n + 1] = base[n] + static_cast<uint32_t>(f.node(n).ports.size());
  const detail::Switches sw = detail::index_switches(f);
  const auto owners = lid_owners(f);

  // Every path: from each switch to each LID, as its channel sequence.
  struct Path {
    uint32_t src;  // switch number
    uint16_t lid;
    uint32_t begin, len;
  };
  std::vector<Path> paths;
  std::vector<uint32_t> channels;
  for (uint32_t s = 0; s < sw.nodes.size(); ++s)
    for (const LidOwner& ow : owners) {
      Path p{s, ow.lid.value, static_cast<uint32_t>(channels.size()), 0};
      NodeIndex cur = sw.nodes[s];
      for (size_t hop = 0; hop <= sw.nodes.size(); ++hop) {
        const PortNum port = out.lft[cur][ow.lid.value];
        const auto& nd = f.node(cur);
        if (port == 0 || port > nd.num_ports || !nd.ports[port].linked() ||
            !f.node(nd.ports[port].peer).is_switch())
          break;
        channels.push_back(base[cur] + port);
        cur = nd.ports[port].peer;
      }
      p.len = static_cast<uint32_t>(channels.size()) - p.begin;
      if (p.len >= 2) paths.push_back(p);  // one channel or none: no dependency
    }
  std::vector<uint32_t> order(paths.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return paths[a].len > paths[b].len; });

  std::vector<Layer> layers;
  out.path_sl.assign(f.size(), {});
  for (NodeIndex n : sw.nodes) out.path_sl[n].assign(size_t(out.top_lid) + 1, 0);
  for (uint32_t i : order) {
    const Path& p = paths[i];
    size_t v = 0;
    for (; v < layers.size(); ++v)
      if (layers[v].try_add(&channels[p.begin], p.len)) break;
    if (v == layers.size()) {
      if (layers.size() == o.max_vls)
        return refuse(Refusal::kVirtualLanes,
                      "dfsssp: the minimum-hop routes need more than " +
                          std::to_string(int(o.max_vls)) + " VLs to be deadlock-free (" +
                          std::to_string(paths.size()) + " paths with dependencies)");
      layers.emplace_back(base.back());
      layers.back().try_add(&channels[p.begin], p.len);
    }
    out.path_sl[sw.nodes[p.src]][p.lid] = static_cast<uint8_t>(v);
  }
  out.vls = static_cast<uint8_t>(std::max<size_t>(1, layers.size()));
  out.notes.push_back("dfsssp: " + std::to_string(paths.size()) + " paths over " +
                      std::to_string(int(out.vls)) +
                      " VLs, each acyclic; SL i must map to VL i on every port");
  return out;
}

}  // namespace weft::routing
