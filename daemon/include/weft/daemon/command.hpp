// weft/daemon/command.hpp — what REST (or anyone on another thread) asks of the running
// SM: one variant of plain structs, submitted with Daemon::submit and dispatched on the
// SM's loop, one handler per alternative (daemon.cpp). A command that answers carries
// its `done`, which runs on the loop once the result is on disk (or with why not).
// A new command is one alternative here and one handler there.
//
//   daemon.submit(daemon::EnablePort{sw, PortNum(3), [](Result<void> r) { ... }});
#pragma once

#include <functional>
#include <variant>

#include "weft/daemon/partitions.hpp"
#include "weft/perf/view.hpp"
#include "weft/result.hpp"
#include "weft/types.hpp"

namespace weft::daemon {

// A sweep soon (heavy: a full discovery); one asked for during a sweep runs after it.
struct RequestSweep {
  bool heavy = false;
};

// A change to the REST partitions. When it gives a new set, the set is on disk before
// `done` runs with its generation, and a heavy sweep that applies it is scheduled; an
// unchanged set is not written and keeps its generation.
struct ChangePartitions {
  PartitionChange change;
  std::function<void(Result<uint64_t>)> done;
};

// Lets a switch port the SM keeps down (flap_policy down) come up.
struct EnablePort {
  Guid sw;
  PortNum port = 0;
  std::function<void(Result<void>)> done;
};

// Clears a port's unhealthy mark; `done` gets the mark that was cleared.
struct MarkHealthy {
  Guid node;
  PortNum port = 0;
  std::function<void(Result<perf::Unhealthy>)> done;
};

using Command = std::variant<RequestSweep, ChangePartitions, EnablePort, MarkHealthy>;

}  // namespace weft::daemon
