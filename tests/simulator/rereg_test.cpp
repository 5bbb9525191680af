// ClientReregister (issue 29, item 2), in process: every end port that supports it is
// told to re-register once a master term (the first sweep, a restart on the same state
// directory), and again when it comes back having lost its LID; never on a sweep that
// changes nothing; never with no_clients_rereg; never on a port that does not support
// it. The simulator's CA ports count the events their host stack saw.
#include <gtest/gtest.h>

#include "sim_sm.hpp"

using namespace weft;
using namespace weft::simulator;
using namespace weft::mad;
using namespace weft::sm;
using namespace weft::testing;
using fabric::NodeIndex;

namespace {

// Each linked CA port's events, in node order.
std::vector<uint32_t> events(const SimFabric& sim) {
  std::vector<uint32_t> v;
  for (NodeIndex n = 0; n < sim.model().size(); ++n) {
    const auto& nd = sim.model().node(n);
    if (nd.is_switch()) continue;
    for (PortNum p = 1; p <= nd.num_ports; ++p)
      if (nd.ports[p].linked()) v.push_back(sim.extras(n, p).client_reregisters);
  }
  return v;
}

std::vector<uint32_t> every(const SimFabric& sim, uint32_t k) {
  return std::vector<uint32_t>(events(sim).size(), k);
}

}  // namespace

TEST(ClientReregister, OnceATermAndAgainWhenAPortLostItsLid) {
  ScratchDir dir("weft-rereg");
  SimFabric sim = sim_of("ft2:leaves=4,spines=2,hosts=3");
  SimTransport t(sim, {});
  const size_t cas = events(sim).size();
  ASSERT_EQ(cas, 12u);
  {
    SubnetManager weft(t, sm_opts(dir));
    auto up = weft.sweep();
    ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
    EXPECT_EQ(up->client_reregisters, cas);
    EXPECT_EQ(events(sim), every(sim, 1));
    // Nothing changed: nobody is asked again, by a heavy sweep or a light one.
    auto again = weft.sweep();
    ASSERT_TRUE(again && again->subnet_up);
    EXPECT_EQ(again->client_reregisters, 0u);
    EXPECT_EQ(again->portinfo_sets, 0u);
    ASSERT_TRUE(weft.light_sweep());
    EXPECT_EQ(events(sim), every(sim, 1));

    // A host reboots: its port comes back with no LID and no SM LID. It alone is asked.
    const NodeIndex h = *sim.model().find_by_name("h2-1");
    auto& port = sim.model().node(h).ports[1];
    const NodeIndex leaf = port.peer;
    const PortNum leaf_port = port.peer_port;
    sim.unlink(h, 1);
    port.attrs.lid = Lid{};
    port.attrs.sm_lid = Lid{};
    ASSERT_TRUE(sim.relink(h, 1, leaf, leaf_port));
    auto back = weft.sweep();
    ASSERT_TRUE(back && back->subnet_up) << (back ? back->reason : back.error().message);
    EXPECT_EQ(back->client_reregisters, 1u);
    EXPECT_EQ(sim.extras(h, 1).client_reregisters, 2u);
    uint64_t total = 0;
    for (uint32_t e : events(sim)) total += e;
    EXPECT_EQ(total, cas + 1);
  }
  // A restart on the same state directory is a new term: every end port once more, and
  // that is all the restart writes to ports.
  SubnetManager restarted(t, sm_opts(dir));
  auto r = restarted.sweep();
  ASSERT_TRUE(r && r->subnet_up) << (r ? r->reason : r.error().message);
  EXPECT_EQ(r->lid_assignment.changed, 0u);
  EXPECT_EQ(r->client_reregisters, cas);
  EXPECT_EQ(r->portinfo_sets, cas);
  EXPECT_EQ(sim.client_reregisters(), 2 * cas + 1);
}

TEST(ClientReregister, NoClientsReregAndPortsWithoutTheCapabilityAreNeverAsked) {
  ScratchDir dir("weft-rereg");
  SimFabric sim = sim_of("ft2:leaves=2,spines=1,hosts=2");
  // One host's port does not support it (as ibsim's ports do not).
  const NodeIndex h = *sim.model().find_by_name("h1-0");
  sim.model().node(h).ports[1].attrs.capability_mask &= ~kCapClientRereg;
  SimTransport t(sim, {});
  {
    SmOptions o = sm_opts(dir);
    o.no_clients_rereg = true;
    SubnetManager weft(t, o);
    auto up = weft.sweep();
    ASSERT_TRUE(up && up->subnet_up) << (up ? up->reason : up.error().message);
    EXPECT_EQ(up->client_reregisters, 0u);
    EXPECT_EQ(sim.client_reregisters(), 0u);
  }
  SubnetManager weft(t, sm_opts(dir));
  auto up = weft.sweep();
  ASSERT_TRUE(up && up->subnet_up);
  EXPECT_EQ(up->client_reregisters, events(sim).size() - 1);
  EXPECT_EQ(sim.extras(h, 1).client_reregisters, 0u);
  EXPECT_EQ(sim.client_reregisters(), events(sim).size() - 1);
}
