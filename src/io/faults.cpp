// Simulated disk failures (faults.hpp).
#include "io/faults.hpp"

#include <algorithm>

namespace hzio::io {

Result<std::shared_ptr<InjectedFaults>> InjectedFaults::make(const Fault& fault) {
  if (fault.error <= 0) return invalid_argument("a fault needs a positive errno, got " + std::to_string(fault.error));
  std::regex pattern;
  try {
    pattern = std::regex(fault.path_pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return invalid_argument("fault path pattern '" + fault.path_pattern + "': " + e.what());
  }
  return std::shared_ptr<InjectedFaults>(new InjectedFaults(fault, std::move(pattern)));
}

InjectedFaults::InjectedFaults(Fault fault, std::regex pattern)
    : fault_(std::move(fault)), pattern_(std::move(pattern)), budget_(std::max<int64_t>(0, fault_.after_bytes)) {}

int InjectedFaults::error(FaultOp op, const std::string& path) {
  std::lock_guard lock(mutex_);
  return fault_.op == op && std::regex_search(path, pattern_) ? fault_.error : 0;
}

uint64_t InjectedFaults::write_allowance(const std::string& path, uint64_t wanted, int* error) {
  std::lock_guard lock(mutex_);
  if (fault_.op != FaultOp::kWrite || !std::regex_search(path, pattern_)) return wanted;
  const uint64_t allowed = std::min<uint64_t>(wanted, static_cast<uint64_t>(budget_));
  budget_ -= static_cast<int64_t>(allowed);
  if (allowed == 0) *error = fault_.error;
  return allowed;
}

void FaultSeam::set(std::shared_ptr<Faults> faults) {
  std::lock_guard lock(mutex_);
  faults_ = std::move(faults);
  armed_.store(faults_ != nullptr, std::memory_order_release);
}

int FaultSeam::error(FaultOp op, const std::string& path) {
  if (!armed()) return 0;
  std::lock_guard lock(mutex_);
  return faults_ ? faults_->error(op, path) : 0;
}

uint64_t FaultSeam::write_allowance(const std::string& path, uint64_t wanted, int* error) {
  if (!armed()) return wanted;
  std::lock_guard lock(mutex_);
  return faults_ ? faults_->write_allowance(path, wanted, error) : wanted;
}

}  // namespace hzio::io
