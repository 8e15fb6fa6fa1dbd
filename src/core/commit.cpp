// The commit of pending writes (commit.hpp).
#include "core/commit.hpp"

#include "core/commit_marker.hpp"
#include "io/posix_file.hpp"
#include "util/clock.hpp"

namespace hzio::core {

Status commit_writes(DataFiles& files, const std::string& idx_path, format::IdxFile& idx, const CommitSteps& steps,
                     CommitResult& result) {
  format::IdxFile next = idx;
  if (!steps.new_times.empty()) {
    std::vector<int64_t> all = idx.time.list();
    for (const auto& [t, firsts] : steps.new_times) all.push_back(t);
    next.time.set(all);
  }
  const bool grows = !steps.new_times.empty();
  // A commit that replaces files of listed timesteps holds the commit marker while it renames them, and
  // renames the .idx anew even when its text stays the same: readers compare the .idx before and after
  // each read, so that none returns a mix of old and new files (docs/design/commit.md "Atomic rewrites").
  bool rewrites = false;
  for (int64_t t : files.pending_times()) rewrites |= idx.time.contains(t) && !steps.new_times.count(t);
  rewrites = steps.any(rewrites);
  const bool renames_idx = grows || rewrites;
  Status s;
  std::string idx_tmp;
  {
    util::ScopedSeconds timer(result.prepare_seconds);
    s = steps.agree(files.prepare());
    // The new .idx is written and made durable before any data file is renamed: a full disk fails the
    // commit while nothing is published yet. Only its rename is left for the end.
    if (s.is_ok() && renames_idx) {
      Status w;
      if (steps.writes_idx) {
        auto tmp = io::write_temp_file(idx_path, next.to_text(), steps.durable, files.fault_seam());
        if (tmp.is_ok())
          idx_tmp = tmp.value();
        else
          w = tmp.status();
      }
      s = steps.agree(w);
    }
  }
  util::ScopedSeconds timer(result.publish_seconds);
  bool marked = false;
  if (s.is_ok() && rewrites) {
    s = steps.agree(steps.writes_idx ? hold_commit_marker(idx_path) : Status::ok());
    marked = true;  // held or not, released below
  }
  if (s.is_ok()) s = steps.agree(files.publish());
  if (s.is_ok() && grows) {
    Status stale;
    for (const auto& [t, firsts] : steps.new_times)
      if (steps.writes_idx && stale.is_ok()) stale = files.remove_stale(t, firsts);
    s = steps.agree(stale);
  }
  bool renamed = false;
  if (s.is_ok() && renames_idx) {
    Status w = steps.writes_idx ? io::rename_file(idx_tmp, idx_path, steps.durable, &renamed, files.fault_seam().get())
                                : Status::ok();
    renamed = steps.any(renamed);
    s = steps.agree(w);
  }
  if (!idx_tmp.empty() && !renamed) (void)io::remove_path(idx_tmp);
  if (renamed) idx.time = next.time;  // published, even if the folder's fsync then failed
  if (marked && steps.writes_idx) {
    // A failed publish may have replaced some files: the .idx is renamed anew all the same (its text
    // unchanged), so that readers that ran meanwhile start again. Best effort: the commit failed already.
    if (!renamed) (void)io::replace_file_atomically(idx_path, idx.to_text(), steps.durable);
    release_commit_marker(idx_path);
  }
  result.idx_published = renamed;
  return s;
}

}  // namespace hzio::core
