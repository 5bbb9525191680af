#include "weft/sm/snapshot.hpp"

namespace weft::sm {

EndPortIndex EndPortIndex::of(const fabric::Fabric& f) {
  EndPortIndex idx;
  idx.lid_of.resize(f.size());
  for (fabric::NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    idx.lid_of[n].assign(nd.ports.size(), 0);
    for (PortNum p = 0; p < nd.ports.size(); ++p) {
      const bool end = nd.is_switch() ? p == 0 : (p > 0 && nd.ports[p].linked());
      if (!end) continue;
      const auto& a = nd.ports[p].attrs;
      if (!a.lid.is_unicast()) continue;
      idx.lid_of[n][p] = a.lid.value;
      const size_t top = size_t(a.lid.value) + (size_t(1) << a.lmc);
      if (idx.by_lid.size() < top) idx.by_lid.resize(top, {fabric::kNoNode, 0});
      for (size_t l = a.lid.value; l < top; ++l) idx.by_lid[l] = {n, p};
      idx.by_guid[nd.ports[p].guid.value] = {n, p};
    }
  }
  const auto& vps = f.vports();
  for (size_t i = 0; i < vps.size(); ++i) {
    const auto& v = vps[i];
    const EndPortIndex::VPortAt at{i, v.node, v.port};
    if (v.guid.value) idx.vport_by_guid.emplace(v.guid.value, at);
    if (!v.lid.is_unicast()) continue;
    const size_t top =
        size_t(v.lid.value) + (size_t(1) << (f.node(v.node).ports[v.port].attrs.lmc & 7));
    for (size_t l = v.lid.value; l < top && l <= 0xbfff; ++l)
      idx.vport_by_lid.emplace(uint16_t(l), at);
  }
  return idx;
}

PortNum SubnetSnapshot::egress(Guid sw, uint16_t dlid) const {
  const auto n = fabric.find(sw);
  if (!n || *n >= tables.lft.size() || dlid >= tables.lft[*n].size()) return 0;
  const PortNum out = tables.lft[*n][dlid];
  return out == kDropPort ? PortNum(0) : out;
}

}  // namespace weft::sm
