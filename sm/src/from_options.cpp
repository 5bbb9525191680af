#include "weft/sm/from_options.hpp"

#include <algorithm>
#include <sstream>

#include "weft/cc/options.hpp"
#include "weft/config/option_files.hpp"
#include "weft/log.hpp"
#include "weft/mad/from_options.hpp"
#include "weft/perf/from_options.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/read_file.hpp"
#include "weft/routing/engine.hpp"

namespace weft::sm {

namespace {

bool chain_has(const std::string& chain, std::string_view engine) {
  std::stringstream ss(chain);
  std::string e;
  while (std::getline(ss, e, ','))
    if (e == engine) return true;
  return false;
}

}  // namespace

Result<SmOptions> sm_from_options(const config::Values& v) {
  SmOptions o;
  if (const std::string path = v.get_str("root_guid_file"); !path.empty()) {
    auto roots = read_file(path, routing::read_guid_list, v.origin("root_guid_file"));
    if (!roots) return std::unexpected(roots.error());
    o.roots = std::move(*roots);
  }
  // OpenSM writes a torus_config path into every opensm.conf; only dor reads it.
  if (const std::string path = v.get_str("torus_config");
      !path.empty() && chain_has(v.get_str("routing_engine"), "dor")) {
    auto t = read_file(path, routing::read_torus_spec, v.origin("torus_config"));
    if (!t) return std::unexpected(t.error());
    o.torus = std::move(*t);
  }
  o.engine = mad::engine_from_options(v);
  o.state_dir = v.get_str("state_dir");
  o.lmc = static_cast<uint8_t>(v.get_int("lmc"));
  o.routing_engine = v.get_str("routing_engine");
  o.adaptive_routing = v.get_bool("adaptive_routing");
  o.sm_priority = static_cast<uint8_t>(v.get_int("sm_priority"));
  o.sm_key = std::strtoull(v.get_str("sm_key").c_str(), nullptr, 0);
  o.sa_key = std::strtoull(v.get_str("sa_key").c_str(), nullptr, 0);
  o.sminfo_polling_timeout_ms = static_cast<uint32_t>(v.get_int("sminfo_polling_timeout"));
  o.mkey.m_key = std::strtoull(v.get_str("m_key").c_str(), nullptr, 0);
  o.mkey.per_port = v.get_bool("m_key_per_port");
  o.mkey.protect_bits = static_cast<uint8_t>(v.get_int("m_key_protection_level"));
  o.mkey.lease_period = static_cast<uint16_t>(v.get_int("m_key_lease_period"));
  o.mkey.lookup = v.get_bool("m_key_lookup");
  o.polling_retry_number = static_cast<int>(v.get_int("polling_retry_number"));
  o.trap_holdoff = std::chrono::milliseconds(v.get_int("trap_holdoff_ms"));
  o.flap_threshold = static_cast<int>(v.get_int("flap_threshold"));
  o.flap_window = std::chrono::seconds(v.get_int("flap_window_s"));
  o.drift_check_blocks = uint32_t(v.get_int("drift_check_blocks"));
  o.drift_check_table_blocks = uint32_t(v.get_int("drift_check_table_blocks"));
  o.use_optimized_sl2vl = v.get_bool("use_optimized_slvl");
  o.virt_enabled = uint8_t(v.get_int("virt_enabled"));
  o.virt_max_ports_in_process = uint32_t(v.get_int("virt_max_ports_in_process"));
  o.virt_default_hop_limit = uint8_t(v.get_int("virt_default_hop_limit"));
  auto flap = config::option_word(v, "flap_policy", flap_policy_named);
  if (!flap) return std::unexpected(flap.error());
  o.flap_policy = *flap;
  // A switch with a flapping port: at most one trap-driven heavy sweep per interval.
  o.flap_holdoff = std::chrono::seconds(std::max<long>(1, v.get_int("sweep_interval")));
  auto perf = perf::perf_from_options(v);
  if (!perf) return std::unexpected(perf.error());
  o.perf = std::move(*perf);
  auto cc = cc::cc_from_options(v);
  if (!cc) return std::unexpected(cc.error());
  o.cc = std::move(*cc);
  o.max_op_vls = static_cast<uint8_t>(v.get_int("max_op_vls"));
  o.subnet_timeout = static_cast<uint8_t>(v.get_int("subnet_timeout"));
  o.packet_life_time = static_cast<uint8_t>(v.get_int("packet_life_time"));
  o.head_of_queue_lifetime = static_cast<uint8_t>(v.get_int("head_of_queue_lifetime"));
  o.leaf_head_of_queue_lifetime = static_cast<uint8_t>(v.get_int("leaf_head_of_queue_lifetime"));
  o.vl_stall_count = static_cast<uint8_t>(v.get_int("vl_stall_count"));
  o.leaf_vl_stall_count = static_cast<uint8_t>(v.get_int("leaf_vl_stall_count"));
  auto parts = config::load_partition_file(v);
  if (!parts) return std::unexpected(parts.error());
  o.partitions = std::move(*parts);
  if (o.partitions)
    for (const auto& w : o.partitions->warnings) WEFT_LOG(Warn, "PRT-0005") << w;
  else
    WEFT_LOG(Info, "PRT-0006") << "no partition file: every end port is a full member of the "
                                  "Default partition 0x7fff";
  auto enforce = config::option_word(v, "part_enforce", part_enforce_named);
  if (!enforce) return std::unexpected(enforce.error());
  o.part_enforce = *enforce;
  o.no_partition_enforcement = v.get_bool("no_partition_enforcement");
  o.no_clients_rereg = v.get_bool("no_clients_rereg");
  o.allow_both_pkeys = v.get_bool("allow_both_pkeys");
  o.keep_pkey_indexes = v.get_bool("keep_pkey_indexes");
  auto q = qos::qos_from_options(v);
  if (!q) return std::unexpected(q.error());
  o.qos = std::move(*q);
  auto pol = config::load_qos_policy_file(v);
  if (!pol) return std::unexpected(pol.error());
  if (*pol) {
    for (const auto& w : (*pol)->warnings) WEFT_LOG(Warn, "QOS-0001") << w;
    if (!o.qos.enabled)
      WEFT_LOG(Warn, "QOS-0002") << v.origin("qos_policy_file")
                                 << ": qos_policy_file is set but qos is FALSE: the policy is "
                                    "not applied (as in OpenSM)";
    o.qos_policy = std::move(**pol);
  }
  return o;
}

}  // namespace weft::sm
