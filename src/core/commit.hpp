// The commit of a dataset's pending writes, one routine for the one-process writer and the collective
// one (docs/design/commit.md "Commit"): prepare the data files and the new .idx, publish the files,
// remove stale files of new timesteps, rename the .idx. Layer: core.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/data_files.hpp"
#include "format/idx_file.hpp"
#include "hzio/status.hpp"

namespace hzio::core {

// How a commit runs: alone (the defaults), or as one of several processes, each committing its own
// data files, where `agree` turns this process's status of a step into the status all of them agree on
// and `any` tells whether any of them saw true, so that every process takes the same path.
struct CommitSteps {
  std::function<Status(const Status&)> agree = [](const Status& s) { return s; };
  std::function<bool(bool)> any = [](bool b) { return b; };
  bool writes_idx = true;  // this process writes the .idx and removes stale files (one of them does)
  // New timesteps and the first blocks of the files the commit writes for each (for remove_stale).
  std::map<int64_t, std::vector<int64_t>> new_times;
  bool durable = true;
};

struct CommitResult {
  bool idx_published = false;  // the .idx now lists the new timesteps (even if the commit then failed)
  double prepare_seconds = 0, publish_seconds = 0;
};

// Collective over the processes of `steps` (Local for one process). Commits the pending writes of
// `files` and, when new timesteps come, the .idx at `idx_path`, whose time set `idx` gets them once
// they are published. On failure nothing after the failing step happens; the caller drops the rest
// (DataFiles::abort). Errors: those of DataFiles::prepare, publish, remove_stale and the .idx's files.
Status commit_writes(DataFiles& files, const std::string& idx_path, format::IdxFile& idx, const CommitSteps& steps,
                     CommitResult& result);

}  // namespace hzio::core
