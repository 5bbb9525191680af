// Multicast groups and their forwarding tables, always on one published snapshot.
#include "multicast_programmer.hpp"

#include <algorithm>

#include "weft/log.hpp"

namespace weft::sm {

using fabric::NodeIndex;

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
        mc_.ensure(g);
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
        mc_.ensure(g);
      }
    }
  }
  for (uint16_t mlid : mc_.prune([&](uint64_t g) { return snap.end_ports.count(g) > 0; }))
    WEFT_LOG(Info, "MC-0001") << "multicast group MLID 0x" << std::hex << mlid << std::dec
                              << ": members whose ports left the fabric removed";
}

std::vector<std::pair<NodeIndex, uint32_t>> MulticastProgrammer::route_mlid(uint16_t mlid) {
  std::vector<std::pair<NodeIndex, uint32_t>> touched;
  if (mlid < kMlidBase || !snap_) return touched;
  const fabric::Fabric& f = snap_->fabric;
  const uint32_t block = (mlid - kMlidBase) / 32, idx = (mlid - kMlidBase) % 32;
  auto positions = [&](NodeIndex sw) { return (uint32_t(f.node(sw).num_ports) + 1 + 15) / 16; };
  for (NodeIndex sw : mlid_switches_[mlid])
    for (uint32_t pos = 0; pos < positions(sw); ++pos) {
      const uint32_t key = pos << 28 | block;
      want_[sw][key][idx] = 0;
      touched.push_back({sw, key});
    }
  mlid_switches_.erase(mlid);
  const McGroup* g = mc_.by_mlid(mlid);
  if (!g) return touched;
  std::vector<std::pair<NodeIndex, PortNum>> receivers, senders;
  for (const auto& [guid, state] : g->members) {
    auto it = snap_->end_ports.find(guid);
    if (it == snap_->end_ports.end()) continue;
    (state & (kJoinFull | kJoinNon) ? receivers : senders).push_back(it->second);
  }
  for (const auto& [sw, mask] : multicast_tree(f, receivers, senders)) {
    for (uint32_t pos = 0; pos < positions(sw); ++pos) {
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

void MulticastProgrammer::write_mfts(std::vector<std::pair<NodeIndex, uint32_t>> blocks,
                                     SweepReport* rep) {
  if (!snap_) return;
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  const fabric::Fabric& f = snap_->fabric;
  for (auto [sw, key] : blocks) {
    if (sw >= snap_->node_paths.size()) continue;
    const uint64_t guid = f.node(sw).guid.value;
    const mad::MftBlock want = want_[sw][key];
    const mad::DrPath path = snap_->node_paths[sw];
    const std::string where = fabric::port_ref(f, sw, 0);
    auto write = [this, rep, guid, key, want, path, where]() {
      eng_.submit(mad::SmpRequest::set(mad::kAttrMft, key, path, mad::encode_mft_block(want)),
                  [this, rep, guid, key, want, where](Result<mad::Smp> r) {
                    if (r) {
                      held_[{guid, key}] = want;
                      if (rep) ++rep->mft_blocks_written;
                      return;
                    }
                    held_.erase({guid, key});
                    if (rep) {
                      ++rep->table_failures;
                      add_problem(*rep, "MFT Set on " + where + ": " + r.error().message);
                    } else {
                      WEFT_LOG(Warn, "MC-0002")
                          << "MFT Set on " << where << ": " << r.error().message;
                    }
                  });
    };
    auto held = held_.find({guid, key});
    if (held != held_.end()) {
      if (held->second != want) write();
      continue;
    }
    eng_.submit(mad::SmpRequest::get(mad::kAttrMft, key, path),
                [this, rep, guid, key, want, write](Result<mad::Smp> r) {
                  if (rep) ++rep->mft_blocks_read;
                  if (r) {
                    const mad::MftBlock have = mad::decode_mft_block(r->data);
                    held_[{guid, key}] = have;
                    if (have == want) return;
                  }
                  write();
                });
  }
}

void MulticastProgrammer::route_all(std::shared_ptr<const SubnetSnapshot> snap,
                                    const std::set<Guid>& reset, SweepReport& rep) {
  snap_ = std::move(snap);
  std::erase_if(held_, [&](const auto& e) { return reset.count(Guid{e.first.first}) > 0; });
  want_.clear();
  mlid_switches_.clear();
  std::vector<std::pair<NodeIndex, uint32_t>> blocks;
  for (const auto& [mlid, g] : mc_.groups()) {
    auto b = route_mlid(mlid);
    blocks.insert(blocks.end(), b.begin(), b.end());
  }
  // A new master term: every block up to the highest MLID in use, on every switch, is
  // read and made what weft wants (another SM's groups in them cleared).
  if (std::exchange(reread_all_, false) && !mc_.groups().empty() &&
      std::prev(mc_.groups().end())->first >= kMlidBase) {
    const uint32_t last = uint32_t(std::prev(mc_.groups().end())->first - kMlidBase) / 32;
    const fabric::Fabric& f = snap_->fabric;
    for (NodeIndex sw = 0; sw < f.size(); ++sw) {
      if (!f.node(sw).is_switch()) continue;
      const uint32_t positions = (uint32_t(f.node(sw).num_ports) + 1 + 15) / 16;
      for (uint32_t pos = 0; pos < positions; ++pos)
        for (uint32_t b = 0; b <= last; ++b) blocks.push_back({sw, pos << 28 | b});
    }
  }
  // Blocks a switch holds with a group in them that no tree wants now: cleared.
  for (const auto& [key, held] : held_)
    if (auto n = snap_->fabric.find(Guid{key.first}))
      if (std::any_of(held.begin(), held.end(), [](uint16_t m) { return m != 0; }))
        blocks.push_back({*n, key.second});
  write_mfts(std::move(blocks), &rep);
}

void MulticastProgrammer::route_changed(const std::vector<uint16_t>& mlids) {
  std::vector<std::pair<NodeIndex, uint32_t>> blocks;
  for (uint16_t mlid : mlids) {
    auto b = route_mlid(mlid);
    blocks.insert(blocks.end(), b.begin(), b.end());
  }
  if (!blocks.empty()) write_mfts(std::move(blocks), nullptr);
}

}  // namespace weft::sm
