// weft/sm/lid_manager.hpp — deterministic LID assignment with a persistent
// GUID->LID file, so a restarted SM gives every port the LID it had.
//
// Order of preference for a port: (1) its entry in the state file, (2) the LID
// the port already holds on the fabric, when valid, unique and not reserved in
// the file for another GUID, (3) the lowest free LID. Ports are taken in the
// model's canonical order, so the same fabric gives the same LIDs. Entries of
// ports that are absent stay in the file and keep their LIDs reserved.
//
// The file is OpenSM's guid2lid format ("0xPORTGUID 0xLIDMIN 0xLIDMAX" per
// line), written atomically (temp file, fsync, rename).
//
//   Guid2Lid db;  auto warnings = db.load("/var/lib/weft/guid2lid");
//   auto plan = assign_lids(model, db, /*lmc=*/0);   // sets attrs.lid in `model`
//   db.save("/var/lib/weft/guid2lid");
#pragma once

#include <map>
#include <string>
#include <vector>

#include "weft/fabric/fabric.hpp"

namespace weft::sm {

class Guid2Lid {
 public:
  // Reads `path`; a missing file is an empty database. Malformed lines are
  // skipped and returned as "file:line: what" warnings; duplicate LIDs too.
  Result<std::vector<std::string>> load(const std::string& path);
  Result<void> save(const std::string& path) const;
  std::string text() const;  // what save() writes
  const std::map<Guid, Lid>& entries() const { return map_; }
  void set(Guid g, Lid l) { map_[g] = l; }

 private:
  std::map<Guid, Lid> map_;
};

struct LidAssignment {
  size_t from_file = 0;
  size_t from_fabric = 0;
  size_t fresh = 0;
  size_t changed = 0;  // ports whose LID on the fabric differs from the one assigned
  uint16_t top = 0;    // highest LID assigned
};

// Assigns a LID to every LID-holding port of `f` (switch port 0, linked CA and
// router ports), writing it into the port attributes, and to every virtual port that
// requires one and has a GUID (VPort::lid), after the ports; records each in `db`. A
// port keeps its LID from `db`, else the one it holds if free, else gets the lowest
// free one; `fabric_first` (an SM taking over from another master) puts what the
// ports hold before `db`.
Result<LidAssignment> assign_lids(fabric::Fabric& f, Guid2Lid& db, uint8_t lmc,
                                  bool fabric_first = false);

}  // namespace weft::sm
