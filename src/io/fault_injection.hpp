// Test hook: makes chosen file operations fail as a full or broken disk would, on the files whose path
// matches a pattern, so that tests can fail a commit at each of its steps. Layer: io.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "hzio/status.hpp"

namespace hzio::io {

enum class FaultOp { kCreate, kWrite, kSync, kRename };

struct Fault {
  FaultOp op = FaultOp::kWrite;
  std::string path_pattern;  // ECMAScript regex searched in the path ("" = every file)
  int error = 28;            // errno the operation fails with (28 = ENOSPC; EIO, EACCES, EROFS also make sense)
  int64_t after_bytes = 0;   // kWrite: bytes written to hit files before the writes start failing

  // A disk that fills up after `bytes` more bytes written to files whose path matches `path_pattern`.
  static Fault disk_full_after(int64_t bytes, std::string path_pattern = "") {
    Fault f;
    f.after_bytes = bytes;
    f.path_pattern = std::move(path_pattern);
    return f;
  }
};

// Local, process-wide, thread-safe. Arms `fault`, replacing any armed one. kCreate hits File::open in
// kCreate mode, kWrite every write (direct writes then go through the page cache, so that they can
// stop at any byte), kSync fsync of a file or folder, kRename a rename onto a hit path. Errors: kInvalidArgument
// for a pattern that is not a regex.
Status set_fault(const Fault& fault);
// Local, process-wide, thread-safe. Disarms the fault.
void clear_fault();

// Local, thread-safe; for the io layer. The errno an operation on `path` fails with now, or 0.
int fault_error(FaultOp op, const std::string& path);
// Local, thread-safe; for the io layer. How many of `wanted` bytes a write to `path` may write before it
// fails (`wanted` when no fault hits it); when 0, *error is the errno to fail with.
uint64_t fault_write_allowance(const std::string& path, uint64_t wanted, int* error);
// Local, thread-safe. Whether a fault is armed.
bool fault_armed();

}  // namespace hzio::io
