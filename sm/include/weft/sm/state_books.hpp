// weft/sm/state_books.hpp — what the SM keeps in its state store: the LIDs it assigned
// (guid2lid), the port keys (guid2mkey, neighbors), the ports it keeps down
// (ports-down) and the multicast groups (mcast-groups). The four are read together, at the first
// discovery and again after another master changed them (a shared store); and the store hears this
// SM's role and its contact with the fabric.
//
//   StateBooks books(store, state_dir, opts.mkey);
//   if (auto r = books.load(opts.mkey); !r) ...;   // *r: read just now
//   books.save_lids(rep);                           // after the LID assignment
//   books.heard(mads_heard);                        // fabric contact, for a shared store
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "weft/sm/lid_manager.hpp"
#include "weft/sm/mkey.hpp"
#include "weft/sm/multicast.hpp"
#include "weft/sm/port_book.hpp"
#include "weft/sm/snapshot.hpp"
#include "weft/store/state_store.hpp"

namespace weft::sm {

class StateBooks {
 public:
  StateBooks(std::shared_ptr<store::StateStore> store, std::string state_dir,
             const MKeyOptions& mkey);

  store::StateStore& store() { return *store_; }
  const std::shared_ptr<store::StateStore>& shared_store() const { return store_; }
  Guid2Lid& lids() { return lids_; }
  MKeyBook& keys() { return keys_; }
  PortBook& down() { return down_; }
  const PortBook& down() const { return down_; }

  // Reads the four documents unless they were read since the last invalidate(): true
  // when it read them now. Fails on a document that cannot be read at all (a bad line
  // is skipped with a warning).
  [[nodiscard]] Result<bool> load(const MKeyOptions& mkey);
  // Another master changed one of them (`name`): all four are read again at the next
  // load(). Returns whether `name` was one of them.
  bool changed(const std::string& name);
  // Writes guid2lid, and the port keys when they changed; a failure is a problem of the
  // sweep's report (the sweep goes on).
  void save_lids(SweepReport& rep);
  void save_keys(SweepReport& rep);
  // The multicast groups (mcast-groups): nullopt when the store holds none; an error
  // when the document cannot be read or is not one.
  [[nodiscard]] Result<std::optional<McDb>> read_groups();
  // A document the SM writes whole (mcast-groups, sa-records): its text, nullopt when
  // the store holds none; written when it differs from what was last read or written
  // (true when written, an error when the store refused).
  [[nodiscard]] Result<std::optional<std::string>> read_doc(const std::string& name);
  [[nodiscard]] Result<bool> save_doc(const std::string& name, std::string text);
  // The store follows the role; MADs heard (`heard`: a running count, answered or
  // received) since the last call are fabric contact, which keeps a master's claim on a
  // shared store.
  void set_master(bool master) { store_->set_master(master); }
  void heard(uint64_t mads);

 private:
  std::shared_ptr<store::StateStore> store_;
  std::string state_dir_;
  Guid2Lid lids_;
  MKeyBook keys_;
  PortBook down_;
  std::map<std::string, std::string> texts_;  // documents as last read or written
  bool loaded_ = false;
  uint64_t heard_ = 0;  // MADs heard when the store last heard of contact
};

}  // namespace weft::sm
