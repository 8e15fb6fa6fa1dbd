// hzio::Dataset: create, open, write and read an IDX dataset from one process.
// Public C++ API. Coordinates and extents are x first; arrays are dense and x-fastest (C order [z][y][x]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hzio/status.hpp"
#include "hzio/types.hpp"
#include "hzio/write_report.hpp"

namespace hzio {
namespace core {
class DatasetParts;
}
namespace io {
class Storage;
}

// One field of a new dataset.
struct FieldSpec {
  std::string name;
  DType dtype;
  std::string codec = "raw";         // "raw", "zip", "lz4", "zfp-<enc>-<dec>" (see docs/format.md)
  Layout layout = Layout::kHzOrder;  // storage order of new blocks
  double default_value = 0;          // value of samples never written
};

struct CreateOptions {
  std::vector<int64_t> dims;  // x first; 1 to 3 entries
  std::vector<FieldSpec> fields;
  std::string bitmask;          // "" = the OpenVisus default for dims
  int bits_per_block = 0;       // 0 = min(max level, 16); beyond the max level: clamped to it
  int64_t blocks_per_file = 0;  // 0 = as many as fit in 128 MiB
  std::vector<int64_t> times;   // empty = one timestep 0 and no time directory
  std::string time_template = "time_%04d/";
  bool overwrite = false;  // replace an existing dataset at the path
  // Also keep statistics for 2^N equal parts of each block, so that queries read only the matching parts
  // of raw blocks. kAutoSubBlockBits (the default): parts of 4096 samples (N = bits_per_block - 12, at
  // least 0); 0: per block only.
  static constexpr int kAutoSubBlockBits = -1;
  int sub_block_bits = kAutoSubBlockBits;
};

struct OpenOptions {
  bool writable = false;
  bool durable = true;                     // fsync data files and the .idx at commit
  int threads = 0;                         // worker threads; 0 = hardware concurrency
  size_t cache_bytes = size_t{256} << 20;  // bound on partially written blocks held in memory
  // Bound on the raw block bytes that small reads keep for the reads that follow (a box read again, the
  // coarse blocks shared by neighbouring boxes); 0 keeps none (docs/design/read-path.md "Read cache").
  // Read-only datasets also keep the outputs of their last 4 small reads, each up to a quarter of it.
  size_t read_cache_bytes = size_t{8} << 20;
  // Reads check every stored payload and header table against the checksums of the statistics
  // sidecars (docs/format.md "Checksums"); false skips the checks (and the sidecar loads they need).
  bool verify_checksums = true;
  // Open a .idx whose file name templates name files outside its own folder (absolute paths, "..").
  // Off: such a .idx is refused (kInvalidArgument), so that one from elsewhere cannot make hzio touch
  // other files (docs/format.md "Limits").
  bool allow_outside_folder = false;
};

// Where one block of a field and timestep is stored (for dump and verify tools).
struct BlockInfo {
  int64_t block = 0;
  int level = 0;     // the block's level (bits_per_block for block 0, which holds 0..bpb)
  std::string file;  // path of its data file
  bool file_exists = false;
  uint64_t offset = 0;  // 0 and size 0: missing
  uint32_t size = 0;
  uint32_t flags = 0;            // low nibble codec, 0x10 row-major
  int64_t entry = 0;             // header table entry of the block in its file: field * blocks_per_file + slot
  bool stats_known = false;      // a valid statistics sidecar describes the block
  bool checksums_known = false;  // that sidecar has checksums of the block (absent for missing blocks)
  uint64_t count = 0;            // real (non-padding) samples; 0 for a missing block
  std::vector<double> min, max;  // per component
};

// Local, thread-safe. Memory from the cache that ReadBuffer uses (below): `bytes` uninitialized bytes,
// given back with read_memory_free and the same `bytes`. Throws std::bad_alloc.
void* read_memory_allocate(size_t bytes);
void read_memory_free(void* data, size_t bytes) noexcept;

// An allocator over read_memory_allocate, for large results held in standard containers
// (QueryResult::mask): a result as large as an earlier one that was freed reuses its memory, without
// the kernel's page faults and zeroing of fresh memory, which cost more than filling it. Its members are
// Local and thread-safe.
template <class T>
struct ReadAllocator {
  using value_type = T;
  ReadAllocator() = default;
  template <class U>
  ReadAllocator(const ReadAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(read_memory_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { read_memory_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const ReadAllocator<U>&) const noexcept {
    return true;
  }
};

// The answer of a value-range query: matching samples of a box at a level, in C order ([z][y][x]).
struct QueryResult {
  std::vector<int64_t> points;    // x-first triples (absolute sample coordinates)
  std::vector<std::byte> values;  // one sample (all components) per point
  // With want_mask: 0 or 1 per grid sample of the box at the level.
  std::vector<uint8_t, ReadAllocator<uint8_t>> mask;
  ReadReport report;
  int64_t blocks_skipped = 0;  // candidate blocks ruled out by their statistics, unread
};

class Dataset {
 public:
  // Local. Creates the dataset (.idx written at once, no data). Errors: kInvalidArgument (bad dims,
  // fields, codec, a bitmask too short for dims), kIo; kInvalidArgument if it exists and !overwrite.
  static Result<std::unique_ptr<Dataset>> create(const std::string& path, const CreateOptions& options,
                                                 const OpenOptions& open_options = {});
  // Local. Opens an existing dataset. Errors: kNotFound, kFormat, kUnsupported, kIo.
  static Result<std::unique_ptr<Dataset>> open(const std::string& path, const OpenOptions& options = {});
  // Local. Commits pending writes (errors are lost: call close() to see them).
  ~Dataset();

  // Metadata, Local.
  const std::string& path() const;
  int ndim() const;
  Point dims() const;  // x first, unused axes 1: the box's upper corner
  Box box() const;     // the logical box (lower corner 0 unless a .idx says otherwise)
  const std::vector<FieldSpec>& fields() const;
  std::vector<int64_t> times() const;
  int max_level() const;
  const std::string& bitmask() const;
  // Local. The .idx's physical placement, as written there ("" when absent): "(physic_box)", per axis x first
  // "lo hi" floats onto which the logical box maps, or "(logic_to_physic)", a row-major (ndim+1)^2 matrix.
  const std::string& physic_box() const;
  const std::string& logic_to_physic() const;
  int bits_per_block() const;
  int64_t blocks_per_file() const;
  int64_t block_count() const;
  // Local. The grid that read_box(box, level) fills; errors as read_box's argument checks.
  Result<SampleGrid> level_grid(const Box& box, int level) const;

  // Local. Writes a dense array (x fastest) covering `box`, which must lie inside the dataset.
  // Copies from `data` before returning. Partial blocks merge with what is stored. The data is visible
  // to reads at once and durable after flush()/close(). A new timestep is added to the .idx at commit.
  // Errors: kInvalidArgument (box, size, unknown field, read-only), kIo, kCorrupt (a stored block
  // that must be merged is corrupt).
  Status write_box(const Box& box, std::string_view field, int64_t time, const void* data, size_t size_bytes);

  // Local. Reads the samples of levels 0..level inside `box` into `out` (level_grid(box, level) shape,
  // x fastest); level -1 means max_level(). Missing blocks read as the field's default value.
  // Errors: kInvalidArgument, kNotFound (field, time), kCorrupt (a block that cannot be decoded,
  // naming the file and block), kIo.
  Status read_box(const Box& box, int level, std::string_view field, int64_t time, void* out, size_t out_bytes,
                  ReadReport* report = nullptr);

  // Local. Finds the samples of levels 0..level inside `box` whose `component` lies in [lo, hi], reading
  // only blocks whose statistics meet the range (blocks without statistics are read). With want_mask,
  // fills result->mask over level_grid(box, level) instead of points and values.
  // Errors: as read_box; kInvalidArgument for a bad component or lo > hi; kIo ("out of memory: ...") when
  // the matches would take more than half the smaller of physical memory and the address-space limit
  // (a mask, whose size the box and level decide, is not bounded).
  Status query(const Box& box, int level, std::string_view field, int64_t time, double lo, double hi, int component,
               bool want_mask, QueryResult* result);

  // Local. Where every block of (field, time) is stored, committed state only; with existing_files_only,
  // only the blocks of data files that exist (a dataset may declare far more files than it has).
  // Errors: kNotFound, kCorrupt (a header table that points outside its file), kIo.
  Result<std::vector<BlockInfo>> block_infos(std::string_view field, int64_t time, bool existing_files_only = false);
  // Which data files of a timestep exist: the first blocks of those that do (ascending), how many do
  // not, and the paths of the first `list_missing` that do not. Costs one path and at most one stat per
  // file, none for the files of a folder that is missing. Local. Errors: kNotFound (time), kIo.
  struct FileCensus {
    std::vector<int64_t> present;
    int64_t missing = 0;
    std::vector<std::string> first_missing;
  };
  Result<FileCensus> file_census(int64_t time, size_t list_missing) const;  // Local, as above
  // Local. The first block of every data file (each names one file per timestep), ascending.
  std::vector<int64_t> file_first_blocks() const;
  // Local. The path (a URL for a dataset on a web server) of the data file that holds `block` at `time`,
  // whether or not it exists. Errors: kNotFound (time), kInvalidArgument (block out of range).
  Result<std::string> data_file_path(int64_t time, int64_t block) const;
  // Local. Computes the statistics of every block of one data file (all fields) and writes its
  // .hzstats sidecar atomically, replacing any older one; the data file is not modified. A missing data
  // file is skipped. sub_block_bits: 2^N parts per block, or kDatasetSubBlockBits: the sub-block bits of the .idx's
  // (hzio stats) key, or without the key parts of 4096 samples. Returns the number of blocks indexed.
  // Errors: kCorrupt, kIo, kInvalidArgument (sub-block bits out of range).
  static constexpr int kDatasetSubBlockBits = -1;
  // Local, as above.
  Result<int64_t> index_file(int64_t time, int64_t first_block, int sub_block_bits = kDatasetSubBlockBits);

  // Local. The files that writers which did not finish a commit left: `*.log.<pid>`, `*.tmp.<pid>`,
  // `*.hzstats.tmp.<pid>` and `*.hzstats.old.<pid>` of any timestep's data files (listed or not), the
  // .idx's `.tmp.<pid>`, and the commit marker `<idx>.commit` (whose text names its process) when present
  // (docs/design/commit.md "What a crash leaves"). Sorted paths; none for a dataset on a web server. Errors: kIo.
  Result<std::vector<std::string>> leftover_files() const;

  // Local. Reads and decodes one block. OK for a missing block. Errors: kCorrupt naming the file and
  // block, kIo.
  Status verify_block(std::string_view field, int64_t time, int64_t block);

  // Local. Commits: writes pending blocks, makes the data files durable, then replaces the .idx
  // atomically. Errors: kIo (nothing committed after the failing file; committed data stays intact).
  Status flush();
  // Local. flush() and release files, even when the commit fails (its writes are then dropped, and a
  // dataset this object created that never committed is removed). Further calls fail with kInvalidArgument.
  Status close();
  // Local. Drops every write not yet committed and closes; the dataset stays as last committed (one this
  // object created that never committed is removed).
  void abandon();
  bool closed() const;
  // Local. Timings and bytes of the last commit (flush or close); one with nothing to write reports
  // nothing (bytes 0).
  const WriteReport& last_write_report() const;

 private:
  class Impl;
  friend class core::DatasetParts;  // hzio's own layers reach the internals through this seam
  friend class ProgressiveRead;
  explicit Dataset(std::unique_ptr<Impl> impl);
  // Local. open() with the files read from `storage` (src/io/storage.hpp).
  static Result<std::unique_ptr<Dataset>> open_in(std::shared_ptr<const io::Storage> storage, const std::string& path,
                                                  const OpenOptions& options);
  std::unique_ptr<Impl> impl_;
};

// Reads one box coarse to fine; each step reads only blocks no earlier step read.
class ProgressiveRead {
 public:
  // Local. `levels` ascending, each in [0, max_level]. The dataset must outlive this object.
  static Result<std::unique_ptr<ProgressiveRead>> start(Dataset& dataset, const Box& box, std::string_view field,
                                                        int64_t time, std::vector<int> levels);
  // Local.
  ~ProgressiveRead();
  // Local. Whether every level was read.
  bool done() const;
  // Local. The next level and its grid.
  int next_level() const;
  Result<SampleGrid> next_grid() const;
  // Local. Fills `out` (next_grid() shape) with the next level, reusing the previous step's samples.
  Status next(void* out, size_t out_bytes, ReadReport* report = nullptr);

  struct Impl;

 private:
  explicit ProgressiveRead(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Memory for read outputs: `bytes`, starting on a 4 KiB boundary (nullptr for 0), uninitialized, and
// possibly holding an earlier buffer's bytes until overwritten. Buffers of
// 2 MiB and more are kept for reuse when freed (up to 1 GiB and 16 buffers per process, shared with
// hzio's own scratch memory, released to the kernel lazily under memory pressure), so that repeated
// large reads skip the kernel's zeroing of fresh pages, a large share of a warm read's CPU time
// (bench/read_bench.py measures warm reads). Its members are Local; constructing and destroying are
// thread-safe. Throws std::bad_alloc.
class ReadBuffer {
 public:
  explicit ReadBuffer(size_t bytes);
  ~ReadBuffer();
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  std::byte* data() const;
  size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hzio
