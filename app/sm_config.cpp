#include "sm_config.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "read_file.hpp"
#include "weft/log.hpp"
#include "weft/qos/vl_tables.hpp"
#include "weft/rest/auth.hpp"
#include "weft/routing/engine.hpp"
#include "weft/sm/documents.hpp"

namespace weft::app {

namespace po = boost::program_options;

po::options_description sm_options() {
  po::options_description o("Options");
  o.add_options()("help,h", "this help")(
      "once", "one bring-up, then exit: 0 when the subnet is up, 1 (with the reason) when not")(
      "config", po::value<std::string>(), "OpenSM-style option file (key value lines)")(
      "state-dir", po::value<std::string>(), "persistent state (guid2lid); default /var/lib/weft")(
      "log-file", po::value<std::string>(), "log here instead of stderr (-: stderr)")(
      "log-level", po::value<std::string>()->default_value("info"), "debug, info, warn, error")(
      "window", po::value<std::string>(), "SMPs on the wire at once (max_wire_smps)")(
      "timeout", po::value<std::string>(), "ms per SMP attempt (transaction_timeout)")(
      "retries", po::value<std::string>(), "extra attempts (transaction_retries)")(
      "sweep-interval", po::value<std::string>(), "seconds between light sweeps (sweep_interval)")(
      "routing-engine", po::value<std::string>(),
      "routing engines, a fallback chain: ftree,updn,minhop (routing_engine)")(
      "torus-config", po::value<std::string>(), "dor's torus or mesh shape (torus_config)")(
      "root-guids", po::value<std::string>(),
      "updn/dnup roots, one GUID per line (root_guid_file)")("lmc", po::value<std::string>(),
                                                             "LID mask control (lmc)")(
      "priority", po::value<std::string>(), "SMInfo priority (sm_priority)")(
      "sm-key", po::value<std::string>(), "SMInfo SM_Key shared with the other SMs (sm_key)")(
      "polling-timeout", po::value<std::string>(),
      "ms between a standby's polls of the master (sminfo_polling_timeout)")(
      "polling-retries", po::value<std::string>(),
      "unanswered polls before a standby takes over (polling_retry_number)")(
      "dump-model", po::value<std::string>(),
      "after the bring-up, write the discovered model here");
  return o;
}

Result<config::Values> build_config(const po::variables_map& vm) {
  config::Values v = config::defaults();
  if (vm.count("config"))
    if (auto r = config::load_file(vm["config"].as<std::string>(), v); !r)
      return std::unexpected(r.error());
  const std::pair<const char*, const char*> flags[] = {
      {"state-dir", "state_dir"},
      {"log-file", "log_file"},
      {"window", "max_wire_smps"},
      {"timeout", "transaction_timeout"},
      {"retries", "transaction_retries"},
      {"sweep-interval", "sweep_interval"},
      {"routing-engine", "routing_engine"},
      {"lmc", "lmc"},
      {"priority", "sm_priority"},
      {"sm-key", "sm_key"},
      {"polling-timeout", "sminfo_polling_timeout"},
      {"polling-retries", "polling_retry_number"},
      {"guid", "guid"},
      {"rest", "rest_listen"},
      {"rest-users", "rest_users_file"},
      {"rest-tls-cert", "rest_tls_cert"},
      {"rest-tls-key", "rest_tls_key"},
      {"root-guids", "root_guid_file"},
      {"torus-config", "torus_config"}};
  for (auto [flag, key] : flags)
    if (vm.count(flag))
      if (auto r = config::set(v, key, vm[flag].as<std::string>(), std::string("--") + flag); !r)
        return std::unexpected(r.error());
  if (auto e = routing::EngineChain::parse(v.get_str("routing_engine")); !e)
    return fail(Errc::kInvalidInput, v.origin("routing_engine") + ": " + e.error().message);
  return v;
}

namespace {

// A file an option names (`key`): nullopt when none is set, or when it is OpenSM's
// default path and that file does not exist (OpenSM's rule: no partitions file means
// Default=0x7fff : ALL=full; no policy file, no policy). Any other missing file is an
// error naming the option and where it was set.
template <class T>
Result<std::optional<T>> load_option_file(const config::Values& v, const char* key,
                                          const char* opensm_default,
                                          Result<T> (*load)(const std::string&)) {
  const std::string path = v.get_str(key);
  if (path.empty() || (path == opensm_default && !std::filesystem::exists(path)))
    return std::optional<T>{};
  auto got = load(path);
  if (!got) {
    if (got.error().code == Errc::kIo)
      return fail(Errc::kIo, v.origin(key) + ": " + key + " " + got.error().message);
    return std::unexpected(got.error());
  }
  return std::optional<T>(std::move(*got));
}

}  // namespace

Result<std::optional<config::PartitionPolicy>> load_partition_file(const config::Values& v) {
  return load_option_file<config::PartitionPolicy>(
      v, "partition_config_file", "/etc/opensm/partitions.conf", &config::load_partitions);
}

Result<std::optional<config::QosPolicy>> load_qos_policy_file(const config::Values& v) {
  return load_option_file<config::QosPolicy>(v, "qos_policy_file", "/etc/opensm/qos-policy.conf",
                                             &config::load_qos_policy);
}

namespace {

bool chain_has(const std::string& chain, std::string_view engine) {
  std::stringstream ss(chain);
  std::string e;
  while (std::getline(ss, e, ','))
    if (e == engine) return true;
  return false;
}

}  // namespace

Result<std::shared_ptr<store::StateStore>> state_store(const config::Values& v,
                                                       const std::string& self,
                                                       const std::string& rest_partition_file) {
  store::StateStoreOptions o;
  o.paths["partitions.rest.conf"] = rest_partition_file;
  o.docs = sm::state_documents();
  for (auto& d : rest::state_documents()) o.docs.push_back({std::move(d.name), mode_t(d.mode)});
  o.self = self;
  o.etcd.cacert = v.get_str("etcd_cacert");
  o.etcd.cert = v.get_str("etcd_cert");
  o.etcd.key = v.get_str("etcd_key");
  o.etcd.user = v.get_str("etcd_user");
  o.etcd.password = v.get_str("etcd_password");
  if (const auto colon = o.etcd.user.find(':'); colon != std::string::npos) {
    o.etcd.password = o.etcd.user.substr(colon + 1);
    o.etcd.user.resize(colon);
  }
  const long interval = v.get_int("sweep_interval");
  const long lease = v.get_int("state_store_lease_s");
  // The lease outlives the quiet between two light sweeps, whose MADs keep it renewed.
  o.lease_s = static_cast<int>(lease ? lease : std::max(10L, 2 * interval + 5));
  auto st = store::make_state_store(v.get_str("state_store"), v.get_str("state_dir"), std::move(o));
  if (!st) return fail(st.error().code, v.origin("state_store") + ": " + st.error().message);
  return st;
}

namespace {

// A policy option as the enum the modules take. The option reader lets only these words
// through; another is a bug between the two, refused here rather than guessed at.
template <class E>
Result<E> option_word(const config::Values& v, const char* name,
                      std::optional<E> (*named)(std::string_view)) {
  if (auto e = named(v.get_str(name))) return *e;
  return fail(Errc::kInvalidInput,
              v.origin(name) + ": " + name + " \"" + v.get_str(name) + "\" is not known");
}

}  // namespace

Result<sm::SmOptions> sm_opts(const config::Values& v) {
  sm::SmOptions o;
  for (const auto& w : v.warnings()) WEFT_LOG(Warn, "CFG-0001") << w;
  if (const std::string path = v.get_str("root_guid_file"); !path.empty()) {
    auto roots = app::read_file(path, routing::read_guid_list, v.origin("root_guid_file"));
    if (!roots) return std::unexpected(roots.error());
    o.roots = std::move(*roots);
  }
  // OpenSM writes a torus_config path into every opensm.conf; only dor reads it.
  if (const std::string path = v.get_str("torus_config");
      !path.empty() && chain_has(v.get_str("routing_engine"), "dor")) {
    auto t = app::read_file(path, routing::read_torus_spec, v.origin("torus_config"));
    if (!t) return std::unexpected(t.error());
    o.torus = std::move(*t);
  }
  o.engine.window = static_cast<int>(v.get_int("max_wire_smps"));
  o.engine.timeout = std::chrono::milliseconds(v.get_int("transaction_timeout"));
  o.engine.retries = static_cast<int>(v.get_int("transaction_retries"));
  o.state_dir = v.get_str("state_dir");
  o.lmc = static_cast<uint8_t>(v.get_int("lmc"));
  o.routing_engine = v.get_str("routing_engine");
  o.sm_priority = static_cast<uint8_t>(v.get_int("sm_priority"));
  o.sm_key = std::strtoull(v.get_str("sm_key").c_str(), nullptr, 0);
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
  auto flap = option_word(v, "flap_policy", sm::flap_policy_named);
  if (!flap) return std::unexpected(flap.error());
  o.flap_policy = *flap;
  // A switch with a flapping port: at most one trap-driven heavy sweep per interval.
  o.flap_holdoff = std::chrono::seconds(std::max<long>(1, v.get_int("sweep_interval")));
  o.perf.enabled = v.get_bool("perfmgr");
  o.perf.sweep_time = std::chrono::seconds(v.get_int("perfmgr_sweep_time_s"));
  o.engine.gmp_window = static_cast<int>(v.get_int("perfmgr_max_outstanding_queries"));
  o.perf.ignore_cas = v.get_bool("perfmgr_ignore_cas");
  o.perf.log_errors = v.get_bool("perfmgr_log_errors");
  o.perf.xmit_wait_log = v.get_bool("perfmgr_xmit_wait_log");
  o.perf.xmit_wait_threshold = static_cast<uint64_t>(v.get_int("perfmgr_xmit_wait_threshold"));
  o.perf.health_window = std::chrono::seconds(v.get_int("perfmgr_health_window_s"));
  auto unhealthy = option_word(v, "unhealthy_port_policy", perf::unhealthy_policy_named);
  if (!unhealthy) return std::unexpected(unhealthy.error());
  o.perf.unhealthy_policy = *unhealthy;
  o.perf.metrics_ca_ports = v.get_bool("perfmgr_metrics_ca_ports");
  if (const std::string path = v.get_str("perfmgr_error_thresholds_file"); !path.empty()) {
    auto t = app::read_file(
        path,
        [](std::istream& in, const std::string& p) {
          std::ostringstream ss;
          ss << in.rdbuf();
          return perf::parse_thresholds(ss.str(), p);
        },
        v.origin("perfmgr_error_thresholds_file"));
    if (!t) return std::unexpected(t.error());
    o.perf.thresholds = *t;
  }
  o.max_op_vls = static_cast<uint8_t>(v.get_int("max_op_vls"));
  o.subnet_timeout = static_cast<uint8_t>(v.get_int("subnet_timeout"));
  auto parts = load_partition_file(v);
  if (!parts) return std::unexpected(parts.error());
  o.partitions = std::move(*parts);
  if (o.partitions)
    for (const auto& w : o.partitions->warnings) WEFT_LOG(Warn, "PRT-0005") << w;
  else
    WEFT_LOG(Info, "PRT-0006") << "no partition file: every end port is a full member of the "
                                  "Default partition 0x7fff";
  auto enforce = option_word(v, "part_enforce", sm::part_enforce_named);
  if (!enforce) return std::unexpected(enforce.error());
  o.part_enforce = *enforce;
  o.no_partition_enforcement = v.get_bool("no_partition_enforcement");
  o.allow_both_pkeys = v.get_bool("allow_both_pkeys");
  o.keep_pkey_indexes = v.get_bool("keep_pkey_indexes");
  auto q = qos::qos_from_options(v);
  if (!q) return std::unexpected(q.error());
  o.qos = std::move(*q);
  auto pol = load_qos_policy_file(v);
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

Result<void> setup_logging(const po::variables_map& vm, const config::Values& v) {
  log::Level lvl;
  if (!log::parse_level(vm["log-level"].as<std::string>(), &lvl))
    return fail(Errc::kInvalidInput, "--log-level: expected debug, info, warn or error");
  log::set_level(lvl);
  const auto& file = v.get_str("log_file");
  if (!file.empty() && file != "-" && !log::set_file(file))
    return fail(Errc::kIo, "--log-file " + file + ": cannot open: " + std::strerror(errno));
  return {};
}

}  // namespace weft::app
