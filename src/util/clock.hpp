// Seconds on a steady clock, and scoped timers, for the phase times of write and read reports. Layer: util.
#pragma once

#include <chrono>

namespace hzio::util {

// Local. Seconds since an arbitrary fixed point of the steady clock: subtract two of them.
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Adds the seconds between its construction and its destruction to a phase's total. Local.
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double& into) : into_(into), start_(now_seconds()) {}
  ~ScopedSeconds() { into_ += now_seconds() - start_; }
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;

 private:
  double& into_;
  double start_;
};

}  // namespace hzio::util
