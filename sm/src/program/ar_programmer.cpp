// Adaptive routing: capability asked by device model, groups and AR LFT written where
// they differ, AR on last (after LinearFDBTop, once every entry it names is in place).
#include "ar_programmer.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "lft_programmer.hpp"
#include "weft/log.hpp"

namespace weft::sm {

using fabric::NodeIndex;

ArProgrammer::Want ArProgrammer::want_of(const routing::Tables& t, NodeIndex n, uint16_t cap,
                                         bool on,
                                         const std::map<uint32_t, mad::ArGroupBlock>& held) {
  Want w;
  if (!on || n >= t.ar_sets.size() || n >= t.ar_group.size() || n >= t.lft.size()) return w;
  const auto& sets = t.ar_sets[n];
  const auto& of = t.ar_group[n];
  // LIDs per group; the most used keep a group number (group 0 is never used).
  std::vector<size_t> uses(sets.size(), 0);
  for (uint16_t g : of)
    if (g != routing::Tables::kNoArGroup && g < uses.size()) ++uses[g];
  std::vector<size_t> order(sets.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&uses](size_t a, size_t b) { return uses[a] > uses[b]; });
  // Group 0 is never used; the entries written (whole blocks, up to GroupTop's) must all
  // lie within GroupCap: with an odd cap the last entry cannot be used.
  const size_t room = cap >= 2 ? size_t(cap) - 1 - (cap % mad::kArGroupsPerBlock) : 0;
  std::vector<uint16_t> number(sets.size(), 0);  // 0: not held
  std::vector<size_t> kept;
  for (size_t i : order) {
    if (uses[i] == 0) continue;
    if (kept.size() == room) {
      ++w.dropped;
      continue;
    }
    kept.push_back(i);
  }
  std::sort(kept.begin(), kept.end());  // the engine's order
  // Numbers: a kept group keeps the number the switch holds it under (so that a reroute
  // rewrites only the groups and entries it changed: weft's choice, as the engines
  // number their groups afresh each time); the others take the lowest free numbers, in
  // the engine's order. Masks are keyed as words (GCC 12 at -O3 warns falsely on
  // comparing byte arrays, -Wstringop-overread).
  using Key = std::array<uint64_t, 4>;
  auto key_of = [](const mad::ArPortMask& m) {
    Key k{};
    for (size_t i = 0; i < m.size(); ++i) k[i / 8] |= uint64_t(m[i]) << (8 * (i % 8));
    return k;
  };
  std::map<Key, uint16_t> was;  // held mask -> its number
  for (size_t g = 1; g <= room; ++g)
    if (auto b = held.find(uint32_t(g / mad::kArGroupsPerBlock)); b != held.end())
      was.emplace(key_of(b->second[g % mad::kArGroupsPerBlock]), uint16_t(g));
  std::vector<uint8_t> taken(room + 1, 0);
  std::vector<mad::ArPortMask> mask(kept.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    for (PortNum p : sets[kept[k]]) mad::ar_mask_set(mask[k], p);
    if (auto it = was.find(key_of(mask[k])); it != was.end() && !taken[it->second])
      number[kept[k]] = it->second, taken[it->second] = 1;
  }
  uint16_t next = 1;
  for (size_t k = 0; k < kept.size(); ++k) {
    if (number[kept[k]]) continue;
    while (taken[next]) ++next;
    number[kept[k]] = next;
    taken[next] = 1;
  }
  for (size_t k = 0; k < kept.size(); ++k) w.group_top = std::max(w.group_top, number[kept[k]]);
  w.on = w.group_top > 0;
  if (!w.on) return w;
  // Entries 0 .. group_top; numbers no kept group has are left empty.
  w.groups.assign((size_t(w.group_top) + mad::kArGroupsPerBlock) / mad::kArGroupsPerBlock,
                  mad::ArGroupBlock{});
  for (size_t k = 0; k < kept.size(); ++k) {
    const uint16_t g = number[kept[k]];
    w.groups[g / mad::kArGroupsPerBlock][g % mad::kArGroupsPerBlock] = mask[k];
  }
  const auto& lft = t.lft[n];
  w.lft.assign(size_t(t.top_lid) / mad::kArLftLids + 1, mad::ArLftBlock{});
  for (size_t lid = 0; lid < w.lft.size() * mad::kArLftLids; ++lid) {
    mad::ArLftEntry& e = w.lft[lid / mad::kArLftLids][lid % mad::kArLftLids];
    e.default_port = lid < lft.size() ? lft[lid] : kDropPort;
    const uint16_t g = lid < of.size() ? of[lid] : routing::Tables::kNoArGroup;
    if (lid <= t.top_lid && g != routing::Tables::kNoArGroup && g < number.size() && number[g]) {
      e.state = mad::ArLidState::kBounded;
      e.group = number[g];
    }
  }
  return w;
}

std::map<uint64_t, ArView> ArProgrammer::view(const fabric::Fabric& f) const {
  std::map<uint64_t, ArView> out;
  for (const auto& [g, h] : held_) {
    auto n = f.find(g);
    if (!n || !f.node(*n).is_switch()) continue;
    ArView& v = out[g.value];
    v.supported = h.info.has_value();
    if (!h.info) continue;
    v.enabled = h.info->enabled;
    v.group_cap = h.info->group_cap;
    v.group_top = h.info->group_top;
    const uint32_t stride = h.info->sub_grps_active + 1u;
    v.groups.resize(size_t(v.group_top) + 1);
    for (uint16_t grp = 1; grp <= v.group_top; ++grp) {
      const uint32_t e = grp * stride;
      auto b = h.groups.find(e / mad::kArGroupsPerBlock);
      if (b == h.groups.end()) continue;
      for (uint32_t p = 1; p <= f.node(*n).num_ports; ++p)
        if (mad::ar_mask_has(b->second[e % mad::kArGroupsPerBlock], p))
          v.groups[grp].push_back(PortNum(p));
    }
    for (const auto& [block, blk] : h.lft)
      for (uint32_t i = 0; i < mad::kArLftLids; ++i)
        if (blk[i].state != mad::ArLidState::kStatic && blk[i].group <= v.group_top)
          v.entries.push_back(
              {uint16_t(block * mad::kArLftLids + i), blk[i].group, blk[i].default_port});
  }
  return out;
}

void ArProgrammer::step(Step s, SweepRun& run) {
  // The answers of both come in before kConfigure: turning AR off and the writes go by
  // them (check() plans group numbers on what was believed before).
  if (s == Step::kSpotCheck) spot_check(run);
  if (s == Step::kCheck) check(run);
  if (s == Step::kConfigure) turn_off(run);
  if (s == Step::kCommit) write_groups(run);
  if (s == Step::kTables) write_lft(run);
  if (s == Step::kActivate) write_info(run);
}

namespace {

// Whether block b of a table, as weft wants it, is not what the switch is known to hold.
template <class Block>
bool differs(const std::map<uint32_t, Block>& held, uint32_t b, const Block& want) {
  auto it = held.find(b);
  return it == held.end() || it->second != want;
}

template <class Block>
bool any_differs(const std::map<uint32_t, Block>& held, const std::vector<Block>& want) {
  for (uint32_t b = 0; b < want.size(); ++b)
    if (differs(held, b, want[b])) return true;
  return false;
}

}  // namespace

// How each table goes on the wire, and what counts its writes.
const ArProgrammer::TableWire<mad::ArGroupBlock> ArProgrammer::kGroupWire{
    mad::kAttrArGroupTable, mad::ar_group_modifier, mad::encode_ar_group_block,
    &SweepReport::ar_group_blocks_written, "AR group block"};
const ArProgrammer::TableWire<mad::ArLftBlock> ArProgrammer::kLftWire{
    mad::kAttrArLft, mad::ar_lft_modifier, mad::encode_ar_lft_block,
    &SweepReport::ar_lft_blocks_written, "AR LFT block"};

bool ArProgrammer::changes(const Held& h, const Plan& p) const {
  if (!p.want.on) return false;
  return any_differs(h.groups, p.want.groups) || any_differs(h.lft, p.want.lft) ||
         (h.info && h.info->sub_grps_active != 0);
}

template <class Block>
void ArProgrammer::write_table(SweepRun& run, NodeIndex n, const std::vector<Block>& want,
                               std::map<uint32_t, Block> Held::*table, const TableWire<Block>& w) {
  const Guid g = run.target.node(n).guid;
  const auto& held = held_[g].*table;
  for (uint32_t b = 0; b < want.size(); ++b) {
    if (!differs(held, b, want[b])) continue;
    const Block blk = want[b];
    eng_.submit(
        to_switch(run, n,
                  mad::SmpRequest::set(w.attr, w.modifier(b), run.d.paths[n], w.encode(blk))),
        [this, &run, n, g, b, blk, table, &w](Result<mad::Smp> r) {
          auto& now = held_[g].*table;
          if (r) {
            ++(run.rep.*w.written);
            now[b] = blk;
            return;
          }
          now.erase(b);
          if (auto pl = plans_.find(n); pl != plans_.end()) pl->second.failed = true;
          ++run.rep.ar_failures;
          WEFT_LOG(Warn, "AR-0004")
              << "switch " << fabric::port_ref(run.target, n, 0) << ": " << w.what << " " << b
              << ": " << r.error().message << "; AR off there";
        });
  }
}

void ArProgrammer::check(SweepRun& run) {
  plans_.clear();
  const fabric::Fabric& f = run.target;
  std::map<Model, std::vector<NodeIndex>> ask;
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (!nd.is_switch()) continue;
    // What a switch was seen to hold goes with the LFT programmer's trust in it (a
    // reset, another writer, a new term).
    auto h = held_.find(nd.guid);
    const bool was_on =
        (h != held_.end() && h->second.info && h->second.info->enabled) || must_off_.count(nd.guid);
    if (h != held_.end() && !lfts_.trusted(run, n)) {
      held_.erase(h);
      h = held_.end();
    }
    // Without AR asked, only switches weft turned AR on in are visited, and every switch
    // in a new term's first sweep (another SM may have left AR on, with groups that no
    // longer match the tables weft writes): AR is turned off wherever it is found on.
    if (!run.adaptive && !was_on && !run.rep.new_term) continue;
    if (h != held_.end() && h->second.unsupported) {
      ++run.rep.ar_static;
      continue;
    }
    if (h != held_.end() && h->second.info) {
      planned(run, n);
      continue;
    }
    const Model m{nd.vendor_id, nd.device_id, nd.revision};
    if (auto v = models_.find(m); v != models_.end() && v->second == Verdict::kSilent) {
      ++run.rep.ar_static;
      continue;
    }
    ask[m].push_back(n);
  }
  for (auto& [m, nodes] : ask) {
    if (models_.count(m)) {  // known to answer: every switch at once
      for (NodeIndex n : nodes) ask_info(run, n, false, {});
      continue;
    }
    const NodeIndex first = nodes.front();
    nodes.erase(nodes.begin());
    ask_info(run, first, true, std::move(nodes));
  }
}

void ArProgrammer::spot_check(SweepRun& run) {
  const uint64_t round = next_round();
  for (NodeIndex n = 0; n < run.target.size(); ++n) {
    if (!run.target.node(n).is_switch() || !lfts_.trusted(run, n)) continue;
    check_blocks(run.target, n, run.d.paths[n], round, [&run](size_t answered, bool differs) {
      run.rep.ar_blocks_checked += answered;
      run.rep.ar_switches_changed += differs;
    });
  }
}

void ArProgrammer::check_blocks(const fabric::Fabric& f, NodeIndex n, const mad::DrPath& path,
                                uint64_t round,
                                std::function<void(size_t answered, bool differs)> done) {
  const Guid g = f.node(n).guid;
  auto hit = held_.find(g);
  if (hit == held_.end() || !hit->second.info) return;
  const Held& h = hit->second;
  // What weft believes the switch holds, in one order: AdaptiveRoutingInfo, the group
  // blocks, the AR LFT blocks.
  struct Item {
    uint16_t attr;
    uint32_t block;
  };
  std::vector<Item> items{{mad::kAttrArInfo, 0}};
  for (const auto& b : h.groups) items.push_back({mad::kAttrArGroupTable, b.first});
  for (const auto& b : h.lft) items.push_back({mad::kAttrArLft, b.first});
  const size_t count = std::min<size_t>(opts_.drift_check_blocks, items.size());
  if (count == 0) return;
  auto c = std::make_shared<SpotCheck>(count, std::move(done));
  const std::string where = fabric::port_ref(f, n, 0);
  const size_t first = SpotCheck::first(round, count, g, items.size());
  for (size_t k = 0; k < count; ++k) {
    const Item it = items[(first + k) % items.size()];
    const uint32_t mod = it.attr == mad::kAttrArInfo         ? 0
                         : it.attr == mad::kAttrArGroupTable ? mad::ar_group_modifier(it.block)
                                                             : mad::ar_lft_modifier(it.block);
    eng_.submit(
        mad::SmpRequest::get(it.attr, mod, path), [this, g, it, where, c](Result<mad::Smp> r) {
          auto held = held_.find(g);
          if (r && held != held_.end() && held->second.info) {
            Held& h = held->second;
            bool differs = false;
            // Taken as held: the next programming writes back just what differs.
            if (it.attr == mad::kAttrArInfo) {
              const mad::ArInfo now = mad::decode_ar_info(r->data);
              differs = now.enabled != h.info->enabled || now.group_top != h.info->group_top ||
                        now.sub_grps_active != h.info->sub_grps_active;
              if (differs) h.info = now;
            } else if (it.attr == mad::kAttrArGroupTable) {
              const mad::ArGroupBlock now = mad::decode_ar_group_block(r->data);
              differs = h.groups[it.block] != now;
              h.groups[it.block] = now;
            } else {
              const mad::ArLftBlock now = mad::decode_ar_lft_block(r->data);
              differs = h.lft[it.block] != now;
              h.lft[it.block] = now;
            }
            if (c->in(true, differs)) {
              WEFT_LOG(Warn, "AR-0006")
                  << "switch " << where << ": " << mad::attr_name(it.attr) << " (block " << it.block
                  << ") is not what weft wrote or read (another writer, no other "
                     "sign): writing back what differs";
              if (on_drift_) on_drift_(g, where);
            }
          }
          c->read_done();
        });
  }
}

void ArProgrammer::ask_info(SweepRun& run, NodeIndex n, bool probe, std::vector<NodeIndex> rest) {
  mad::SmpRequest req = mad::SmpRequest::get(mad::kAttrArInfo, 0, run.d.paths[n]);
  if (probe) {
    req.retries = 0;
    req.probe = true;
  }
  eng_.submit(req, [this, &run, n, probe, rest = std::move(rest)](Result<mad::Smp> r) {
    const auto& nd = run.target.node(n);
    const Model m{nd.vendor_id, nd.device_id, nd.revision};
    ++run.rep.ar_blocks_read;
    if (!r && r.error().code == Errc::kTimeout && probe) {
      models_[m] = Verdict::kSilent;
      run.rep.ar_static += 1 + rest.size();
      const std::string msg =
          "switch " + fabric::port_ref(run.target, n, 0) +
          " does not answer AdaptiveRoutingInfo: its model (" +
          fmt::format("vendor {:#x}, device {:#x}, revision {:#x}", m.vendor, m.device,
                      m.revision) +
          ", " + std::to_string(1 + rest.size()) +
          " switches here) keeps static routing, and is not asked again this master term";
      if (run.adaptive)
        WEFT_LOG(Warn, "AR-0001") << msg;
      else
        WEFT_LOG(Debug, "AR-0001") << msg;
      return;
    }
    // Without AR asked, a model whose first switch holds no AR is not asked further.
    const bool has_ar = r && mad::decode_ar_info(r->data).group_cap > 0;
    if (probe && (run.adaptive || has_ar)) {
      models_[m] = Verdict::kAnswers;
      for (NodeIndex o : rest) ask_info(run, o, false, {});
    }
    if (!r && r.error().code != Errc::kBadReply) {  // not an answer: this sweep only
      ++run.rep.ar_static;
      ++run.rep.ar_failures;
      WEFT_LOG(Warn, "AR-0004") << "switch " << fabric::port_ref(run.target, n, 0)
                                << ": AdaptiveRoutingInfo: " << r.error().message
                                << "; static routing there this sweep";
      return;
    }
    Held& h = held_[nd.guid];
    if (r) h.info = mad::decode_ar_info(r->data);
    if (r && !h.info->enabled) must_off_.erase(nd.guid);
    if (!r || h.info->group_cap == 0) {
      h.info.reset();
      h.unsupported = true;
      ++run.rep.ar_static;
      if (run.adaptive && told_.insert(nd.guid).second) untold_.push_back(n);
      return;
    }
    planned(run, n);
  });
}

void ArProgrammer::planned(SweepRun& run, NodeIndex n) {
  const Guid g = run.target.node(n).guid;
  Held& h = held_[g];
  ++run.rep.ar_capable;
  Plan& p = plans_[n];
  static const std::map<uint32_t, mad::ArGroupBlock> kNone;  // held with sub-groups: no hint
  p.want = want_of(run.tables, n, h.info->group_cap, run.adaptive,
                   h.info->sub_grps_active == 0 ? h.groups : kNone);
  run.rep.ar_groups_dropped += p.want.dropped;
  if (p.want.dropped && std::exchange(dropped_told_[g], p.want.dropped) != p.want.dropped) {
    WEFT_LOG(Info, "AR-0003") << "switch " << fabric::port_ref(run.target, n, 0) << ": GroupCap "
                              << h.info->group_cap << " holds " << p.want.group_top
                              << " of the routing's groups; the LIDs of " << p.want.dropped
                              << " others route statically there";
  }
  // Read what is to be written over, where weft does not know it.
  auto read = [&](uint16_t attr, uint32_t block, uint32_t mod) {
    eng_.submit(mad::SmpRequest::get(attr, mod, run.d.paths[n]),
                [this, &run, g, attr, block](Result<mad::Smp> r) {
                  ++run.rep.ar_blocks_read;
                  if (!r) return;  // unknown: written
                  Held& held = held_[g];
                  if (attr == mad::kAttrArGroupTable)
                    held.groups[block] = mad::decode_ar_group_block(r->data);
                  else
                    held.lft[block] = mad::decode_ar_lft_block(r->data);
                });
  };
  for (uint32_t b = 0; b < p.want.groups.size(); ++b)
    if (!h.groups.count(b)) read(mad::kAttrArGroupTable, b, mad::ar_group_modifier(b));
  for (uint32_t b = 0; b < p.want.lft.size(); ++b)
    if (!h.lft.count(b)) read(mad::kAttrArLft, b, mad::ar_lft_modifier(b));
}

void ArProgrammer::set_info(SweepRun& run, NodeIndex n, const mad::ArInfo& ai) {
  const Guid g = run.target.node(n).guid;
  eng_.submit(
      to_switch(run, n,
                mad::SmpRequest::set(mad::kAttrArInfo, 0, run.d.paths[n], mad::encode_ar_info(ai))),
      [this, &run, n, g, ai](Result<mad::Smp> r) {
        Held& h = held_[g];
        if (r) {
          ++run.rep.ar_info_sets;
          h.info = mad::decode_ar_info(r->data);
          if (!h.info->enabled) must_off_.erase(g);
          return;
        }
        ++run.rep.ar_failures;
        if (ai.enabled) {  // counted on when asked; static after all
          --run.rep.ar_enabled;
          ++run.rep.ar_static;
        } else {
          must_off_.insert(g);  // visited again until it is seen off
        }
        h.info.reset();  // unknown now: asked again next sweep
        WEFT_LOG(Warn, "AR-0004") << "switch " << fabric::port_ref(run.target, n, 0)
                                  << ": AdaptiveRoutingInfo " << (ai.enabled ? "on" : "off") << ": "
                                  << r.error().message;
      });
}

void ArProgrammer::turn_off(SweepRun& run) {
  if (!untold_.empty())
    WEFT_LOG(Info, "AR-0002") << untold_.size() << " switches have no adaptive routing "
                              << "(AdaptiveRoutingInfo refused or GroupCap 0; the first: "
                              << fabric::port_ref(run.target, untold_.front(), 0)
                              << "): static routing there";
  untold_.clear();
  // AR goes off before anything it uses changes: where it goes off for good, and where
  // the groups or AR LFT entries it forwards by are about to be rewritten (on again
  // once they are all in place).
  size_t found_on = 0;  // without AR asked: left on by another SM (or by weft before)
  NodeIndex first_on = 0;
  for (auto& [g, h] : held_) {
    if (!h.info || !h.info->enabled) continue;
    auto n = run.target.find(g);
    if (!n || !run.target.node(*n).is_switch()) continue;
    auto p = plans_.find(*n);
    if (p != plans_.end() && p->second.want.on && !changes(h, p->second)) continue;
    mad::ArInfo off = *h.info;
    off.enabled = false;
    if (!run.adaptive && found_on++ == 0) first_on = *n;
    set_info(run, *n, off);
  }
  if (found_on)
    WEFT_LOG(Info, "AR-0005") << found_on << " switches have adaptive routing on, which is not "
                              << "asked for (the first: "
                              << fabric::port_ref(run.target, first_on, 0)
                              << "): turned off, so that they forward by the tables weft writes";
}

void ArProgrammer::write_groups(SweepRun& run) {
  for (auto& [n, p] : plans_) {
    const Guid g = run.target.node(n).guid;
    Held& h = held_[g];
    // AR that should be off for this but could not be turned off: left alone.
    if (!h.info || (h.info->enabled && changes(h, p))) {
      p.failed = true;
      continue;
    }
    write_table(run, n, p.want.groups, &Held::groups, kGroupWire);
  }
}

void ArProgrammer::write_lft(SweepRun& run) {
  for (auto& [n, p] : plans_) {
    if (p.failed || !p.want.on) continue;
    write_table(run, n, p.want.lft, &Held::lft, kLftWire);
  }
}

void ArProgrammer::write_info(SweepRun& run) {
  // Not asked for, AR is only looked for (to turn it off): no switch counts as capable
  // or static.
  if (!run.adaptive) {
    run.rep.ar_capable = run.rep.ar_static = 0;
    return;
  }
  for (auto& [n, p] : plans_) {
    Held& h = held_[run.target.node(n).guid];
    if (!h.info) continue;
    mad::ArInfo want = *h.info;
    want.enabled = p.want.on && !p.failed;
    if (want.enabled) {
      want.group_top = p.want.group_top;
      want.sub_grps_active = 0;  // one sub-group a group: group g is table entry g
      ++run.rep.ar_enabled;
    } else {
      ++run.rep.ar_static;
    }
    if (!(want.enabled == h.info->enabled &&
          (!want.enabled || (want.group_top == h.info->group_top &&
                             want.sub_grps_active == h.info->sub_grps_active))))
      set_info(run, n, want);
  }
}

}  // namespace weft::sm
