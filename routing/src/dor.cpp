#include "dor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <deque>
#include <limits>

#include "switch_graph.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
}

Routed DorEngine::compute(const Fabric& f, const Options& o) const {
  if (!o.torus)
    return refuse(Refusal::kTopology,
                  "dor: needs the torus's shape: a torus description (torus_config; weft route "
                  "--torus FILE)");
  const TorusSpec& T = *o.torus;
  auto st = detail::start(f);
  if (!st) return std::unexpected(st.error());
  auto& [sw, owners, out] = *st;
  const size_t ns = sw.nodes.size();
  const size_t D = T.radix.size();
  auto name_of = [&](uint32_t s) { return fabric::port_ref(f, sw.nodes[s], 0); };
  size_t expected = 1;
  for (int r : T.radix) expected *= size_t(r);
  const std::string shape =
      fmt::format("{} {}", fmt::join(T.radix, "x"), T.wrap ? "torus" : "mesh");
  if (ns != expected)
    return refuse(Refusal::kTopology, "dor: the fabric has " + std::to_string(ns) +
                                          " switches; a " + shape + " has " +
                                          std::to_string(expected));

  // Distinct switch neighbours, and the ports to each.
  std::vector<std::vector<uint32_t>> nbrs(ns);
  std::vector<std::vector<std::pair<uint32_t, PortNum>>> ports(ns);
  for (uint32_t s = 0; s < ns; ++s)
    for (const auto& p : f.node(sw.nodes[s]).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch()) {
        const uint32_t n = sw.of_node[p.peer];
        ports[s].emplace_back(n, p.num);
        if (std::find(nbrs[s].begin(), nbrs[s].end(), n) == nbrs[s].end()) nbrs[s].push_back(n);
      }
  auto adjacent = [&](uint32_t a, uint32_t b) {
    return std::find(nbrs[a].begin(), nbrs[a].end(), b) != nbrs[a].end();
  };
  auto find_switch = [&](Guid g) -> uint32_t {
    auto n = f.find(g);
    return n && f.node(*n).is_switch() ? sw.of_node[*n] : kNone;
  };
  const uint32_t seed = find_switch(T.seed);
  if (seed == kNone)
    return refuse(Refusal::kInvalidInput, "dor: the seed " + T.seed.str() + " is not a switch");

  // lab[s][2d] = +d neighbour, lab[s][2d+1] = -d neighbour (kNone: none).
  std::vector<std::vector<uint32_t>> lab(ns, std::vector<uint32_t>(2 * D, kNone));
  std::vector<std::vector<int>> coord(ns);
  auto fail_at = [&](uint32_t s, const std::string& why) {
    return refuse(Refusal::kTopology, "dor: not a " + shape + " at " + name_of(s) + ": " + why);
  };
  for (size_t d = 0; d < D; ++d) {
    const uint32_t p = find_switch(T.plus[d]);
    if (p == kNone || !adjacent(seed, p))
      return refuse(Refusal::kInvalidInput, "dor: " + std::string(1, char('x' + d)) +
                                                "p_link: " + T.plus[d].str() +
                                                " is not a switch linked to the seed");
    lab[seed][2 * d] = p;
  }
  // The seed's - neighbours.
  if (T.wrap) {
    std::vector<uint32_t> free;
    for (uint32_t n : nbrs[seed])
      if (std::find(lab[seed].begin(), lab[seed].end(), n) == lab[seed].end()) free.push_back(n);
    auto common = [&](uint32_t a, uint32_t b) {
      size_t c = 0;
      for (uint32_t x : nbrs[a]) c += adjacent(x, b);
      return c;
    };
    auto take = [&](size_t d, auto&& ok) {
      for (auto it = free.begin(); it != free.end(); ++it)
        if (ok(*it)) {
          lab[seed][2 * d + 1] = *it;
          free.erase(it);
          return true;
        }
      return false;
    };
    for (int pass = 0; pass < 2; ++pass)
      for (size_t d = 0; d < D; ++d) {
        const int k = T.radix[d];
        const uint32_t p = lab[seed][2 * d];
        if (k == 1) continue;
        if (k == 2) {
          lab[seed][2 * d + 1] = p;
          continue;
        }
        if ((k == 4) != (pass == 1)) continue;  // radix 4 last: any free neighbour will do
        const bool found = k == 3   ? take(d, [&](uint32_t n) { return adjacent(n, p); })
                           : k == 4 ? take(d, [](uint32_t) { return true; })
                                    : take(d, [&](uint32_t n) { return common(n, p) == 1; });
        if (!found) return fail_at(seed, "no neighbour fits -" + std::string(1, char('x' + d)));
      }
  }
  coord[seed].assign(D, 0);
  std::deque<uint32_t> q{seed};
  while (!q.empty()) {
    const uint32_t u = q.front();
    q.pop_front();
    for (size_t a = 0; a < D; ++a)
      for (int sg = 0; sg < 2; ++sg) {
        const uint32_t v = lab[u][2 * a + sg];
        if (v == kNone || !coord[v].empty()) continue;
        const int k = T.radix[a];
        auto& lv = lab[v];
        lv[2 * a + (1 - sg)] = u;
        if (k == 2) lv[2 * a + sg] = u;
        for (size_t b = 0; b < D; ++b) {
          if (b == a) continue;
          for (int tg = 0; tg < 2; ++tg) {
            const uint32_t w = lab[u][2 * b + tg];
            if (w == kNone) continue;
            if (w == v) return fail_at(u, "two dimensions lead to one neighbour");
            uint32_t x = kNone;
            for (uint32_t c : nbrs[v])
              if (c != u && adjacent(c, w)) {
                if (x != kNone && x != c) return fail_at(v, "a square closes twice");
                x = c;
              }
            if (x == kNone) return fail_at(v, "no square with " + name_of(w));
            lv[2 * b + tg] = x;
          }
        }
        if (k >= 3) {
          uint32_t ahead = kNone;
          for (uint32_t c : nbrs[v])
            if (std::find(lv.begin(), lv.end(), c) == lv.end()) {
              if (ahead != kNone) return fail_at(v, "more neighbours than a " + shape + " has");
              ahead = c;
            }
          lv[2 * a + sg] = ahead;
        }
        coord[v] = coord[u];
        coord[v][a] = (coord[u][a] + (sg ? -1 : 1) + k) % k;
        q.push_back(v);
      }
  }
  // Check: everything labelled, coordinates unique and consistent, every link used.
  std::vector<uint32_t> at(ns, kNone);
  for (uint32_t s = 0; s < ns; ++s) {
    if (coord[s].empty()) return fail_at(s, "not reached from the seed");
    size_t idx = 0;
    for (size_t d = D; d-- > 0;) idx = idx * size_t(T.radix[d]) + size_t(coord[s][d]);
    if (at[idx] != kNone) return fail_at(s, "the same coordinates as " + name_of(at[idx]));
    at[idx] = s;
    for (uint32_t n : nbrs[s])
      if (std::find(lab[s].begin(), lab[s].end(), n) == lab[s].end())
        return fail_at(s, "a link to " + name_of(n) + " no dimension explains");
    for (size_t d = 0; d < D; ++d)
      for (int sg = 0; sg < 2; ++sg) {
        const uint32_t n = lab[s][2 * d + sg];
        if (n == kNone) continue;
        const int k = T.radix[d];
        if ((coord[s][d] + (sg ? -1 : 1) + k) % k != coord[n][d])
          return fail_at(s, "neighbour " + name_of(n) + " is not where the shape puts it");
        if (!T.wrap && ((sg == 0 && coord[s][d] == k - 1) || (sg == 1 && coord[s][d] == 0)))
          return fail_at(s, "a mesh has no link across its edge");
      }
  }

  // Routes and SLs.
  const detail::LidsBySwitch lids_at = detail::lids_by_switch(f, sw, owners);
  bool layered = false;
  // Rings that need a dateline: radix 5 and up. Radix 3 has no two-hop path; radix 4
  // only half-way ones, whose alternating direction leaves each direction of the
  // ring two of its four hop-to-hop dependencies, which cannot close it.
  auto dateline = [&](size_t d) { return T.wrap && T.radix[d] >= 5; };
  for (size_t d = 0; d < D; ++d) layered |= dateline(d);
  if (layered) {
    out.path_sl.assign(f.size(), {});
    for (NodeIndex n : sw.nodes) out.path_sl[n].assign(size_t(out.top_lid) + 1, 0);
  }
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
        const int dd = T.wrap ? (2 * fwd == k    ? (from % 2 == 0 ? 1 : -1)
                                 : fwd < k - fwd ? 1
                                                 : -1)
                              : (dest > from ? 1 : -1);
        if (dateline(d) && ((dd > 0 && dest < from) || (dd < 0 && dest > from))) sl |= 1u << d;
        if (first < 0) first = static_cast<int>(d), dir = dd;
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
  out.notes.push_back("dor: " + shape + ", seed " + name_of(seed) + "; " +
                      std::to_string(int(out.vls)) + " VL(s)" +
                      (layered ? " (SL bit d: the path crosses dimension d's dateline)" : ""));
  if (o.adaptive) detail::parallel_link_groups(f, sw, out);
  out.deadlock_free = true;
  return std::move(out);
}

}  // namespace weft::routing
