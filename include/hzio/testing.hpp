// Test hooks of hzio: simulated disk failures, so that tests can fail a write or a commit at any step
// and check what hzio leaves behind. Public C++ API, meant for tests only.
#pragma once

#include <cstdint>
#include <string_view>

#include "hzio/status.hpp"

namespace hzio::testing {

// Local, process-wide, thread-safe. From now on, file operations `op` ("create": opening a new file,
// "write", "sync": fsync of a file or of the folder of a rename, "rename": a rename onto the path) on every file whose
// path matches the ECMAScript regex `path_pattern` (searched; "" matches every path) fail with errno `error` (ENOSPC,
// EIO, EACCES, ...); writes first let `after_bytes` bytes through. Replaces any armed fault; stays
// armed until clear_fault(). Errors: kInvalidArgument (unknown op, bad pattern, error <= 0).
Status inject_fault(std::string_view op, std::string_view path_pattern, int error, int64_t after_bytes = 0);
// Local, process-wide, thread-safe. Disarms the fault.
void clear_fault();

}  // namespace hzio::testing
