// Trap Notices decoded by number, and what each sets off.
#include <gtest/gtest.h>

#include "weft/sm/traps.hpp"

using namespace weft;
using namespace weft::mad;
using namespace weft::sm;

namespace {

SmpData notice(uint16_t number, uint8_t type = 1, uint32_t producer = 2, uint16_t issuer = 7) {
  SmpData d{};
  d[0] = 0x80 | type;
  d[1] = uint8_t(producer >> 16);
  d[2] = uint8_t(producer >> 8);
  d[3] = uint8_t(producer);
  d[4] = uint8_t(number >> 8);
  d[5] = uint8_t(number);
  d[6] = uint8_t(issuer >> 8);
  d[7] = uint8_t(issuer);
  return d;
}

void put16(SmpData& d, size_t at, uint16_t v) {
  d[at] = uint8_t(v >> 8);
  d[at + 1] = uint8_t(v);
}
void put32(SmpData& d, size_t at, uint32_t v) {
  put16(d, at, uint16_t(v >> 16));
  put16(d, at + 2, uint16_t(v));
}
void put64(SmpData& d, size_t at, uint64_t v) {
  put32(d, at, uint32_t(v >> 32));
  put32(d, at + 4, uint32_t(v));
}

}  // namespace

TEST(Traps, LinkStateChangeSweeps) {
  auto d = notice(128);
  put16(d, 10, 33);
  auto t = decode_trap(d);
  EXPECT_TRUE(t.generic);
  EXPECT_EQ(t.number, 128);
  EXPECT_EQ(t.type, 1);
  EXPECT_EQ(t.producer, 2u);
  EXPECT_EQ(t.issuer, Lid{7});
  EXPECT_EQ(t.lid, Lid{33});
  EXPECT_TRUE(t.sweep());
  EXPECT_FALSE(t.security());
  EXPECT_NE(t.describe().find("switch LID 33"), std::string::npos);
}

TEST(Traps, LinkIntegrityIsCountedNotSwept) {
  for (uint16_t n : {129, 130, 131}) {
    auto d = notice(n);
    put16(d, 12, 41);
    d[14] = 9;
    auto t = decode_trap(d);
    EXPECT_EQ(t.lid, Lid{41}) << n;
    EXPECT_EQ(t.port, 9) << n;
    EXPECT_TRUE(t.link_integrity()) << n;
    EXPECT_FALSE(t.sweep()) << n;
    EXPECT_EQ(t.to_json()["port"], 9);
  }
}

TEST(Traps, LocalChangesAndSystemImageGuidSweep) {
  auto d = notice(144, 4, 1);
  put16(d, 12, 12);
  d[15] = 1;
  put32(d, 16, 0x02510a6a);
  put16(d, 20, 0x0008);
  auto t = decode_trap(d);
  EXPECT_EQ(t.lid, Lid{12});
  EXPECT_TRUE(t.local_changes);
  EXPECT_EQ(t.cap_mask, 0x02510a6au);
  EXPECT_EQ(t.change_flags, 0x0008);
  EXPECT_TRUE(t.sweep());
  auto g = notice(145);
  put16(g, 12, 5);
  put64(g, 16, 0x0002c90300001234ull);
  auto s = decode_trap(g);
  EXPECT_EQ(s.lid, Lid{5});
  EXPECT_EQ(s.guid, 0x0002c90300001234ull);
  EXPECT_TRUE(s.sweep());
}

TEST(Traps, KeyViolationsAreSecurityEventsWithTheOffender) {
  auto m = notice(256, 2);
  put16(m, 12, 17);
  m[16] = 0x02;  // Set
  put16(m, 18, 0x0015);
  put32(m, 20, 3);
  put64(m, 24, 0xdeadbeef00000001ull);
  auto t = decode_trap(m);
  EXPECT_TRUE(t.security());
  EXPECT_FALSE(t.sweep());
  EXPECT_EQ(t.lid, Lid{17});
  EXPECT_EQ(t.method, 0x02);
  EXPECT_EQ(t.attr_id, 0x0015);
  EXPECT_EQ(t.attr_mod, 3u);
  EXPECT_EQ(t.key, 0xdeadbeef00000001ull);
  EXPECT_NE(t.describe().find("0xdeadbeef00000001"), std::string::npos);
  EXPECT_FALSE(t.dr_notice);
  // The same by directed route, laid out as the Linux SMAs send it (struct
  // ib_mad_notice_attr, ntc_256): DrSLID at 14, DRNotice | hop count at 32, the
  // return path from 33.
  put16(m, 14, 0xffff);
  m[32] = 0x80 | 3;
  m[33] = 5;
  m[34] = 1;
  m[35] = 12;
  auto dr = decode_trap(m);
  EXPECT_TRUE(dr.dr_notice);
  EXPECT_FALSE(dr.dr_truncated);
  EXPECT_EQ(dr.dr_slid, Lid{0xffff});
  EXPECT_EQ(dr.dr_return.str(), "0,5,1,12");
  EXPECT_EQ(dr.to_json()["return_path"], "0,5,1,12");
  EXPECT_NE(dr.describe().find("return path 0,5,1,12"), std::string::npos);
  m[32] = 0x80 | 0x40 | 63;  // truncated: at most the 30 hops the Notice holds
  EXPECT_EQ(decode_trap(m).dr_return.hops, 30);
  EXPECT_TRUE(decode_trap(m).dr_truncated);
  for (uint16_t n : {257, 258}) {
    auto q = notice(n, 2);
    put16(q, 12, 20);
    put16(q, 14, 21);
    put32(q, 16, 0x8001);
    put32(q, 20, 0x30000055);  // SL 3, QP 0x55
    put32(q, 24, 0x66);
    auto k = decode_trap(q);
    EXPECT_TRUE(k.security()) << n;
    EXPECT_EQ(k.lid, Lid{20});
    EXPECT_EQ(k.lid2, Lid{21});
    EXPECT_EQ(k.key, 0x8001u);
    EXPECT_EQ(k.sl, 3);
    EXPECT_EQ(k.qp1, 0x55u);
    EXPECT_EQ(k.qp2, 0x66u);
  }
  auto sw = notice(259, 2);
  put16(sw, 12, 30);
  put16(sw, 16, 0x7fff);
  sw[60] = 11;
  auto v = decode_trap(sw);
  EXPECT_TRUE(v.security());
  EXPECT_EQ(v.key, 0x7fffu);
  EXPECT_EQ(v.port, 11);
}

TEST(Traps, VendorAndUnknownTrapsNeitherSweepNorAlarm) {
  SmpData d{};
  d[0] = 0x01;  // not generic
  d[1] = 0x00;
  d[2] = 0x02;
  d[3] = 0xc9;  // Mellanox's vendor ID
  d[4] = 0x12;
  d[5] = 0x34;
  auto t = decode_trap(d);
  EXPECT_FALSE(t.generic);
  EXPECT_EQ(t.vendor, 0x0002c9u);
  EXPECT_FALSE(t.sweep());
  EXPECT_FALSE(t.security());
  EXPECT_FALSE(decode_trap(notice(999)).sweep());
  EXPECT_FALSE(decode_trap(notice(64)).sweep());
}
