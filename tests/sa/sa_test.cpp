// The SA against a snapshot of a bring-up on the in-process simulator.
#include <gtest/gtest.h>
#include <infiniband/mad.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "../fuzz.hpp"
#include "weft/config/partitions.hpp"
#include "weft/config/qos_policy.hpp"
#include "weft/mad/rmpp.hpp"
#include "weft/routing/torus.hpp"
#include "weft/sa/sa.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/simulator/sim_vports.hpp"
#include "weft/sm/subnet_manager.hpp"
#include "weft/text_file.hpp"

using namespace weft;
using namespace weft::mad;
using namespace weft::sm;
using namespace weft::sa;
using namespace weft::simulator;
using fabric::NodeIndex;

namespace {

struct Fixture {
  std::string dir =
      (std::filesystem::temp_directory_path() / ("weft-sa-" + std::to_string(getpid()) + "-" +
                                                 std::to_string(reinterpret_cast<uintptr_t>(this))))
          .string();
  SimFabric sim;
  SimTransport t;
  SaAgent agent;  // the SM's SA, beside it
  std::unique_ptr<SubnetManager> sm;
  explicit Fixture(const std::string& spec, const std::string& partitions = "",
                   std::string engine = "minhop", uint8_t lmc = 0)
      : sim(*make_fabric(spec)), t(sim, {}) {
    SmOptions o;
    o.state_dir = dir;
    o.lmc = lmc;
    o.routing_engine = std::move(engine);
    if (o.routing_engine == "dor") o.torus = routing::detect_torus(sim.model());
    o.virt_enabled = 2;  // SR-IOV VFs where a test gives the simulator some
    if (!partitions.empty()) o.partitions = *config::parse_partitions(partitions, "p.conf");
    sm = std::make_unique<SubnetManager>(t, o, &agent);
    auto rep = sm->sweep();
    EXPECT_TRUE(rep && rep->subnet_up);
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
  // The SM killed and started again on its state directory (minhop, default options);
  // `fresh_sa`: its SA a new one too (a new process), not the same object.
  Result<SweepReport> restart(bool fresh_sa = false) {
    SmOptions o;
    o.state_dir = dir;
    o.routing_engine = "minhop";
    sm.reset();
    if (fresh_sa) agent = SaAgent();
    sm = std::make_unique<SubnetManager>(t, o, &agent);
    return sm->sweep();
  }
  const SubnetSnapshot& snap() const { return *sm->snapshot(); }
  SaContext ctx() const {
    SaContext c;
    c.snap = sm->snapshot();
    c.sm_guid = snap().fabric.node(0).ports[1].guid;
    return c;
  }
  // CA ports of the discovered model: (node, LID, port GUID).
  struct Ca {
    NodeIndex n;
    uint16_t lid;
    Guid guid;
  };
  std::vector<Ca> cas() const {
    std::vector<Ca> v;
    const auto& f = snap().fabric;
    for (NodeIndex n = 0; n < f.size(); ++n)
      if (!f.node(n).is_switch())
        v.push_back({n, f.node(n).ports[1].attrs.lid.value, f.node(n).ports[1].guid});
    return v;
  }
};

// A partitions file: everyone in Default, and Storage (P_Key 0x8002) with c[1] a full
// member and c[2] a limited one (c[0] is the SM's port).
std::string storage_partition(const std::vector<Fixture::Ca>& c) {
  return "Default=0x7fff : ALL, SELF=full ;\nStorage=0x8002 : " + c[1].guid.str() + "=full, " +
         c[2].guid.str() + " ;\n";
}

void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i) p[i] = uint8_t(v), v >>= 8;
}
uint16_t be16(const uint8_t* p) {
  return uint16_t(p[0] << 8 | p[1]);
}
uint64_t be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}

std::vector<uint8_t> request(uint8_t method, uint16_t attr, uint64_t mask,
                             const std::function<void(uint8_t*)>& fill = {}) {
  std::vector<uint8_t> m(256, 0);
  m[0] = 1;
  m[1] = kClassSa;
  m[2] = 2;
  m[3] = method;
  put64(m.data() + 8, 0x1234);
  put16(m.data() + 16, attr);
  put64(m.data() + 48, mask);
  if (fill) fill(m.data() + kSaHeader);
  return m;
}

// `req` carrying SM_Key `key` in its SA header (the SA_Key makes it trusted).
std::vector<uint8_t> keyed(std::vector<uint8_t> req, uint64_t key = 1) {
  put64(req.data() + 36, key);
  return req;
}

struct Reply {
  uint8_t method = 0;
  uint16_t status = 0;
  size_t rec_size = 0;
  std::vector<std::vector<uint8_t>> records;
};

// Decodes an answer the way a requester sees it: RMPP-active answers are cut into
// segments (as the kernel cuts them) and put back together first.
Reply decode(const std::optional<std::vector<uint8_t>>& ans) {
  EXPECT_TRUE(ans.has_value());
  Reply r;
  if (!ans) return r;
  std::vector<uint8_t> m = *ans;
  if (m[26] & kRmppFlagActive) {
    auto whole = rmpp_reassemble(rmpp_segments(m, kSaHeader), kSaHeader);
    EXPECT_TRUE(whole) << whole.error().message;
    m = *whole;
  }
  r.method = m[3];
  r.status = be16(m.data() + 4);
  r.rec_size = size_t(be16(m.data() + 44)) * 8;
  if (r.rec_size)
    for (size_t off = kSaHeader; off + r.rec_size <= m.size(); off += r.rec_size)
      r.records.emplace_back(m.begin() + off, m.begin() + off + r.rec_size);
  return r;
}

constexpr uint64_t bit(int b) {
  return uint64_t(1) << b;
}

}  // namespace

// The snapshot's end-port index (what the SA and the REST path query look LIDs and GUIDs up
// in): every end port with a LID once, by each LID of its LMC range and by its GUID; nothing
// else.
TEST(SaIndex, SnapshotIndexesEachEndPortByItsLidRangeAndGuid) {
  Fixture fx("ft2:leaves=2,spines=2,hosts=3", "", "minhop", 1);
  const auto& s = fx.snap();
  const auto& f = s.fabric;
  size_t ends = 0;
  for (NodeIndex n = 0; n < f.size(); ++n) {
    const auto& nd = f.node(n);
    for (PortNum p = 0; p < nd.ports.size(); ++p) {
      const bool end = nd.is_switch() ? p == 0 : (p > 0 && nd.ports[p].linked());
      const auto& a = nd.ports[p].attrs;
      if (!end) {
        EXPECT_EQ(s.ends.lid_of[n][p], 0) << n << "/" << int(p);
        continue;
      }
      ++ends;
      ASSERT_TRUE(a.lid.is_unicast());
      EXPECT_EQ(s.ends.lid_of[n][p], a.lid.value);
      EXPECT_EQ(a.lmc, 1);
      for (uint16_t k = 0; k < (1u << a.lmc); ++k)
        EXPECT_EQ(s.ends.at(uint16_t(a.lid.value + k)), std::make_pair(n, p));
      EXPECT_EQ(s.ends.by_guid.at(nd.ports[p].guid.value), std::make_pair(n, p));
    }
  }
  EXPECT_EQ(ends, 4u + 6u);
  EXPECT_EQ(s.ends.by_guid.size(), ends);
  EXPECT_FALSE(s.ends.at(0));
  EXPECT_FALSE(s.ends.at(uint16_t(s.ends.by_lid.size())));
}

TEST(Sa, NodeRecordsByLidAndTheWholeTableOverRmpp) {
  Fixture fx("ft2:leaves=4,spines=2,hosts=6");  // 6 switches, 24 CAs: 30 records
  SaAgent sa;
  const auto cas = fx.cas();
  auto one = decode(sa.answer(
      request(kMethodGet, kSaNodeRecord, bit(0), [&](uint8_t* r) { put16(r, cas[3].lid); }),
      fx.ctx()));
  EXPECT_EQ(one.method, kMethodGetResp);
  ASSERT_EQ(one.status, 0);
  ASSERT_EQ(one.records.size(), 1u);
  EXPECT_EQ(mad_get_field64(one.records[0].data(), 0, IB_SA_NR_PORT_GUID_F), cas[3].guid.value);
  EXPECT_EQ(mad_get_field(one.records[0].data(), 0, IB_SA_NR_TYPE_F), 1u);  // a CA

  auto all = decode(sa.answer(request(kMethodGetTable, kSaNodeRecord, 0), fx.ctx()));
  EXPECT_EQ(all.method, kMethodGetTableResp);
  EXPECT_EQ(all.rec_size, 112u);
  EXPECT_EQ(all.records.size(), 30u);  // 30 x 112 bytes: 17 RMPP segments
  // Component mask: every switch (NodeType 2).
  auto sws = decode(sa.answer(request(kMethodGetTable, kSaNodeRecord, bit(4),
                                      [](uint8_t* r) { mad_set_field(r, 0, IB_SA_NR_TYPE_F, 2); }),
                              fx.ctx()));
  EXPECT_EQ(sws.records.size(), 6u);
  // Get by an unknown LID: no records; Get matching several: too many.
  EXPECT_EQ(decode(sa.answer(request(kMethodGet, kSaNodeRecord, bit(0),
                                     [](uint8_t* r) { put16(r, 999); }),
                             fx.ctx()))
                .status,
            kSaStatusNoRecords);
  EXPECT_EQ(decode(sa.answer(request(kMethodGet, kSaNodeRecord, bit(4),
                                     [](uint8_t* r) { mad_set_field(r, 0, IB_SA_NR_TYPE_F, 2); }),
                             fx.ctx()))
                .status,
            kSaStatusTooManyRecords);
}

TEST(Sa, RmppSegmentsAsTheKernelDoes) {
  std::vector<uint8_t> msg(kSaHeader + 30 * 112, 0);
  for (size_t i = kSaHeader; i < msg.size(); ++i) msg[i] = uint8_t(i * 7);
  msg[26] = kRmppFlagActive;
  auto segs = rmpp_segments(msg, kSaHeader);
  ASSERT_EQ(segs.size(), 17u);  // 3360 bytes of records, 200 per segment
  EXPECT_EQ(mad_get_field(segs[0].data(), 0, IB_SA_RMPP_FLAGS_F), 3u);   // active, first
  EXPECT_EQ(mad_get_field(segs[16].data(), 0, IB_SA_RMPP_FLAGS_F), 5u);  // active, last
  EXPECT_EQ(mad_get_field(segs[0].data(), 0, IB_SA_RMPP_LEN_F), 3360u + 17 * 20);
  EXPECT_EQ(mad_get_field(segs[16].data(), 0, IB_SA_RMPP_LEN_F), 20u + 160);
  EXPECT_EQ(mad_get_field(segs[5].data(), 0, IB_SA_RMPP_SEGNUM_F), 6u);
  auto back = rmpp_reassemble(segs, kSaHeader);
  ASSERT_TRUE(back);
  EXPECT_TRUE(std::equal(msg.begin() + kSaHeader, msg.end(), back->begin() + kSaHeader));
  // A missing segment is an error, not a short answer.
  segs.erase(segs.begin() + 3);
  EXPECT_FALSE(rmpp_reassemble(segs, kSaHeader));
}

TEST(Sa, PathRecordsFollowPartitionsAndTheLinks) {
  Fixture probe("ft2:leaves=2,spines=2,hosts=3");
  const auto c = probe.cas();
  // c[0] is the SM's port (the transport attaches to the first node).
  Fixture fx("ft2:leaves=2,spines=2,hosts=3", storage_partition(c));
  SaAgent sa;
  auto path = [&](uint16_t s, uint16_t d, uint64_t extra = 0,
                  const std::function<void(uint8_t*)>& more = {}) {
    return decode(sa.answer(request(kMethodGetTable, kSaPathRecord, bit(4) | bit(5) | extra,
                                    [&](uint8_t* r) {
                                      put16(r + 40, d);
                                      put16(r + 42, s);
                                      if (more) more(r);
                                    }),
                            fx.ctx()));
  };
  // Full and limited member of Storage: a path, with Storage's or Default's key.
  auto pr = path(c[1].lid, c[2].lid);
  ASSERT_EQ(pr.records.size(), 1u);
  const auto& r = pr.records[0];
  EXPECT_EQ(be16(r.data() + 40), c[2].lid);
  EXPECT_EQ(be16(r.data() + 42), c[1].lid);
  uint64_t dguid = 0;
  for (int i = 16; i < 24; ++i) dguid = dguid << 8 | r[i];
  EXPECT_EQ(dguid, c[2].guid.value);
  EXPECT_EQ(r[54], 0x80 | 4);  // exactly 2048: ibsim's and the simulator's MTU
  EXPECT_EQ(r[55] >> 6, 2);
  EXPECT_EQ(r[49] & 0x80, 0x80);  // reversible
  auto storage = path(c[1].lid, c[2].lid, bit(13), [](uint8_t* r) { put16(r + 50, 0x8002); });
  ASSERT_EQ(storage.records.size(), 1u);
  EXPECT_EQ(be16(storage.records[0].data() + 50), 0x8002);
  // Two limited members of every partition they are in: no path at all.
  EXPECT_EQ(path(c[2].lid, c[3].lid).records.size(), 0u);
  // A P_Key one end lacks: nothing; Get says so with NO_RECORDS.
  EXPECT_EQ(
      path(c[0].lid, c[3].lid, bit(13), [](uint8_t* r) { put16(r + 50, 0x8002); }).records.size(),
      0u);
  EXPECT_EQ(decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(4) | bit(5) | bit(13),
                                     [&](uint8_t* r) {
                                       put16(r + 40, c[3].lid);
                                       put16(r + 42, c[0].lid);
                                       put16(r + 50, 0x8002);
                                     }),
                             fx.ctx()))
                .status,
            kSaStatusNoRecords);
  // The SM's port (full Default member) reaches every CA; by GID too.
  for (size_t i = 1; i < c.size(); ++i) EXPECT_EQ(path(c[0].lid, c[i].lid).records.size(), 1u);
  auto by_gid = decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(2) | bit(3),
                                         [&](uint8_t* r) {
                                           put64(r + 8, kDefaultSubnetPrefix);
                                           put64(r + 16, c[4].guid.value);
                                           put64(r + 24, kDefaultSubnetPrefix);
                                           put64(r + 32, c[0].guid.value);
                                         }),
                                 fx.ctx()));
  ASSERT_EQ(by_gid.status, 0);
  EXPECT_EQ(be16(by_gid.records[0].data() + 40), c[4].lid);
  // MTU selectors: "greater than 2048" cannot be met; "less than 4096" answers 2048;
  // "exactly 1024" answers 1024.
  auto mtu = [&](uint8_t sel, uint8_t val) {
    return path(c[0].lid, c[4].lid, bit(16) | bit(17),
                [&](uint8_t* r) { r[54] = uint8_t(sel << 6 | val); });
  };
  EXPECT_EQ(mtu(0, 4).records.size(), 0u);
  ASSERT_EQ(mtu(1, 5).records.size(), 1u);
  EXPECT_EQ(mtu(1, 5).records[0][54] & 0x3f, 4);
  ASSERT_EQ(mtu(2, 3).records.size(), 1u);
  EXPECT_EQ(mtu(2, 3).records[0][54] & 0x3f, 3);
  // Unknown GID: INVALID_GID; one end missing in a Get: INSUFFICIENT_COMPONENTS.
  EXPECT_EQ(decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(2) | bit(3),
                                     [&](uint8_t* r) {
                                       put64(r + 8, kDefaultSubnetPrefix);
                                       put64(r + 16, 0xdead);
                                       put64(r + 24, kDefaultSubnetPrefix);
                                       put64(r + 32, c[0].guid.value);
                                     }),
                             fx.ctx()))
                .status,
            kSaStatusInvalidGid);
  EXPECT_EQ(decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(5),
                                     [&](uint8_t* r) { put16(r + 42, c[0].lid); }),
                             fx.ctx()))
                .status,
            kSaStatusInsufficientComponents);
  // GetTable from one source: one record per destination that shares a partition.
  auto from_sm = decode(sa.answer(
      request(kMethodGetTable, kSaPathRecord, bit(5), [&](uint8_t* r) { put16(r + 42, c[0].lid); }),
      fx.ctx()));
  EXPECT_EQ(from_sm.records.size(), fx.snap().fabric.num_switches() + c.size());
}

// SR-IOV: a VF answers PathRecords for its own GID, with its own LID where it requires one
// (its port's otherwise), and with the P_Keys its GUID was given, not its port's.
TEST(Sa, PathRecordsReachVirtualPortsByTheirGidAndLid) {
  Fixture probe("ft2:leaves=2,spines=2,hosts=3");
  const auto c = probe.cas();
  const Guid a = derived_vport_guid(c[1].guid, 1), b = derived_vport_guid(c[2].guid, 1),
             cv = derived_vport_guid(c[3].guid, 2);
  Fixture fx("ft2:leaves=2,spines=2,hosts=3",
             "Default=0x7fff : ALL, SELF=full ;\npa=0x0a12 : " + a.str() + "=full, " + b.str() +
                 "=full ;\npb=0x0b34 : " + cv.str() + "=full ;\n");
  // VF 1 of every CA port requires a LID, VF 2 shares its port's.
  ASSERT_TRUE(add_vports_everywhere(fx.sim.vports(), fx.sim.model(), 2, 1));
  auto rep = fx.sm->sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  ASSERT_EQ(rep->vports_with_lid, c.size());
  const auto& f = fx.snap().fabric;
  const auto* vb = f.find_vport(b);
  ASSERT_NE(vb, nullptr);
  ASSERT_NE(vb->lid.value, 0u);
  SaAgent sa;
  auto by_gid = [&](Guid s, Guid d) {
    return decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(2) | bit(3),
                                    [&](uint8_t* r) {
                                      put64(r + 8, kDefaultSubnetPrefix);
                                      put64(r + 16, d.value);
                                      put64(r + 24, kDefaultSubnetPrefix);
                                      put64(r + 32, s.value);
                                    }),
                            fx.ctx()));
  };
  // Two pods of one partition: a path, to the VF's own LID, with their P_Key.
  auto ab = by_gid(a, b);
  ASSERT_EQ(ab.records.size(), 1u) << ab.status;
  EXPECT_EQ(be16(ab.records[0].data() + 40), vb->lid.value);
  EXPECT_EQ(be64(ab.records[0].data() + 16), b.value);
  EXPECT_EQ(be64(ab.records[0].data() + 32), a.value);
  EXPECT_EQ(be16(ab.records[0].data() + 50), 0x8a12);
  // HopLimit virt_default_hop_limit (2): above 1 the requester sends a GRH.
  EXPECT_EQ(ab.records[0][47], 2);
  // Pods of two partitions (limited members of the Default one): none.
  EXPECT_EQ(by_gid(a, cv).status, kSaStatusNoRecords);
  // A VF with no LID of its own answers on its port's; the SM's port reaches it.
  auto to_cv = by_gid(c[0].guid, cv);
  ASSERT_EQ(to_cv.records.size(), 1u) << to_cv.status;
  EXPECT_EQ(be16(to_cv.records[0].data() + 40), c[3].lid);
  EXPECT_EQ(be64(to_cv.records[0].data() + 16), cv.value);
  EXPECT_EQ(to_cv.records[0][47], 2) << "a VF sharing its port's LID is found by its GID";
  // Between two physical ports: no GRH asked for.
  auto ports = by_gid(c[0].guid, c[3].guid);
  ASSERT_EQ(ports.records.size(), 1u) << ports.status;
  EXPECT_EQ(ports.records[0][47], 0);
  // The option sets it; a HopLimit the requester gives is its own.
  auto ctx64 = fx.ctx();
  ctx64.vport_hop_limit = 64;
  auto hop_of = [&](uint64_t extra, uint8_t hop) {
    auto got = decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(2) | bit(3) | extra,
                                        [&](uint8_t* r) {
                                          put64(r + 8, kDefaultSubnetPrefix);
                                          put64(r + 16, cv.value);
                                          put64(r + 24, kDefaultSubnetPrefix);
                                          put64(r + 32, c[0].guid.value);
                                          r[47] = hop;
                                        }),
                                ctx64));
    return got.records.size() == 1 ? int(got.records[0][47]) : -1;
  };
  EXPECT_EQ(hop_of(0, 0), 64);
  EXPECT_EQ(hop_of(bit(9), 3), 3);
  // By LIDs: the VF's own LID names it.
  auto by_lid = decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(4) | bit(5),
                                         [&](uint8_t* r) {
                                           put16(r + 40, vb->lid.value);
                                           put16(r + 42, f.find_vport(a)->lid.value);
                                         }),
                                 fx.ctx()));
  ASSERT_EQ(by_lid.records.size(), 1u) << by_lid.status;
  EXPECT_EQ(be64(by_lid.records[0].data() + 16), b.value);
  EXPECT_EQ(be16(by_lid.records[0].data() + 50), 0x8a12);
  // NodeRecords: a VF with a LID of its own is a virtual node of one port.
  auto nodes = decode(sa.answer(request(kMethodGetTable, kSaNodeRecord, 0), fx.ctx()));
  size_t vnodes = 0;
  for (const auto& r : nodes.records) {
    const Guid port{mad_get_field64(const_cast<uint8_t*>(r.data()), 0, IB_SA_NR_PORT_GUID_F)};
    if (!f.find_vport(port)) continue;
    ++vnodes;
    if (port == b) {
      EXPECT_EQ(be16(r.data()), vb->lid.value);
      EXPECT_EQ(mad_get_field64(const_cast<uint8_t*>(r.data()), 0, IB_SA_NR_GUID_F),
                vb->node_guid.value);
    }
  }
  EXPECT_EQ(vnodes, c.size()) << "VF 1 of each CA port; VF 2 shares its port's LID";
  auto one = decode(sa.answer(
      request(kMethodGet, kSaNodeRecord, bit(0), [&](uint8_t* r) { put16(r, vb->lid.value); }),
      fx.ctx()));
  ASSERT_EQ(one.records.size(), 1u);
  EXPECT_EQ(mad_get_field64(one.records[0].data(), 0, IB_SA_NR_PORT_GUID_F), b.value);
  // PortInfoRecords: a VF with a LID of its own is port 1 of its virtual node, with its
  // own LID and state; the table has one such record per VF 1.
  auto pir = decode(sa.answer(
      request(kMethodGet, kSaPortInfoRecord, bit(0), [&](uint8_t* r) { put16(r, vb->lid.value); }),
      fx.ctx()));
  ASSERT_EQ(pir.records.size(), 1u) << pir.status;
  EXPECT_EQ(be16(pir.records[0].data()), vb->lid.value);
  EXPECT_EQ(pir.records[0][2], 1);
  EXPECT_EQ(mad_get_field(pir.records[0].data(), 4, IB_PORT_LID_F), vb->lid.value);
  EXPECT_EQ(mad_get_field(pir.records[0].data(), 4, IB_PORT_STATE_F), 4u);  // ACTIVE
  auto all_pi = decode(sa.answer(request(kMethodGetTable, kSaPortInfoRecord, 0), fx.ctx()));
  size_t vf_records = 0;
  for (const auto& r : all_pi.records)
    for (const auto& v : f.vports())
      if (v.lid.value && be16(r.data()) == v.lid.value) ++vf_records;
  EXPECT_EQ(vf_records, c.size());
}

TEST(Sa, LayeredRoutesAnswerWithTheirSl) {
  Fixture fx("torus:dims=4x4x4,hosts=1", "", "dfsssp");
  ASSERT_GT(fx.snap().tables.vls, 1);
  SaAgent sa;
  const auto c = fx.cas();
  std::vector<int> seen(16, 0);
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = 0; j < c.size(); j += 7) {
      if (i == j) continue;
      auto pr = decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(4) | bit(5),
                                         [&](uint8_t* r) {
                                           put16(r + 40, c[j].lid);
                                           put16(r + 42, c[i].lid);
                                         }),
                                 fx.ctx()));
      ASSERT_EQ(pr.status, 0);
      const uint8_t sl = pr.records[0][53] & 0x0f;
      // The SL the routing engine chose for this path at the source's switch.
      const auto& port = fx.snap().fabric.node(c[i].n).ports[1];
      EXPECT_EQ(sl, fx.snap().tables.path_sl[port.peer][c[j].lid]);
      EXPECT_LT(sl, fx.snap().tables.vls);
      ++seen[sl];
    }
  EXPECT_GT(std::count_if(seen.begin(), seen.end(), [](int x) { return x > 0; }), 1);
}

// The typed path query (what REST asks) and a host's Get(PathRecord) are one answer:
// every pair, with and without an SL or a P_Key selected, on a partitioned tree and on a
// layered torus.
TEST(Sa, TheTypedPathQueryAnswersWhatAGetAnswers) {
  Fixture probe("ft2:leaves=2,spines=2,hosts=3");
  Fixture tree("ft2:leaves=2,spines=2,hosts=3", storage_partition(probe.cas()));
  Fixture torus("torus:dims=3x3x3,hosts=1", "", "dfsssp");
  size_t some = 0, none = 0;
  for (Fixture* fx : {&tree, &torus}) {
    SaAgent sa, typed;
    const auto c = fx->cas();
    for (size_t i = 0; i < c.size(); ++i)
      for (size_t j = 0; j < c.size(); ++j)
        for (int sel = 0; sel < 3; ++sel) {
          PathQuery q;
          q.slid = c[i].lid;
          q.dlid = c[j].lid;
          uint64_t mask = bit(4) | bit(5);
          if (sel == 1) q.pkey = 0x8002, mask |= bit(13);
          if (sel == 2) q.sl = uint8_t((i + j) % 2), mask |= bit(15);
          auto got = decode(sa.answer(request(kMethodGet, kSaPathRecord, mask,
                                              [&](uint8_t* r) {
                                                put16(r + 40, q.dlid);
                                                put16(r + 42, q.slid);
                                                if (q.pkey) put16(r + 50, *q.pkey);
                                                if (q.sl) r[53] = *q.sl;
                                              }),
                                      fx->ctx()));
          auto info = typed.path(fx->ctx(), q);
          ASSERT_EQ(info.has_value(), got.status == 0) << i << "->" << j << " sel " << sel;
          if (!info) {
            ++none;
            continue;
          }
          ++some;
          const auto& r = got.records.at(0);
          EXPECT_EQ(info->slid, be16(r.data() + 42));
          EXPECT_EQ(info->dlid, be16(r.data() + 40));
          EXPECT_EQ(info->pkey, be16(r.data() + 50));
          EXPECT_EQ(info->sl, r[53] & 0x0f);
          EXPECT_EQ(info->mtu, r[54] & 0x3f);
          EXPECT_EQ(info->rate, r[55] & 0x3f);
          EXPECT_EQ(info->packet_life, r[56] & 0x3f);
        }
  }
  EXPECT_GT(some, 100u);
  EXPECT_GT(none, 10u);  // limited members, keys one end lacks, SLs off the layer
}

TEST(Sa, OtherRecordsAndTheSmItself) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  SaAgent sa;
  const auto c = fx.cas();
  auto pir = decode(sa.answer(
      request(kMethodGetTable, kSaPortInfoRecord, bit(0), [&](uint8_t* r) { put16(r, c[1].lid); }),
      fx.ctx()));
  ASSERT_EQ(pir.records.size(), 1u);
  EXPECT_EQ(mad_get_field(pir.records[0].data(), 4, IB_PORT_LID_F), c[1].lid);
  EXPECT_EQ(mad_get_field(pir.records[0].data(), 4, IB_PORT_STATE_F), 4u);  // ACTIVE
  // CapabilityMask IsSM: only the SM's port.
  auto sms = decode(
      sa.answer(request(kMethodGetTable, kSaPortInfoRecord, bit(7),
                        [](uint8_t* r) { mad_set_field(r, 4, IB_PORT_CAPMASK_F, kCapIsSm); }),
                fx.ctx()));
  ASSERT_EQ(sms.records.size(), 1u);
  EXPECT_EQ(be16(sms.records[0].data()), c[0].lid);
  auto smi = decode(sa.answer(request(kMethodGetTable, kSaSmInfoRecord, 0), fx.ctx()));
  ASSERT_EQ(smi.records.size(), 1u);
  EXPECT_EQ(mad_get_field(smi.records[0].data(), 4, IB_SMINFO_STATE_F), 3u);  // master
  auto links = decode(sa.answer(request(kMethodGetTable, kSaLinkRecord, 0), fx.ctx()));
  EXPECT_EQ(links.records.size(), 2 * fx.snap().fabric.links().size());  // each direction
  const auto pkr =
      request(kMethodGetTable, kSaPkeyTableRecord, bit(0), [&](uint8_t* r) { put16(r, c[2].lid); });
  auto pk = decode(sa.answer(keyed(pkr), fx.ctx()));
  ASSERT_EQ(pk.records.size(), 2u);  // PartitionCap 64: two blocks
  EXPECT_EQ(be16(pk.records[0].data() + 8), 0xffff);
  // Only for trusted requests (IBTA 15.2.5.11): without the SA_Key, ERR_REQ_INVALID.
  EXPECT_EQ(decode(sa.answer(pkr, fx.ctx())).status, kSaStatusReqInvalid);
  // Another non-zero key: dropped, unanswered, counted.
  const uint64_t wrong_before = sa.stats().wrong_key;
  EXPECT_FALSE(sa.answer(keyed(pkr, 0x1234), fx.ctx()));
  EXPECT_FALSE(sa.answer(keyed(request(kMethodGet, kSaClassPortInfo, 0), 7), fx.ctx()));
  EXPECT_EQ(sa.stats().wrong_key, wrong_before + 2);
  // A configured sa_key: that one is trusted, the default 1 is now a wrong key.
  SaContext other = fx.ctx();
  other.sa_key = 0x0102030405060708ull;
  EXPECT_EQ(decode(sa.answer(keyed(pkr, 0x0102030405060708ull), other)).records.size(), 2u);
  EXPECT_FALSE(sa.answer(keyed(pkr, 1), other));
  auto cpi = decode(sa.answer(request(kMethodGet, kSaClassPortInfo, 0), fx.ctx()));
  EXPECT_EQ(cpi.status, 0);
}

TEST(Sa, BadRequestsGetAnErrorStatusNeverACrash) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  SaAgent sa;
  auto status = [&](std::vector<uint8_t> m) { return decode(sa.answer(m, fx.ctx())).status; };
  auto bad_version = request(kMethodGet, kSaNodeRecord, 0);
  bad_version[2] = 1;
  EXPECT_EQ(status(bad_version), kStatusBadVersion);
  EXPECT_EQ(status(request(0x20, kSaNodeRecord, 0)), kStatusBadMethod);
  EXPECT_EQ(status(request(kMethodGet, 0x0099, 0)), kStatusBadMethodAttr);
  EXPECT_EQ(status(request(kMethodGetTable, kSaNodeRecord, bit(40))), kSaStatusReqInvalid);
  auto truncated = request(kMethodGet, kSaNodeRecord, 0);
  truncated.resize(40);
  EXPECT_EQ(status(truncated), kSaStatusReqInvalid);
  // Not a request, or not SA: dropped.
  auto resp = request(kMethodGetResp, kSaNodeRecord, 0);
  EXPECT_FALSE(sa.answer(resp, fx.ctx()));
  EXPECT_FALSE(sa.answer(std::vector<uint8_t>(10, 3), fx.ctx()));
  EXPECT_FALSE(sa.answer(request(0x07, kSaNodeRecord, 0), fx.ctx()));  // TrapRepress
  // Before any sweep: nothing to answer from.
  SaContext empty;
  EXPECT_EQ(decode(sa.answer(request(kMethodGet, kSaNodeRecord, 0), empty)).status,
            kSaStatusNoResources);
}

TEST(Sa, FuzzedRequestsAlwaysGetAWellFormedAnswerOrAreDropped) {
  Fixture fx("ft2:leaves=2,spines=2,hosts=3");
  SaAgent sa;
  const auto c = fx.cas();
  std::vector<std::vector<uint8_t>> seeds = {
      request(kMethodGetTable, kSaPathRecord, bit(4) | bit(5) | bit(13) | bit(16) | bit(17),
              [&](uint8_t* r) {
                put16(r + 40, c[1].lid);
                put16(r + 42, c[0].lid);
                put16(r + 50, 0xffff);
                r[54] = 0x84;
              }),
      request(kMethodGet, kSaNodeRecord, bit(0), [&](uint8_t* r) { put16(r, c[2].lid); }),
      request(kMethodGetTable, kSaPortInfoRecord, bit(7) | bit(0), {}),
      request(kMethodGetTable, kSaPkeyTableRecord, bit(1) | bit(2), {})};
  std::mt19937 rng(5);
  size_t answered = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto& seed = seeds[i % seeds.size()];
    std::string s(seed.begin(), seed.end());
    s = weft::testing::mutate(s, std::string("\x00\x01\x02\x03\x12\x35\x80\xff", 8), rng);
    auto ans = sa.answer(std::vector<uint8_t>(s.begin(), s.end()), fx.ctx());
    if (!ans) continue;
    ++answered;
    ASSERT_GE(ans->size(), kSaHeader);
    EXPECT_EQ((*ans)[1], kClassSa);
    EXPECT_TRUE((*ans)[3] & 0x80);
    const size_t off = size_t(be16(ans->data() + 44)) * 8;
    if (off) {
      EXPECT_EQ((ans->size() - kSaHeader) % off, 0u);
    }
  }
  EXPECT_GT(answered, 10000u);
}

// The SM serves SA requests that arrive on its transport, and answers to the sender.
TEST(Sa, TheSmAnswersOverItsTransport) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  InMad in;
  auto req = request(kMethodGetTable, kSaPathRecord, bit(4) | bit(5), [&](uint8_t* r) {
    put16(r + 40, c[3].lid);
    put16(r + 42, c[1].lid);
  });
  std::copy(req.begin(), req.end(), in.mad.begin());
  in.len = kMadSize;
  in.slid = Lid{c[1].lid};
  in.sqpn = 1;
  fx.t.inject(in);
  ASSERT_TRUE(fx.sm->serve_for(std::chrono::milliseconds(10)));
  ASSERT_EQ(fx.t.gsi_answers().size(), 1u);
  const auto& a = fx.t.gsi_answers()[0];
  EXPECT_EQ(a.to.dlid.value, c[1].lid);
  EXPECT_EQ(a.to.qpn, 1u);
  EXPECT_EQ(a.to.qkey, 0x80010000u);
  auto whole = rmpp_reassemble(a.segments, kSaHeader);
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->size(), kSaHeader + 64);
  EXPECT_EQ(fx.sm->sa_stats().path_records, 1u);
}

namespace {

// An MCMemberRecord request: join (Set) or leave (Delete) `port` to `mgid`.
// InformInfo Set as hosts send it: every issuer (GID 0, LIDRangeBegin 0xFFFF), generic,
// any Type and ProducerType, `trap` (0xFFFF: any), Reports to QP `qpn`; `more` changes it.
std::vector<uint8_t> inform(uint16_t trap, bool subscribe = true, uint8_t qpn = 9,
                            const std::function<void(uint8_t*)>& more = {}) {
  return request(kMethodSet, kSaInformInfo, 0, [&](uint8_t* r) {
    put16(r + 16, 0xffff);
    r[22] = 1;
    r[23] = subscribe;
    put16(r + 24, 0xffff);
    put16(r + 26, trap);
    r[30] = qpn;
    r[33] = r[34] = r[35] = 0xff;
    if (more) more(r);
  });
}

std::vector<uint8_t> mc_request(uint8_t method, const Gid& mgid, Guid port, uint8_t state,
                                uint64_t extra_mask = 0,
                                const std::function<void(uint8_t*)>& more = {}) {
  return request(method, kSaMcMemberRecord, bit(0) | bit(1) | bit(16) | extra_mask,
                 [&](uint8_t* r) {
                   std::copy(mgid.begin(), mgid.end(), r);
                   put64(r + 16, kDefaultSubnetPrefix);
                   put64(r + 24, port.value);
                   r[48] = uint8_t(2 << 4 | state);
                   if (more) more(r);
                 });
}

// Sends one SA request through the SM's transport and returns its answer.
Reply ask(Fixture& fx, const std::vector<uint8_t>& req, uint16_t from = 1) {
  fx.t.clear_gsi_answers();
  InMad in;
  std::copy(req.begin(), req.end(), in.mad.begin());
  in.len = kMadSize;
  in.slid = Lid{from};
  in.sqpn = 1;
  fx.t.inject(in);
  EXPECT_TRUE(fx.sm->serve_for(std::chrono::milliseconds(50)));
  EXPECT_EQ(fx.t.gsi_answers().size(), 1u);
  if (fx.t.gsi_answers().empty()) return {};
  auto whole = rmpp_reassemble(fx.t.gsi_answers()[0].segments, kSaHeader);
  if (!whole) {  // not RMPP: a single MAD
    const auto& m = fx.t.gsi_answers()[0].segments[0];
    return decode(std::vector<uint8_t>(m.begin(), m.end()));
  }
  return decode(*whole);
}

// The simulator's node of a discovered CA (the snapshot numbers nodes its own way).
NodeIndex sim_node(const Fixture& fx, const Fixture::Ca& c) {
  return *fx.sim.model().find(fx.snap().fabric.node(c.n).guid);
}

// The MLID of the group with `mgid` (0 when there is none).
uint16_t mlid_of(const Fixture& fx, const Gid& mgid) {
  for (const auto& [mlid, g] : fx.sm->multicast().groups())
    if (g.mgid == mgid) return mlid;
  return 0;
}

// The CAs (indices into `c`) the broadcast group 0xC000 reaches from c[from], sorted.
std::vector<size_t> bcast_reach(const Fixture& fx, const std::vector<Fixture::Ca>& c, size_t from) {
  std::vector<size_t> got;
  for (auto [n, p] : fx.sim.mcast_reach(0xC000, sim_node(fx, c[from]), 1))
    for (size_t i = 0; i < c.size(); ++i)
      if (sim_node(fx, c[i]) == n) got.push_back(i);
  std::sort(got.begin(), got.end());
  return got;
}

}  // namespace

TEST(Multicast, JoinsBuildATreeThatReachesReceiversOnlyAndLeavesPruneIt) {
  Fixture fx("ft2:leaves=4,spines=2,hosts=3");
  const auto c = fx.cas();
  ASSERT_EQ(c.size(), 12u);
  // The Default partition's IPoIB broadcast group exists from the start, at 0xC000.
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  ASSERT_TRUE(fx.sm->multicast().groups().count(0xC000));
  EXPECT_EQ(fx.sm->multicast().groups().at(0xC000).mgid, bcast);
  // c[1], c[5], c[9] join as full members (three leaves); c[4] as a send-only member.
  for (size_t i : {1, 5, 9}) {
    auto r = ask(fx, mc_request(kMethodSet, bcast, c[i].guid, kJoinFull));
    ASSERT_EQ(r.status, 0) << i;
    EXPECT_EQ(be16(r.records.at(0).data() + 36), 0xC000);
    EXPECT_EQ(be16(r.records[0].data() + 40), 0xffff);
  }
  ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[4].guid, kJoinSendOnlyNon)).status, 0);
  auto reach = [&](size_t from) { return bcast_reach(fx, c, from); };
  EXPECT_EQ(reach(1), (std::vector<size_t>{5, 9}));
  EXPECT_EQ(reach(4), (std::vector<size_t>{1, 5, 9}));  // the send-only member sends to all
  EXPECT_EQ(reach(6), (std::vector<size_t>{}));  // c[6]'s leaf (the third) is not on the tree
  // Leaving prunes: c[9]'s leaf drops out of the tree.
  ASSERT_EQ(ask(fx, mc_request(kMethodDelete, bcast, c[9].guid, kJoinFull)).method,
            kMethodDeleteResp);
  EXPECT_EQ(reach(1), (std::vector<size_t>{5}));
  // Listing: one MCMemberRecord per member.
  auto list = ask(fx, request(kMethodGetTable, kSaMcMemberRecord, 0));
  EXPECT_EQ(list.records.size(), 3u);
  // A second sweep writes no MFT block and keeps the members.
  auto again = fx.sm->sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(again->mft_blocks_written, 0u);
  EXPECT_EQ(reach(1), (std::vector<size_t>{5}));
}

TEST(Multicast, CreateRulesAndRefusals) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  const Gid none{};
  // Creating needs Q_Key, P_Key, SL, FlowLabel and TClass.
  EXPECT_EQ(ask(fx, mc_request(kMethodSet, none, c[1].guid, kJoinFull)).status,
            kSaStatusInsufficientComponents);
  const uint64_t create = bit(2) | bit(6) | bit(7) | bit(12) | bit(13);
  auto fill = [](uint8_t* r) {
    r[35] = 0x42;           // Q_Key
    put16(r + 40, 0xffff);  // P_Key
  };
  auto made = ask(fx, mc_request(kMethodSet, none, c[1].guid, kJoinFull, create, fill));
  ASSERT_EQ(made.status, 0);
  const auto& r = made.records.at(0);
  EXPECT_EQ(r[0], 0xff);  // an MGID the SA made
  EXPECT_EQ(r[2], 0xa0);
  const uint16_t mlid = be16(r.data() + 36);
  EXPECT_GT(mlid, 0xC000);     // 0xC000 is the broadcast group's
  EXPECT_EQ(r[38] & 0x3f, 4);  // the port's MTU: 2048
  Gid mgid;
  std::copy(r.begin(), r.begin() + 16, mgid.begin());
  // Joining asking for 4096 exactly: the group is 2048, refused.
  EXPECT_EQ(ask(fx, mc_request(kMethodSet, mgid, c[2].guid, kJoinFull, bit(4) | bit(5),
                               [](uint8_t* r) { r[38] = uint8_t(2 << 6 | 5); }))
                .status,
            kSaStatusReqInvalid);
  // Creating with a P_Key the port lacks, or joining with a JoinState of 0: refused.
  EXPECT_EQ(ask(fx, mc_request(kMethodSet, none, c[1].guid, kJoinFull, create,
                               [](uint8_t* r) { put16(r + 40, 0x8005); }))
                .status,
            kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, mc_request(kMethodSet, mgid, c[2].guid, 0)).status, kSaStatusReqInvalid);
  // Leaving a group one is not in: refused; the last member leaving removes the group.
  EXPECT_EQ(ask(fx, mc_request(kMethodDelete, mgid, c[3].guid, kJoinFull)).status,
            kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, mc_request(kMethodDelete, mgid, c[1].guid, kJoinFull)).status, 0);
  EXPECT_FALSE(fx.sm->multicast().groups().count(mlid));
}

TEST(Multicast, MembersWhosePortsLeaveArePrunedAtTheNextSweep) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  for (size_t i : {1, 2, 3})
    ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[i].guid, kJoinFull)).status, 0);
  EXPECT_EQ(fx.sm->multicast().groups().at(0xC000).members.size(), 3u);
  fx.sim.unlink(sim_node(fx, c[3]), 1);
  auto rep = fx.sm->sweep();
  ASSERT_TRUE(rep);
  EXPECT_EQ(fx.sm->multicast().groups().at(0xC000).members.size(), 2u);
}

// An SR-IOV VF joins by its own GID (IPoIB on a pod): the SA takes it in by its own
// P_Keys and the MFTs forward the group to its CA port; it leaves the group when the
// host takes its GUID away.
TEST(Multicast, VirtualFunctionsJoinByTheirGidAndTheTreeReachesTheirPort) {
  Fixture probe("ft2:leaves=4,spines=2,hosts=3");
  const auto pc = probe.cas();
  const Guid a = derived_vport_guid(pc[1].guid, 1), b = derived_vport_guid(pc[5].guid, 2),
             other = derived_vport_guid(pc[2].guid, 1);
  Fixture fx("ft2:leaves=4,spines=2,hosts=3",
             "Default=0x7fff, ipoib : ALL, SELF=full ;\npa=0x0a12 : " + a.str() + "=full, " +
                 b.str() + "=full ;\n");
  const auto c = fx.cas();
  // VF 1 of every CA port requires a LID, VF 2 shares its port's.
  ASSERT_TRUE(add_vports_everywhere(fx.sim.vports(), fx.sim.model(), 2, 1));
  auto rep = fx.sm->sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  ASSERT_EQ(rep->vports_found, 2 * c.size());
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  // Two VFs (one with a LID of its own, one without) and c[9]'s port join the Default
  // partition's broadcast group.
  for (Guid g : {a, b, c[9].guid})
    ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, g, kJoinFull)).status, 0) << g.str();
  auto reach = [&](size_t from) { return bcast_reach(fx, c, from); };
  EXPECT_EQ(reach(9), (std::vector<size_t>{1, 5}));
  // The listing names the VFs by their own GIDs.
  auto list = ask(fx, request(kMethodGetTable, kSaMcMemberRecord, 0));
  std::set<uint64_t> members;
  for (const auto& r : list.records) members.insert(be64(r.data() + 24));
  EXPECT_EQ(members, (std::set<uint64_t>{a.value, b.value, c[9].guid.value}));
  // A group of partition pa: a VF in it creates it; a VF outside it may not join, its
  // port's P_Keys notwithstanding.
  const uint64_t create = bit(2) | bit(6) | bit(7) | bit(12) | bit(13);
  auto made = ask(fx, mc_request(kMethodSet, Gid{}, a, kJoinFull, create, [](uint8_t* r) {
                    r[35] = 0x42;
                    put16(r + 40, 0x8a12);
                  }));
  ASSERT_EQ(made.status, 0);
  Gid pa_group;
  std::copy(made.records.at(0).begin(), made.records.at(0).begin() + 16, pa_group.begin());
  EXPECT_EQ(ask(fx, mc_request(kMethodSet, pa_group, b, kJoinFull)).status, 0);
  EXPECT_EQ(ask(fx, mc_request(kMethodSet, pa_group, other, kJoinFull)).status,
            kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, mc_request(kMethodSet, pa_group, c[2].guid, kJoinFull)).status,
            kSaStatusReqInvalid);
  // The host takes VF b's GUID away: the next sweep drops it from both groups and
  // prunes c[5]'s branch.
  fx.sim.vports().host_set_guid(sim_node(fx, c[5]), 1, 2, Guid{});
  auto again = fx.sm->sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(reach(9), (std::vector<size_t>{1}));
  const auto& groups = fx.sm->multicast().groups();
  EXPECT_EQ(groups.at(0xC000).members.count(b.value), 0u);
  EXPECT_EQ(groups.at(0xC000).members.count(a.value), 1u);
  // A sweep after that writes no MFT block.
  auto third = fx.sm->sweep();
  ASSERT_TRUE(third && third->subnet_up);
  EXPECT_EQ(third->mft_blocks_written, 0u);
}

TEST(Sa, TableRecordsShowWhatWeftProgrammed) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  SaAgent sa;
  const auto& snap = fx.snap();
  NodeIndex sw = 0;
  while (!snap.fabric.node(sw).is_switch()) ++sw;
  const uint16_t sw_lid = snap.fabric.node(sw).ports[0].attrs.lid.value;
  auto lft = decode(sa.answer(
      request(kMethodGetTable, kSaLftRecord, bit(0), [&](uint8_t* r) { put16(r, sw_lid); }),
      fx.ctx()));
  ASSERT_EQ(lft.records.size(), 1u);  // top LID 7: one block
  for (uint16_t lid = 1; lid <= snap.tables.top_lid; ++lid)
    EXPECT_EQ(lft.records[0][8 + lid], snap.tables.lft[sw][lid]);
  auto swi = decode(sa.answer(request(kMethodGetTable, kSaSwitchInfoRecord, 0), fx.ctx()));
  EXPECT_EQ(swi.records.size(), snap.fabric.num_switches());
  // No QoS and one VL: weft wrote no SL2VL or VLArb table, so it claims none.
  auto ctx = fx.ctx();
  qos::QosConfig off;
  ctx.qos_cfg = &off;
  EXPECT_EQ(decode(sa.answer(request(kMethodGetTable, kSaSl2VlRecord, 0), ctx)).records.size(), 0u);
  qos::QosConfig on = off;
  on.enabled = true;
  on.ca.sl2vl = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
  on.ca.low = {{0, 32}, {1, 16}};
  ctx.qos_cfg = &on;
  const auto c = fx.cas();
  auto sl2vl = decode(sa.answer(
      request(kMethodGetTable, kSaSl2VlRecord, bit(0), [&](uint8_t* r) { put16(r, c[1].lid); }),
      ctx));
  ASSERT_EQ(sl2vl.records.size(), 1u);
  EXPECT_EQ(decode_sl2vl([&] {
              SmpData d{};
              std::copy(sl2vl.records[0].begin() + 8, sl2vl.records[0].begin() + 16, d.begin());
              return d;
            }()),
            on.ca.sl2vl);
  auto arb = decode(sa.answer(
      request(kMethodGetTable, kSaVlArbRecord, bit(0), [&](uint8_t* r) { put16(r, c[1].lid); }),
      ctx));
  ASSERT_EQ(arb.records.size(), 2u);  // low and high, 8 entries each
  EXPECT_EQ(arb.records[0][3], 1);
  EXPECT_EQ(arb.records[0][8 + 2], 1);   // entry 1: VL 1
  EXPECT_EQ(arb.records[0][8 + 3], 16);  // weight 16
}

// dor picks a VL per hop: a switch's SL2VL records are one per input and output port,
// each what the switch holds, and without QoS too (the routes need them).
TEST(Sa, PerHopSl2VlRecordsAreWhatTheSwitchesHold) {
  Fixture fx("torus:dims=5x5,hosts=1", "", "dor");
  const auto& snap = fx.snap();
  ASSERT_FALSE(snap.tables.hop_vl.empty());
  SaAgent sa;
  auto ctx = fx.ctx();
  qos::QosConfig off;
  ctx.qos_cfg = &off;
  NodeIndex sw = 0;
  while (!snap.fabric.node(sw).is_switch()) ++sw;
  const auto& nd = snap.fabric.node(sw);
  const NodeIndex at = *fx.sim.model().find(nd.guid);
  auto got = decode(sa.answer(request(kMethodGetTable, kSaSl2VlRecord, bit(0),
                                      [&](uint8_t* r) { put16(r, nd.ports[0].attrs.lid.value); }),
                              ctx));
  ASSERT_EQ(got.status, 0);
  size_t linked = 0, vl1 = 0;
  for (PortNum p = 1; p <= nd.num_ports; ++p) linked += nd.ports[p].linked();
  EXPECT_EQ(got.records.size(), linked * (linked + 1));  // (port 0 + linked) x linked
  for (const auto& r : got.records) {
    SmpData d{};
    std::copy(r.begin() + 8, r.begin() + 16, d.begin());
    const auto t = decode_sl2vl(d);
    EXPECT_EQ(t, fx.sim.sl2vl(at, r[2], r[3])) << int(r[2]) << "->" << int(r[3]);
    vl1 += t[1] == 1 || t[2] == 1;
  }
  EXPECT_GT(vl1, 0u);
}

TEST(Sa, ServicesRegisterWithALeaseAndGo) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  auto svc = [&](uint8_t method, uint64_t id, uint32_t lease,
                 uint64_t mask = bit(0) | bit(1) | bit(4) | bit(6)) {
    return request(method, kSaServiceRecord, mask, [&](uint8_t* r) {
      put64(r, id);
      put64(r + 8, kDefaultSubnetPrefix);
      put64(r + 16, c[2].guid.value);
      r[28] = uint8_t(lease >> 24), r[29] = uint8_t(lease >> 16), r[30] = uint8_t(lease >> 8),
      r[31] = uint8_t(lease);
      std::memcpy(r + 48, "weft-test-service", 17);
    });
  };
  ASSERT_EQ(ask(fx, svc(kMethodSet, 0x1000, 10)).status, 0);
  ASSERT_EQ(ask(fx, svc(kMethodSet, 0x2000, 0xffffffff)).status, 0);
  auto by_id = ask(fx, svc(kMethodGetTable, 0x1000, 0, bit(0)));
  ASSERT_EQ(by_id.records.size(), 1u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(by_id.records[0].data() + 48)),
            "weft-test-service");
  EXPECT_EQ(ask(fx, request(kMethodGetTable, kSaServiceRecord, 0)).records.size(), 2u);
  // The 10 s lease runs out; the one without a lease stays.
  fx.t.manual_clock().advance(std::chrono::seconds(11));
  EXPECT_EQ(ask(fx, request(kMethodGetTable, kSaServiceRecord, 0)).records.size(), 1u);
  // Delete, and a GID outside the fabric.
  EXPECT_EQ(ask(fx, svc(kMethodDelete, 0x2000, 0)).method, kMethodDeleteResp);
  EXPECT_EQ(ask(fx, request(kMethodGetTable, kSaServiceRecord, 0)).records.size(), 0u);
  EXPECT_EQ(ask(fx, request(kMethodSet, kSaServiceRecord, bit(0) | bit(1),
                            [](uint8_t* r) {
                              put64(r + 8, kDefaultSubnetPrefix);
                              put64(r + 16, 0xbad);
                            }))
                .status,
            kSaStatusInvalidGid);
}

TEST(Sa, ServicesStayInsideTheirPartition) {
  Fixture probe("ft2:leaves=2,spines=1,hosts=2");
  const auto c = probe.cas();
  // Storage: c[1] full, c[2] limited; c[3] is only in Default.
  Fixture fx("ft2:leaves=2,spines=1,hosts=2", storage_partition(c));
  SaAgent sa;
  auto as = [&](size_t who) {
    SaContext ctx = fx.ctx();
    ctx.requester = Lid{c[who].lid};
    return ctx;
  };
  auto svc = [&](uint8_t method, uint16_t pkey) {
    return request(method, kSaServiceRecord, bit(0) | bit(1) | bit(2), [&](uint8_t* r) {
      put64(r, 0x5000);
      put64(r + 8, kDefaultSubnetPrefix);
      put64(r + 16, c[1].guid.value);
      put16(r + 24, pkey);
      r[28] = r[29] = r[30] = r[31] = 0xff;
    });
  };
  // An outsider cannot register in Storage; a member can.
  EXPECT_EQ(decode(sa.answer(svc(kMethodSet, 0x8002), as(3))).status, kSaStatusReqInvalid);
  ASSERT_EQ(decode(sa.answer(svc(kMethodSet, 0x8002), as(1))).status, 0);
  // Members (full or limited) see it; the outsider does not.
  auto table = [&](size_t who) {
    return decode(sa.answer(request(kMethodGetTable, kSaServiceRecord, 0), as(who))).records.size();
  };
  EXPECT_EQ(table(1), 1u);
  EXPECT_EQ(table(2), 1u);
  EXPECT_EQ(table(3), 0u);
  // Nor may the outsider delete it.
  EXPECT_EQ(decode(sa.answer(svc(kMethodDelete, 0x8002), as(3))).status, kSaStatusReqInvalid);
  EXPECT_EQ(table(1), 1u);
}

TEST(Sa, SubscribersGetReportsOfPortsLeavingAndGroupsComing) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  auto subscribe = [&](uint16_t trap) { return inform(trap); };
  ASSERT_EQ(ask(fx, subscribe(kTrapGidOut)).status, 0);
  ASSERT_EQ(ask(fx, subscribe(kTrapMcCreated)).status, 0);
  EXPECT_EQ(ask(fx, request(kMethodGetTable, kSaInformInfoRecord, 0)).records.size(), 2u);
  // A port leaves: the next sweep reports trap 65 about its GID to QP 9.
  fx.t.clear_gsi_answers();
  fx.sim.unlink(sim_node(fx, c[3]), 1);
  ASSERT_TRUE(fx.sm->sweep());
  ASSERT_TRUE(fx.sm->serve_for(std::chrono::milliseconds(50)));  // Reports go after the sweep
  std::vector<const SimTransport::GsiAnswer*> reports;
  for (const auto& a : fx.t.gsi_answers())
    if (a.segments[0][3] == kMethodReport) reports.push_back(&a);
  ASSERT_EQ(reports.size(), 1u);
  const auto& m = reports[0]->segments[0];
  EXPECT_EQ(reports[0]->to.qpn, 9u);
  EXPECT_EQ(be16(m.data() + 16), kSaNotice);
  EXPECT_EQ(be16(m.data() + kSaHeader + 4), kTrapGidOut);
  uint64_t guid = 0;
  for (int i = 24; i < 32; ++i) guid = guid << 8 | m[kSaHeader + i];
  EXPECT_EQ(guid, c[3].guid.value);
  // A group created by a join: trap 66.
  fx.t.clear_gsi_answers();
  InMad in;
  auto req = mc_request(kMethodSet, Gid{}, c[1].guid, kJoinFull,
                        bit(2) | bit(6) | bit(7) | bit(12) | bit(13),
                        [](uint8_t* r) { put16(r + 40, 0xffff); });
  std::copy(req.begin(), req.end(), in.mad.begin());
  in.len = kMadSize;
  in.slid = Lid{1};
  fx.t.inject(in);
  ASSERT_TRUE(fx.sm->serve_for(std::chrono::milliseconds(50)));
  size_t created = 0;
  for (const auto& a : fx.t.gsi_answers())
    if (a.segments[0][3] == kMethodReport &&
        be16(a.segments[0].data() + kSaHeader + 4) == kTrapMcCreated)
      ++created;
  EXPECT_EQ(created, 1u);
  // Its last member leaves and the group goes: trap 67, carrying the group's MGID.
  Gid made{};
  for (const auto& a : fx.t.gsi_answers())
    if (a.segments[0][3] == kMethodGetResp && be16(a.segments[0].data() + 16) == kSaMcMemberRecord)
      std::copy(a.segments[0].begin() + kSaHeader, a.segments[0].begin() + kSaHeader + 16,
                made.begin());
  ASSERT_NE(made, Gid{});
  ASSERT_EQ(ask(fx, subscribe(kTrapMcDeleted)).status, 0);
  auto leave = mc_request(kMethodDelete, made, c[1].guid, kJoinFull);
  std::copy(leave.begin(), leave.end(), in.mad.begin());
  fx.t.clear_gsi_answers();
  fx.t.inject(in);
  ASSERT_TRUE(fx.sm->serve_for(std::chrono::milliseconds(50)));
  size_t deleted = 0;
  for (const auto& a : fx.t.gsi_answers()) {
    const auto& m = a.segments[0];
    if (m[3] != kMethodReport || be16(m.data() + kSaHeader + 4) != kTrapMcDeleted) continue;
    ++deleted;
    EXPECT_TRUE(std::search(m.begin() + kSaHeader, m.end(), made.begin(), made.end()) != m.end())
        << "the report names the group";
  }
  EXPECT_EQ(deleted, 1u);
  // Unsubscribing something never subscribed is refused.
  EXPECT_EQ(
      ask(fx, request(kMethodSet, kSaInformInfo, 0, [](uint8_t* r) { put16(r + 26, 70); })).status,
      kSaStatusReqInvalid);
}

TEST(Sa, TheQosPolicyDecidesSlMtuAndPkeyOfPaths) {
  Fixture probe("ft2:leaves=2,spines=1,hosts=2");
  const auto c = probe.cas();
  auto pol = config::parse_qos_policy(
      "port-groups\n port-group\n  name: Storage\n  port-guid: " + c[2].guid.str() +
          "\n end-port-group\nend-port-groups\n"
          "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 1\n end-qos-level\n"
          " qos-level\n  name: Fast\n  sl: 3\n  mtu-limit: 3\n  packet-life: 9\n end-qos-level\n"
          "end-qos-levels\n"
          "qos-match-rules\n qos-match-rule\n  destination: Storage\n  qos-level-name: Fast\n"
          " end-qos-match-rule\nend-qos-match-rules\n"
          "qos-ulps\n any, service-id 0x10 : 5\nend-qos-ulps\n",
      "q.conf");
  ASSERT_TRUE(pol) << pol.error().message;
  auto run = [&](bool qos_on) {
    std::string dir =
        (std::filesystem::temp_directory_path() / ("weft-qp-" + std::to_string(getpid()))).string();
    SimFabric sim(*make_fabric("ft2:leaves=2,spines=1,hosts=2"));
    SimTransport t(sim, {});
    SmOptions o;
    o.state_dir = dir;
    o.qos.enabled = qos_on;
    o.qos_policy = *pol;
    SubnetManager sm(t, o);
    EXPECT_TRUE(sm.sweep());
    std::filesystem::remove_all(dir);
    SaContext ctx;
    ctx.snap = sm.snapshot();
    ctx.qos = qos_on;
    SaAgent sa;
    auto path = [&](uint16_t d, uint64_t mask = 0, const std::function<void(uint8_t*)>& more = {}) {
      return decode(sa.answer(request(kMethodGet, kSaPathRecord, bit(4) | bit(5) | mask,
                                      [&](uint8_t* r) {
                                        put16(r + 40, d);
                                        put16(r + 42, c[1].lid);
                                        if (more) more(r);
                                      }),
                              ctx));
    };
    auto to_storage = path(c[2].lid);
    auto to_other = path(c[3].lid);
    auto with_sid = path(c[3].lid, bit(0) | bit(1), [](uint8_t* r) { r[7] = 0x10; });
    return std::tuple{to_storage.records.at(0), to_other.records.at(0), with_sid.records.at(0)};
  };
  auto [st, other, sid] = run(true);
  EXPECT_EQ(st[53] & 0x0f, 3);     // the Fast level
  EXPECT_EQ(st[54] & 0x3f, 3);     // capped at 1024
  EXPECT_EQ(st[56] & 0x3f, 9);     // packet life
  EXPECT_EQ(other[53] & 0x0f, 1);  // DEFAULT
  EXPECT_EQ(other[54] & 0x3f, 4);
  EXPECT_EQ(sid[53] & 0x0f, 5);           // no rule; the ulps' service-id rule
  auto [st0, other0, sid0] = run(false);  // QoS off: the policy is not applied
  EXPECT_EQ(st0[53] & 0x0f, 0);
  EXPECT_EQ(st0[54] & 0x3f, 4);
  EXPECT_EQ(sid0[53] & 0x0f, 0);
}

TEST(Multicast, HostIpoibGroupsMustMatchTheirBroadcastGroup) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  // ff12:401b:ffff::1: an IPv4 group on the Default partition (broadcast: 2048, Q_Key 0x0b1b).
  const Gid ip{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const uint64_t create = bit(2) | bit(6) | bit(7) | bit(12) | bit(13);
  auto make = [&](uint32_t qkey, std::optional<uint8_t> exact_mtu) {
    return ask(fx, mc_request(kMethodSet, ip, c[1].guid, kJoinFull,
                              create | (exact_mtu ? bit(4) | bit(5) : 0), [&](uint8_t* r) {
                                r[32] = uint8_t(qkey >> 24), r[33] = uint8_t(qkey >> 16),
                                r[34] = uint8_t(qkey >> 8), r[35] = uint8_t(qkey);
                                put16(r + 40, 0xffff);
                                if (exact_mtu) r[38] = uint8_t(2 << 6 | *exact_mtu);
                              }));
  };
  EXPECT_EQ(make(0x1234, std::nullopt).status, kSaStatusReqInvalid);  // another Q_Key
  EXPECT_EQ(make(0x0b1b, 3).status, kSaStatusReqInvalid);             // 1024, not 2048
  auto ok = make(0x0b1b, std::nullopt);
  ASSERT_EQ(ok.status, 0);
  EXPECT_EQ(ok.records.at(0)[38] & 0x3f, 4);  // the broadcast group's MTU
}

namespace {

// A GetMulti MultiPathRecord request for the given source and destination GIDs.
std::vector<uint8_t> multipath_request(const std::vector<Guid>& src, const std::vector<Guid>& dst,
                                       uint64_t extra_mask = 0, uint8_t numb_path = 0) {
  const size_t len = kSaHeader + 24 + 16 * (src.size() + dst.size());
  std::vector<uint8_t> m =
      request(kMethodGetMulti, kSaMultiPathRecord, bit(19) | bit(20) | extra_mask);
  m.resize(std::max<size_t>(len, 256), 0);
  uint8_t* r = m.data() + kSaHeader;
  r[5] = numb_path;
  r[15] = uint8_t(src.size());
  r[16] = uint8_t(dst.size());
  size_t off = 24;
  for (const auto* list : {&src, &dst})
    for (Guid g : *list) {
      put64(r + off, kDefaultSubnetPrefix);
      put64(r + off + 8, g.value);
      off += 16;
    }
  return m;
}

// The switches a path from LID `s` to LID `d` crosses, read off the snapshot's tables.
std::vector<NodeIndex> switches_on(const Fixture& fx, NodeIndex src_ca, uint16_t dlid) {
  const auto& f = fx.snap().fabric;
  std::vector<NodeIndex> v;
  NodeIndex n = f.node(src_ca).ports[1].peer;
  for (int i = 0; i < 16 && f.node(n).is_switch(); ++i) {
    v.push_back(n);
    const PortNum out = fx.snap().tables.lft[n][dlid];
    if (out == 0 || out == kDropPort) break;
    n = f.node(n).ports[out].peer;
  }
  return v;
}

}  // namespace

// An SR-IOV VF's GID is an end of MultiPathRecords and a ServiceRecord's GID, as it is of
// PathRecords and multicast joins.
TEST(Sa, MultiPathAndServiceRecordsTakeAVfsGid) {
  Fixture probe("ft2:leaves=2,spines=2,hosts=3");
  const auto pc = probe.cas();
  const Guid a = derived_vport_guid(pc[1].guid, 1), b = derived_vport_guid(pc[4].guid, 2);
  Fixture fx("ft2:leaves=2,spines=2,hosts=3", "Default=0x7fff : ALL, SELF=full ;\npa=0x0a12 : " +
                                                  a.str() + "=full, " + b.str() + "=full ;\n");
  const auto c = fx.cas();
  ASSERT_TRUE(add_vports_everywhere(fx.sim.vports(), fx.sim.model(), 2, 1));
  auto rep = fx.sm->sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  SaAgent sa;
  auto mpr = decode(sa.answer(multipath_request({a}, {b}), fx.ctx()));
  ASSERT_EQ(mpr.status, 0);
  ASSERT_EQ(mpr.records.size(), 1u);
  const auto& r = mpr.records[0];
  EXPECT_EQ(be64(r.data() + 16), b.value);
  EXPECT_EQ(be64(r.data() + 32), a.value);
  EXPECT_EQ(be16(r.data() + 40), c[4].lid) << "VF 2 answers on its port's LID";
  EXPECT_EQ(be16(r.data() + 42), fx.snap().fabric.find_vport(a)->lid.value);
  EXPECT_EQ(be16(r.data() + 50), 0x8a12);
  EXPECT_EQ(r[47], 2) << "virt_default_hop_limit";
  auto set =
      ask(fx, request(kMethodSet, kSaServiceRecord, bit(0) | bit(1) | bit(4), [&](uint8_t* x) {
            put64(x, 0x77);
            put64(x + 8, kDefaultSubnetPrefix);
            put64(x + 16, b.value);
            x[28] = x[29] = x[30] = x[31] = 0xff;  // no lease: stays
          }));
  EXPECT_EQ(set.status, 0);
  EXPECT_EQ(ask(fx, request(kMethodGetTable, kSaServiceRecord, 0)).records.size(), 1u);
}

TEST(Sa, MultiPathRecordsForEveryGidPairMostDisjointFirst) {
  // LMC 2: four LIDs per port, so up to 16 LID pairs (and several routes) per GID pair.
  Fixture fx("ft2:leaves=2,spines=4,hosts=3", "", "minhop", 2);
  SaAgent sa;
  const auto c = fx.cas();
  // One source, two destinations (on the other leaf), one path each.
  auto one = decode(sa.answer(multipath_request({c[0].guid}, {c[4].guid, c[5].guid}), fx.ctx()));
  ASSERT_EQ(one.status, 0);
  EXPECT_EQ(one.method, kMethodGetMultiResp);
  ASSERT_EQ(one.records.size(), 2u);
  EXPECT_EQ(be16(one.records[0].data() + 40), c[4].lid);
  EXPECT_EQ(be16(one.records[0].data() + 42), c[0].lid);
  EXPECT_EQ(be16(one.records[1].data() + 40), c[5].lid);
  // Three records still fit one MAD: the answer is one whole segment.
  auto raw = sa.answer(multipath_request({c[0].guid}, {c[3].guid, c[4].guid, c[5].guid}), fx.ctx());
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->size(), kSaHeader + 3 * 64);
  EXPECT_EQ(be16(raw->data() + kSaHeader + 128 + 40), c[5].lid);
  // NumbPath 4: four paths for the pair, each a different LID pair, and the first two
  // through different spines (as disjoint as the routes allow).
  auto four = decode(sa.answer(multipath_request({c[0].guid}, {c[4].guid}, bit(6), 4), fx.ctx()));
  ASSERT_EQ(four.status, 0);
  ASSERT_EQ(four.records.size(), 4u);
  std::set<std::pair<uint16_t, uint16_t>> pairs;
  std::set<NodeIndex> spines;
  for (const auto& r : four.records) {
    pairs.insert({be16(r.data() + 42), be16(r.data() + 40)});
    const auto sw = switches_on(fx, c[0].n, be16(r.data() + 40));
    ASSERT_EQ(sw.size(), 3u);  // leaf, spine, leaf
    spines.insert(sw[1]);
  }
  EXPECT_EQ(pairs.size(), 4u);
  EXPECT_EQ(spines.size(), 4u) << "four LID pairs, four spines: each path on links of its own";
  // Longer than one MAD: 6 sources x 6 destinations carried in 216 + 24 bytes of GIDs.
  std::vector<Guid> srcs, dsts;
  for (size_t i = 0; i < 6; ++i) srcs.push_back(c[i].guid), dsts.push_back(c[i].guid);
  auto many = decode(sa.answer(multipath_request(srcs, dsts), fx.ctx()));
  ASSERT_EQ(many.status, 0);
  EXPECT_EQ(many.records.size(), 36u);
  // A P_Key in the query: its records carry it; a key neither end has: no records.
  auto keyed_req = multipath_request({c[0].guid}, {c[4].guid}, bit(7));
  put16(keyed_req.data() + kSaHeader + 6, 0xffff);
  auto keyed = decode(sa.answer(keyed_req, fx.ctx()));
  ASSERT_EQ(keyed.records.size(), 1u);
  EXPECT_EQ(be16(keyed.records[0].data() + 50), 0xffff);
  put16(keyed_req.data() + kSaHeader + 6, 0x8123);
  EXPECT_EQ(decode(sa.answer(keyed_req, fx.ctx())).records.size(), 0u);
  // Errors: counts missing, GIDs past the end, an unknown GID, the wrong method.
  auto bad = [&](std::vector<uint8_t> m) { return decode(sa.answer(m, fx.ctx())).status; };
  auto no_counts = multipath_request({c[0].guid}, {c[4].guid});
  put64(no_counts.data() + 48, bit(19));
  EXPECT_EQ(bad(no_counts), kSaStatusInsufficientComponents);
  auto past = multipath_request({c[0].guid}, {c[4].guid});
  past.resize(kSaHeader + 24 + 16);
  past[kSaHeader + 16] = 9;
  EXPECT_EQ(bad(past), kSaStatusReqInvalid);
  EXPECT_EQ(bad(multipath_request({c[0].guid}, {Guid{0xdead}})), kSaStatusInvalidGid);
  auto get = multipath_request({c[0].guid}, {c[4].guid});
  get[3] = kMethodGet;
  EXPECT_EQ(bad(get), kStatusBadMethodAttr);
  EXPECT_EQ(bad(request(kMethodGetMulti, kSaPathRecord, bit(4) | bit(5))), kStatusBadMethodAttr);
  auto reserved = multipath_request({c[0].guid}, {c[4].guid}, bit(18));
  EXPECT_EQ(bad(reserved), kSaStatusReqInvalid);
  // Mangled requests: an error status or records, never a crash or a misshapen answer.
  const auto seed = multipath_request(srcs, dsts, bit(6) | bit(7), 3);
  std::mt19937 rng(9);
  for (int i = 0; i < 5000; ++i) {
    std::string m(seed.begin(), seed.end());
    m = weft::testing::mutate(m, std::string("\x00\x01\x03\x14\x3a\xfe\xff", 7), rng);
    auto ans = sa.answer(std::vector<uint8_t>(m.begin(), m.end()), fx.ctx());
    if (!ans) continue;
    ASSERT_GE(ans->size(), kSaHeader);
    const size_t rs = size_t(be16(ans->data() + 44)) * 8;
    if (rs) {
      EXPECT_EQ((ans->size() - kSaHeader) % rs, 0u);
    }
  }
}

// A heavy sweep does not stop the SA: queries that arrive during it are answered
// from the snapshot last published (which still has the port the sweep is about to
// find gone), and a multicast join made mid-sweep is in the tree the sweep leaves.
TEST(Sa, AnswersDuringASweepFromThePublishedSnapshot) {
  Fixture fx("ft2:leaves=4,spines=2,hosts=3");
  const auto c = fx.cas();
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[1].guid, kJoinFull)).status, 0);
  // c[2] goes away: the next sweep renumbers every node discovered after it.
  fx.sim.unlink(sim_node(fx, c[2]), 1);
  fx.t.clear_gsi_answers();
  auto inject = [&](const std::vector<uint8_t>& req, mad::Duration after) {
    InMad in;
    std::copy(req.begin(), req.end(), in.mad.begin());
    in.len = kMadSize;
    in.slid = Lid{c[1].lid};
    in.sqpn = 1;
    fx.t.inject(in, after);
  };
  inject(request(kMethodGet, kSaPathRecord, bit(4) | bit(5),
                 [&](uint8_t* r) {
                   put16(r + 40, c[2].lid);
                   put16(r + 42, c[1].lid);
                 }),
         std::chrono::microseconds(30));
  inject(mc_request(kMethodSet, bcast, c[5].guid, kJoinFull), std::chrono::microseconds(40));
  // Replies to the sweep's SMPs that come after both answers went out: the answers
  // were sent while the sweep ran.
  size_t replies_after_answers = 0;
  fx.t.mangle_replies([&](MadBuf&) {
    if (fx.t.gsi_answers().size() == 2) ++replies_after_answers;
  });
  auto rep = fx.sm->sweep();
  ASSERT_TRUE(rep && rep->subnet_up);
  fx.t.mangle_replies({});
  ASSERT_EQ(fx.t.gsi_answers().size(), 2u);
  EXPECT_GE(replies_after_answers, 10u) << "answered while the sweep ran";
  auto first = [&](size_t i) {
    const auto& m = fx.t.gsi_answers()[i].segments[0];
    return decode(std::vector<uint8_t>(m.begin(), m.end()));
  };
  const auto path = first(0);
  EXPECT_EQ(path.status, 0) << "the published snapshot still routes to c[2]";
  EXPECT_EQ(first(1).status, 0) << "the join is served mid-sweep";
  // Now the new snapshot: no path to c[2]'s LID, and the tree reaches c[5].
  auto after = ask(fx, request(kMethodGet, kSaPathRecord, bit(4) | bit(5), [&](uint8_t* r) {
                     put16(r + 40, c[2].lid);
                     put16(r + 42, c[1].lid);
                   }));
  EXPECT_NE(after.status, 0);
  // (c holds the old snapshot's node numbers: find the simulator's nodes by port GUID.)
  auto by_guid = [&](Guid g) {
    for (NodeIndex n = 0; n < fx.sim.model().size(); ++n)
      if (!fx.sim.model().node(n).is_switch() && fx.sim.model().node(n).ports[1].guid == g)
        return n;
    return NodeIndex(-1);
  };
  std::vector<NodeIndex> got;
  for (auto [n, p] : fx.sim.mcast_reach(0xC000, by_guid(c[1].guid), 1)) got.push_back(n);
  EXPECT_EQ(got, std::vector<NodeIndex>{by_guid(c[5].guid)});
}

namespace {

std::string versions_str(const Versions& v) {
  return "nodes " + std::to_string(v.nodes) + ", ports " + std::to_string(v.ports) + ", links " +
         std::to_string(v.links) + ", partitions " + std::to_string(v.partitions) + ", multicast " +
         std::to_string(v.multicast) + ", sm " + std::to_string(v.sm);
}

// `was` with the named counters moved by one.
Versions moved(Versions was, std::initializer_list<uint64_t Versions::*> which) {
  for (auto m : which) ++(was.*m);
  return was;
}

}  // namespace

// The change counters of /api/v1/sm (issue 29, item 7): each kind of change moves its
// own counter and no other; a sweep that finds nothing changed moves none.
TEST(Versions, EachKindOfChangeMovesItsCounterAndNothingElseDoes) {
  Fixture fx("ft2:leaves=4,spines=2,hosts=3");
  auto now = [&] { return versions_str(fx.sm->published()->versions); };
  auto v = [&] { return fx.sm->published()->versions; };
  const Versions v0 = v();
  auto quiet = fx.sm->sweep();
  ASSERT_TRUE(quiet && quiet->subnet_up);
  ASSERT_TRUE(fx.sm->light_sweep());
  EXPECT_EQ(now(), versions_str(v0)) << "a sweep that found nothing changed";

  // A host joins a multicast group.
  const auto c = fx.cas();
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[3].guid, kJoinFull)).status, 0);
  const Versions v1 = v();
  EXPECT_EQ(now(), versions_str(moved(v0, {&Versions::multicast})));

  // A host is renamed (its NodeDescription).
  const NodeIndex h = sim_node(fx, c[5]);
  fx.sim.model().node(h).description = "renamed-host";
  auto renamed = fx.sm->sweep();
  ASSERT_TRUE(renamed && renamed->subnet_up);
  const Versions v2 = v();
  EXPECT_EQ(now(), versions_str(moved(v1, {&Versions::nodes})));

  // The partitions change: a new partition with two members.
  SmOptions o = fx.sm->options();
  o.partitions = *config::parse_partitions(storage_partition(c), "p.conf");
  fx.sm->set_options(o);
  auto parts = fx.sm->sweep();
  ASSERT_TRUE(parts && parts->subnet_up);
  const Versions v3 = v();
  EXPECT_EQ(now(), versions_str(moved(v2, {&Versions::partitions})));

  // A link between two switches goes down: the links, and the ports that went DOWN.
  const auto& f = fx.sim.model();
  NodeIndex leaf = 0;
  PortNum up = 0;
  for (NodeIndex n = 0; n < f.size() && !up; ++n)
    if (f.node(n).is_switch() && f.node(n).description.starts_with("leaf"))
      for (const auto& p : f.node(n).ports)
        if (p.num && p.linked() && f.node(p.peer).is_switch()) {
          leaf = n, up = p.num;
          break;
        }
  ASSERT_NE(up, 0);
  fx.sim.unlink(leaf, up);
  auto cut = fx.sm->sweep();
  ASSERT_TRUE(cut && cut->subnet_up);
  EXPECT_EQ(now(), versions_str(moved(v3, {&Versions::links, &Versions::ports})));
  const Versions v4 = v();

  // The SM's own priority: sm alone.
  o = fx.sm->options();
  o.sm_priority = 7;
  fx.sm->set_options(o);
  auto prio = fx.sm->sweep();
  ASSERT_TRUE(prio && prio->subnet_up);
  EXPECT_EQ(now(), versions_str(moved(v4, {&Versions::sm})));
  // And nothing once more.
  ASSERT_TRUE(fx.sm->sweep());
  EXPECT_EQ(now(), versions_str(moved(v4, {&Versions::sm})));
}

// The SA's multicast groups are state (issue 29, item 1, first slice): written to the
// state directory before a join or leave is answered, read back by a restarted SM, which
// keeps every MLID and member and so rewrites no MFT block; without the document the
// groups are gone (what every restart did before).
TEST(Multicast, GroupsKeepTheirMlidsAndMembersAcrossARestart) {
  Fixture fx("ft2:leaves=4,spines=2,hosts=3");
  const auto c = fx.cas();
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  for (size_t i : {1, 5, 9})
    ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[i].guid, kJoinFull)).status, 0);
  const uint64_t create = bit(2) | bit(6) | bit(7) | bit(12) | bit(13);
  auto made = ask(fx, mc_request(kMethodSet, Gid{}, c[2].guid, kJoinFull, create, [](uint8_t* r) {
                    r[35] = 0x42;
                    put16(r + 40, 0xffff);
                  }));
  ASSERT_EQ(made.status, 0);
  const uint16_t mlid = be16(made.records.at(0).data() + 36);
  Gid mgid;
  std::copy(made.records[0].begin(), made.records[0].begin() + 16, mgid.begin());
  ASSERT_EQ(ask(fx, mc_request(kMethodSet, mgid, c[6].guid, kJoinFull)).status, 0);
  // On disk before the answer: the document holds the last join.
  auto on_disk = [&] { return read_text_file(fx.dir + "/mcast-groups").value_or(""); };
  ASSERT_NE(on_disk().find(hex_guid(c[6].guid.value)), std::string::npos) << on_disk();
  const auto groups = fx.sm->multicast().groups();
  auto reach = [&](uint16_t ml, size_t from) {
    return fx.sim.mcast_reach(ml, sim_node(fx, c[from]), 1);
  };
  const auto bcast_reach = reach(0xC000, 1);
  const auto made_reach = reach(mlid, 2);
  ASSERT_EQ(bcast_reach.size(), 2u);
  ASSERT_EQ(made_reach.size(), 1u);

  auto restart = [&] { return fx.restart(); };
  auto r = restart();
  ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
  EXPECT_TRUE(r->new_term);
  EXPECT_GT(r->mft_blocks_read, 0u);
  EXPECT_EQ(r->mft_blocks_written, 0u) << "every MFT entry is the one the groups want";
  EXPECT_TRUE(fx.sm->multicast().groups() == groups);
  EXPECT_EQ(reach(0xC000, 1), bcast_reach);
  EXPECT_EQ(reach(mlid, 2), made_reach);
  // A group made now gets a new MLID: the restored ones stay taken.
  auto next = ask(fx, mc_request(kMethodSet, Gid{}, c[3].guid, kJoinFull, create, [](uint8_t* r) {
                    r[35] = 0x43;
                    put16(r + 40, 0xffff);
                  }));
  ASSERT_EQ(next.status, 0);
  EXPECT_EQ(be16(next.records.at(0).data() + 36), mlid + 1);

  // Without the document, a restart knows the partition's group only, with no members.
  // The switches still forward 0xC000 and the made group's MLID for groups it does not
  // know now: the partition's group is placed past them, and their entries stay through
  // the first sweep (the hosts re-join after ClientReregister).
  std::filesystem::remove(fx.dir + "/mcast-groups");
  auto wiped = restart();
  ASSERT_TRUE(wiped && wiped->subnet_up);
  EXPECT_EQ(wiped->mcast_foreign, 3u);  // 0xC000, mlid, and mlid + 1 (the one made last)
  EXPECT_EQ(wiped->mft_blocks_written, 0u);
  EXPECT_EQ(fx.sm->multicast().groups().size(), 1u);
  EXPECT_EQ(mlid_of(fx, bcast), mlid + 2);
  EXPECT_TRUE(fx.sm->multicast().groups().at(mlid + 2).members.empty());
  EXPECT_EQ(reach(0xC000, 1), bcast_reach);
  auto cleared = fx.sm->sweep();
  ASSERT_TRUE(cleared && cleared->subnet_up);
  EXPECT_GT(cleared->mft_blocks_written, 0u);
  EXPECT_TRUE(reach(0xC000, 1).empty());
  // A document that is not one: the SM says so and starts without groups; nothing
  // forwards an MLID now, so the partition's group is at 0xC000 again.
  {
    std::ofstream bad(fx.dir + "/mcast-groups");
    bad << "{\"weft_mcast_groups\": 1, \"groups\": [{\"mgid\": 1}]}";
  }
  auto broken = restart();
  ASSERT_TRUE(broken && broken->subnet_up);
  EXPECT_EQ(broken->mcast_foreign, 0u);
  EXPECT_EQ(mlid_of(fx, bcast), 0xC000);
  EXPECT_TRUE(fx.sm->multicast().groups().at(0xC000).members.empty());
}

namespace {

// What another SM leaves behind: MLID `mlid` forwarded by every switch to its ports 1-15
// (the block's other entries kept), written with raw SMPs from the SM's port.
void foreign_group(Fixture& fx, uint16_t mlid) {
  const auto& snap = fx.snap();
  const uint32_t block = uint32_t(mlid - 0xC000) / 32, idx = uint32_t(mlid - 0xC000) % 32;
  for (NodeIndex s = 0; s < snap.fabric.size(); ++s) {
    if (!snap.fabric.node(s).is_switch()) continue;
    auto got =
        fx.sim.process(encode_smp(SmpRequest::get(kAttrMft, block, snap.node_paths[s]), 7), 0, 1);
    ASSERT_TRUE(got.reply);
    auto smp = decode_smp(got.reply->data(), got.reply->size());
    ASSERT_TRUE(smp);
    MftBlock b = decode_mft_block(smp->data);
    b[idx] = 0xfffe;
    auto set = fx.sim.process(
        encode_smp(SmpRequest::set(kAttrMft, block, snap.node_paths[s], encode_mft_block(b)), 8), 0,
        1);
    ASSERT_TRUE(set.reply);
  }
}

}  // namespace

// Issue 29, item 1: MFT entries of groups the SM does not know (its document lost, or
// another SM's) are left as they are through the first full sweep of a term, their MLIDs
// given to no new group; the next sweep clears them and frees the MLIDs.
TEST(Multicast, GroupsNobodyKnowsAreLeftForASweepAndTheirMlidsNeverHandedOut) {
  Fixture fx("ft2:leaves=4,spines=2,hosts=3");
  const auto c = fx.cas();
  const uint64_t create = bit(2) | bit(6) | bit(7) | bit(12) | bit(13);
  auto make = [&](size_t host, uint8_t qkey) {
    auto r =
        ask(fx, mc_request(kMethodSet, Gid{}, c[host].guid, kJoinFull, create, [&](uint8_t* m) {
              m[35] = qkey;
              put16(m + 40, 0xffff);
            }));
    EXPECT_EQ(r.status, 0);
    return r.records.empty() ? uint16_t(0) : be16(r.records[0].data() + 36);
  };
  // A group of the SA's (0xC001, two members), then another writer's entries at 0xC002
  // and in the next block (0xC021).
  const uint16_t mine = make(2, 0x42);
  ASSERT_EQ(mine, 0xC001);
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[4].guid, kJoinFull)).status, 0);
  foreign_group(fx, 0xC002);
  foreign_group(fx, 0xC021);
  auto reach = [&](uint16_t ml) { return fx.sim.mcast_reach(ml, sim_node(fx, c[1]), 1); };
  const auto mine_reach = reach(mine), c002 = reach(0xC002), c021 = reach(0xC021);
  ASSERT_FALSE(mine_reach.empty());
  ASSERT_GT(c002.size(), 1u);
  ASSERT_EQ(c021, c002);

  // A restart that lost the SA's groups: 0xC000 (the broadcast group, with c[4]), 0xC001,
  // 0xC002 and 0xC021 are nobody's now; the partition's broadcast group is placed on the
  // first MLID no switch forwards, once the MFTs have been read.
  const auto bcast_reach = reach(0xC000);
  std::filesystem::remove(fx.dir + "/mcast-groups");
  auto r = fx.restart();
  ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
  EXPECT_EQ(r->mcast_foreign, 4u);
  EXPECT_EQ(mlid_of(fx, bcast), 0xC003);
  EXPECT_EQ(reach(mine), mine_reach) << "left as they are through the first sweep";
  EXPECT_EQ(reach(0xC002), c002);
  EXPECT_EQ(reach(0xC021), c021);
  EXPECT_EQ(reach(0xC000), bcast_reach) << "another group's for all weft knows now";
  // New groups skip every MLID still forwarded.
  EXPECT_EQ(make(3, 0x43), 0xC004);
  EXPECT_EQ(make(5, 0x44), 0xC005);

  // The next sweep (a quiet one: light) clears them, and their MLIDs are free again.
  auto next = fx.sm->light_sweep();
  ASSERT_TRUE(next && next->subnet_up);
  EXPECT_FALSE(next->heavy);
  EXPECT_EQ(next->mcast_foreign, 0u);
  EXPECT_TRUE(reach(mine).empty());
  EXPECT_TRUE(reach(0xC002).empty());
  EXPECT_TRUE(reach(0xC021).empty());
  EXPECT_TRUE(reach(0xC000).empty());
  EXPECT_EQ(make(6, 0x45), 0xC000);
  auto again = fx.sm->sweep();
  ASSERT_TRUE(again && again->subnet_up);
  EXPECT_EQ(again->mcast_foreign, 0u);
  EXPECT_EQ(again->mft_blocks_written, 0u);
  EXPECT_EQ(make(7, 0x46), 0xC001);
}

// A switch whose MFT could not be read: the partition's group waits (no MLID is known
// free there) without the scan reading on block after block to the cap, and is placed
// when the next sweep reads it.
TEST(Multicast, AnUnreadMftDelaysThePartitionsGroupsUntilItIsRead) {
  Fixture fx("ft2:leaves=2,spines=2,hosts=2");
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  const NodeIndex leaf = *fx.sim.model().find_by_name("leaf1");
  fx.sim.refuse_gets(leaf, kAttrMft, true);
  std::filesystem::remove(fx.dir + "/mcast-groups");
  auto r = fx.restart();
  ASSERT_TRUE(r);
  EXPECT_EQ(mlid_of(fx, bcast), 0) << "no MLID known free on leaf1";
  // Block 0 on the 4 switches, read once each: not block after block up to the cap.
  EXPECT_EQ(r->mft_blocks_read, 4u);
  EXPECT_FALSE(r->subnet_up) << "a table it could not read";
  fx.sim.refuse_gets(leaf, kAttrMft, false);
  auto next = fx.sm->sweep();
  ASSERT_TRUE(next && next->subnet_up) << (next ? next->reason : next.error().message);
  EXPECT_EQ(mlid_of(fx, bcast), 0xC000);
  auto doc = read_text_file(fx.dir + "/mcast-groups").value_or("");
  EXPECT_NE(doc.find("0xc000"), std::string::npos) << doc;
}

// Issue 29: a new term without the groups' document places the partition file's groups
// only where the MFTs read say no switch forwards the MLID: with another SM's groups on
// every MLID of the first block, the broadcast group goes to the next block, read first.
TEST(Multicast, ThePartitionsGroupsTakeNoMlidAnotherSmsGroupStillUses) {
  Fixture fx("ft2:leaves=2,spines=2,hosts=2");
  const auto c = fx.cas();
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(mlid_of(fx, bcast), 0xC000);
  for (uint16_t m = 0xC000; m < 0xC020; ++m) foreign_group(fx, m);
  auto reach = [&](uint16_t ml) { return fx.sim.mcast_reach(ml, sim_node(fx, c[1]), 1); };
  const auto first = reach(0xC000), last = reach(0xC01F);
  ASSERT_GT(first.size(), 1u);
  std::filesystem::remove(fx.dir + "/mcast-groups");
  auto r = fx.restart();
  ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
  EXPECT_EQ(r->mcast_foreign, 32u);
  EXPECT_EQ(mlid_of(fx, bcast), 0xC020);
  EXPECT_EQ(r->mft_blocks_written, 0u) << "nothing of the other groups' is overwritten";
  EXPECT_EQ(reach(0xC000), first);
  EXPECT_EQ(reach(0xC01F), last);
  // On disk at its new MLID: a restart now keeps it there, the other groups still forwarded.
  auto doc = read_text_file(fx.dir + "/mcast-groups").value_or("");
  EXPECT_NE(doc.find("0xc020"), std::string::npos) << doc;
  ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[1].guid, kJoinFull)).status, 0);
  auto joined = ask(fx, mc_request(kMethodSet, bcast, c[3].guid, kJoinFull));
  ASSERT_EQ(joined.status, 0);
  EXPECT_EQ(be16(joined.records.at(0).data() + 36), 0xC020);
  EXPECT_FALSE(reach(0xC020).empty());
}

namespace {

// A driver that runs the sweep's waits at once and holds what is posted to the loop
// until the test runs it (what the daemon's loop does after a batch of MADs).
struct HoldingDriver final : mad::Driver {
  explicit HoldingDriver(mad::MadEngine& e) : eng(e) {}
  void when_idle(std::function<void(Result<void>)> then) override { then(eng.run()); }
  void offload(std::function<void()> work, std::function<void()> then) override {
    work();
    then();
  }
  void post(std::function<void()> fn) override { posted.push_back(std::move(fn)); }
  mad::MadEngine& eng;
  std::vector<std::function<void()>> posted;
};

}  // namespace

// Joins that arrive together are written once, and answered only after that write.
TEST(Multicast, JoinsOfOneBatchAreWrittenOnceThenAnswered) {
  Fixture fx("ft2:leaves=2,spines=2,hosts=3");
  HoldingDriver drv(fx.sm->engine());
  fx.sm->set_driver(drv);
  const auto c = fx.cas();
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  fx.t.clear_gsi_answers();
  for (size_t i : {1, 2, 4}) {
    InMad in;
    const auto req = mc_request(kMethodSet, bcast, c[i].guid, kJoinFull);
    std::copy(req.begin(), req.end(), in.mad.begin());
    in.len = kMadSize;
    in.slid = Lid{c[i].lid};
    in.sqpn = 1;
    fx.t.inject(in);
  }
  ASSERT_TRUE(fx.sm->serve_for(std::chrono::milliseconds(50)));
  auto on_disk = [&] { return read_text_file(fx.dir + "/mcast-groups").value_or(""); };
  EXPECT_EQ(fx.sm->multicast().groups().at(0xC000).members.size(), 3u);  // joined in memory
  EXPECT_TRUE(fx.t.gsi_answers().empty()) << "answered before the groups were written";
  EXPECT_EQ(on_disk().find(hex_guid(c[1].guid.value)), std::string::npos);
  ASSERT_EQ(drv.posted.size(), 1u) << "one write for the batch";
  drv.posted[0]();
  EXPECT_EQ(fx.t.gsi_answers().size(), 3u);
  for (size_t i : {1, 2, 4})
    EXPECT_NE(on_disk().find(hex_guid(c[i].guid.value)), std::string::npos) << i;
}

// Services and subscriptions are state too (issue 29, item 1): a restarted SM with a new
// SA reads them back, the leases running out when they would have; the next port that
// leaves is reported to the subscriber; a broken document is said so and refused whole.
TEST(Sa, ServicesAndSubscriptionsOutliveARestart) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=3");
  const auto c = fx.cas();
  auto svc = [&](uint64_t id, uint32_t lease) {
    return request(kMethodSet, kSaServiceRecord, bit(0) | bit(1) | bit(4) | bit(6),
                   [&](uint8_t* r) {
                     put64(r, id);
                     put64(r + 8, kDefaultSubnetPrefix);
                     put64(r + 16, c[2].guid.value);
                     r[28] = uint8_t(lease >> 24), r[29] = uint8_t(lease >> 16),
                     r[30] = uint8_t(lease >> 8), r[31] = uint8_t(lease);
                     std::memcpy(r + 48, "kept-service", 12);
                   });
  };
  ASSERT_EQ(ask(fx, svc(0x1000, 100)).status, 0);
  ASSERT_EQ(ask(fx, svc(0x2000, 0xffffffff)).status, 0);
  ASSERT_EQ(ask(fx, inform(kTrapGidOut)).status, 0);
  auto on_disk = [&] { return read_text_file(fx.dir + "/sa-records").value_or(""); };
  ASSERT_NE(on_disk().find("\"inform_info\""), std::string::npos) << on_disk();
  auto restart = [&] { return fx.restart(true); };  // a new process: an SA that knows nothing
  auto r = restart();
  ASSERT_TRUE(r && r->subnet_up);
  EXPECT_EQ(fx.agent.services().size(), 2u);
  EXPECT_EQ(fx.agent.subscriptions().size(), 1u);
  auto by_id = ask(
      fx, request(kMethodGetTable, kSaServiceRecord, bit(0), [](uint8_t* r) { put64(r, 0x1000); }));
  ASSERT_EQ(by_id.records.size(), 1u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(by_id.records[0].data() + 48)),
            "kept-service");
  // The 100 s lease still runs out (the one without a lease stays).
  fx.t.manual_clock().advance(std::chrono::seconds(101));
  EXPECT_EQ(ask(fx, request(kMethodGetTable, kSaServiceRecord, 0)).records.size(), 1u);
  // The subscriber hears of the next port to leave.
  fx.t.clear_gsi_answers();
  fx.sim.unlink(sim_node(fx, c[4]), 1);
  ASSERT_TRUE(fx.sm->sweep());
  ASSERT_TRUE(fx.sm->serve_for(std::chrono::milliseconds(50)));  // Reports go after the sweep
  size_t reports = 0;
  for (const auto& a : fx.t.gsi_answers())
    reports += a.segments[0][3] == kMethodReport && a.to.qpn == 9;
  EXPECT_EQ(reports, 1u);
  // A broken document: said so, and the SA starts with none (nothing half-read).
  {
    std::ofstream bad(fx.dir + "/sa-records");
    bad << "{\"weft_sa_records\": 1, \"services\": [{\"record\": \"00\", \"expires_unix\": null}], "
           "\"subscriptions\": []}";
  }
  ASSERT_TRUE(restart());
  EXPECT_TRUE(fx.agent.services().empty());
  SaAgent probe;
  auto err = probe.restore_records(
      "{\"weft_sa_records\": 1, \"services\": [], \"subscriptions\": [{\"lid\": 0}]}", "sa-records",
      0, 0);
  ASSERT_FALSE(err);
  EXPECT_EQ(err.error().message, "sa-records: subscription 1: lid: not a unicast LID");
  // Leases are wall-clock times in the document, the SA's own clock in memory.
  const std::string rec(352, '0');
  ASSERT_TRUE(
      probe.restore_records("{\"weft_sa_records\": 1, \"subscriptions\": [], \"services\": "
                            "[{\"record\": \"" +
                                rec +
                                "\", \"expires_unix\": 5100}, "
                                "{\"record\": \"" +
                                rec +
                                "\", \"expires_unix\": 5000}, "
                                "{\"record\": \"" +
                                rec + "\", \"expires_unix\": null}]}",
                            "x", 10, 5050));
  ASSERT_EQ(probe.services().size(), 2u);  // the one that ran out at 5000 is gone
  EXPECT_EQ(probe.services()[0].expires_s, 60);
  EXPECT_EQ(probe.services()[1].expires_s, INT64_MAX);
  EXPECT_NE(probe.records_text(10, 5050).find("\"expires_unix\": 5100"), std::string::npos);
  for (const char* text : {"", "[]", "{\"weft_sa_records\": 2}",
                           "{\"weft_sa_records\": 1, \"services\": 3, \"subscriptions\": []}"})
    EXPECT_FALSE(probe.restore_records(text, "x", 0, 0)) << text;
  // Mutated documents: an answer, never a crash.
  const std::string good = fx.agent.records_text(0, 0);
  std::mt19937 rng(11);
  for (int i = 0; i < 1000; ++i) {
    std::string t = good.substr(0, rng() % (good.size() + 1));
    for (int k = 0; k < 2 && !t.empty(); ++k) t[rng() % t.size()] = char(rng() % 128);
    (void)probe.restore_records(t, "x", 0, 0);
  }
}

// PathRecords with LMC > 0 (issue 29, item 5): a GetTable by GIDs answers one record per
// source/destination LID pair, in OpenSM's order (the i-th LIDs of both ends first,
// preference 0; then the others, source LID outer, preference 2), capped by NumbPath;
// a Get answers the base pair; a given SLID fixes the source LID.
TEST(Sa, PathRecordsByGidAnswerEveryLidPairWithLmc) {
  Fixture fx("ft2:leaves=2,spines=2,hosts=2", "", "minhop", 1);
  const auto c = fx.cas();
  auto by_gids = [&](uint8_t method, uint64_t extra_mask,
                     const std::function<void(uint8_t*)>& more) {
    return ask(fx, request(method, kSaPathRecord, bit(2) | bit(3) | extra_mask, [&](uint8_t* r) {
                 put64(r + 8, kDefaultSubnetPrefix);
                 put64(r + 16, c[3].guid.value);
                 put64(r + 24, kDefaultSubnetPrefix);
                 put64(r + 32, c[1].guid.value);
                 if (more) more(r);
               }));
  };
  auto pairs = [](const Reply& rep) {
    std::vector<std::tuple<uint16_t, uint16_t, uint8_t>> v;
    for (const auto& r : rep.records)
      v.emplace_back(be16(r.data() + 42), be16(r.data() + 40), r[57]);
    return v;
  };
  const uint16_t s = c[1].lid, d = c[3].lid;
  ASSERT_EQ(s % 2, 0);  // LMC 1: base LIDs even
  using P = std::tuple<uint16_t, uint16_t, uint8_t>;
  auto table = by_gids(kMethodGetTable, 0, {});
  ASSERT_EQ(table.status, 0);
  EXPECT_EQ(pairs(table),
            (std::vector<P>{{s, d, 0}, {s + 1, d + 1, 0}, {s, d + 1, 2}, {s + 1, d, 2}}));
  // Every one is a real path: its DLID routes to the destination through the tables.
  for (const auto& [sl, dl, pref] : pairs(table)) {
    auto hop = fx.sim.lid_route(sim_node(fx, c[1]), 1, dl);
    ASSERT_TRUE(hop) << dl;
    EXPECT_EQ(hop->node, sim_node(fx, c[3]));
  }
  // NumbPath caps it (bit 12, byte 49's low 7 bits); 0 asks for none.
  auto three = by_gids(kMethodGetTable, bit(12), [](uint8_t* r) { r[49] = 3; });
  EXPECT_EQ(pairs(three), (std::vector<P>{{s, d, 0}, {s + 1, d + 1, 0}, {s, d + 1, 2}}));
  EXPECT_TRUE(by_gids(kMethodGetTable, bit(12), [](uint8_t* r) { r[49] = 0; }).records.empty());
  // A Get: the base pair.
  auto one = by_gids(mad::kMethodGet, 0, {});
  ASSERT_EQ(one.status, 0);
  ASSERT_FALSE(one.records.empty());
  EXPECT_EQ(pairs(one).front(), (P{s, d, 0}));
  // The source's second LID given: it alone, to each destination LID.
  auto fixed =
      by_gids(kMethodGetTable, bit(5), [&](uint8_t* r) { put16(r + 42, uint16_t(s + 1)); });
  EXPECT_EQ(pairs(fixed), (std::vector<P>{{s + 1, d, 0}, {s + 1, d + 1, 2}}));
}

// Without the SA's documents (a wiped state directory) a restarted SM tells every end
// port to re-register (issue 29, item 2); hosts that re-join as a host stack does on
// the event bring the groups back, every member and tree as before.
TEST(Multicast, WithoutTheDocumentHostsRejoinAfterClientReregister) {
  Fixture fx("ft2:leaves=4,spines=2,hosts=3");
  const auto c = fx.cas();
  const Gid bcast{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  std::map<NodeIndex, size_t> joined;  // simulator node -> index in c
  for (size_t i : {1, 5, 9}) {
    ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[i].guid, kJoinFull)).status, 0);
    joined[sim_node(fx, c[i])] = i;
  }
  const auto members = fx.sm->multicast().groups().at(0xC000).members;
  const auto reach = fx.sim.mcast_reach(0xC000, sim_node(fx, c[1]), 1);
  ASSERT_EQ(reach.size(), 2u);
  std::vector<NodeIndex> told;
  fx.sim.on_client_reregister([&](NodeIndex n, PortNum) { told.push_back(n); });

  std::filesystem::remove(fx.dir + "/mcast-groups");
  auto r = fx.restart();
  ASSERT_TRUE(r && r->subnet_up);
  // 0xC000 is forwarded for a group weft does not know now: the broadcast group is
  // placed past it.
  const uint16_t now = mlid_of(fx, bcast);
  ASSERT_EQ(now, 0xC001);
  EXPECT_TRUE(fx.sm->multicast().groups().at(now).members.empty());
  EXPECT_EQ(told.size(), c.size()) << "every CA port, once";
  EXPECT_EQ(std::set<NodeIndex>(told.begin(), told.end()).size(), c.size());
  // The host stacks re-join.
  for (NodeIndex n : told) {
    auto it = joined.find(n);
    if (it == joined.end()) continue;
    ASSERT_EQ(ask(fx, mc_request(kMethodSet, bcast, c[it->second].guid, kJoinFull)).status, 0);
  }
  EXPECT_EQ(fx.sm->multicast().groups().at(now).members, members);
  EXPECT_EQ(fx.sim.mcast_reach(now, sim_node(fx, c[1]), 1), reach);
  // Another sweep tells nobody again, and clears the old entries.
  told.clear();
  ASSERT_TRUE(fx.sm->sweep());
  EXPECT_TRUE(told.empty());
  EXPECT_TRUE(fx.sim.mcast_reach(0xC000, sim_node(fx, c[1]), 1).empty());
}

// --- Reports (issue 29, item 3) -----------------------------------------------------

namespace {

// Switch port 0s of the discovered model: (LID, port GUID).
std::vector<std::pair<uint16_t, Guid>> switches(const Fixture& fx) {
  std::vector<std::pair<uint16_t, Guid>> v;
  const auto& f = fx.snap().fabric;
  for (NodeIndex n = 0; n < f.size(); ++n)
    if (f.node(n).is_switch())
      v.push_back({f.node(n).ports[0].attrs.lid.value, f.node(n).ports[0].guid});
  return v;
}

Gid gid(Guid g) {
  return port_gid(g.value);
}

// A device's Notice as the SM hands it to the SA: `generic` with `type`, `producer`
// (VendorID when not generic), `trap` (DeviceID), from `lid` / `issuer`.
Notice device_notice(bool generic, uint8_t type, uint32_t producer, uint16_t trap, uint16_t lid,
                     Guid issuer) {
  Notice n{};
  n[0] = uint8_t((generic ? 0x80 : 0) | type);
  n[1] = uint8_t(producer >> 16), n[2] = uint8_t(producer >> 8), n[3] = uint8_t(producer);
  put16(n.data() + 4, trap);
  put16(n.data() + 6, lid);
  const Gid g = gid(issuer);
  std::copy(g.begin(), g.end(), n.begin() + 64);
  return n;
}

// The QPNs the Reports of `n` go to, sorted.
std::vector<uint32_t> heard(SaAgent& sa, const Notice& n, const SaContext& ctx) {
  std::vector<uint32_t> q;
  for (const auto& r : sa.reports(n, ctx)) {
    EXPECT_EQ(r.mad[3], kMethodReport);
    EXPECT_TRUE(std::equal(n.begin(), n.end(), r.mad.begin() + kSaHeader));
    q.push_back(r.qpn);
  }
  std::sort(q.begin(), q.end());
  return q;
}

}  // namespace

TEST(Reports, InformInfoMatchesANoticeAsIbtaSays) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  const auto sw = switches(fx);
  ASSERT_GE(sw.size(), 2u);
  const auto [lid_a, guid_a] = sw[0];
  const auto [lid_b, guid_b] = sw[1];
  const uint16_t host = c[1].lid;
  auto sub = [&](uint8_t qpn, const std::function<void(uint8_t*)>& more) {
    return ask(fx, inform(0xffff, true, qpn, more), host).status;
  };
  ASSERT_EQ(sub(10, [](uint8_t* r) { put16(r + 26, 128); }), 0);  // trap 128, any issuer
  ASSERT_EQ(
      sub(11, [&](uint8_t* r) { put64(r, kDefaultSubnetPrefix), put64(r + 8, guid_a.value); }),
      0);  // issuer A by GID
  ASSERT_EQ(sub(12, [&](uint8_t* r) { put16(r + 16, lid_a), put16(r + 18, lid_a); }), 0);  // LID A
  ASSERT_EQ(sub(13, [](uint8_t* r) { r[33] = r[34] = 0, r[35] = 1; }), 0);  // producer: CAs
  ASSERT_EQ(sub(14, [](uint8_t* r) { r[22] = 0; }), 0);                     // vendor notices
  ASSERT_EQ(sub(15, [](uint8_t* r) { put16(r + 24, 1); }), 0);              // urgent only
  ASSERT_EQ(sub(16, {}), 0);                                                // every generic one
  // Subscribing the same again changes nothing; from a LID the SA cannot place: refused.
  ASSERT_EQ(sub(16, {}), 0);
  EXPECT_EQ(fx.agent.subscriptions().size(), 7u);
  EXPECT_EQ(ask(fx, inform(128), 0x3000).status, kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, inform(128, true, 9, [](uint8_t* r) { r[23] = 2; }), host).status,
            kSaStatusReqInvalid);

  const SaContext ctx = fx.ctx();
  using Q = std::vector<uint32_t>;
  EXPECT_EQ(heard(fx.agent, device_notice(true, 1, 2, 128, lid_a, guid_a), ctx),
            (Q{10, 11, 12, 15, 16}));
  EXPECT_EQ(heard(fx.agent, device_notice(true, 1, 2, 128, lid_b, guid_b), ctx), (Q{10, 15, 16}));
  EXPECT_EQ(heard(fx.agent, device_notice(true, 2, 1, 129, c[2].lid, c[2].guid), ctx), (Q{13, 16}));
  EXPECT_EQ(heard(fx.agent, device_notice(false, 1, 0x2c9, 0x10, lid_a, guid_a), ctx), (Q{14}));
  const Gid sm_gid = gid(c[0].guid);
  EXPECT_EQ(heard(fx.agent, sm_notice(kTrapGidIn, gid(c[2].guid), Lid{c[0].lid}, sm_gid), ctx),
            (Q{16}));

  // InformInfoRecord: the subscriber is the requester's port; the GID subscribed stays
  // the issuer it filters on.
  auto recs = ask(fx, request(kMethodGetTable, kSaInformInfoRecord, 0)).records;
  ASSERT_EQ(recs.size(), 7u);
  const Gid me = gid(c[1].guid);
  size_t by_gid = 0;
  for (const auto& r : recs) {
    EXPECT_TRUE(std::equal(me.begin(), me.end(), r.begin())) << "SubscriberGID";
    const Gid a = gid(guid_a);
    by_gid += std::equal(a.begin(), a.end(), r.begin() + 24);
  }
  EXPECT_EQ(by_gid, 1u);
  // Unsubscribing takes the same InformInfo; another filter is not a subscription.
  EXPECT_EQ(ask(fx, inform(0xffff, false, 10, [](uint8_t* r) { put16(r + 26, 129); }), host).status,
            kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, inform(0xffff, false, 10, [](uint8_t* r) { put16(r + 26, 128); }), host).status,
            0);
  EXPECT_EQ(fx.agent.subscriptions().size(), 6u);
}

TEST(Reports, OnlyPortsSharingAPartitionWithTheSourceHear) {
  Fixture probe("ft2:leaves=2,spines=1,hosts=2");
  const auto c = probe.cas();
  // c[1] and c[2] share Default (c[2] a full member); c[3] is a limited member there
  // as c[1] is, so the two cannot talk, and a full member of Storage (with the SM).
  Fixture fx("ft2:leaves=2,spines=1,hosts=2",
             "Default=0x7fff : SELF=full, " + c[1].guid.str() + "=limited, " + c[2].guid.str() +
                 "=full ;\nStorage=0x8002 : SELF=full, " + c[3].guid.str() + "=full ;\n");
  ASSERT_EQ(ask(fx, inform(kTrapGidIn, true, 20), c[2].lid).status, 0);
  ASSERT_EQ(ask(fx, inform(kTrapGidIn, true, 30), c[3].lid).status, 0);
  // c[3] again, bounded to the SM's LID (the issuer of trap 64): refused access drops it
  // (o13-17.1.2).
  ASSERT_EQ(ask(fx,
                inform(kTrapGidIn, true, 31,
                       [&](uint8_t* r) { put16(r + 16, c[0].lid), put16(r + 18, c[0].lid); }),
                c[3].lid)
                .status,
            0);
  ASSERT_EQ(fx.agent.subscriptions().size(), 3u);
  const Notice about_1 = sm_notice(kTrapGidIn, gid(c[1].guid), Lid{c[0].lid}, gid(c[0].guid));
  using Q = std::vector<uint32_t>;
  EXPECT_EQ(heard(fx.agent, about_1, fx.ctx()), (Q{20}));
  EXPECT_EQ(fx.agent.subscriptions().size(), 2u) << "the bounded one went";
  EXPECT_TRUE(fx.agent.take_records_changed());
  const Notice about_3 = sm_notice(kTrapGidIn, gid(c[3].guid), Lid{c[0].lid}, gid(c[0].guid));
  // c[2], a full member of Default, may talk to c[3].
  EXPECT_EQ(heard(fx.agent, about_3, fx.ctx()), (Q{20, 30}));
}

TEST(Reports, DeviceTrapsReachSubscribersWhoAnswerAndDeafOnesAreDropped) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  const auto sw = switches(fx);
  ASSERT_EQ(ask(fx, inform(128, true, 9), c[1].lid).status, 0);
  ASSERT_EQ(ask(fx, inform(kTrapGidOut, true, 9), c[1].lid).status, 0);
  auto trap_from = [&](uint16_t lid) {
    Smp trap;
    trap.mgmt_class = kClassSmiLid;
    trap.method = kMethodTrap;
    trap.attr_id = kAttrNotice;
    trap.tid = 0x100 + lid;
    trap.data[0] = 0x81;  // generic, urgent
    trap.data[3] = 2;     // producer: a switch
    trap.data[5] = 128;
    put16(trap.data.data() + 6, lid);
    put16(trap.data.data() + 10, lid);
    InMad in;
    in.mad = encode_smp(trap);
    in.len = kMadSize;
    in.slid = Lid{lid};
    fx.t.clear_gsi_answers();
    fx.t.inject(in);
    EXPECT_TRUE(fx.sm->serve_for(std::chrono::seconds(2)));
  };
  auto reports = [&] {
    std::vector<const SimTransport::GsiAnswer*> v;
    for (const auto& a : fx.t.gsi_answers())
      if (a.segments[0][3] == kMethodReport) v.push_back(&a);
    return v;
  };
  trap_from(sw[0].first);
  auto r = reports();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]->to.dlid.value, c[1].lid);
  EXPECT_EQ(r[0]->to.qpn, 9u);
  const auto& m = r[0]->segments[0];
  EXPECT_EQ(be16(m.data() + 16), kSaNotice);
  EXPECT_EQ(be16(m.data() + kSaHeader + 4), 128);
  EXPECT_EQ(be16(m.data() + kSaHeader + 6), sw[0].first) << "IssuerLID";
  const Gid issuer = gid(sw[0].second);
  EXPECT_TRUE(std::equal(issuer.begin(), issuer.end(), m.begin() + kSaHeader + 64)) << "IssuerGID";
  auto stats = [&] {
    fx.sm->publish_stats();
    return fx.sm->published()->sa.reports;
  };
  EXPECT_EQ(stats().sent, 1u);
  EXPECT_EQ(stats().answered, 1u);

  // The host stops answering: the Report is tried 1 + transaction_retries times, then
  // the subscriber's subscriptions go, from the state store too.
  fx.t.answer_reports([](Lid) { return false; });
  trap_from(sw[1].first);
  EXPECT_EQ(reports().size(), 4u);
  EXPECT_EQ(stats().sent, 2u);
  EXPECT_EQ(stats().unanswered, 1u);
  EXPECT_EQ(stats().subscriptions_dropped, 2u);
  EXPECT_TRUE(fx.agent.subscriptions().empty());
  const auto doc = read_text_file(fx.dir + "/sa-records").value_or("");
  EXPECT_NE(doc.find("\"subscriptions\": []"), std::string::npos) << doc;
  // Nobody is told of the next one.
  trap_from(sw[0].first);
  EXPECT_TRUE(reports().empty());
  EXPECT_EQ(stats().sent, 2u);
}

// --- SA keys (issue 29, item 4) -----------------------------------------------------

// A service belongs to the port that registered it: another port may neither replace nor
// delete it unless its request is trusted (carries the SA_Key); an untrusted answer
// never shows the ServiceKey; the owner outlives a restart.
TEST(SaKeys, OnlyTheRegisteringPortOrATrustedRequestChangesAService) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  auto svc = [&](uint8_t method, uint32_t lease = 0xffffffff) {
    return request(method, kSaServiceRecord, bit(0) | bit(1) | bit(4), [&](uint8_t* r) {
      put64(r, 0x6000);
      put64(r + 8, kDefaultSubnetPrefix);
      put64(r + 16, c[1].guid.value);
      r[28] = uint8_t(lease >> 24), r[29] = uint8_t(lease >> 16), r[30] = uint8_t(lease >> 8),
      r[31] = uint8_t(lease);
      std::memset(r + 32, 0xab, 16);  // ServiceKey
    });
  };
  const uint16_t owner = c[1].lid, other = c[2].lid;
  auto listed = [&](bool trusted) {
    auto req = request(kMethodGetTable, kSaServiceRecord, 0);
    return ask(fx, trusted ? keyed(req) : req, other).records;
  };
  ASSERT_EQ(ask(fx, svc(kMethodSet), owner).status, 0);
  ASSERT_EQ(fx.agent.services().size(), 1u);
  EXPECT_EQ(fx.agent.services()[0].owner, c[1].guid.value);
  // The ServiceKey: only a trusted request sees it.
  const auto plain = listed(false), full = listed(true);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_TRUE(
      std::all_of(plain[0].begin() + 32, plain[0].begin() + 48, [](uint8_t b) { return b == 0; }));
  ASSERT_EQ(full.size(), 1u);
  EXPECT_EQ(plain[0][48], full[0][48]);
  EXPECT_EQ(full[0][40], 0xab);
  // Another port: neither a Set over it nor a Delete.
  EXPECT_EQ(ask(fx, svc(kMethodSet, 5), other).status, kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, svc(kMethodDelete), other).status, kSaStatusReqInvalid);
  ASSERT_EQ(fx.agent.services().size(), 1u);
  EXPECT_EQ(fx.agent.services()[0].expires_s, INT64_MAX) << "the lease is the owner's";
  // A trusted request from another port may change it; it stays the owner's.
  EXPECT_EQ(ask(fx, keyed(svc(kMethodSet, 50)), other).status, 0);
  EXPECT_EQ(fx.agent.services()[0].owner, c[1].guid.value);
  // The owner renews it; a trusted request from another port deletes it.
  EXPECT_EQ(ask(fx, svc(kMethodSet), owner).status, 0);
  EXPECT_EQ(ask(fx, keyed(svc(kMethodDelete)), other).status, 0);
  EXPECT_TRUE(fx.agent.services().empty());
  EXPECT_EQ(ask(fx, svc(kMethodDelete), owner).status, kSaStatusNoRecords);

  // The owner is state: after a restart the other port still may not delete it.
  ASSERT_EQ(ask(fx, svc(kMethodSet), owner).status, 0);
  SaAgent back;
  const std::string text = fx.agent.records_text(0, 1000);
  ASSERT_TRUE(back.restore_records(text, "sa-records", 0, 1000));
  ASSERT_EQ(back.services().size(), 1u);
  EXPECT_EQ(back.services()[0].owner, c[1].guid.value);
  // An untrusted Get by ServiceKey matches the key held, and still does not show it.
  auto by_key = [&](uint8_t k) {
    return ask(fx,
               request(kMethodGetTable, kSaServiceRecord, bit(5),
                       [&](uint8_t* r) { std::memset(r + 32, k, 16); }),
               other)
        .records;
  };
  const auto found = by_key(0xab);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0][40], 0);
  EXPECT_TRUE(by_key(0).empty());
  // A document from before owners were kept: anyone may; a bad owner is named.
  std::string old = text;
  const auto at = old.find("\"owner\"");
  ASSERT_NE(at, std::string::npos) << text;
  std::string bad = old;
  bad.replace(at, 7, "\"owner\": \"toaster\", \"x\"");
  auto r = back.restore_records(bad, "sa-records", 0, 1000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "sa-records: service 1: owner: not a port GUID");
  old.replace(at, 7, "\"x\"");
  ASSERT_TRUE(back.restore_records(old, "sa-records", 0, 1000));
  EXPECT_EQ(back.services()[0].owner, 0u);
  // A port that registered a service for another port leaves: the service stays (its
  // ServiceGID's port is there), nobody's now.
  auto for_c1 = request(kMethodSet, kSaServiceRecord, bit(0) | bit(1), [&](uint8_t* r) {
    put64(r, 0x7000);
    put64(r + 8, kDefaultSubnetPrefix);
    put64(r + 16, c[1].guid.value);
    r[28] = r[29] = r[30] = r[31] = 0xff;
  });
  ASSERT_EQ(ask(fx, for_c1, other).status, 0);
  ASSERT_EQ(fx.agent.services().size(), 2u);
  fx.agent.forget_ports([&](uint64_t g) { return g != c[2].guid.value; });
  ASSERT_EQ(fx.agent.services().size(), 2u);
  EXPECT_EQ(fx.agent.services()[0].owner, c[1].guid.value);
  EXPECT_EQ(fx.agent.services()[1].owner, 0u);
}

// The security traps (256-259) are for trusted subscribers: an untrusted InformInfo for
// one is refused, and an untrusted subscription to every trap does not hear them.
TEST(SaKeys, SecurityTrapsReachTrustedSubscribersOnly) {
  Fixture fx("ft2:leaves=2,spines=1,hosts=2");
  const auto c = fx.cas();
  const uint16_t host = c[1].lid;
  EXPECT_EQ(ask(fx, inform(256), host).status, kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, inform(259, true, 10), host).status, kSaStatusReqInvalid);
  EXPECT_EQ(ask(fx, keyed(inform(256, true, 11)), host).status, 0);
  EXPECT_EQ(ask(fx, inform(0xffff, true, 12), host).status, 0);
  EXPECT_EQ(ask(fx, keyed(inform(0xffff, true, 13)), host).status, 0);
  ASSERT_EQ(fx.agent.subscriptions().size(), 3u);
  const auto sw = switches(fx);
  const SaContext ctx = fx.ctx();
  using Q = std::vector<uint32_t>;
  EXPECT_EQ(heard(fx.agent, device_notice(true, 0, 1, 256, sw[0].first, sw[0].second), ctx),
            (Q{11, 13}));
  EXPECT_EQ(heard(fx.agent, device_notice(true, 1, 2, 128, sw[0].first, sw[0].second), ctx),
            (Q{12, 13}));
  // Subscribing again with the key makes the same subscription trusted.
  EXPECT_EQ(ask(fx, keyed(inform(0xffff, true, 12)), host).status, 0);
  ASSERT_EQ(fx.agent.subscriptions().size(), 3u);
  EXPECT_EQ(heard(fx.agent, device_notice(true, 0, 1, 256, sw[0].first, sw[0].second), ctx),
            (Q{11, 12, 13}));
  // Whether a subscription is trusted is state too.
  SaAgent back;
  ASSERT_TRUE(back.restore_records(fx.agent.records_text(0, 1000), "sa-records", 0, 1000));
  EXPECT_EQ(heard(back, device_notice(true, 0, 1, 256, sw[0].first, sw[0].second), ctx),
            (Q{11, 12, 13}));
}
