#include "weft/config/option_files.hpp"

#include <filesystem>
#include <string>

namespace weft::config {

namespace {

// A file an option names (`key`): nullopt when none is set, or when it is OpenSM's
// default path and that file does not exist (OpenSM's rule: no partitions file means
// Default=0x7fff : ALL=full; no policy file, no policy). Any other missing file is an
// error naming the option and where it was set.
template <class T>
Result<std::optional<T>> load_option_file(const Values& v, const char* key,
                                          const char* opensm_default,
                                          Result<T> (*load)(const std::string&)) {
  const std::string path = v.get_str(key);
  if (path.empty() || (path == opensm_default && !std::filesystem::exists(path)))
    return std::optional<T>{};
  auto got = load(path);
  if (!got) {
    if (got.error().code == Errc::kIo)
      return fail(Errc::kIo, v.origin(key) + ": " + key + " " + got.error().message);
    return std::unexpected(got.error());
  }
  return std::optional<T>(std::move(*got));
}

}  // namespace

Result<std::optional<PartitionPolicy>> load_partition_file(const Values& v) {
  return load_option_file<PartitionPolicy>(v, "partition_config_file",
                                           "/etc/opensm/partitions.conf", &load_partitions);
}

Result<std::optional<QosPolicy>> load_qos_policy_file(const Values& v) {
  return load_option_file<QosPolicy>(v, "qos_policy_file", "/etc/opensm/qos-policy.conf",
                                     &load_qos_policy);
}

}  // namespace weft::config
