// Test hooks of hzio: simulated disk failures of one dataset, so that tests can fail a write or a
// commit at any step and check what hzio leaves behind. Public C++ API, meant for tests only.
#pragma once

#include <cstdint>
#include <string_view>

#include "hzio/dataset.hpp"
#include "hzio/status.hpp"

namespace hzio::testing {

// Local, thread-safe. From now on, file operations `op` ("create": opening a new file, "write", "sync":
// fsync of a file or of the folder of a rename, "rename": a rename onto the path) of `dataset` (its data
// files, write logs, sidecars, temporary files and its .idx) on every path that matches the ECMAScript
// regex `path_pattern` (searched; "" matches every path) fail with errno `error` (ENOSPC, EIO, EACCES,
// ...); writes first let `after_bytes` bytes through. Other datasets are not affected. Replaces any
// fault armed on `dataset`; stays armed until clear_fault(dataset). For a ParallelDataset, arm the
// dataset() of the ranks that should fail. Errors: kInvalidArgument (unknown op, bad pattern, error <= 0).
Status inject_fault(Dataset& dataset, std::string_view op, std::string_view path_pattern, int error,
                    int64_t after_bytes = 0);
// Local, thread-safe. Disarms the fault of `dataset`.
void clear_fault(Dataset& dataset);

}  // namespace hzio::testing
