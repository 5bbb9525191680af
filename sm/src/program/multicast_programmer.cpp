// Multicast groups and their forwarding tables, always on one published snapshot.
#include "multicast_programmer.hpp"

#include <algorithm>
#include <cstdio>

#include "weft/log.hpp"

namespace weft::sm {

using fabric::NodeIndex;

namespace {
// MFT positions of a switch: 16 ports each, port 0 included.
uint32_t mft_positions(const fabric::Node& sw) {
  return (uint32_t(sw.num_ports) + 1 + 15) / 16;
}
}  // namespace

void MulticastProgrammer::step(Step s, SweepRun& run) {
  if (s == Step::kPublished && run.published) route_all(run.published, run.reset, run.rep);
}

void MulticastProgrammer::sync_groups(const qos::PartitionPlan& plan, bool qos_on,
                                      const SubnetSnapshot& snap) {
  auto scopes = [](uint16_t mask, uint8_t dflt) {
    std::vector<uint8_t> v;
    for (uint8_t s = 1; s < 16; ++s)
      if (mask & (1u << s)) v.push_back(s);
    if (v.empty()) v.push_back(dflt);
    return v;
  };
  // The partition file's groups not in the database yet are placed where the term's scan
  // has read that no switch forwards the MLID (now, or when the scan has read far enough).
  unplaced_.clear();
  auto want = [this](const McGroup& g) {
    if (McGroup* have = mc_.find(g.mgid))
      have->well_known = true;
    else
      unplaced_.push_back(g);
  };
  for (const auto& part : plan.partitions) {
    const uint16_t pkey = uint16_t(part.pkey | 0x8000);
    McGroup base;
    base.pkey = pkey;
    base.mtu = part.flags.mtu;
    base.rate = part.flags.rate;
    base.sl = qos_on ? part.flags.sl : 0;  // as OpenSM: the SL needs QoS
    base.tclass = part.flags.tclass;
    base.flow_label = part.flags.flow_label;
    if (part.ipoib) {
      // The IPv4 broadcast group of the partition: ff1S:401b:PKEY::ffff:ffff.
      for (uint8_t sc : scopes(part.flags.scope_mask, 2)) {
        McGroup g = base;
        g.mgid = {0xff,
                  uint8_t(0x10 | sc),
                  0x40,
                  0x1b,
                  uint8_t(pkey >> 8),
                  uint8_t(pkey),
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0xff,
                  0xff,
                  0xff,
                  0xff};
        g.scope = sc;
        g.qkey = part.flags.qkey ? part.flags.qkey : 0x0b1b;
        want(g);
      }
    }
    for (const auto& mg : part.groups) {
      const uint8_t own = mg.mgid[1] & 0x0f;
      for (uint8_t sc : scopes(mg.flags.scope_mask, own)) {
        McGroup g = base;
        std::copy(mg.mgid.begin(), mg.mgid.end(), g.mgid.begin());
        g.mgid[1] = uint8_t((g.mgid[1] & 0xf0) | sc);
        g.scope = sc;
        g.mtu = mg.flags.mtu;
        g.rate = mg.flags.rate;
        g.sl = qos_on ? mg.flags.sl : 0;
        g.qkey = mg.flags.qkey;
        g.tclass = mg.flags.tclass;
        g.flow_label = mg.flags.flow_label;
        want(g);
      }
    }
  }
  for (uint16_t mlid :
       mc_.prune([&](uint64_t g) { return snap.end_ports.count(g) > 0 || snap.ends.vport(g); }))
    WEFT_LOG(Info, "MC-0001") << "multicast group MLID 0x" << std::hex << mlid << std::dec
                              << ": members whose ports left the fabric removed";
  // With no switch there is no MFT to read and any MLID will do.
  bool any_switch = false;
  for (NodeIndex n = 0; n < snap.fabric.size() && !any_switch; ++n)
    any_switch = snap.fabric.node(n).is_switch();
  place(any_switch);
}

std::vector<uint16_t> MulticastProgrammer::place(bool check_switches) {
  std::vector<uint16_t> placed;
  const McDb::MlidFree free = [this](uint16_t m) { return mlid_free(m); };
  std::erase_if(unplaced_, [&](McGroup& g) {
    // A join may have made it meanwhile (the SA answers during sweeps): that group is
    // the partition's now.
    if (McGroup* have = mc_.find(g.mgid)) {
      have->well_known = true;
      placed_ = true;
      return true;
    }
    g.well_known = true;
    auto mlid = check_switches ? mc_.create(g, mft_cap(), free) : mc_.create(g, 0x3fff);
    if (mlid) placed.push_back(*mlid);
    return mlid.has_value();
  });
  if (!placed.empty()) placed_ = true;
  return placed;
}

void MulticastProgrammer::place_after_scan(SweepReport* rep) {
  if (unplaced_.empty() || !scan_pending_.empty() || !snap_) return;
  std::vector<std::pair<NodeIndex, uint32_t>> blocks;
  for (uint16_t mlid : place(true)) {
    auto b = route_mlid(mlid);
    blocks.insert(blocks.end(), b.begin(), b.end());
  }
  // Still no MLID free within the blocks read because another group holds them all: one
  // more block is read (within the switches' MulticastFDBCap), and this runs again when
  // it has been. Not when reads failed: those blocks are read again by the next sweep.
  extend_scan(blocks, unplaced_.empty() || !unread_.empty() ? 0 : scan_end_ + 1);
  if (!blocks.empty()) write_mfts(std::move(blocks), rep);
}

std::vector<std::pair<NodeIndex, uint32_t>> MulticastProgrammer::route_mlid(uint16_t mlid) {
  std::vector<std::pair<NodeIndex, uint32_t>> touched;
  if (mlid < kMlidBase || !snap_) return touched;
  const fabric::Fabric& f = snap_->fabric;
  const uint32_t block = (mlid - kMlidBase) / 32, idx = (mlid - kMlidBase) % 32;
  for (NodeIndex sw : mlid_switches_[mlid])
    for (uint32_t pos = 0; pos < mft_positions(f.node(sw)); ++pos) {
      const uint32_t key = pos << 28 | block;
      want_[sw][key][idx] = 0;
      touched.push_back({sw, key});
    }
  mlid_switches_.erase(mlid);
  const McGroup* g = mc_.by_mlid(mlid);
  if (!g) return touched;
  std::vector<std::pair<NodeIndex, PortNum>> receivers, senders;
  for (const auto& [guid, state] : g->members) {
    // An SR-IOV VF is reached at its CA port.
    std::pair<NodeIndex, PortNum> at;
    if (auto it = snap_->end_ports.find(guid); it != snap_->end_ports.end())
      at = it->second;
    else if (const auto* v = snap_->ends.vport(guid))
      at = {v->node, v->port};
    else
      continue;
    (state & (kJoinFull | kJoinNon) ? receivers : senders).push_back(at);
  }
  for (const auto& [sw, mask] : multicast_tree(f, receivers, senders)) {
    for (uint32_t pos = 0; pos < mft_positions(f.node(sw)); ++pos) {
      uint16_t bits = 0;
      for (uint32_t i = 0; i < 16; ++i)
        if (16 * pos + i < mask.size() && mask[16 * pos + i]) bits = uint16_t(bits | (1u << i));
      const uint32_t key = pos << 28 | block;
      want_[sw][key][idx] = bits;
      touched.push_back({sw, key});
    }
    mlid_switches_[mlid].push_back(sw);
  }
  return touched;
}

void MulticastProgrammer::forget_all() {
  held_.clear();
  foreign_.clear();
  foreign_mlids_.clear();
  scan_end_ = 0;
  scan_pending_.clear();
  unread_.clear();
  ++term_;
  term_sweeps_ = 0;
  settled_ = false;
}

bool MulticastProgrammer::mlid_free(uint16_t mlid) const {
  if (mlid < kMlidBase) return false;
  const uint32_t block = uint32_t(mlid - kMlidBase) / 32;
  if (block >= scan_end_ || scan_pending_.count(block) || foreign_mlids_.count(mlid)) return false;
  // A block a switch would not let us read: unknown until a read or a write of it
  // succeeds (after the term's first sweep weft writes its own entries there).
  return std::none_of(unread_.begin(), unread_.end(),
                      [&](const BlockKey& k) { return (k.second & 0x1ff) == block; });
}

void MulticastProgrammer::drop_foreign(const BlockKey& key) {
  auto it = foreign_.find(key);
  if (it == foreign_.end()) return;
  const uint16_t first = uint16_t(kMlidBase + (key.second & 0x1ff) * 32);
  for (uint32_t i = 0; i < 32; ++i)
    if (it->second[i])
      if (auto m = foreign_mlids_.find(uint16_t(first + i));
          m != foreign_mlids_.end() && --m->second == 0)
        foreign_mlids_.erase(m);
  foreign_.erase(it);
}

void MulticastProgrammer::note_held(const BlockKey& key, const mad::MftBlock& b) {
  held_[key] = b;
  drop_foreign(key);
  const uint16_t first = uint16_t(kMlidBase + (key.second & 0x1ff) * 32);
  mad::MftBlock unknown{};
  bool any = false;
  for (uint32_t i = 0; i < 32; ++i)
    if (b[i] && !mc_.by_mlid(uint16_t(first + i))) {
      unknown[i] = b[i];
      ++foreign_mlids_[uint16_t(first + i)];
      any = true;
    }
  if (any) foreign_[key] = unknown;
}

mad::MftBlock MulticastProgrammer::effective(NodeIndex sw, const BlockKey& key) {
  mad::MftBlock w = want_[sw][key.second];
  if (!settled_)
    if (auto f = foreign_.find(key); f != foreign_.end())
      for (uint32_t i = 0; i < 32; ++i)
        if (f->second[i]) w[i] = f->second[i];
  return w;
}

bool MulticastProgrammer::due_to_settle() {
  if (settled_ || term_sweeps_ == 0) return false;
  settled_ = true;
  if (!foreign_mlids_.empty()) {
    std::string list;
    for (const auto& [m, n] : foreign_mlids_)
      if (list.size() < 120) {
        char h[12];
        std::snprintf(h, sizeof h, "%s0x%x", list.empty() ? "" : ", ", unsigned(m));
        list += h;
      }
    WEFT_LOG(Info, "MC-0007") << foreign_mlids_.size() << " MLIDs no group holds (" << list
                              << ") cleared from the switches after the first full sweep";
  }
  return true;
}

void MulticastProgrammer::settle() {
  if (!snap_ || !due_to_settle()) return;
  std::vector<std::pair<NodeIndex, uint32_t>> blocks;
  for (const auto& [key, b] : foreign_)
    if (auto n = snap_->fabric.find(Guid{key.first})) blocks.push_back({*n, key.second});
  write_mfts(std::move(blocks), nullptr);
}

void MulticastProgrammer::extend_scan(std::vector<std::pair<NodeIndex, uint32_t>>& blocks,
                                      uint32_t at_least) {
  if (!snap_) return;
  const uint32_t cap_blocks = (uint32_t(snap_->mft_cap) + 31) / 32;
  // Blocks enough for every group, the unplaced ones too, were none forwarded elsewhere.
  uint32_t end = uint32_t((mc_.groups().size() + unplaced_.size()) / 32 + 1);
  if (!mc_.groups().empty() && std::prev(mc_.groups().end())->first >= kMlidBase)
    end = std::max(end, uint32_t(std::prev(mc_.groups().end())->first - kMlidBase) / 32 + 2);
  end = std::min(std::max(end, at_least), cap_blocks);
  if (end <= scan_end_) return;
  const fabric::Fabric& f = snap_->fabric;
  for (NodeIndex sw = 0; sw < f.size(); ++sw) {
    if (!f.node(sw).is_switch()) continue;
    for (uint32_t pos = 0; pos < mft_positions(f.node(sw)); ++pos)
      for (uint32_t b = scan_end_; b < end; ++b) blocks.push_back({sw, pos << 28 | b});
  }
  scan_end_ = end;
}

void MulticastProgrammer::write_mfts(std::vector<std::pair<NodeIndex, uint32_t>> blocks,
                                     SweepReport* rep) {
  if (!snap_) return;
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  const fabric::Fabric& f = snap_->fabric;
  for (auto [sw, key] : blocks) {
    if (sw >= snap_->node_paths.size()) continue;
    const BlockKey bk{f.node(sw).guid.value, key};
    const mad::DrPath path = snap_->node_paths[sw];
    const std::string where = fabric::port_ref(f, sw, 0);
    auto write = [this, rep, bk, path, where](const mad::MftBlock& want) {
      eng_.submit(mad::SmpRequest::set(mad::kAttrMft, bk.second, path, mad::encode_mft_block(want)),
                  [this, rep, bk, want, where, term = term_](Result<mad::Smp> r) {
                    if (term != term_) return;
                    if (r) {
                      note_held(bk, want);
                      unread_.erase(bk);  // what it holds is known now
                      if (rep) ++rep->mft_blocks_written;
                      return;
                    }
                    held_.erase(bk);  // read again; what it forwards stays foreign
                    if (rep) {
                      ++rep->table_failures;
                      add_problem(*rep, "MFT Set on " + where + ": " + r.error().message);
                    } else {
                      WEFT_LOG(Warn, "MC-0002")
                          << "MFT Set on " << where << ": " << r.error().message;
                    }
                  });
    };
    auto held = held_.find(bk);
    if (held != held_.end()) {
      if (const auto want = effective(sw, bk); held->second != want) write(want);
      continue;
    }
    const uint32_t block = key & 0x1ff;
    ++scan_pending_[block];
    eng_.submit(mad::SmpRequest::get(mad::kAttrMft, key, path), [this, rep, bk, block, write,
                                                                 term = term_](Result<mad::Smp> r) {
      if (term != term_) return;
      if (auto p = scan_pending_.find(block); p != scan_pending_.end() && --p->second == 0)
        scan_pending_.erase(p);
      if (rep) ++rep->mft_blocks_read;
      if (r) {
        note_held(bk, mad::decode_mft_block(r->data));
        unread_.erase(bk);
      } else {
        // Unknown: its MLIDs stay out of use; before the term's first sweep is over,
        // nothing is written over what may be another group's (the next sweep reads it
        // again), after it weft's entries are written.
        unread_.insert(bk);
        if (rep) {
          ++rep->table_failures;
          add_problem(*rep, "MFT Get (modifier 0x" + std::to_string(bk.second) + ") of switch " +
                                hex_guid(bk.first) + ": " + r.error().message);
        }
        if (!settled_) return place_after_scan(rep);
      }
      // The snapshot may have moved on: the switch by its GUID on the new one.
      if (auto n = snap_->fabric.find(Guid{bk.first})) {
        const mad::MftBlock want = effective(*n, bk);
        if (!r || held_[bk] != want) write(want);
      }
      place_after_scan(rep);
    });
  }
}

void MulticastProgrammer::route_all(std::shared_ptr<const SubnetSnapshot> snap,
                                    const std::set<Guid>& reset, SweepReport& rep) {
  snap_ = std::move(snap);
  due_to_settle();
  // Switches reset (read again) or gone from the fabric: nothing of theirs is held.
  auto lost_switch = [&](uint64_t guid) {
    return reset.count(Guid{guid}) > 0 || !snap_->fabric.find(Guid{guid});
  };
  std::vector<BlockKey> lost;
  for (const auto& [key, b] : held_)
    if (lost_switch(key.first)) lost.push_back(key);
  for (const auto& [key, b] : foreign_)
    if (lost_switch(key.first)) lost.push_back(key);
  for (const auto& key : lost) held_.erase(key), drop_foreign(key);
  std::erase_if(unread_, [&](const BlockKey& k) { return lost_switch(k.first); });
  want_.clear();
  mlid_switches_.clear();
  std::vector<std::pair<NodeIndex, uint32_t>> blocks;
  for (const auto& [mlid, g] : mc_.groups()) {
    auto b = route_mlid(mlid);
    blocks.insert(blocks.end(), b.begin(), b.end());
  }
  // Every block the scan covers, on every switch: a switch not yet read (new this term,
  // new to the fabric, or reset) is read; the others are written where they differ.
  extend_scan(blocks);
  const fabric::Fabric& f = snap_->fabric;
  for (NodeIndex sw = 0; sw < f.size(); ++sw) {
    if (!f.node(sw).is_switch()) continue;
    for (uint32_t pos = 0; pos < mft_positions(f.node(sw)); ++pos)
      for (uint32_t b = 0; b < scan_end_; ++b)
        if (!held_.count({f.node(sw).guid.value, pos << 28 | b}))
          blocks.push_back({sw, pos << 28 | b});
  }
  // Blocks a switch holds with a group in them that no tree wants now: cleared (foreign
  // entries once settled).
  for (const auto& [key, held] : held_)
    if (auto n = snap_->fabric.find(Guid{key.first}))
      if (std::any_of(held.begin(), held.end(), [](uint16_t m) { return m != 0; }))
        blocks.push_back({*n, key.second});
  write_mfts(std::move(blocks), &rep);
  place_after_scan(&rep);  // the scan read everything before: placed now
}

void MulticastProgrammer::route_changed(const std::vector<uint16_t>& mlids) {
  std::vector<std::pair<NodeIndex, uint32_t>> blocks;
  for (uint16_t mlid : mlids) {
    auto b = route_mlid(mlid);
    blocks.insert(blocks.end(), b.begin(), b.end());
  }
  // A new group in the scan's last block: the next block is read now, so MLIDs stay
  // free ahead of the joins.
  extend_scan(blocks);
  if (!blocks.empty()) write_mfts(std::move(blocks), nullptr);
}

}  // namespace weft::sm
