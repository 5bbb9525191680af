#include "weft/sm/path_query.hpp"

#include <cstring>

#include "weft/routing/walk.hpp"

namespace weft::sm {

using fabric::NodeIndex;

TracedRoute trace_route(const SubnetSnapshot& snap, EndPort src, EndPort dst) {
  TracedRoute r;
  const auto& f = snap.fabric;
  const auto& dn = f.node(dst.first);
  const uint16_t dlid = dn.ports[dn.is_switch() ? 0 : dst.second].attrs.lid.value;
  const auto end = routing::walk(
      f, snap.tables.lft, src.first, src.second, dlid,
      [&](NodeIndex n, PortNum in) {
        return n == dst.first && (f.node(n).is_switch() || in == dst.second);
      },
      [&](NodeIndex n, PortNum in, PortNum out) {
        r.hops.push_back({n, in, out});
      },
      f.size());
  switch (end.kind) {
    case routing::WalkEnd::kArrived:
      r.hops.push_back({end.node, end.in, 0});
      r.complete = true;
      break;
    case routing::WalkEnd::kAtEndPort:
      r.hops.push_back({end.node, end.in, 0});
      r.problem = "the route ends at another end port";
      break;
    case routing::WalkEnd::kNoLink:
      r.hops.push_back({end.node, 0, end.out});
      r.problem = "the source port has no link";
      break;
    case routing::WalkEnd::kLoop:
      r.problem = "a loop: the route comes back to " + fabric::port_ref(f, end.node, 0);
      break;
    case routing::WalkEnd::kAtSwitch:
    case routing::WalkEnd::kNoRoute:
      r.hops.push_back({end.node, end.in, 0});
      r.problem = fabric::port_ref(f, end.node, 0) + " has no route to LID " + std::to_string(dlid);
      break;
    case routing::WalkEnd::kDeadEnd:
      r.hops.push_back({end.node, end.in, end.out});
      r.problem = fabric::port_ref(f, end.node, end.out) + " leads nowhere";
      break;
  }
  return r;
}

std::optional<PathInfo> path_record(const SaContext& ctx, EndPort src, EndPort dst) {
  if (!ctx.snap) return std::nullopt;
  const auto& f = ctx.snap->fabric;
  auto lid_of = [&](EndPort e) {
    const auto& nd = f.node(e.first);
    return nd.ports[nd.is_switch() ? 0 : e.second].attrs.lid.value;
  };
  // A SubnAdm Get(PathRecord) by SLID and DLID, as a host would send it.
  std::vector<uint8_t> req(mad::kMadSize, 0);
  req[0] = 1;  // base version
  req[1] = kClassSa;
  req[2] = 2;     // class version
  req[3] = 0x01;  // Get
  req[16] = uint8_t(kSaPathRecord >> 8);
  req[17] = uint8_t(kSaPathRecord & 0xff);
  const uint64_t mask = (1ull << 4) | (1ull << 5);  // DLID, SLID
  for (int i = 0; i < 8; ++i) req[48 + i] = uint8_t(mask >> (56 - 8 * i));
  const uint16_t slid = lid_of(src), dlid = lid_of(dst);
  req[kSaHeader + 40] = uint8_t(dlid >> 8);
  req[kSaHeader + 41] = uint8_t(dlid);
  req[kSaHeader + 42] = uint8_t(slid >> 8);
  req[kSaHeader + 43] = uint8_t(slid);
  SaAgent sa;
  auto ans = sa.answer(req, ctx);
  if (!ans || ans->size() < kSaHeader + 64 || ((*ans)[4] << 8 | (*ans)[5]) != 0)
    return std::nullopt;
  const uint8_t* r = ans->data() + kSaHeader;
  PathInfo p;
  p.dlid = uint16_t(r[40] << 8 | r[41]);
  p.slid = uint16_t(r[42] << 8 | r[43]);
  p.pkey = uint16_t(r[50] << 8 | r[51]);
  p.sl = r[53] & 0x0f;
  p.mtu = r[54] & 0x3f;
  p.rate = r[55] & 0x3f;
  p.packet_life = r[56] & 0x3f;
  return p;
}

}  // namespace weft::sm
