// The one table of lane rates: a link's nominal, exact signalling and data rates.
#include <gtest/gtest.h>

#include "weft/fabric/fabric.hpp"

using namespace weft::fabric;

namespace {

PortAttrs port(uint8_t width, uint8_t speed, uint8_t ext = 0) {
  PortAttrs a;
  a.width_active = width;
  a.speed_active = speed;
  a.speed_ext_active = ext;
  return a;
}

}  // namespace

TEST(LinkRate, EachSpeedAndWidthAsIbtaNamesThem) {
  // 4x QDR: 40 named, 40 on the wire, 32 of data (8b/10b).
  EXPECT_DOUBLE_EQ(link_gbps(port(2, 4)), 40);
  EXPECT_DOUBLE_EQ(signalling_gbps(port(2, 4)), 40);
  EXPECT_DOUBLE_EQ(data_gbps(port(2, 4)), 32);
  // 4x FDR (extended speed wins over LinkSpeedActive): 56, 56.25, 54.55 (64b/66b).
  EXPECT_DOUBLE_EQ(link_gbps(port(2, 4, 1)), 56);
  EXPECT_DOUBLE_EQ(signalling_gbps(port(2, 4, 1)), 56.25);
  EXPECT_NEAR(data_gbps(port(2, 4, 1)), 54.545, 0.001);
  // 4x EDR, 2x HDR, 8x NDR, 12x SDR, 1x DDR.
  EXPECT_DOUBLE_EQ(link_gbps(port(2, 0, 2)), 100);
  EXPECT_DOUBLE_EQ(signalling_gbps(port(2, 0, 2)), 103.125);
  EXPECT_DOUBLE_EQ(data_gbps(port(2, 0, 2)), 100);
  EXPECT_DOUBLE_EQ(link_gbps(port(16, 0, 4)), 100);
  EXPECT_DOUBLE_EQ(signalling_gbps(port(16, 0, 4)), 106.25);
  EXPECT_DOUBLE_EQ(link_gbps(port(4, 0, 8)), 800);
  EXPECT_DOUBLE_EQ(data_gbps(port(8, 1)), 24);
  EXPECT_DOUBLE_EQ(link_gbps(port(1, 2)), 5);
}

TEST(LinkRate, APortThatSaysNothing) {
  // The SA's path rate needs a rate: 1x SDR. What is shown and computed from data: 0.
  EXPECT_DOUBLE_EQ(link_gbps(port(0, 0)), 2.5);
  EXPECT_DOUBLE_EQ(link_gbps(port(2, 0)), 10);
  EXPECT_DOUBLE_EQ(signalling_gbps(port(0, 0)), 0);
  EXPECT_DOUBLE_EQ(data_gbps(port(2, 0)), 0);
  EXPECT_DOUBLE_EQ(data_gbps(port(0, 4)), 0);
}
