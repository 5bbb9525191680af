// The REST module's threads (HTTP, jobs) yield to the SM's: each lowers its own
// priority by `by` nice levels when it starts. Lowering never needs privileges; when it
// fails anyway, the thread runs as it is.
#pragma once

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace weft::rest {

inline void lower_thread_priority(int by) {
  const pid_t tid = pid_t(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, id_t(tid));
  if (now == -1 && errno != 0) return;
  (void)setpriority(PRIO_PROCESS, id_t(tid), now + by);
}

}  // namespace weft::rest
