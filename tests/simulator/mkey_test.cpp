// M_Key in process: the simulator checks keys as IBTA vol. 1, 14.2.4 has ports do it
// (ibsim has no M_Key), weft keys every port and reaches them all with their keys,
// across a restart too; a second SM without the key gets nowhere, its attempts come
// back as trap 256, and a port whose lease ran out is keyed again.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim_sm.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/mkey.hpp"
#include "weft/sm/subnet_manager.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;

using weft::testing::readback;
using weft::testing::ScratchDir;
using weft::testing::sim_of;

namespace {

constexpr uint64_t kSecret = 0x5ec7e7000000beefull;
constexpr const char* kFabric = "ft2:leaves=2,spines=2,hosts=2";

SmOptions keyed_opts(const ScratchDir& d, uint8_t level, bool per_port = true, uint16_t lease = 0) {
  SmOptions o = weft::testing::sm_opts(d);
  o.mkey = {.m_key = kSecret, .per_port = per_port, .protect_bits = level, .lease_period = lease};
  return o;
}

// The ports that hold a key: CA ports and switch port 0.
std::vector<std::pair<fabric::NodeIndex, PortNum>> key_ports(const SimFabric& sim) {
  std::vector<std::pair<fabric::NodeIndex, PortNum>> out;
  for (fabric::NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (nd.is_switch())
      out.push_back({n, 0});
    else
      for (const auto& p : nd.ports)
        if (p.num && p.linked()) out.push_back({n, p.num});
  }
  return out;
}

// Another SM at a CA, sending one SMP by directed route with a key of its choosing.
class Intruder {
 public:
  Intruder(SimFabric& sim, fabric::NodeIndex at) : t_(sim, {.attach = at}) {}
  std::optional<Smp> send(SmpRequest req, uint64_t key) {
    req.m_key = key;
    EXPECT_TRUE(t_.send(encode_smp(req, ++tid_), SendAddr::directed()));
    auto in = t_.receive(std::chrono::milliseconds(1));
    EXPECT_TRUE(in);
    if (!in || !*in) return std::nullopt;
    auto s = decode_smp((*in)->mad.data(), (*in)->len);
    EXPECT_TRUE(s);
    return s ? std::optional<Smp>(*s) : std::nullopt;
  }
  // The directed route from this CA to its leaf switch.
  DrPath to_leaf() const { return DrPath{}.extended(t_.port()); }

 private:
  SimTransport t_;
  uint64_t tid_ = 0x777000;
};

// The leaf switch the intruder (node 1, a host) hangs off.
fabric::NodeIndex leaf_of(const SimFabric& sim, fabric::NodeIndex host) {
  for (const auto& p : sim.model().node(host).ports)
    if (p.num && p.linked()) return p.peer;
  return fabric::kNoNode;
}

}  // namespace

class MKeyLevels : public ::testing::TestWithParam<int> {};

TEST_P(MKeyLevels, EveryPortIsKeyedAndASecondSmWithoutTheKeyCannotChangeOrReadIt) {
  const uint8_t level = static_cast<uint8_t>(GetParam());
  ScratchDir dir("weft-mkey");
  SimFabric sim = sim_of(kFabric);
  SimTransport t(sim, {.attach = 0});
  SubnetManager sm(t, keyed_opts(dir, level));
  std::vector<SmEvent> events;
  sm.on_event([&](const SmEvent& e) { events.push_back(e); });
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  EXPECT_TRUE(readback(sim).ok());

  // Every port holds its own key, derived from the secret, at the configured level,
  // and guid2mkey (readable by its owner only) says so.
  const auto ports = key_ports(sim);
  std::set<uint64_t> keys;
  for (auto [n, p] : ports) {
    const Guid g = sim.model().node(n).ports[p].guid;
    EXPECT_EQ(sim.mkey(n, p).key, derive_m_key(kSecret, g)) << fabric::port_ref(sim.model(), n, p);
    EXPECT_EQ(sim.mkey(n, p).protect, level);
    keys.insert(sim.mkey(n, p).key);
  }
  EXPECT_EQ(keys.size(), ports.size()) << "per-port keys are all different";
  struct stat st {};
  ASSERT_EQ(stat((dir.path() + "/guid2mkey").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  MKeyBook book;
  ASSERT_TRUE(book.load(dir.path()));
  EXPECT_EQ(book.guid2mkey().size(), ports.size());

  // A second SM, at another host, without the key.
  Intruder other(sim, 1);
  const fabric::NodeIndex leaf = leaf_of(sim, 1);
  const auto& leaf0 = sim.model().node(leaf).ports[0].attrs;
  const Lid leaf_lid = leaf0.lid;
  auto got = other.send(SmpRequest::get(kAttrPortInfo, 0, other.to_leaf()), 0);
  if (level >= 2) {
    EXPECT_FALSE(got) << "level " << int(level) << ": a Get without the key goes unanswered";
  } else {
    ASSERT_TRUE(got);
    const uint64_t shown = decode_port_info(got->data).m_key;
    EXPECT_EQ(shown, level == 1 ? 0 : sim.mkey(leaf, 0).key) << "level " << int(level);
  }
  // A Set without the key is refused at every level: the switch keeps its LID.
  PortInfo pi = decode_port_info(encode_port_info({}));
  pi.attrs.lid = Lid{999};
  auto set =
      other.send(SmpRequest::set(kAttrPortInfo, 0, other.to_leaf(), encode_port_info(pi)), 0x1234);
  EXPECT_FALSE(set);
  EXPECT_EQ(sim.model().node(leaf).ports[0].attrs.lid, leaf_lid);
  EXPECT_GE(sim.mkey(leaf, 0).violations, level >= 2 ? 2 : 1);
  // With the key, the same Get is answered (as weft's are).
  EXPECT_TRUE(
      other.send(SmpRequest::get(kAttrPortInfo, 0, other.to_leaf()), sim.mkey(leaf, 0).key));

  // The refused Set came to weft as trap 256, naming the SMP and the way back to it.
  ASSERT_TRUE(sm.serve_for(std::chrono::milliseconds(50)));
  const SmEvent* sec = nullptr;
  for (const auto& e : events)
    if (e.type == "security" && e.data.value("number", 0) == 256 &&
        e.data.value("method", 0) == kMethodSet)
      sec = &e;
  ASSERT_NE(sec, nullptr);
  EXPECT_EQ(sec->data["port_lid"], leaf_lid.value);
  EXPECT_EQ(sec->data["attribute"], kAttrPortInfo);
  EXPECT_EQ(sec->data["m_key"], "0x0000000000001234");
  // Repressed with the port's own key (the trap's), or the repress would be a violation.
  ASSERT_FALSE(t.represses().empty());
  const auto rp = decode_smp(t.represses().back().mad.data(), kMadSize);
  ASSERT_TRUE(rp);
  EXPECT_EQ(rp->m_key, sim.mkey(leaf, 0).key);
  EXPECT_EQ(sec->data["return_path"],
            "0," + std::to_string(sim.model().node(1).ports[other.to_leaf().ports[1]].peer_port));

  // weft still reaches everything: the next sweep is answered throughout and writes
  // no PortInfo (every port holds what it should).
  const size_t sets = sim.sets(kAttrPortInfo);
  const uint64_t timeouts = sm.mad_stats().timed_out;
  auto again = sm.sweep();
  ASSERT_TRUE(again && again->subnet_up) << (again ? again->reason : again.error().message);
  EXPECT_EQ(sm.mad_stats().timed_out, timeouts);
  EXPECT_EQ(sim.sets(kAttrPortInfo), sets);
}

INSTANTIATE_TEST_SUITE_P(Level, MKeyLevels, ::testing::Values(0, 1, 2, 3));

TEST(MKey, ARestartedSmReachesEveryPortWithTheKeysAndLinksOfItsStateFiles) {
  ScratchDir dir("weft-mkey");
  SimFabric sim = sim_of(kFabric);
  {
    SimTransport t(sim, {.attach = 0});
    SubnetManager sm(t, keyed_opts(dir, 3));
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  }
  // A new process: nothing in memory. Every NodeInfo to a port not yet reached goes
  // with the key of the port the neighbors file puts there.
  {
    SimTransport t(sim, {.attach = 0});
    SubnetManager sm(t, keyed_opts(dir, 3));
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    EXPECT_EQ(sm.mad_stats().timed_out, 0u);
  }
  // Without the links, only the SM's own port is reached: the rest drop the SMPs.
  std::filesystem::remove(dir.path() + "/neighbors");
  {
    SimTransport t(sim, {.attach = 0});
    SmOptions o = keyed_opts(dir, 3);
    o.engine.retries = 0;
    SubnetManager sm(t, o);
    auto rep = sm.sweep();
    ASSERT_TRUE(rep);
    EXPECT_FALSE(rep->subnet_up);
    EXPECT_GT(sm.mad_stats().timed_out, 0u);
  }
}

TEST(MKey, ANewKeyIsSetWithTheOldOneAndEveryPortHoldsItAfterOneSweep) {
  ScratchDir dir("weft-mkey");
  SimFabric sim = sim_of(kFabric);
  SimTransport t(sim, {.attach = 0});
  // First a shared key (OpenSM's way), then a key per port under another secret.
  SmOptions o = keyed_opts(dir, 2, /*per_port=*/false);
  SubnetManager sm(t, o);
  ASSERT_TRUE(sm.sweep()->subnet_up);
  for (auto [n, p] : key_ports(sim)) EXPECT_EQ(sim.mkey(n, p).key, kSecret);
  o.mkey.per_port = true;
  o.mkey.m_key = 0x0123456789abcdefull;
  sm.set_options(o);
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  MKeyBook book;
  ASSERT_TRUE(book.load(dir.path()));
  for (auto [n, p] : key_ports(sim)) {
    const Guid g = sim.model().node(n).ports[p].guid;
    EXPECT_EQ(sim.mkey(n, p).key, derive_m_key(0x0123456789abcdefull, g));
    EXPECT_EQ(book.guid2mkey().at(g.value), sim.mkey(n, p).key);
  }
  // And back to none: the keys are cleared.
  o.mkey = {};
  sm.set_options(o);
  ASSERT_TRUE(sm.sweep()->subnet_up);
  for (auto [n, p] : key_ports(sim)) {
    EXPECT_EQ(sim.mkey(n, p).key, 0u);
    EXPECT_EQ(sim.mkey(n, p).protect, 0);
  }
}

TEST(MKey, ALeaseIsStoppedByWeftAfterTrap256AndAPortWhoseLeaseRanOutIsKeyedAgain) {
  ScratchDir dir("weft-mkey");
  SimFabric sim = sim_of(kFabric);
  SimTransport t(sim, {.attach = 0});
  SubnetManager sm(t, keyed_opts(dir, 2, true, /*lease=*/5));
  ASSERT_TRUE(sm.sweep()->subnet_up);
  const fabric::NodeIndex leaf = leaf_of(sim, 1);
  Intruder other(sim, 1);
  PortInfo pi = decode_port_info(encode_port_info({}));
  auto bad_set = [&] {
    return other.send(SmpRequest::set(kAttrPortInfo, 0, other.to_leaf(), encode_port_info(pi)), 7);
  };

  // The bad Set starts the leaf's lease timer; its trap reaches weft, which reads the
  // leaf with the key: the timer stops, and 6 s later the leaf is still protected.
  EXPECT_FALSE(bad_set());
  ASSERT_TRUE(sim.mkey(leaf, 0).deadline.has_value());
  ASSERT_TRUE(sm.serve_for(std::chrono::milliseconds(50)));
  EXPECT_FALSE(sim.mkey(leaf, 0).deadline.has_value());
  ASSERT_TRUE(sm.serve_for(std::chrono::seconds(6)));
  EXPECT_FALSE(other.send(SmpRequest::get(kAttrPortInfo, 0, other.to_leaf()), 0));
  EXPECT_EQ(sim.mkey(leaf, 0).protect, 2);

  // With weft not there to answer (its clock moves, its trap queue is not read), the
  // lease runs out: the leaf drops to level 0 and shows its key to anyone.
  EXPECT_FALSE(bad_set());
  t.manual_clock().advance(std::chrono::seconds(6));
  auto shown = other.send(SmpRequest::get(kAttrPortInfo, 0, other.to_leaf()), 0);
  ASSERT_TRUE(shown);
  EXPECT_EQ(decode_port_info(shown->data).m_key_protect, 0);
  EXPECT_EQ(sim.mkey(leaf, 0).protect, 0);
  // The next sweep finds the level gone and sets it again, with the same key.
  const uint64_t key = sim.mkey(leaf, 0).key;
  auto rep = sm.sweep();
  ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
  EXPECT_EQ(sim.mkey(leaf, 0).protect, 2);
  EXPECT_EQ(sim.mkey(leaf, 0).key, key);
  EXPECT_FALSE(other.send(SmpRequest::get(kAttrPortInfo, 0, other.to_leaf()), 0));
}

// A key change whose reply is lost (issue 33): the port took the new key and refuses
// the old one. The attempts alternate the old key and the new, so the Set's own retry
// is taken and weft learns the key the port holds in the same sweep; before, every
// retry carried the old key and the port was lost to weft until its lease ran out,
// which with m_key_lease_period 0 it never does.
TEST(MKey, AKeyChangeWhoseReplyIsLostLocksNoPortOut) {
  for (uint8_t level : {1, 3}) {
    SCOPED_TRACE("protection level " + std::to_string(level));
    ScratchDir dir("weft-mkey");
    SimFabric sim = sim_of(kFabric);
    SimTransport t(sim, {.attach = 0});
    SmOptions o = keyed_opts(dir, level, /*per_port=*/false);
    SubnetManager sm(t, o);
    ASSERT_TRUE(sm.sweep()->subnet_up);
    o.mkey.per_port = true;
    o.mkey.m_key = 0x0123456789abcdefull;
    std::set<uint64_t> fresh, lost;
    for (auto [n, p] : key_ports(sim))
      fresh.insert(derive_m_key(o.mkey.m_key, sim.model().node(n).ports[p].guid));
    // The first reply that shows each port's new key (the Set's) is lost on its way.
    t.mangle_replies([&](MadBuf& m) {
      auto s = decode_smp(m.data(), kMadSize);
      if (!s || s->attr_id != kAttrPortInfo) return;
      const uint64_t k = decode_port_info(s->data).m_key;
      if (fresh.count(k) && lost.insert(k).second) m[12] ^= 0x80;  // another TID: unmatched
    });
    sm.set_options(o);
    auto rep = sm.sweep();
    ASSERT_TRUE(rep && rep->subnet_up) << (rep ? rep->reason : rep.error().message);
    EXPECT_EQ(lost, fresh) << "every port's Set reply was lost";
    for (auto [n, p] : key_ports(sim))
      EXPECT_EQ(sim.mkey(n, p).key, derive_m_key(o.mkey.m_key, sim.model().node(n).ports[p].guid));
    MKeyBook book;
    ASSERT_TRUE(book.load(dir.path()));
    for (auto [n, p] : key_ports(sim)) {
      const Guid g = sim.model().node(n).ports[p].guid;
      ASSERT_TRUE(book.guid2mkey().count(g.value));
      EXPECT_EQ(book.guid2mkey().at(g.value), sim.mkey(n, p).key)
          << fabric::port_ref(sim.model(), n, p);
    }
    auto again = sm.sweep();
    ASSERT_TRUE(again && again->subnet_up) << (again ? again->reason : again.error().message);
    EXPECT_EQ(again->portinfo_sets, 0u);
    EXPECT_TRUE(readback(sim).ok());
  }
}
