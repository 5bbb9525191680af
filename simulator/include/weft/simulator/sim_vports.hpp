// The simulator's SR-IOV virtual ports (issue 34, item 6): CA ports that answer NVIDIA's
// virtualization attributes (weft/mad/vport.hpp) as a ConnectX-4 or later port does, for
// an SM to discover, give LIDs and program. ibsim has none.
//
//   SimVPorts v;
//   v.add(node, 1, {.vports = 8, .lid_required = 3, .node_guid = g});  // VFs 1-8
//   v.host_set_guid(node, 1, 2, Guid{0x...});  // `ip link set DEV vf 1 port_guid ...`
//   uint16_t status = v.handle(smp, node, 1, port_lid, data);  // the SMA's answer
//
// Vport 0 stands for the physical function (the port itself, its GUID and LID); VFs are
// vports 1..N. A VF is Down until the host gives it a GUID (then Init, with
// VPortStateChange raised); an SM moves it Init to Armed to Active with VPortInfo Sets.
// Where the spec headers are silent, the choices are weft's and are said below: the
// VPort* attributes are refused (status 0x1C, invalid) until VirtualizationEnable is
// set; VPortStateChange is cleared by a Set that writes it as 1 (as SwitchInfo's
// PortStateChange is); a VF that needs no LID of its own borrows vport 0's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/mad/vport.hpp"

namespace weft::simulator {

class SimVPorts {
 public:
  struct Config {
    uint16_t vports = 0;        // VFs: vports 1..vports
    uint16_t lid_required = 0;  // the first this many VFs want a LID of their own
    Guid node_guid;             // the CA's: VF i's vnode GUID is derived_vport_guid(it, i)
    uint16_t partition_cap = 32;
  };
  struct VPort {
    uint8_t state = uint8_t(mad::VPortState::kDown);
    bool lid_required = false;
    uint16_t lid = 0;
    Guid guid;                    // 0 until the host writes one
    std::vector<uint16_t> pkeys;  // partition_cap entries
    uint64_t client_reregisters = 0;
    bool refuses_lid = false;  // a faulty VF: answers a LID Set with its old LID
  };
  struct Port {
    uint16_t vport_cap = 0;
    bool enabled = false;
    bool state_change = false;
    uint16_t partition_cap = 32;
    Guid node_guid;
    std::vector<VPort> vports;  // [0] the physical function
  };

  void add(fabric::NodeIndex n, PortNum p, const Config& c);
  bool has(fabric::NodeIndex n, PortNum p) const { return ports_.count({n, p}) > 0; }
  const Port* find(fabric::NodeIndex n, PortNum p) const;
  // The host admin writes a VF's GUID (0 takes it away: the VF goes Down); the state
  // change is raised either way.
  void host_set_guid(fabric::NodeIndex n, PortNum p, uint16_t vport, Guid g);
  // A fault: VF `vport` loses its LID and from now on keeps refusing the one it is given.
  void refuse_lid(fabric::NodeIndex n, PortNum p, uint16_t vport);

  // The SMA of CA port (n, p): status 0 and `data` answered, or an error status. Only
  // the virtualization attributes; `port_lid` is the physical port's LID (vport 0's).
  uint16_t handle(const mad::Smp& s, fabric::NodeIndex n, PortNum p, uint16_t port_lid,
                  mad::SmpData& data);
  // GeneralInfo's capability words for a CA port: IsVirtualizationSupported where it has
  // vports.
  mad::SmpData general_info(fabric::NodeIndex n, PortNum p) const;
  // Whether two vports (node, port, vport) may talk: a P_Key both hold, at least one of
  // them as a full member (IBTA 10.9.3), as their VPortPKeyTables say.
  bool may_talk(fabric::NodeIndex a, PortNum pa, uint16_t va, fabric::NodeIndex b, PortNum pb,
                uint16_t vb) const;

 private:
  std::map<std::pair<fabric::NodeIndex, PortNum>, Port> ports_;
};

// The GUID a host admin of `weft sim --vports` gives VF `vf` (1..127) of the port with
// GUID `port`: the port's GUID with 0x80 | vf in place of its byte 3 (weft's choice:
// the vendor's OUI kept, apart from every GUID a generator makes).
Guid derived_vport_guid(Guid port, uint16_t vf);

// Every linked CA port of `f` gets `vports` VFs (1..127), the first `lid_required` of
// them wanting a LID, each carrying derived_vport_guid(). Fails on a count out of range
// or a derived GUID that another node or port already carries.
Result<void> add_vports_everywhere(SimVPorts& v, const fabric::Fabric& f, uint16_t vports,
                                   uint16_t lid_required);

}  // namespace weft::simulator
