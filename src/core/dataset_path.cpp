// The path rules of create and overwrite (dataset_path.hpp).
#include "core/dataset_path.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "format/file_name.hpp"
#include "io/posix_file.hpp"

namespace hzio::core {
namespace {

std::string file_name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool inside(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir == "/" ? dir : dir + "/", 0) == 0;
}

// The files below names.root() that names matches, if that folder lies inside `dir`.
Result<std::vector<std::string>> files_named(const format::DataFileNames& names, const std::string& dir) {
  std::vector<std::string> out;
  if (!inside(names.root(), dir) || io::path_kind(names.root()) != io::PathKind::kDirectory) return out;
  HZIO_ASSIGN_OR_RETURN(std::vector<std::string> files, io::list_files(names.root(), names.depth()));
  for (auto& f : files)
    if (names.matches(f)) out.push_back(std::move(f));
  return out;
}

// The names of the dataset whose .idx is at `idx_path`.
Result<format::DataFileNames> old_dataset_names(const std::string& idx_path, const std::string& dir) {
  HZIO_ASSIGN_OR_RETURN(std::string text, io::read_text_file(idx_path, 1 << 20));
  HZIO_ASSIGN_OR_RETURN(format::IdxFile old, format::IdxFile::parse(text, idx_path));
  return format::DataFileNames::of(old, dir);
}

}  // namespace

Result<std::string> data_folder_name(const std::string& idx_path) {
  const std::string name = file_name_of(idx_path);
  if (name.empty() || name == "." || name == "..") {
    return invalid_argument("dataset path '" + idx_path + "' names a folder, not a .idx file");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return invalid_argument("dataset name '" + name + "' has control characters, which a .idx cannot carry");
  }
  if (name.find('%') != std::string::npos || name.find("$(") != std::string::npos) {
    return invalid_argument("dataset name '" + name + "' has '%' or '$(', which a .idx file name template cannot carry");
  }
  const size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || dot == 0) return name + ".data";
  const std::string stem = name.substr(0, dot);
  if (stem == "." || stem == "..") return invalid_argument("dataset name '" + name + "' leaves no name for its data folder");
  return stem;
}

Result<CreatePlan> plan_create(const std::string& idx_path, const format::IdxFile& next, bool overwrite) {
  const std::string dir = io::parent_dir(idx_path);
  const io::PathKind kind = io::path_kind(idx_path);
  if (kind == io::PathKind::kDirectory) return invalid_argument("dataset path " + idx_path + " is a folder");
  if (kind == io::PathKind::kOther) return invalid_argument("dataset path " + idx_path + " is not a regular file");
  if (kind == io::PathKind::kFile && !overwrite) {
    return invalid_argument("dataset " + idx_path + " exists (pass overwrite to replace it)");
  }
  HZIO_ASSIGN_OR_RETURN(format::DataFileNames new_names, format::DataFileNames::of(next, dir));
  if (const io::PathKind k = io::path_kind(new_names.root()); k == io::PathKind::kFile || k == io::PathKind::kOther) {
    return invalid_argument("the data folder " + new_names.root() + " of dataset " + idx_path + " is taken by a file");
  }
  CreatePlan plan;
  if (kind == io::PathKind::kFile) {
    Result<format::DataFileNames> old_names = old_dataset_names(idx_path, dir);
    if (!old_names.is_ok()) {
      return invalid_argument("cannot overwrite " + idx_path + ": it is not a dataset hzio can read (" +
                              old_names.status().message() + "); nothing was removed");
    }
    HZIO_ASSIGN_OR_RETURN(plan.remove, files_named(old_names.value(), dir));
    if (old_names->root() != dir && inside(old_names->root(), dir)) plan.data_root = old_names->root();
  }
  HZIO_ASSIGN_OR_RETURN(std::vector<std::string> taken, files_named(new_names, dir));
  const std::set<std::string> replaced(plan.remove.begin(), plan.remove.end());
  for (const auto& f : taken) {
    if (replaced.count(f)) continue;
    return invalid_argument("the data folder of dataset " + idx_path + " already holds " + f +
                            ", which the new dataset would read as its own but which belongs to no dataset at that "
                            "path (left by an earlier run?); remove it or choose another path");
  }
  return plan;
}

Status remove_replaced(const CreatePlan& plan) {
  std::set<std::string, std::greater<>> folders;  // that held removed files, and their parents: innermost first
  for (const auto& f : plan.remove) {
    HZIO_RETURN_IF_ERROR(io::remove_path(f));
    for (std::string d = io::parent_dir(f); !plan.data_root.empty() && inside(d, plan.data_root); d = io::parent_dir(d)) {
      if (!folders.insert(d).second) break;
    }
  }
  for (const auto& d : folders) (void)io::remove_path(d);  // refused, and kept, unless empty
  return Status::ok();
}

}  // namespace hzio::core
