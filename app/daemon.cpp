// weft sm: the subnet manager on an HCA port, as a daemon or for one bring-up.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "commands.hpp"
#include "sm_config.hpp"
#include "summary.hpp"
#include "weft/daemon/daemon.hpp"
#include "weft/durable_file.hpp"
#include "weft/log.hpp"
#include "weft/mad/umad_transport.hpp"
#include "weft/rest/server.hpp"
#include "weft/store/state_dir.hpp"
#include "weft/text_file.hpp"

namespace weft::app {

namespace {

// HOST:PORT (HOST may be [v6]) into its parts; nullopt when it is not that.
std::optional<std::pair<std::string, uint16_t>> host_port(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  unsigned long port = 0;
  const std::string digits = s.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  port = std::stoul(digits);
  if (port == 0 || port > 65535) return std::nullopt;
  return std::pair{s.substr(0, colon), static_cast<uint16_t>(port)};
}

// What an instance's state directory claims (STATE_DIR/rest-listen: HOST:PORT), if it
// claims anything readable.
std::optional<std::string> rest_claim(const std::string& state_dir) {
  auto text = read_text_file(state_dir + "/rest-listen");
  if (!text) return std::nullopt;
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (!host_port(s)) return std::nullopt;
  return s;
}

// The ports other instances claim: the rest-listen files of the state directories
// beside this one (/var/lib/weft/PORTGUID for each weft@PORTGUID).
std::set<uint16_t> sibling_claims(const std::string& state_dir) {
  std::set<uint16_t> out;
  std::error_code ec;
  const auto self = std::filesystem::weakly_canonical(state_dir, ec);
  const auto parent = self.parent_path();
  // No throwing increments: a directory that cannot be read is one without claims.
  std::filesystem::directory_iterator it(parent, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (!it->is_directory(ec2) || it->path() == self) continue;
    if (auto c = rest_claim(it->path().string()))
      if (auto hp = host_port(*c)) out.insert(hp->second);
  }
  return out;
}

// What REST reads and submits, over the running daemon.
class DaemonBackend final : public rest::Backend {
 public:
  explicit DaemonBackend(daemon::Daemon& d) : d_(d) {}
  std::shared_ptr<const sm::Published> published() const override { return d_.published(); }
  std::shared_ptr<const daemon::PartitionView> partitions() const override {
    return d_.partitions();
  }
  void submit(daemon::Command c) override { d_.submit(std::move(c)); }
  daemon::EventLog& events() override { return d_.events(); }

 private:
  daemon::Daemon& d_;
};

}  // namespace

namespace po = boost::program_options;

const Help kSmHelp{"sm", "run the subnet manager on an InfiniBand port",
                   "weft sm [--once] [--config FILE] [--guid GUID | --ca NAME --port N] [OPTIONS]",
                   R"(Runs weft as the subnet manager (SM) of the InfiniBand subnet attached to one
local HCA port, through libibumad (on ibsim, under libumad2sim). It discovers the
subnet with directed-route SMPs, assigns LIDs (a port keeps its LID across
restarts: the state directory's guid2lid, in OpenSM's format), routes it with the
routing engine chain, programs every switch's linear forwarding table and the
P_Key, SL2VL, VL arbitration and multicast forwarding tables, brings every port to
ACTIVE, answers SMInfo as the master SM and serves SubnAdm (SA) queries. Then it
sweeps again on every trap and every sweep_interval seconds, writing only what
differs from what the devices hold.

Beside other SMs (weft or OpenSM, sharing sm_key): a running master, or an SM of
higher sm_priority (equal: the lower port GUID), makes weft a STANDBY that writes
nothing and polls the master's SMInfo every sminfo_polling_timeout ms; after
polling_retry_number + 1 unanswered polls it takes over, keeping the LIDs the
ports hold. A master hands over to a higher SM it finds (SMInfo HANDOVER).

Options come from the defaults, then --config FILE (opensm.conf syntax: one
"key value" per line, OpenSM's option names; /etc/weft/weft.conf lists every
option with its default), then the flags below, which win. An OpenSM option weft
does not implement, set to anything but OpenSM's default, is reported with its
file and line; an unknown key or a bad value is an error.

The port: --guid, else --ca and --port, else the first port whose link is up.

While it runs, weft serves a REST API on rest_listen (default 127.0.0.1:7443;
HTTPS with rest_tls_cert and rest_tls_key): a native /api/v1 (the OpenAPI
document is at /api/v1/openapi.json) and a UFM-compatible /ufmRest facade for the
Kubernetes, Slurm and OpenStack clients. Users come from rest_users_file
("name:crypt-hash:role" lines, role admin, operator or monitor); without one, weft
makes an admin user whose password it writes to STATE_DIR/rest-admin-password.
A partition changed over REST is on disk before the answer and programmed by the
next sweep, which the change starts. With --guid and no --rest (weft@PORTGUID
instances sharing weft.conf), rest_listen is where the instances' ports start: each
takes the first free one no other instance claims and claims it in
STATE_DIR/rest-listen.)",
                   R"(Files:
  /etc/weft/weft.conf   the options, every one commented out at its default
  STATE_DIR/guid2lid    LIDs by port GUID, rewritten whole (temp file, fsync,
                        rename) after each LID assignment
  STATE_DIR/lock        held while this SM runs, with its pid: a second weft on the
                        same state directory exits with status 1
  STATE_DIR/partitions.rest.conf
                        the partitions made over REST (partitions.conf syntax),
                        rewritten whole before each REST answer; rest_partition_file
  STATE_DIR/rest-tokens  REST access tokens (SHA-256 of each, never the token)
  STATE_DIR/rest-admin-password
                        the generated admin password, when there is no users file
  STATE_DIR/rest-listen  an instance's REST address (with --guid and no --rest)
  (STATE_DIR: --state-dir, state_dir; default /var/lib/weft)

Signals:
  SIGINT, SIGTERM       stop (exit status 0)
  SIGHUP                read the configuration again: the partition and QoS policy
                        files and the options weft.conf marks "SIGHUP applies it"
                        take effect at the next sweep, the REST users file at once;
                        a bad file is logged and what is in force stays

Exit status:
  0  stopped by a signal; with --once, the subnet is up
  1  with --once, the subnet is not up (the reason is printed); the port cannot be
     opened, the state directory is in use, or a sweep failed
  2  bad usage, a bad option value or a bad config, partition or QoS policy file

Examples:
  weft sm --config /etc/weft/weft.conf
  weft sm --guid 0x0002c903000e0b72 --state-dir /var/lib/weft/0x0002c903000e0b72
  weft sm --once --routing-engine ftree,updn,minhop --state-dir /tmp/weft
  LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so weft sm --once \
      --state-dir /tmp/weft           (on ibsim))"};

po::options_description sm_command_options() {
  auto desc = sm_options();
  desc.add_options()("ca", po::value<std::string>(), "CA name (default: any)")(
      "port", po::value<int>()->default_value(0),
      "CA port number (default: first port that is up)")("guid", po::value<std::string>(),
                                                         "bind to the port with this GUID")(
      "rest", po::value<std::string>(),
      "the REST API's ADDR:PORT or off (rest_listen; default 127.0.0.1:7443, off with --once)")(
      "rest-users", po::value<std::string>(), "REST users file (rest_users_file)")(
      "rest-tls-cert", po::value<std::string>(), "PEM certificate for HTTPS (rest_tls_cert)")(
      "rest-tls-key", po::value<std::string>(), "PEM key for HTTPS (rest_tls_key)");
  return desc;
}

namespace {

// SIGHUP: the config read again. Options that cannot change while weft runs keep their
// value, each named in the log; partitions, the QoS policy and the reloadable options
// take effect with the sweep the reload asks for.
void reload(const po::variables_map& vm, config::Values& current, daemon::Daemon& svc) {
  WEFT_LOG(Info, "CFG-0100") << "SIGHUP: reading the configuration again";
  auto next = build_config(vm);
  if (!next) {
    WEFT_LOG(Error, "CFG-0102") << "reload refused, the options in force stay: "
                                << next.error().message;
    return;
  }
  for (const auto& o : config::option_table()) {
    const std::string& was = current.get_str(o.name);
    if (next->get_str(o.name) == was) continue;
    if (o.reloadable) {
      WEFT_LOG(Info, "CFG-0103") << o.name << ": " << (was.empty() ? "(null)" : was) << " -> "
                                 << next->get_str(o.name) << " (" << next->origin(o.name) << ")";
      continue;
    }
    WEFT_LOG(Warn, "CFG-0104") << o.name << " changed to \"" << next->get_str(o.name) << "\" ("
                               << next->origin(o.name) << ") but takes effect only at a restart; "
                               << "keeping \"" << was << "\"";
    (void)config::set(*next, o.name, was, current.origin(o.name));
  }
  auto so = sm_opts(*next);
  if (!so) {
    WEFT_LOG(Error, "CFG-0102") << "reload refused, the options in force stay: "
                                << so.error().message;
    return;
  }
  so->reserve_heap = malloc_keeps_freed();
  svc.reload(std::move(*so), std::chrono::seconds(next->get_int("sweep_interval")));
  current = std::move(*next);
}

}  // namespace

int cmd_sm(int argc, char** argv) {
  auto desc = sm_command_options();
  po::variables_map vm;
  if (auto rc = parse_command_line(argc, argv, desc, vm, kSmHelp)) return *rc;
  auto v = build_config(vm);
  if (!v) return die(v.error().message);
  if (auto r = setup_logging(vm, *v); !r) return die(r.error().message);
  const bool once = vm.count("once") > 0;
  // Before the port: a second SM on this state directory stops here, its file untouched.
  const std::string state_dir = v->get_str("state_dir");
  auto state = store::StateDir::acquire(state_dir);
  if (!state) return die(state.error().message, 1);
  mad::UmadPortSpec spec;
  if (vm.count("ca")) spec.ca = vm["ca"].as<std::string>();
  spec.port = vm["port"].as<int>();
  spec.guid = std::strtoull(v->get_str("guid").c_str(), nullptr, 0);
  auto t = mad::UmadTransport::open(spec);
  if (!t) return die(t.error().message, 1);
  auto so = sm_opts(*v);
  if (!so) return die(so.error().message);
  // A daemon keeps sweeping: room for its next snapshot (not with --once, which stops).
  so->reserve_heap = !once && malloc_keeps_freed();
  std::string rest_file = v->get_str("rest_partition_file");
  if (rest_file.empty()) rest_file = state_dir + "/partitions.rest.conf";
  // Where the master's state lives (state_store): this SM named by its port and process.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string self =
      (*t)->local_port().port_guid.str() + " " + host + " pid " + std::to_string(::getpid());
  auto shared = state_store(*v, self, rest_file);
  if (!shared) return die(shared.error().message);
  auto store = daemon::PartitionStore::open(*shared, so->partitions);
  if (!store) return die(store.error().message);
  daemon::EventLog events(4096);
  daemon::DaemonOptions svo;
  svo.sweep_interval = std::chrono::seconds(v->get_int("sweep_interval"));
  svo.once = once;
  bool first = true;
  daemon::Daemon* svc_ptr = nullptr;
  svo.on_heavy_sweep = [&](const sm::SweepReport& r, const mad::EngineStats& s) {
    print_summary(r, s);
    if (first && svc_ptr)
      if (auto d = dump_model(vm, svc_ptr->published()->subnet.get()); !d)
        WEFT_LOG(Error, "APP-0003") << d.error().message;
    first = false;
  };
  rest::RestServer* server_ptr = nullptr;
  svo.on_state_changed = [&server_ptr](const std::vector<std::string>& names) {
    if (!server_ptr || std::find(names.begin(), names.end(), "rest-tokens") == names.end()) return;
    if (auto n = server_ptr->auth().reload_tokens(); n)
      WEFT_LOG(Info, "REST-0012") << *n << " REST tokens from the state store";
    else
      WEFT_LOG(Error, "REST-0013")
          << "REST tokens from the state store not read: " << n.error().message;
  };
  daemon::Daemon svc(**t, std::move(*so), *shared, std::move(*store), events, std::move(svo));
  svc_ptr = &svc;

  // The REST API: on by default as a daemon, off for one bring-up unless asked for.
  std::string listen = v->get_str("rest_listen");
  if (vm.count("rest"))
    listen = vm["rest"].as<std::string>();
  else if (once)
    listen = "off";
  DaemonBackend backend(svc);
  std::unique_ptr<rest::RestServer> server;
  // REST that cannot listen (its address in use: another instance on a shared config, or
  // an address not up yet) never stops the SM: it says so, in the log and the event log,
  // and tries again every kRestRetry on the SM's loop until it serves.
  constexpr auto kRestRetry = std::chrono::seconds(5);
  boost::asio::steady_timer rest_retry(svc.io());
  std::function<void(rest::RestOptions, int)> retry_rest;
  auto serving = [&](std::unique_ptr<rest::RestServer> s) {
    server = std::move(s);
    server_ptr = server.get();
  };
  // An instance (weft@PORTGUID: --guid, no --rest) shares weft.conf with the others on
  // this host: its REST address is the one its state directory claims, if that is still
  // within rest_listen's span (its host, its port to 63 above); else the first port from
  // rest_listen's up that no other instance claims and that binds, claimed once it
  // serves. Every try (the retries too) looks so: an instance never takes rest_listen's
  // port unclaimed.
  const bool instance = vm.count("guid") && !vm.count("rest");
  auto start_rest = [&](const rest::RestOptions& ro) -> Result<std::unique_ptr<rest::RestServer>> {
    const auto base = host_port(listen);
    if (!instance || !base) return rest::RestServer::start(ro, backend);
    constexpr unsigned kSpan = 64;
    auto within = [&](const std::string& at) {
      const auto hp = host_port(at);
      return hp && hp->first == base->first && hp->second >= base->second &&
             unsigned(hp->second - base->second) < kSpan;
    };
    if (auto c = rest_claim(state_dir); c && within(*c)) {
      rest::RestOptions at = ro;
      at.listen = *c;
      return rest::RestServer::start(at, backend);
    }
    const auto taken = sibling_claims(state_dir);
    Result<std::unique_ptr<rest::RestServer>> last =
        fail(Errc::kIo, "rest_listen " + listen + ": its port and the " +
                            std::to_string(kSpan - 1) + " above are claimed or in use");
    for (unsigned i = 0; i < kSpan && base->second + i <= 65535; ++i) {
      const auto port = static_cast<uint16_t>(base->second + i);
      if (taken.count(port)) continue;
      rest::RestOptions at = ro;
      at.listen = base->first + ":" + std::to_string(port);
      auto s = rest::RestServer::start(at, backend);
      if (!s && rest::RestServer::could_not_listen(s.error())) {
        last = std::move(s);
        continue;
      }
      if (!s) return s;
      if (auto w = write_file_durably(state_dir + "/rest-listen", at.listen + "\n"); !w)
        WEFT_LOG(Warn, "REST-0018")
            << "REST on " << at.listen << " not claimed: " << w.error().message
            << "; the next start looks again";
      else
        WEFT_LOG(Info, "REST-0017")
            << "this instance's REST address " << at.listen << ", claimed in " << state_dir
            << "/rest-listen (the first free from rest_listen " << listen << ")";
      return s;
    }
    return last;
  };
  retry_rest = [&](rest::RestOptions ro, int tries) {
    rest_retry.expires_after(kRestRetry);
    rest_retry.async_wait([&, ro, tries](const boost::system::error_code& ec) {
      if (ec) return;
      auto s = start_rest(ro);
      if (!s) {
        // The first failure was logged; then once a minute.
        if (tries % 12 == 0)
          WEFT_LOG(Warn, "REST-0016")
              << "REST still not serving after " << tries + 1 << " tries: " << s.error().message;
        return retry_rest(ro, tries + 1);
      }
      serving(std::move(*s));
      events.append("rest", {{"listening", true}, {"url", server->url()}, {"tries", tries + 1}});
    });
  };
  if (listen != "off") {
    rest::RestOptions ro;
    ro.listen = listen;
    ro.tls_cert = vm.count("rest-tls-cert") ? vm["rest-tls-cert"].as<std::string>()
                                            : v->get_str("rest_tls_cert");
    ro.tls_key = vm.count("rest-tls-key") ? vm["rest-tls-key"].as<std::string>()
                                          : v->get_str("rest_tls_key");
    ro.auth.users_file =
        vm.count("rest-users") ? vm["rest-users"].as<std::string>() : v->get_str("rest_users_file");
    ro.auth.state_dir = state_dir;
    ro.auth.tokens.path = (*shared)->path("rest-tokens");
    ro.auth.tokens.write = [st = *shared](const std::string& text) {
      return st->write("rest-tokens", text);
    };
    ro.auth.token_ttl = std::chrono::seconds(v->get_int("rest_token_ttl"));
    ro.max_body = size_t(v->get_int("rest_max_body"));
    ro.max_connections = size_t(v->get_int("rest_max_connections"));
    ro.timeout = std::chrono::milliseconds(v->get_int("rest_timeout_ms"));
    ro.read_timeout = std::chrono::milliseconds(v->get_int("rest_read_timeout_ms"));
    ro.max_per_source = size_t(v->get_int("rest_max_connections_per_source"));
    auto srv = start_rest(ro);
    if (srv) {
      serving(std::move(*srv));
    } else if (rest::RestServer::could_not_listen(srv.error())) {
      WEFT_LOG(Error, "REST-0014")
          << srv.error().message << ": the SM runs on without REST, which tries again every "
          << kRestRetry.count() << " s";
      events.append("rest", {{"listening", false}, {"error", srv.error().message}});
      retry_rest(std::move(ro), 1);
    } else {
      return die(srv.error().message, 1);
    }
  }

  // SIGINT and SIGTERM stop the SM; SIGHUP reloads the configuration.
  boost::asio::signal_set sigs(svc.io(), SIGINT, SIGTERM, SIGHUP);
  config::Values current = *v;
  std::function<void()> wait_signal = [&] {
    sigs.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        reload(vm, current, svc);
        if (server) {
          if (auto n = server->auth().reload_users(); n)
            WEFT_LOG(Info, "REST-0010")
                << server->auth().users_file() << ": " << *n << " REST users";
          else
            WEFT_LOG(Error, "REST-0011")
                << "REST users not reloaded, those in force stay: " << n.error().message;
        }
        return wait_signal();
      }
      WEFT_LOG(Info, "APP-0001") << "signal " << sig << ": stopping";
      svc.stop();
    });
  };
  wait_signal();
  (*shared)->start();
  const int rc = svc.run();
  (*shared)->stop();  // its threads call into the service: stopped while it is there
  if (server) server->stop();
  WEFT_LOG(Info, "APP-0002") << "stopped";
  return rc;
}

}  // namespace weft::app
