// weft/config/option_files.hpp — the files options name, loaded: partition_config_file
// and qos_policy_file. OpenSM's rule for its default paths: a missing file there means
// none (Default=0x7fff : ALL=full; no QoS policy); any other missing file is an error
// naming the option and where it was set.
//
//   auto parts = config::load_partition_file(values);   // nullopt: none
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "weft/config/options.hpp"
#include "weft/config/partitions.hpp"
#include "weft/config/qos_policy.hpp"
#include "weft/result.hpp"

namespace weft::config {

Result<std::optional<PartitionPolicy>> load_partition_file(const Values& v);
Result<std::optional<QosPolicy>> load_qos_policy_file(const Values& v);

// A policy option as the enum a module takes (`named`: its words). The option reader lets
// only known words through; another is a bug between the two, refused here naming the
// option and where it was set, not guessed at.
template <class E>
Result<E> option_word(const Values& v, const char* name,
                      std::optional<E> (*named)(std::string_view)) {
  if (auto e = named(v.get_str(name))) return *e;
  return fail(Errc::kInvalidInput,
              v.origin(name) + ": " + name + " \"" + v.get_str(name) + "\" is not known");
}

}  // namespace weft::config
