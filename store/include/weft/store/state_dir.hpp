// weft/store/state_dir.hpp — an SM's state directory (its documents, see state_store.hpp),
// held by one SM at a time. An exclusive lock on DIR/lock (flock, released by the
// kernel when the process ends, kill -9 included) keeps a second SM pointed at the
// same directory from mixing its LIDs into the first one's file; the lock file holds
// the holder's pid, for the message the second one prints.
//
//   auto dir = weft::store::StateDir::acquire("/var/lib/weft/0x0002c903000e0b72");
//   if (!dir) die(dir.error().message);   // "... in use by another weft (pid 4711) ..."
//   dir->file("notes");                   // "/var/lib/weft/0x.../notes"
#pragma once

#include <string>

#include "weft/result.hpp"

namespace weft::store {

class StateDir {
 public:
  // Creates `path` (mode 0750) when missing and takes its lock without waiting.
  [[nodiscard]] static Result<StateDir> acquire(const std::string& path);
  StateDir(StateDir&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }
  StateDir& operator=(StateDir&&) = delete;
  StateDir(const StateDir&) = delete;
  ~StateDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  StateDir(std::string p, int fd) : path_(std::move(p)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace weft::store
