// weft/daemon/partitions.hpp — the partitions made through weft's REST API as values:
// what a command changes (PartitionChange) and what readers on other threads see
// (PartitionView). The ledger that keeps them on disk is weft/daemon/partition_store.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "weft/config/partitions.hpp"
#include "weft/result.hpp"
#include "weft/types.hpp"

namespace weft::daemon {

struct RestMember {
  config::Membership membership = config::Membership::kFull;
  bool index0 = false;
  bool operator==(const RestMember&) const = default;
};

struct RestPartition {
  uint16_t pkey = 0;  // low 15 bits
  std::string name;
  bool ipoib = false;
  config::GroupFlags flags;                // mtu, rate, sl of the partition (its IPoIB group's)
  std::map<uint64_t, RestMember> members;  // by port GUID; may name ports not on the fabric yet
  bool operator==(const RestPartition&) const = default;
};

using RestPartitions = std::map<uint16_t, RestPartition>;

// The partition change a command asks for: from the REST partitions as they are to
// what they should be, or why not (an error the REST layer maps to a status).
using PartitionChange = std::function<Result<RestPartitions>(const RestPartitions&)>;

// What readers on other threads see of the partitions: the REST ones as last
// committed, and partition_config_file's policy.
struct PartitionView {
  RestPartitions rest;
  std::optional<config::PartitionPolicy> file;
  std::string rest_path;
  uint64_t generation = 0;
};

// "0x0a12", "0xa12", "a12", "2578": a P_Key's low 15 bits, or nullopt.
std::optional<uint16_t> parse_pkey(std::string_view s);
// A port GUID as UFM's clients write it: 16 hex digits with or without "0x" (up to 20
// characters), or with ':' between bytes (Kubernetes' net.HardwareAddr form).
std::optional<Guid> parse_port_guid(std::string_view s);

}  // namespace weft::daemon
