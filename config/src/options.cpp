#include "weft/config/options.hpp"
#include "weft/text.hpp"
#include "weft/text_file.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace weft::config {

namespace {

using text::trim;

constexpr std::string_view kQosHelp[][2] = {
    {"", "every port type"},           {"ca_", "CA ports"},      {"sw0_", "switch port 0"},
    {"swe_", "switch external ports"}, {"rtr_", "router ports"},
};

std::vector<OptionSpec> build_table() {
  std::vector<OptionSpec> t = {
      {"guid", Type::kString, "0x0", 0, 0, false,
       "port GUID the SM binds to (0x0 = first port that is up)"},
      {"max_wire_smps", Type::kInt, "64", 1, 256, true,
       "SMPs outstanding on the wire at once (64: as fast as 256 on ibsim's 444-switch tree; "
       "384 and up deadlock ibsim's umad2sim)"},
      {"transaction_timeout", Type::kInt, "200", 1, 60000, true, "ms to wait for an SMP reply"},
      {"transaction_retries", Type::kInt, "3", 0, 100, true, "extra attempts after a timeout"},
      {"long_transaction_timeout", Type::kInt, "500", 1, 60000, true,
       "ms to wait for the reply to a Set a device takes long to carry out: an "
       "SLtoVLMappingTable Set for all input ports, on switches that take one "
       "(OptimizedSLtoVLMappingProgramming); below transaction_timeout, transaction_timeout"},
      {"transaction_rounds", Type::kInt, "3", 1, 10, true,
       "rounds of 1 + transaction_retries attempts an SMP gets when every attempt of a round "
       "went unanswered, later rounds waiting twice as long (twice transaction_timeout, or "
       "long_transaction_timeout); while the fabric "
       "shows loss twice as many, four times to a device that answered before (1 = "
       "OpenSM's behaviour: one round)"},
      {"sweep_interval", Type::kInt, "10", 0, 86400, true,
       "seconds between light sweeps (0 = none)"},
      {"drift_check_blocks", Type::kInt, "1", 0, 1024, true,
       "LFT blocks of each switch read back every sweep and compared with what weft wrote "
       "(rotating: every block within ceil(blocks / N) sweeps; 0 = none); one that differs "
       "has the switch read back whole and rewritten"},
      {"drift_check_table_blocks", Type::kInt, "256", 0, 65536, true,
       "P_Key, SL2VL and VLArb blocks read back every sweep, fabric-wide, and compared with "
       "what weft wrote (rotating: every block within ceil(blocks held / N) sweeps; 0 = none); "
       "one that differs is read again and rewritten"},
      {"use_optimized_slvl", Type::kBool, "TRUE", 0, 0, true,
       "one SLtoVLMappingTable Set for every input port of a switch (or of all its ports) where "
       "its SwitchInfo offers OptimizedSLtoVLMappingProgramming; FALSE: a Set per input and "
       "output port pair everywhere (weft's default TRUE; OpenSM's FALSE)"},
      {"virt_enabled", Type::kInt, "0", 0, 2, true,
       "SR-IOV virtual ports on CA ports that support them (NVIDIA's virtualization): 0 "
       "leaves them alone, 1 disables virtualization there, 2 enables it and discovers, "
       "gives LIDs to, partitions and activates the vports"},
      {"virt_max_ports_in_process", Type::kInt, "64", 1, 65535, true,
       "CA ports whose virtual ports are read at once"},
      {"virt_default_hop_limit", Type::kInt, "2", 0, 255, true,
       "HopLimit of the SA's PathRecords with an SR-IOV virtual port at either end (above 1 "
       "the requester sends a GRH, whose GID is how a CA tells apart the VFs sharing its "
       "port's LID)"},
      {"lmc", Type::kInt, "0", 0, 7, false, "LID mask control: 2^lmc LIDs per CA port"},
      {"sm_priority", Type::kInt, "0", 0, 15, true,
       "SMInfo priority: of two SMs the higher is master (equal: the lower port GUID)"},
      {"sm_key", Type::kString, "0x0000000000000001", 0, 0, false,
       "SMInfo:SM_Key, shared by the SMs of one subnet (OpenSM's default 1; an SM answering "
       "with another key is ignored)"},
      {"sa_key", Type::kString, "0x0000000000000001", 0, 0, true,
       "the SA's SM_Key (OpenSM's default 1): a request carrying it is trusted (P_KeyTableRecords "
       "are for trusted requests only); one carrying another non-zero key is dropped"},
      {"m_key", Type::kString, "0x0000000000000000", 0, 0, true,
       "M_Key every port is given, or with m_key_per_port the secret each port's own key is "
       "derived from (0 = no M_Key protection)"},
      {"m_key_per_port", Type::kBool, "FALSE", 0, 0, true,
       "TRUE: a key per port, HMAC-SHA256 of its GUID under m_key (a key read off one port "
       "opens no other); FALSE: m_key itself on every port, as OpenSM"},
      {"m_key_protection_level", Type::kInt, "0", 0, 3, true,
       "M_Key protection: 0 a Get without the key reads it, 1 reads it as 0, 2 and 3 get no "
       "answer; a Set without the key is refused at every level"},
      {"m_key_lease_period", Type::kInt, "0", 0, 65535, true,
       "seconds after an SMP with a wrong key that a port falls back to protection 0 unless "
       "the SM reaches it first (0 = never)"},
      {"m_key_lookup", Type::kBool, "TRUE", 0, 0, true,
       "TRUE: each SMP carries the key its port holds (STATE_DIR/guid2mkey); FALSE: m_key"},
      {"sminfo_polling_timeout", Type::kInt, "10000", 100, 3600000, true,
       "ms between a standby's polls of the master's SMInfo"},
      {"polling_retry_number", Type::kInt, "4", 0, 1000, true,
       "unanswered polls in a row after which a standby takes over"},
      {"trap_holdoff_ms", Type::kInt, "1000", 0, 3600000, true,
       "a LID that traps again within this many ms gets no sweep of its own: the next "
       "(interval) sweep is heavy"},
      {"flap_threshold", Type::kInt, "6", 2, 100000, true,
       "link changes of one port within flap_window_s after which it is reported flapping"},
      {"flap_window_s", Type::kInt, "60", 1, 86400, true, "the window flap_threshold counts in"},
      {"flap_policy", Type::kString, "report", 0, 0, true,
       "what a flapping port gets: report (logged, an event, on /api/v1/sm), or down (its "
       "link disabled at the switch port(s), kept so across restarts in STATE_DIR/ports-down "
       "until POST /api/v1/ports/GUID/PORT/enable)"},
      {"perfmgr", Type::kBool, "FALSE", 0, 0, true,
       "TRUE: read every port's PerfMgt counters each perfmgr_sweep_time_s (the master), "
       "served on /api/v1/ports/GUID/PORT/counters, /api/v1/health and /metrics"},
      {"perfmgr_sweep_time_s", Type::kInt, "180", 1, 86400, true,
       "seconds from one counter sweep's start to the next's"},
      {"perfmgr_max_outstanding_queries", Type::kInt, "500", 1, 65536, true,
       "counter queries on the wire at once (apart from the SMPs: a counter sweep never "
       "holds a sweep back)"},
      {"perfmgr_ignore_cas", Type::kBool, "FALSE", 0, 0, true, "TRUE: switch ports only"},
      {"perfmgr_log_errors", Type::kBool, "TRUE", 0, 0, true,
       "log every error counter that moved, with its count"},
      {"perfmgr_xmit_wait_log", Type::kBool, "FALSE", 0, 0, true,
       "log ports whose PortXmitWait passed perfmgr_xmit_wait_threshold"},
      {"perfmgr_xmit_wait_threshold", Type::kInt, "65535", 0, 4294967295L, true,
       "PortXmitWait ticks within one counter sweep past which a port is congested (0 = never)"},
      {"perfmgr_error_thresholds_file", Type::kString, "", 0, 0, true,
       "error thresholds in infiniband-diags' error_thresholds grammar (Name=count; empty: its "
       "defaults, SymbolErrorCounter=10 ... VL15Dropped=100), counted within "
       "perfmgr_health_window_s"},
      // Congestion control (IBTA Annex A10), OpenSM's options read as OpenSM reads them
      // (weft/cc/options.hpp).
      {"congestion_control", Type::kBool, "FALSE", 0, 0, true,
       "TRUE: program congestion control into every switch and CA port whose CongestionInfo "
       "answers (the master, after each sweep)"},
      {"cc_key", Type::kString, "0x0000000000000000", 0, 0, true,
       "CC_Key set in every device and carried by every CC MAD (0 = none)"},
      {"cc_max_outstanding_mads", Type::kInt, "500", 1, 65535, true,
       "CC MADs on the wire at once (within the MAD engine's GMP window)"},
      {"cc_sw_cong_setting_control_map", Type::kString, "0x0", 0, 0, true,
       "SwitchCongestionSetting Control_Map: which of its fields a Set applies (32 bits)"},
      {"cc_sw_cong_setting_victim_mask", Type::kString,
       "0x0000000000000000000000000000000000000000000000000000000000000000", 0, 0, true,
       "ports (bit i: port i, up to 256 bits in hex) that mark even when they are the victim"},
      {"cc_sw_cong_setting_credit_mask", Type::kString,
       "0x0000000000000000000000000000000000000000000000000000000000000000", 0, 0, true,
       "ports (bit i: port i) where credit starvation is detected"},
      {"cc_sw_cong_setting_threshold", Type::kInt, "0x00", 0, 15, true,
       "how readily a switch port marks FECN (0 none .. 15 most)"},
      {"cc_sw_cong_setting_packet_size", Type::kInt, "0", 0, 255, true,
       "packets smaller than this many 64-byte credits are not marked"},
      {"cc_sw_cong_setting_credit_starvation_threshold", Type::kInt, "0x00", 0, 15, true,
       "credit starvation threshold (0 .. 15)"},
      {"cc_sw_cong_setting_credit_starvation_return_delay", Type::kString, "0:0", 0, 0, true,
       "credit starvation return delay, SHIFT:MULTIPLIER (0..3 : 0..16383)"},
      {"cc_sw_cong_setting_marking_rate", Type::kInt, "0", 0, 65535, true,
       "packets between two FECN marks"},
      {"cc_ca_cong_setting_port_control", Type::kInt, "0x0000", 0, 65535, true,
       "CACongestionSetting Port_Control"},
      {"cc_ca_cong_setting_control_map", Type::kInt, "0x0000", 0, 65535, true,
       "SLs (bit i: SL i) whose CA congestion entry applies"},
      {"cc_ca_cong_setting_ccti_timer", Type::kString, "0 0", 0, 0, true,
       "SL VALUE: that SL's CCTI_Timer (one line per SL)"},
      {"cc_ca_cong_setting_ccti_increase", Type::kString, "0 0", 0, 0, true,
       "SL VALUE: that SL's CCTI_Increase (one line per SL)"},
      {"cc_ca_cong_setting_trigger_threshold", Type::kString, "0 0", 0, 0, true,
       "SL VALUE: that SL's Trigger_Threshold (one line per SL)"},
      {"cc_ca_cong_setting_ccti_min", Type::kString, "0 0", 0, 0, true,
       "SL VALUE: that SL's CCTI_Min (one line per SL)"},
      {"cc_cct", Type::kString, "", 0, 0, true,
       "the CA congestion control table, SHIFT:MULTIPLIER,... (up to 128 entries; empty: "
       "CCTI_Limit 0 as OpenSM sends)"},
      {"cc_cct_max_delay_ns", Type::kInt, "0", 0, 100000000, true,
       "with cc_cct empty: each CA port's table made for its link, its inter-packet delay "
       "rising evenly to this many ns over cc_cct_limit + 1 entries (0 = OpenSM's one block "
       "with CCTI_Limit 0; weft's own)"},
      {"cc_cct_limit", Type::kInt, "127", 1, 16319, true,
       "CCTI_Limit of a table made from cc_cct_max_delay_ns (cut to the port's "
       "ControlTableCap; weft's own)"},
      {"cc_log_interval_s", Type::kInt, "60", 0, 86400, true,
       "seconds between reads of every configured device's CongestionLog (0 = never): the "
       "congested ports and flows on /api/v1/congestion, congestion events, /metrics "
       "(weft's own)"},
      {"perfmgr_metrics_ca_ports", Type::kBool, "TRUE", 0, 0, true,
       "FALSE: /metrics carries switch ports' counter and congestion series only (large "
       "fabrics)"},
      {"perfmgr_health_window_s", Type::kInt, "3600", 1, 31536000, true,
       "seconds an error counts toward its threshold"},
      {"unhealthy_port_policy", Type::kString, "report", 0, 0, true,
       "a port past an error threshold is marked unhealthy (STATE_DIR/unhealthy-ports, until "
       "POST /api/v1/ports/GUID/PORT/healthy) and: report (logged, an event), reroute (routes "
       "avoid its switch-to-switch link from the next sweep) or isolate (its link left down at "
       "the switch port)"},
      {"routing_engine", Type::kString, "minhop", 0, 0, true,
       "routing engines, a fallback chain: ftree,updn,minhop"},
      {"adaptive_routing", Type::kBool, "FALSE", 0, 0, true,
       "program adaptive routing into switches that support it (NVIDIA's AR attributes): the "
       "routing engine's port groups beside its static tables; routing_engine ar_updn, "
       "ar_ftree, ar_minhop and ar_dor ask for it too"},
      {"torus_config", Type::kString, "", 0, 0, true,
       "torus or mesh shape for dor (OpenSM's torus-2QoS.conf); read only when the "
       "chain has dor"},
      {"root_guid_file", Type::kString, "", 0, 0, true,
       "updn/dnup roots: a file of switch GUIDs, one per line (empty = detect)"},
      {"max_op_vls", Type::kInt, "5", 1, 5, false,
       "operational VLs: 1=VL0 2=VL0-1 3=VL0-3 4=VL0-7 5=VL0-14"},
      {"subnet_timeout", Type::kInt, "18", 0, 31, false,
       "PortInfo:SubnetTimeout (4.096us * 2^x), written whenever a port is configured"},
      {"packet_life_time", Type::kInt, "0x12", 0, 31, true,
       "SwitchInfo:LifeTimeValue, how long a packet may live in a switch (4.096us * 2^x; 20 "
       "and up: for ever)"},
      {"head_of_queue_lifetime", Type::kInt, "0x12", 0, 31, true,
       "PortInfo:HOQLife of switch ports facing switches (4.096us * 2^x; 20 and up: for ever)"},
      {"leaf_head_of_queue_lifetime", Type::kInt, "0x10", 0, 31, true,
       "PortInfo:HOQLife of switch ports facing CAs and routers, and of router ports"},
      {"vl_stall_count", Type::kInt, "0x07", 0, 7, true,
       "PortInfo:VLStallCount of switch ports facing switches (drops in a row before a VL "
       "stalls)"},
      {"leaf_vl_stall_count", Type::kInt, "0x07", 0, 7, true,
       "PortInfo:VLStallCount of switch ports facing CAs and routers"},
      {"log_file", Type::kString, "", 0, 0, false, "log file (empty or - = stderr)"},
      {"state_dir", Type::kString, "/var/lib/weft", 0, 0, false,
       "directory of persistent state (guid2lid, guid2mkey, neighbors)"},
      {"partition_config_file", Type::kString, "", 0, 0, true,
       "partitions in OpenSM's partitions.conf grammar (empty, or OpenSM's default path "
       "missing: Default=0x7fff : ALL=full)"},
      {"no_partition_enforcement", Type::kBool, "FALSE", 0, 0, true,
       "TRUE: switches do not filter P_Keys"},
      {"no_clients_rereg", Type::kBool, "FALSE", 0, 0, true,
       "TRUE: never set PortInfo:ClientReregister (otherwise end ports that support it are "
       "told once a master term, and when they lost their LID, to re-join their multicast "
       "groups and re-register)"},
      {"part_enforce", Type::kString, "both", 0, 0, true,
       "P_Key filtering on switch ports facing end ports: in, out, both or off"},
      {"allow_both_pkeys", Type::kBool, "FALSE", 0, 0, true,
       "a port may hold the full and the limited P_Key of one partition (=both)"},
      {"keep_pkey_indexes", Type::kBool, "TRUE", 0, 0, false,
       "a P_Key a port already holds keeps its index"},
      {"qos", Type::kBool, "FALSE", 0, 0, true,
       "program SL2VL and VL arbitration from the qos_* options, apply the QoS policy"},
      {"qos_policy_file", Type::kString, "", 0, 0, true,
       "QoS policy in OpenSM's qos-policy.conf grammar, applied to PathRecords when qos is "
       "TRUE (empty, or OpenSM's default path missing: none)"},
      {"rest_listen", Type::kString, "127.0.0.1:7443", 0, 0, false,
       "the REST API's ADDR:PORT, or off (weft sm --once serves none unless --rest is given)"},
      {"rest_users_file", Type::kString, "", 0, 0, false,
       "REST users, name:crypt-hash:role lines (empty: STATE_DIR/rest-users, made with a "
       "random admin password when missing)"},
      {"rest_tls_cert", Type::kString, "", 0, 0, false,
       "PEM certificate chain for HTTPS (with rest_tls_key; empty: plain HTTP)"},
      {"rest_tls_key", Type::kString, "", 0, 0, false, "PEM private key for HTTPS"},
      {"rest_partition_file", Type::kString, "", 0, 0, false,
       "partitions made over REST, in partitions.conf grammar, rewritten whole by weft (empty: "
       "STATE_DIR/partitions.rest.conf)"},
      {"rest_max_body", Type::kInt, "16777216", 1024, 1073741824, false,
       "largest REST request body in bytes (413 above it)"},
      {"rest_max_connections", Type::kInt, "256", 1, 65536, false, "REST connections open at once"},
      {"rest_max_connections_per_source", Type::kInt, "32", 1, 65536, false,
       "REST connections open at once from one client address (more are closed as they come), "
       "so that slow or many clients from one address cannot take every connection"},
      {"rest_read_timeout_ms", Type::kInt, "10000", 100, 3600000, false,
       "ms to read a REST request (its header and body), and to wait for the next one on a kept "
       "connection"},
      {"rest_timeout_ms", Type::kInt, "30000", 100, 3600000, false,
       "ms to handle a REST request and to write its answer"},
      {"rest_token_ttl", Type::kInt, "604800", 60, 315360000, false, "seconds a REST token lasts"},
      {"state_store", Type::kString, "dir", 0, 0, false,
       "where the master's state lives (guid2lid, guid2mkey, neighbors, REST partitions and "
       "tokens, unhealthy and kept-down ports): dir (STATE_DIR) or "
       "etcd://HOST:PORT[,HOST:PORT...]/PREFIX (written by the master only, fenced by its "
       "lease; standbys watch it; STATE_DIR keeps the local copy)"},
      {"state_store_lease_s", Type::kInt, "0", 0, 3600, false,
       "seconds of the etcd lease on PREFIX/master, renewed while the master reaches its "
       "fabric (0: 2 x sweep_interval + 5, at least 10)"},
      {"etcd_cacert", Type::kString, "", 0, 0, false,
       "CA bundle to verify etcd's certificate (as etcdctl --cacert; any TLS option: https)"},
      {"etcd_cert", Type::kString, "", 0, 0, false, "client certificate for etcd (--cert)"},
      {"etcd_key", Type::kString, "", 0, 0, false, "client key for etcd (--key)"},
      {"etcd_user", Type::kString, "", 0, 0, false,
       "etcd user, NAME or NAME:PASSWORD (as etcdctl --user)"},
      {"etcd_password", Type::kString, "", 0, 0, false,
       "etcd password when etcd_user has none (as etcdctl --password)"},
  };
  // OpenSM's QoS option family: qos_<type>max_vls, high_limit, vlarb_high, vlarb_low, sl2vl.
  static std::vector<std::string> names;  // string_views in the table point into these
  names.reserve(5 * 5);
  static std::vector<std::string> helps;
  helps.reserve(5 * 5);
  for (const auto& q : kQosHelp) {
    const std::string p = "qos_" + std::string(q[0]);
    const std::string who = std::string(q[1]);
    auto add = [&](const std::string& n, Type ty, std::string_view def, long lo, long hi,
                   const std::string& h) {
      names.push_back(n);
      helps.push_back(h);
      t.push_back({names.back(), ty, def, lo, hi, true, helps.back()});
    };
    add(p + "max_vls", Type::kInt, "0", 0, 15, "data VLs for " + who + " (0 = from the base)");
    add(p + "high_limit", Type::kInt, "-1", -1, 255,
        "VLHighLimit for " + who + " (-1 = from the base)");
    add(p + "vlarb_high", Type::kString, "", 0, 0,
        "high-priority VL arbitration for " + who + ": VL:weight,...");
    add(p + "vlarb_low", Type::kString, "", 0, 0,
        "low-priority VL arbitration for " + who + ": VL:weight,...");
    add(p + "sl2vl", Type::kString, "", 0, 0, "SL to VL map for " + who + ": 16 VLs");
  }
  return t;
}

const OptionSpec* find(std::string_view name) {
  for (const auto& o : option_table())
    if (o.name == name) return &o;
  return nullptr;
}

const ForeignOption* find_foreign(std::string_view name) {
  for (const auto& o : opensm_only_options())
    if (o.name == name) return &o;
  return nullptr;
}

const ForeignOption* find_nvidia(std::string_view name) {
  for (const auto& o : nvidia_only_options())
    if (o.name == name) return &o;
  return nullptr;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A whole-string integer in C syntax (0x.., decimal, leading '-').
bool parse_long(const std::string& s, long* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(s.c_str(), &end, 0);
  if (errno || *end) return false;
  *out = x;
  return true;
}

bool parse_bool(const std::string& s, bool* out) {
  const std::string l = lower(s);
  if (l == "true") return *out = true, true;
  if (l == "false") return *out = false, true;
  return false;
}

// Values OpenSM would treat alike: "(null)" and "", 0x12 and 18, TRUE and true.
bool same_value(std::string a, std::string b) {
  if (a == "(null)") a.clear();
  if (b == "(null)") b.clear();
  long x, y;
  if (parse_long(a, &x) && parse_long(b, &y)) return x == y;
  // 64-bit masks (cc_sw_cong_setting_victim_mask) overflow long: compare as hex digits.
  auto digits = [](std::string s) {
    s = lower(s);
    if (s.starts_with("0x")) s = s.substr(2);
    s.erase(0, std::min(s.find_first_not_of('0'), s.size()));
    return s;
  };
  if (a.starts_with("0x") && b.starts_with("0x")) return digits(a) == digits(b);
  return lower(a) == lower(b);
}

std::string suggestion(std::string_view name) {
  std::vector<std::string_view> names;
  for (const auto& o : option_table()) names.push_back(o.name);
  for (const auto& o : opensm_only_options()) names.push_back(o.name);
  for (const auto& o : nvidia_only_options()) names.push_back(o.name);
  return text::did_you_mean(name, names);
}

Result<void> check_value(const OptionSpec& o, std::string_view name, const std::string& value,
                         const std::string& origin) {
  const std::string n(name);
  if (o.type == Type::kInt) {
    long x = 0;
    if (!parse_long(value, &x))
      return fail(Errc::kInvalidInput,
                  origin + ": " + n + " wants an integer, got \"" + value + "\"");
    if (x < o.min || x > o.max)
      return fail(Errc::kInvalidInput, origin + ": " + n + " = " + value + " is outside " +
                                           std::to_string(o.min) + ".." + std::to_string(o.max));
  } else if (o.type == Type::kBool) {
    bool b;
    if (!parse_bool(value, &b))
      return fail(Errc::kInvalidInput,
                  origin + ": " + n + " wants TRUE or FALSE, got \"" + value + "\"");
  }
  if (name == "guid" || name == "sm_key" || name == "sa_key" || name == "m_key" ||
      name == "cc_key") {
    char* end = nullptr;
    errno = 0;
    (void)std::strtoull(value.c_str(), &end, 0);
    if (value.empty() || *end || errno == ERANGE || value.front() == '-')
      return fail(Errc::kInvalidInput,
                  origin + ": " + n + " wants a 64-bit number like 0x0002c90300001001, got \"" +
                      value + "\"");
  }
  if (name == "flap_policy" && value != "report" && value != "down")
    return fail(Errc::kInvalidInput,
                origin + ": flap_policy wants report or down, got \"" + value + "\"");
  if (name == "unhealthy_port_policy" && value != "report" && value != "reroute" &&
      value != "isolate")
    return fail(Errc::kInvalidInput, origin +
                                         ": unhealthy_port_policy wants report, reroute or "
                                         "isolate, got \"" +
                                         value + "\"");
  if (name == "part_enforce" && value != "in" && value != "out" && value != "both" &&
      value != "off")
    return fail(Errc::kInvalidInput,
                origin + ": part_enforce wants in, out, both or off, got \"" + value + "\"");
  if (!value.empty() && name.starts_with("qos_")) {
    if (name.ends_with("sl2vl")) {
      if (auto r = parse_sl2vl(value); !r)
        return fail(Errc::kInvalidInput, origin + ": " + n + ": " + r.error().message);
    } else if (name.find("vlarb_") != std::string_view::npos) {
      if (auto r = parse_vlarb(value); !r)
        return fail(Errc::kInvalidInput, origin + ": " + n + ": " + r.error().message);
    }
  }
  return {};
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = build_table();
  return table;
}

const std::vector<ForeignOption>& nvidia_only_options() {
  static const std::vector<ForeignOption> table = {
      // Adaptive routing and SHIELD (routing_engine ar_* is read by the engine chain).
      {"ar_mode", ""},
      {"shield_mode", ""},
      {"ar_transport_mask", "0xA"},
      {"ar_sl_mask", ""},
      {"adv_routing_engine", ""},
      {"enable_ar_by_device_cap", ""},
      {"enable_ar_group_copy", ""},
      {"enable_empty_arlft_optimization", ""},
      {"ar_tree_asymmetric_flow", ""},
      {"ar_tree_asymmetric_flow_threshold", ""},
      {"ar_tree_asymmetric_flow_threshold_limit", "2"},
      {"adaptive_timeout_sl_mask", "0xFFFF"},
      {"routing_flags", ""},
      {"dump_ar", ""},
      {"cache_ar_group_id", ""},
      {"max_cas_on_spine", ""},
      {"dfp_max_cas_on_spine", "2"},
      {"dfp_down_up_turns_mode", "1"},
      {"dfp_find_roots_color_algorithm", ""},
      {"find_roots_color_algorithm", "TRUE"},
      {"max_wire_smps_per_device", "2"},
      {"pfrn_sl", "0"},
      {"pfrn_mask_clear_timeout", "180"},
      {"pfrn_mask_force_clear_timeout", "720"},
      {"pfrn_over_router_enabled", ""},
      {"hbf_sl_mask", "0xFFFF"},
      {"hbf_hash_type", "0"},
      {"hbf_seed_type", ""},
      {"hbf_seed", ""},
      {"hbf_hash_fields", "0x40F00C0F"},
      {"hbf_weights", "auto"},
      {"nvl_reassign_rails", "FALSE"},
      // Virtualization (virtual ports).
      {"aguid_default_hop_limit", "1"},
      {"enable_virt_rec_ext", ""},
      {"virt_dump_file", ""},
      {"rtr_aguid_enable", ""},
      // The SA's enhanced trust model, keys.
      {"sa_enhanced_trust_model", "FALSE"},
      {"sa_etm_allow_untrusted_proxy_requests", "TRUE"},
      {"sa_etm_allow_untrusted_guidinfo_rec", "TRUE"},
      {"sa_etm_allow_guidinfo_rec_by_vf", "TRUE"},
      {"sa_etm_max_num_mcgs", "0"},
      {"sa_etm_max_num_srvcs", "0"},
      {"sa_etm_max_num_event_subs", "0"},
      {"sa_rate_threshold", "0"},
      {"sa_check_sgid_spoofing", "FALSE"},
      {"periodic_key_update", "0"},
      {"key_mgr_seed", "0x0000000000000000"},
      {"cc_key_enable", "0"},
      {"vs_key_enable", "0"},
      {"n2n_key_enable", "0"},
      {"cc_key_lease_period", "60"},
      {"vs_key_lease_period", "60"},
      {"n2n_key_lease_period", "60"},
      {"cc_key_protect_bit", "1"},
      {"enable_sa", "TRUE"},
      // Sweeps, health monitoring, the rest.
      {"max_seq_redisc", "4"},
      {"rediscovery_max_link_penalty", "10"},
      {"rediscovery_link_penalty_step", "2"},
      {"client_rereg_mode", "2"},
      {"master_sm_priority", "14"},
      {"master_sm_lid", "0"},
      {"enable_sm_port_failover", "FALSE"},
      {"light_sweep_spst", "TRUE"},
      {"drop_unreachable_ports_enabled", "TRUE"},
      {"planarized_routing_enabled", "1"},
      {"drop_subscr_on_report_fail", "TRUE"},
      {"routing_threads_num", "0"},
      {"max_threads_per_core", "0"},
      {"gmp_traps_threads_num", "1"},
      {"offsweep_balancing_window", "180"},
      {"max_topologies_per_sw", "4"},
      {"force_heavy_sweep_window", "-1"},
      {"hm_num_reboots", "10"},
      {"hm_reboots_period_secs", "900"},
      {"hm_num_set_err_sweeps", "5"},
      {"hm_num_set_err_sweeps_window", "7"},
      {"hm_num_no_resp_sweeps", "5"},
      {"hm_num_no_resp_sweeps_window", "7"},
      {"hm_num_traps", "60"},
      {"hm_num_traps_period_secs", "90"},
      {"hm_num_flapping_sweeps", "5"},
      {"hm_num_flapping_sweeps_window", "30"},
      {"hm_num_illegal", "1"},
      {"osm_stats_interval", "60"},
      {"osm_stats_dump_limit", "20"},
      {"osm_perflog_dump_limit", "20"},
      {"sharp_enabled", "2"},
      {"flid_compression", "2"},
      {"rtr_pr_mtu", "255"},
      {"rtr_pr_rate", "255"},
      {"rtr_pr_flow_label", "0"},
      {"rtr_pr_tclass", "0"},
      {"suppress_mc_pkey_traps", "0x01"},
      {"qos_config_vl_enabled", "FALSE"},
      {"port_recovery_policy_enabled", "0"},
      {"fast_recovery_enabled", "0"},
      {"mlnx_congestion_control", "0"},
      {"fabric_mode_profile", "none"},
      {"rereg_on_guid_migr", ""},
      {"aguid_inout_notice", ""},
      {"rediscovery_max_node_penalty", ""},
      {"rediscovery_node_penalty_step", ""},
      {"smp_threads", ""},
      {"gmp_threads", ""},
      {"offsweep_balancing_enabled", ""},
      {"enable_inc_mc_routing", ""},
      {"mepi_cache_enabled", ""},
      {"enable_crashd", ""},
      {"validate_smps", ""},
      {"issu_mode", ""},
      {"issu_timeout", ""},
      {"issu_pre_upgrade_time", ""},
      {"tenants_policy_enabled", ""},
      {"pgrp_policy_file", ""},
      {"topo_policy_file", ""},
      {"rch_policy_file", ""},
      {"device_configuration_file", ""},
      {"held_back_sw_file", ""},
      {"fabric_mode_policy_file", ""},
  };
  return table;
}

const std::vector<ForeignOption>& opensm_only_options() {
  // Every option `opensm -c` (3.3.23) writes that weft does not implement, with the
  // value OpenSM writes for it.
  static const std::vector<ForeignOption> table = {
      {"subnet_prefix", "0xfe80000000000000"},
      {"lmc_esp0", "FALSE"},
      {"sm_sl", "0"},
      {"force_link_speed", "15"},
      {"force_link_speed_ext", "31"},
      {"force_link_width", "255"},
      {"fdr10", "1"},
      {"local_phy_errors_threshold", "0x08"},
      {"overrun_errors_threshold", "0x08"},
      {"use_mfttop", "TRUE"},
      {"sm_assigned_guid", "0x00"},
      {"reassign_lids", "FALSE"},
      {"force_heavy_sweep", "FALSE"},
      {"sweep_on_trap", "TRUE"},
      {"port_profile_switch_nodes", "FALSE"},
      {"port_prof_ignore_file", "(null)"},
      {"hop_weights_file", "(null)"},
      {"port_search_ordering_file", "(null)"},
      {"avoid_throttled_links", "FALSE"},
      {"connect_roots", "FALSE"},
      {"use_ucast_cache", "FALSE"},
      {"lid_matrix_dump_file", "(null)"},
      {"lfts_file", "(null)"},
      {"cn_guid_file", "(null)"},
      {"io_guid_file", "(null)"},
      {"quasi_ftree_indexing", "FALSE"},
      {"max_reverse_hops", "0"},
      {"ids_guid_file", "(null)"},
      {"guid_routing_order_file", "(null)"},
      {"do_mesh_analysis", "FALSE"},
      {"lash_start_vl", "0"},
      {"nue_max_num_vls", "1"},
      {"nue_include_switches", "FALSE"},
      {"port_shifting", "FALSE"},
      {"scatter_ports", "0"},
      {"guid_routing_order_no_scatter", "FALSE"},
      {"sa_db_file", "(null)"},
      {"sa_db_dump", "FALSE"},
      {"ignore_other_sm", "FALSE"},
      {"honor_guid2lid_file", "FALSE"},
      {"max_wire_smps2", "4"},
      {"max_smps_timeout", "600000"},
      {"max_msg_fifo_timeout", "10000"},
      {"single_thread", "FALSE"},
      {"daemon", "FALSE"},
      {"sm_inactive", "FALSE"},
      {"babbling_port_policy", "FALSE"},
      {"drop_event_subscriptions", "FALSE"},
      {"ipoib_mcgroup_creation_validation", "TRUE"},
      {"mcgroup_join_validation", "TRUE"},
      {"use_original_extended_sa_rates_only", "FALSE"},
      {"fsync_high_avail_files", "TRUE"},
      {"perfmgr_redir", "TRUE"},
      {"perfmgr_rm_nodes", "TRUE"},
      {"perfmgr_query_cpi", "TRUE"},
      {"event_db_dump_file", "(null)"},
      {"event_plugin_name", "(null)"},
      {"event_plugin_options", "(null)"},
      {"node_name_map_name", "(null)"},
      {"log_flags", "0x03"},
      {"force_log_flush", "FALSE"},
      {"log_max_size", "0"},
      {"accum_log_file", "TRUE"},
      {"per_module_logging_file", "/etc/opensm/per-module-logging.conf"},
      {"dump_files_dir", "/var/log/"},
      {"enable_quirks", "FALSE"},
      {"disable_multicast", "FALSE"},
      {"exit_on_fatal", "TRUE"},
      {"console", "off"},
      {"console_port", "10000"},
      {"suppress_sl2vl_mad_status_errors", "FALSE"},
      {"prefix_routes_file", "/etc/opensm/prefix-routes.conf"},
      {"consolidate_ipv6_snm_req", "FALSE"},
      {"log_prefix", "(null)"},
  };
  return table;
}

std::string template_text() {
  std::string out =
      "# weft.conf: the options of the weft subnet manager, in opensm.conf syntax (one\n"
      "# \"key value\" per line; '#' starts a comment; (null) is an empty value).\n"
      "# Every option is listed at its default, commented out: uncomment a line and\n"
      "# change its value to set it. Options that mean what an OpenSM option means\n"
      "# carry OpenSM's name, so an opensm.conf (opensm -c) loads too, with a warning\n"
      "# for each OpenSM option weft does not implement. Flags on weft sm's command\n"
      "# line win over this file. Check a file with: weft config check FILE\n"
      "# kill -HUP (systemctl reload weft) reads this file again: the options marked\n"
      "# \"SIGHUP applies it\" take effect at the next sweep, the others at a restart.\n";
  for (const auto& o : option_table()) {
    out += "\n# ";
    out += o.help;
    if (o.type == Type::kInt)
      out += " [" + std::to_string(o.min) + ".." + std::to_string(o.max) + "]";
    else if (o.type == Type::kBool)
      out += " [TRUE|FALSE]";
    if (o.reloadable) out += " (SIGHUP applies it)";
    out += "\n#";
    out += o.name;
    out += ' ';
    out += o.default_value.empty() ? std::string_view("(null)") : o.default_value;
    out += '\n';
  }
  return out;
}

Values defaults() {
  Values v;
  for (const auto& o : option_table())
    v.v_[std::string(o.name)] = {std::string(o.default_value), "default"};
  return v;
}

long Values::get_int(std::string_view name) const {
  auto it = v_.find(name);
  long x = 0;
  return it == v_.end() || !parse_long(it->second.first, &x) ? 0 : x;
}

bool Values::get_bool(std::string_view name) const {
  auto it = v_.find(name);
  bool b = false;
  return it != v_.end() && parse_bool(it->second.first, &b) && b;
}

const std::string& Values::get_str(std::string_view name) const {
  static const std::string empty;
  auto it = v_.find(name);
  return it == v_.end() ? empty : it->second.first;
}

const std::string& Values::origin(std::string_view name) const {
  static const std::string none = "unset";
  auto it = v_.find(name);
  return it == v_.end() ? none : it->second.second;
}

Result<void> set(Values& v, std::string_view name, std::string_view value_in,
                 const std::string& origin) {
  std::string value = trim(value_in);
  if (value == "(null)") value.clear();  // how OpenSM writes an empty string
  const OptionSpec* o = find(name);
  if (!o)
    return fail(Errc::kInvalidInput,
                origin + ": unknown option \"" + std::string(name) + "\"" + suggestion(name));
  if (auto r = check_value(*o, name, value, origin); !r) return r;
  // OpenSM writes "(null)" for an engine it leaves to its default.
  if (name == "routing_engine" && value.empty()) value = std::string(o->default_value);
  v.v_[std::string(name)] = {value, origin};
  if (per_sl(name)) v.each_[std::string(name)].emplace_back(value, origin);
  return {};
}

bool per_sl(std::string_view name) {
  return name == "cc_ca_cong_setting_ccti_timer" || name == "cc_ca_cong_setting_ccti_increase" ||
         name == "cc_ca_cong_setting_trigger_threshold" || name == "cc_ca_cong_setting_ccti_min";
}

const std::vector<std::pair<std::string, std::string>>& Values::each(std::string_view name) const {
  static const std::vector<std::pair<std::string, std::string>> kNone;
  auto it = each_.find(name);
  return it == each_.end() ? kNone : it->second;
}

Result<void> load_text(std::string_view text, const std::string& source, Values& v) {
  std::istringstream in{std::string(text)};
  std::string line;
  int no = 0;
  std::string errors;
  while (std::getline(in, line)) {
    ++no;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const std::string t = trim(line);
    if (t.empty()) continue;
    const size_t sp = t.find_first_of(" \t");
    const std::string key = t.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : trim(t.substr(sp));
    const std::string where = source + ":" + std::to_string(no);
    Result<void> r;
    if (const ForeignOption* f = find_foreign(key); f && !find(key)) {
      if (same_value(value, std::string(f->opensm_default)))
        ++v.opensm_defaults_;
      else
        v.warnings_.push_back(
            where + ": OpenSM option \"" + key + "\" is not implemented by weft; \"" + value +
            "\" has no effect (OpenSM's default is \"" + std::string(f->opensm_default) + "\")");
      continue;
    }
    if (const ForeignOption* f = find_nvidia(key); f && !find(key) && !find_foreign(key)) {
      if (!f->opensm_default.empty() && same_value(value, std::string(f->opensm_default)))
        ++v.opensm_defaults_;
      else
        v.warnings_.push_back(
            where + ": option \"" + key + "\" of NVIDIA's SM is not implemented by weft; \"" +
            value + "\" has no effect" +
            (f->opensm_default.empty()
                 ? std::string()
                 : " (NVIDIA's default is \"" + std::string(f->opensm_default) + "\")"));
      continue;
    }
    if (value.empty() && find(key) && find(key)->type != Type::kString)
      r = fail(Errc::kInvalidInput, where + ": \"" + key + "\" has no value");
    else
      r = set(v, key, value, where);
    if (!r) errors += (errors.empty() ? "" : "\n") + r.error().message;
  }
  if (!errors.empty()) return fail(Errc::kInvalidInput, errors);
  return {};
}

Result<void> load_file(const std::string& path, Values& v) {
  return parse_text_file(
      path, [&](std::string_view t, const std::string& src) { return load_text(t, src, v); });
}

Result<std::array<uint8_t, 16>> parse_sl2vl(std::string_view s) {
  std::array<uint8_t, 16> out{};
  size_t n = 0;
  std::stringstream ss{std::string(s)};
  std::string item;
  while (std::getline(ss, item, ',')) {
    long x;
    const std::string t = trim(item);
    if (!parse_long(t, &x) || x < 0 || x > 15)
      return fail(Errc::kInvalidInput,
                  "entry " + std::to_string(n + 1) + " \"" + t + "\" is not a VL (0-15)");
    if (n == 16) return fail(Errc::kInvalidInput, "more than 16 entries (one VL per SL)");
    out[n++] = static_cast<uint8_t>(x);
  }
  if (n != 16)
    return fail(Errc::kInvalidInput,
                std::to_string(n) + " entries, expected 16 (one VL per SL 0-15)");
  return out;
}

Result<std::vector<VlArbEntry>> parse_vlarb(std::string_view s) {
  std::vector<VlArbEntry> out;
  std::stringstream ss{std::string(s)};
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::string t = trim(item);
    const size_t c = t.find(':');
    long vl, w;
    if (c == std::string::npos || !parse_long(trim(t.substr(0, c)), &vl) ||
        !parse_long(trim(t.substr(c + 1)), &w))
      return fail(Errc::kInvalidInput,
                  "entry " + std::to_string(out.size() + 1) + " \"" + t + "\" is not VL:weight");
    if (vl < 0 || vl > 14 || w < 0 || w > 255)
      return fail(Errc::kInvalidInput, "entry " + std::to_string(out.size() + 1) + " \"" + t +
                                           "\": VL must be 0-14 and weight 0-255");
    if (out.size() == 64) return fail(Errc::kInvalidInput, "more than 64 entries");
    out.push_back({static_cast<uint8_t>(vl), static_cast<uint8_t>(w)});
  }
  if (out.empty()) return fail(Errc::kInvalidInput, "no VL:weight entries");
  return out;
}

}  // namespace weft::config
