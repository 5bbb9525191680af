// The trap book: holdoff per trapping LID, and a port flapping from the change that reaches
// the threshold within the window until a window passes without one.
#include "weft/sm/trap_book.hpp"

#include <gtest/gtest.h>

using namespace weft;
using namespace weft::sm;
using std::chrono::seconds;

TEST(TrapBook, HoldsATrapWithinTheHoldoffOfItsLidsLastSweep) {
  TrapBook book;
  const mad::TimePoint t0 = seconds(100);
  EXPECT_FALSE(book.hold(5, t0, seconds(1)));
  EXPECT_TRUE(book.hold(5, t0 + std::chrono::milliseconds(500), seconds(1)));
  EXPECT_FALSE(book.hold(6, t0 + std::chrono::milliseconds(500), seconds(1))) << "another LID";
  EXPECT_FALSE(book.hold(5, t0 + seconds(2), seconds(1)));
  EXPECT_TRUE(book.hold(5, t0 + seconds(2), seconds(1)));
}

TEST(TrapBook, APortFlapsFromTheThresholdAndCalmsAfterAQuietWindow) {
  TrapBook book;
  const TrapBook::PortKey key{0x10, 3};
  const auto window = seconds(60);
  for (int i = 0; i < 2; ++i)
    EXPECT_FALSE(book.link_changed(key, seconds(10 * i), 3, window).started);
  // Three within the window: flapping, once.
  auto f = book.link_changed(key, seconds(20), 3, window);
  EXPECT_TRUE(f.started);
  EXPECT_EQ(f.changes, 3u);
  EXPECT_FALSE(book.link_changed(key, seconds(30), 3, window).started);
  EXPECT_EQ(book.flapping().count(key), 1u);
  EXPECT_TRUE(book.calmed(seconds(80), window).empty()) << "the change at 30 s is within 60 s";
  EXPECT_EQ(book.calmed(seconds(91), window), std::vector<TrapBook::PortKey>{key});
  EXPECT_TRUE(book.flapping().empty());
  // Changes spread wider than the window never reach the threshold.
  for (int i = 0; i < 5; ++i)
    EXPECT_FALSE(book.link_changed({0x11, 1}, seconds(1000 + 61 * i), 3, window).started);
  book.count(128);
  book.count(128);
  book.count(0);
  EXPECT_EQ(book.counts().at(128), 2u);
  EXPECT_EQ(book.port_error(7, 1), 1u);
  EXPECT_EQ(book.port_error(7, 1), 2u);
  EXPECT_EQ(book.port_error(7, 2), 1u);
}
