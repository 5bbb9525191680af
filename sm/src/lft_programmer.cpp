// Linear forwarding tables: the blocks that differ, then LinearFDBTop, in two phases
// so that a switch's top moves only once its blocks are written.
#include "sweep_parts.hpp"

#include <algorithm>

namespace weft::sm {

using fabric::NodeIndex;

void LftProgrammer::remember_block(Guid sw, size_t block, const LftBlock& blk) {
  auto& h = cache_[sw];
  if (h.size() < (block + 1) * 64) h.resize((block + 1) * 64, kDropPort);
  std::copy(blk.begin(), blk.end(), h.begin() + block * 64);
}

bool LftProgrammer::steady(Guid sw, uint16_t lft_top_now) const {
  auto it = tops_.find(sw.value);
  return it != tops_.end() && it->second != 0 && it->second == lft_top_now;
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
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    if (!nd.is_switch()) continue;
    const SwitchInfo& si = d.switch_info[n];
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
    std::vector<uint8_t> want(writable * 64, kDropPort);
    std::copy(t.lft[n].begin(), t.lft[n].begin() + std::min(t.lft[n].size(), want.size()),
              want.begin());
    const Guid g = nd.guid;
    auto cached = cache_.find(g);
    // A cache is valid only while the switch still holds the top we left it with, and
    // shows no sign of having lost state since: a port state change, or a linked port
    // not ACTIVE (weft left them all ACTIVE; a reboot retrains every link). Then its
    // blocks are read back and rewritten where they differ.
    bool reset = si.port_state_change;
    for (PortNum p = 1; p <= nd.num_ports && !reset; ++p)
      reset = nd.ports[p].linked() && d.port_read[n][p] &&
              d.port_info[n][p].attrs.state != fabric::PortState::kActive;
    // A LinearFDBTop other than the one weft left (a reboot that zeroed it, another
    // SM's or client's writes) voids the cache too.
    auto left = tops_.find(g.value);
    const bool top_moved = left == tops_.end() || left->second != si.lft_top;
    if (cached != cache_.end() &&
        (reset || top_moved || cached->second.size() / 64 != size_t(si.lft_top) / 64 + 1))
      cache_.erase(cached), cached = cache_.end();
    if (reset) tops_.erase(g.value);
    const bool fresh = cached == cache_.end();
    // No completion runs while this loop submits, so the row stays put.
    const std::vector<uint8_t>* held = fresh ? nullptr : &cached->second;
    const DrPath path = d.paths[n];
    topped_.push_back(n);
    auto write_block = [this, &run, n, path, g](size_t b, const LftBlock& blk) {
      eng_.submit(
          to_switch(
              run, n,
              SmpRequest::set(kAttrLft, static_cast<uint32_t>(b), path, encode_lft_block(blk))),
          [this, &run, n, b, g, blk](Result<Smp> r) {
            if (r) {
              ++run.rep.lft_blocks_written;
              remember_block(g, b, blk);
              return;
            }
            ++run.rep.lft_failures;
            add_problem(run.rep, "LFT block " + std::to_string(b) + " on " +
                                     fabric::port_ref(run.target, n, 0) + ": " + r.error().message);
            cache_.erase(g);
          });
    };
    const size_t device_blocks = si.lft_top == 0 ? 0 : size_t(si.lft_top) / 64 + 1;
    for (size_t b = 0; b < writable; ++b) {
      LftBlock blk;
      std::copy(want.begin() + b * 64, want.begin() + (b + 1) * 64, blk.begin());
      if (!fresh && held->size() >= (b + 1) * 64) {
        if (!std::equal(blk.begin(), blk.end(), held->begin() + b * 64)) write_block(b, blk);
      } else if (fresh && b < device_blocks) {
        // Unknown content below the switch's current top (another SM, or our restart):
        // read first.
        eng_.submit(to_switch(run, n, SmpRequest::get(kAttrLft, static_cast<uint32_t>(b), path)),
                    [this, &run, b, blk, g, write_block](Result<Smp> r) {
                      ++run.rep.lft_blocks_read;
                      if (r && decode_lft_block(r->data) == blk) {
                        remember_block(g, b, blk);
                        return;
                      }
                      write_block(b, blk);
                    });
      } else {
        write_block(b, blk);
      }
    }
  }
}

void LftProgrammer::write_tops(SweepRun& run) {
  const uint16_t top = run.tables.top_lid;
  for (NodeIndex n : topped_) {
    const SwitchInfo& si = run.d.switch_info[n];
    const Guid g = run.target.node(n).guid;
    if (si.lft_top == top && !si.port_state_change) {
      tops_[g.value] = top;
      continue;
    }
    SwitchInfo set = si;
    set.lft_top = top;
    set.port_state_change = true;  // writing 1 clears it
    eng_.submit(
        to_switch(run, n,
                  SmpRequest::set(kAttrSwitchInfo, 0, run.d.paths[n], encode_switch_info(set))),
        [this, &run, n, g, top](Result<Smp> r) {
          if (r) {
            ++run.rep.switchinfo_sets;
            tops_[g.value] = top;
            return;
          }
          ++run.rep.lft_failures;
          add_problem(run.rep, "SwitchInfo Set on " + fabric::port_ref(run.target, n, 0) + ": " +
                                   r.error().message);
        });
  }
  topped_.clear();
}

}  // namespace weft::sm
