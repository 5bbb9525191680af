// Torus and mesh coordinates: the labelling dor routes by, and detection from the
// switch graph alone (weft/routing/torus.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>

#include "torus_labels.hpp"

namespace weft::routing {

using fabric::Fabric;
using fabric::NodeIndex;

namespace detail {

namespace {

// "5x5x5 torus", "4x4 mesh"; a shape that mixes says which rings wrap: "3tx4mx5m".
std::string shape_of(const TorusSpec& T) {
  size_t rings = 0;
  for (size_t d = 0; d < T.radix.size(); ++d) rings += T.wraps(d);
  if (rings == 0 || rings == T.radix.size())
    return fmt::format("{} {}", fmt::join(T.radix, "x"), rings ? "torus" : "mesh");
  std::vector<std::string> dims;
  for (size_t d = 0; d < T.radix.size(); ++d)
    dims.push_back(std::to_string(T.radix[d]) + (T.wraps(d) ? "t" : "m"));
  return fmt::format("{} torus/mesh", fmt::join(dims, "x"));
}

// `unlinked`: a neighbour the description gives the seed may have lost its link to it
// (a failed cable does not move a switch): it is placed where the description puts it.
std::expected<TorusLabels, Failure> label_from_seed(const Fabric& f, const Switches& sw,
                                                    const TorusSpec& T, bool unlinked) {
  constexpr uint32_t kNone = kNoSwitch;
  const size_t ns = sw.nodes.size();
  const size_t D = T.radix.size();
  auto name_of = [&](uint32_t s) { return fabric::port_ref(f, sw.nodes[s], 0); };
  size_t expected = 1;
  for (int r : T.radix) expected *= size_t(r);
  TorusLabels L;
  L.shape = shape_of(T);
  const std::string& shape = L.shape;
  // Fewer switches: some failed, and their places stay empty (every switch is still
  // placed by the links, and checked).
  if (ns > expected)
    return refuse(Refusal::kTopology, "dor: the fabric has " + std::to_string(ns) +
                                          " switches; a " + shape + " has " +
                                          std::to_string(expected));
  L.missing_switches = expected - ns;

  // Distinct switch neighbours, and the ports to each.
  auto& nbrs = L.nbrs;
  auto& ports = L.ports;
  nbrs.resize(ns);
  ports.resize(ns);
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
  const uint32_t seed = L.seed = find_switch(T.seed);
  if (seed == kNone)
    return refuse(Refusal::kInvalidInput, "dor: the seed " + T.seed.str() + " is not a switch");

  // lab[s][2d] = +d neighbour, lab[s][2d+1] = -d neighbour (kNone: none).
  auto& lab = L.lab;
  auto& coord = L.coord;
  lab.assign(ns, std::vector<uint32_t>(2 * D, kNone));
  coord.assign(ns, {});
  auto fail_at = [&](uint32_t s, const std::string& why) {
    return refuse(Refusal::kTopology, "dor: not a " + shape + " at " + name_of(s) + ": " + why);
  };
  // The seed's given neighbours, + and -.
  bool across_failed = false;  // a given neighbour without its link to the seed
  for (size_t d = 0; d < D; ++d)
    for (int sg = 0; sg < 2; ++sg) {
      const std::vector<Guid>& given = sg ? T.minus : T.plus;
      const Guid g = d < given.size() ? given[d] : Guid{};
      if (!g.value) continue;
      const uint32_t p = find_switch(g);
      if (p == kNone || (!adjacent(seed, p) && !unlinked))
        return refuse(Refusal::kInvalidInput,
                      fmt::format("dor: {}{}_link: {} is not a switch linked to the seed {} "
                                  "(failed? a next_seed in the torus description is used then)",
                                  T.axis(d), sg ? 'm' : 'p', g.str(), T.seed.str()));
      across_failed |= !adjacent(seed, p);
      if (lab[seed][2 * d + size_t(1 - sg)] == p && T.radix[d] != 2)
        return refuse(Refusal::kInvalidInput,
                      fmt::format("dor: {0}p_link and {0}m_link name the same switch {1}",
                                  T.axis(d), g.str()));
      lab[seed][2 * d + size_t(sg)] = p;
    }
  // Every given link there: the labelling is the one without `unlinked`, already tried.
  if (unlinked && !across_failed)
    return refuse(Refusal::kInvalidInput,
                  "dor: the seed " + T.seed.str() + " lost no link the description gives it");
  // Where the origin lies from the seed (x_dateline): the seed's coordinates.
  std::vector<int> origin(D, 0);
  for (size_t d = 0; d < D && d < T.dateline.size(); ++d)
    origin[d] = ((-T.dateline[d]) % T.radix[d] + T.radix[d]) % T.radix[d];
  // The seed's neighbours not given: on a ring, the one opposite the given one; on a
  // mesh line, only where the seed is not at its end.
  {
    std::vector<uint32_t> free;
    for (uint32_t n : nbrs[seed])
      if (std::find(lab[seed].begin(), lab[seed].end(), n) == lab[seed].end()) free.push_back(n);
    auto common = [&](uint32_t a, uint32_t b) {
      size_t c = 0;
      for (uint32_t x : nbrs[a]) c += adjacent(x, b);
      return c;
    };
    // The one free neighbour `ok` takes (none, or more than one: left to another side;
    // `any`: the first will do, a radix-4 ring's two sides being alike).
    auto take = [&](size_t slot, auto&& ok, bool any) {
      auto hit = free.end();
      for (auto it = free.begin(); it != free.end(); ++it)
        if (ok(*it)) {
          if (hit != free.end()) return;
          hit = it;
          if (any) break;
        }
      if (hit == free.end()) return;
      lab[seed][slot] = *hit;
      free.erase(hit);
    };
    for (int pass = 0; pass < 2; ++pass)
      for (size_t d = 0; d < D; ++d) {
        const int k = T.radix[d];
        const bool has_p = lab[seed][2 * d] != kNone, has_m = lab[seed][2 * d + 1] != kNone;
        if (k == 1 || has_p == has_m) continue;  // both given, or (a failed link) neither
        const size_t want = 2 * d + (has_p ? 1 : 0);
        const uint32_t p = lab[seed][2 * d + (has_p ? 0 : 1)];
        if (!T.wraps(d)) {
          // A line: the other side exists unless the seed is at that end.
          if (pass == 1 || k == 2 || origin[d] == (has_p ? 0 : k - 1)) continue;
          take(
              want, [&](uint32_t n) { return common(n, p) == 1; }, false);
          continue;
        }
        if (k == 2) {
          lab[seed][want] = p;
          continue;
        }
        if ((k == 4) != (pass == 1)) continue;  // radix 4 last: any free neighbour will do
        if (k == 3)
          take(
              want, [&](uint32_t n) { return adjacent(n, p); }, false);
        else if (k == 4)
          take(
              want, [](uint32_t) { return true; }, true);
        else
          take(
              want, [&](uint32_t n) { return common(n, p) == 1; }, false);
      }
  }
  coord[seed] = origin;
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
        if (k == 2 && T.wraps(a)) lv[2 * a + sg] = u;  // a 2-ring: one neighbour both ways
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
            // No square: a link of it failed (or this is no torus). Left open: v's
            // neighbour that way, if it has one, is placed from another side, and the
            // check below holds every link to the coordinates.
            if (x != kNone) lv[2 * b + tg] = x;
          }
        }
        coord[v] = coord[u];
        coord[v][a] = (coord[u][a] + (sg ? -1 : 1) + k) % k;
        if (k >= 3) {
          uint32_t ahead = kNone;
          size_t open = 0;
          for (uint32_t c : nbrs[v])
            if (std::find(lv.begin(), lv.end(), c) == lv.end()) ++open, ahead = c;
          // More than one neighbour unplaced: a square did not close (a failed link);
          // which one is ahead is told from another side. One unplaced is ahead only
          // when every side the shape gives v across the other dimensions is placed:
          // else it may be the neighbour of a square that did not close, with the link
          // ahead failed; that too is told from another side.
          if (open > 2 * D) return fail_at(v, "more neighbours than a " + shape + " has");
          bool sides = true;
          for (size_t b = 0; b < D && sides; ++b)
            for (int tg = 0; tg < 2 && b != a && T.radix[b] > 1; ++tg) {
              const int c = coord[v][b] + (tg ? -1 : 1);
              const bool exists = T.wraps(b) || (c >= 0 && c < T.radix[b]);
              sides &= !exists || lv[2 * b + tg] != kNone;
            }
          if (open == 1 && sides) lv[2 * a + sg] = ahead;
        }
        q.push_back(v);
      }
  }
  // A given neighbour the seed has no link to placed its side of the seed (and the seed
  // on its side); the labels are rebuilt below from the coordinates and the links.
  if (unlinked)
    for (auto& n : lab[seed])
      if (n != kNone && !adjacent(seed, n)) {
        for (auto& back : lab[n])
          if (back == seed) back = kNone;
        n = kNone;
      }
  std::vector<uint32_t> at(expected, kNone);
  // Switches the squares did not reach (failed links around them left every square
  // open): placed by their placed neighbours, at the one free place next to every one
  // of them, as long as some is found.
  {
    std::vector<uint8_t> taken(expected, 0);
    for (uint32_t s = 0; s < ns; ++s)
      if (!coord[s].empty()) taken[place_of(T, coord[s])] = 1;
    auto adjacent_places = [&](const std::vector<int>& p, const std::vector<int>& r) {
      size_t apart = 0;
      bool one = true;
      for (size_t d = 0; d < D; ++d) {
        if (p[d] == r[d]) continue;
        ++apart;
        const int k = T.radix[d], diff = std::abs(p[d] - r[d]);
        one &= diff == 1 || (T.wraps(d) && diff == k - 1);
      }
      return apart == 1 && one;
    };
    std::vector<std::vector<int>> found;
    for (bool progress = true; progress;) {
      progress = false;
      for (uint32_t x = 0; x < ns; ++x) {
        if (!coord[x].empty()) continue;
        const uint32_t w0 = [&] {
          for (uint32_t w : nbrs[x])
            if (!coord[w].empty()) return w;
          return kNone;
        }();
        if (w0 == kNone) continue;
        found.clear();
        for (size_t d = 0; d < D; ++d)
          for (int sg : {1, -1}) {
            std::vector<int> p = coord[w0];
            p[d] += sg;
            const int k = T.radix[d];
            if (!T.wraps(d) && (p[d] < 0 || p[d] >= k)) continue;
            p[d] = (p[d] + k) % k;
            if (taken[place_of(T, p)] || std::find(found.begin(), found.end(), p) != found.end())
              continue;
            bool fits = true;
            for (uint32_t w : nbrs[x])
              if (!coord[w].empty()) fits &= adjacent_places(p, coord[w]);
            if (fits) found.push_back(p);
          }
        if (found.size() != 1) continue;
        coord[x] = found[0];
        taken[place_of(T, found[0])] = 1;
        progress = true;
      }
    }
  }
  // Check: everything labelled, coordinates unique and consistent, every link used.
  for (uint32_t s = 0; s < ns; ++s) {
    if (coord[s].empty()) return fail_at(s, "not reached from the seed");
    const size_t idx = place_of(T, coord[s]);
    if (at[idx] != kNone) return fail_at(s, "the same coordinates as " + name_of(at[idx]));
    at[idx] = s;
  }
  // The labels again, from the coordinates: the switch one step each way, where a link
  // reaches it (none: a failed link, or the edge of a mesh).
  for (uint32_t s = 0; s < ns; ++s) {
    for (size_t d = 0; d < D; ++d)
      for (int sg = 0; sg < 2; ++sg) {
        const int k = T.radix[d];
        std::vector<int> c = coord[s];
        c[d] += sg ? -1 : 1;
        uint32_t n = kNone;
        if (T.wraps(d) || (c[d] >= 0 && c[d] < k)) {
          c[d] = (c[d] + k) % k;
          if (const uint32_t there = at[place_of(T, c)];
              there != kNone && there != s && adjacent(s, there))
            n = there;
        }
        if (lab[s][2 * d + sg] != kNone && lab[s][2 * d + sg] != n)
          return fail_at(
              s, "neighbour " + name_of(lab[s][2 * d + sg]) + " is not where the shape puts it");
        lab[s][2 * d + sg] = n;
      }
    for (uint32_t n : nbrs[s])
      if (std::find(lab[s].begin(), lab[s].end(), n) == lab[s].end()) {
        // One coordinate apart by the radix less one: round the edge of a mesh.
        size_t apart = 0, edge = 0;
        for (size_t d = 0; d < D; ++d)
          if (coord[s][d] != coord[n][d])
            ++apart, edge += !T.wraps(d) && std::abs(coord[s][d] - coord[n][d]) == T.radix[d] - 1;
        return fail_at(s, apart == 1 && edge == 1
                              ? "a mesh has no link across its edge"
                              : "a link to " + name_of(n) + " no dimension explains");
      }
  }
  // Links the shape has between two switches the fabric has, and the fabric does not
  // (failed), counted once.
  for (uint32_t s = 0; s < ns; ++s)
    for (size_t d = 0; d < D; ++d) {
      const int k = T.radix[d];
      if (k == 1 || (!T.wraps(d) && coord[s][d] == k - 1) || (k == 2 && coord[s][d] == 1)) continue;
      std::vector<int> c = coord[s];
      c[d] = (c[d] + 1) % k;
      if (lab[s][2 * d] == kNone && at[place_of(T, c)] != kNone) ++L.missing_links;
    }

  return L;
}

}  // namespace

std::expected<TorusLabels, Failure> label_torus(const Fabric& f, const Switches& sw,
                                                const TorusSpec& T) {
  auto first = label_from_seed(f, sw, T, false);
  if (first) return first;
  // next_seed: the next seeds, in order, where the first does not hold (its switch or a
  // link of it gone), as torus-2QoS takes them. Then, beyond torus-2QoS, each seed that
  // lost a link to a neighbour the description gives it, again with that neighbour
  // placed where the description puts it (the checks after still hold every switch and
  // link to the shape). The first seed's reason if none holds.
  for (const TorusSeed& s : T.next_seeds)
    if (auto other = label_from_seed(f, sw, T.seeded(s), false)) return other;
  if (auto again = label_from_seed(f, sw, T, true)) return again;
  for (const TorusSeed& s : T.next_seeds)
    if (auto other = label_from_seed(f, sw, T.seeded(s), true)) return other;
  return first;
}

}  // namespace detail

std::expected<TorusCoordinates, Failure> torus_coordinates(const Fabric& f, const TorusSpec& spec) {
  const detail::Switches sw = detail::index_switches(f);
  auto labels = detail::label_torus(f, sw, spec);
  if (!labels) return std::unexpected(std::move(labels.error()));
  TorusCoordinates out;
  out.spec = spec;
  out.of_node.assign(f.size(), {});
  for (size_t s = 0; s < sw.nodes.size(); ++s)
    out.of_node[sw.nodes[s]] = std::move(labels->coord[s]);
  return out;
}

std::optional<TorusSpec> detect_torus(const Fabric& f) {
  constexpr uint32_t kNone = detail::kNoSwitch, kMany = kNone - 1;
  const detail::Switches sw = detail::index_switches(f);
  const size_t ns = sw.nodes.size();
  if (ns < 4) return std::nullopt;
  std::vector<std::vector<uint32_t>> nbrs(ns);
  for (uint32_t s = 0; s < ns; ++s) {
    for (const auto& p : f.node(sw.nodes[s]).ports)
      if (p.num && p.linked() && f.node(p.peer).is_switch()) nbrs[s].push_back(sw.of_node[p.peer]);
    std::sort(nbrs[s].begin(), nbrs[s].end());
    nbrs[s].erase(std::unique(nbrs[s].begin(), nbrs[s].end()), nbrs[s].end());
  }
  auto adjacent = [&](uint32_t a, uint32_t b) {
    return std::binary_search(nbrs[a].begin(), nbrs[a].end(), b);
  };
  // The neighbour of `cur` straight ahead of `prev`: the one that closes no square with
  // it (kNone: none, the end of a mesh's line; kMany: more than one, no grid here).
  auto ahead = [&](uint32_t prev, uint32_t cur) {
    uint32_t found = kNone;
    for (uint32_t c : nbrs[cur]) {
      if (c == prev) continue;
      bool square = false;
      for (uint32_t x : nbrs[c]) square |= x != cur && adjacent(x, prev);
      if (square) continue;
      if (found != kNone) return kMany;
      found = c;
    }
    return found;
  };
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& n : nbrs) lo = std::min(lo, n.size()), hi = std::max(hi, n.size());
  if (lo == 0) return std::nullopt;
  uint32_t seed = kNone;
  for (uint32_t s = 0; s < ns; ++s)
    if (nbrs[s].size() == lo &&
        (seed == kNone || f.node(sw.nodes[s]).guid < f.node(sw.nodes[seed]).guid))
      seed = s;
  const bool wrap = lo == hi;  // a mesh's corners have fewer neighbours than the rest
  // One walk per neighbour of the seed: its length, and where it came back (a torus).
  struct Walk {
    uint32_t first, last;
    int length;
  };
  std::vector<Walk> walks;
  for (uint32_t first : nbrs[seed]) {
    uint32_t prev = seed, cur = first;
    int length = 2;
    for (;; ++length) {
      const uint32_t next = ahead(prev, cur);
      if (next == kMany || length > int(ns)) return std::nullopt;
      if (next == kNone || next == seed) {
        if ((next == seed) != wrap) return std::nullopt;
        break;
      }
      prev = cur, cur = next;
    }
    walks.push_back({first, wrap ? cur : kNone, length});
  }
  auto guid = [&](uint32_t s) { return f.node(sw.nodes[s]).guid; };
  TorusSpec spec;
  spec.wrap = wrap;
  spec.seed = guid(seed);
  std::vector<std::pair<int, uint32_t>> dims;  // (radix, + neighbour)
  for (const Walk& w : walks) {
    if (wrap && w.length < 5) return std::nullopt;
    // A ring is walked both ways: keep the way that starts at the lower GUID.
    if (wrap && guid(w.last) < guid(w.first)) continue;
    dims.emplace_back(w.length, w.first);
  }
  if (dims.empty() || dims.size() > 3 || (wrap && dims.size() * 2 != walks.size()))
    return std::nullopt;
  // The longest dimension first (x across the page), then by GUID.
  std::sort(dims.begin(), dims.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : guid(a.second) < guid(b.second);
  });
  size_t places = 1;
  for (auto [radix, plus] : dims) {
    spec.radix.push_back(radix), spec.plus.push_back(guid(plus));
    places *= size_t(radix);
  }
  // A whole shape only (dor's labelling leaves the places of failed switches empty; a
  // detection that did would call too many fabrics tori).
  if (places != ns || !detail::label_torus(f, sw, spec)) return std::nullopt;
  return spec;
}

}  // namespace weft::routing
