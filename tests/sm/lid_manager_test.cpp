#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <set>

#include "weft/simulator/generators.hpp"
#include "weft/sm/lid_manager.hpp"

using namespace weft;
using namespace weft::sm;

namespace {

std::string scratch(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("weft-lid-test-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

fabric::Fabric tree() {
  return *simulator::make_fabric("ft2:leaves=3,spines=2,hosts=2");
}

std::map<Guid, uint16_t> lids_of(const fabric::Fabric& f) {
  std::map<Guid, uint16_t> m;
  for (const auto& n : f.nodes()) {
    if (n.is_switch())
      m[n.ports[0].guid] = n.ports[0].attrs.lid.value;
    else
      for (size_t p = 1; p < n.ports.size(); ++p)
        if (n.ports[p].linked()) m[n.ports[p].guid] = n.ports[p].attrs.lid.value;
  }
  return m;
}

}  // namespace

TEST(LidAssignment, DeterministicUniqueAndDense) {
  auto a = tree(), b = tree();
  Guid2Lid da, db;
  auto ra = assign_lids(a, da, 0), rb = assign_lids(b, db, 0);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(lids_of(a), lids_of(b));
  std::set<uint16_t> seen;
  for (auto [g, l] : lids_of(a)) {
    EXPECT_GE(l, 1);
    EXPECT_TRUE(seen.insert(l).second) << "duplicate LID " << l;
  }
  EXPECT_EQ(seen.size(), 11u);  // 6 CAs + 5 switches
  EXPECT_EQ(ra->top, 11);
  EXPECT_EQ(ra->fresh, 11u);
}

TEST(LidAssignment, KeepsValidUniqueLidsTheFabricHolds) {
  auto f = tree();
  // Another SM left LIDs behind: keep them, even sparse ones; a duplicate is renumbered.
  f.node(0).ports[1].attrs.lid = Lid{500};
  f.node(1).ports[1].attrs.lid = Lid{77};
  f.node(2).ports[1].attrs.lid = Lid{77};
  f.node(3).ports[1].attrs.lid = Lid{0xC000};  // multicast range: not a unicast LID
  Guid2Lid db;
  auto r = assign_lids(f, db, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(f.node(0).ports[1].attrs.lid.value, 500);
  EXPECT_EQ(f.node(1).ports[1].attrs.lid.value, 77);
  EXPECT_NE(f.node(2).ports[1].attrs.lid.value, 77);
  EXPECT_NE(f.node(3).ports[1].attrs.lid.value, 0xC000);
  EXPECT_EQ(r->from_fabric, 2u);
  EXPECT_EQ(r->top, 500);
}

TEST(LidAssignment, StateFileWinsAndReservesAbsentPorts) {
  const std::string dir = scratch("file");
  auto f = tree();
  const Guid ca0 = f.node(0).ports[1].guid;
  {
    std::ofstream out(dir + "/guid2lid");
    out << "# carried over from OpenSM\n"
        << ca0.str() << " 0x0040 0x0040\n"
        << "0x0002c9030000ffff 0x0001 0x0001\n";  // a port that is not there today
  }
  f.node(0).ports[1].attrs.lid = Lid{3};  // the fabric says 3, the file says 64
  Guid2Lid db;
  auto w = db.load(dir + "/guid2lid");
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->empty());
  auto r = assign_lids(f, db, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(f.node(0).ports[1].attrs.lid.value, 64);
  for (auto [g, l] : lids_of(f)) EXPECT_NE(l, 1) << "LID 1 is reserved for the absent port";
  ASSERT_TRUE(db.save(dir + "/guid2lid"));
  // The absent port's entry survives the save.
  Guid2Lid again;
  ASSERT_TRUE(again.load(dir + "/guid2lid"));
  EXPECT_EQ(again.entries().at(Guid{0x0002c9030000ffff}).value, 1);
  EXPECT_EQ(again.entries().size(), 12u);
  std::filesystem::remove_all(dir);
}

TEST(LidAssignment, RestartKeepsEveryLid) {
  const std::string dir = scratch("restart");
  auto f = tree();
  Guid2Lid db;
  ASSERT_TRUE(assign_lids(f, db, 0));
  ASSERT_TRUE(db.save(dir + "/guid2lid"));
  const auto before = lids_of(f);
  // A restarted SM on a fabric whose ports lost their LIDs (a power cycle),
  // discovered in a different order.
  auto g = *simulator::make_fabric("ft2:leaves=3,spines=2,hosts=2");
  Guid2Lid db2;
  ASSERT_TRUE(db2.load(dir + "/guid2lid"));
  auto r = assign_lids(g, db2, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(lids_of(g), before);
  EXPECT_EQ(r->from_file, before.size());
  std::filesystem::remove_all(dir);
}

TEST(LidAssignment, LmcAlignsBaseLids) {
  auto f = tree();
  Guid2Lid db;
  auto r = assign_lids(f, db, 2);
  ASSERT_TRUE(r);
  for (auto [g, l] : lids_of(f)) EXPECT_EQ(l % 4, 0) << l;
  EXPECT_FALSE(assign_lids(f, db, 8));
}

TEST(Guid2LidFile, BadLinesAreReportedWithFileAndLine) {
  const std::string dir = scratch("bad");
  {
    std::ofstream out(dir + "/guid2lid");
    out << "0x10 0x0005 0x0005\n"
        << "garbage\n"
        << "0x11 0xC000 0xC000\n"
        << "0x12 0x0005 0x0005\n"
        << "0x0 0x0007\n"
        << "0x13 0x0008 0x0008 extra\n"
        << "0x14 0x0009\n";
  }
  Guid2Lid db;
  auto w = db.load(dir + "/guid2lid");
  ASSERT_TRUE(w);
  ASSERT_EQ(w->size(), 5u);
  EXPECT_NE((*w)[0].find("guid2lid:2:"), std::string::npos) << (*w)[0];
  EXPECT_NE((*w)[1].find("guid2lid:3: bad LID"), std::string::npos) << (*w)[1];
  EXPECT_NE((*w)[2].find("guid2lid:4: LID 5 already given"), std::string::npos) << (*w)[2];
  EXPECT_EQ(db.entries().size(), 2u);  // 0x10 and 0x14 survive
  EXPECT_EQ(db.entries().at(Guid{0x14}).value, 9);
  std::filesystem::remove_all(dir);
}

TEST(Guid2LidFile, SaveFailsCleanlyWhereItCannotWrite) {
  Guid2Lid db;
  db.set(Guid{1}, Lid{1});
  auto r = db.save("/proc/weft-cannot-write-here/guid2lid");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kIo);
}
