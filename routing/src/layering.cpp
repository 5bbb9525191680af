#include "layering.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <numeric>
#include <optional>
#include <string>

#include "dependency_layer.hpp"
#include "parallel.hpp"

namespace weft::routing::detail {

using fabric::Fabric;
using fabric::NodeIndex;

std::expected<Layering, Failure> layer_paths(const Fabric& f, const Switches& sw,
                                             const std::vector<LidOwner>& owners, Tables& out,
                                             const Options& o, std::string_view who,
                                             std::string_view what,
                                             const std::vector<uint16_t>& later,
                                             bool stop_if_acyclic, const KeptLayers* keep) {
  // Channels: directed inter-switch links, numbered by (node, port).
  const Channels ch = channels(f);
  const auto& base = ch.base;
  const auto& isl_peer = ch.isl_peer;
  const auto& port_of = ch.port;
  const size_t ns = sw.nodes.size();
  auto channel = [&](NodeIndex n, uint16_t lid) -> uint32_t {
    const auto& row = out.lft[n];
    if (lid >= row.size() || row[lid] == 0 || row[lid] == kDropPort) return ~0u;
    return ch.isl(n, row[lid]);
  };

  // The layers' initial order: reverse DFS postorder of all the routes' dependencies,
  // a topological order but for the edges that close cycles, so that most insertions
  // agree with it and cost nothing. The DFS also finds whether any edge closes a cycle
  // (one to a channel still on its stack): none, and one VL holds every route.
  std::vector<uint32_t> initial(base.back());
  bool cyclic = false;
  {
    // All dependencies, row by row in parallel (each switch owns its channels).
    std::vector<std::vector<uint32_t>> all(base.back());
    const auto& owners_all = owners;
    parallel_for(ns, [&](size_t i) {
      const NodeIndex n = sw.nodes[i];
      std::vector<std::array<uint64_t, 4>> mask(base[n + 1] - base[n], std::array<uint64_t, 4>{});
      for (const LidOwner& ow : owners_all) {
        const uint32_t a = channel(n, ow.lid.value);
        if (a == ~0u) continue;
        const uint32_t b = channel(isl_peer[a], ow.lid.value);
        if (b == ~0u) continue;
        const uint32_t q = b - base[isl_peer[a]];
        mask[a - base[n]][q >> 6] |= uint64_t(1) << (q & 63);
      }
      for (uint32_t k = 0; k < mask.size(); ++k)
        for (unsigned w = 0; w < 4; ++w)
          for (uint64_t bits = mask[k][w]; bits; bits &= bits - 1)
            all[base[n] + k].push_back(base[isl_peer[base[n] + k]] + w * 64 +
                                       static_cast<uint32_t>(__builtin_ctzll(bits)));
    });
    std::vector<uint8_t> state(all.size(), 0);  // 1: on the stack; 2: finished
    std::vector<std::pair<uint32_t, size_t>> stack;
    auto next = static_cast<uint32_t>(all.size());
    for (uint32_t s0 = 0; s0 < all.size(); ++s0) {
      if (state[s0]) continue;
      stack.assign(1, {s0, 0});
      state[s0] = 1;
      while (!stack.empty()) {
        auto& [v, i] = stack.back();
        if (i < all[v].size()) {
          const uint32_t w = all[v][i++];
          if (!state[w])
            state[w] = 1, stack.emplace_back(w, 0);
          else
            cyclic |= state[w] == 1;
        } else {
          initial[v] = --next;  // finished last = first in the order
          state[v] = 2;
          stack.pop_back();
        }
      }
    }
  }
  if (!cyclic && stop_if_acyclic) return Layering{.acyclic = true};
  // Paths one at a time, each into the lowest layer it leaves acyclic; per LID the
  // longest paths first (they have the most dependencies to fit). A path's layer is
  // its SL. Paths are walked, not stored, so memory stays at the layers' graphs.
  std::vector<DependencyLayer> layers;
  out.path_sl.assign(f.size(), {});
  for (NodeIndex n : sw.nodes) out.path_sl[n].assign(size_t(out.top_lid) + 1, 0);
  // A repair's previous SLs: a path's, and per LID whether it is mixed (a path changed, or
  // one kept an SL other than 0; the others go whole to layer 0 as fresh LIDs do).
  const size_t nl = size_t(out.top_lid) + 1;
  auto kept_sl = [&](uint32_t s, uint16_t lid) -> uint8_t {
    const auto& prev = keep->prev->path_sl;
    const NodeIndex was = (*keep->was)[sw.nodes[s]];
    return was < prev.size() && lid < prev[was].size() ? prev[was][lid] : 0;
  };
  const std::vector<uint32_t> none;
  auto changed_of = [&](uint16_t lid) -> const std::vector<uint32_t>& {
    return lid < keep->changed.size() ? keep->changed[lid] : none;
  };
  std::vector<uint8_t> mixed(keep ? nl : 0, 0);
  if (keep) {
    for (size_t lid = 0; lid < nl; ++lid)
      mixed[lid] = !changed_of(static_cast<uint16_t>(lid)).empty();
    if (!keep->prev->path_sl.empty()) {
      // Per core a mask over the LIDs, switch rows read in parallel, then merged.
      std::vector<std::vector<uint8_t>> any(2, std::vector<uint8_t>(nl, 0));
      parallel_for(
          2,
          [&](size_t part) {
            for (size_t s = ns * part / 2; s < ns * (part + 1) / 2; ++s)
              for (size_t lid = 0; lid < nl; ++lid)
                any[part][lid] |= kept_sl(static_cast<uint32_t>(s), static_cast<uint16_t>(lid));
          },
          1);
      for (size_t lid = 0; lid < nl; ++lid) mixed[lid] |= any[0][lid] | any[1][lid];
    }
  }
  std::vector<uint16_t> mixed_lids;
  std::vector<std::pair<uint32_t, uint32_t>> deps, added;
  uint64_t paths = 0, whole = 0;
  // Searches in a layer's order: short first for single paths (most of which fit where
  // their routes already are), long before a new layer is opened.
  // Branches get a shorter search still: a branch refused early is split, not lost
  // (the radix-56 tree's deferred LIDs: 6.7 s at 48, 6.4 s at 16, 10.8 s at 192 and
  // 37 s at 1,024, 4 VLs each).
  constexpr size_t kShortSearch = 512, kLongSearch = 1 << 14, kBranchSearch = 48;
  // Per phase (whole LIDs, branches, short and long path searches): tries and fits,
  // for the progress report.
  struct Tally {
    uint64_t tries = 0, fits = 0;
  };
  Tally whole_t, branch_t, short_t, long_t;
  Tally* tally = &whole_t;
  // Adds `deps` to a layer, or nothing when one would close a cycle; `done` records
  // what was added, for an undo. Touches nothing but the layer and `done`, so two
  // layers can be tried at once.
  using Edges = std::vector<std::pair<uint32_t, uint32_t>>;
  auto undo = [](DependencyLayer& layer, const Edges& done) {
    for (auto it = done.rbegin(); it != done.rend(); ++it) layer.undo(it->first, it->second);
  };
  auto try_on = [&](DependencyLayer& layer, size_t limit, Edges& done) {
    done.clear();
    for (auto [a, b] : deps) {
      if (layer.has(a, b)) continue;
      if (!layer.add(a, b, limit)) {
        undo(layer, done);
        return false;
      }
      done.emplace_back(a, b);
    }
    return true;
  };
  auto try_layer = [&](DependencyLayer& layer, size_t limit) {
    ++tally->tries;
    const bool fits = try_on(layer, limit, added);
    tally->fits += fits;
    return fits;
  };
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point since) {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
  };
  auto counts = [](const Tally& t) {
    return std::to_string(t.fits) + " of " + std::to_string(t.tries) + " tries fit";
  };
  const auto t_whole = Clock::now();
  std::vector<uint32_t> hops(ns);
  std::vector<uint32_t> by_len(ns);
  // LIDs to try whole into layer 0: the CAs' first (they carry the traffic, and on
  // trees their routes are up*/down*, so they fit together), then the switches', then
  // those in `later`. Those that do not fit whole are layered path by path afterwards,
  // so that one LID's awkward routes do not crowd the others out of layer 0.
  std::vector<uint16_t> order;
  std::vector<uint8_t> is_later(size_t(out.top_lid) + 1, 0);
  for (const uint16_t lid : later)
    if (lid < is_later.size()) is_later[lid] = 1;
  for (int pass = 0; pass < 3; ++pass)
    for (const LidOwner& ow : owners) {
      const uint16_t lid = ow.lid.value;
      const bool last = lid < is_later.size() && is_later[lid];
      if (pass == 2 ? last : !last && f.node(ow.node).is_switch() == (pass == 1))
        order.push_back(lid);
    }
  std::vector<uint16_t> deferred;
  auto last_report = std::chrono::steady_clock::now();
  auto report = [&](const char* phase, size_t i, size_t n) {
    if (!o.progress || std::chrono::steady_clock::now() - last_report < std::chrono::seconds(5))
      return;
    last_report = std::chrono::steady_clock::now();
    o.progress(std::string(who) + ": " + std::string(phase) + ": " + std::to_string(i) + " of " +
               std::to_string(n) + " LIDs, " + std::to_string(layers.size()) + " VLs so far");
  };
  // Appends the dependencies of a route from channel `a` on: each channel and the next.
  auto route_deps = [&](uint32_t a, uint16_t lid) {
    for (size_t hop = 0; a != ~0u && hop <= ns; ++hop) {
      const uint32_t b = channel(isl_peer[a], lid);
      if (b != ~0u) deps.emplace_back(a, b);
      a = b;
    }
  };
  // The LIDs' dependencies are gathered a batch at a time, in parallel, 64 LIDs per
  // task (a cache line of each row): reading one LID down every switch's row misses the
  // cache at each switch, neighbouring LIDs share the cache lines. Those layer 0 holds
  // already are left out there (the layer only grows, so they would be skipped anyway),
  // which spares the single-threaded tries most of their lookups.
  constexpr size_t kBatch = 1024, kPerTask = 64;
  // By switch number: its first channel and its port count; per channel, the switch
  // number it leads to (~0u: no inter-switch link). The gather below reads these, not
  // the per-node arrays, for every switch and LID.
  std::vector<uint32_t> sw_base(ns), sw_ports(ns), peer_of(base.back(), ~0u);
  for (uint32_t i = 0; i < ns; ++i) {
    const NodeIndex n = sw.nodes[i];
    sw_base[i] = base[n], sw_ports[i] = base[n + 1] - base[n];
    for (uint32_t c = base[n]; c < base[n + 1]; ++c)
      if (isl_peer[c] != fabric::kNoNode) peer_of[c] = sw.of_node[isl_peer[c]];
  }
  // Switch i's channel by port p (as Channels::isl), or ~0u.
  auto isl_of = [&](uint32_t i, PortNum p) {
    const uint32_t c = sw_base[i] + p;
    return p < sw_ports[i] && peer_of[c] != ~0u ? c : ~0u;
  };
  std::vector<Edges> batch(kBatch);
  std::vector<uint8_t> has_deps(kBatch);
  for (size_t li = 0; li < order.size(); ++li) {
    report("whole LIDs", li, order.size());
    if (li % kBatch == 0) {
      const size_t n = std::min(kBatch, order.size() - li);
      const DependencyLayer* held = layers.empty() ? nullptr : &layers[0];
      parallel_for((n + kPerTask - 1) / kPerTask,
                   [&](size_t task) {
                     const size_t b0 = task * kPerTask, b1 = std::min(n, b0 + kPerTask);
                     for (size_t b = b0; b < b1; ++b) batch[b].clear(), has_deps[b] = 0;
                     // The task's entries of every row first (a cache line each), so that
                     // a route's next switch is read here, not at random in its row.
                     std::vector<PortNum> at(ns * kPerTask);
                     for (size_t i = 0; i < ns; ++i) {
                       const auto& row = out.lft[sw.nodes[i]];
                       for (size_t b = b0; b < b1; ++b) {
                         const uint16_t lid = order[li + b];
                         at[i * kPerTask + (b - b0)] = lid < row.size() ? row[lid] : kDropPort;
                       }
                     }
                     for (size_t i = 0; i < ns; ++i)
                       for (size_t b = b0; b < b1; ++b) {
                         const uint32_t a = isl_of(i, at[i * kPerTask + (b - b0)]);
                         if (a == ~0u) continue;
                         const uint32_t m = peer_of[a];
                         const uint32_t c = isl_of(m, at[size_t(m) * kPerTask + (b - b0)]);
                         if (c == ~0u) continue;
                         has_deps[b] = 1;
                         if (!held || !held->has(a, c)) batch[b].emplace_back(a, c);
                       }
                   },
                   1);
    }
    if (keep && mixed[order[li]]) {  // its kept paths to their layers, below
      mixed_lids.push_back(order[li]);
      continue;
    }
    // Every switch's first dependency toward the LID, but those layer 0 held before.
    deps.swap(batch[li % kBatch]);
    if (!has_deps[li % kBatch]) continue;
    if (layers.empty()) layers.emplace_back(initial, port_of);
    if (try_layer(layers[0], kLongSearch))
      ++whole;  // path_sl stays 0
    else
      deferred.push_back(order[li]);
  }
  if (o.progress)
    o.progress(std::string(who) + ": whole LIDs: " + std::to_string(whole) + " on VL 0 in " +
               ms(t_whole) + " ms; " + std::to_string(deferred.size()) + " deferred");
  const auto t_rest = Clock::now();
  // A deferred LID's routes form an in-tree toward it. Before its paths go one by one,
  // whole branches of the tree are tried on the existing layers (a branch: every
  // switch whose route passes one switch, with that switch's route on): most fit
  // where their neighbours' routes already are, and one try places many paths.
  std::vector<uint32_t> nxt(ns), kid_begin(ns + 1), kids, stack_sub;
  std::vector<uint8_t> placed(ns);
  size_t branches = 0;
  auto branch_deps = [&](uint32_t r, uint16_t lid) {
    deps.clear();
    stack_sub.assign(1, r);
    while (!stack_sub.empty()) {
      const uint32_t u = stack_sub.back();
      stack_sub.pop_back();
      const uint32_t a = channel(sw.nodes[u], lid);
      const uint32_t b = a == ~0u ? ~0u : channel(isl_peer[a], lid);
      if (b != ~0u) deps.emplace_back(a, b);
      for (uint32_t k = kid_begin[u]; k < kid_begin[u + 1]; ++k) stack_sub.push_back(kids[k]);
    }
    route_deps(channel(sw.nodes[nxt[r]], lid), lid);  // r's route on, past its first hop
  };
  auto mark_branch = [&](uint32_t r, uint16_t lid, uint8_t v) {
    stack_sub.assign(1, r);
    while (!stack_sub.empty()) {
      const uint32_t u = stack_sub.back();
      stack_sub.pop_back();
      placed[u] = 1;
      out.path_sl[sw.nodes[u]][lid] = v;
      for (uint32_t k = kid_begin[u]; k < kid_begin[u + 1]; ++k) stack_sub.push_back(kids[k]);
    }
  };
  // The lowest layer `deps` fits, or layers.size(). On large fabrics a path's layers are
  // tried two at a time, on two cores: v and v + 1 both, v + 1's edges taken out again
  // when v takes them too. Either way both tries run, so the layers end the same on any
  // machine. (On small ones a try takes less than handing it over.) Branches go a layer
  // at a time even there: their searches are short, and most fit the first layer tried
  // (radix-56 tree: 1.38 M of 2.02 M tries), so a pair's second try was mostly wasted
  // and its hand-over cost more than the try (the deferred LIDs 7.8-8.0 s in pairs,
  // 4.5-5.8 s a layer at a time).
  const bool in_pairs = ns * owners.size() > o.large_fabric;
  std::optional<Partner> partner;
  if (in_pairs) partner.emplace(!o.one_core && std::thread::hardware_concurrency() > 1);
  Edges added_b;
  auto place = [&](size_t limit, bool paired) {
    if (!in_pairs || !paired) {
      size_t v = 0;
      while (v < layers.size() && !try_layer(layers[v], limit)) ++v;
      return v;
    }
    for (size_t v = 0; v < layers.size(); v += 2) {
      const bool pair = v + 1 < layers.size();
      bool b_fits = false;
      auto other = [&] { b_fits = try_on(layers[v + 1], limit, added_b); };
      if (pair) partner->post(other);
      const bool a_fits = try_on(layers[v], limit, added);
      if (pair) partner->wait();
      tally->tries += 1 + pair;
      tally->fits += a_fits + b_fits;
      if (a_fits) {
        if (b_fits) undo(layers[v + 1], added_b);
        return v;
      }
      if (b_fits) return v + 1;
    }
    return layers.size();
  };
  // One path, from switch s to lid, into the lowest layer it fits (short searches first,
  // then long ones), or a new one; false when that would be one more than o.max_vls.
  auto place_path = [&](uint32_t s, uint16_t lid) {
    deps.clear();
    route_deps(channel(sw.nodes[s], lid), lid);
    ++paths;
    tally = &short_t;
    size_t v = place(kShortSearch, /*paired=*/true);
    tally = &long_t;
    if (v == layers.size()) v = place(kLongSearch, /*paired=*/true);
    if (v == layers.size()) {
      if (layers.size() == o.max_vls) return false;
      layers.emplace_back(initial, port_of);
      try_layer(layers.back(), kLongSearch);
    }
    out.path_sl[sw.nodes[s]][lid] = static_cast<uint8_t>(v);
    return true;
  };
  auto too_many = [&] {
    return refuse(Refusal::kVirtualLanes, std::string(who) + ": the " + std::string(what) +
                                              " need more than " + std::to_string(int(o.max_vls)) +
                                              " VLs to be deadlock-free");
  };
  // Each path's switches in the in-tree toward lid: nxt[s], the switch s's route leads to
  // (~0u: none), and hops[s], the channels of s's path; by_len, the switches, longest
  // path first.
  auto in_tree = [&](uint16_t lid) {
    for (uint32_t s = 0; s < ns; ++s) {
      const uint32_t a = channel(sw.nodes[s], lid);
      nxt[s] = a == ~0u ? ~0u : sw.of_node[isl_peer[a]];
    }
    for (uint32_t s = 0; s < ns; ++s) {
      hops[s] = 0;
      uint32_t a = channel(sw.nodes[s], lid);
      for (; a != ~0u && hops[s] <= ns; ++hops[s]) a = channel(isl_peer[a], lid);
    }
    std::iota(by_len.begin(), by_len.end(), 0u);
    std::stable_sort(by_len.begin(), by_len.end(),
                     [&](uint32_t x, uint32_t y) { return hops[x] > hops[y]; });
  };
  // A repair's mixed LIDs: each one's kept paths to their previous layers, a layer's
  // dependencies (those of every kept path on it, through each switch they pass) at once.
  // The changed paths, and the kept ones a layer refuses, are then placed one by one.
  uint64_t kept = 0;
  std::vector<std::pair<uint16_t, uint32_t>> afresh;  // (LID, switch)
  {
    std::vector<uint32_t> on(ns);           // per switch: the layers of the kept paths through it
    std::vector<uint8_t> changed_here(ns);  // per switch: its path changed
    tally = &whole_t;
    for (const uint16_t lid : mixed_lids) {
      in_tree(lid);
      for (uint32_t s : changed_of(lid)) changed_here[s] = 1;
      std::fill(on.begin(), on.end(), 0);
      for (const uint32_t s : by_len) {
        if (hops[s] == 0) continue;  // no channel: no layer to keep or find
        const uint8_t v = kept_sl(s, lid);
        if (changed_here[s] || v >= o.max_vls || v >= 32) {
          if (hops[s] >= 2) afresh.emplace_back(lid, s);
        } else {
          on[s] |= uint32_t(1) << v;
          out.path_sl[sw.nodes[s]][lid] = v;
        }
        if (nxt[s] != ~0u) on[nxt[s]] |= on[s];
      }
      uint32_t layers_used = 0, refused = 0;
      for (uint32_t s = 0; s < ns; ++s) layers_used |= on[s];
      for (uint32_t v = 0; v < 32; ++v) {
        if (!(layers_used >> v & 1)) continue;
        deps.clear();
        for (uint32_t u = 0; u < ns; ++u) {
          if (!(on[u] >> v & 1) || nxt[u] == ~0u) continue;
          const uint32_t a = channel(sw.nodes[u], lid), b = channel(sw.nodes[nxt[u]], lid);
          if (b != ~0u) deps.emplace_back(a, b);
        }
        while (layers.size() <= v) layers.emplace_back(initial, port_of);
        if (deps.empty() || try_layer(layers[v], kLongSearch)) continue;
        refused |= uint32_t(1) << v;
        for (const uint32_t s : by_len)  // refused: its kept paths placed afresh
          if (hops[s] >= 2 && !changed_here[s] && kept_sl(s, lid) == v) afresh.emplace_back(lid, s);
      }
      for (const uint32_t s : by_len) {
        const uint8_t v = kept_sl(s, lid);
        kept += hops[s] > 0 && !changed_here[s] && v < 32 && (layers_used & ~refused) >> v & 1;
      }
      for (uint32_t s : changed_of(lid)) changed_here[s] = 0;
    }
    for (const auto& [lid, s] : afresh)
      if (!place_path(s, lid)) return too_many();
  }
  // On small fabrics paths one by one are cheap and take the fewest VLs.
  const bool use_branches = ns * deferred.size() > o.large_fabric / 80;  // deferred paths
  for (size_t li = 0; li < deferred.size(); ++li) {
    const uint16_t lid = deferred[li];
    report("paths of the other LIDs", li, deferred.size());
    in_tree(lid);
    std::fill(kid_begin.begin(), kid_begin.end(), 0);
    for (uint32_t s = 0; s < ns; ++s)
      if (nxt[s] != ~0u) ++kid_begin[nxt[s] + 1];
    for (uint32_t s = 0; s < ns; ++s) kid_begin[s + 1] += kid_begin[s];
    kids.assign(kid_begin[ns], 0);
    {
      std::vector<uint32_t> fill(kid_begin.begin(), kid_begin.end() - 1);
      for (uint32_t s = 0; s < ns; ++s)
        if (nxt[s] != ~0u) kids[fill[nxt[s]]++] = s;
    }
    std::fill(placed.begin(), placed.end(), 0);
    // Branches from the top down: a branch that fits nowhere is split into its own path
    // (left to the path-by-path pass) and its children's branches.
    std::vector<uint32_t> todo;
    // The branches below the destination's neighbours (whose own one-hop paths have no
    // dependency): whole branches one level higher take more VLs in the end.
    for (uint32_t s = 0; s < ns && use_branches; ++s)
      if (nxt[s] != ~0u && channel(sw.nodes[nxt[s]], lid) == ~0u)
        for (uint32_t k = kid_begin[s]; k < kid_begin[s + 1]; ++k) todo.push_back(kids[k]);
    while (!todo.empty()) {
      const uint32_t r = todo.back();
      todo.pop_back();
      branch_deps(r, lid);
      if (deps.empty()) continue;
      tally = &branch_t;
      const size_t v = place(kBranchSearch, /*paired=*/false);
      if (v < layers.size()) {
        ++branches;
        mark_branch(r, lid, static_cast<uint8_t>(v));
        continue;
      }
      for (uint32_t k = kid_begin[r]; k < kid_begin[r + 1]; ++k) todo.push_back(kids[k]);
    }
    for (uint32_t s : by_len) {
      if (hops[s] < 2) break;  // one channel or none: no dependency
      if (placed[s]) continue;
      if (!place_path(s, lid)) return too_many();
    }
  }
  if (o.progress)
    o.progress(std::string(who) + ": the deferred LIDs in " + ms(t_rest) + " ms: branches " +
               counts(branch_t) + ", paths " + counts(short_t) + " at a short search, " +
               counts(long_t) + " at a long one");
  out.vls = static_cast<uint8_t>(std::max<size_t>(1, layers.size()));
  return Layering{.whole = whole,
                  .deferred = deferred.size(),
                  .branches = branches,
                  .paths = paths,
                  .kept = kept,
                  .afresh = afresh.size()};
}

}  // namespace weft::routing::detail
