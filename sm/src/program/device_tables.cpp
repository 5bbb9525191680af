// P_Key, SL2VL and VL arbitration tables, in two phases: read what weft does not know
// a port holds, then write what differs. Reading everything first means a table's
// layout (P_Keys keep their indexes) is decided once its every block is known.
#include "device_tables.hpp"

#include <algorithm>
#include <cstdio>

#include "lft_programmer.hpp"
#include "port_programmer.hpp"
#include "weft/log.hpp"

namespace weft::sm {

void DeviceTables::step(Step s, SweepRun& run) {
  if (s == Step::kSpotCheck) spot_check(run);
  if (s == Step::kCommit) read(run);
  if (s == Step::kTables) write(run);
  if (s == Step::kActivate) settle(run);
}

using fabric::NodeIndex;
using fabric::PortState;

namespace {

// Every input port maps alike toward one output port: one cache entry stands for all
// of a switch port's SL2VL tables once every input port is known to hold it.
constexpr uint32_t kAllInputs = 0xffffffffu;

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%x", v);
  return b;
}

const char* table_name(uint16_t attr) {
  return attr == mad::kAttrPkeyTable ? "pkey" : attr == mad::kAttrSl2Vl ? "sl2vl" : "vlarb";
}

}  // namespace

bool DeviceTables::steady(const Discovered& d, NodeIndex n, PortNum p) const {
  const auto& nd = d.fabric.node(n);
  if (!nd.is_switch()) return d.port_info[n][p].attrs.state == PortState::kActive;
  return lfts_.steady(nd.guid, d.switch_info[n].lft_top);
}

DeviceTables::Key DeviceTables::key(const Discovered& d, NodeIndex n, PortNum p, uint16_t attr,
                                    uint32_t mod) const {
  return {d.fabric.node(n).guid.value, mod, attr, p};
}

void DeviceTables::spot_check(SweepRun& run) {
  check(run.d, [&run](NodeIndex, PortNum, bool differs) {
    ++run.rep.table_blocks_checked;
    run.rep.table_blocks_changed += differs;
  });
}

void DeviceTables::check(const Discovered& d,
                         std::function<void(NodeIndex, PortNum, bool)> answered) {
  const size_t want = opts_.drift_check_table_blocks;
  if (want == 0 || cache_.empty()) return;
  auto it = cursor_ ? cache_.lower_bound(*cursor_) : cache_.begin();
  size_t sent = 0;
  // One pass over the cache at most: blocks of ports gone or not steady are skipped
  // (the next programming reads those again anyway).
  for (size_t seen = 0; seen < cache_.size() && sent < want; ++seen, ++it) {
    if (it == cache_.end()) it = cache_.begin();
    const Key k = it->first;
    if (k.mod == kAllInputs) continue;  // stands for the per-input entries, checked apart
    const auto n = d.fabric.find(Guid{k.guid});
    if (!n || k.port > d.fabric.node(*n).num_ports || !steady(d, *n, k.port)) continue;
    const NodeIndex node = *n;
    const PortNum p = k.port;
    // The bytes that carry the table: an SL2VL table is 8 of its 64, a VLArb block the
    // entries within the port's VLArbitration capacity (as write() compares them).
    size_t bytes = k.attr == mad::kAttrSl2Vl ? 8 : it->second.size();
    if (k.attr == mad::kAttrVlArb) {
      const uint32_t block = k.mod >> 16;  // 1-2 the low-priority table, 3-4 the high
      const mad::PortInfo& pi = d.port_info[node][p];
      const size_t cap = block <= 2 ? pi.vl_arb_low_cap : pi.vl_arb_high_cap;
      const size_t first = (block - 1) % 2 * 32;
      bytes = cap > first ? 2 * std::min<size_t>(32, cap - first) : 0;
    }
    const std::string where = fabric::port_ref(d.fabric, node, p);
    ++sent;
    eng_.submit(
        mad::SmpRequest::get(k.attr, k.mod, dr_path_to(d, node, p)),
        [this, k, node, p, bytes, where, held = it->second, answered](Result<mad::Smp> r) {
          if (!r) return;
          const bool differs = !std::equal(held.begin(), held.begin() + bytes, r->data.begin());
          if (differs) {
            WEFT_LOG(Warn, "SM-0059")
                << where << ": " << mad::attr_name(k.attr) << " block (modifier 0x" << hex(k.mod)
                << ") is not what weft wrote or read (another writer, no other sign): "
                   "reading it again and rewriting it";
            // Believed no more; an SL2VL table also no longer stands for all inputs.
            cache_.erase(k);
            if (k.attr == mad::kAttrSl2Vl) cache_.erase(Key{k.guid, kAllInputs, k.attr, k.port});
            if (on_drift_) on_drift_(table_name(k.attr), where, k.mod);
          }
          answered(node, p, differs);
        });
  }
  cursor_ = it == cache_.end() ? std::nullopt : std::optional<Key>(it->first);
}

const mad::SmpData* DeviceTables::held(const Discovered& d, NodeIndex n, PortNum p, uint16_t attr,
                                       uint32_t mod) const {
  if (!steady(d, n, p)) return nullptr;
  auto it = cache_.find(key(d, n, p, attr, mod));
  return it == cache_.end() ? nullptr : &it->second;
}

void DeviceTables::read_one(SweepRun& run, NodeIndex n, PortNum p, uint16_t attr, uint32_t mod) {
  const Key k = key(run.d, n, p, attr, mod);
  eng_.submit(mad::SmpRequest::get(attr, mod, dr_path_to(run.d, n, p)),
              [this, &run, attr, k](Result<mad::Smp> r) {
                switch (attr) {
                  case mad::kAttrPkeyTable:
                    ++run.rep.pkey_blocks_read;
                    break;
                  case mad::kAttrSl2Vl:
                    ++run.rep.sl2vl_read;
                    break;
                  default:
                    ++run.rep.vlarb_read;
                }
                if (r)
                  cache_[k] = r->data;
                else
                  read_errors_[k] = r.error().message;
              });
}

void DeviceTables::read(SweepRun& run) {
  read_errors_.clear();
  pkey_jobs_.clear();
  wants_.clear();
  pkey_tables_.assign(run.target.size(), {});
  for (NodeIndex n = 0; n < run.target.size(); ++n)
    pkey_tables_[n].resize(run.target.node(n).ports.size());
  plan_pkeys(run);
  plan_sl2vl(run);
  plan_vlarb(run);
  // What is not known is read, each block as the window empties (a P_Key block per end
  // port at the least). What is known is decided here, before any reply: a switch's
  // SwitchInfo Set of this step makes it steady again when it completes.
  struct Read {
    NodeIndex n;
    PortNum p;
    uint16_t attr;
    uint32_t mod;
  };
  std::vector<Read> reads;
  auto unless_held = [&](NodeIndex n, PortNum p, uint16_t attr, uint32_t mod) {
    if (held(run.d, n, p, attr, mod)) return;
    cache_.erase(key(run.d, n, p, attr, mod));  // what a reset port held says nothing now
    reads.push_back({n, p, attr, mod});
  };
  for (const PkeyJob& j : pkey_jobs_)
    for (size_t b = 0; b < (j.cap + 31) / 32; ++b)
      unless_held(j.n, j.p, mad::kAttrPkeyTable, j.mod_base | uint32_t(b));
  for (const Want& w : wants_) unless_held(w.n, w.p, w.attr, w.mod);
  mad::feed_each(eng_, std::move(reads),
                 [this, &run](const Read& r) { read_one(run, r.n, r.p, r.attr, r.mod); });
}

// P_Keys: every end port; switch ports facing end ports hold their peer's keys.
void DeviceTables::plan_pkeys(SweepRun& run) {
  const Discovered& d = run.d;
  const fabric::Fabric& target = run.target;
  const qos::PartitionPlan& plan = run.plan;
  size_t cannot_enforce = 0;
  for (NodeIndex n = 0; n < target.size(); ++n)
    if (target.node(n).is_switch() && !d.switch_info[n].inbound_enforce_cap &&
        !d.switch_info[n].outbound_enforce_cap)
      ++cannot_enforce;
  if (cannot_enforce && !opts_.no_partition_enforcement && opts_.part_enforce != PartEnforce::kOff)
    WEFT_LOG(Info, "PRT-0007") << cannot_enforce
                               << " switches report no P_Key enforcement capability (SwitchInfo): "
                                  "partitions are enforced by the end ports' tables only";
  auto job = [&](NodeIndex n, PortNum p, uint32_t mod_base, size_t cap,
                 const std::vector<uint16_t>& want) {
    if (cap == 0) {
      ++run.rep.table_failures;
      add_problem(run.rep, fabric::port_ref(target, n, p) + " reports no P_Key table (capacity 0)",
                  "PRT-0002");
      return;
    }
    pkey_jobs_.push_back({n, p, mod_base, cap, want});
  };
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 0; p <= nd.num_ports; ++p) {
      if (!d.port_read[n][p]) continue;
      if (!nd.is_switch() || p == 0) {
        if (!plan.pkeys[n][p].empty()) job(n, p, 0, nd.partition_cap, plan.pkeys[n][p]);
        continue;
      }
      const auto& port = nd.ports[p];
      if (!port.linked() || target.node(port.peer).is_switch()) continue;
      // The CA port's keys and its vports' (their traffic crosses this port too).
      const auto keys = qos::facing_pkeys(plan, target, port.peer, port.peer_port);
      const mad::SwitchInfo& si = d.switch_info[n];
      if (ports_.enforces(run, n, p)) {
        ++run.rep.ports_enforcing;
        job(n, p, uint32_t(p) << 16, si.partition_enforce_cap, keys);
      } else if (!opts_.no_partition_enforcement && opts_.part_enforce != PartEnforce::kOff &&
                 keys.size() > si.partition_enforce_cap && si.partition_enforce_cap > 0) {
        add_problem(run.rep,
                    fabric::port_ref(target, n, p) + " faces a port of " +
                        std::to_string(keys.size()) + " P_Keys but enforces at most " +
                        std::to_string(si.partition_enforce_cap) +
                        ": P_Keys are not filtered there",
                    "PRT-0004");
      }
    }
  }
}

// SL2VL: under QoS, or whenever the routing engine layers paths on VLs (one VL per SL,
// or its own map per hop: a switch's table per input and output port).
void DeviceTables::plan_sl2vl(SweepRun& run) {
  const Discovered& d = run.d;
  const fabric::Fabric& target = run.target;
  const routing::Tables& rt = run.tables;
  const uint8_t layers = rt.vls;
  if (!opts_.qos.enabled && layers <= 1 && rt.hop_vl.empty()) return;
  // The VLs the routes send on out of a port: their layers, or with per-hop maps the
  // highest VL the port's maps name (an end port's, and a switch port facing one,
  // may carry fewer than the fabric's).
  auto needed = [&](NodeIndex n, PortNum p) -> uint8_t {
    if (rt.hop_vl.empty()) return layers;
    unsigned top = 1;
    auto take = [&](uint64_t map) {
      for (unsigned sl = 0; sl < 16; ++sl)
        if (const uint8_t v = routing::Tables::hop_vl_of(map, sl); v != routing::Tables::kNoHopVl)
          top = std::max(top, v + 1u);
    };
    if (!target.node(n).is_switch()) {
      take(rt.end_vl);
    } else {
      for (PortNum in = 0; in <= target.node(n).num_ports; ++in)
        if (const auto m = rt.hop_map(target, n, in, p)) take(*m);
    }
    return uint8_t(top);
  };
  auto check_vls = [&](NodeIndex n, PortNum p, uint8_t oper) {
    if (const uint8_t need = needed(n, p); need > qos::data_vls(oper))
      add_problem(run.rep,
                  fabric::port_ref(target, n, p) + " operates " +
                      std::to_string(qos::data_vls(oper)) + " data VLs but the routes need " +
                      std::to_string(need) +
                      ": layers share VLs there and deadlock freedom is lost",
                  "SM-0012");
  };
  auto table = [&](NodeIndex n, PortNum in, PortNum out, uint8_t oper) {
    const auto& cfg = ports_.qos_for(target, n, out);
    const auto hop = rt.hop_map(target, n, in, out);
    return mad::encode_sl2vl(hop ? qos::hop_sl2vl(cfg, oper, *hop)
                                 : qos::port_sl2vl(cfg, oper, layers));
  };
  std::vector<mad::SmpData> per_in;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    if (!nd.is_switch()) {
      for (PortNum p = 1; p <= nd.num_ports; ++p) {
        if (!nd.ports[p].linked() || !d.port_read[n][p]) continue;
        if (!(d.port_info[n][p].attrs.capability_mask & mad::kCapSlMap)) continue;
        const uint8_t oper = run.after[n][p].attrs.oper_vls;
        check_vls(n, p, oper);
        wants_.push_back({n, p, mad::kAttrSl2Vl, 0, table(n, 0, p, oper), 8});
      }
      continue;
    }
    if (!d.port_read[n][0] || !(d.port_info[n][0].attrs.capability_mask & mad::kCapSlMap)) continue;
    for (PortNum out = d.switch_info[n].enhanced_port0 ? 0 : 1; out <= nd.num_ports; ++out) {
      if (out != 0 && (!nd.ports[out].linked() || !d.port_read[n][out])) continue;
      const uint8_t oper = run.after[n][out].attrs.oper_vls;
      if (out != 0) check_vls(n, out, oper);
      // One table for every input port, unless the routes' maps tell inputs apart.
      per_in.assign(size_t(nd.num_ports) + 1, {});
      bool alike = true;
      for (PortNum in = 0; in <= nd.num_ports; ++in)
        if (in == 0 || nd.ports[in].linked()) {
          per_in[in] = table(n, in, out, oper);
          alike &= std::equal(per_in[in].begin(), per_in[in].begin() + 8, per_in[0].begin());
        }
      if (const mad::SmpData* h = held(d, n, out, mad::kAttrSl2Vl, kAllInputs);
          alike && h && std::equal(h->begin(), h->begin() + 8, per_in[0].begin()))
        continue;
      for (PortNum in = 0; in <= nd.num_ports; ++in)
        if (in == 0 || nd.ports[in].linked())
          wants_.push_back({n, out, mad::kAttrSl2Vl, uint32_t(in) << 8 | out, per_in[in], 8});
    }
  }
}

// VL arbitration: under QoS only.
void DeviceTables::plan_vlarb(SweepRun& run) {
  if (!opts_.qos.enabled) return;
  const Discovered& d = run.d;
  const fabric::Fabric& target = run.target;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 0; p <= nd.num_ports; ++p) {
      if (!d.port_read[n][p]) continue;
      if (p == 0 && !(nd.is_switch() && d.switch_info[n].enhanced_port0)) continue;
      if (p != 0 && !nd.ports[p].linked()) continue;
      const mad::PortInfo& pi = d.port_info[n][p];
      const auto& cfg = ports_.qos_for(target, n, p);
      const uint8_t oper = run.after[n][p].attrs.oper_vls;
      const uint32_t port_mod = nd.is_switch() ? p : 0;
      for (auto [list, cap, first_block] :
           {std::tuple{&cfg.low, size_t(pi.vl_arb_low_cap), 1u},
            std::tuple{&cfg.high, size_t(pi.vl_arb_high_cap), 3u}}) {
        for (size_t bi = 0; bi < 2 && bi * 32 < cap; ++bi) {
          const size_t len = std::min<size_t>(32, cap - bi * 32);
          wants_.push_back({n, p, mad::kAttrVlArb, (first_block + uint32_t(bi)) << 16 | port_mod,
                            mad::encode_vlarb(qos::vlarb_block(*list, bi, cap, oper)), 2 * len});
        }
      }
    }
  }
}

void DeviceTables::write_pkeys(SweepRun& run, const PkeyJob& j,
                               const std::vector<const mad::SmpData*>& held) {
  const Discovered& d = run.d;
  std::vector<uint16_t> have(held.size() * 32, 0);
  for (size_t b = 0; b < held.size(); ++b) {
    const mad::PkeyBlock blk = mad::decode_pkey_block(*held[b]);
    std::copy(blk.begin(), blk.end(), have.begin() + b * 32);
  }
  PkeyWrite pw = plan_pkey_write(
      j.want, std::move(have), j.cap, opts_.keep_pkey_indexes,
      [&] { return fabric::port_ref(run.target, j.n, j.p); }, run.rep);
  pkey_tables_[j.n][j.p] = pw.lay.table;
  if (pw.blocks.empty()) return;
  const mad::DrPath path = dr_path_to(d, j.n, j.p);
  for (const auto& [w, out] : pw.blocks) {
    const uint32_t mod = j.mod_base | static_cast<uint32_t>(w);
    const Key k = key(d, j.n, j.p, mad::kAttrPkeyTable, mod);
    const NodeIndex n = j.n;
    const PortNum p = j.p;
    eng_.submit(mad::SmpRequest::set(mad::kAttrPkeyTable, mod, path, mad::encode_pkey_block(out)),
                [this, &run, n, p, k](Result<mad::Smp> r) {
                  if (r) {
                    ++run.rep.pkey_blocks_written;
                    cache_[k] = r->data;
                    return;
                  }
                  cache_.erase(k);
                  ++run.rep.table_failures;
                  add_problem(run.rep, "P_KeyTable Set on " + fabric::port_ref(run.target, n, p) +
                                           ": " + r.error().message);
                });
  }
}

void DeviceTables::write(SweepRun& run) {
  const Discovered& d = run.d;
  // A P_Key table that could not be read is not written (its layout would be a guess).
  std::vector<const mad::SmpData*> held;  // a job's blocks as the port holds them
  for (const PkeyJob& j : pkey_jobs_) {
    const std::string* failed = nullptr;
    held.clear();
    for (size_t b = 0; b < (j.cap + 31) / 32 && !failed; ++b) {
      const Key k = key(d, j.n, j.p, mad::kAttrPkeyTable, j.mod_base | uint32_t(b));
      if (auto it = cache_.find(k); it != cache_.end()) {
        held.push_back(&it->second);
        continue;
      }
      static const std::string unknown = "no reply";
      auto e = read_errors_.find(k);
      failed = e == read_errors_.end() ? &unknown : &e->second;
    }
    if (failed) {
      ++run.rep.table_failures;
      add_problem(run.rep,
                  "P_KeyTable read on " + fabric::port_ref(run.target, j.n, j.p) + ": " + *failed);
      continue;
    }
    write_pkeys(run, j, held);
  }
  read_errors_.clear();
  for (const Want& w : wants_) {
    const Key k = key(d, w.n, w.p, w.attr, w.mod);
    auto it = cache_.find(k);
    if (it != cache_.end() &&
        std::equal(it->second.begin(), it->second.begin() + w.compare_bytes, w.data.begin()))
      continue;
    eng_.submit(mad::SmpRequest::set(w.attr, w.mod, dr_path_to(d, w.n, w.p), w.data),
                [this, &run, w, k](Result<mad::Smp> r) {
                  if (r) {
                    ++(w.attr == mad::kAttrSl2Vl ? run.rep.sl2vl_written : run.rep.vlarb_written);
                    cache_[k] = r->data;
                    return;
                  }
                  cache_.erase(k);
                  ++run.rep.table_failures;
                  add_problem(run.rep, std::string(mad::attr_name(w.attr)) + " Set (modifier 0x" +
                                           hex(w.mod) + ") on " +
                                           fabric::port_ref(run.target, w.n, w.p) + ": " +
                                           r.error().message);
                });
  }
}

void DeviceTables::settle(SweepRun& run) {
  // A switch port whose every input port now holds the one SL2VL table weft wants keeps
  // one cache entry for them all.
  const Discovered& d = run.d;
  for (size_t i = 0; i < wants_.size();) {
    const Want& first = wants_[i];
    size_t end = i;
    bool all = true;  // and alike: a table per input port has no one entry for all
    while (end < wants_.size() && wants_[end].attr == mad::kAttrSl2Vl && wants_[end].n == first.n &&
           wants_[end].p == first.p && d.fabric.node(first.n).is_switch()) {
      auto it = cache_.find(key(d, first.n, first.p, mad::kAttrSl2Vl, wants_[end].mod));
      all &= it != cache_.end() &&
             std::equal(it->second.begin(), it->second.begin() + 8, wants_[end].data.begin()) &&
             std::equal(first.data.begin(), first.data.begin() + 8, wants_[end].data.begin());
      ++end;
    }
    if (end == i) {
      ++i;
      continue;
    }
    const Key all_key = key(d, first.n, first.p, mad::kAttrSl2Vl, kAllInputs);
    if (all)
      cache_[all_key] = first.data;
    else
      cache_.erase(all_key);
    i = end;
  }
  pkey_jobs_.clear();
  wants_.clear();
}

}  // namespace weft::sm
