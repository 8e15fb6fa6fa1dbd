// Process-wide mutexes and fork(): a child has only the thread that forked, so a mutex another thread
// held at the fork would stay locked in the child forever, and its first read or open would hang. Each
// process-wide mutex is registered here once; fork() then takes them all first (no state half-changed)
// and releases them in both processes. Layer: util.
#pragma once

#include <mutex>

namespace hzio::util {

// Local, thread-safe. Holds `mutex` (one that lives as long as the process) across every later fork().
void hold_across_fork(std::mutex& mutex);

}  // namespace hzio::util
