// Simulated disk failures for tests, through a seam of each dataset rather than a process-wide hook:
// the files a dataset opens, and the renames and folder syncs of its commits, ask its FaultSeam before
// they touch the disk. The seam holds an io::Faults, an interface whose implementation decides what
// fails; InjectedFaults fails the operations of one Fault. Production seams hold nothing and cost one
// atomic load per operation. Layer: io.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <utility>

#include "hzio/status.hpp"

namespace hzio::io {

enum class FaultOp { kCreate, kWrite, kSync, kRename };

// What decides whether a file operation fails. Implementations must be thread-safe.
class Faults {
 public:
  virtual ~Faults() = default;
  // The errno `op` on `path` fails with now, or 0.
  virtual int error(FaultOp op, const std::string& path) = 0;
  // How many of `wanted` bytes a write to `path` may write before it fails (`wanted` when none fails);
  // when 0, *error is the errno to fail with.
  virtual uint64_t write_allowance(const std::string& path, uint64_t wanted, int* error) = 0;
};

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

// Faults that fail the operations of one Fault: kCreate hits File::open in kCreate mode, kWrite every
// write (direct writes then go through the page cache, so that they can stop at any byte), kSync fsync
// of a file or folder, kRename a rename onto a hit path.
class InjectedFaults final : public Faults {
 public:
  // Local. Errors: kInvalidArgument for a pattern that is not a regex, or an errno <= 0.
  static Result<std::shared_ptr<InjectedFaults>> make(const Fault& fault);
  int error(FaultOp op, const std::string& path) override;
  uint64_t write_allowance(const std::string& path, uint64_t wanted, int* error) override;

 private:
  InjectedFaults(Fault fault, std::regex pattern);
  std::mutex mutex_;
  Fault fault_;
  std::regex pattern_;
  int64_t budget_ = 0;  // kWrite: bytes still allowed
};

// The seam of one dataset (shared by the files it opens): empty, or holding the Faults a test armed.
class FaultSeam {
 public:
  // Local, thread-safe. Arms `faults` (replacing any), or disarms with null.
  void set(std::shared_ptr<Faults> faults);
  // Local, thread-safe. Whether faults are armed.
  bool armed() const { return armed_.load(std::memory_order_acquire); }
  // Local, thread-safe. As Faults::error and Faults::write_allowance; nothing fails when disarmed.
  int error(FaultOp op, const std::string& path);
  uint64_t write_allowance(const std::string& path, uint64_t wanted, int* error);

 private:
  std::atomic<bool> armed_{false};
  std::mutex mutex_;
  std::shared_ptr<Faults> faults_;
};

}  // namespace hzio::io
