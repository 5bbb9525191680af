// weft/daemon/partition_store.hpp — the partitions made through weft's REST API. They live
// in a file of their own in OpenSM's partitions.conf grammar (rest_partition_file,
// by default STATE_DIR/partitions.rest.conf), which weft rewrites whole and durably
// (temp file, fsync, rename, fsync of the directory) before a change is acknowledged;
// the admin's partition_config_file is merged with it by P_Key and never written.
// A member keeps its own membership and index0 (OpenSM reads index0 per definition,
// so a P_Key whose members differ in it is written as several definitions).
//
//   auto store = PartitionStore::open("/var/lib/weft/partitions.rest.conf", file_policy);
//   auto next = store->partitions();   next[0x0a12].members[guid] = {Membership::kFull, true};
//   auto gen = store->commit(next);    // on disk, generation + 1; or why not (a 409)
//   sm_options.partitions = store->merged();
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "weft/config/partitions.hpp"
#include "weft/daemon/partitions.hpp"
#include "weft/result.hpp"
#include "weft/store/state_store.hpp"

namespace weft::daemon {

class PartitionStore {
 public:
  // Reads `path` (missing: none yet). `file` is partition_config_file's policy, if any.
  [[nodiscard]] static Result<PartitionStore> open(std::string path,
                                                   std::optional<config::PartitionPolicy> file);
  // The same through the SM's state store (its "partitions.rest.conf"), which commit()
  // writes through: on a shared store, fenced and in etcd before it returns.
  [[nodiscard]] static Result<PartitionStore> open(std::shared_ptr<store::StateStore> store,
                                                   std::optional<config::PartitionPolicy> file);
  // The file read again (another master's partitions, from a shared store): whether
  // the partitions or their generation changed.
  [[nodiscard]] Result<bool> reload();
  const std::string& path() const { return path_; }
  const RestPartitions& partitions() const { return rest_; }
  const std::optional<config::PartitionPolicy>& file_policy() const { return file_; }
  // Where a P_Key is defined by partition_config_file ("FILE:LINE"), if it is.
  std::optional<std::string> defined_by_file(uint16_t pkey) const;
  // Replaces the REST partitions with `next`: validated, written durably, then kept.
  // Returns the new generation. The Default partition (0x7fff) and P_Keys the admin's
  // file defines cannot be deleted or have their file members changed here.
  [[nodiscard]] Result<uint64_t> commit(RestPartitions next);
  // A new partition_config_file (reload): the REST partitions stay.
  void set_file_policy(std::optional<config::PartitionPolicy> file) { file_ = std::move(file); }
  // The policy the SM applies: the file's definitions, then the REST ones.
  std::optional<config::PartitionPolicy> merged() const;
  uint64_t generation() const { return generation_; }

  // The file's text for a set of REST partitions, and its reading back.
  static std::string render(const RestPartitions& parts);
  [[nodiscard]] static Result<RestPartitions> parse(std::string_view text,
                                                    const std::string& source);

 private:
  PartitionStore(std::string path, std::optional<config::PartitionPolicy> file)
      : path_(std::move(path)), file_(std::move(file)) {}
  std::string path_;
  std::optional<config::PartitionPolicy> file_;
  std::shared_ptr<store::StateStore> store_;
  RestPartitions rest_;
  uint64_t generation_ = 1;
};

}  // namespace weft::daemon
