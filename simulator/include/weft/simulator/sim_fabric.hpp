// weft/simulator/sim_fabric.hpp — an in-process fabric whose devices answer
// SMPs as switches and CAs do: directed routes (hop by hop, recording the
// return path), LID-routed SMPs forwarded through the LFTs the SM programmed,
// and the IBTA port state machine (INIT -> ARMED -> ACTIVE, a port goes
// ACTIVE only once its peer is at least ARMED). Defaults follow ibsim, so the
// same topology discovered here and through ibsim gives the same model.
//
//   weft::simulator::SimFabric sim(fabric);
//   auto reply = sim.process(request_mad, /*sm node*/ 0, /*sm port*/ 1);
//   sim.lft(switch_index)[lid];   // what the SM programmed
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "weft/fabric/fabric.hpp"
#include "weft/mad/ar.hpp"
#include "weft/mad/clock.hpp"
#include "weft/mad/mad.hpp"
#include "weft/perf/counters.hpp"
#include "weft/routing/engine.hpp"
#include "weft/simulator/sim_cc.hpp"
#include "weft/simulator/sim_vports.hpp"

namespace weft::simulator {

struct SimDefaults {
  uint16_t lft_cap = 49152;  // every unicast LID (ibsim's default is 30720: `weft sim --lft-cap`)
  uint16_t mft_cap = 1024;
  uint8_t mtu_cap = 4;  // 2048
  uint8_t vl_cap = 4;   // VL0-7
  // P_Keys a switch external port holds (ibsim: 64, but it cannot enforce them; these
  // switches filter inbound and outbound).
  uint16_t partition_enforce_cap = 64;
  uint8_t vl_arb_cap = 8;  // entries of each VL arbitration table (ibsim: 8)
  // SwitchInfo:OptimizedSLtoVLMappingProgramming: an SL2VL Set to a switch may name all
  // input ports (modifier bit 17) and all output ports (bit 16) at once, as most current
  // switches allow; ibsim does not (such a Set is refused, as without the capability).
  bool optimized_sl2vl = false;
  // As ibsim: a PortInfo Set moves PortState one step and refuses (status 0x1C) a move to
  // the state the port already holds, so the resend of a Set whose reply was lost fails.
  bool strict_state_steps = false;
  // As ibsim: PortInfo:VLStallCount stays what the port came with whatever a Set says
  // (ibsim keeps HOQLife, not VLStallCount).
  bool drops_vl_stall_count = false;
  // Adaptive routing (NVIDIA's vendor attributes, weft/mad/ar.hpp): the AR groups every
  // switch holds (GroupCap; 0: no AR, the attributes answered "unsupported", as a switch
  // without AR does) and its sub-groups per group (SubGroupsSupported). ibsim has none.
  uint16_t ar_group_cap = 0;
  uint8_t ar_sub_groups = 1;
  // As ibsim: a vendor attribute a device does not hold (AR on a switch without it) is
  // dropped without an answer, so the sender sees a timeout, not "unsupported".
  bool drops_unknown_attrs = false;
  // Congestion-control agents (class 0x21, weft/simulator/sim_cc.hpp) on every switch and
  // CA port; none by default (ibsim has none), a CC MAD then goes unanswered. CAs hold
  // cc_table_cap CongestionControlTable blocks (64 entries each).
  bool cc_agents = false;
  uint8_t cc_table_cap = 2;
};

class SimFabric {
 public:
  explicit SimFabric(fabric::Fabric f, SimDefaults d = {});

  struct Outcome {
    std::optional<mad::MadBuf> reply;  // nullopt: the SMP was dropped on the way
    int hops = 0;                      // links crossed to reach the target
  };
  // A request SMP leaving the SM at (node, port) (port 0 for an SM on a switch);
  // `dlid` is the destination of a LID-routed SMP (ignored for directed route).
  Outcome process(const mad::MadBuf& req, fabric::NodeIndex sm_node, PortNum sm_port,
                  Lid dlid = {});

  const fabric::Fabric& model() const { return f_; }
  fabric::Fabric& model() { return f_; }
  const std::vector<uint8_t>& lft(fabric::NodeIndex sw) const { return lft_.at(sw); }
  uint16_t lft_top(fabric::NodeIndex sw) const { return top_.at(sw); }
  uint8_t lifetime(fabric::NodeIndex sw) const { return lifetime_.at(sw); }  // LifeTimeValue
  bool port_state_change(fabric::NodeIndex sw) const { return psc_.at(sw) != 0; }
  // What ports hold: P_Key table, SL2VL (CA ports: in = out = 0), VL arbitration
  // (block 0-1 low, 2-3 high), and the PortInfo fields QoS and partitions set.
  const std::vector<uint16_t>& pkeys(fabric::NodeIndex n, PortNum p) const {
    return pkeys_.at(n).at(p);
  }
  const qos::Sl2Vl& sl2vl(fabric::NodeIndex n, PortNum in, PortNum out) const;
  const qos::VlArbBlock& vlarb(fabric::NodeIndex n, PortNum p, size_t block) const;
  struct PortExtras {
    bool part_enf_in = false, part_enf_out = false;
    uint8_t vl_high_limit = 0;
    // The timers, as they come (ibsim's: HOQLife 31, never; VLStallCount 7).
    uint8_t hoq_life = 31, vl_stall_count = 7;
    // Client reregister events the port's host stack saw: PortInfo Sets with
    // ClientReregister on an end port that supports it (CA ports here do, as ConnectX
    // does; ibsim's do not). Each makes a host re-join, re-register and re-subscribe.
    uint32_t client_reregisters = 0;
  };
  const PortExtras& extras(fabric::NodeIndex n, PortNum p) const { return extras_.at(n).at(p); }
  // Client reregister events on every port together.
  uint64_t client_reregisters() const;
  // What a host stack does on the event (re-join its groups, re-register its services):
  // called with the port while the Set that asked for it is taken (queue the work; do it
  // once the SM is done with its sweep).
  void on_client_reregister(std::function<void(fabric::NodeIndex, PortNum)> f) {
    on_client_reregister_ = std::move(f);
  }
  // Where a multicast packet to `mlid` sent by end port (n, p) is delivered, through
  // the MFTs the switches hold: end ports (the sender excluded), each once.
  std::vector<std::pair<fabric::NodeIndex, PortNum>> mcast_reach(uint16_t mlid, fabric::NodeIndex n,
                                                                 PortNum p) const;
  // What a switch holds for adaptive routing: its AdaptiveRoutingInfo, its group table
  // (one port mask per entry: group * sub-groups + sub-group) and its AR LFT (per LID).
  // set_ar_cap gives one switch another GroupCap (0: that switch has no AR).
  struct ArState {
    mad::ArInfo info;
    std::vector<mad::ArPortMask> groups;
    std::vector<mad::ArLftEntry> lft;
  };
  const ArState& ar(fabric::NodeIndex sw) const { return ar_.at(sw); }
  // Congestion-control agents: what each holds (find(node, port), a switch's at port 0),
  // and set_cc to give one node's agents another support (none, refusing, an agent).
  SimCc& cc() { return cc_; }
  // SR-IOV virtual ports of chosen CA ports (none by default; ibsim has none).
  SimVPorts& vports() { return vports_; }
  const SimVPorts& vports() const { return vports_; }
  const SimCc& cc() const { return cc_; }
  void set_cc(fabric::NodeIndex n, CcSupport s);
  void set_ar_cap(fabric::NodeIndex sw, uint16_t group_cap);
  // The ports switch `sw` may send a packet to `lid` by under the AR it holds (AR on, the
  // AR LFT entry not static: its group's ports); none otherwise (routing::ChoiceFn).
  void ar_choices(fabric::NodeIndex sw, uint16_t lid, std::vector<PortNum>& out) const;
  // Counts of Sets per attribute, to check that a second sweep writes nothing.
  size_t sets(uint16_t attr) const;
  // Of them, those that came LID-routed.
  size_t lid_routed_sets(uint16_t attr) const;
  // The forwarding tables the switches hold (up to their LinearFDBTop), for checking
  // what was really programmed rather than what the SM meant to write; where a switch
  // has adaptive routing on, its AR groups as Tables::ar_* (what the traffic model
  // routes by).
  routing::Tables held_tables() const;

  // Another SM at end port (n, p): it answers the SMInfo SMPs and receives the traps
  // that reach that port (as ibsim hands them to the SM client there), and its port
  // advertises IsSM. `agent` returns the reply (status, SMInfo payload), or nullopt
  // for none (an SM that has died).
  struct AgentReply {
    uint16_t status = 0;
    mad::SmpData data{};
  };
  using SmAgent = std::function<std::optional<AgentReply>(const mad::Smp& req)>;
  void attach_sm(fabric::NodeIndex n, PortNum p, SmAgent agent);

  // M_Key, as IBTA vol. 1, 14.2.4 has a port check it (a switch: port 0's): a key of 0
  // takes any SMP; a Set or TrapRepress with another key is dropped, so is a Get at
  // protection level 2 and 3, and level 1 answers such a Get with the key hidden (0).
  // A drop counts an M_KeyViolation, starts the lease timer (M_KeyLeasePeriod seconds,
  // on the clock set here) and sends trap 256 to the port's SM LID; an SMP with the right
  // key stops the timer, and a timer that runs out drops the protection level to 0.
  struct MKeyState {
    uint64_t key = 0;
    uint8_t protect = 0;
    uint16_t lease = 0;  // seconds; 0 = the timer never starts
    uint16_t violations = 0;
    std::optional<mad::TimePoint> deadline;  // the lease timer, when it runs
  };
  const MKeyState& mkey(fabric::NodeIndex n, PortNum p) const { return mkey_.at(n).at(p); }
  MKeyState& mkey(fabric::NodeIndex n, PortNum p) { return mkey_.at(n).at(p); }
  // The clock lease timers run on (a SimTransport sets its own when none is set, and
  // clears it when it goes; without one the timers never run out).
  void set_clock(const mad::Clock* c) { clock_ = c; }
  const mad::Clock* clock() const { return clock_; }
  // Traps the devices sent to SM LID `sm_lid` since the last call (trap 256 so far).
  std::vector<mad::MadBuf> take_traps(Lid sm_lid);

  // Port counters, as a PMA keeps them (perf/counters.hpp): every counter saturates
  // at its width (PortCountersExtended's at 2^64 - 1, as ibsim's). count() adds to one:
  // injected errors, traffic, or a jump to saturation.
  const perf::PortCounters& counters(fabric::NodeIndex n, PortNum p) const {
    return pc_.at(n).at(p);
  }
  const perf::PortCountersExt& counters_ext(fabric::NodeIndex n, PortNum p) const {
    return pce_.at(n).at(p);
  }
  void count(fabric::NodeIndex n, PortNum p, perf::Counter c, uint64_t by);
  void count(fabric::NodeIndex n, PortNum p, perf::ExtCounter c, uint64_t by);
  // A port whose counters restart from zero (a device reset, or a port replaced).
  void reset_counters(fabric::NodeIndex n, PortNum p);
  // The PMA of node `n`, reached on `in_port`: a PerfMgt Get or Set (a Set clears the
  // CounterSelect'ed counters, then answers as a Get) of PortCounters or
  // PortCountersExtended, in place on the PMA data area; returns the MAD status. As
  // ibsim's: a switch answers for any of its ports, PortSelect 255 sums them all
  // (saturating); a CA only for the port asked on; anything else is 0x1C (an invalid
  // field), another attribute 0x0C (unsupported).
  uint16_t pma(bool set, uint16_t attr, fabric::NodeIndex n, PortNum in_port, perf::PmaData& data);
  // What node `n`'s PMA says in ClassPortInfo (default: PortSelect 255, the whole
  // PortCountersExtended, PortXmitWait). Without the extended bits it still answers
  // PortCountersExtended, as ibsim does; an SM should not ask.
  void set_pma_capabilities(fabric::NodeIndex n, uint16_t mask) { pma_caps_.at(n) = mask; }
  // PerfMgt GMPs answered so far (a counter sweep's cost).
  uint64_t pma_queries() const { return pma_queries_; }

  // Faults.
  void set_unresponsive(fabric::NodeIndex n, bool on) { dead_.at(n) = on ? 1 : 0; }
  // Node `n` answers every Set of `attr` with an error status and changes nothing (a
  // device whose firmware rejects the write); `on` false ends it.
  void refuse_sets(fabric::NodeIndex n, uint16_t attr, bool on) {
    if (on)
      refused_.insert({n, attr});
    else
      refused_.erase({n, attr});
  }
  // Node `n` answers every Set of `attr` with success and what it held before, changing
  // nothing (a device that silently does not take the write); `on` false ends it.
  void ignore_sets(fabric::NodeIndex n, uint16_t attr, bool on) {
    if (on)
      ignored_.insert({n, attr});
    else
      ignored_.erase({n, attr});
  }
  // Switch `n` still says it takes SL2VL Sets for all ports at once
  // (SimDefaults::optimized_sl2vl) but refuses them, taking Sets port by port (firmware
  // that claims more than it does); `on` false ends it.
  void refuse_all_port_sl2vl(fabric::NodeIndex n, bool on) {
    if (on)
      refused_all_sl2vl_.insert(n);
    else
      refused_all_sl2vl_.erase(n);
  }
  // The same for Gets of `attr` (a device that will not say what it holds).
  void refuse_gets(fabric::NodeIndex n, uint16_t attr, bool on) {
    if (on)
      refused_gets_.insert({n, attr});
    else
      refused_gets_.erase({n, attr});
  }
  // Takes a link down (both ends DOWN, switches flag a port state change).
  void unlink(fabric::NodeIndex n, PortNum p);
  // Links (n, p) and (m, q) again (both ends INIT, switches flag a port state change).
  // A port the SM disabled (PortPhysicalState 3) keeps the cable but no link until the
  // SM sets it to Polling again.
  bool relink(fabric::NodeIndex n, PortNum p, fabric::NodeIndex m, PortNum q);
  // A switch that rebooted: its forwarding tables empty, its links retrained (both ends
  // INIT), a port state change flagged; LinearFDBTop kept (as some do) or zeroed.
  void reset_switch(fabric::NodeIndex n, bool keep_top);

  // Where a packet from `src` (a CA port or a switch) to `dlid` ends up through
  // the programmed LFTs; nullopt on a drop, a dead port or a loop (> 64 hops).
  struct Hop {
    fabric::NodeIndex node;
    PortNum port;
  };
  // `egress`, when given, sees each switch port the packet leaves by, in order.
  std::optional<Hop> lid_route(
      fabric::NodeIndex src, PortNum src_port, uint16_t dlid, int* hops = nullptr,
      const std::function<void(fabric::NodeIndex, PortNum)>& egress = {}) const;

  // A coarse congestion model on the tables the switches hold, for congestion control
  // to find: each flow sends `packets` packets from CA port (node, port) to `dlid` on
  // `sl`, all at once at line rate. A switch port that k > 1 flows leave by is
  // oversubscribed: it counts (k - 1) * packets ticks of PortXmitWait and, where the
  // switch's congestion control marks on that port (SimCc::marks), logs one event per
  // flow in the switch's CongestionLog (the port in its PortMap, an entry with the
  // flow's SLID, DLID and SL). A flow marked on its way reaches a source whose CA agent
  // reacts on that SL (CACongestionSetting's control map): a threshold event in the
  // CA's log, with the flow's QPs (made up: 0x100 + the flow's index, both ends).
  // Entries carry the TimeStamp clock (set_clock's). Flows that do not arrive are
  // left out.
  struct Flow {
    fabric::NodeIndex node = fabric::kNoNode;
    PortNum port = 0;
    uint16_t dlid = 0;
    uint8_t sl = 0;
  };
  struct Congestion {
    size_t routed = 0;           // flows that arrive
    size_t congested_ports = 0;  // switch ports shared by more than one
    size_t switch_events = 0, ca_events = 0;
  };
  Congestion congest(const std::vector<Flow>& flows, uint64_t packets = 1000);

 private:
  uint16_t handle(const mad::Smp& s, fabric::NodeIndex n, PortNum in_port, mad::SmpData& data);
  uint16_t port_info(bool set, fabric::NodeIndex n, PortNum in_port, uint32_t mod,
                     mad::SmpData& data);
  mad::PortInfo make_port_info(fabric::NodeIndex n, PortNum p) const;
  bool owns_lid(fabric::NodeIndex n, PortNum p, uint16_t lid) const;
  // The M_Key check at the port an SMP reached: false when it is dropped; `hide` when
  // a PortInfo answer must not show the key.
  bool mkey_check(const mad::Smp& s, fabric::NodeIndex n, PortNum in_port, bool& hide);

  fabric::Fabric f_;
  SimDefaults d_;
  std::vector<std::vector<uint8_t>> lft_;
  std::vector<uint16_t> top_;
  std::vector<uint8_t> lifetime_;
  std::vector<uint8_t> psc_;
  std::vector<uint8_t> dead_;
  std::set<std::pair<fabric::NodeIndex, uint16_t>> refused_;       // refuse_sets
  std::set<std::pair<fabric::NodeIndex, uint16_t>> refused_gets_;  // refuse_gets
  std::set<fabric::NodeIndex> refused_all_sl2vl_;                  // refuse_all_port_sl2vl
  std::set<std::pair<fabric::NodeIndex, uint16_t>> ignored_;       // ignore_sets
  std::vector<std::vector<uint8_t>> subnet_timeout_;
  std::vector<std::vector<std::vector<uint16_t>>> pkeys_;  // [node][port]
  // Empty until something sets one: the power-on tables below then.
  std::vector<std::vector<qos::Sl2Vl>> sl2vl_;                      // [node][in * (N+1) + out]
  std::vector<std::vector<std::array<qos::VlArbBlock, 4>>> vlarb_;  // [node][port]
  qos::Sl2Vl sl2vl0_{};
  std::array<qos::VlArbBlock, 4> arb0_{};
  size_t sl2vl_index(fabric::NodeIndex n, PortNum in, PortNum out) const;
  std::vector<std::vector<PortExtras>> extras_;          // [node][port]
  std::vector<std::vector<std::vector<uint16_t>>> mft_;  // [switch][position][MLID - 0xC000]
  std::vector<ArState> ar_;                              // [node]; empty for CAs
  SimCc cc_;
  SimVPorts vports_;
  uint16_t ar_attr(const mad::Smp& s, fabric::NodeIndex n, mad::SmpData& data);
  std::map<uint16_t, size_t> sets_, lid_sets_;
  std::vector<std::vector<MKeyState>> mkey_;             // [node][port]
  std::vector<std::vector<perf::PortCounters>> pc_;      // [node][port]
  std::vector<std::vector<perf::PortCountersExt>> pce_;  // [node][port]
  std::vector<uint16_t> pma_caps_;
  uint64_t pma_queries_ = 0;
  std::function<void(fabric::NodeIndex, PortNum)> on_client_reregister_;
  Outcome process_gmp(const mad::MadBuf& req, fabric::NodeIndex sm_node, PortNum sm_port, Lid dlid);
  // Ports disabled by a PortInfo Set, and the port their cable leads to.
  std::map<std::pair<fabric::NodeIndex, PortNum>, std::pair<fabric::NodeIndex, PortNum>> disabled_;
  const mad::Clock* clock_ = nullptr;
  std::vector<std::pair<uint16_t, mad::MadBuf>> traps_;  // (SM LID, trap)
  std::map<std::pair<fabric::NodeIndex, PortNum>, SmAgent> agents_;
};

}  // namespace weft::simulator
