// Which data file holds a block, and its path: the right-to-left %0Nx template rule plus the time
// template (docs/format.md "File names"). Layer: format. Pure string work, no I/O.
#pragma once

#include <cstdint>
#include <regex>
#include <string>

#include "format/idx_file.hpp"

namespace hzio::format {

// Local. The first block id stored in the file that holds `block` (its name is derived from it).
int64_t first_block_of_file(const IdxFile& idx, int64_t block);
// Local. The slot of `block` inside its file's header table.
int64_t slot_in_file(const IdxFile& idx, int64_t block);
// Local. The entry of (field, block) in its file's header table: field * blocks_per_file + slot.
inline int64_t entry_in_file(const IdxFile& idx, int field, uint64_t block) {
  return field * idx.blocks_per_file + slot_in_file(idx, static_cast<int64_t>(block));
}

// Local. The path of the file whose first block is `first_block`, at timestep `time`, with a
// leading "./" and $(CurrentFileDirectory) resolved against `idx_dir`. Errors: kFormat for a malformed
// template field (each must be %0Nx with one digit N).
Result<std::string> data_file_path(const IdxFile& idx, const std::string& idx_dir, int64_t first_block, int64_t time);

// The set of paths a dataset's templates name: its data files at every timestep, and the files hzio
// keeps next to them (statistics sidecars, write logs and temporary files of a commit). Lets overwrite
// and create tell a dataset's own files from anything else in a folder.
class DataFileNames {
 public:
  // Local. Errors: kFormat for a malformed template (as data_file_path).
  static Result<DataFileNames> of(const IdxFile& idx, const std::string& idx_dir);
  // Local. root() of the names, without building the matcher (which costs more than opening a dataset).
  // Errors: as of().
  static Result<std::string> root_of(const IdxFile& idx, const std::string& idx_dir);
  // Local, thread-safe. Whether `path` (absolute and lexically normal, as data_file_path gives) is
  // one of the names.
  bool matches(const std::string& path) const;
  // Local. The deepest folder that holds every name, and how many folder levels below it names go.
  const std::string& root() const { return root_; }
  int depth() const { return depth_; }

 private:
  static Result<DataFileNames> layout(const IdxFile& idx, const std::string& idx_dir, bool with_pattern);

  std::regex pattern_;
  std::string root_;
  int depth_ = 0;
};

// Local. Formats a time template such as "time_%04d/" for one timestep. Errors: kFormat.
Result<std::string> format_time(const std::string& time_template, int64_t time);

}  // namespace hzio::format
