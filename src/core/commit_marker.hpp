// Atomic rewrites for readers (docs/design/commit.md "Atomic rewrites"): the marker a commit holds while
// it replaces data files of listed timesteps, and the check a read makes around itself so that it never
// returns a mix of files from before and after such a commit. Layer: core.
#pragma once

#include <cstdint>
#include <string>

#include "hzio/status.hpp"
#include "io/storage.hpp"

namespace hzio::core {

// The marker's path: "<idx>.commit". It holds "<pid> <host>\n" of the process that publishes.
std::string commit_marker_path(const std::string& idx_path);

// Local. Creates (or takes over) the marker of the dataset at `idx_path` for this process. Errors: kIo
// naming the marker.
Status hold_commit_marker(const std::string& idx_path);
// Local. Removes the marker (best effort: a marker left behind by a failure here, or by a killed
// process, names a process that no longer runs, and readers on its host ignore it).
void release_commit_marker(const std::string& idx_path);

// What a read compares before and after itself: the identity of the .idx file, which every commit that
// replaces published data files renames anew.
struct IdxVersion {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const IdxVersion&) const = default;
};

// Local, thread-safe. Waits while a live commit holds the marker (polling; a marker whose process no
// longer runs on this host, or that this process holds, does not count), then returns the .idx's
// version; both as `storage` shows them. Errors: kIo when the .idx cannot be examined, or when a
// commit has held the marker for `wait_seconds` (naming the marker and its process).
Result<IdxVersion> await_idx_version(const io::Storage& storage, const std::string& idx_path, double wait_seconds);

// Local, thread-safe. Whether no commit published anything since await_idx_version returned `v`: the
// .idx is still `v` and no live commit holds the marker.
bool idx_unchanged(const io::Storage& storage, const std::string& idx_path, const IdxVersion& v);

// How long a read waits for a commit holding the marker before it fails.
inline constexpr double kCommitWaitSeconds = 60;
// How many times a read starts again because a commit published during it, before it fails.
inline constexpr int kConsistentReadAttempts = 100;

}  // namespace hzio::core
