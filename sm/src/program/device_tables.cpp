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

// An SL2VL table is the first 8 bytes of its attribute data (16 SLs, 4 bits each).
bool same_sl2vl(const mad::SmpData& a, const mad::SmpData& b) {
  return std::equal(a.begin(), a.begin() + 8, b.begin());
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
  auto it = cache_.begin();
  if (cursor_)
    it = cache_.lower_bound(*cursor_);
  else
    ++check_pass_;
  size_t sent = 0;
  // One pass over the cache at most: blocks of ports gone or not steady are skipped
  // (the next programming reads those again anyway).
  for (size_t seen = 0; seen < cache_.size() && sent < want; ++seen, ++it) {
    if (it == cache_.end()) it = cache_.begin(), ++check_pass_;
    const Key k = it->first;
    const auto n = d.fabric.find(Guid{k.guid});
    if (!n || k.port > d.fabric.node(*n).num_ports || !steady(d, *n, k.port)) continue;
    const NodeIndex node = *n;
    const PortNum p = k.port;
    // A switch port's one entry for all its inputs: each pass over the cache reads the
    // next input's table, so num_ports + 1 passes read every one.
    uint32_t mod = k.mod;
    if (k.mod == kAllInputs) {
      const fabric::Node& nd = d.fabric.node(node);
      auto in = static_cast<PortNum>(check_pass_ % (nd.num_ports + 1u));
      for (unsigned tries = 0; in != 0 && !nd.ports[in].linked() && tries <= nd.num_ports; ++tries)
        in = static_cast<PortNum>((in + 1u) % (nd.num_ports + 1u));
      if (in != 0 && !nd.ports[in].linked()) in = 0;
      mod = uint32_t(in) << 8 | p;
    }
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
        mad::SmpRequest::get(k.attr, mod, dr_path_to(d, node, p)),
        [this, k, mod, node, p, bytes, where, held = it->second, answered](Result<mad::Smp> r) {
          if (!r) return;
          const bool differs = !std::equal(held.begin(), held.begin() + bytes, r->data.begin());
          if (differs) {
            WEFT_LOG(Warn, "SM-0059")
                << where << ": " << mad::attr_name(k.attr) << " block (modifier 0x" << hex(mod)
                << ") is not what weft wrote or read (another writer, no other sign): "
                   "reading it again and rewriting it";
            // Believed no more; an SL2VL table also no longer stands for all inputs.
            cache_.erase(k);
            if (k.attr == mad::kAttrSl2Vl) cache_.erase(Key{k.guid, kAllInputs, k.attr, k.port});
            if (on_drift_) on_drift_(table_name(k.attr), where, mod);
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
  port_maps_.clear();
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
  // A switch that takes all-inputs Sets is written without a read (one Set costs what one
  // read does); the others have one input's table read first.
  std::vector<size_t> samples;
  for (size_t i = 0; i < port_maps_.size(); ++i)
    if (!port_maps_[i].optimized) samples.push_back(i);
  mad::feed_each(eng_, std::move(samples), [this, &run](size_t i) { read_sample(run, i); });
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
  size_t not_optimized = 0;  // switches that offer all-ports Sets, written pair by pair
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
    const bool optimized = opts_.use_optimized_sl2vl && d.switch_info[n].optimized_sl2vl;
    const size_t first_map = port_maps_.size();
    bool uniform = true;  // every output port maps every input to one table
    std::optional<mad::SmpData> common;
    for (PortNum out = d.switch_info[n].enhanced_port0 ? 0 : 1; out <= nd.num_ports; ++out) {
      if (out != 0 && (!nd.ports[out].linked() || !d.port_read[n][out])) {
        // A linked port left unread may operate fewer VLs: no one Set for all ports.
        uniform &= !nd.ports[out].linked();
        continue;
      }
      const uint8_t oper = run.after[n][out].attrs.oper_vls;
      if (out != 0) check_vls(n, out, oper);
      // One table for every input port, unless the routes' maps tell inputs apart (only
      // per-hop maps do: without them the table is made once, not once per input).
      per_in.assign(rt.hop_vl.empty() ? 1 : size_t(nd.num_ports) + 1, {});
      bool alike = true;
      if (rt.hop_vl.empty())
        per_in[0] = table(n, 0, out, oper);
      else
        for (PortNum in = 0; in <= nd.num_ports; ++in)
          if (in == 0 || nd.ports[in].linked()) {
            per_in[in] = table(n, in, out, oper);
            alike &= same_sl2vl(per_in[in], per_in[0]);
          }
      if (!alike) {  // a table per input port: no one entry stands for them
        uniform = false;
        cache_.erase(key(d, n, out, mad::kAttrSl2Vl, kAllInputs));
        for (PortNum in = 0; in <= nd.num_ports; ++in)
          if (in == 0 || nd.ports[in].linked())
            wants_.push_back({n, out, mad::kAttrSl2Vl, uint32_t(in) << 8 | out, per_in[in], 8});
        continue;
      }
      if (!common)
        common = per_in[0];
      else
        uniform &= same_sl2vl(*common, per_in[0]);
      if (const mad::SmpData* h = held(d, n, out, mad::kAttrSl2Vl, kAllInputs);
          h && same_sl2vl(*h, per_in[0]))
        continue;
      port_maps_.push_back({n, out, per_in[0], optimized, false});
    }
    // Every output port wants one table for every input: one Set says it all. (A port
    // already holding it takes it again; a port that is down takes it too, and is
    // written anew when it comes up, since weft then holds nothing for it. A linked port
    // left unread made the switch not uniform above.)
    if (optimized && uniform)
      for (size_t i = first_map; i < port_maps_.size(); ++i) port_maps_[i].whole_switch = true;
    not_optimized += !opts_.use_optimized_sl2vl && d.switch_info[n].optimized_sl2vl &&
                     port_maps_.size() > first_map;
  }
  // An opensm.conf as `opensm -c` writes it says use_optimized_slvl FALSE (OpenSM's
  // default): said once, where it costs Sets, until the option is TRUE again.
  if (opts_.use_optimized_sl2vl) said_not_optimized_ = false;
  if (not_optimized && !said_not_optimized_) {
    said_not_optimized_ = true;
    WEFT_LOG(Info, "SM-0105")
        << "use_optimized_slvl FALSE: " << not_optimized
        << " switches that take one SLtoVLMappingTable Set for all their ports are written "
           "input port by input port (TRUE, weft's default, takes one Set per switch)";
  }
}

namespace {

// The input port whose table stands for a port's inputs until one differs: a linked
// port (the tables traffic uses), port 0 on a switch with no other.
PortNum sample_input(const fabric::Node& nd, PortNum out) {
  for (PortNum in = 1; in <= nd.num_ports; ++in)
    if (in != out && nd.ports[in].linked()) return in;
  return 0;
}

}  // namespace

void DeviceTables::read_sample(SweepRun& run, size_t i) {
  const PortMap& m = port_maps_[i];
  const PortNum in = sample_input(run.target.node(m.n), m.out);
  eng_.submit(mad::SmpRequest::get(mad::kAttrSl2Vl, uint32_t(in) << 8 | m.out,
                                   dr_path_to(run.d, m.n, m.out)),
              [this, &run, i](Result<mad::Smp> r) {
                ++run.rep.sl2vl_read;
                PortMap& m = port_maps_[i];
                m.sample = r && same_sl2vl(r->data, m.table) ? PortMap::Sample::kSame
                                                             : PortMap::Sample::kDiffers;
              });
}

void DeviceTables::forget_inputs(const Discovered& d, NodeIndex n, PortNum out) {
  for (PortNum in = 0; in <= d.fabric.node(n).num_ports; ++in)
    cache_.erase(key(d, n, out, mad::kAttrSl2Vl, uint32_t(in) << 8 | out));
}

void DeviceTables::port_map_done(SweepRun& run, size_t i, bool ok) {
  PortMap& m = port_maps_[i];
  m.failed |= !ok;
  if (--m.left != 0) return;
  const Key all = key(run.d, m.n, m.out, mad::kAttrSl2Vl, kAllInputs);
  if (m.failed)
    cache_.erase(all);
  else
    cache_[all] = m.table;
}

void DeviceTables::set_input(SweepRun& run, size_t i, PortNum in) {
  const PortMap& m = port_maps_[i];
  const uint32_t mod = uint32_t(in) << 8 | m.out;
  eng_.submit(mad::SmpRequest::set(mad::kAttrSl2Vl, mod, dr_path_to(run.d, m.n, m.out), m.table),
              [this, &run, i, mod](Result<mad::Smp> r) {
                const PortMap& m = port_maps_[i];
                // A Set answered with another table (a switch that did not take it) failed too.
                const bool ok = r && same_sl2vl(r->data, m.table);
                if (r) ++run.rep.sl2vl_written;
                if (!ok) {
                  ++run.rep.table_failures;
                  // Said once per output port: a switch that refuses one input's table (or a
                  // transport that failed) would say it for every input.
                  if (!m.failed)
                    add_problem(run.rep,
                                "SLtoVLMappingTable Set (modifier 0x" + hex(mod) + ") on " +
                                    fabric::port_ref(run.target, m.n, m.out) + ": " +
                                    (r ? std::string("answered with a table other than written")
                                       : r.error().message) +
                                    " (further failures toward this port are counted, not "
                                    "repeated)");
                }
                port_map_done(run, i, ok);
              });
}

void DeviceTables::set_inputs(SweepRun& run, size_t i) {
  const fabric::Node& nd = run.target.node(port_maps_[i].n);
  for (PortNum in = 0; in <= nd.num_ports; ++in)
    if (in == 0 || nd.ports[in].linked()) ++port_maps_[i].left;
  for (PortNum in = 0; in <= nd.num_ports; ++in)
    if (in == 0 || nd.ports[in].linked()) set_input(run, i, in);
}

void DeviceTables::write_port_map(SweepRun& run, size_t i) {
  const Discovered& d = run.d;
  const fabric::Node& nd = run.target.node(port_maps_[i].n);
  // The ports this Set or these Sets decide: [i, end).
  size_t end = i + 1;
  if (port_maps_[i].whole_switch)
    while (end < port_maps_.size() && port_maps_[end].n == port_maps_[i].n) ++end;
  for (size_t k = i; k < end; ++k) forget_inputs(d, port_maps_[k].n, port_maps_[k].out);
  const PortMap& m = port_maps_[i];
  if (m.optimized) {
    // Bit 17: every input port; with bit 16, every output port too.
    const uint32_t mod = m.whole_switch ? 0x30000u : 0x20000u | m.out;
    for (size_t k = i; k < end; ++k) port_maps_[k].left = 1;
    auto req = mad::SmpRequest::set(mad::kAttrSl2Vl, mod, dr_path_to(d, m.n, m.out), m.table);
    // The switch writes up to 64 input ports' tables (and every output port's) before it
    // answers: each attempt waits long_transaction_timeout, as OpenSM's do.
    req.long_transaction = true;
    eng_.submit(std::move(req), [this, &run, i, end, mod](Result<mad::Smp> r) {
      const NodeIndex n = port_maps_[i].n;
      const mad::SmpData& want = port_maps_[i].table;
      if (r && same_sl2vl(r->data, want)) {
        ++run.rep.sl2vl_written;
        for (size_t k = i; k < end; ++k) port_map_done(run, k, true);
        // Every output port holds it now, those this sweep left alone too: what weft
        // believed of a port the plan did not cover (down, unplanned) says nothing now.
        if (mod & 0x10000) {
          const fabric::Node& nd = run.target.node(n);
          for (PortNum out = 0; out <= nd.num_ports; ++out) {
            forget_inputs(run.d, n, out);
            const Key all = key(run.d, n, out, mad::kAttrSl2Vl, kAllInputs);
            if (auto it = cache_.find(all); it != cache_.end() && !same_sl2vl(want, it->second))
              cache_.erase(it);
          }
        }
        return;
      }
      if (r || r.error().code != Errc::kBadReply) {
        // Answered with another table, or not answered: those ports failed (a switch
        // that does not answer is not sent a Set per input port as well).
        ++run.rep.table_failures;
        add_problem(
            run.rep,
            "SLtoVLMappingTable Set for all input ports (modifier 0x" + hex(mod) + ") on " +
                fabric::port_ref(run.target, n, mod & 0x10000 ? PortNum{0} : port_maps_[i].out) +
                ": " +
                (r ? std::string("answered with a table other than written") : r.error().message));
        for (size_t k = i; k < end; ++k) port_map_done(run, k, false);
        return;
      }
      // A switch that says it takes such a Set and refuses it (an error status): input
      // by input.
      WEFT_LOG(Warn, "SM-0104") << fabric::port_ref(run.target, n,
                                                    mod & 0x10000 ? PortNum{0} : port_maps_[i].out)
                                << ": SLtoVLMappingTable Set for all input ports"
                                << (mod & 0x10000 ? " and all output ports" : "") << " (modifier 0x"
                                << hex(mod) << ") refused (" << r.error().message
                                << "); writing input port by input port";
      for (size_t k = i; k < end; ++k) {
        set_inputs(run, k);
        port_map_done(run, k, true);  // the refused Set's own count; the inputs' decide
      }
    });
    return;
  }
  if (m.sample != PortMap::Sample::kSame) {
    set_inputs(run, i);
    return;
  }
  // The sample input holds the table already: the others are read, and written where not.
  const PortNum sampled = sample_input(nd, m.out);
  for (PortNum in = 0; in <= nd.num_ports; ++in)
    if ((in == 0 || nd.ports[in].linked()) && in != sampled) ++port_maps_[i].left;
  if (port_maps_[i].left == 0) {  // no other input: held
    ++port_maps_[i].left;
    port_map_done(run, i, true);
    return;
  }
  for (PortNum in = 0; in <= nd.num_ports; ++in) {
    if ((in != 0 && !nd.ports[in].linked()) || in == sampled) continue;
    eng_.submit(
        mad::SmpRequest::get(mad::kAttrSl2Vl, uint32_t(in) << 8 | m.out, dr_path_to(d, m.n, m.out)),
        [this, &run, i, in](Result<mad::Smp> r) {
          ++run.rep.sl2vl_read;
          const PortMap& m = port_maps_[i];
          if (r && same_sl2vl(r->data, m.table))
            port_map_done(run, i, true);
          else
            set_input(run, i, in);  // its answer stands for this read's
        });
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
  // The switch ports mapping all inputs alike, fed as the window empties (on a radix-56
  // tree without all-inputs Sets, 12.7 M of them).
  std::vector<size_t> maps;
  for (size_t i = 0; i < port_maps_.size(); ++i)
    if (!port_maps_[i].whole_switch || i == 0 || port_maps_[i - 1].n != port_maps_[i].n)
      maps.push_back(i);
  mad::feed_each(eng_, std::move(maps), [this, &run](size_t i) { write_port_map(run, i); });
}

void DeviceTables::settle(SweepRun&) {
  // What the writes left is in the cache already (each Set's answer, and a port's one
  // entry for all its inputs once every one holds the table).
  pkey_jobs_.clear();
  wants_.clear();
  port_maps_.clear();
}

}  // namespace weft::sm
