// The path rules of create and overwrite (dataset_path.hpp).
#include "core/dataset_path.hpp"

#include <algorithm>
#include <cctype>
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
  if (!inside(names.root(), dir)) return out;
  HZIO_ASSIGN_OR_RETURN(io::PathKind kind, io::path_kind(names.root()));
  if (kind != io::PathKind::kDirectory) return out;
  HZIO_ASSIGN_OR_RETURN(std::vector<std::string> files, io::list_files(names.root(), names.depth()));
  for (auto& f : files)
    if (names.matches(f)) out.push_back(std::move(f));
  return out;
}

// The names of the dataset whose .idx is at `idx_path`.
Result<format::DataFileNames> names_of_dataset(const std::string& idx_path, const std::string& dir) {
  HZIO_ASSIGN_OR_RETURN(std::string text, io::read_text_file(idx_path));
  HZIO_ASSIGN_OR_RETURN(format::IdxFile idx, format::IdxFile::parse(text, idx_path));
  return format::DataFileNames::of(idx, dir);
}

// Another .idx in `dir` whose data folder is `root` (or holds it, or lies in it), or "".
std::string dataset_using(const std::string& root, const std::string& dir, const std::string& self) {
  auto entries = io::list_files(dir, 0);
  if (!entries.is_ok()) return "";
  for (const auto& f : entries.value()) {
    std::string lower = file_name_of(f);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool idx_like = lower.ends_with(".idx") || format::default_data_folder(f) == file_name_of(root) ||
                          file_name_of(f) + ".data" == file_name_of(root);
    if (f == self || !idx_like) continue;
    if (auto k = io::path_kind(f); !k.is_ok() || k.value() != io::PathKind::kFile) continue;  // never open a FIFO
    auto names = names_of_dataset(f, dir);
    if (names.is_ok() && names->root() != dir && (inside(names->root(), root) || inside(root, names->root()))) return f;
  }
  return "";
}

// Removes the folders of `folders` that are empty, innermost first, never following links.
void remove_empty_folders(const std::set<std::string, std::greater<>>& folders) {
  for (const auto& d : folders) (void)io::remove_empty_folder(d);
}

// Adds the folders from the one holding `file` up to `root` (inclusive) to `folders`.
void note_folders(const std::string& file, const std::string& root, std::set<std::string, std::greater<>>& folders) {
  for (std::string d = io::parent_dir(file); !root.empty() && inside(d, root); d = io::parent_dir(d)) {
    if (!folders.insert(d).second) break;
  }
}

}  // namespace

Result<std::string> data_folder_name(const std::string& idx_path) {
  const std::string name = file_name_of(idx_path);
  if (name.empty() || name == "." || name == "..") {
    return invalid_argument("dataset path '" + idx_path + "' names a folder, not a .idx file");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f)
      return invalid_argument("dataset name '" + name + "' has control characters, which a .idx cannot carry");
  }
  if (name.find('%') != std::string::npos || name.find("$(") != std::string::npos) {
    return invalid_argument("dataset name '" + name +
                            "' has '%' or '$(', which a .idx file name template cannot carry");
  }
  const std::string stem = format::default_data_folder(name);
  if (stem == name) return name + ".data";
  if (stem == "." || stem == "..")
    return invalid_argument("dataset name '" + name + "' leaves no name for its data folder");
  return stem;
}

Result<CreatePlan> plan_create(const std::string& idx_path, const format::IdxFile& next, bool overwrite) {
  const std::string dir = io::parent_dir(idx_path);
  HZIO_ASSIGN_OR_RETURN(io::PathKind kind, io::path_kind(idx_path));
  if (kind == io::PathKind::kDirectory) return invalid_argument("dataset path " + idx_path + " is a folder");
  if (kind == io::PathKind::kOther) return invalid_argument("dataset path " + idx_path + " is not a regular file");
  if (kind == io::PathKind::kFile && !overwrite) {
    return invalid_argument("dataset " + idx_path + " exists (pass overwrite to replace it)");
  }
  HZIO_ASSIGN_OR_RETURN(format::DataFileNames new_names, format::DataFileNames::of(next, dir));
  HZIO_ASSIGN_OR_RETURN(io::PathKind root_kind, io::path_kind(new_names.root()));
  if (root_kind == io::PathKind::kFile || root_kind == io::PathKind::kOther) {
    return invalid_argument("the data folder " + new_names.root() + " of dataset " + idx_path + " is taken by a file");
  }
  if (const std::string other = dataset_using(new_names.root(), dir, idx_path); !other.empty()) {
    return invalid_argument("the data folder " + new_names.root() + " of dataset " + idx_path +
                            " is that of the dataset " + other + "; choose another name");
  }
  CreatePlan plan;
  if (kind == io::PathKind::kFile) {
    auto old_names = names_of_dataset(idx_path, dir);
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
                            ", which the new dataset would read as its own; it belongs to no dataset at this path "
                            "(left by an earlier run?): move it away or choose another path");
  }
  return plan;
}

Result<std::vector<std::string>> leftover_files(const std::string& idx_path, const format::IdxFile& idx) {
  const std::string dir = io::parent_dir(idx_path);
  HZIO_ASSIGN_OR_RETURN(format::DataFileNames names, format::DataFileNames::of(idx, dir));
  HZIO_ASSIGN_OR_RETURN(std::vector<std::string> files, files_named(names, dir));
  HZIO_ASSIGN_OR_RETURN(std::vector<std::string> beside, io::list_files(dir, 0));
  for (auto& f : beside)
    if (f.rfind(idx_path + ".tmp.", 0) == 0 || f.rfind(idx_path + ".commit", 0) == 0) files.push_back(std::move(f));
  std::vector<std::string> out;
  for (auto& f : files) {
    const size_t dot = f.find_last_of('.');
    const bool pid = dot + 1 < f.size() && std::all_of(f.begin() + static_cast<ptrdiff_t>(dot) + 1, f.end(),
                                                       [](unsigned char c) { return std::isdigit(c); });
    if (f == idx_path + ".commit" ||
        (pid && (f.ends_with(".log" + f.substr(dot)) || f.ends_with(".tmp" + f.substr(dot)) ||
                 f.ends_with(".old" + f.substr(dot)))))
      out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status remove_replaced(const CreatePlan& plan) {
  std::set<std::string, std::greater<>> folders;  // innermost first
  for (const auto& f : plan.remove) {
    HZIO_RETURN_IF_ERROR(io::remove_path(f));
    note_folders(f, plan.data_root, folders);
  }
  remove_empty_folders(folders);
  return Status::ok();
}

void remove_created(const std::string& idx_path, const format::IdxFile& idx, const std::vector<std::string>& made) {
  const std::string dir = io::parent_dir(idx_path);
  (void)io::remove_path(idx_path);
  std::set<std::string, std::greater<>> folders(made.begin(), made.end());
  if (auto names = format::DataFileNames::of(idx, dir); names.is_ok()) {
    if (auto files = files_named(names.value(), dir); files.is_ok()) {
      for (const auto& f : files.value()) {
        (void)io::remove_path(f);
        note_folders(f, names->root() != dir && inside(names->root(), dir) ? names->root() : "", folders);
      }
    }
  }
  remove_empty_folders(folders);
}

}  // namespace hzio::core
