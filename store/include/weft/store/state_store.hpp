// weft/store/state_store.hpp — where what the master knows beyond the fabric lives: its
// documents, each replaced whole; the store holds the documents its owners name
// (StateDoc). Readers read the
// local file (path()); writers call write(), which returns once the text is durable.
//
// Two stores behind one seam. The state directory (the default) writes the file
// (temp file, fsync, rename). The etcd store (state_store etcd://HOST:PORT/PREFIX)
// writes etcd first, in a transaction fenced by the lease of the master key it
// holds, then the local copy; a standby watches the prefix and keeps its local copy
// current, so that on takeover it programs from what the master knew. When etcd
// cannot be reached the master goes on with its local copy, says so, and writes
// back what changed when etcd returns.
//
//   auto store = weft::store::directory_store("/var/lib/weft", {{"notes", 0640}});
//   store->write("notes", text);             // on disk (and in etcd) before it returns
//   std::ifstream in(store->path("notes"));
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "weft/result.hpp"
#include "weft/store/etcd.hpp"

namespace weft::store {

// A document a store holds: its name (a file under the state directory, a key under
// PREFIX/state/ in etcd) and its local file's mode. The store knows none of them by
// itself: each owner names its own (the SM's in weft/sm/documents.hpp, REST's in
// weft/rest/auth.hpp) and whoever makes the store passes them all. A store writes only
// the documents it was given, and a key in etcd that no owner named never reaches disk.
struct StateDoc {
  std::string name;
  mode_t mode = 0644;
};

struct StateStoreStatus {
  std::string kind;                                  // "directory", "etcd"
  nlohmann::json detail = nlohmann::json::object();  // what /api/v1/sm shows
  bool degraded = false;  // a master on its local copy only, or a standby's copy stale
};

class StateStore {
 public:
  virtual ~StateStore() = default;
  // The local file holding `name`.
  virtual std::string path(std::string_view name) const = 0;
  // Replaces `name` with `text`; durable before it returns. A name no owner gave the
  // store is refused (kInternal); the etcd store refuses (kUnsupported) on a standby,
  // and when another SM holds the master key.
  [[nodiscard]] virtual Result<void> write(std::string_view name, std::string_view text) = 0;
  virtual StateStoreStatus status() const = 0;

  // The SM's role (the daemon tells it on every change): only a master writes.
  virtual void set_master(bool master) { (void)master; }
  // The master reached its fabric (a sweep finished, or another SM's poll came in): a
  // master that stops reaching it stops renewing its claim on a shared store.
  virtual void fabric_contact() {}
  // Called (on the store's thread) with the names of documents that changed under
  // this SM: a standby's copy brought up to date, or a new master's from etcd.
  virtual void on_changed(std::function<void(const std::vector<std::string>&)> fn) { (void)fn; }
  // Called (on the store's thread) when the store's state changes: etcd lost or back,
  // the master key taken or lost, a write refused; for the daemon's events.
  virtual void on_note(std::function<void(const nlohmann::json&)> fn) { (void)fn; }
  // Starts what a shared store runs in the background (no-op for a directory).
  virtual void start() {}
  virtual void stop() {}
};

struct StateStoreOptions {
  EtcdConfig etcd;   // endpoints and prefix from the URL; TLS and auth
  int lease_s = 10;  // the master key's lease (state_store_lease_s)
  std::string self;  // this SM, as the master key names it: "0xPORTGUID host pid"
  std::map<std::string, std::string> paths;  // documents kept outside the state dir
  std::vector<StateDoc> docs;                // what the store holds, from its owners
};

// The state directory as a store (what an SM without state_store uses).
std::shared_ptr<StateStore> directory_store(const std::string& state_dir,
                                            std::vector<StateDoc> docs,
                                            std::map<std::string, std::string> paths = {});

// "" or "dir" (or a path's "file://"): the state directory; "etcd://...": etcd with
// the state directory as its local copy. Errors name what is wrong with `url`.
[[nodiscard]] Result<std::shared_ptr<StateStore>> make_state_store(const std::string& url,
                                                                   const std::string& state_dir,
                                                                   StateStoreOptions o);

}  // namespace weft::store
