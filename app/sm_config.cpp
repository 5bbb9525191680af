#include "sm_config.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "weft/daemon/from_options.hpp"
#include "weft/log.hpp"
#include "weft/rest/auth.hpp"
#include "weft/routing/engine.hpp"
#include "weft/sm/from_options.hpp"

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
      "adaptive-routing", po::bool_switch(),
      "program the engine's adaptive-routing groups where switches hold AR (adaptive_routing)")(
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
  if (vm.count("adaptive-routing") && vm["adaptive-routing"].as<bool>())
    if (auto r = config::set(v, "adaptive_routing", "TRUE", "--adaptive-routing"); !r)
      return std::unexpected(r.error());
  if (auto e = routing::EngineChain::parse(v.get_str("routing_engine")); !e)
    return fail(Errc::kInvalidInput, v.origin("routing_engine") + ": " + e.error().message);
  return v;
}

Result<std::shared_ptr<store::StateStore>> state_store(const config::Values& v,
                                                       const std::string& self,
                                                       const std::string& rest_partition_file) {
  std::vector<store::StateDoc> rest_docs;
  for (auto& d : rest::state_documents()) rest_docs.push_back({std::move(d.name), mode_t(d.mode)});
  return daemon::state_store_from_options(v, self, rest_partition_file, std::move(rest_docs));
}

Result<sm::SmOptions> sm_opts(const config::Values& v) {
  for (const auto& w : v.warnings()) WEFT_LOG(Warn, "CFG-0001") << w;
  return sm::sm_from_options(v);
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
