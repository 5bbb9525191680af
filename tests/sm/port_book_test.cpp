// The port book: why each switch port is kept down, typed, and its text read back from the
// ports-down document as weft (or an older weft) wrote it.
#include "weft/sm/port_book.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "weft/sm/documents.hpp"
#include "weft/store/state_dir.hpp"

using namespace weft;
using namespace weft::sm;

namespace {

struct Dir {
  std::string path =
      (std::filesystem::temp_directory_path() / ("weft-portbook-" + std::to_string(getpid()) + "-" +
                                                 std::to_string(reinterpret_cast<uintptr_t>(this))))
          .string();
  Dir() { std::filesystem::create_directories(path); }
  ~Dir() { std::filesystem::remove_all(path); }
  std::shared_ptr<store::StateStore> store() const {
    return store::directory_store(path, state_documents());
  }
};

}  // namespace

TEST(DownCause, TextAndParseAreInverses) {
  const auto flap = DownCause::flapping(6, 60);
  EXPECT_EQ(flap.text(), "6 link changes within 60 s");
  EXPECT_EQ(DownCause::parse(flap.text()), flap);
  const auto sick =
      DownCause::unhealthy(0x0002c90300001001ull, 7, "SymbolErrorCounter 12 within 3600 s");
  EXPECT_EQ(sick.text(), "unhealthy 0x0002c90300001001/7: SymbolErrorCounter 12 within 3600 s");
  EXPECT_EQ(DownCause::parse(sick.text()), sick);
  // Anything else (an admin's note, a damaged line) stays as it was written.
  for (const char* t : {"maintenance", "unhealthy 0xZZ/1: x", "unhealthy 0x1/300: x",
                        "6 link changes within 60", "x link changes within 60 s", ""}) {
    const auto c = DownCause::parse(t);
    EXPECT_EQ(c.kind, DownCause::Kind::kOther) << t;
    EXPECT_EQ(c.text(), t);
  }
}

TEST(PortBook, KeepsCausesOnDiskAndReleasesOnlyWhatIsolateLeftForAMark) {
  Dir d;
  {
    PortBook book(d.store());
    ASSERT_TRUE(book.load());
    EXPECT_EQ(book.keep_down({0x10, 1}, DownCause::flapping(6, 60), 100), true);
    EXPECT_EQ(book.keep_down({0x10, 1}, DownCause::flapping(9, 60), 200), false);
    EXPECT_EQ(book.keep_down({0x10, 2}, DownCause::unhealthy(0x20, 1, "LinkDownedCounter 3"), 300),
              true);
    EXPECT_EQ(book.keep_down({0x11, 4}, DownCause::unhealthy(0x21, 1, "x"), 300), true);
  }
  PortBook book(d.store());
  ASSERT_TRUE(book.load());
  ASSERT_EQ(book.down().size(), 3u);
  EXPECT_EQ(book.down().at({0x10, 1}).cause, DownCause::flapping(6, 60));
  EXPECT_EQ(book.down().at({0x10, 1}).since_unix_s, 100);
  EXPECT_EQ(book.isolating(0x20, 1), (std::vector<SwitchPort>{{0x10, 2}}));
  EXPECT_TRUE(book.isolating(0x20, 2).empty());
  EXPECT_TRUE(book.isolating(0x10, 1).empty()) << "a flapping port is no unhealthy mark";
  auto was = book.release({0x10, 2});
  ASSERT_TRUE(was);
  EXPECT_EQ(was->cause.marked, (SwitchPort{0x20, 1}));
  EXPECT_TRUE(book.released().count({0x10, 2}));
  EXPECT_FALSE(book.release({0x10, 2}));
  PortBook again(d.store());
  ASSERT_TRUE(again.load());
  EXPECT_EQ(again.down().size(), 2u);
  EXPECT_FALSE(again.contains({0x10, 2}));
}

TEST(PortBook, ReadsTheDocumentAsAnOlderWeftWroteIt) {
  Dir d;
  std::ofstream(d.path + "/ports-down")
      << "# switch ports weft keeps disabled: 0xGUID PORT SINCE(unix s) REASON\n"
         "0x0002c90300002001 3 1700000000 6 link changes within 60 s\n"
         "0x0002c90300002002 5 1700000001 unhealthy 0x0002c90300001001/1: SymbolErrorCounter 12 "
         "within 3600 s (threshold 10)\n"
         "0x0002c90300002003 0 1700000002 port 0 is no link\n"
         "0x0002c90300002004 6 1700000003 drained for maintenance\n";
  PortBook book(d.store());
  ASSERT_TRUE(book.load());
  ASSERT_EQ(book.down().size(), 3u);
  EXPECT_EQ(book.down().at({0x0002c90300002001ull, 3}).cause.kind, DownCause::Kind::kFlapping);
  EXPECT_EQ(book.isolating(0x0002c90300001001ull, 1),
            (std::vector<SwitchPort>{{0x0002c90300002002ull, 5}}));
  EXPECT_EQ(book.down().at({0x0002c90300002004ull, 6}).cause.text(), "drained for maintenance");
}
