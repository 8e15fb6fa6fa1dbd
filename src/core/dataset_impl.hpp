// Dataset::Impl: the state behind hzio::Dataset (metadata, data files, dirty partial blocks, pool).
// Layer: core. Split over dataset.cpp (lifecycle), write_path.cpp, read_path.cpp, progressive_read.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/block_codec.hpp"
#include "core/block_writer.hpp"
#include "core/commit_marker.hpp"
#include "core/write_tally.hpp"
#include "core/data_files.hpp"
#include "core/read_cache.hpp"
#include "core/window_assembly.hpp"
#include "format/idx_file.hpp"
#include "hzio/dataset.hpp"
#include "hzio/write_report.hpp"
#include "hzorder/block_copy.hpp"
#include "hzorder/hz_space.hpp"
#include "util/thread_pool.hpp"

namespace hzio {

// ReadReport::assembly of a read answered from the result cache (core::ResultCache).
inline constexpr const char* kResultCacheAssembly = "result cache";

struct LocatedBlocks;  // read_path.cpp: the located blocks of one read

// Decoded blocks a progressive read keeps so that no later step reads them again.
struct DecodedBlocks {
  std::map<uint64_t, std::pair<Layout, std::vector<std::byte>>> blocks;
};

class Dataset::Impl {
 public:
  Impl(std::string path, format::IdxFile idx, const OpenOptions& options,
       std::shared_ptr<const io::Storage> storage = io::local_storage());

  // The per-field coding, from the .idx field options.
  Status init_fields();
  Status check_field_time(std::string_view field, int64_t time, bool for_write, int& field_index) const;
  Status check_box(const Box& box, const char* what) const;

  Status write_box(const Box& box, int field, int64_t time, const std::byte* data);
  // Reads the samples of levels [min_level, level] inside box into out (grid_in_box(box, level)).
  // Samples of other levels are left as they are. `keep` (optional) caches decoded block 0. With
  // fill_default, samples no stored block provides are set to the field's default value.
  Status read_box(const Box& box, int level, int min_level, int field, int64_t time, std::byte* out, ReadReport* report,
                  DecodedBlocks* keep, bool fill_default = false);
  // The two ways read_box places samples (read_path.cpp): window by window from mapped raw blocks, or
  // block by block (any block; the only way for progressive steps and the `keep` cache).
  Status read_in_windows(LocatedBlocks& plan, const Box& box, int level, int min_level, int field,
                         const hzorder::ArrayView& view, const core::WindowFill& fill);
  Status read_block_by_block(LocatedBlocks& plan, const Box& box, int level, int min_level, int field,
                             const hzorder::ArrayView& view, DecodedBlocks* keep, bool fill_default);
  // Whether a located block is a raw block of a committed file (its payload is its samples).
  bool raw_committed(const core::BlockLocation& where, int field) const;
  // Whether it is, and placeable from the file's mapping.
  bool mapped(const core::BlockLocation& where, int field) const;
  // The runs of a decoded block (in `layout`) holding its samples of levels [min_level, level].
  std::vector<hzorder::Run> runs_to_place(uint64_t block, Layout layout, int min_level, int level) const;
  // Copies the samples of levels [min_level, level] of a decoded block into `view` (the read grid of box).
  // `data` holds the block's samples from index `first_index` on (0: all of them); every sample the box
  // takes must be among them.
  void place_block(uint64_t block, Layout layout, const std::byte* data, const Box& box, int level, int min_level,
                   const hzorder::ArrayView& view, uint64_t first_index = 0) const;
  // Runs `op`, a read of committed files, so that it sees one state of the dataset (docs/design/commit.md
  // "Atomic rewrites"): the files are opened afresh when another commit published since the last read,
  // and `op` runs again when one publishes while it runs. Errors: those of `op`; kIo when a commit holds
  // its marker too long, or commits keep publishing during every attempt. `from_memory`, when given and
  // set by `op`: it read no file (it copied what an earlier read of this state kept), so a commit
  // publishing meanwhile cannot have mixed states into it, and the check after it is skipped.
  Status consistent(const std::function<Status()>& op, const bool* from_memory = nullptr);
  // Keeps the output of a plain small read (results_) that consistent() found to have seen one committed
  // state, if the files are still those of `key.generation`.
  void keep_result(const core::ResultCache::Key& key, const std::byte* out, size_t bytes);
  // At a read-only open: DataFiles::read_headers_ahead for the first timestep's first files.
  void read_headers_ahead();
  static constexpr size_t kHeadersReadAhead = 8;  // files (each held open until a read takes it, or close)
  // consistent(op), then adds to `report` (when given) the requests and bytes the storage exchanged
  // meanwhile (ReadReport::requests, bytes_received), after `op` has filled it.
  Status consistent_counted(ReadReport* report, const std::function<Status()>& op, const bool* from_memory = nullptr);
  // The two halves of consistent(): wait for a commit holding its marker, open the files afresh if one
  // published since the last read, and return the .idx's version; then whether it is still that version.
  Result<core::IdxVersion> start_read();
  bool read_unchanged(const core::IdxVersion& version) const;
  // Dataset::query once its arguments are checked: the candidate blocks read, checked and scanned.
  Status query_blocks(const Box& box, int level, int field, int64_t time, double lo, double hi, int component,
                      bool want_mask, const SampleGrid& grid, QueryResult* result);
  Status flush_dirty();
  // Commits every write since the last commit. On failure, drops them all (the dataset stays as last
  // committed, and times() says so).
  Status commit();
  Status commit_pending();
  // Drops every write since the last commit: logs, held partial blocks, new timesteps.
  void discard_uncommitted();
  // Removes a dataset this object created that never committed: its .idx, the data files it published
  // (a first commit that failed half-way), and the folders create and the write logs made, when empty.
  void remove_uncommitted_create();

  std::string path_;
  std::string dir_;
  format::IdxFile idx_;
  // Field name -> index in idx_.fields (whose fields never change once open), so that a call naming a field
  // costs log(fields) and not a scan of up to 65,536 names: `hzio dump` of every field was quadratic.
  std::map<std::string, int, std::less<>> field_by_name_;
  std::shared_ptr<const hzorder::HzSpace> space_;  // hzorder::HzSpace::shared
  std::vector<FieldSpec> field_specs_;
  std::vector<core::FieldCoding> coding_;
  OpenOptions options_;
  std::shared_ptr<const io::Storage> storage_;  // where the .idx and committed files are read from
  std::string name_;                            // path_ as users name it (a URL for remote datasets)
  std::unique_ptr<core::DataFiles> files_;
  std::mutex version_mutex_;
  std::optional<core::IdxVersion> files_version_;  // of the .idx when files_ last dropped its open files
  core::ReadCache read_cache_;                     // what small reads took, for the reads that follow
  core::ResultCache results_;                      // what the last small reads returned, for reads again
  std::shared_ptr<util::ThreadPool> pool_owner_;   // util::ThreadPool::acquire: its threads outlive the dataset
  util::ThreadPool& pool_;
  bool closed_ = false;
  std::set<int64_t> new_times_;
  // Set by create until the first commit succeeds; created_dirs_: the folders create made for the .idx.
  bool uncommitted_create_ = false;
  std::vector<std::string> created_dirs_;

  // Timings of the writes since the last commit, and the report of the last commit.
  core::WriteTally pending_{0};  // sized for the dataset's levels by the constructor
  WriteReport last_write_report_;
  // Merges the samples of `box` (in src) into the held (partially written) blocks `blocks`, starting
  // them from the stored block or the default value.
  Status merge_partial(const std::vector<uint64_t>& blocks, int field, int64_t time, const Box& box,
                       const hzorder::ArrayView& src);
  // The block writer over this dataset's files, coding and pool.
  core::BlockWriter block_writer();

  // Partially written blocks, decoded in the field's layout, keyed by (field, time, block).
  std::map<std::tuple<int, int64_t, uint64_t>, std::vector<std::byte>> dirty_;
  size_t dirty_bytes_ = 0;

  size_t block_bytes(int field) const {
    return static_cast<size_t>(idx_.samples_per_block()) * coding_[field].dtype.bytes();
  }
};

}  // namespace hzio
