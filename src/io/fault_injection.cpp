// The process-wide fault of the io layer's test hook (fault_injection.hpp).
#include "io/fault_injection.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace hzio::io {
namespace {

std::atomic<bool> g_armed{false};  // checked without the lock: the hot write path pays one load
std::mutex g_mutex;
Fault g_fault;
int64_t g_budget = 0;  // kWrite: bytes still allowed

bool hits(const std::string& path) { return path.find(g_fault.path_part) != std::string::npos; }

}  // namespace

void set_fault(const Fault& fault) {
  std::lock_guard lock(g_mutex);
  g_fault = fault;
  g_budget = std::max<int64_t>(0, fault.after_bytes);
  g_armed = true;
}

void clear_fault() {
  std::lock_guard lock(g_mutex);
  g_armed = false;
}

bool fault_armed() { return g_armed.load(); }

int fault_error(FaultOp op, const std::string& path) {
  if (!g_armed.load()) return 0;
  std::lock_guard lock(g_mutex);
  return g_armed && g_fault.op == op && hits(path) ? g_fault.error : 0;
}

uint64_t fault_write_allowance(const std::string& path, uint64_t wanted, int* error) {
  if (!g_armed.load()) return wanted;
  std::lock_guard lock(g_mutex);
  if (!g_armed || g_fault.op != FaultOp::kWrite || !hits(path)) return wanted;
  const uint64_t allowed = std::min<uint64_t>(wanted, static_cast<uint64_t>(g_budget));
  g_budget -= static_cast<int64_t>(allowed);
  if (allowed == 0) *error = g_fault.error;
  return allowed;
}

}  // namespace hzio::io
