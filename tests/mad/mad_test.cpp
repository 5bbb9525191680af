// Golden bytes from the IBTA layouts (vol 1, 13.4.3 MAD header, 14.2.1.2
// directed-route SMP, 14.2.5 SMP attributes). The simulator shares this codec,
// so only bytes written down here independently can catch a bug that would be
// wrong on both sides.
#include <gtest/gtest.h>

#include <infiniband/mad.h>

#include <algorithm>
#include <random>

#include "weft/mad/mad.hpp"

using namespace weft;
using namespace weft::mad;

namespace {
uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
uint64_t be64(const uint8_t* p) {
  return uint64_t(be32(p)) << 32 | be32(p + 4);
}
}  // namespace

TEST(MadCodec, DirectedRouteGetHeader) {
  DrPath path = DrPath{}.extended(1).extended(5).extended(17);
  MadBuf b = encode_smp(SmpRequest::get(kAttrPortInfo, 3, path), 0x1122334455667788ull);
  EXPECT_EQ(b[0], 1);                             // BaseVersion
  EXPECT_EQ(b[1], 0x81);                          // MgmtClass: directed-route SMP
  EXPECT_EQ(b[2], 1);                             // ClassVersion
  EXPECT_EQ(b[3], 0x01);                          // R=0, Method=Get
  EXPECT_EQ(be16(&b[4]), 0);                      // D=0, Status=0
  EXPECT_EQ(b[6], 0);                             // HopPointer
  EXPECT_EQ(b[7], 3);                             // HopCount
  EXPECT_EQ(be64(&b[8]), 0x1122334455667788ull);  // TransactionID
  EXPECT_EQ(be16(&b[16]), 0x0015);                // AttributeID: PortInfo
  EXPECT_EQ(be32(&b[20]), 3u);                    // AttributeModifier
  EXPECT_EQ(be64(&b[24]), 0u);                    // M_Key
  EXPECT_EQ(be16(&b[32]), 0xFFFF);                // DrSLID: permissive
  EXPECT_EQ(be16(&b[34]), 0xFFFF);                // DrDLID: permissive
  EXPECT_EQ(b[128], 0);                           // InitialPath[0] unused
  EXPECT_EQ(b[129], 1);
  EXPECT_EQ(b[130], 5);
  EXPECT_EQ(b[131], 17);
  EXPECT_EQ(b[192 + 1], 0);  // ReturnPath untouched
  // A request with a key carries it at bytes 24-31, and decoding gives it back.
  SmpRequest keyed = SmpRequest::get(kAttrPortInfo, 3, path);
  keyed.m_key = 0x0102030405060708ull;
  b = encode_smp(keyed, 1);
  EXPECT_EQ(be64(&b[24]), 0x0102030405060708ull);
  EXPECT_EQ(decode_smp(b.data(), b.size())->m_key, 0x0102030405060708ull);
}

TEST(MadCodec, LidRoutedSetCarriesData) {
  SmpRequest r;
  r.method = kMethodSet;
  r.attr_id = kAttrLft;
  r.attr_mod = 7;
  r.directed = false;
  r.dlid = Lid{12};
  r.data[0] = 0xAB;
  r.data[63] = 0xCD;
  MadBuf b = encode_smp(r, 42);
  EXPECT_EQ(b[1], 0x01);  // LID-routed SMP
  EXPECT_EQ(b[3], 0x02);  // Set
  EXPECT_EQ(be16(&b[16]), 0x0019);
  EXPECT_EQ(be32(&b[20]), 7u);
  EXPECT_EQ(b[64], 0xAB);  // SMP data: bytes 64..127
  EXPECT_EQ(b[127], 0xCD);
  EXPECT_EQ(b[128], 0);
}

TEST(MadCodec, DecodesAResponseWithDirectionBitAndStatus) {
  MadBuf b{};
  b[0] = 1;
  b[1] = 0x81;
  b[2] = 1;
  b[3] = 0x81;                 // R=1, Method=GetResp
  b[4] = 0x80 | 0x00;          // D=1
  b[5] = 0x1C;                 // Status: invalid attribute value
  b[6] = 2;                    // HopPointer
  b[7] = 2;                    // HopCount
  b[15] = 9;                   // TID low byte
  b[16] = 0x00, b[17] = 0x11;  // NodeInfo
  b[23] = 1;
  b[129] = 4, b[130] = 6;  // initial path
  b[193] = 3, b[194] = 1;  // return path
  b[64] = 0x5A;
  auto s = decode_smp(b.data(), b.size());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->is_response());
  EXPECT_EQ(s->method, kMethodGetResp);
  EXPECT_TRUE(s->direction);
  EXPECT_EQ(s->status, 0x1C);
  EXPECT_EQ(s->hop_ptr, 2);
  EXPECT_EQ(s->hop_count, 2);
  EXPECT_EQ(s->tid, 9u);
  EXPECT_EQ(s->attr_id, kAttrNodeInfo);
  EXPECT_EQ(s->attr_mod, 1u);
  EXPECT_EQ(s->path.str(), "0,4,6");
  EXPECT_EQ(s->return_path.str(), "0,3,1");
  EXPECT_EQ(s->data[0], 0x5A);
}

// The headers are coded by hand at fixed offsets: libibmad's field tables referee them,
// both ways, on random SMPs of both classes.
TEST(MadCodec, HeadersAgreeWithLibibmadsFieldTablesBothWays) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    Smp s;
    s.mgmt_class = (i % 2) ? kClassSmiDirect : kClassSmiLid;
    s.method = static_cast<uint8_t>(rng());
    s.status = static_cast<uint16_t>(rng()) & (s.mgmt_class == kClassSmiDirect ? 0x7FFF : 0xFFFF);
    s.direction = s.mgmt_class == kClassSmiDirect && (rng() & 1);
    s.tid = rng();
    s.m_key = rng();
    s.attr_id = static_cast<uint16_t>(rng());
    s.attr_mod = static_cast<uint32_t>(rng());
    for (auto& b : s.data) b = static_cast<uint8_t>(rng());
    if (s.mgmt_class == kClassSmiDirect) {
      s.hop_count = static_cast<uint8_t>(rng() % 64);
      s.hop_ptr = static_cast<uint8_t>(rng());
      s.dr_slid = Lid{static_cast<uint16_t>(rng())};
      s.path.hops = s.return_path.hops = s.hop_count;
      for (uint8_t h = 1; h <= s.hop_count; ++h) {
        s.path.ports[h] = static_cast<uint8_t>(rng());
        s.return_path.ports[h] = static_cast<uint8_t>(rng());
      }
    }
    MadBuf b = encode_smp(s);
    uint8_t* p = b.data();
    ASSERT_EQ(mad_get_field(p, 0, IB_MAD_BASEVER_F), 1u);
    ASSERT_EQ(mad_get_field(p, 0, IB_MAD_MGMTCLASS_F), s.mgmt_class);
    ASSERT_EQ(mad_get_field(p, 0, IB_MAD_CLASSVER_F), 1u);
    ASSERT_EQ(mad_get_field(p, 0, IB_MAD_METHOD_F), s.method & 0x7Fu);
    ASSERT_EQ(mad_get_field(p, 0, IB_MAD_RESPONSE_F), s.is_response() ? 1u : 0u);
    ASSERT_EQ(mad_get_field64(p, 0, IB_MAD_TRID_F), s.tid);
    ASSERT_EQ(mad_get_field64(p, 0, IB_MAD_MKEY_F), s.m_key);
    ASSERT_EQ(mad_get_field(p, 0, IB_MAD_ATTRID_F), s.attr_id);
    ASSERT_EQ(mad_get_field(p, 0, IB_MAD_ATTRMOD_F), s.attr_mod);
    ASSERT_TRUE(std::equal(s.data.begin(), s.data.end(), p + IB_SMP_DATA_OFFS));
    if (s.mgmt_class == kClassSmiDirect) {
      ASSERT_EQ(mad_get_field(p, 0, IB_DRSMP_STATUS_F), s.status);
      ASSERT_EQ(mad_get_field(p, 0, IB_DRSMP_DIRECTION_F), s.direction ? 1u : 0u);
      ASSERT_EQ(mad_get_field(p, 0, IB_DRSMP_HOPPTR_F), s.hop_ptr);
      ASSERT_EQ(mad_get_field(p, 0, IB_DRSMP_HOPCNT_F), s.hop_count);
      ASSERT_EQ(mad_get_field(p, 0, IB_DRSMP_DRSLID_F), s.dr_slid.value);
      ASSERT_EQ(mad_get_field(p, 0, IB_DRSMP_DRDLID_F), 0xFFFFu);
      std::array<uint8_t, 64> path{}, rpath{};
      mad_get_array(p, 0, IB_DRSMP_PATH_F, path.data());
      mad_get_array(p, 0, IB_DRSMP_RPATH_F, rpath.data());
      ASSERT_EQ(path, s.path.ports);
      ASSERT_EQ(rpath, s.return_path.ports);
    } else {
      ASSERT_EQ(mad_get_field(p, 0, IB_MAD_STATUS_F), s.status);
    }
    // The other way: the header libibmad writes decodes to the same SMP.
    MadBuf w{};
    uint8_t* q = w.data();
    mad_set_field(q, 0, IB_MAD_BASEVER_F, 1);
    mad_set_field(q, 0, IB_MAD_MGMTCLASS_F, s.mgmt_class);
    mad_set_field(q, 0, IB_MAD_CLASSVER_F, 1);
    mad_set_field(q, 0, IB_MAD_METHOD_F, s.method & 0x7F);
    mad_set_field(q, 0, IB_MAD_RESPONSE_F, s.is_response() ? 1 : 0);
    mad_set_field64(q, 0, IB_MAD_TRID_F, s.tid);
    mad_set_field64(q, 0, IB_MAD_MKEY_F, s.m_key);
    mad_set_field(q, 0, IB_MAD_ATTRID_F, s.attr_id);
    mad_set_field(q, 0, IB_MAD_ATTRMOD_F, s.attr_mod);
    std::copy(s.data.begin(), s.data.end(), q + IB_SMP_DATA_OFFS);
    if (s.mgmt_class == kClassSmiDirect) {
      mad_set_field(q, 0, IB_DRSMP_STATUS_F, s.status);
      mad_set_field(q, 0, IB_DRSMP_DIRECTION_F, s.direction ? 1 : 0);
      mad_set_field(q, 0, IB_DRSMP_HOPPTR_F, s.hop_ptr);
      mad_set_field(q, 0, IB_DRSMP_HOPCNT_F, s.hop_count);
      mad_set_field(q, 0, IB_DRSMP_DRSLID_F, s.dr_slid.value);
      mad_set_array(q, 0, IB_DRSMP_PATH_F, s.path.ports.data());
      mad_set_array(q, 0, IB_DRSMP_RPATH_F, s.return_path.ports.data());
    } else {
      mad_set_field(q, 0, IB_MAD_STATUS_F, s.status);
    }
    auto d = decode_smp(q, w.size());
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->method, s.method);
    EXPECT_EQ(d->status, s.status);
    EXPECT_EQ(d->direction, s.direction);
    EXPECT_EQ(d->tid, s.tid);
    EXPECT_EQ(d->m_key, s.m_key);
    EXPECT_EQ(d->attr_id, s.attr_id);
    EXPECT_EQ(d->attr_mod, s.attr_mod);
    EXPECT_EQ(d->data, s.data);
    if (s.mgmt_class == kClassSmiDirect) {
      EXPECT_EQ(d->hop_ptr, s.hop_ptr);
      EXPECT_EQ(d->hop_count, s.hop_count);
      EXPECT_EQ(d->dr_slid, s.dr_slid);
      EXPECT_EQ(d->path.ports, s.path.ports);
      EXPECT_EQ(d->return_path.ports, s.return_path.ports);
    }
  }
}

TEST(MadCodec, RefusesWhatIsNotAnSmp) {
  MadBuf b{};
  b[0] = 1, b[1] = 0x81, b[2] = 1, b[3] = 0x81;
  EXPECT_TRUE(decode_smp(b.data(), b.size()));
  EXPECT_FALSE(decode_smp(b.data(), 100));  // truncated
  MadBuf v = b;
  v[0] = 2;
  EXPECT_FALSE(decode_smp(v.data(), v.size()));  // base version
  v = b;
  v[1] = 0x03;
  EXPECT_FALSE(decode_smp(v.data(), v.size()));  // SA class
  v = b;
  v[2] = 2;
  EXPECT_FALSE(decode_smp(v.data(), v.size()));  // class version
  v = b;
  v[7] = 64;
  EXPECT_FALSE(decode_smp(v.data(), v.size()));  // hop count > 63
}

TEST(MadCodec, NodeInfoLayout) {
  SmpData d{};
  d[0] = 1, d[1] = 1, d[2] = 2, d[3] = 36;  // base/class version, Switch, 36 ports
  for (int i = 0; i < 8; ++i) d[4 + i] = 0x10 + i, d[12 + i] = 0x20 + i, d[20 + i] = 0x30 + i;
  d[28] = 0x00, d[29] = 0x40;                     // PartitionCap 64
  d[30] = 0xC7, d[31] = 0x38;                     // DeviceID
  d[32] = 0, d[33] = 0, d[34] = 0, d[35] = 0xA1;  // Revision
  d[36] = 7;                                      // LocalPortNum
  d[37] = 0x00, d[38] = 0x02, d[39] = 0xC9;       // VendorID
  auto n = decode_node_info(d);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->type, fabric::NodeType::kSwitch);
  EXPECT_EQ(n->num_ports, 36);
  EXPECT_EQ(n->system_guid.value, 0x1011121314151617ull);
  EXPECT_EQ(n->node_guid.value, 0x2021222324252627ull);
  EXPECT_EQ(n->port_guid.value, 0x3031323334353637ull);
  EXPECT_EQ(n->partition_cap, 64);
  EXPECT_EQ(n->device_id, 0xC738);
  EXPECT_EQ(n->revision, 0xA1u);
  EXPECT_EQ(n->local_port, 7);
  EXPECT_EQ(n->vendor_id, 0x0002C9u);
  EXPECT_EQ(encode_node_info(*n), d);
  // Values outside the IBTA ranges are refused, not trusted.
  SmpData bad = d;
  bad[2] = 9;
  EXPECT_FALSE(decode_node_info(bad));
  bad = d;
  bad[3] = 0;
  EXPECT_FALSE(decode_node_info(bad));
  bad = d;
  bad[36] = 37;
  EXPECT_FALSE(decode_node_info(bad));
  bad = d;
  for (int i = 12; i < 20; ++i) bad[i] = 0;
  EXPECT_FALSE(decode_node_info(bad));
}

TEST(MadCodec, PortInfoLayout) {
  PortInfo p;
  p.attrs.lid = Lid{0x1234};
  p.attrs.sm_lid = Lid{0x0001};
  p.attrs.capability_mask = kCapIsSm;
  p.attrs.width_enabled = 2;
  p.attrs.width_supported = 3;
  p.attrs.width_active = 2;
  p.attrs.speed_supported = 7;
  p.attrs.state = fabric::PortState::kArmed;
  p.attrs.phys_state = 5;
  p.attrs.lmc = 2;
  p.attrs.speed_active = 4;
  p.attrs.speed_enabled = 7;
  p.attrs.neighbor_mtu = 5;
  p.attrs.vl_cap = 4;
  p.attrs.mtu_cap = 4;
  p.attrs.oper_vls = 3;
  p.gid_prefix = 0xfe80000000000000ull;
  p.local_port = 9;
  p.subnet_timeout = 18;
  p.m_key = 0x1122334455667788ull;
  p.m_key_lease = 0x0e10;
  p.m_key_protect = 3;
  p.m_key_violations = 0x0102;
  SmpData d = encode_port_info(p);
  EXPECT_EQ(be64(&d[0]), 0x1122334455667788ull);  // M_Key
  EXPECT_EQ(be16(&d[26]), 0x0e10);                // M_KeyLeasePeriod
  EXPECT_EQ(d[34] >> 6, 3);                       // M_KeyProtectBits
  EXPECT_EQ(be16(&d[44]), 0x0102);                // M_KeyViolations
  EXPECT_EQ(be64(&d[8]), 0xfe80000000000000ull);  // GidPrefix
  EXPECT_EQ(be16(&d[16]), 0x1234);                // LID
  EXPECT_EQ(be16(&d[18]), 0x0001);                // MasterSMLID
  EXPECT_EQ(be32(&d[20]), 0x2u);                  // CapabilityMask: IsSM is bit 1
  EXPECT_EQ(d[28], 9);                            // LocalPortNum (after DiagCode, M_KeyLeasePeriod)
  EXPECT_EQ(d[29], 2);                            // LinkWidthEnabled
  EXPECT_EQ(d[30], 3);                            // LinkWidthSupported
  EXPECT_EQ(d[31], 2);                            // LinkWidthActive
  EXPECT_EQ(d[32], 0x73);                         // LinkSpeedSupported | PortState
  EXPECT_EQ(d[33] >> 4, 5);                       // PortPhysicalState
  EXPECT_EQ(d[34] & 0x7, 2);                      // M_KeyProtectBits:2, reserved:3, LMC:3
  EXPECT_EQ(d[35], 0x47);                         // LinkSpeedActive | LinkSpeedEnabled
  EXPECT_EQ(d[36] >> 4, 5);                       // NeighborMTU
  EXPECT_EQ(d[37] >> 4, 4);                       // VLCap
  EXPECT_EQ(d[41] & 0xF, 4);                      // MTUCap
  EXPECT_EQ(d[43] >> 4, 3);                       // OperationalVLs
  EXPECT_EQ(d[51] & 0x1F, 18);                    // SubnetTimeOut
  EXPECT_EQ(d[51] & 0x80, 0);                     // ClientReregister: not asked
  p.client_reregister = true;
  EXPECT_EQ(encode_port_info(p)[51], 0x80 | 18);  // ... asked: the top bit
  EXPECT_TRUE(client_reregister_asked(encode_port_info(p)));
  // A device that echoes the bit does not make a PortInfo sent back ask again.
  PortInfo echoed = decode_port_info(encode_port_info(p));
  EXPECT_FALSE(echoed.client_reregister);
  EXPECT_EQ(encode_port_info(echoed)[51], 18);
  p.client_reregister = false;
  PortInfo back = decode_port_info(d);
  EXPECT_EQ(back.attrs.lid, p.attrs.lid);
  EXPECT_EQ(back.attrs.state, fabric::PortState::kArmed);
  EXPECT_EQ(back.attrs.oper_vls, 3);
  EXPECT_EQ(back.attrs.lmc, 2);
  EXPECT_EQ(back.subnet_timeout, 18);
  EXPECT_EQ(back.m_key, p.m_key);
  EXPECT_EQ(back.m_key_lease, p.m_key_lease);
  EXPECT_EQ(back.m_key_protect, 3);
  EXPECT_EQ(back.m_key_violations, 0x0102);
  // A Set changes the named fields and leaves the rest of the raw image alone.
  SmpData raw{};
  raw[42] = 0xE7;  // VLStallCount / HOQLife: not modelled
  PortInfo q = decode_port_info(raw);
  q.attrs.lid = Lid{5};
  SmpData out = encode_port_info(q);
  EXPECT_EQ(out[42], 0xE7);
  EXPECT_EQ(be16(&out[16]), 5);
}

TEST(MadCodec, SwitchInfoLayout) {
  SmpData d{};
  d[0] = 0x78, d[1] = 0x00;      // LinearFDBCap 30720
  d[4] = 0x04, d[5] = 0x00;      // MulticastFDBCap 1024
  d[6] = 0x01, d[7] = 0x2C;      // LinearFDBTop 300
  d[8] = 3;                      // DefaultPort
  d[11] = (17 << 3) | (1 << 2);  // LifeTimeValue 17, PortStateChange
  d[16] = 0x08;                  // EnhancedPort0 (bit 3 of byte 16)
  SwitchInfo s = decode_switch_info(d);
  EXPECT_EQ(s.lft_cap, 30720);
  EXPECT_EQ(s.mft_cap, 1024);
  EXPECT_EQ(s.lft_top, 300);
  EXPECT_EQ(s.default_port, 3);
  EXPECT_EQ(s.lifetime, 17);
  EXPECT_TRUE(s.port_state_change);
  EXPECT_TRUE(s.enhanced_port0);
  s.lft_top = 64;
  s.port_state_change = false;
  SmpData e = encode_switch_info(s);
  EXPECT_EQ(be16(&e[6]), 64);
  EXPECT_EQ(e[11], 17 << 3);
  EXPECT_EQ(e[0], 0x78);
}

TEST(MadCodec, LftBlockIsOneBytePerLid) {
  LftBlock b;
  for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(i + 1);
  SmpData d = encode_lft_block(b);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(d[i], i + 1);
  EXPECT_EQ(decode_lft_block(d), b);
}

TEST(MadCodec, SmInfoLayout) {
  SmInfo s;
  s.guid = Guid{0x0002c90300000001};
  s.sm_key = 0;
  s.act_count = 0x01020304;
  s.priority = 9;
  s.state = SmState::kMaster;
  SmpData d = encode_sm_info(s);
  EXPECT_EQ(be64(&d[0]), 0x0002c90300000001ull);
  EXPECT_EQ(be32(&d[16]), 0x01020304u);
  EXPECT_EQ(d[20], (9 << 4) | 3);  // Priority | SMState
  auto back = decode_sm_info(d);
  EXPECT_EQ(back.state, SmState::kMaster);
  EXPECT_EQ(back.priority, 9);
}

TEST(MadCodec, NodeDescriptionIsSanitised) {
  SmpData d = encode_node_desc("leaf01 HCA-1");
  EXPECT_EQ(d[0], 'l');
  EXPECT_EQ(decode_node_desc(d), "leaf01 HCA-1");
  d[3] = 0x07;  // a control character from a device is not passed on to logs
  EXPECT_EQ(decode_node_desc(d), "lea?01 HCA-1");
  SmpData full;
  full.fill('x');  // no NUL: 64 characters, no overrun
  EXPECT_EQ(decode_node_desc(full).size(), 64u);
}

TEST(MadCodec, RandomBytesNeverCrashTheDecoders) {
  std::mt19937_64 rng(1234);
  int decoded = 0;
  for (int i = 0; i < 50000; ++i) {
    MadBuf b;
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    if (i % 2) b[0] = 1, b[1] = (i % 4 == 1) ? 0x81 : 0x01, b[2] = 1;  // get past the first checks
    auto s = decode_smp(b.data(), b.size());
    if (!s) continue;
    ++decoded;
    EXPECT_LE(s->hop_count, 63);
    (void)decode_node_info(s->data);
    (void)decode_port_info(s->data);
    (void)decode_switch_info(s->data);
    (void)decode_sm_info(s->data);
    EXPECT_LE(decode_node_desc(s->data).size(), 64u);
    EXPECT_EQ(encode_smp(*s)[1], b[1]);
  }
  EXPECT_GT(decoded, 1000);
}

// A PerfMgt Get (IBTA 13.4.3 common header, 16.1.1 PerfMgt header: 40 reserved bytes,
// the attribute at byte 64), and a reply decoded back with its status and data.
TEST(GmpCodec, PerfMgtGetHeaderAndReply) {
  Gmp g;
  g.mgmt_class = 0x04;
  g.method = kMethodGet;
  g.tid = 0x0102030405060708ull;
  g.attr_id = 0x0012;  // PortCounters
  g.attr_mod = 0;
  g.payload[40 + 1] = 7;  // PortSelect
  MadBuf b = encode_gmp(g);
  EXPECT_EQ(b[0], 1);     // BaseVersion
  EXPECT_EQ(b[1], 0x04);  // MgmtClass: PerfMgt
  EXPECT_EQ(b[2], 1);     // ClassVersion
  EXPECT_EQ(b[3], 0x01);  // R=0, Method=Get
  EXPECT_EQ(be16(&b[4]), 0);
  EXPECT_EQ(be64(&b[8]), 0x0102030405060708ull);
  EXPECT_EQ(be16(&b[16]), 0x0012);
  EXPECT_EQ(be32(&b[20]), 0u);
  EXPECT_EQ(b[65], 7);  // PortSelect, in the attribute
  for (int i = 24; i < 64; ++i) EXPECT_EQ(b[i], 0) << "reserved PerfMgt header byte " << i;

  b[3] = 0x81;               // GetResp
  b[4] = 0x00, b[5] = 0x0c;  // status: method/attribute not supported
  auto r = decode_gmp(b.data(), b.size());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->is_response());
  EXPECT_EQ(r->method, kMethodGetResp);
  EXPECT_EQ(r->status, 0x000c);
  EXPECT_EQ(r->tid, 0x0102030405060708ull);
  EXPECT_EQ(r->payload[41], 7);
}

TEST(GmpCodec, RefusesSmpsTheSaAndShortOrForeignMads) {
  Gmp g;
  g.mgmt_class = 0x04;
  MadBuf b = encode_gmp(g);
  EXPECT_FALSE(decode_gmp(b.data(), 255)) << "short";
  for (uint8_t cls : {0x01, 0x81, 0x03}) {
    b[1] = cls;
    auto r = decode_gmp(b.data(), b.size());
    ASSERT_FALSE(r) << int(cls);
    EXPECT_NE(r.error().message.find("not a GMP"), std::string::npos) << r.error().message;
  }
  b[1] = 0x04;
  b[0] = 2;
  auto r = decode_gmp(b.data(), b.size());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("base version 2"), std::string::npos) << r.error().message;
}

TEST(GmpCodec, RandomBytesDecodeOrRefuseAndReencodeTheSame) {
  std::mt19937_64 rng(99);
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    MadBuf b;
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    if (i % 2) b[0] = 1;
    auto g = decode_gmp(b.data(), b.size());
    if (!g) continue;
    ++decoded;
    EXPECT_NE(g->mgmt_class, 0x01);
    EXPECT_NE(g->mgmt_class, 0x81);
    // Everything but ClassSpecific (bytes 6-7) and the reserved bytes 18-19, which
    // no GMP class weft speaks uses, comes back as it was.
    b[6] = b[7] = b[18] = b[19] = 0;
    EXPECT_EQ(encode_gmp(*g), b);
  }
  EXPECT_GT(decoded, 5000);
}
