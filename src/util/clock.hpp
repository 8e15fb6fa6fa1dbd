// Seconds on a steady clock, for the phase times of write and read reports. Layer: util.
#pragma once

#include <chrono>

namespace hzio::util {

// Local. Seconds since an arbitrary fixed point of the steady clock: subtract two of them.
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace hzio::util
