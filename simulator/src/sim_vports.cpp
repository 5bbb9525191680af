// SR-IOV virtual ports of the simulator's CA ports (weft/simulator/sim_vports.hpp).
#include "weft/simulator/sim_vports.hpp"

#include <algorithm>
#include <unordered_set>

namespace weft::simulator {

using namespace weft::mad;

namespace {

constexpr uint16_t kStatusUnsupported = 0x000C;
constexpr uint16_t kStatusInvalid = 0x001C;

}  // namespace

void SimVPorts::add(fabric::NodeIndex n, PortNum p, const Config& c) {
  Port& port = ports_[{n, p}];
  port = {};
  port.vport_cap = uint16_t(c.vports + 1);
  port.partition_cap = c.partition_cap;
  port.node_guid = c.node_guid;
  port.vports.resize(size_t(c.vports) + 1);
  for (size_t i = 0; i < port.vports.size(); ++i) {
    VPort& v = port.vports[i];
    v.pkeys.assign(c.partition_cap, 0);
    v.lid_required = i >= 1 && i <= c.lid_required;
  }
  // The physical function: up with the port, holding the default partition.
  port.vports[0].state = uint8_t(VPortState::kActive);
  port.vports[0].pkeys[0] = 0xffff;
}

const SimVPorts::Port* SimVPorts::find(fabric::NodeIndex n, PortNum p) const {
  auto it = ports_.find({n, p});
  return it == ports_.end() ? nullptr : &it->second;
}

void SimVPorts::host_set_guid(fabric::NodeIndex n, PortNum p, uint16_t vport, Guid g) {
  auto it = ports_.find({n, p});
  if (it == ports_.end() || vport == 0 || vport >= it->second.vports.size()) return;
  VPort& v = it->second.vports[vport];
  v.guid = g;
  v.state = uint8_t(g.value ? VPortState::kInit : VPortState::kDown);
  if (!g.value) v.lid = 0;
  it->second.state_change = true;
}

void SimVPorts::refuse_lid(fabric::NodeIndex n, PortNum p, uint16_t vport) {
  auto it = ports_.find({n, p});
  if (it == ports_.end() || vport == 0 || vport >= it->second.vports.size()) return;
  it->second.vports[vport].refuses_lid = true;
  it->second.vports[vport].lid = 0;
}

SmpData SimVPorts::general_info(fabric::NodeIndex n, PortNum p) const {
  SmpData d{};
  if (has(n, p)) d[2] |= 0x80;  // capability bit 15: word 0, byte 2
  return d;
}

uint16_t SimVPorts::handle(const Smp& s, fabric::NodeIndex n, PortNum p, uint16_t port_lid,
                           SmpData& data) {
  const bool set = s.method == kMethodSet;
  if (s.attr_id == kAttrGeneralInfo) {
    if (set || s.attr_mod != kGeneralInfoCapabilities) return kStatusInvalid;
    data = general_info(n, p);
    return 0;
  }
  auto it = ports_.find({n, p});
  if (it == ports_.end()) return kStatusUnsupported;
  Port& port = it->second;
  const uint16_t top = uint16_t(port.vports.size() - 1);
  if (s.attr_id == kAttrVirtualizationInfo) {
    if (s.attr_mod != 0) return kStatusInvalid;
    if (set) {
      const VirtualizationInfo want = decode_virtualization_info(data);
      port.enabled = want.enabled;
      if (want.state_change) port.state_change = false;  // written 1: cleared
    }
    VirtualizationInfo v;
    v.vport_cap = port.vport_cap;
    v.vport_index_top = top;
    v.enabled = port.enabled;
    v.state_change = port.state_change;
    data = encode_virtualization_info(v);
    return 0;
  }
  if (!port.enabled) return kStatusInvalid;
  const uint16_t vport = uint16_t(s.attr_mod & 0xffff);
  const uint16_t block = uint16_t(s.attr_mod >> 16);
  switch (s.attr_id) {
    case kAttrVPortState: {
      if (set) return kStatusUnsupported;
      VPortStateBlock b{};
      const size_t first = size_t(s.attr_mod) * kVPortStatesPerBlock;
      if (first > top) return kStatusInvalid;
      for (size_t i = 0; i < kVPortStatesPerBlock && first + i <= top; ++i)
        b[i] = port.vports[first + i].state;
      data = encode_vport_state_block(b);
      return 0;
    }
    case kAttrVPortInfo: {
      if (s.attr_mod != vport_modifier(vport) || vport > top) return kStatusInvalid;
      VPort& v = port.vports[vport];
      if (set) {
        const VPortInfo want = decode_vport_info(data);
        // Init to Armed to Active, or Down; vport 0 follows the physical port.
        const uint8_t to = want.state;
        const bool legal =
            to == 0 || to == uint8_t(VPortState::kDown) ||
            (to == uint8_t(VPortState::kArmed) && v.state == uint8_t(VPortState::kInit)) ||
            (to == uint8_t(VPortState::kActive) && v.state == uint8_t(VPortState::kArmed));
        if (!legal || vport == 0) return kStatusInvalid;
        if (to != 0 && v.state != uint8_t(VPortState::kDown)) v.state = to;
        if (v.lid_required && !v.refuses_lid) v.lid = want.lid;
        if (want.client_reregister) ++v.client_reregisters;
      }
      VPortInfo out;
      out.state = v.state;
      out.lid_required = v.lid_required;
      out.guid_cap = 1;
      out.lid = vport == 0 ? port_lid : v.lid_required ? v.lid : 0;
      out.lid_by_vport_index = 0;  // weft's choice: a VF without a LID borrows vport 0's
      out.port_guid = v.guid;
      data = encode_vport_info(out);
      return 0;
    }
    case kAttrVNodeInfo: {
      if (set) return kStatusUnsupported;
      if (s.attr_mod != vport_modifier(vport) || vport > top) return kStatusInvalid;
      VNodeInfo vn;
      vn.partition_cap = port.partition_cap;
      vn.local_port = 1;
      vn.num_ports = 1;
      vn.node_guid = vport ? derived_vport_guid(port.node_guid, vport) : port.node_guid;
      data = encode_vnode_info(vn);
      return 0;
    }
    case kAttrVNodeDesc: {
      if (set) return kStatusUnsupported;
      if (s.attr_mod != vport_modifier(vport) || vport > top) return kStatusInvalid;
      data = encode_node_desc("vport " + std::to_string(vport));
      return 0;
    }
    case kAttrVPortGuidInfo: {
      if (set) return kStatusUnsupported;
      if (vport > top || block != 0) return kStatusInvalid;
      VPortGuidBlock b{};
      b[0] = port.vports[vport].guid;
      data = encode_vport_guid_block(b);
      return 0;
    }
    case kAttrVPortPkeyTable: {
      if (vport > top || size_t(block) * 32 >= port.partition_cap) return kStatusInvalid;
      auto& keys = port.vports[vport].pkeys;
      if (set) {
        const PkeyBlock b = decode_pkey_block(data);
        for (size_t i = 0; i < 32 && block * 32 + i < keys.size(); ++i) keys[block * 32 + i] = b[i];
      }
      PkeyBlock b{};
      for (size_t i = 0; i < 32 && block * 32 + i < keys.size(); ++i) b[i] = keys[block * 32 + i];
      data = encode_pkey_block(b);
      return 0;
    }
  }
  return kStatusUnsupported;
}

bool SimVPorts::may_talk(fabric::NodeIndex a, PortNum pa, uint16_t va, fabric::NodeIndex b,
                         PortNum pb, uint16_t vb) const {
  const Port* x = find(a, pa);
  const Port* y = find(b, pb);
  if (!x || !y || va >= x->vports.size() || vb >= y->vports.size()) return false;
  for (uint16_t k : x->vports[va].pkeys) {
    if (!(k & 0x7fff)) continue;
    for (uint16_t m : y->vports[vb].pkeys)
      if ((m & 0x7fff) == (k & 0x7fff) && ((k | m) & 0x8000)) return true;
  }
  return false;
}

Guid derived_vport_guid(Guid port, uint16_t vf) {
  return Guid{(port.value & ~(uint64_t(0xff) << 32)) | (uint64_t(0x80 | (vf & 0x7f)) << 32)};
}

Result<void> add_vports_everywhere(SimVPorts& v, const fabric::Fabric& f, uint16_t vports,
                                   uint16_t lid_required) {
  if (vports < 1 || vports > 127 || lid_required > vports)
    return fail(Errc::kInvalidInput, "vports: " + std::to_string(vports) + " VFs with " +
                                         std::to_string(lid_required) +
                                         " requiring a LID; want 1..127 VFs and at most as many "
                                         "requiring a LID");
  std::unordered_set<uint64_t> taken;
  for (const auto& nd : f.nodes()) {
    taken.insert(nd.guid.value);
    for (const auto& p : nd.ports) taken.insert(p.guid.value);
  }
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    if (nd.is_switch()) continue;
    for (PortNum p = 1; p <= nd.num_ports; ++p) {
      if (!nd.ports[p].linked()) continue;
      v.add(n, p, {.vports = vports, .lid_required = lid_required, .node_guid = nd.guid});
      for (uint16_t i = 1; i <= vports; ++i) {
        const Guid g = derived_vport_guid(nd.ports[p].guid, i);
        if (!taken.insert(g.value).second)
          return fail(Errc::kInvalidInput, "vports: the GUID " + g.str() + " for VF " +
                                               std::to_string(i) + " of " +
                                               fabric::port_ref(f, n, p) +
                                               " is already carried by another node, port or VF");
        v.host_set_guid(n, p, i, g);
      }
    }
  }
  return {};
}

}  // namespace weft::simulator
