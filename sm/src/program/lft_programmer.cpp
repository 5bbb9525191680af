// Linear forwarding tables: the blocks that differ, then LinearFDBTop, in two phases
// so that a switch's top moves only once its blocks are written.
#include "lft_programmer.hpp"

#include <algorithm>
#include <memory>

#include "weft/log.hpp"

namespace weft::sm {

using fabric::NodeIndex;

namespace {
// A planned block that is read first and written only where it differs.
constexpr uint32_t kReadFirst = 0x80000000u;

// Block b of a switch's row as weft writes it: entries past the row's end drop.
mad::LftBlock row_block(const std::vector<uint8_t>& row, size_t b) {
  mad::LftBlock blk;
  blk.fill(kDropPort);
  if (b * 64 < row.size())
    std::copy(row.begin() + b * 64, row.begin() + std::min(row.size(), (b + 1) * 64), blk.begin());
  return blk;
}
// The blocks a row covers (the last one may be cut short: its tail drops).
size_t blocks_of(const std::vector<uint8_t>& row) {
  return (row.size() + 63) / 64;
}
// Whether block b is the same in two rows.
bool same_block(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y, size_t b) {
  if (x.size() >= (b + 1) * 64 && y.size() >= (b + 1) * 64)
    return std::equal(x.begin() + b * 64, x.begin() + (b + 1) * 64, y.begin() + b * 64);
  return row_block(x, b) == row_block(y, b);
}
}  // namespace

void LftProgrammer::step(Step s, SweepRun& run) {
  if (s == Step::kSpotCheck) spot_check(run);
  if (s == Step::kConfigure) write_blocks(run);
  if (s == Step::kCommit) write_tops(run);
  if (s == Step::kPublished) adopt(run.published);
}

const std::vector<uint8_t>* LftProgrammer::held(Guid sw) const {
  if (auto it = own_.find(sw); it != own_.end()) return &it->second;
  auto it = shared_.find(sw.value);
  return it == shared_.end() ? nullptr : it->second;
}

void LftProgrammer::drop_belief(Guid sw) {
  own_.erase(sw);
  shared_.erase(sw.value);
  if (auto it = pending_.find(sw.value); it != pending_.end()) it->second.failed = true;
}

void LftProgrammer::remember_block(Guid sw, uint64_t sweep) {
  if (auto it = pending_.find(sw.value); it != pending_.end() && sweep == sweep_)
    ++it->second.confirmed;
}

void LftProgrammer::adopt(const std::shared_ptr<const SubnetSnapshot>& snap) {
  if (!snap) return;
  std::unordered_map<uint64_t, const std::vector<uint8_t>*> next;
  for (const auto& [g, p] : pending_) {
    // Every planned block confirmed: the switch holds the sweep's row (the blocks not
    // planned were already the same). A capped switch holds only part of it.
    const bool whole = !p.failed && !p.capped && p.confirmed == p.planned &&
                       p.n < snap->tables.lft.size() && p.n < snap->fabric.size() &&
                       snap->fabric.node(p.n).guid.value == g;
    if (!whole) {
      own_.erase(Guid{g});
      shared_.erase(g);
      continue;
    }
    next[g] = &snap->tables.lft[p.n];
    own_.erase(Guid{g});
  }
  // Beliefs of switches this sweep did not program, into the snapshot being let go:
  // kept, as rows of weft's own.
  for (const auto& [g, row] : shared_)
    if (!next.contains(g)) own_[Guid{g}] = *row;
  shared_ = std::move(next);
  adopted_ = snap;
  pending_.clear();
}

bool LftProgrammer::steady(Guid sw, uint16_t lft_top_now) const {
  auto it = tops_.find(sw.value);
  return it != tops_.end() && it->second != 0 && it->second == lft_top_now;
}

std::vector<std::pair<size_t, mad::LftBlock>> LftProgrammer::spot_blocks(Guid sw, uint64_t round,
                                                                         size_t count) const {
  std::vector<std::pair<size_t, mad::LftBlock>> out;
  const std::vector<uint8_t>* row = held(sw);
  if (!row || blocks_of(*row) == 0) return out;
  const size_t blocks = blocks_of(*row);
  // Switches check different blocks in one round (spread by GUID), each its every block
  // over ceil(blocks / count) rounds.
  count = std::min(count, blocks);
  const size_t first = SpotCheck::first(round, count, sw, blocks);
  for (size_t k = 0; k < count; ++k) {
    const size_t b = (first + k) % blocks;
    out.emplace_back(b, row_block(*row, b));
  }
  return out;
}

bool LftProgrammer::was_reset(const SweepRun& run, NodeIndex n) const {
  // A port state change, or a linked port not ACTIVE (weft left them all ACTIVE; a
  // reboot retrains every link; links weft leaves down are not in the target).
  const Discovered& d = run.d;
  const auto& nd = run.target.node(n);
  bool reset = d.switch_info[n].port_state_change;
  for (PortNum p = 1; p <= nd.num_ports && !reset; ++p)
    reset = nd.ports[p].linked() && d.port_read[n][p] &&
            d.port_info[n][p].attrs.state != fabric::PortState::kActive;
  return reset;
}

bool LftProgrammer::trusted(const SweepRun& run, NodeIndex n) const {
  // What weft believes a switch holds is valid only while it still holds the top weft
  // left it with (a reboot that zeroed it, another SM's or client's writes move it),
  // and shows no sign of having lost state since.
  const Guid g = run.target.node(n).guid;
  const std::vector<uint8_t>* row = held(g);
  auto left = tops_.find(g.value);
  const uint16_t top = run.d.switch_info[n].lft_top;
  return row && left != tops_.end() && left->second == top &&
         blocks_of(*row) == size_t(top) / 64 + 1 && !was_reset(run, n);
}

void LftProgrammer::spot_check(SweepRun& run) {
  const uint64_t round = next_round();
  for (NodeIndex n = 0; n < run.target.size(); ++n) {
    if (!run.target.node(n).is_switch() || !trusted(run, n)) continue;
    // By directed route: the LID routes go through the tables being checked.
    check_block(run.target, n, run.d.paths[n], round, [&run](size_t answered, bool differs) {
      run.rep.lft_blocks_checked += answered;
      if (differs) ++run.rep.lft_switches_changed;
    });
  }
}

void LftProgrammer::check_block(const fabric::Fabric& f, NodeIndex n, const mad::DrPath& path,
                                uint64_t round,
                                std::function<void(size_t answered, bool differs)> done) {
  const Guid g = f.node(n).guid;
  auto spots = spot_blocks(g, round, opts_.drift_check_blocks);
  if (spots.empty()) return;
  auto c = std::make_shared<SpotCheck>(spots.size(), std::move(done));
  const std::string where = fabric::port_ref(f, n, 0);
  for (auto& spot : spots)
    eng_.submit(mad::SmpRequest::get(mad::kAttrLft, static_cast<uint32_t>(spot.first), path),
                [this, g, spot, where, c](Result<mad::Smp> r) {
                  if (c->in(r.has_value(), r && mad::decode_lft_block(r->data) != spot.second)) {
                    WEFT_LOG(Warn, "SM-0055")
                        << "switch " << where << ": LFT block " << spot.first
                        << " is not what weft wrote (another writer, LinearFDBTop unchanged): "
                           "reading its tables back whole";
                    forget(g);
                    if (on_drift_) on_drift_(g, spot.first, where);
                  }
                  c->read_done();
                });
}

void LftProgrammer::forget(Guid sw) {
  drop_belief(sw);
  tops_.erase(sw.value);
}

void LftProgrammer::forget_all() {
  own_.clear();
  shared_.clear();
  adopted_.reset();
  for (auto& [g, p] : pending_) p.failed = true;
  tops_.clear();
}

void LftProgrammer::write_block(SweepRun& run, NodeIndex n, const mad::DrPath& path, size_t b,
                                const mad::LftBlock& blk) {
  const Guid g = run.target.node(n).guid;
  eng_.submit(to_switch(run, n,
                        mad::SmpRequest::set(mad::kAttrLft, static_cast<uint32_t>(b), path,
                                             mad::encode_lft_block(blk))),
              [this, &run, n, b, g, blk, sweep = sweep_](Result<mad::Smp> r) {
                // The reply to a Set carries the block as the switch holds it after the
                // write (a SubnSet is answered with the attribute after the Set): one that
                // differs was not taken as written.
                if (r && mad::decode_lft_block(r->data) == blk) {
                  ++run.rep.lft_blocks_written;
                  remember_block(g, sweep);
                  return;
                }
                ++run.rep.lft_failures;
                add_problem(run.rep, "LFT block " + std::to_string(b) + " on " +
                                         fabric::port_ref(run.target, n, 0) + ": " +
                                         (r ? std::string("the reply shows the block other than "
                                                          "written")
                                            : r.error().message));
                drop_belief(g);
              });
}

void LftProgrammer::read_then_write(SweepRun& run, NodeIndex n, const mad::DrPath& path, size_t b,
                                    const mad::LftBlock& blk) {
  const Guid g = run.target.node(n).guid;
  eng_.submit(
      to_switch(run, n, mad::SmpRequest::get(mad::kAttrLft, static_cast<uint32_t>(b), path)),
      [this, &run, n, path, b, blk, g, sweep = sweep_](Result<mad::Smp> r) {
        ++run.rep.lft_blocks_read;
        if (r && mad::decode_lft_block(r->data) == blk) {
          remember_block(g, sweep);
          return;
        }
        if (sweep == sweep_) write_block(run, n, path, b, blk);  // (not for a sweep gone by)
      });
}

size_t plan_lid_routes(SweepRun& run, const SubnetSnapshot& before, Lid sm_lid) {
  const fabric::Fabric& f = run.target;
  const Discovered& d = run.d;
  run.by_lid.assign(f.size(), 0);
  if (sm_lid != before.sm_lid || !sm_lid.is_unicast()) return 0;
  const auto& local = f.node(d.local_node);
  const PortNum lp = local.is_switch() ? 0 : d.local_port;
  if (!local.is_switch() &&
      (!local.ports[lp].linked() || !d.port_read[d.local_node][lp] ||
       d.port_info[d.local_node][lp].attrs.state != fabric::PortState::kActive))
    return 0;
  // A link usable now: in the target, both ends read ACTIVE this sweep.
  auto active = [&](fabric::NodeIndex n, PortNum p) {
    const auto& port = f.node(n).ports[p];
    return port.linked() && d.port_read[n][p] && d.port_read[port.peer][port.peer_port] &&
           d.port_info[n][p].attrs.state == fabric::PortState::kActive &&
           d.port_info[port.peer][port.peer_port].attrs.state == fabric::PortState::kActive;
  };
  // The old tables by the target's nodes (the snapshot's own indices may differ).
  std::vector<const std::vector<uint8_t>*> old(f.size(), nullptr);
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    if (!f.node(n).is_switch()) continue;
    auto b = before.fabric.find(f.node(n).guid);
    if (b && *b < before.tables.lft.size() && before.fabric.node(*b).is_switch() &&
        before.fabric.node(*b).ports[0].attrs.lid == f.node(n).ports[0].attrs.lid)
      old[n] = &before.tables.lft[*b];
  }
  const auto& now = run.tables.lft;
  // The hops from switch `s` to `lid` under both tables: false if they differ anywhere
  // or leave the ACTIVE links; `at_end(s)` says whether s is where `lid` is delivered.
  auto same_route = [&](fabric::NodeIndex s, uint16_t lid, auto at_end) {
    for (int hops = 0; hops < kMaxDrHops; ++hops) {
      if (!old[s] || s >= now.size()) return false;
      const std::vector<uint8_t>& o = *old[s];
      const std::vector<uint8_t>& w = now[s];
      if (lid >= o.size() || lid >= w.size() || o[lid] != w[lid]) return false;
      const PortNum out = w[lid];
      if (at_end(s, out)) return true;
      if (out == 0 || out > f.node(s).num_ports || !active(s, out)) return false;
      s = f.node(s).ports[out].peer;
      if (!f.node(s).is_switch()) return false;
    }
    return false;
  };
  // Where the SM's SMPs enter the switches, and how a reply reaches the SM's port.
  const fabric::NodeIndex first = local.is_switch() ? d.local_node : local.ports[lp].peer;
  if (!local.is_switch() && !active(d.local_node, lp)) return 0;
  const PortNum sm_side = local.is_switch() ? 0 : local.ports[lp].peer_port;
  size_t n_lid = 0;
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (!nd.is_switch() || !old[n]) continue;
    const uint16_t lid = nd.ports[0].attrs.lid.value;
    if (!Lid{lid}.is_unicast()) continue;
    const bool there = same_route(
        first, lid, [n](fabric::NodeIndex s, PortNum out) { return s == n && out == 0; });
    const bool back = there && same_route(n, sm_lid.value, [&](fabric::NodeIndex s, PortNum out) {
                        return s == first && out == sm_side;
                      });
    if (there && back) {
      run.by_lid[n] = lid;
      ++n_lid;
    }
  }
  return n_lid;
}

void LftProgrammer::write_blocks(SweepRun& run) {
  const Discovered& d = run.d;
  const fabric::Fabric& target = run.target;
  const routing::Tables& t = run.tables;
  const uint16_t top = t.top_lid;
  const size_t nblocks = size_t(top) / 64 + 1;
  topped_.clear();
  // (A switch an earlier sweep planned blocks for, and never published, lost its
  // belief then.)
  pending_.clear();
  ++sweep_;
  // Per switch, the blocks to write (kReadFirst: read first, write if it differs), their
  // content taken from the tables when each goes.
  struct SwitchWrites {
    NodeIndex n;
    mad::DrPath path;
    std::vector<uint32_t> blocks;
  };
  auto plan = std::make_shared<std::vector<SwitchWrites>>();
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    if (!nd.is_switch()) continue;
    const mad::SwitchInfo& si = d.switch_info[n];
    if (si.lft_cap == 0) {
      ++run.rep.lft_failures;
      add_problem(run.rep, "switch " + fabric::port_ref(target, n, 0) +
                               ": SwitchInfo unknown, LFT not programmed");
      continue;
    }
    const size_t writable = std::min(nblocks, (size_t(si.lft_cap) + 63) / 64);
    if (writable < nblocks) {
      ++run.rep.lft_capped;
      add_problem(run.rep, "switch " + fabric::port_ref(target, n, 0) + ": LinearFDBCap " +
                               std::to_string(si.lft_cap) + " < top LID " + std::to_string(top) +
                               "; LIDs above it are not routed there");
    }
    const std::vector<uint8_t>& row = t.lft[n];
    const Guid g = nd.guid;
    const bool reset = was_reset(run, n);
    if (!trusted(run, n)) drop_belief(g);
    if (reset) tops_.erase(g.value);
    // No completion runs while this loop plans, so the row stays put.
    const std::vector<uint8_t>* const have = held(g);
    const bool fresh = have == nullptr;
    topped_.push_back(n);
    const size_t device_blocks = si.lft_top == 0 ? 0 : size_t(si.lft_top) / 64 + 1;
    SwitchWrites w{n, d.paths[n], {}};
    // A spot check of what weft believes this switch holds: one block read back. Another
    // writer that left LinearFDBTop as it was (another SM, a tool) shows here: the switch
    // is then believed in nothing and read back whole, block by block, each rewritten
    // where it differs from what weft wants.
    for (size_t b = 0; b < writable; ++b) {
      if (!fresh && b < blocks_of(*have)) {
        if (!same_block(row, *have, b)) w.blocks.push_back(static_cast<uint32_t>(b));
      } else if (fresh && b < device_blocks) {
        // Unknown content below the switch's current top (another SM, or our restart):
        // read first.
        w.blocks.push_back(static_cast<uint32_t>(b) | kReadFirst);
      } else {
        w.blocks.push_back(static_cast<uint32_t>(b));
      }
    }
    pending_[g.value] = {n, w.blocks.size(), 0, false, writable < nblocks};
    if (!w.blocks.empty()) {
      // Believed in nothing while its blocks change (adopt() gives it the new row).
      own_.erase(g);
      shared_.erase(g.value);
      plan->push_back(std::move(w));
    }
  }
  if (plan->empty()) return;
  // The blocks go to the engine as its window empties: queued all at once, the largest
  // fabric's 2.9 million would hold over 900 MB while they wait.
  eng_.feed([this, &run, plan, s = size_t{0}, i = size_t{0}]() mutable {
    if (s == plan->size()) return;
    const SwitchWrites& w = (*plan)[s];
    const size_t b = w.blocks[i] & ~kReadFirst;
    const mad::LftBlock blk = row_block(run.tables.lft[w.n], b);
    if (w.blocks[i] & kReadFirst)
      read_then_write(run, w.n, w.path, b, blk);
    else
      write_block(run, w.n, w.path, b, blk);
    if (++i == w.blocks.size()) {
      i = 0;
      ++s;
    }
  });
}

void LftProgrammer::write_tops(SweepRun& run) {
  const uint16_t top = run.tables.top_lid;
  for (NodeIndex n : topped_) {
    const mad::SwitchInfo& si = run.d.switch_info[n];
    const Guid g = run.target.node(n).guid;
    // LifeTimeValue (packet_life_time) rides with the top, and is a reason of its own.
    const uint8_t life = opts_.packet_life_time;
    if (si.lft_top == top && !si.port_state_change && si.lifetime == life) {
      tops_[g.value] = top;
      continue;
    }
    mad::SwitchInfo set = si;
    set.lft_top = top;
    set.lifetime = life;
    set.port_state_change = true;  // writing 1 clears it
    eng_.submit(to_switch(run, n,
                          mad::SmpRequest::set(mad::kAttrSwitchInfo, 0, run.d.paths[n],
                                               mad::encode_switch_info(set))),
                [this, &run, n, g, top](Result<mad::Smp> r) {
                  if (r) {
                    ++run.rep.switchinfo_sets;
                    tops_[g.value] = top;
                    return;
                  }
                  ++run.rep.lft_failures;
                  add_problem(run.rep, "SwitchInfo Set on " + fabric::port_ref(run.target, n, 0) +
                                           ": " + r.error().message);
                });
  }
  topped_.clear();
}

}  // namespace weft::sm
