// What the layers above core (the MPI layer in src/parallel, core's own tests) may use of a Dataset's
// internals: its metadata, files, field codings, pool and the read and write steps they build on. The
// narrow seam between core and parallel: nothing else of Dataset::Impl is reachable from there.
// Layer: core (internal header, not installed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/block_codec.hpp"
#include "core/block_writer.hpp"
#include "core/commit_marker.hpp"
#include "core/data_files.hpp"
#include "format/idx_file.hpp"
#include "hzio/dataset.hpp"
#include "hzorder/hz_space.hpp"
#include "io/storage.hpp"
#include "util/thread_pool.hpp"

namespace hzio::core {

// Local, pure. The .idx metadata Dataset::create writes for `path` (OpenVisus defaults filled in), without
// touching the disk: the planner's simulation (src/parallel/plan_summary.cpp) uses it. Errors as create's
// argument checks.
Result<format::IdxFile> idx_for_create(const std::string& path, const CreateOptions& options);

// A view of one dataset's parts; valid while the dataset lives. Every call is Local; thread safety as
// of the part it reaches (DataFiles::locate is thread-safe, the commit steps are not).
class DatasetParts {
 public:
  explicit DatasetParts(Dataset& dataset);

  // Local. Opens a dataset whose .idx and files are read from `storage` (memory, in fuzzing and tests;
  // read only unless the storage is writable). Errors: as Dataset::open.
  static Result<std::unique_ptr<Dataset>> open_in(std::shared_ptr<const io::Storage> storage, const std::string& path,
                                                  const OpenOptions& options);

  const std::string& path;
  format::IdxFile& idx;
  const hzorder::HzSpace& space;
  const std::vector<FieldCoding>& coding;
  DataFiles& files;
  util::ThreadPool& pool;

  size_t block_bytes(int field) const;
  BlockWriter block_writer() const;
  // The checks of write_box and read_box: a known field (index out), a timestep (new ones allowed for
  // writes), a box inside the dataset. Errors: kInvalidArgument, kNotFound.
  Status check_field_time(std::string_view field, int64_t time, bool for_write, int& field_index) const;
  Status check_box(const Box& box, const char* what) const;
  // Reads levels [min_level, level] of `box` into `out` as Dataset::read_box does (fill_default: samples
  // no block provides take the field's default value). Errors: as Dataset::read_box.
  Status read_box(const Box& box, int level, int min_level, int field, int64_t time, std::byte* out, ReadReport* report,
                  bool fill_default) const;
  // The two halves of a read that sees one state of the dataset, for reads that run on several processes
  // (docs/design/commit.md "Atomic rewrites"): start_read waits for a commit holding its marker, drops
  // the open files when another commit published, and returns the .idx's version (errors: kIo);
  // read_unchanged tells whether no commit published since.
  Result<IdxVersion> start_read();
  bool read_unchanged(const IdxVersion& version) const;
  // Whether a located block is a raw block of a committed file, placeable from the file's mapping.
  bool mapped(const BlockLocation& where, int field) const;
  // The runs of a decoded block (in `layout`) holding its samples of levels [min_level, level].
  std::vector<hzorder::Run> runs_to_place(uint64_t block, Layout layout, int min_level, int level) const;
  // After a commit of other processes' making (the collective one): the new timesteps are published
  // when `idx_published`, and a dataset create made is no longer removed on abandon.
  void note_commit(bool idx_published);

 private:
  Dataset::Impl& impl_;
};

}  // namespace hzio::core
