// The process-wide fault of the io layer's test hook (fault_injection.hpp), and the public
// hzio::testing functions over it.
#include "io/fault_injection.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <regex>

#include "hzio/testing.hpp"

namespace hzio::io {
namespace {

std::atomic<bool> g_armed{false};  // checked without the lock: the hot write path pays one load
std::mutex g_mutex;
Fault g_fault;
std::regex g_pattern;
int64_t g_budget = 0;  // kWrite: bytes still allowed

bool hits(const std::string& path) { return std::regex_search(path, g_pattern); }

}  // namespace

Status set_fault(const Fault& fault) {
  std::regex pattern;
  try {
    pattern = std::regex(fault.path_pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return invalid_argument("fault path pattern '" + fault.path_pattern + "': " + e.what());
  }
  std::lock_guard lock(g_mutex);
  g_fault = fault;
  g_pattern = std::move(pattern);
  g_budget = std::max<int64_t>(0, fault.after_bytes);
  g_armed = true;
  return Status::ok();
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

namespace hzio::testing {

Status inject_fault(std::string_view op, std::string_view path_pattern, int error, int64_t after_bytes) {
  static constexpr std::pair<std::string_view, io::FaultOp> kOps[] = {{"create", io::FaultOp::kCreate},
                                                                      {"write", io::FaultOp::kWrite},
                                                                      {"sync", io::FaultOp::kSync},
                                                                      {"rename", io::FaultOp::kRename}};
  const auto* it = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return o.first == op; });
  if (it == std::end(kOps))
    return invalid_argument("fault operation '" + std::string(op) + "' is not create, write, sync or rename");
  if (error <= 0) return invalid_argument("a fault needs a positive errno, got " + std::to_string(error));
  io::Fault f;
  f.op = it->second;
  f.path_pattern = std::string(path_pattern);
  f.error = error;
  f.after_bytes = after_bytes;
  return io::set_fault(f);
}

void clear_fault() { io::clear_fault(); }

}  // namespace hzio::testing
