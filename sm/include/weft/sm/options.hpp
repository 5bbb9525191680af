// weft/sm/options.hpp — what the SM is told (SmOptions), as app/sm_config.cpp reads it
// from the option table, and the policies it names as enums. Part of the published view
// (Published::options): REST reads the options in force from here, not from the SM.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/cc/options.hpp"
#include "weft/config/partitions.hpp"
#include "weft/config/qos_policy.hpp"
#include "weft/mad/mad_engine.hpp"
#include "weft/perf/view.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/routing/engine.hpp"
#include "weft/sm/mkey.hpp"

namespace weft::sm {

// flap_policy: a flapping port is reported, or its link left down at the switch end.
enum class FlapPolicy : uint8_t { kReport, kDown };
// part_enforce: which direction switch ports facing CAs filter P_Keys in.
enum class PartEnforce : uint8_t { kBoth, kIn, kOut, kOff };
// The options' words for them ("report", "down"; "both", "in", "out", "off"); nullopt
// for any other word.
std::optional<FlapPolicy> flap_policy_named(std::string_view word);
std::optional<PartEnforce> part_enforce_named(std::string_view word);

struct SmOptions {
  mad::EngineOptions engine;
  std::string state_dir = "/var/lib/weft";  // holds guid2lid, guid2mkey, neighbors
  uint8_t lmc = 0;
  std::string routing_engine = "minhop";  // a chain: "ftree,updn,minhop"
  // adaptive_routing: the engine's AR port groups programmed into switches that hold AR
  // (an ar_* engine name asks for it too).
  bool adaptive_routing = false;
  std::vector<Guid> roots;                  // updn/dnup roots (root_guid_file); empty = detect
  std::optional<routing::TorusSpec> torus;  // dor's shape (torus_config)
  // After the first sweep that brings the subnet up as master: the heap's free memory
  // grown to as much as it holds in use, faulted in off the loop (weft/heap.hpp), so
  // that the first reroute builds its snapshot beside the published one without
  // faulting that memory in (0.45 s of the radix-56 tree's first reroute). Not an
  // option of the config: `weft sm` and `sim` set it where freed memory stays in the
  // heap (app/main.cpp).
  bool reserve_heap = false;
  uint8_t sm_priority = 0;
  uint64_t sm_key = 1;  // SMInfo:SM_Key (OpenSM's default, so they agree)
  uint64_t sa_key = 1;  // the SA's SM_Key: requests carrying it are trusted (OpenSM's sa_key)
  uint32_t sminfo_polling_timeout_ms = 10000;  // a standby polls its master this often
  int polling_retry_number = 4;                // unanswered polls before a standby takes over
  MKeyOptions mkey;                            // m_key and its kin (sm/mkey.hpp)
  uint8_t max_op_vls = 5;       // OpenSM's max_op_vls: 1=VL0 2=VL0-1 3=VL0-3 4=VL0-7 5=VL0-14
  uint8_t subnet_timeout = 18;  // OpenSM's subnet_timeout (4.096 us * 2^x)
  // The timers that drop what cannot move (OpenSM's names and defaults; 4.096 us * 2^x,
  // 20 and up: never). A switch's LifeTimeValue (packet_life_time) bounds a packet's
  // stay in it; HOQLife the time one waits at the head of an output port's queue, and
  // VLStallCount the drops in a row after which that VL stalls: on switch ports facing
  // switches (head_of_queue_lifetime, vl_stall_count) and on those facing end ports and
  // router ports (leaf_*). The net under a credit loop.
  uint8_t packet_life_time = 0x12;
  uint8_t head_of_queue_lifetime = 0x12, leaf_head_of_queue_lifetime = 0x10;
  uint8_t vl_stall_count = 7, leaf_vl_stall_count = 7;
  // Traps: a LID that traps again within trap_holdoff gets no sweep of its own (the next
  // interval's is heavy); a port whose link changes flap_threshold times within
  // flap_window is reported flapping.
  mad::Duration trap_holdoff = std::chrono::seconds(1);
  // drift_check_blocks (weft's own): LFT blocks per switch read back every sweep,
  // rotating, so that a change nobody announced is found within ceil(blocks / N) sweeps.
  uint32_t drift_check_blocks = 1;
  // drift_check_table_blocks (weft's own): P_Key, SL2VL and VLArb blocks read back every
  // sweep across the fabric, rotating through every block weft believes a port holds,
  // so that each is checked within ceil(blocks held / N) sweeps.
  uint32_t drift_check_table_blocks = 256;
  // use_optimized_slvl: one SL2VL Set for all input ports (and all output ports) of a
  // switch whose SwitchInfo offers it. On by default, unlike OpenSM: the radix-56 tree's
  // layers take 3,920 Sets with it, 12.5 million without.
  bool use_optimized_sl2vl = true;
  // SR-IOV virtual ports (virt_enabled): on CA ports whose PortInfo says they support
  // virtualization, leave it alone (0), turn it off (1), or turn it on and discover,
  // give LIDs to and partition their vports (2); virt_max_ports_in_process such ports
  // read at once.
  uint8_t virt_enabled = 0;
  uint32_t virt_max_ports_in_process = 64;
  uint8_t virt_default_hop_limit = 2;  // the SA's PathRecords with a VF at either end
  int flap_threshold = 6;
  mad::Duration flap_window = std::chrono::seconds(60);
  // A switch with a flapping port gets at most one trap-driven heavy sweep per
  // flap_holdoff (the daemon's sweep_interval); flap_policy "down" leaves a flapping
  // link disabled at its switch port(s) until enable_port() (STATE_DIR/ports-down).
  mad::Duration flap_holdoff = std::chrono::seconds(10);
  FlapPolicy flap_policy = FlapPolicy::kReport;
  // Partitions (partition_config_file, merged with those made over REST); nullopt: no
  // policy, every end port a full member of the Default partition.
  std::optional<config::PartitionPolicy> partitions;
  uint64_t partitions_generation = 0;  // which policy `partitions` is (see Published)
  PartEnforce part_enforce = PartEnforce::kBoth;
  bool no_partition_enforcement = false;
  // no_clients_rereg: never set PortInfo:ClientReregister (OpenSM's option of that name).
  bool no_clients_rereg = false;
  bool allow_both_pkeys = false;
  bool keep_pkey_indexes = true;
  // SL2VL and VL arbitration (qos_*). SL2VL is also written when a routing engine
  // layers its paths on more than one VL, qos or not.
  qos::QosConfig qos;
  // The QoS policy (qos_policy_file), applied to PathRecords under QoS.
  std::optional<config::QosPolicy> qos_policy;
  // The PerfMgr (perfmgr_*, unhealthy_port_policy): counters read every
  // perf.sweep_time by the daemon (perf_sweep()); a port past an error threshold is
  // marked unhealthy (STATE_DIR/unhealthy-ports) and, by policy, reported, routed
  // around (switch-to-switch links) or isolated (left down at its switch port).
  perf::PerfOptions perf;
  cc::CcOptions cc;  // congestion control (the CC manager beside the PerfMgr)
};

}  // namespace weft::sm
