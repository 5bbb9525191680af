// PortInfo Sets: what each port is told (LIDs, SM LID, MTU and VLs agreed with its
// peer, P_Key enforcement, VLHighLimit), and the two steps to ACTIVE.
#include "port_programmer.hpp"

#include <algorithm>

#include "weft/log.hpp"
#include "weft/sm/subn_adm.hpp"

namespace weft::sm {

using fabric::NodeIndex;
using fabric::PortState;

const qos::QosPortConfig& PortProgrammer::qos_for(const fabric::Fabric& f, NodeIndex n,
                                                  PortNum p) const {
  return opts_.qos.for_port(f.node(n), p);
}

bool PortProgrammer::enforces(const SweepRun& run, NodeIndex n, PortNum p) const {
  if (opts_.no_partition_enforcement || opts_.part_enforce == PartEnforce::kOff) return false;
  const fabric::Fabric& f = run.target;
  const auto& nd = f.node(n);
  if (!nd.is_switch() || p == 0 || !nd.ports[p].linked()) return false;
  const auto& port = nd.ports[p];
  if (f.node(port.peer).is_switch()) return false;
  const mad::SwitchInfo& si = run.d.switch_info[n];
  const bool can = (si.inbound_enforce_cap && opts_.part_enforce != PartEnforce::kOut) ||
                   (si.outbound_enforce_cap && opts_.part_enforce != PartEnforce::kIn);
  return can && si.partition_enforce_cap > 0 &&
         run.plan.pkeys[port.peer][port.peer_port].size() <= si.partition_enforce_cap;
}

uint64_t PortProgrammer::port_key(const fabric::Fabric& f, NodeIndex n, PortNum p) {
  const auto& nd = f.node(n);
  return nd.is_switch() ? (nd.guid.value ^ (uint64_t(p) << 56)) : nd.ports[p].guid.value;
}

// ClientReregister (IBTA 14.4.11), as OpenSM sets it: once a master term (the first
// sweep as master, after a takeover, after a restart: this SM holds none of the
// multicast joins, service registrations and trap subscriptions the port's clients made
// with whoever was master before), and again when the port comes back having lost its
// LID or SM LID (a host that rebooted, or heard another master). Only on ports whose
// CapabilityMask says they support it, never with no_clients_rereg; a port whose Set
// failed is owed it at the next sweep.
bool PortProgrammer::owes_rereg(const fabric::Fabric& f, NodeIndex n, PortNum p,
                                const mad::PortInfo& cur, Lid lid, Lid sm_lid) const {
  if (opts_.no_clients_rereg || !(cur.attrs.capability_mask & mad::kCapClientRereg)) return false;
  return !reregistered_.count(port_key(f, n, p)) || cur.attrs.lid != lid ||
         cur.attrs.sm_lid != sm_lid;
}

void PortProgrammer::step(Step s, SweepRun& run) {
  if (s == Step::kConfigure) configure(run);
  if (s == Step::kActivate) activate(run);
  if (s == Step::kCount) count_active(run);
}

void PortProgrammer::configure(SweepRun& run) {
  const Lid sm_lid = run.sm_lid;
  const Discovered& d = run.d;
  const fabric::Fabric& target = run.target;
  const bool enf_in =
      opts_.part_enforce == PartEnforce::kIn || opts_.part_enforce == PartEnforce::kBoth;
  const bool enf_out =
      opts_.part_enforce == PartEnforce::kOut || opts_.part_enforce == PartEnforce::kBoth;
  // The PortInfo Sets, each decided here on what discovery read.
  struct PortSet {
    NodeIndex n;
    PortNum p;
    mad::PortInfo want;
    uint64_t pkey;
  };
  std::vector<PortSet> sets;
  // At most one a port; what is reserved and not used is never touched.
  size_t ports = 0;
  for (const auto& pi : d.port_info) ports += pi.size();
  sets.reserve(ports);
  // Each port's MTU and VL caps as read (read: 0 where not), flat: its peer's, read in
  // discovery's per-node vectors, cost a cache miss a port (about 25 ms a sweep on the
  // radix-56 tree's 267,000 ports).
  struct Caps {
    uint8_t read, mtu, vls;
  };
  std::vector<uint32_t> first(target.size() + 1, 0);  // node n's ports: [first[n], first[n + 1])
  for (NodeIndex n = 0; n < target.size(); ++n)
    first[n + 1] = first[n] + static_cast<uint32_t>(d.port_read[n].size());
  std::vector<Caps> caps(first.back());
  for (NodeIndex n = 0; n < target.size(); ++n)
    for (size_t p = 0; p < d.port_read[n].size(); ++p)
      if (d.port_read[n][p])
        caps[first[n] + p] = {1, d.port_info[n][p].attrs.mtu_cap, d.port_info[n][p].attrs.vl_cap};
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 0; p <= nd.num_ports; ++p) {
      if (!d.port_read[n][p]) continue;
      const auto& port = nd.ports[p];
      const bool mgmt = nd.is_switch() && p == 0;
      if (nd.is_switch() && p != 0 && set_phys_state(run, n, p)) continue;
      if (!mgmt && !port.linked()) continue;
      const mad::PortInfo& cur = d.port_info[n][p];
      mad::PortInfo want = cur;
      bool change = false;
      if (mgmt || !nd.is_switch()) {
        want.attrs.lid = port.attrs.lid;
        want.attrs.lmc = port.attrs.lmc;
        want.attrs.sm_lid = sm_lid;
        want.subnet_timeout = opts_.subnet_timeout;
        // GIDPrefix: hosts build their GIDs from it (libibmad's ib_resolve_self, so
        // `smpquery -G` asks the SA with it); the SA answers for this prefix only.
        want.gid_prefix = kDefaultSubnetPrefix;
        // SubnetTimeout rides along with a needed Set but does not trigger one: some
        // devices (ibsim) never store it, and re-setting it every sweep would be noise.
        change |= cur.attrs.lid != want.attrs.lid || cur.attrs.lmc != want.attrs.lmc ||
                  cur.attrs.sm_lid != sm_lid || cur.gid_prefix != want.gid_prefix;
        want.client_reregister = owes_rereg(target, n, p, cur, want.attrs.lid, sm_lid);
        change |= want.client_reregister;
      }
      want.attrs.state = PortState::kNoChange;
      if (!mgmt) {
        const Caps& peer = caps[first[port.peer] + port.peer_port];
        const Caps pa = peer.read ? peer : Caps{1, cur.attrs.mtu_cap, cur.attrs.vl_cap};
        uint8_t mtu = std::min(cur.attrs.mtu_cap, pa.mtu);
        uint8_t vls = std::min({cur.attrs.vl_cap, pa.vls, opts_.max_op_vls});
        want.attrs.neighbor_mtu = mtu;
        want.attrs.oper_vls = vls;
        change |= cur.attrs.neighbor_mtu != mtu || cur.attrs.oper_vls != vls;
        if (cur.attrs.state == PortState::kInit) {
          want.attrs.state = PortState::kArmed;
          change = true;
        }
      }
      // Fields a device was seen to drop from a Set are still sent, but do not by
      // themselves cause one (or every sweep would rewrite the port).
      const uint64_t pkey = port_key(target, n, p);
      const uint8_t ignored = [&] {
        if (ignores_.empty()) return uint8_t(0);
        auto it = ignores_.find(pkey);
        return it == ignores_.end() ? uint8_t(0) : it->second;
      }();
      if (mgmt || !nd.is_switch()) {
        // M_Key: the port's key, protection and lease (a switch: port 0's). A port whose
        // lease ran out (protection 0) or that lost its key is keyed again here. With no
        // m_key, a key a port holds is cleared; its lease period (meaningless without a
        // key, and 4089 s on every ibsim port, which stores none of these) is left alone.
        const auto& mk = opts_.mkey;
        want.m_key = mk.key_of(port.guid);
        want.m_key_protect = mk.enabled() ? mk.protect_bits : 0;
        want.m_key_lease = mk.enabled() ? mk.lease_period : cur.m_key_lease;
        if (!(ignored & kIgnoresMKey))
          change |= cur.m_key != want.m_key || cur.m_key_protect != want.m_key_protect ||
                    cur.m_key_lease != want.m_key_lease;
      }
      if (nd.is_switch() && !mgmt) {
        const bool en = enforces(run, n, p);
        want.part_enf_in = en && enf_in && d.switch_info[n].inbound_enforce_cap;
        want.part_enf_out = en && enf_out && d.switch_info[n].outbound_enforce_cap;
        if (!(ignored & kIgnoresEnforcement))
          change |= cur.part_enf_in != want.part_enf_in || cur.part_enf_out != want.part_enf_out;
      }
      // The timers (OpenSM's link manager): HOQLife and VLStallCount on switch ports,
      // the leaf values where the peer is a CA or a router; HOQLife on router ports.
      if (!mgmt && (nd.is_switch() || nd.type == fabric::NodeType::kRouter)) {
        const bool leaf = !nd.is_switch() || !target.node(port.peer).is_switch();
        want.hoq_life = leaf ? opts_.leaf_head_of_queue_lifetime : opts_.head_of_queue_lifetime;
        if (nd.is_switch())
          want.vl_stall_count = leaf ? opts_.leaf_vl_stall_count : opts_.vl_stall_count;
        if (!(ignored & kIgnoresHoqLife)) change |= cur.hoq_life != want.hoq_life;
        if (!(ignored & kIgnoresStallCount)) change |= cur.vl_stall_count != want.vl_stall_count;
      }
      if (opts_.qos.enabled && (!mgmt || d.switch_info[n].enhanced_port0)) {
        want.vl_high_limit = qos_for(target, n, p).high_limit;
        if (!(ignored & kIgnoresHighLimit)) change |= cur.vl_high_limit != want.vl_high_limit;
      }
      if (!change) continue;
      want.attrs.phys_state = 0;     // no change
      want.attrs.width_enabled = 0;  // no change
      want.attrs.speed_enabled = 0;  // no change
      // A Set that changes the port's M_Key: its attempts, and those of any SMP to the
      // port after it went unanswered, alternate the old key and the new (MKeyBook), so
      // that a port that took it with its reply lost is not lost to weft.
      sets.push_back({n, p, want, pkey});
    }
  }
  // Sent as the window empties: the largest fabric has over 130,000.
  mad::feed_each(eng_, std::move(sets), [this, &run](const PortSet& s) {
    const auto [n, p, want, pkey] = s;
    auto set = mad::SmpRequest::set(mad::kAttrPortInfo, p, dr_path_to(run.d, n, p),
                                    mad::encode_port_info(want));
    eng_.submit(set, [this, &run, n, p, want, pkey](Result<mad::Smp> r) {
      auto ok = [this, &run, n, p, want, pkey](const mad::PortInfo& got) {
        ++run.rep.portinfo_sets;
        if (want.client_reregister) {
          reregistered_.insert(pkey);
          ++run.rep.client_reregisters;
        }
        run.after[n][p] = got;
        note_ignored(run.target, n, p, pkey, want, got, run.rep);
      };
      if (r) return ok(mad::decode_port_info(r->data));
      confirm(run, n, p, want, r.error(), "PortInfo Set", ok);
    });
  });
}

bool PortProgrammer::set_phys_state(SweepRun& run, NodeIndex n, PortNum p) {
  const auto& nd = run.target.node(n);
  const std::pair<uint64_t, PortNum> key{nd.guid.value, p};
  const mad::PortInfo& cur = run.d.port_info[n][p];
  uint8_t phys = 0;
  if (run.leave_down.count(key))
    phys = cur.attrs.phys_state == kPhysDisabled ? 0 : kPhysDisabled;
  else if (run.bring_up.count(key) && cur.attrs.phys_state == kPhysDisabled)
    phys = kPhysPolling;
  else
    return false;
  if (phys == 0) return true;  // down already: nothing else to tell it
  mad::PortInfo want = cur;
  want.attrs.state = PortState::kNoChange;
  want.attrs.phys_state = phys;
  want.attrs.width_enabled = 0;
  want.attrs.speed_enabled = 0;
  const std::string port = fabric::port_ref(run.target, n, p);
  auto why = run.leave_down.find(key);
  std::string reason = why == run.leave_down.end() ? std::string() : why->second;
  eng_.submit(mad::SmpRequest::set(mad::kAttrPortInfo, p, dr_path_to(run.d, n, p),
                                   mad::encode_port_info(want)),
              [&run, n, p, phys, port, reason](Result<mad::Smp> r) {
                if (!r)
                  return add_problem(
                      run.rep,
                      std::string(phys == kPhysDisabled ? "disabling " : "enabling ") + port +
                          ": " + r.error().message,
                      "SM-0035");
                run.after[n][p] = mad::decode_port_info(r->data);
                if (phys == kPhysDisabled) {
                  ++run.rep.ports_disabled;
                  WEFT_LOG(Info, "SM-0036") << port << " disabled (" << reason << ")";
                } else {
                  ++run.rep.ports_enabled;
                  WEFT_LOG(Info, "SM-0036") << port << " enabled again (PortPhysicalState Polling)";
                }
              });
  return true;
}

// Did the port take the Set whose answer failed? A reply lost on the way back leaves
// the port moved (ibsim then refuses the resend: the port is already there, status
// 0x1C). So read it back: what the Set asked for is what it holds, or it is not.
bool PortProgrammer::took(const mad::PortInfo& want, const mad::PortInfo& got) {
  const auto& w = want.attrs;
  const auto& g = got.attrs;
  if (w.state == PortState::kArmed && g.state != PortState::kArmed && g.state != PortState::kActive)
    return false;
  if (w.state == PortState::kActive && g.state != PortState::kActive) return false;
  if (w.neighbor_mtu && g.neighbor_mtu != w.neighbor_mtu) return false;
  if (w.oper_vls && g.oper_vls != w.oper_vls) return false;
  return g.lid == w.lid && g.sm_lid == w.sm_lid && g.lmc == w.lmc;
}

void PortProgrammer::confirm(SweepRun& run, NodeIndex n, PortNum p, const mad::PortInfo& want,
                             const Error& why, const char* what,
                             std::function<void(const mad::PortInfo&)> ok) {
  eng_.submit(mad::SmpRequest::get(mad::kAttrPortInfo, p, dr_path_to(run.d, n, p)),
              [this, &run, n, p, want, why, what, ok = std::move(ok)](Result<mad::Smp> r) {
                const std::string port = fabric::port_ref(run.target, n, p);
                if (r) {
                  mad::PortInfo got = mad::decode_port_info(r->data);
                  // A switch port's LID fields are port 0's: only state and link fields count.
                  mad::PortInfo cmp = want;
                  if (run.target.node(n).is_switch() && p != 0) {
                    cmp.attrs.lid = got.attrs.lid;
                    cmp.attrs.sm_lid = got.attrs.sm_lid;
                    cmp.attrs.lmc = got.attrs.lmc;
                  }
                  if (took(cmp, got)) {
                    WEFT_LOG(Info, "SM-0014")
                        << what << " on " << port << " failed (" << why.message
                        << ") but the port holds what it asked for";
                    return ok(got);
                  }
                }
                add_problem(run.rep, std::string(what) + " on " + port + ": " + why.message +
                                         (r ? "" : "; reading it back: " + r.error().message));
              });
}

void PortProgrammer::note_ignored(const fabric::Fabric& f, NodeIndex n, PortNum p, uint64_t key,
                                  const mad::PortInfo& want, const mad::PortInfo& got,
                                  SweepReport& rep) {
  uint8_t bits = 0;
  if (want.part_enf_in != got.part_enf_in || want.part_enf_out != got.part_enf_out)
    bits |= kIgnoresEnforcement;
  if (want.vl_high_limit != got.vl_high_limit) bits |= kIgnoresHighLimit;
  if (want.hoq_life != got.hoq_life) bits |= kIgnoresHoqLife;
  if (want.vl_stall_count != got.vl_stall_count) bits |= kIgnoresStallCount;
  const bool mkey_port = !f.node(n).is_switch() || p == 0;
  // A key of 0 under protection is hidden (a Get with another key), not dropped.
  const bool hidden = got.m_key == 0 && got.m_key_protect != 0;
  if (mkey_port && !hidden &&
      (want.m_key != got.m_key || want.m_key_protect != got.m_key_protect ||
       want.m_key_lease != got.m_key_lease))
    bits |= kIgnoresMKey;
  if (!bits) return;  // (only ports that dropped something are kept)
  uint8_t& known = ignores_[key];
  const uint8_t fresh = bits & ~known;
  known |= bits;
  if (fresh & kIgnoresEnforcement)
    add_problem(
        rep,
        fabric::port_ref(f, n, p) + " did not keep the P_Key enforcement bits of a PortInfo Set",
        "PRT-0008");
  if ((fresh & kIgnoresMKey) && want.m_key)
    add_problem(rep,
                fabric::port_ref(f, n, p) +
                    " did not keep its M_Key, protection level or lease (no M_Key support?): "
                    "anyone on the fabric can reprogram it",
                "MKY-0006");
  if (fresh & kIgnoresHighLimit)
    add_problem(rep,
                fabric::port_ref(f, n, p) + " did not keep VLHighLimit " +
                    std::to_string(want.vl_high_limit) + " (holds " +
                    std::to_string(got.vl_high_limit) + ")",
                "SM-0013");
  if (fresh & (kIgnoresHoqLife | kIgnoresStallCount))
    add_problem(rep,
                fabric::port_ref(f, n, p) + " did not keep HOQLife " +
                    std::to_string(want.hoq_life) + " / VLStallCount " +
                    std::to_string(want.vl_stall_count) + " (holds " +
                    std::to_string(got.hoq_life) + " / " + std::to_string(got.vl_stall_count) + ")",
                "SM-0057");
}

void PortProgrammer::activate(SweepRun& run) {
  const fabric::Fabric& target = run.target;
  // The ports to take to ACTIVE, each Set as the window empties (over 260,000 on the
  // largest fabric); nothing else changes what they read back as meanwhile.
  std::vector<std::pair<NodeIndex, PortNum>> armed;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked() || !run.d.port_read[n][p]) continue;
      if (run.after[n][p].attrs.state == PortState::kArmed) armed.emplace_back(n, p);
    }
  }
  mad::feed_each(eng_, std::move(armed), [this, &run](std::pair<NodeIndex, PortNum> port) {
    const auto [n, p] = port;
    mad::PortInfo want = run.after[n][p];
    want.attrs.state = PortState::kActive;
    want.attrs.phys_state = 0;
    want.attrs.width_enabled = 0;
    want.attrs.speed_enabled = 0;
    eng_.submit(mad::SmpRequest::set(mad::kAttrPortInfo, p, dr_path_to(run.d, n, p),
                                     mad::encode_port_info(want)),
                [this, &run, n, p, want](Result<mad::Smp> r) {
                  auto ok = [&run, n, p](const mad::PortInfo& got) {
                    ++run.rep.ports_activated;
                    run.after[n][p] = got;
                  };
                  if (r) return ok(mad::decode_port_info(r->data));
                  confirm(run, n, p, want, r.error(), "PortInfo Set ACTIVE", ok);
                });
  });
}

void PortProgrammer::count_active(SweepRun& run) const {
  const fabric::Fabric& target = run.target;
  run.rep.ports_linked = run.rep.ports_active = 0;
  for (NodeIndex n = 0; n < target.size(); ++n) {
    const auto& nd = target.node(n);
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked()) continue;
      ++run.rep.ports_linked;
      if (run.d.port_read[n][p] && run.after[n][p].attrs.state == PortState::kActive)
        ++run.rep.ports_active;
    }
  }
}

}  // namespace weft::sm
