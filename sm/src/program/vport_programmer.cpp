// SR-IOV virtual ports: discovery, P_Key tables and states (vport_programmer.hpp).
#include "vport_programmer.hpp"

#include <algorithm>
#include <unordered_set>

#include "weft/log.hpp"

namespace weft::sm {

using fabric::NodeIndex;
using fabric::PortState;

namespace {

// The linked CA ports of `d` whose PortInfo (read) says they support virtualization.
std::vector<std::pair<NodeIndex, PortNum>> virt_ports(const Discovered& d) {
  std::vector<std::pair<NodeIndex, PortNum>> out;
  for (NodeIndex n = 0; n < d.fabric.size(); ++n) {
    const auto& nd = d.fabric.node(n);
    if (nd.is_switch() || n >= d.port_read.size()) continue;
    for (PortNum p = 1; p <= nd.num_ports; ++p)
      if (nd.ports[p].linked() && p < d.port_read[n].size() && d.port_read[n][p] &&
          mad::port_info_virtualization(d.port_info[n][p]))
        out.emplace_back(n, p);
  }
  return out;
}

// What weft reads of one port at most, whatever its VirtualizationInfo and VNodeInfo
// say (weft's bounds: a ConnectX port has at most 127 VFs, and P_Key tables of 128): a
// hostile or broken answer costs a bounded number of SMPs.
constexpr uint16_t kMaxVPortIndex = 1024;
constexpr uint16_t kMaxVPortPkeys = 1024;

}  // namespace

struct VPortProgrammer::Walk {
  NodeIndex n;
  PortNum p;
  Guid port_guid;
  mad::DrPath path;
  std::string where;
  Book book;        // what this sweep reads
  size_t left = 0;  // reads of the vports still out
  bool failed = false;
};

void VPortProgrammer::step(Step s, SweepRun& run) {
  if (s == Step::kConfigure) write_lids(run);
  if (s == Step::kCommit) read_tables(run);
  if (s == Step::kTables) write_tables(run);
  if (s == Step::kActivate) activate(run);
  if (s == Step::kPublished) {
    // The port activation is done; the snapshot shows these INIT until the next sweep.
    for (const fabric::VPort& v : std::exchange(deferred_, {}))
      set_state(run, v, SIZE_MAX,
                v.state == PortState::kInit ? PortState::kArmed : PortState::kActive);
  }
  if (s == Step::kCount) {
    // Only the VFs still there: a GUID that comes back is a new VF's clients.
    std::unordered_set<uint64_t> here;
    for (const auto& v : run.target.vports()) here.insert(v.guid.value);
    std::erase_if(reregistered_, [&](const auto& kv) { return !here.count(kv.first); });
    run.rep.vports_found = run.target.vports().size();
    run.rep.vports_with_lid =
        size_t(std::count_if(run.target.vports().begin(), run.target.vports().end(),
                             [](const fabric::VPort& v) { return v.lid.value; }));
  }
}

void VPortProgrammer::discover(SweepRun& run) {
  queue_.clear();
  next_ = out_ = 0;
  if (opts_.virt_enabled == 0) return;
  queue_ = virt_ports(run.d);
  run.rep.virt_ports = queue_.size();
  start_next(run);
}

void VPortProgrammer::check(const Discovered& model,
                            std::function<void(NodeIndex, PortNum)> changed) {
  if (opts_.virt_enabled == 0) return;
  for (const auto& [n, p] : virt_ports(model)) {
    auto b = books_.find(model.fabric.node(n).ports[p].guid.value);
    if (b == books_.end()) {
      changed(n, p);  // never read
      continue;
    }
    // A port whose last read failed: again after 2^failures light sweeps (at most 64).
    bool retry = false;
    if (!b->second.known && ++b->second.waits >= (1u << std::min(b->second.failures, 6u))) {
      b->second.waits = 0;
      retry = true;
    }
    eng_.submit(mad::SmpRequest::get(mad::kAttrVirtualizationInfo, 0, dr_path_to(model, n, p)),
                [this, n, p, changed, retry](Result<mad::Smp> r) {
                  if (!r) return;  // the port's switch shows a port gone
                  const auto vi = mad::decode_virtualization_info(r->data);
                  if (retry || vi.state_change || vi.enabled != (opts_.virt_enabled == 2))
                    changed(n, p);
                });
  }
}

void VPortProgrammer::start_next(SweepRun& run) {
  while (next_ < queue_.size() && out_ < std::max<uint32_t>(1, opts_.virt_max_ports_in_process)) {
    const auto [n, p] = queue_[next_++];
    auto w = std::make_shared<Walk>();
    w->n = n;
    w->p = p;
    w->port_guid = run.d.fabric.node(n).ports[p].guid;
    w->path = dr_path_to(run.d, n, p);
    w->where = fabric::port_ref(run.d.fabric, n, p);
    ++out_;
    read_port(run, std::move(w));
  }
}

void VPortProgrammer::read_port(SweepRun& run, std::shared_ptr<Walk> w) {
  eng_.submit(
      mad::SmpRequest::get(mad::kAttrVirtualizationInfo, 0, w->path),
      [this, &run, w](Result<mad::Smp> r) {
        ++run.rep.vport_reads;
        if (!r) {
          ++run.rep.vport_failures;
          add_problem(run.rep, "VirtualizationInfo of " + w->where + ": " + r.error().message,
                      "VRT-0001");
          w->failed = true;
          return port_done(run, w);
        }
        mad::VirtualizationInfo vi = mad::decode_virtualization_info(r->data);
        const bool on = opts_.virt_enabled == 2;
        const auto it = books_.find(w->port_guid.value);
        const bool known = it != books_.end() && it->second.known;
        if (on && vi.enabled && !vi.state_change && known) {
          w->book = it->second;  // nothing changed: nothing read again
          return port_done(run, w);
        }
        if (!on && !vi.enabled) return port_done(run, w);
        // Turned on (or off), VPortStateChange written 1 to clear it, in one Set.
        vi.enabled = on;
        vi.client_reregister = false;
        vi.state_change = on;
        eng_.submit(
            mad::SmpRequest::set(mad::kAttrVirtualizationInfo, 0, w->path,
                                 mad::encode_virtualization_info(vi)),
            [this, &run, w, on](Result<mad::Smp> s) {
              ++run.rep.vport_reads;
              if (!s) {
                ++run.rep.vport_failures;
                add_problem(run.rep,
                            std::string("VirtualizationInfo Set (virtualization ") +
                                (on ? "on" : "off") + ") on " + w->where + ": " + s.error().message,
                            "VRT-0002");
                w->failed = true;
                return port_done(run, w);
              }
              const auto got = mad::decode_virtualization_info(s->data);
              if (got.enabled != on) {
                ++run.rep.vport_failures;
                add_problem(run.rep,
                            w->where + ": VirtualizationInfo Set answered with virtualization " +
                                (got.enabled ? "on" : "off"),
                            "VRT-0002");
                w->failed = true;
                return port_done(run, w);
              }
              if (!on) return port_done(run, w);
              uint16_t top = got.vport_index_top;
              if (top > got.vport_cap || top > kMaxVPortIndex) {
                top = std::min<uint16_t>(got.vport_cap, kMaxVPortIndex);
                add_problem(run.rep,
                            w->where + ": VirtualizationInfo says vports up to " +
                                std::to_string(got.vport_index_top) + " of " +
                                std::to_string(got.vport_cap) + "; reading up to " +
                                std::to_string(top),
                            "VRT-0010");
              }
              WEFT_LOG(Debug, "VRT-0003") << w->where << ": reading its " << top << " vports";
              read_vports(run, w, top);
            });
      });
}

void VPortProgrammer::read_vports(SweepRun& run, std::shared_ptr<Walk> w, uint16_t top) {
  if (top == 0) return port_done(run, w);
  const uint32_t blocks = uint32_t(top) / mad::kVPortStatesPerBlock + 1;
  w->left = blocks;
  auto live = std::make_shared<std::vector<std::pair<uint16_t, uint8_t>>>();
  // After every state block: VPortInfo, VNodeInfo and VNodeDescription of each live vport.
  auto read_each = [this, &run, w, live]() {
    if (live->empty()) return port_done(run, w);
    w->book.vports.resize(live->size());
    w->left = live->size() * 3;
    for (size_t i = 0; i < live->size(); ++i) {
      const auto [index, state] = (*live)[i];
      Found& f = w->book.vports[i];
      f.v.index = index;
      f.v.state = PortState(state);
      // One of the vport's three reads: `take` fills its Found from the answer.
      auto read = [this, &run, w, i, index](uint16_t attr, const char* what,
                                            void (*take)(Found&, const mad::SmpData&)) {
        eng_.submit(mad::SmpRequest::get(attr, mad::vport_modifier(index), w->path),
                    [this, &run, w, i, index, what, take](Result<mad::Smp> r) {
                      ++run.rep.vport_reads;
                      if (r) {
                        take(w->book.vports[i], r->data);
                        ++w->book.vports[i].reads_ok;
                      } else {
                        ++run.rep.vport_failures;
                        add_problem(run.rep,
                                    std::string(what) + " of vport " + std::to_string(index) +
                                        " of " + w->where + ": " + r.error().message,
                                    "VRT-0004");
                        w->failed = true;
                      }
                      if (--w->left == 0) port_done(run, w);
                    });
      };
      read(mad::kAttrVPortInfo, "VPortInfo", [](Found& f, const mad::SmpData& d) {
        f.info = mad::decode_vport_info(d);
        f.v.guid = f.info.port_guid;
        f.v.state = PortState(f.info.state);
        f.v.lid_required = f.info.lid_required;
        // A LID a VF with no GUID still holds is nobody's: not routed.
        f.v.lid = f.info.lid_required && f.v.guid.value ? Lid{f.info.lid} : Lid{};
      });
      read(mad::kAttrVNodeInfo, "VNodeInfo", [](Found& f, const mad::SmpData& d) {
        const auto vn = mad::decode_vnode_info(d);
        f.v.node_guid = vn.node_guid;
        f.v.partition_cap = std::min<uint16_t>(vn.partition_cap, kMaxVPortPkeys);
      });
      read(mad::kAttrVNodeDesc, "VNodeDescription",
           [](Found& f, const mad::SmpData& d) { f.v.description = mad::decode_node_desc(d); });
    }
  };
  for (uint32_t b = 0; b < blocks; ++b) {
    eng_.submit(
        mad::SmpRequest::get(mad::kAttrVPortState, mad::vport_state_modifier(uint16_t(b)), w->path),
        [this, &run, w, live, b, top, read_each](Result<mad::Smp> r) {
          ++run.rep.vport_reads;
          if (!r) {
            ++run.rep.vport_failures;
            add_problem(run.rep,
                        "VPortState block " + std::to_string(b) + " of " + w->where + ": " +
                            r.error().message,
                        "VRT-0004");
            w->failed = true;
          } else {
            const auto states = mad::decode_vport_state_block(r->data);
            for (uint32_t i = 0; i < mad::kVPortStatesPerBlock; ++i) {
              const uint32_t index = b * mad::kVPortStatesPerBlock + i;
              if (index == 0 || index > top) continue;  // vport 0: the port itself
              const uint8_t s = states[i];
              if (s >= uint8_t(PortState::kInit) && s <= uint8_t(PortState::kActive))
                live->emplace_back(uint16_t(index), s);
            }
          }
          if (--w->left == 0) {
            std::sort(live->begin(), live->end());
            read_each();
          }
        });
  }
}

void VPortProgrammer::port_done(SweepRun& run, const std::shared_ptr<Walk>& w) {
  Book& b = books_[w->port_guid.value];
  const uint64_t g = w->port_guid.value;
  if (w->failed) {
    // A read that failed says nothing about the vports: those as last read stand (their
    // partitions stay on the switch port facing them), and the port is read again.
    if (b.vports.empty()) {
      std::erase_if(tables_, [g](const auto& e) { return std::get<0>(e.first) == g; });
      for (Found& f : w->book.vports)
        if (f.reads_ok == 3) b.vports.push_back(std::move(f));
    }
    b.known = false;
    ++b.failures;
    b.waits = 0;
  } else {
    if (!w->book.known) {
      // Read again (or for the first time): their tables are read again too.
      std::erase_if(tables_, [g](const auto& e) { return std::get<0>(e.first) == g; });
      w->book.known = true;
    }
    b = std::move(w->book);
  }
  --out_;
  start_next(run);
}

void VPortProgrammer::adopt(SweepRun& run) {
  fabric::Fabric& f = run.d.fabric;
  std::unordered_set<uint64_t> seen_ports;
  // Every GUID of the fabric, built at the first vport with one (on a fabric without
  // vports, it would cost the radix-56 tree's 380,000 GUIDs each sweep for nothing).
  std::unordered_set<uint64_t> taken;
  auto take = [&taken, &f](uint64_t g) {
    if (taken.empty()) {
      for (const auto& nd : f.nodes()) {
        taken.insert(nd.guid.value);
        for (const auto& p : nd.ports) taken.insert(p.guid.value);
      }
    }
    return taken.insert(g).second;
  };
  std::vector<fabric::VPort> all;
  for (const auto& [n, p] : queue_) {
    const uint64_t g = f.node(n).ports[p].guid.value;
    seen_ports.insert(g);
    auto it = books_.find(g);
    if (it == books_.end()) continue;
    for (const Found& x : it->second.vports) {
      fabric::VPort v = x.v;
      v.node = n;
      v.port = p;
      if (v.guid.value && !take(v.guid.value)) {
        add_problem(run.rep,
                    "vport " + std::to_string(v.index) + " of " + fabric::port_ref(f, n, p) +
                        " carries the GUID " + v.guid.str() +
                        " of another port or vport: left out of the model",
                    "VRT-0005");
        continue;
      }
      all.push_back(std::move(v));
    }
  }
  // Ports no longer read (gone, or virtualization no longer supported): forgotten.
  std::erase_if(books_, [&seen_ports](const auto& e) { return !seen_ports.count(e.first); });
  if (auto r = f.set_vports(std::move(all)); !r)
    add_problem(run.rep, "vports: " + r.error().message, "VRT-0005");
}

namespace {

bool programmable(const fabric::VPort& v) {
  return v.guid.value && v.partition_cap && v.state >= PortState::kInit &&
         v.state <= PortState::kActive;
}

}  // namespace

void VPortProgrammer::read_tables(SweepRun& run) {
  const auto& vps = run.target.vports();
  ready_.assign(vps.size(), false);
  for (const auto& v : vps) {
    if (!programmable(v)) continue;
    const uint64_t g = run.target.node(v.node).ports[v.port].guid.value;
    const mad::DrPath path = dr_path_to(run.d, v.node, v.port);
    for (uint16_t b = 0; b < (v.partition_cap + 31) / 32; ++b) {
      const TableKey k{g, v.index, b};
      if (tables_.count(k)) continue;
      eng_.submit(mad::SmpRequest::get(mad::kAttrVPortPkeyTable,
                                       mad::vport_block_modifier(v.index, b), path),
                  [this, &run, k](Result<mad::Smp> r) {
                    if (r) {
                      ++run.rep.vport_pkey_blocks_read;
                      tables_[k] = r->data;
                    } else {
                      ++run.rep.vport_failures;
                    }
                  });
    }
  }
}

void VPortProgrammer::write_tables(SweepRun& run) {
  const auto& vps = run.target.vports();
  for (size_t i = 0; i < vps.size(); ++i) {
    const auto& v = vps[i];
    if (!programmable(v) || i >= run.plan.vport_pkeys.size()) continue;
    const uint64_t g = run.target.node(v.node).ports[v.port].guid.value;
    const size_t blocks = (v.partition_cap + 31) / 32;
    std::vector<uint16_t> held;
    bool complete = true;
    for (uint16_t b = 0; b < blocks && complete; ++b) {
      auto it = tables_.find({g, v.index, b});
      if (it == tables_.end()) {
        complete = false;
        break;
      }
      const auto keys = mad::decode_pkey_block(it->second);
      held.insert(held.end(), keys.begin(), keys.end());
    }
    const std::string where =
        "vport " + std::to_string(v.index) + " of " + fabric::port_ref(run.target, v.node, v.port);
    if (!complete) {
      add_problem(run.rep,
                  where +
                      ": its VPortPKeyTable could not be read; not written, the "
                      "vport not activated",
                  "VRT-0006");
      continue;
    }
    const PkeyWrite pw = plan_pkey_write(
        run.plan.vport_pkeys[i], std::move(held), v.partition_cap, opts_.keep_pkey_indexes,
        [&where] { return where; }, run.rep);
    const mad::DrPath path = dr_path_to(run.d, v.node, v.port);
    for (const auto& [b, out] : pw.blocks) {
      const TableKey k{g, v.index, b};
      eng_.submit(
          mad::SmpRequest::set(mad::kAttrVPortPkeyTable, mad::vport_block_modifier(v.index, b),
                               path, mad::encode_pkey_block(out)),
          [this, &run, k, i, want = out, where](Result<mad::Smp> r) {
            if (r && mad::decode_pkey_block(r->data) == want) {
              ++run.rep.vport_pkey_blocks_written;
              tables_[k] = r->data;
              return;
            }
            tables_.erase(k);
            ready_[i] = false;
            ++run.rep.vport_failures;
            add_problem(run.rep,
                        where + ": VPortPKeyTable Set: " +
                            (r ? std::string("the reply holds other P_Keys") : r.error().message),
                        "VRT-0006");
          });
    }
    ready_[i] = true;
  }
}

VPortProgrammer::Found* VPortProgrammer::found(const SweepRun& run, const fabric::VPort& v) {
  // run.d's fabric: the target's node numbers, and still whole once published.
  auto b = books_.find(run.d.fabric.node(v.node).ports[v.port].guid.value);
  if (b == books_.end()) return nullptr;
  auto f = std::find_if(b->second.vports.begin(), b->second.vports.end(),
                        [&v](const Found& x) { return x.v.index == v.index; });
  return f == b->second.vports.end() ? nullptr : &*f;
}

// A VF is owed a ClientReregister as its port is (PortProgrammer::owes_rereg): an ACTIVE
// VF whose clients this SM has not told to register with it this term (after a
// takeover, a restart), or one given a LID other than the one it was told at (it lost
// it). Once a LID: a VF that keeps refusing its LID is written again each sweep, but its
// clients are not told again. Not with no_clients_rereg, nor behind a port that says it
// does not support it.
bool VPortProgrammer::owes_rereg(const SweepRun& run, const fabric::VPort& v, bool new_lid) const {
  if (opts_.no_clients_rereg || !v.guid.value || v.state != PortState::kActive) return false;
  if (!(run.target.node(v.node).ports[v.port].attrs.capability_mask & mad::kCapClientRereg))
    return false;
  auto told = reregistered_.find(v.guid.value);
  return told == reregistered_.end() || (new_lid && told->second != v.lid.value);
}

void VPortProgrammer::write_lids(SweepRun& run) {
  const auto& vps = run.target.vports();
  for (size_t i = 0; i < vps.size(); ++i) {
    const auto& v = vps[i];
    Found* f = found(run, v);
    if (!f) continue;
    const bool new_lid = v.lid_required && v.lid.value && f->info.lid != v.lid.value;
    const bool rereg = owes_rereg(run, v, new_lid);
    if (!new_lid && !rereg) continue;
    mad::VPortInfo info = f->info;
    info.state = 0;  // no change
    info.client_reregister = rereg;
    if (new_lid) info.lid = v.lid.value;
    const std::string where =
        "vport " + std::to_string(v.index) + " of " + fabric::port_ref(run.target, v.node, v.port);
    eng_.submit(
        mad::SmpRequest::set(mad::kAttrVPortInfo, mad::vport_modifier(v.index),
                             dr_path_to(run.d, v.node, v.port), mad::encode_vport_info(info)),
        [this, &run, i, new_lid, rereg, guid = v.guid.value, want = info.lid, lid = v.lid.value,
         where](Result<mad::Smp> r) {
          const auto got = r ? mad::decode_vport_info(r->data) : mad::VPortInfo{};
          if (Found* f = found(run, run.target.vports()[i]); f && r) f->info = got;
          if (r && rereg) {
            reregistered_[guid] = lid;
            ++run.rep.client_reregisters;
          }
          if (r && (!new_lid || got.lid == want)) {
            run.rep.vport_lids_set += new_lid;
            return;
          }
          ++run.rep.vport_failures;
          add_problem(run.rep,
                      where + ": VPortInfo Set of " +
                          (new_lid ? "LID " + std::to_string(want) : "ClientReregister") + ": " +
                          (r ? "answered LID " + std::to_string(got.lid) : r.error().message),
                      "VRT-0009");
        });
  }
}

void VPortProgrammer::activate(SweepRun& run) {
  auto& vps = run.target.vports();
  deferred_.clear();
  for (size_t i = 0; i < vps.size() && i < ready_.size(); ++i) {
    const auto& v = vps[i];
    if (!ready_[i] || (v.state != PortState::kInit && v.state != PortState::kArmed)) continue;
    if (v.lid_required && !v.lid.value) {
      add_problem(run.rep,
                  "vport " + std::to_string(v.index) + " of " +
                      fabric::port_ref(run.target, v.node, v.port) +
                      " requires a LID and has none: not activated",
                  "VRT-0011");
      continue;
    }
    // After its port: a VF above its port's state is not what a device expects.
    const bool port_active = v.node < run.after.size() && v.port < run.after[v.node].size() &&
                             run.after[v.node][v.port].attrs.state == PortState::kActive;
    if (port_active)
      set_state(run, v, i, v.state == PortState::kInit ? PortState::kArmed : PortState::kActive);
    else
      deferred_.push_back(v);
  }
}

void VPortProgrammer::set_state(SweepRun& run, fabric::VPort v, size_t i, mad::VPortState to) {
  const Found* f = found(run, v);
  if (!f) return;
  mad::VPortInfo info = f->info;
  info.state = uint8_t(to);
  info.client_reregister = false;
  const std::string where =
      "vport " + std::to_string(v.index) + " of " + fabric::port_ref(run.d.fabric, v.node, v.port);
  const mad::DrPath path = dr_path_to(run.d, v.node, v.port);
  eng_.submit(mad::SmpRequest::set(mad::kAttrVPortInfo, mad::vport_modifier(v.index), path,
                                   mad::encode_vport_info(info)),
              [this, &run, v, i, to, where](Result<mad::Smp> r) {
                const auto got = r ? mad::decode_vport_info(r->data) : mad::VPortInfo{};
                if (!r || got.state != uint8_t(to)) {
                  ++run.rep.vport_failures;
                  add_problem(run.rep,
                              where + ": VPortInfo Set to " + fabric::port_state_name(to) + ": " +
                                  (r ? std::string("answered ") +
                                           fabric::port_state_name(PortState(got.state))
                                     : r.error().message),
                              "VRT-0007");
                  return;
                }
                // The model the snapshot is made of, while it is not yet published.
                if (i < run.target.vports().size()) run.target.vports()[i].state = to;
                if (Found* f = found(run, v)) {
                  f->info = got;
                  f->v.state = to;
                }
                if (to == PortState::kArmed) return set_state(run, v, i, PortState::kActive);
                ++run.rep.vports_activated;
                // Its clients start now, registering with this SM: no ClientReregister owed.
                if (v.guid.value) reregistered_[v.guid.value] = v.lid.value;
              });
}

}  // namespace weft::sm
