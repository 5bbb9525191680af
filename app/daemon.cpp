// weft sm: the subnet manager on an HCA port, as a daemon or for one bring-up.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <stop_token>
#include <thread>

#include "commands.hpp"
#include "sm_config.hpp"
#include "summary.hpp"
#include "weft/log.hpp"
#include "weft/sm/state_dir.hpp"
#include "weft/sm/subnet_manager.hpp"
#include "weft/sm/umad_transport.hpp"

namespace weft::app {

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

Options come from the defaults, then --config FILE (opensm.conf syntax: one
"key value" per line, OpenSM's option names; /etc/weft/weft.conf lists every
option with its default), then the flags below, which win. An OpenSM option weft
does not implement, set to anything but OpenSM's default, is reported with its
file and line; an unknown key or a bad value is an error.

The port: --guid, else --ca and --port, else the first port whose link is up.)",
                   R"(Files:
  /etc/weft/weft.conf   the options, every one commented out at its default
  STATE_DIR/guid2lid    LIDs by port GUID, rewritten whole (temp file, fsync,
                        rename) after each LID assignment
  STATE_DIR/lock        held while this SM runs, with its pid: a second weft on the
                        same state directory exits with status 1
  (STATE_DIR: --state-dir, state_dir; default /var/lib/weft)

Signals:
  SIGINT, SIGTERM       stop (exit status 0)

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
                                                         "bind to the port with this GUID");
  return desc;
}

namespace {

// SIGINT/SIGTERM request a stop, received by one waiting thread.
// block() must run before any thread starts (libumad2sim starts one when the
// transport opens), so that every thread leaves these signals to the waiter.
// SIGUSR1 only wakes the waiter when the object goes away, so exit is immediate.
class Signals {
 public:
  static sigset_t block() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
  }
  Signals() {
    set_ = block();
    waiter_ = std::jthread([this](std::stop_token st) {
      while (!st.stop_requested()) {
        int sig = sigwaitinfo(&set_, nullptr);
        if (sig == SIGINT || sig == SIGTERM) {
          WEFT_LOG(Info, "APP-0001") << "signal " << sig << ": stopping";
          source_.request_stop();
          return;
        }
      }
    });
  }
  ~Signals() {
    waiter_.request_stop();
    pthread_kill(waiter_.native_handle(), SIGUSR1);
  }
  std::stop_token token() const { return source_.get_token(); }

 private:
  sigset_t set_;
  std::stop_source source_;
  std::jthread waiter_;
};

// One line per node and per linked port, sorted by GUID: the same fabric discovered
// through any transport gives the same text.

int run_daemon(sm::SubnetManager& smgr, const config::Values& v, const po::variables_map& vm) {
  const bool once = vm.count("once") > 0;
  Signals sig;
  auto rep = smgr.sweep();
  if (!rep) return die(rep.error().message, 1);
  print_summary(*rep, smgr.mad_stats());
  if (auto r = dump_model(vm, smgr); !r) return die(r.error().message, 1);
  if (once) return rep->subnet_up ? 0 : 1;
  const long interval_s = v.get_int("sweep_interval");
  auto next = std::chrono::steady_clock::now() + std::chrono::seconds(interval_s);
  while (!sig.token().stop_requested()) {
    if (auto r = smgr.serve_for(std::chrono::milliseconds(200)); !r)
      return die(r.error().message, 1);
    if (sig.token().stop_requested()) break;
    const bool due = interval_s > 0 && std::chrono::steady_clock::now() >= next;
    if (smgr.needs_sweep() || due) {
      auto r = smgr.needs_sweep() ? smgr.sweep() : smgr.light_sweep();
      if (!r) return die(r.error().message, 1);
      if (r->heavy) print_summary(*r, smgr.mad_stats());
      next = std::chrono::steady_clock::now() + std::chrono::seconds(interval_s);
    }
  }
  WEFT_LOG(Info, "APP-0002") << "stopped";
  return 0;
}

}  // namespace

int cmd_sm(int argc, char** argv) {
  Signals::block();
  auto desc = sm_command_options();
  po::variables_map vm;
  if (auto rc = parse_command_line(argc, argv, desc, vm, kSmHelp)) return *rc;
  auto v = build_config(vm);
  if (!v) return die(v.error().message);
  if (auto r = setup_logging(vm, *v); !r) return die(r.error().message);
  // Before the port: a second SM on this state directory stops here, its file untouched.
  auto state = sm::StateDir::acquire(v->get_str("state_dir"));
  if (!state) return die(state.error().message, 1);
  sm::UmadPortSpec spec;
  if (vm.count("ca")) spec.ca = vm["ca"].as<std::string>();
  spec.port = vm["port"].as<int>();
  spec.guid = std::strtoull(v->get_str("guid").c_str(), nullptr, 0);
  auto t = sm::UmadTransport::open(spec);
  if (!t) return die(t.error().message, 1);
  auto so = sm_opts(*v);
  if (!so) return die(so.error().message);
  sm::SubnetManager smgr(**t, std::move(*so));
  return run_daemon(smgr, *v, vm);
}
}  // namespace weft::app
