// The commit of pending writes (commit.hpp).
#include "core/commit.hpp"

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
  Status s;
  std::string idx_tmp;
  {
    util::ScopedSeconds timer(result.prepare_seconds);
    s = steps.agree(files.prepare());
    // The new .idx is written and made durable before any data file is renamed: a full disk fails the
    // commit while nothing is published yet. Only its rename is left for the end.
    if (s.is_ok() && grows) {
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
  if (s.is_ok()) s = steps.agree(files.publish());
  if (s.is_ok() && grows) {
    Status stale;
    for (const auto& [t, firsts] : steps.new_times)
      if (steps.writes_idx && stale.is_ok()) stale = files.remove_stale(t, firsts);
    s = steps.agree(stale);
  }
  bool renamed = false;
  if (s.is_ok() && grows) {
    Status w = steps.writes_idx ? io::rename_file(idx_tmp, idx_path, steps.durable, &renamed, files.fault_seam().get())
                                : Status::ok();
    renamed = steps.any(renamed);
    s = steps.agree(w);
  }
  if (!idx_tmp.empty() && !renamed) (void)io::remove_path(idx_tmp);
  if (renamed) idx.time = next.time;  // published, even if the folder's fsync then failed
  result.idx_published = renamed;
  return s;
}

}  // namespace hzio::core
