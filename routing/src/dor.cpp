#include "dor.hpp"

#include <algorithm>
#include <cstdlib>

#include "torus_labels.hpp"
#include "weft/routing/analysis.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace {

using detail::kNoSwitch;

// Round a gap in the last dimension d, for destination t: the switches of t's line
// along d that the line no longer joins to t (a ring split in two, a mesh line cut,
// failed switches on both sides) have no later dimension to turn into. They step
// into an earlier dimension e onto the line beside (t's line one step along e), go
// along it to the nearest place where t's line leads on to t, and step back. That
// line's switches at the cut-off places (and where t's line has no switch) go along
// it too, the nearest way out (a breadth-first walk from the places out, so no two
// of them send each other back); the rest keep DOR's route. Sets via[] for those
// switches and lists them in `set`; nothing when t's line is whole. The line beside
// is the first (e from d-1 down, + before -) that joins every cut-off switch and
// leads every one of its own at those places out; none: why, to follow "is broken".
std::expected<void, std::string> last_line_detour(const TorusSpec& T,
                                                  const std::vector<std::vector<uint32_t>>& lab,
                                                  const std::vector<std::vector<int>>& coord,
                                                  const std::vector<uint32_t>& place, uint32_t t,
                                                  bool spread, std::vector<uint32_t>& via,
                                                  std::vector<uint32_t>& set) {
  const size_t d = T.radix.size() - 1;
  const size_t k = size_t(T.radix[d]);
  // Per place along d: t's line leads on to t there; its switch, the line beside's, and
  // where that one goes on (kNoSwitch: none).
  std::vector<uint8_t> joined(k, 0), reached(k);
  std::vector<uint32_t> on(k), beside(k), toward(k), queue(k);
  joined[size_t(coord[t][d])] = 1;
  for (size_t sg = 0; sg < 2; ++sg) {
    uint32_t x = t;
    for (size_t h = 0; h < k && (x = lab[x][2 * d + sg]) != kNoSwitch; ++h)
      joined[size_t(coord[x][d])] = 1;
  }
  std::vector<int> c = coord[t];
  bool cut = false;
  for (size_t p = 0; p < k; ++p) {
    c[d] = int(p);
    on[p] = place[detail::place_of(T, c)];
    cut |= !joined[p] && on[p] != kNoSwitch;
  }
  if (!cut) return {};
  // The lines beside, in turn from one that depends on t's place when `spread`, so that
  // the detours toward a line's destinations spread over the lines beside it instead of
  // loading one: consecutive places along d start from different sides, also where a
  // ring wraps (place p starts from p + p / sides: on a ring of 5 with 4 sides, 0 1 2 3
  // 1). Not spread: the first that leads round, for every destination.
  const size_t sides = 2 * d;
  const size_t p0 = size_t(coord[t][d]);
  size_t first = p0 + p0 / sides;
  for (size_t e = 0; e < d; ++e) first += size_t(coord[t][e]);
  if (!spread) first = 0;
  for (size_t i = 0; i < sides; ++i) {
    const size_t o = (first + i) % sides, e = d - 1 - o / 2;
    const int sg = o % 2 ? -1 : 1;
    c = coord[t];
    c[e] += sg;
    if (c[e] < 0 || c[e] >= T.radix[e]) {
      if (!T.wraps(e)) continue;
      c[e] = (c[e] + T.radix[e]) % T.radix[e];
    }
    const size_t out = 2 * e + (sg > 0 ? 0 : 1), back = 2 * e + (sg > 0 ? 1 : 0);
    std::fill(reached.begin(), reached.end(), 0);
    size_t qn = 0;
    for (size_t p = 0; p < k; ++p) {
      c[d] = int(p);
      beside[p] = place[detail::place_of(T, c)];
      if (joined[p] && beside[p] != kNoSwitch && lab[beside[p]][back] == on[p])
        reached[p] = 1, queue[qn++] = uint32_t(p);  // a way back onto t's line
    }
    for (size_t qi = 0; qi < qn; ++qi) {
      const uint32_t x = beside[queue[qi]];
      for (size_t sd = 0; sd < 2; ++sd) {
        const uint32_t y = lab[x][2 * d + sd];
        if (y == kNoSwitch) continue;
        const size_t q = size_t(coord[y][d]);
        if (reached[q] || joined[q]) continue;
        reached[q] = 1, toward[q] = x, queue[qn++] = uint32_t(q);
      }
    }
    bool fits = true;
    for (size_t p = 0; p < k && fits; ++p) {
      if (joined[p]) continue;
      if (beside[p] != kNoSwitch && !reached[p]) fits = false;
      if (on[p] != kNoSwitch && (beside[p] == kNoSwitch || lab[on[p]][out] != beside[p]))
        fits = false;
    }
    if (!fits) continue;
    for (size_t p = 0; p < k; ++p) {
      if (joined[p]) continue;
      if (on[p] != kNoSwitch) via[on[p]] = beside[p], set.push_back(on[p]);
      if (beside[p] != kNoSwitch) via[beside[p]] = toward[p], set.push_back(beside[p]);
    }
    return {};
  }
  return std::unexpected(std::string(T.wraps(d)
                                         ? " in two (a failed switch or two failed links split it)"
                                         : " (a missing switch or a failed link cuts it)"));
}

Routed route_dor(const Fabric& f, const Options& o, bool spread);

}  // namespace

// Detours round gaps in the last dimension spread over the lines beside. Where that
// closes a credit loop the early turns' own SL cannot break, every detour takes the
// first line beside that leads round instead: neither choice fits every fabric the
// fault sweep made (each routed some the other refused).
Routed DorEngine::compute(const Fabric& f, const Options& o) const {
  Routed r = route_dor(f, o, true);
  if (!r && r.error().kind == Refusal::kCreditLoop) {
    if (Routed again = route_dor(f, o, false)) return again;
  }
  return r;
}

namespace {

Routed route_dor(const Fabric& f, const Options& o, bool spread) {
  if (!o.torus)
    return refuse(Refusal::kTopology,
                  "dor: needs the torus's shape: a torus description (torus_config; weft route "
                  "--torus FILE)");
  const TorusSpec& T = *o.torus;
  if (T.radix.empty() || T.radix.size() > 3)  // SL bits: a dateline's per dimension, one more
    return refuse(Refusal::kInvalidInput, "dor: a torus or mesh of 1 to 3 dimensions, not " +
                                              std::to_string(T.radix.size()));
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
  auto sl_rows = [&] {  // every switch's path SLs, 0 until set
    if (!out.path_sl.empty()) return;
    out.path_sl.assign(f.size(), {});
    for (NodeIndex n : sw.nodes) out.path_sl[n].assign(size_t(out.top_lid) + 1, 0);
  };
  if (layered) sl_rows();
  // How far each switch goes each way along its ring before a failed link or a missing
  // switch (the radix: none). dor takes the long way round a ring a failure broke, as
  // torus-2QoS does: a broken ring is a line, whose channels close no cycle, so neither
  // the dateline nor the path's SL changes.
  std::vector<std::vector<int>> reach(ns, std::vector<int>(2 * D));
  for (uint32_t s = 0; s < ns; ++s)
    for (size_t d = 0; d < D; ++d)
      for (int sg = 0; sg < 2; ++sg) {
        const int k = T.radix[d];
        int h = 0;
        if (labels->missing_links == 0 && labels->missing_switches == 0) {
          h = k;
        } else {
          for (uint32_t x = s; h < k && (x = lab[x][2 * d + size_t(sg)]) != detail::kNoSwitch;) ++h;
        }
        reach[s][2 * d + size_t(sg)] = h;
      }
  // Where neither way along the dimension reaches the corner (a missing switch there,
  // or a line cut: a mesh's, or a ring's cut twice), the route goes along it as far as
  // it can and turns early, as torus-2QoS turns round a failed switch: one step into a
  // later dimension (toward the destination there, if it differs), where DOR takes it
  // on past the gap. The hop after that step turns back to an earlier dimension, which
  // DOR never does; the VLs below keep such turns out of the rings' and each other's
  // cycles (checked whole here, and again before the tables go anywhere).
  size_t long_way = 0;  // switch-to-switch routes round a broken ring
  size_t early = 0;     // switch-to-switch routes that turn early round a gap
  std::vector<PortNum> to;
  std::vector<int> dirs(D);
  // Per destination switch: each switch's next one, and whether it turns early there;
  // the (source, destination) switch pairs whose route turns early somewhere.
  std::vector<uint32_t> next_of(ns);
  std::vector<uint8_t> turns(ns), turned_on(ns);
  std::vector<std::pair<uint32_t, uint32_t>> detoured;
  // A gap in the last dimension has no later one to turn into: the switches of the
  // destination's line cut off from it step into an earlier dimension, onto the line
  // beside it, along that to where the destination's line leads on again, and back
  // (last_line_detour). Per destination: the next switch it sets (kNoSwitch: none).
  const bool gaps = labels->missing_links || labels->missing_switches;
  std::vector<uint32_t> place, via(ns, detail::kNoSwitch), set;
  if (gaps && D > 1) {
    size_t places = 1;
    for (int k : T.radix) places *= size_t(k);
    place.assign(places, detail::kNoSwitch);
    for (uint32_t s = 0; s < ns; ++s) place[detail::place_of(T, coord[s])] = s;
  }
  for (uint32_t t = 0; t < ns; ++t) {
    if (lids_at[t].empty()) continue;
    const size_t early_before = early;
    std::fill(turns.begin(), turns.end(), 0);
    for (uint32_t x : set) via[x] = detail::kNoSwitch;
    set.clear();
    if (!place.empty()) {
      if (auto r = last_line_detour(T, lab, coord, place, t, spread, via, set); !r)
        return refuse(Refusal::kTopology, "dor: the " + std::string(1, T.axis(D - 1)) + " " +
                                              (T.wraps(D - 1) ? "ring" : "line") + " through " +
                                              name_of(t) + " is broken" + r.error() +
                                              ", and no line beside it leads round the gap");
      for (uint32_t x : set) turns[x] = 1;
    }
    for (auto [lid, exit] : lids_at[t]) out.lft[sw.nodes[t]][lid] = exit;
    for (uint32_t s = 0; s < ns; ++s) {
      if (s == t) continue;
      unsigned sl = 0;
      int first = -1;
      for (size_t d = 0; d < D; ++d) {
        const int k = T.radix[d], from = coord[s][d], dest = coord[t][d];
        dirs[d] = 0;
        if (from == dest) continue;
        const int fwd = (dest - from + k) % k;
        // Half way round a ring, either way is as short: the direction alternates with
        // the parity of the coordinate the dimension starts from, so both directions of
        // the ring carry half of that traffic (always + loads one direction twice).
        dirs[d] = T.wraps(d) ? (2 * fwd == k    ? (from % 2 == 0 ? 1 : -1)
                                : fwd < k - fwd ? 1
                                                : -1)
                             : (dest > from ? 1 : -1);
        if (dateline(d) && ((dirs[d] > 0 && dest < from) || (dirs[d] < 0 && dest > from)))
          sl |= 1u << d;
        if (first < 0) first = static_cast<int>(d);
      }
      const size_t d = size_t(first);
      const int k = T.radix[d], dd = dirs[d];
      const int fwd = (coord[t][d] - coord[s][d] + k) % k;
      const int steps = T.wraps(d) ? (dd > 0 ? fwd : k - fwd) : std::abs(coord[t][d] - coord[s][d]);
      auto slot = [](size_t dim, int sign) { return 2 * dim + (sign > 0 ? 0 : 1); };
      uint32_t next = detail::kNoSwitch;
      if (via[s] != detail::kNoSwitch) {
        next = via[s];  // round a gap in the last dimension, through the line beside it
        ++early;
      } else if (reach[s][slot(d, dd)] >= steps) {
        next = lab[s][slot(d, dd)];
      } else if (T.wraps(d) && reach[s][slot(d, -dd)] >= k - steps) {
        next = lab[s][slot(d, -dd)];  // the long way round; the SL stays the pristine path's
        ++long_way;
      } else if (reach[s][slot(d, dd)] > 0) {
        next = lab[s][slot(d, dd)];  // up to the gap, where the route turns
      } else {
        // At the gap: one step into the next dimension the destination differs in (or,
        // on its own line, any later one), toward it.
        size_t e = d + 1;
        while (e < D && dirs[e] == 0) ++e;
        const bool own = e == D;
        if (!own) next = lab[s][slot(e, dirs[e])];
        if (next == detail::kNoSwitch) {
          // On its own line, or where the link toward the destination in the next
          // dimension failed too: a side whose line leads on to the destination's place
          // (from a side as blocked the route would turn back here); on its own line,
          // else any side there is.
          uint32_t any = detail::kNoSwitch;
          for (e = d + 1; e < D && next == detail::kNoSwitch; ++e)
            for (int sg : {1, -1}) {
              const uint32_t j = lab[s][slot(e, sg)];
              if (j == detail::kNoSwitch || next != detail::kNoSwitch) continue;
              if (any == detail::kNoSwitch) any = j;
              if (reach[j][slot(d, dd)] >= steps) next = j;
            }
          if (next == detail::kNoSwitch && own) next = any;
        }
        if (next == detail::kNoSwitch)
          return refuse(Refusal::kTopology,
                        "dor: the " + std::string(1, T.axis(d)) + " " +
                            (T.wraps(d) ? "ring" : "line") + " through " + name_of(s) +
                            " is broken both ways toward " + name_of(t) +
                            (T.wraps(d) ? " (a failed switch or two failed links split it)"
                                        : " (a missing switch or a failed link cuts it)") +
                            ", and no link of a later dimension leads round the gap");
        ++early;
        turns[s] = 1;
      }
      next_of[s] = next;
      to.clear();
      for (auto [n, p] : ports[s])
        if (n == next) to.push_back(p);
      if (to.empty()) return fail_at(s, "no link toward " + name_of(t));  // checked above
      const auto& lids = lids_at[t];
      for (size_t i = 0; i < lids.size(); ++i) {
        out.lft[sw.nodes[s]][lids[i].first] = to[i % to.size()];
        if (layered) out.path_sl[sw.nodes[s]][lids[i].first] = static_cast<uint8_t>(sl);
      }
    }
    if (early == early_before) continue;
    // Routes to t that pass a switch turning early: 0 unknown, 1 no, 2 yes.
    std::fill(turned_on.begin(), turned_on.end(), 0);
    turned_on[t] = 1;
    std::vector<uint32_t> chain;
    for (uint32_t s = 0; s < ns; ++s) {
      chain.clear();
      uint32_t x = s;
      while (!turned_on[x] && !turns[x] && chain.size() <= ns) chain.push_back(x), x = next_of[x];
      const uint8_t v = turns[x] ? 2 : turned_on[x] ? turned_on[x] : 1;
      if (turns[x]) turned_on[x] = 2;
      for (uint32_t c : chain) turned_on[c] = v;
    }
    for (uint32_t s = 0; s < ns; ++s)
      if (turned_on[s] == 2) detoured.emplace_back(s, t);
  }
  // VLs as torus-2QoS picks them: a path's SL says which datelines it crosses (bit d),
  // and a switch sends it toward dimension d on VL bit d of its SL: 2 VLs, whatever the
  // dimensions. On ring d a VL 1 route crosses the dateline and a VL 0 route does not,
  // and no route goes more than half way round (a broken ring closes nothing), so
  // neither VL's routes close the ring; between dimensions DOR's order leaves no cycle.
  // (Each switch's SL2VL table per input and output port; end ports on VL 0.)
  //
  // Routes that turned early: first as torus-2QoS, every SL kept and the hop that turns
  // back to an earlier dimension on a VL of its own (the next VL bit). That is
  // deadlock-free round one failed switch; round a longer gap (a line cut, a ring split
  // in two) detours on either side of it can close a cycle round it, through the hops
  // after the turn. Then the paths that turn early take an SL of their own instead (SL
  // bit D; a torus without datelines: bit 0), and all their hops its VL bit: they only
  // meet each other there. The other paths keep their SLs either way.
  const unsigned dl_bits = layered ? unsigned(D) : 0;  // SL bits the datelines take
  auto make_maps = [&](bool by_class) {
    const unsigned sls = 1u << (dl_bits + (by_class ? 1 : 0));
    const unsigned extra = layered ? 2 : 1;  // the VL bit after the dateline's
    uint64_t base = ~uint64_t(0);  // SLs the routes use on VL 0, the rest the QoS policy's
    for (unsigned sl = 0; sl < sls; ++sl) base &= ~(uint64_t(0xF) << (4 * sl));
    out.end_vl = base;
    out.hop_vl.assign(f.size(), {});
    std::vector<int> dim_of;  // per port: the dimension it leads along (-1: none)
    for (uint32_t s = 0; s < ns; ++s) {
      const NodeIndex n = sw.nodes[s];
      const size_t np = f.node(n).ports.size();
      dim_of.assign(np, -1);
      for (auto [m, p] : ports[s])
        for (size_t d = 0; d < D && dim_of[p] < 0; ++d)
          if (lab[s][2 * d] == m || lab[s][2 * d + 1] == m) dim_of[p] = int(d);
      auto& maps = out.hop_vl[n];
      maps.assign(np * np, base);
      for (size_t in = 0; in < np; ++in)
        for (size_t o2 = 0; o2 < np; ++o2) {
          const int d = dim_of[o2];
          if (d < 0) continue;
          const bool back = !by_class && early && dim_of[in] > d;
          uint64_t& map = maps[in * np + o2];
          for (unsigned sl = 0; sl < sls; ++sl) {
            unsigned vl = dateline(size_t(d)) ? sl >> d & 1 : 0;
            if (back || (by_class && (sl >> dl_bits & 1))) vl |= extra;
            map |= uint64_t(vl) << (4 * sl);
          }
        }
    }
    out.vls = uint8_t((layered ? 2 : 1) * (early ? 2 : 1));
  };
  out.vls = layered ? 2 : 1;
  if (layered || early) make_maps(false);
  bool by_class = false;
  if (early) {
    out.deadlock_free = true;
    if (const CdgReport c = channel_dependencies(f, out); !c.acyclic) {
      by_class = true;
      sl_rows();
      for (auto [s, t] : detoured)
        for (auto [lid, exit] : lids_at[t]) out.path_sl[sw.nodes[s]][lid] |= uint8_t(1u << dl_bits);
      make_maps(true);
      if (const CdgReport again = channel_dependencies(f, out); !again.acyclic)
        return refuse(Refusal::kCreditLoop,
                      "dor: the routes that turn early round the gaps in the " + shape +
                          " close a credit loop (a dependency cycle of " +
                          std::to_string(again.cycle_length) + " channels on VL " +
                          std::to_string(again.cyclic_vl) + "), even on an SL of their own");
    }
  }
  if (out.vls > o.max_vls)
    return refuse(Refusal::kVirtualLanes, "dor: the " + shape + "'s " +
                                              (layered && early ? "datelines and early turns"
                                               : layered        ? "datelines"
                                                                : "early turns") +
                                              " need " + std::to_string(int(out.vls)) + " VLs, " +
                                              std::to_string(int(o.max_vls)) + " allowed");
  // Tables with per-hop maps carry every path's SL (0 here without datelines): the SA
  // must hand out the SL the maps were made and checked for, never the QoS policy's.
  if (early) sl_rows();
  out.notes.push_back("dor: " + shape + ", seed " + name_of(labels->seed) + "; " +
                      std::to_string(int(out.vls)) + " VL(s)" +
                      (layered ? " (SL bit d: the path crosses dimension d's dateline; a hop "
                                 "toward dimension d takes VL bit d of the SL, as torus-2QoS)"
                               : ""));
  if (labels->missing_links || labels->missing_switches)
    out.notes.push_back(
        "dor: " +
        (labels->missing_switches ? std::to_string(labels->missing_switches) + " switch(es) and "
                                  : std::string()) +
        std::to_string(labels->missing_links) + " link(s) of the shape missing; " +
        std::to_string(long_way) +
        " switch-to-switch route(s) take the long way round a broken ring, " +
        std::to_string(early) + " turn early round a gap" +
        (!early     ? ""
         : by_class ? " (" + std::to_string(detoured.size()) +
                          " switch-to-switch paths through those turns on SL bit " +
                          std::to_string(dl_bits) + " and its VL; every other path keeps its SL)"
                    : " (the hop that turns back on a VL of its own), every path keeping its SL"));
  if (o.adaptive) detail::parallel_link_groups(f, sw, out);
  out.deadlock_free = true;
  return std::move(out);
}

}  // namespace

}  // namespace weft::routing
