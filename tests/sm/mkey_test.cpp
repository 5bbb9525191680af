// M_Key book: the derivation, the key an SMP carries (by what is known of its route),
// and OpenSM's guid2mkey and neighbors files.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <random>

#include "weft/sm/mkey.hpp"

using namespace weft;
using namespace weft::mad;
using namespace weft::sm;

namespace {

class Dir {
 public:
  Dir() {
    static int n = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("weft-mkeybook-" + std::to_string(getpid()) + "-" + std::to_string(n++)))
                .string();
    std::filesystem::create_directories(path_);
  }
  ~Dir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ + "/" + name) << text;
  }

 private:
  std::string path_;
};

// A reply carrying `d` (the engine hands the book decoded replies).
Smp reply(const SmpData& d) {
  Smp s;
  s.method = kMethodGetResp;
  s.data = d;
  return s;
}

SmpData node_info(Guid port, fabric::NodeType type) {
  NodeInfo ni;
  ni.type = type;
  ni.num_ports = type == fabric::NodeType::kSwitch ? 8 : 1;
  ni.node_guid = ni.port_guid = port;
  ni.system_guid = port;
  ni.local_port = 1;
  return encode_node_info(ni);
}

}  // namespace

TEST(MKeyBook, DerivedKeysDifferPerPortAndSecretAndAreNeverZero) {
  const Guid a{0x0002c90300001000}, b{0x0002c90300001001};
  EXPECT_EQ(derive_m_key(7, a), derive_m_key(7, a));
  EXPECT_NE(derive_m_key(7, a), derive_m_key(7, b));
  EXPECT_NE(derive_m_key(7, a), derive_m_key(8, a));
  EXPECT_NE(derive_m_key(7, a), 7u);
  for (uint64_t g = 1; g < 2000; ++g) EXPECT_NE(derive_m_key(g, Guid{g}), 0u);
  MKeyOptions shared{.m_key = 0x55};
  EXPECT_EQ(shared.key_of(a), 0x55u);
  MKeyOptions per{.m_key = 0x55, .per_port = true};
  EXPECT_EQ(per.key_of(a), derive_m_key(0x55, a));
  EXPECT_EQ(MKeyOptions{}.key_of(a), 0u);
}

TEST(MKeyBook, ReadsOpenSmsFilesAndNamesWhatItSkips) {
  Dir dir;
  // As OpenSM's osm_db writes them: "0x%016" PRIx64 " 0x%016" PRIx64, and
  // "0x%016" PRIx64 ":%u" for a port; one entry per line.
  dir.write("guid2mkey",
            "0x0002c90300001000 0x00000000deadbeef\n"
            "0x0008f10400411a08 0x0000000000000000\n"
            "0xnotaguid 0x1\n"
            "0x0002c90300001000 0x2\n");
  dir.write("neighbors",
            "0x0002c90300001000:3 0x0008f10400411a08:1\n"
            "0x0008f10400411a08:1 0x0002c90300001000:3\n"
            "0x0002c90300001000 0x0008f10400411a08:1\n");
  MKeyBook book({.m_key = 9});
  auto w = book.load(dir.path());
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ((*w)[0], dir.path() + "/guid2mkey:3: bad port GUID \"0xnotaguid\"");
  EXPECT_EQ((*w)[1], dir.path() + "/guid2mkey:4: second entry for 0x0002c90300001000 dropped");
  EXPECT_EQ((*w)[2], dir.path() + "/neighbors:3: bad port \"0x0002c90300001000\" (0xGUID:PORT)");
  EXPECT_EQ(book.held(Guid{0x0002c90300001000}), 0xdeadbeefu);
  EXPECT_EQ(book.held(Guid{0x0008f10400411a08}), 0u);  // it holds none: 0 opens it
  EXPECT_EQ(book.held(Guid{0x77}), 9u);                // unknown: the configured key
  EXPECT_EQ(book.links(), 2u);
  EXPECT_FALSE(book.dirty());
  // Written back only when something changed, in the same format.
  book.note_held(Guid{0x0008f10400411a08}, 0x42);
  ASSERT_TRUE(book.save(dir.path()));
  std::ifstream in(dir.path() + "/guid2mkey");
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(l1, "0x0002c90300001000 0x00000000deadbeef");
  EXPECT_EQ(l2, "0x0008f10400411a08 0x0000000000000042");
}

TEST(MKeyBook, AnSmpCarriesTheKeyOfThePortItsRouteLeadsTo) {
  Dir dir;
  const Guid me{0x0008f10400411a08}, leaf{0x0002c90300001000}, host{0x0008f10400411b00};
  // The leaf's port 3 leads to `host` (a link a previous run saw).
  dir.write("neighbors", "0x0002c90300001000:3 0x0008f10400411b00:1\n");
  dir.write("guid2mkey", "0x0008f10400411b00 0x000000000000abcd\n");
  MKeyBook book({.m_key = 0x1000, .per_port = true});
  ASSERT_TRUE(book.load(dir.path()));
  book.set_local_port(me);
  const DrPath p0{}, p1 = p0.extended(1), p2 = p1.extended(3), p3 = p1.extended(4);
  // No hops: the SM's own port.
  EXPECT_EQ(book.key_for(SmpRequest::get(kAttrNodeInfo, 0, p0)), derive_m_key(0x1000, me));
  // One hop, nothing known there yet: the configured key.
  EXPECT_EQ(book.key_for(SmpRequest::get(kAttrNodeInfo, 0, p1)), 0x1000u);
  // The leaf answers NodeInfo: the route now names it.
  book.observe(SmpRequest::get(kAttrNodeInfo, 0, p1),
               reply(node_info(leaf, fabric::NodeType::kSwitch)));
  EXPECT_EQ(book.key_for(SmpRequest::get(kAttrPortInfo, 5, p1)), derive_m_key(0x1000, leaf));
  // Beyond the leaf's port 3, by the neighbors file: the host, with the key it holds.
  EXPECT_EQ(book.key_for(SmpRequest::get(kAttrNodeInfo, 0, p2)), 0xabcdu);
  EXPECT_EQ(book.held(host), 0xabcdu);
  // Beyond port 4 nothing is known.
  EXPECT_EQ(book.key_for(SmpRequest::get(kAttrNodeInfo, 0, p3)), 0x1000u);
  // A PortInfo answer shows the key a port holds: port 0 of a switch only, and not a
  // key hidden as 0 under protection.
  PortInfo pi;
  pi.m_key = 0x777;
  book.observe(SmpRequest::get(kAttrPortInfo, 2, p1), reply(encode_port_info(pi)));
  EXPECT_EQ(book.held(leaf), derive_m_key(0x1000, leaf));
  book.observe(SmpRequest::get(kAttrPortInfo, 0, p1), reply(encode_port_info(pi)));
  EXPECT_EQ(book.held(leaf), 0x777u);
  pi.m_key = 0;
  pi.m_key_protect = 1;
  book.observe(SmpRequest::get(kAttrPortInfo, 0, p1), reply(encode_port_info(pi)));
  EXPECT_EQ(book.held(leaf), 0x777u);
  // m_key_lookup FALSE: the configured key, whatever is known.
  book.set_options({.m_key = 0x1000, .per_port = true, .lookup = false});
  EXPECT_EQ(book.key_for(SmpRequest::get(kAttrNodeInfo, 0, p2)), 0x1000u);
  // No M_Key configured and none held: 0, without a lookup.
  MKeyBook none;
  EXPECT_EQ(none.key_for(SmpRequest::get(kAttrNodeInfo, 0, p2)), 0u);
}

// A PortInfo Set that changes a port's key: its attempts alternate the held key and the
// new one; once it went unanswered, so do those of every SMP to that port, until a reply
// shows the key the port holds (issue 33: a lost reply must not lock weft out).
TEST(MKeyBook, AKeyChangeWithAnUnknownOutcomeAlternatesTheOldKeyAndTheNew) {
  const Guid leaf{0x0002c90300001000};
  MKeyBook book({.m_key = 0x1000});
  const DrPath p1 = DrPath{}.extended(1);
  book.observe(SmpRequest::get(kAttrNodeInfo, 0, p1),
               reply(node_info(leaf, fabric::NodeType::kSwitch)));
  book.note_held(leaf, 0x1000);
  PortInfo pi;
  pi.m_key = 0x2000;
  const auto set = SmpRequest::set(kAttrPortInfo, 0, p1, encode_port_info(pi));
  const auto get = SmpRequest::get(kAttrPortInfo, 0, p1);
  EXPECT_EQ(book.key_for(set, 1), 0x1000u);
  EXPECT_EQ(book.key_for(set, 2), 0x2000u);
  EXPECT_EQ(book.key_for(set, 3), 0x1000u);
  EXPECT_EQ(book.key_for(get, 2), 0x1000u) << "nothing unknown yet";
  // A Set of another switch port carries no key of its own.
  const auto other = SmpRequest::set(kAttrPortInfo, 3, p1, encode_port_info(pi));
  EXPECT_EQ(book.key_for(other, 2), 0x1000u);
  book.unanswered(other);
  EXPECT_FALSE(book.pending(leaf));
  // Unanswered: either key, for every SMP to the port.
  book.unanswered(set);
  EXPECT_EQ(book.pending(leaf), 0x2000u);
  EXPECT_EQ(book.key_for(get, 1), 0x1000u);
  EXPECT_EQ(book.key_for(get, 2), 0x2000u);
  EXPECT_EQ(book.key_for(SmpRequest::get(kAttrNodeInfo, 0, p1), 4), 0x2000u);
  // A key hidden under protection settles nothing; one shown does.
  PortInfo hidden;
  hidden.m_key_protect = 1;
  book.observe(get, reply(encode_port_info(hidden)));
  EXPECT_EQ(book.pending(leaf), 0x2000u);
  book.observe(get, reply(encode_port_info(pi)));
  EXPECT_FALSE(book.pending(leaf));
  EXPECT_EQ(book.held(leaf), 0x2000u);
  EXPECT_EQ(book.key_for(get, 2), 0x2000u);
  EXPECT_EQ(book.key_for(set, 2), 0x2000u) << "no change any more";
}

TEST(MKeyBook, FuzzedStateFilesLoadOrWarnNeverCrash) {
  Dir dir;
  std::mt19937_64 rng(11);
  const std::string alphabet = "0x123456789abcdefABCDEF: \t\n#-g";
  for (int round = 0; round < 300; ++round) {
    std::string a, b;
    const size_t len = rng() % 200;
    for (size_t i = 0; i < len; ++i) {
      a += round % 3 ? alphabet[rng() % alphabet.size()] : char(rng() % 256);
      b += alphabet[rng() % alphabet.size()];
    }
    dir.write("guid2mkey", a);
    dir.write("neighbors", b);
    MKeyBook book;
    auto w = book.load(dir.path());
    ASSERT_TRUE(w) << round;
    for (const auto& s : *w) EXPECT_EQ(s.rfind(dir.path() + "/", 0), 0u) << s;
  }
}
