#include "dor.hpp"

#include <algorithm>
#include <cstdlib>

#include "torus_labels.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

Routed DorEngine::compute(const Fabric& f, const Options& o) const {
  if (!o.torus)
    return refuse(Refusal::kTopology,
                  "dor: needs the torus's shape: a torus description (torus_config; weft route "
                  "--torus FILE)");
  const TorusSpec& T = *o.torus;
  auto st = detail::start(f);
  if (!st) return std::unexpected(st.error());
  auto& [sw, owners, out] = *st;
  auto labels = detail::label_torus(f, sw, T);
  if (!labels) return std::unexpected(std::move(labels.error()));
  const auto& ports = labels->ports;
  const auto& lab = labels->lab;
  const auto& coord = labels->coord;
  const std::string& shape = labels->shape;
  const size_t ns = sw.nodes.size();
  const size_t D = T.radix.size();
  auto name_of = [&](uint32_t s) { return fabric::port_ref(f, sw.nodes[s], 0); };
  auto fail_at = [&](uint32_t s, const std::string& why) {
    return refuse(Refusal::kTopology, "dor: not a " + shape + " at " + name_of(s) + ": " + why);
  };

  // Routes and SLs.
  const detail::LidsBySwitch lids_at = detail::lids_by_switch(f, sw, owners);
  bool layered = false;
  // Rings that need a dateline: radix 5 and up. Radix 3 has no two-hop path; radix 4
  // only half-way ones, whose alternating direction leaves each direction of the
  // ring two of its four hop-to-hop dependencies, which cannot close it.
  auto dateline = [&](size_t d) { return T.wraps(d) && T.radix[d] >= 5; };
  for (size_t d = 0; d < D; ++d) layered |= dateline(d);
  if (layered) {
    out.path_sl.assign(f.size(), {});
    for (NodeIndex n : sw.nodes) out.path_sl[n].assign(size_t(out.top_lid) + 1, 0);
  }
  // How far each switch goes each way along its ring before a failed link (the radix:
  // no failure). dor takes the long way round a ring a failure broke, as torus-2QoS
  // does: a broken ring is a line, whose channels close no cycle, so neither the
  // dateline nor the path's SL changes; a ring broken twice between two switches has
  // no way round.
  std::vector<std::vector<int>> reach(ns, std::vector<int>(2 * D));
  for (uint32_t s = 0; s < ns; ++s)
    for (size_t d = 0; d < D; ++d)
      for (int sg = 0; sg < 2; ++sg) {
        const int k = T.radix[d];
        int h = 0;
        if (labels->missing_links == 0) {
          h = k;
        } else {
          for (uint32_t x = s; h < k && (x = lab[x][2 * d + size_t(sg)]) != detail::kNoSwitch;) ++h;
        }
        reach[s][2 * d + size_t(sg)] = h;
      }
  size_t long_way = 0;  // switch-to-switch routes round a broken ring
  unsigned max_sl = 0;
  std::vector<PortNum> to;
  for (uint32_t t = 0; t < ns; ++t) {
    if (lids_at[t].empty()) continue;
    for (auto [lid, exit] : lids_at[t]) out.lft[sw.nodes[t]][lid] = exit;
    for (uint32_t s = 0; s < ns; ++s) {
      if (s == t) continue;
      unsigned sl = 0;
      int first = -1, dir = 0;
      for (size_t d = 0; d < D; ++d) {
        const int k = T.radix[d], from = coord[s][d], dest = coord[t][d];
        if (from == dest) continue;
        const int fwd = (dest - from + k) % k;
        // Half way round a ring, either way is as short: the direction alternates with
        // the parity of the coordinate the dimension starts from, so both directions of
        // the ring carry half of that traffic (always + loads one direction twice).
        const int dd = T.wraps(d) ? (2 * fwd == k    ? (from % 2 == 0 ? 1 : -1)
                                     : fwd < k - fwd ? 1
                                                     : -1)
                                  : (dest > from ? 1 : -1);
        if (dateline(d) && ((dd > 0 && dest < from) || (dd < 0 && dest > from))) sl |= 1u << d;
        if (first >= 0) continue;
        first = static_cast<int>(d), dir = dd;
        const int steps = T.wraps(d) ? (dd > 0 ? fwd : k - fwd) : std::abs(dest - from);
        if (reach[s][2 * d + (dd > 0 ? 0 : 1)] >= steps) continue;
        if (T.wraps(d) && reach[s][2 * d + (dd > 0 ? 1 : 0)] >= k - steps) {
          dir = -dd;  // the long way round; the SL stays the pristine path's
          ++long_way;
          continue;
        }
        return refuse(Refusal::kTopology,
                      "dor: the " + std::string(1, T.axis(d)) + " " +
                          (T.wraps(d) ? "ring" : "line") + " through " + name_of(s) +
                          " is broken both ways toward " + name_of(t) +
                          (T.wraps(d) ? " (two failed links split it)"
                                      : " (a mesh has no way round a failed link)"));
      }
      const uint32_t next = lab[s][2 * size_t(first) + (dir > 0 ? 0 : 1)];
      to.clear();
      for (auto [n, p] : ports[s])
        if (n == next) to.push_back(p);
      if (to.empty()) return fail_at(s, "no link toward " + name_of(t));  // checked above
      const auto& lids = lids_at[t];
      for (size_t i = 0; i < lids.size(); ++i) {
        out.lft[sw.nodes[s]][lids[i].first] = to[i % to.size()];
        if (layered) out.path_sl[sw.nodes[s]][lids[i].first] = static_cast<uint8_t>(sl);
      }
      max_sl = std::max(max_sl, sl);
    }
  }
  out.vls = static_cast<uint8_t>(max_sl + 1);
  if (out.vls > o.max_vls)
    return refuse(Refusal::kVirtualLanes, "dor: the " + shape + "'s datelines need " +
                                              std::to_string(int(out.vls)) + " VLs, " +
                                              std::to_string(int(o.max_vls)) + " allowed");
  if (!layered) out.path_sl.clear();
  out.notes.push_back("dor: " + shape + ", seed " + name_of(labels->seed) + "; " +
                      std::to_string(int(out.vls)) + " VL(s)" +
                      (layered ? " (SL bit d: the path crosses dimension d's dateline)" : ""));
  if (labels->missing_links)
    out.notes.push_back("dor: " + std::to_string(labels->missing_links) +
                        " link(s) of the shape missing; " + std::to_string(long_way) +
                        " switch-to-switch route(s) take the long way round a broken ring, "
                        "every path keeping its SL");
  if (o.adaptive) detail::parallel_link_groups(f, sw, out);
  out.deadlock_free = true;
  return std::move(out);
}

}  // namespace weft::routing
