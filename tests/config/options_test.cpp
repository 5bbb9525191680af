#include <gtest/gtest.h>

#include "weft/config/options.hpp"

using namespace weft;
using namespace weft::config;

TEST(Options, DefaultsFollowTheTable) {
  Values v = defaults();
  EXPECT_EQ(v.get_int("max_wire_smps"), 64);
  EXPECT_EQ(v.get_int("transaction_timeout"), 200);
  EXPECT_EQ(v.get_str("routing_engine"), "minhop");
  EXPECT_EQ(v.origin("lmc"), "default");
}

TEST(Options, ReadsOpenSmStyleFiles) {
  Values v = defaults();
  auto r = load_text(
      "# weft.conf\n\n  max_wire_smps   64   # more on the wire\ntransaction_timeout 50\nlog_file "
      "(null)\n",
      "weft.conf", v);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(v.get_int("max_wire_smps"), 64);
  EXPECT_EQ(v.get_int("transaction_timeout"), 50);
  EXPECT_EQ(v.get_str("log_file"), "");
  EXPECT_EQ(v.origin("max_wire_smps"), "weft.conf:3");
}

TEST(Options, ErrorsNameFileLineAndWhat) {
  Values v = defaults();
  EXPECT_EQ(load_text("max_wire_smps 16\nno_such_option 1\n", "a.conf", v).error().message,
            "a.conf:2: unknown option \"no_such_option\"");
  EXPECT_EQ(load_text("lmc 9\n", "a.conf", v).error().message, "a.conf:1: lmc = 9 is outside 0..7");
  EXPECT_EQ(load_text("lmc x\n", "a.conf", v).error().message,
            "a.conf:1: lmc wants an integer, got \"x\"");
  EXPECT_EQ(load_text("sweep_interval\n", "a.conf", v).error().message,
            "a.conf:1: \"sweep_interval\" has no value");
  EXPECT_EQ(load_text("lmc 1 2\n", "a.conf", v).error().message,
            "a.conf:1: unexpected \"2\" after lmc 1");
  EXPECT_NE(
      load_text("guid zz\n", "a.conf", v).error().message.find("a.conf:1: guid wants a number"),
      std::string::npos);
  EXPECT_EQ(load_file("/no/such/weft.conf", v).error().code, Errc::kIo);
}
