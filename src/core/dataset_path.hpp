// Where a new dataset's files go, and what creating one at a path must refuse or remove: the path rules
// of create and overwrite (docs/guide/python.md "Dataset paths"). Layer: core.
#pragma once

#include <string>
#include <vector>

#include "format/idx_file.hpp"
#include "hzio/status.hpp"

namespace hzio::core {

// Local. The name of a new dataset's data folder, next to its .idx: the file name without its
// extension (any case), or the whole name plus ".data" when it has none, so that the folder is never
// the .idx itself. Errors: kInvalidArgument for a path that cannot name a dataset (a folder path, "."
// or "..", characters the .idx text cannot carry in a file name template: '%', "$(", control
// characters).
Result<std::string> data_folder_name(const std::string& idx_path);

// What create must remove before it publishes the new .idx.
struct CreatePlan {
  std::vector<std::string> remove;  // files of the dataset being replaced (data files, sidecars, logs)
  std::string data_root;            // the replaced dataset's data folder ("" = none, or the .idx's own)
};

// Local; touches nothing on disk. Checks that a dataset described by `next` can be created at the
// absolute path `idx_path`, and lists what overwriting the dataset there removes: only the files its
// templates name inside the .idx's folder. Errors, kInvalidArgument: the path is a folder or special
// file; it exists and !overwrite; it exists but is not a readable .idx (nothing of it is removed); the
// new data folder is taken by a file, or is the data folder of another dataset next to it; the new
// data folder already holds files the new dataset would read as its own that belong to no dataset
// being replaced. kIo when the OS cannot tell what a path is.
Result<CreatePlan> plan_create(const std::string& idx_path, const format::IdxFile& next, bool overwrite);

// Local. The files that writers which did not finish a commit left for the dataset whose .idx is at the
// absolute path `idx_path`: `<data file>.log.<pid>`, `.tmp.<pid>`, `.hzstats.tmp.<pid>` and
// `.hzstats.old.<pid>` of any timestep (listed or not) inside the .idx's folder, `<idx>.tmp.<pid>`, and
// the commit marker `<idx>.commit` (its text names its process; see commit_marker.hpp).
// Sorted. Errors: kIo, kFormat (templates).
Result<std::vector<std::string>> leftover_files(const std::string& idx_path, const format::IdxFile& idx);

// Local. Removes the files of plan.remove, then the folders below plan.data_root (and itself) that held
// them and are left empty. Errors: kIo.
Status remove_replaced(const CreatePlan& plan);

// Local. Removes a dataset that create made and that never committed: its .idx, every file its
// templates name inside the .idx's folder (create checked that none was there before), and the
// folders in `made` and those that held the files, when empty. Best effort: errors are ignored.
void remove_created(const std::string& idx_path, const format::IdxFile& idx, const std::vector<std::string>& made);

}  // namespace hzio::core
