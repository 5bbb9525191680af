// The state directory and the etcd store behind StateStore (weft/store/state_store.hpp).
//
// etcd layout under PREFIX:
//   PREFIX/master          "0xPORTGUID host pid" of the SM that holds the store, on
//                          its lease: present only while that lease lives
//   PREFIX/state/NAME      {"generation": G, "writer": "...", "text": "..."}
// Every write by the master is a transaction: if PREFIX/master is on the master's
// lease, put PREFIX/state/NAME. A master whose lease expired (it stopped renewing:
// no fabric contact, a pause, a lost process) finds the compare false and its write
// refused; a new master takes PREFIX/master only once it is gone (create_revision 0).
// Locally, STATE_DIR/state-store.meta keeps each document's generation and whether
// etcd has it ("synced"), so what a master wrote while etcd was away is written back
// when it returns, across restarts too.
#include "weft/store/state_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "weft/durable_file.hpp"
#include "weft/log.hpp"
#include "weft/text_file.hpp"

namespace weft::store {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class DirStateStore : public StateStore {
 public:
  DirStateStore(std::string dir, std::vector<StateDoc> docs,
                std::map<std::string, std::string> paths)
      : dir_(std::move(dir)), docs_(std::move(docs)), paths_(std::move(paths)) {}
  std::string path(std::string_view name) const override {
    auto it = paths_.find(std::string(name));
    return it != paths_.end() ? it->second : dir_ + "/" + std::string(name);
  }
  Result<void> write(std::string_view name, std::string_view text) override {
    if (!known_doc(name)) return unknown(name);
    return write_file_durably(path(name), text, mode_of(name));
  }
  StateStoreStatus status() const override { return {"directory", {{"directory", dir_}}, false}; }

 protected:
  const StateDoc* doc(std::string_view name) const {
    auto it =
        std::find_if(docs_.begin(), docs_.end(), [&](const auto& d) { return d.name == name; });
    return it == docs_.end() ? nullptr : &*it;
  }
  bool known_doc(std::string_view name) const { return doc(name) != nullptr; }
  mode_t mode_of(std::string_view name) const { return doc(name)->mode; }
  Result<void> unknown(std::string_view name) const {
    std::string known;
    for (const auto& d : docs_) known += (known.empty() ? "" : ", ") + d.name;
    return fail(Errc::kInternal, "state store: \"" + std::string(name) +
                                     "\" is no document of this store (it holds: " + known + ")");
  }

  std::string dir_;
  std::vector<StateDoc> docs_;
  std::map<std::string, std::string> paths_;
};

class EtcdStateStore final : public DirStateStore {
 public:
  EtcdStateStore(std::string dir, StateStoreOptions o)
      : DirStateStore(std::move(dir), o.docs, o.paths), o_(std::move(o)), etcd_(o_.etcd) {
    master_key_ = o_.etcd.prefix + "master";
    state_prefix_ = o_.etcd.prefix + "state/";
    load_meta();
  }
  ~EtcdStateStore() override { stop(); }

  void start() override {
    std::lock_guard lk(mu_);
    if (worker_.joinable()) return;
    worker_ = std::jthread([this](std::stop_token st) { work(st); });
  }

  void stop() override {
    if (worker_.joinable()) {
      worker_.request_stop();
      worker_.join();
    }
    stop_watch();
  }

  void set_master(bool master) override {
    std::lock_guard lk(mu_);
    if (master_ == master) return;
    master_ = master;
    fenced_ = false;  // a new term: a master waiting for the key writes locally meanwhile
    if (master) last_contact_ = Clock::now();
    kick();
  }

  void fabric_contact() override {
    std::lock_guard lk(mu_);
    last_contact_ = Clock::now();
  }

  void on_changed(std::function<void(const std::vector<std::string>&)> fn) override {
    std::lock_guard lk(mu_);
    changed_ = std::move(fn);
  }
  void on_note(std::function<void(const json&)> fn) override {
    std::lock_guard lk(mu_);
    note_ = std::move(fn);
  }

  Result<void> write(std::string_view name, std::string_view text) override {
    if (!known_doc(name)) return unknown(name);
    std::unique_lock lk(mu_);
    if (!master_)
      return fail(Errc::kUnsupported,
                  "state store: this SM is not the master; the master writes the shared state (" +
                      o_.etcd.prefix + ")");
    if (fenced_)
      return fail(Errc::kUnsupported,
                  "state store: this SM lost " + master_key_ +
                      " (its lease expired: another SM may be master); nothing was changed");
    Meta& m = meta_[std::string(name)];
    const uint64_t gen = m.generation + 1;
    const std::string value = value_of(gen, text);
    if (holding_ && etcd_ok_) {
      auto t = etcd_.txn({EtcdCompare::lease_is(master_key_, lease_)},
                         {EtcdOp::put(state_prefix_ + std::string(name), value)});
      if (t && !t->succeeded) {
        lost_key(lk, "a write of " + std::string(name) + " was refused");
        return fail(Errc::kUnsupported,
                    "state store: etcd refused the write of " + std::string(name) + ": " +
                        master_key_ +
                        " is no longer on this SM's lease (it expired, or another "
                        "SM holds it); nothing was changed");
      }
      if (t) {
        if (auto r = write_file_durably(path(name), text, mode_of(name)); !r) return r;
        m = {gen, true};
        return save_meta();
      }
      etcd_down(lk, t.error().message);
    }
    // On the local copy only: etcd is away, or this master does not hold the key yet.
    if (auto r = write_file_durably(path(name), text, mode_of(name)); !r) return r;
    m = {gen, false};
    kick();
    return save_meta();
  }

  StateStoreStatus status() const override {
    std::lock_guard lk(mu_);
    StateStoreStatus s;
    s.kind = "etcd";
    json docs = json::object();
    size_t owed = 0;
    for (const auto& [name, m] : meta_) {
      docs[name] = {{"generation", m.generation}, {"synced", m.synced}};
      owed += !m.synced;
    }
    s.detail = {{"endpoints", o_.etcd.endpoints},
                {"prefix", o_.etcd.prefix},
                {"etcd", etcd_ok_ ? "reachable" : "unreachable"},
                {"role", master_ ? "master" : "standby"},
                {"holds_master_key", holding_},
                {"lease_s", o_.lease_s},
                {"documents", docs},
                {"unsynced", owed}};
    if (!last_error_.empty()) s.detail["last_error"] = last_error_;
    if (since_unix_s_) s.detail["since_unix_s"] = since_unix_s_;
    if (master_) {
      if (!holder_.empty() && !holding_) s.detail["held_by"] = holder_;
      s.degraded = !etcd_ok_ || !holding_ || owed;
      s.detail["fenced"] = fenced_;
      if (s.degraded)
        s.detail["note"] = fenced_     ? "lost the master key: writes are refused"
                           : !etcd_ok_ ? "etcd unreachable: running on the local copy"
                           : !holding_ ? "waiting for the master key: writes are local until then"
                                       : "writing back what changed while etcd was away";
    } else {
      s.degraded = stale_;
      s.detail["stale"] = stale_;
      if (stale_) s.detail["note"] = "the copy may be stale: etcd's watch is down";
      if (watch_revision_) s.detail["revision"] = watch_revision_;
    }
    return s;
  }

 private:
  struct Meta {
    uint64_t generation = 0;
    bool synced = true;
  };

  // Wakes the worker (mu_ held).
  void kick() {
    kicked_ = true;
    cv_.notify_all();
  }

  bool unsynced() const {
    return std::any_of(meta_.begin(), meta_.end(), [](const auto& m) { return !m.second.synced; });
  }

  std::string value_of(uint64_t gen, std::string_view text) const {
    return json{{"generation", gen}, {"writer", o_.self}, {"text", std::string(text)}}.dump();
  }

  std::string meta_path() const { return dir_ + "/state-store.meta"; }

  void load_meta() {
    auto r =
        for_each_state_line(meta_path(), [this](const std::string& line, const std::string& where) {
          std::istringstream ss(line);
          std::string name;
          uint64_t gen = 0;
          int synced = 0;
          if (!(ss >> name >> gen >> synced) || !known_doc(name)) {
            WEFT_LOG(Warn, "STO-0001") << where << "expected \"NAME GENERATION SYNCED\", skipped";
            return;
          }
          meta_[name] = {gen, synced != 0};
        });
    if (!r) WEFT_LOG(Warn, "STO-0001") << r.error().message;
  }

  Result<void> save_meta() {
    std::string text = "# the state store's documents: NAME GENERATION SYNCED (1: etcd has it)\n";
    for (const auto& [name, m] : meta_)
      text += name + " " + std::to_string(m.generation) + " " + (m.synced ? "1" : "0") + "\n";
    return write_file_durably(meta_path(), text);
  }

  void note(std::unique_lock<std::mutex>& lk, json j) {
    auto fn = note_;
    lk.unlock();
    if (fn) fn(j);
    lk.lock();
  }

  void etcd_down(std::unique_lock<std::mutex>& lk, const std::string& why) {
    last_error_ = why;
    if (!etcd_ok_) return;
    etcd_ok_ = false;
    since_unix_s_ = unix_now();
    WEFT_LOG(Warn, "STO-0002") << "etcd unreachable (" << why << "): "
                               << (master_ ? "the master runs on its local copy and writes "
                                             "back what changes when etcd returns"
                                           : "this standby's copy may go stale");
    note(lk, {{"etcd", "unreachable"}, {"why", why}, {"role", master_ ? "master" : "standby"}});
  }

  void etcd_up(std::unique_lock<std::mutex>& lk) {
    if (etcd_ok_) return;
    etcd_ok_ = true;
    since_unix_s_ = unix_now();
    last_error_.clear();
    WEFT_LOG(Info, "STO-0003") << "etcd reachable again at " << etcd_.endpoint();
    note(lk, {{"etcd", "reachable"}, {"endpoint", etcd_.endpoint()}});
  }

  void lost_key(std::unique_lock<std::mutex>& lk, const std::string& why) {
    holding_ = false;
    fenced_ = true;  // no writes, not even local ones, until it holds the key again
    lease_ = 0;
    WEFT_LOG(Error, "STO-0004") << "lost " << master_key_ << " (" << why
                                << "): this SM's writes to etcd are refused from now on";
    note(lk, {{"master_key", "lost"}, {"why", why}});
  }

  // One master's turn of the worker: take the key, renew it, write back.
  void master_tick(std::unique_lock<std::mutex>& lk) {
    const bool in_contact = Clock::now() - last_contact_ < std::chrono::seconds(o_.lease_s);
    if (!holding_) {
      if (!in_contact) return;  // a master cut off from its fabric claims nothing
      if (lease_) {             // granted on an earlier try: still there?
        auto ttl = etcd_.keepalive(lease_);
        if (!ttl) return etcd_down(lk, ttl.error().message);
        if (*ttl == 0) lease_ = 0;
      }
      if (!lease_) {
        auto g = etcd_.grant(o_.lease_s);
        if (!g) return etcd_down(lk, g.error().message);
        lease_ = *g;
      }
      auto t = etcd_.txn({EtcdCompare::absent(master_key_)},
                         {EtcdOp::put(master_key_, o_.self, lease_)});
      if (!t) return etcd_down(lk, t.error().message);
      etcd_up(lk);
      if (!t->succeeded) {
        auto cur = etcd_.range(master_key_);
        if (!cur) return etcd_down(lk, cur.error().message);
        const std::string who = cur->kvs.empty() ? "" : cur->kvs[0].value;
        if (!cur->kvs.empty() && cur->kvs[0].lease == lease_) {
          holding_ = true;  // ours already (a retry after a lost answer)
        } else {
          if (who != holder_)
            WEFT_LOG(Warn, "STO-0005")
                << master_key_ << " is held by " << (who.empty() ? "(gone)" : who)
                << ": this master writes locally until that SM's lease expires";
          holder_ = who;
          return;
        }
      }
      holding_ = true;
      fenced_ = false;
      holder_.clear();
      WEFT_LOG(Info, "STO-0006") << "holds " << master_key_ << " (lease " << lease_ << ", "
                                 << o_.lease_s << " s)";
      note(lk, {{"master_key", "held"}, {"lease", lease_}});
      adopt_newer(lk);
    } else if (in_contact) {
      auto ttl = etcd_.keepalive(lease_);
      if (!ttl) return etcd_down(lk, ttl.error().message);
      etcd_up(lk);
      if (*ttl == 0) return lost_key(lk, "its lease expired");
      not_renewing_ = false;
    } else if (!not_renewing_) {
      not_renewing_ = true;
      WEFT_LOG(Warn, "STO-0007") << "no fabric contact for " << o_.lease_s << " s: the lease on "
                                 << master_key_ << " is not renewed (another SM may take over)";
    }
    if (holding_) write_back(lk);
  }

  // A new master: what etcd has that is newer than its copy (a standby that missed
  // part of the watch), before it writes back its own.
  void adopt_newer(std::unique_lock<std::mutex>& lk) {
    auto r = etcd_.range(state_prefix_, true);
    if (!r) return etcd_down(lk, r.error().message);
    std::vector<std::string> changed;
    for (const auto& kv : r->kvs) apply(kv, /*as_master=*/true, changed);
    announce(lk, changed);
  }

  void write_back(std::unique_lock<std::mutex>& lk) {
    for (auto& [name, m] : meta_) {
      if (m.synced) continue;
      auto text = read_text_file(path(name));
      if (!text) {
        WEFT_LOG(Error, "STO-0008") << "cannot write back " << name << ": " << text.error().message;
        continue;
      }
      auto t = etcd_.txn({EtcdCompare::lease_is(master_key_, lease_)},
                         {EtcdOp::put(state_prefix_ + name, value_of(m.generation, *text))});
      if (!t) return etcd_down(lk, t.error().message);
      if (!t->succeeded) return lost_key(lk, "the write-back of " + name + " was refused");
      m.synced = true;
      WEFT_LOG(Info, "STO-0009") << "wrote back " << name << " (generation " << m.generation
                                 << ") to etcd";
      if (auto s = save_meta(); !s) WEFT_LOG(Error, "STO-0008") << s.error().message;
    }
  }

  // A document from etcd into the local copy. A standby takes what the master wrote,
  // unless its own copy is one it wrote as master that etcd never got and nothing
  // newer has come since (owed across a restart: written back when it is master
  // again); a master taking over keeps what it wrote itself and etcd lacks.
  void apply(const EtcdKv& kv, bool as_master, std::vector<std::string>& changed) {
    const std::string name = kv.key.substr(state_prefix_.size());
    if (!known_doc(name)) return;
    json j = json::parse(kv.value, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("text") || !j["text"].is_string() ||
        !j.contains("generation") || !j["generation"].is_number_unsigned()) {
      WEFT_LOG(Warn, "STO-0010") << kv.key << ": not a document weft wrote, ignored";
      return;
    }
    const uint64_t gen = j["generation"].get<uint64_t>();
    Meta& m = meta_[name];
    if (as_master && !m.synced) {
      m.generation = std::max(m.generation, gen) + 1;  // ours goes back over it
      return;
    }
    if (m.synced && m.generation == gen) return;
    if (!m.synced && m.generation > gen) return;  // owed
    if (as_master && gen < m.generation) return;
    const std::string text = j["text"].get<std::string>();
    if (auto r = write_file_durably(path(name), text, mode_of(name)); !r) {
      WEFT_LOG(Error, "STO-0008") << r.error().message;
      return;
    }
    m = {gen, true};
    changed.push_back(name);
  }

  void announce(std::unique_lock<std::mutex>& lk, const std::vector<std::string>& changed) {
    if (changed.empty()) return;
    if (auto s = save_meta(); !s) WEFT_LOG(Error, "STO-0008") << s.error().message;
    std::string list;
    for (const auto& n : changed) list += (list.empty() ? "" : ", ") + n;
    WEFT_LOG(Info, "STO-0011") << "from etcd: " << list;
    auto fn = changed_;
    lk.unlock();
    if (fn) fn(changed);
    lk.lock();
  }

  // A standby's watch: the whole prefix read, then followed; on its own thread.
  void watch_loop(std::stop_token st) {
    while (!st.stop_requested()) {
      auto r = etcd_.range(state_prefix_, true);
      std::unique_lock lk(mu_);
      if (!r) {
        stale_ = true;
        etcd_down(lk, r.error().message);
        lk.unlock();
        sleep_for(st, std::chrono::seconds(1));
        continue;
      }
      etcd_up(lk);
      std::vector<std::string> changed;
      for (const auto& kv : r->kvs) apply(kv, false, changed);
      announce(lk, changed);
      stale_ = false;
      watch_revision_ = r->revision;
      const int64_t from = r->revision + 1;
      lk.unlock();
      auto w = etcd_.watch(
          state_prefix_, from,
          [this](const std::vector<EtcdEvent>& evs, int64_t rev) {
            std::unique_lock l2(mu_);
            std::vector<std::string> ch;
            for (const auto& e : evs)
              if (!e.deleted) apply(e.kv, false, ch);
            if (rev) watch_revision_ = rev;
            announce(l2, ch);
          },
          st);
      if (st.stop_requested()) return;
      lk.lock();
      stale_ = true;
      etcd_down(lk, w ? "the watch ended" : w.error().message);
      lk.unlock();
      sleep_for(st, std::chrono::milliseconds(500));
    }
  }

  static void sleep_for(std::stop_token st, Clock::duration d) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lk(m);
    cv.wait_for(lk, st, d, [] { return false; });
  }

  void stop_watch() {
    if (watcher_.joinable()) {
      watcher_.request_stop();
      watcher_.join();
    }
  }

  void work(std::stop_token st) {
    const auto tick = std::chrono::milliseconds(std::max(200, o_.lease_s * 1000 / 3));
    std::unique_lock lk(mu_);
    bool was_master = false;
    while (!st.stop_requested()) {
      if (master_) {
        if (!was_master) {
          lk.unlock();
          stop_watch();
          lk.lock();
          was_master = true;
          stale_ = false;
        }
        master_tick(lk);
      } else {
        if (was_master || !watcher_.joinable()) {
          if (holding_ && lease_) {
            const int64_t lease = lease_;
            holding_ = false;
            lease_ = 0;
            lk.unlock();
            // Stepping down: the next master need not wait for the lease to run out.
            if (auto r = etcd_.revoke(lease); !r)
              WEFT_LOG(Warn, "STO-0012")
                  << "revoking the master key's lease: " << r.error().message;
            lk.lock();
          }
          was_master = false;
          lk.unlock();
          stop_watch();
          watcher_ = std::jthread([this](std::stop_token s) { watch_loop(s); });
          lk.lock();
        }
      }
      // A master that waits for the key or owes etcd a write-back looks again soon.
      const bool owed = master_ && etcd_ok_ && (!holding_ || unsynced());
      const Clock::duration wait = owed ? std::chrono::milliseconds(250) : tick;
      cv_.wait_for(lk, st, wait, [this] { return kicked_; });
      kicked_ = false;
    }
    if (holding_ && lease_) {
      const int64_t lease = lease_;
      holding_ = false;
      lk.unlock();
      (void)etcd_.revoke(lease);
    }
  }

  StateStoreOptions o_;
  EtcdClient etcd_;
  std::string master_key_, state_prefix_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, Meta> meta_;
  bool master_ = false, holding_ = false, etcd_ok_ = true, stale_ = true, not_renewing_ = false;
  bool kicked_ = false;
  bool fenced_ = false;  // this master lost the key: it writes nothing until it has it back
  int64_t lease_ = 0, watch_revision_ = 0, since_unix_s_ = 0;
  std::string last_error_, holder_;
  Clock::time_point last_contact_ = Clock::now();
  std::function<void(const std::vector<std::string>&)> changed_;
  std::function<void(const json&)> note_;
  std::jthread worker_, watcher_;
};

}  // namespace

std::shared_ptr<StateStore> directory_store(const std::string& state_dir,
                                            std::vector<StateDoc> docs,
                                            std::map<std::string, std::string> paths) {
  return std::make_shared<DirStateStore>(state_dir, std::move(docs), std::move(paths));
}

Result<std::shared_ptr<StateStore>> make_state_store(const std::string& url,
                                                     const std::string& state_dir,
                                                     StateStoreOptions o) {
  if (url.empty() || url == "dir" || url == "file://" + state_dir)
    return directory_store(state_dir, std::move(o.docs), std::move(o.paths));
  if (url.rfind("etcd://", 0) != 0)
    return fail(Errc::kInvalidInput,
                "state_store: expected \"dir\" or "
                "etcd://HOST:PORT[,HOST:PORT...]/PREFIX, got \"" +
                    url + "\"");
  auto cfg = parse_etcd_url(url);
  if (!cfg) return fail(Errc::kInvalidInput, "state_store: " + cfg.error().message);
  cfg->cacert = o.etcd.cacert;
  cfg->cert = o.etcd.cert;
  cfg->key = o.etcd.key;
  cfg->user = o.etcd.user;
  cfg->password = o.etcd.password;
  if (o.lease_s < 2 || o.lease_s > 3600)
    return fail(Errc::kInvalidInput,
                "state_store_lease_s: " + std::to_string(o.lease_s) + " is not 2-3600 seconds");
  o.etcd = std::move(*cfg);
  if (o.self.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    o.self = std::string(host) + " pid " + std::to_string(::getpid());
  }
  return std::shared_ptr<StateStore>(std::make_shared<EtcdStateStore>(state_dir, std::move(o)));
}

}  // namespace weft::store
