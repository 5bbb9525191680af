// Test helper: weft's REST API over a real SubnetManager that brought up a simulated
// fabric (weft's in-process simulator, synchronously), with the real PartitionStore,
// Auth and Jobs. The Backend applies a partition change the way SmService does
// (validated, written durably, then answered) and the test sweeps when it wants the
// fabric to follow.
#pragma once

#include <gtest/gtest.h>
#include <chrono>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "../../rest/src/jobs.hpp"
#include "weft/daemon/managers.hpp"
#include "weft/daemon/partition_store.hpp"
#include "weft/rest/api.hpp"
#include "weft/rest/auth.hpp"
#include "weft/sa/sa.hpp"
#include "weft/simulator/generators.hpp"
#include "weft/simulator/sim_transport.hpp"
#include "weft/sm/subnet_manager.hpp"

namespace weft::testing {

class RestScratch {
 public:
  RestScratch() {
    static int n = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("weft-rest-" + std::to_string(getpid()) + "-" + std::to_string(n++)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~RestScratch() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string base64(std::string_view in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = uint8_t(in[i]) << 16;
    out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

inline std::string basic(std::string_view user, std::string_view pass) {
  return "Basic " + base64(std::string(user) + ":" + std::string(pass));
}

class SimBackend final : public rest::Backend {
 public:
  SimBackend(daemon::Managers& m, daemon::PartitionStore store)
      : m_(m), sm_(m.sm()), store_(std::move(store)) {
    publish();
  }
  std::shared_ptr<const sm::Published> published() const override {
    if (on_published_) {
      auto f = std::exchange(on_published_, {});
      f();
    }
    return sm_.published();
  }
  // Runs `f` at the next published() call (once): a test's way into the middle of a
  // request.
  void on_next_published(std::function<void()> f) { on_published_ = std::move(f); }
  std::shared_ptr<const daemon::PartitionView> partitions() const override {
    std::lock_guard lk(mu_);
    return view_;
  }
  void submit(daemon::Command c) override {
    if (auto* x = std::get_if<daemon::ChangePartitions>(&c))
      return change_partitions(std::move(x->change), std::move(x->done));
    if (auto* x = std::get_if<daemon::RequestSweep>(&c)) return request_sweep(x->heavy);
    if (auto* x = std::get_if<daemon::EnablePort>(&c))
      return enable_port(x->sw, x->port, std::move(x->done));
    if (auto* x = std::get_if<daemon::MarkHealthy>(&c))
      return mark_healthy(x->node, x->port, std::move(x->done));
  }
  void change_partitions(daemon::PartitionChange change,
                         std::function<void(Result<uint64_t>)> done) {
    std::unique_lock lk(mu_);
    ++changes_;
    auto next = change(store_.partitions());
    if (!next) {
      lk.unlock();
      return done(std::unexpected(next.error()));
    }
    if (*next == store_.partitions()) {
      const uint64_t g = store_.generation();
      lk.unlock();
      return done(g);
    }
    if (fail_writes_) {
      lk.unlock();
      return done(fail(Errc::kIo, "disk full (test)"));
    }
    auto gen = store_.commit(std::move(*next));
    if (gen) {
      auto o = sm_.options();
      o.partitions = store_.merged();
      o.partitions_generation = *gen;
      sm_.set_options(std::move(o));
      events_.append("partitions", {{"generation", *gen}});
      publish_locked();
    }
    lk.unlock();
    done(gen);
  }
  void request_sweep(bool heavy) {
    std::lock_guard lk(mu_);
    sweeps_asked_.push_back(heavy);
  }
  void enable_port(Guid sw, PortNum port, std::function<void(Result<void>)> done) {
    std::unique_lock lk(mu_);
    auto r = sm_.enable_port(sw, port);
    if (r) publish_locked();
    lk.unlock();
    done(r);
  }
  void mark_healthy(Guid node, PortNum port, std::function<void(Result<perf::Unhealthy>)> done) {
    std::unique_lock lk(mu_);
    auto r = m_.mark_healthy(node, port);
    if (r) publish_locked();
    lk.unlock();
    done(r);
  }
  daemon::EventLog& events() override { return events_; }

  const daemon::PartitionStore& store() const { return store_; }
  std::vector<bool> sweeps_asked() const {
    std::lock_guard lk(mu_);
    return sweeps_asked_;
  }
  size_t changes() const {
    std::lock_guard lk(mu_);
    return changes_;
  }
  void fail_writes(bool on) { fail_writes_ = on; }

 private:
  void publish() {
    std::lock_guard lk(mu_);
    publish_locked();
  }
  void publish_locked() {
    auto v = std::make_shared<daemon::PartitionView>();
    v->rest = store_.partitions();
    v->file = store_.file_policy();
    v->rest_path = store_.path();
    v->generation = store_.generation();
    view_ = std::move(v);
  }
  daemon::Managers& m_;
  sm::SubnetManager& sm_;
  mutable std::mutex mu_;
  daemon::PartitionStore store_;
  std::shared_ptr<const daemon::PartitionView> view_;
  daemon::EventLog events_{256};
  std::vector<bool> sweeps_asked_;
  size_t changes_ = 0;
  bool fail_writes_ = false;
  mutable std::function<void()> on_published_;
};

// A fabric brought up, and the API over it. Users: admin/adminpw (admin),
// op/oppw (operator), mon/monpw (monitor).
struct RestRig {
  explicit RestRig(const std::string& topology = "ft2:leaves=2,spines=1,hosts=2",
                   std::optional<config::PartitionPolicy> file_policy = std::nullopt,
                   bool bring_up = true, std::function<void(sm::SmOptions&)> tweak = {})
      : sim(make(topology)), transport(sim, {}) {
    sm::SmOptions o;
    o.state_dir = dir.path();
    o.engine.timeout = std::chrono::milliseconds(100);
    if (tweak) tweak(o);
    auto store = daemon::PartitionStore::open(dir.path() + "/partitions.rest.conf", file_policy);
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    o.partitions = store->merged();
    o.partitions_generation = store->generation();
    managers.emplace(transport, std::move(o));
    smgr = &managers->sm();
    if (bring_up) {
      auto rep = smgr->sweep();
      EXPECT_TRUE(rep && rep->subnet_up);
    }
    backend.emplace(*managers, std::move(*store));
    users_file = dir.path() + "/users";
    write_users(
        {{"admin", "adminpw", "admin"}, {"op", "oppw", "operator"}, {"mon", "monpw", "monitor"}});
    auto a = rest::Auth::open({.users_file = users_file, .state_dir = dir.path()});
    EXPECT_TRUE(a) << (a ? "" : a.error().message);
    auth = std::move(*a);
    api.emplace(*backend, *auth, jobs, [this] { return login_clock; });
  }

  static fabric::Fabric make(const std::string& spec) {
    auto f = simulator::make_fabric(spec);
    EXPECT_TRUE(f) << spec;
    return std::move(*f);
  }

  struct UserLine {
    std::string name, password, role;
  };
  void write_users(const std::vector<UserLine>& users) {
    std::ofstream out(users_file);
    out << "# test users\n";
    for (const auto& u : users) {
      auto h = rest::Auth::hash_password(u.password);
      EXPECT_TRUE(h);
      out << u.name << ":" << *h << ":" << u.role << "\n";
    }
  }

  rest::Response call(const std::string& method, const std::string& target,
                      const std::string& body = "", const std::string& authz = "") {
    rest::Request req;
    req.method = method;
    const auto q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::string qs = target.substr(q + 1);
      size_t i = 0;
      while (i <= qs.size()) {
        size_t j = qs.find('&', i);
        if (j == std::string::npos) j = qs.size();
        std::string kv = qs.substr(i, j - i);
        const auto eq = kv.find('=');
        if (!kv.empty())
          req.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
        i = j + 1;
      }
    }
    if (!authz.empty()) req.headers["authorization"] = authz;
    if (!body.empty()) req.headers["content-type"] = "application/json";
    req.body = body;
    req.source = source;
    std::optional<rest::Response> got;
    int answers = 0;
    api->handle(req, [&](rest::Response r) {
      ++answers;
      got = std::move(r);
    });
    EXPECT_EQ(answers, 1) << method << " " << target;
    if (got && got->shared_body) {
      got->body = *got->shared_body;  // the tests read .body
      got->shared_body.reset();
    }
    return got ? *got : rest::Response{};
  }
  rest::Response admin(const std::string& m, const std::string& t, const std::string& b = "") {
    return call(m, t, b, basic("admin", "adminpw"));
  }
  rest::Response op(const std::string& m, const std::string& t, const std::string& b = "") {
    return call(m, t, b, basic("op", "oppw"));
  }
  rest::Response mon(const std::string& m, const std::string& t, const std::string& b = "") {
    return call(m, t, b, basic("mon", "monpw"));
  }
  static nlohmann::json json_of(const rest::Response& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.body;
    return j;
  }
  // The job at `location` (a 202's), polled until it is done or failed: its status.
  nlohmann::json job(const std::string& location) {
    nlohmann::json st;
    for (int i = 0; i < 500; ++i) {
      st = json_of(mon("GET", location));
      if (st.value("state", "") == "done" || st.value("state", "") == "failed") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return st;
  }
  // A counter sweep (the PerfMgr's), run to its end.
  void counter_sweep() {
    std::optional<Result<perf::PerfSweep>> got;
    managers->perf_sweep([&](Result<perf::PerfSweep> r) { got = std::move(r); });
    ASSERT_TRUE(smgr->engine().run_all());
    ASSERT_TRUE(got && *got) << (got ? got->error().message : "not finished");
  }
  // Sweeps again, as the SM does after a change (the sweep the API asked for).
  void sweep() {
    auto rep = smgr->sweep();
    ASSERT_TRUE(rep && rep->subnet_up);
  }
  // The P_Keys the simulated port with this GUID holds (full-member bit included).
  std::vector<uint16_t> held_pkeys(uint64_t port_guid) const {
    for (fabric::NodeIndex n = 0; n < sim.model().size(); ++n) {
      const auto& nd = sim.model().node(n);
      for (PortNum p = 1; p <= nd.num_ports; ++p)
        if (nd.ports[p].guid.value == port_guid) {
          std::vector<uint16_t> out;
          for (uint16_t k : sim.pkeys(n, p))
            if (k & 0x7fff) out.push_back(k);
          return out;
        }
    }
    return {};
  }
  std::string file_text() const {
    std::ifstream in(dir.path() + "/partitions.rest.conf");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  RestScratch dir;
  simulator::SimFabric sim;
  simulator::SimTransport transport;
  std::optional<daemon::Managers> managers;
  sm::SubnetManager* smgr = nullptr;  // managers->sm()
  std::optional<SimBackend> backend;
  std::string users_file;
  std::unique_ptr<rest::Auth> auth;
  rest::Jobs jobs;
  std::optional<rest::Api> api;
  // Where call() comes from, and the login throttle's clock (moved by tests).
  std::string source = "192.0.2.1";
  std::chrono::steady_clock::time_point login_clock{};
};

}  // namespace weft::testing
