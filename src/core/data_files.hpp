// The data files of one dataset: cached header tables for reads, and per-file write logs that
// commit atomically (docs/design/commit.md). Layer: core.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "format/block_header.hpp"
#include "format/idx_file.hpp"
#include "hzio/status.hpp"
#include "hzio/types.hpp"
#include "io/posix_file.hpp"
#include "io/storage.hpp"
#include "stats/stats_file.hpp"
#include "util/large_buffer.hpp"

namespace hzio::core {

// Where to read one stored block from.
struct BlockLocation {
  format::BlockEntry entry;
  std::shared_ptr<const io::Readable> file;
  bool committed = false;  // in a committed data file (not a write log that may still grow)
  // What DataFiles::check_payload compares the payload with: the sidecar of its committed file when
  // reads verify checksums and the sidecar has them (null otherwise), and the block's entry in it.
  std::shared_ptr<const stats::StatsTable> sidecar;
  // Per checksum part of every entry of that file: already checked in this process (set by
  // check_payload_parts; null: check every time). Dropped with the file's cached state after a commit.
  std::shared_ptr<std::vector<std::atomic<uint8_t>>> checked;
  // Set when `sidecar` holds only the checksums of the entries read so far (its file read entry by
  // entry): a mismatch then loads it whole, to tell a damaged sidecar from a damaged payload.
  std::shared_ptr<const io::Readable> sidecar_file;
  size_t entry_index = 0;
  int field = 0;
  int64_t time = 0;
  uint64_t block = 0;
};

class DataFiles {
 public:
  // sub_block_bits: sub-block bits (0 = per block only). verify: reads check payloads against the
  // checksums of the sidecars (locate() loads them). storage: where committed files are read from
  // (write logs and commits use the local file system).
  DataFiles(const format::IdxFile* idx, std::string idx_dir, bool durable, int sub_block_bits = 0, bool verify = true,
            std::shared_ptr<const io::Storage> storage = io::local_storage());
  ~DataFiles();

  // Local, thread-safe. The seam through which tests fail this dataset's file operations (faults.hpp):
  // every file it creates and every rename and folder sync of its commits ask it.
  const std::shared_ptr<io::FaultSeam>& fault_seam() const { return fault_seam_; }

  // Local, thread-safe. The stored block (uncommitted writes first), or nullopt if it is missing
  // (entry zero or file absent). Counts opened files and header bytes in `report`.
  // Errors: kCorrupt (bad header table, naming the file; when verifying, a header table that does not
  // match its sidecar's checksum, or a malformed sidecar), kIo.
  Result<std::optional<BlockLocation>> locate(int field, int64_t time, uint64_t block, ReadReport* report);

  // Local, thread-safe. Asks, without waiting, for the header tables (and the sidecars, when reads
  // verify or `sidecars` says so: queries read their statistics) of the committed files holding
  // `blocks` of `time` that are not cached yet, all at once, so that the locate() and block_stats()
  // calls that follow find them read instead of reading one file after another. A hint: errors are
  // left to locate().
  // With `field` >= 0 (a read of that field), only the sidecar entries of those blocks are asked for
  // where locate() will read them entry by entry.
  void prefetch_headers(int64_t time, const std::vector<uint64_t>& blocks, bool sidecars = false, int field = -1);

  // Local, thread-safe. Starts a thread of its own that opens the first `max_files` committed files of
  // `time` and reads their header tables, then, if `unchanged()` still holds (no commit published
  // meanwhile), hands them to this object for the locate() calls that need them: a dataset opened for
  // reading does this, so that its first small read finds its index in memory, as a chunked format
  // reads its index at open. The thread shares nothing with this object
  // until it publishes all at once, so a close or a fork at any moment leaves nothing half-changed.
  // Errors are left to locate(), which meets them again.
  void read_headers_ahead(int64_t time, size_t max_files, std::function<bool()> unchanged);
  // Local, thread-safe. How many of those threads, of every DataFiles of the process, still run: the
  // fuzz targets wait for none before their leak checks (the threads are detached, so that a fork or a
  // close never waits on them).
  static int read_ahead_threads();

  // Local, thread-safe. Checks a located block's stored payload (all `entry.size` bytes) against its
  // checksums; ok when the location has none. Errors: kCorrupt naming the file, field, timestep and block.
  Status check_payload(const BlockLocation& where, std::span<const std::byte> payload) const;
  // Local, thread-safe. The same for the checksum parts [first, first + count) of the payload
  // (stats::checksum_part_bytes each), whose bytes `bytes` holds, as queries read raw blocks' parts.
  Status check_payload_parts(const BlockLocation& where, size_t first, size_t count,
                             std::span<const std::byte> bytes) const;
  // Local. The bytes [begin, end) of a located block's payload widened to whole checksum parts: what a
  // read of only those bytes reads and checks (unchanged when the block has no checksums).
  std::pair<uint64_t, uint64_t> checked_range(const BlockLocation& where, uint64_t begin, uint64_t end) const;
  // Local, thread-safe. Checks the checksum parts of a payload (all of it in `payload`) that cover its
  // bytes [begin, end), touching no other byte. Errors: as check_payload.
  Status check_payload_range(const BlockLocation& where, uint64_t begin, uint64_t end,
                             std::span<const std::byte> payload) const;
  // Local, thread-safe. Checks the payload bytes [begin, end) (widened as checked_range() gives them),
  // which `bytes` holds exactly, against their checksum parts. Errors: as check_payload.
  Status check_range_bytes(const BlockLocation& where, uint64_t begin, uint64_t end,
                           std::span<const std::byte> bytes) const;
  // Local, thread-safe. Changes whenever the committed files read so far are dropped (forget_stored, a
  // commit): the io::Readable objects of locations taken before may be gone, and their addresses reused.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Local. Whether reads check checksums.
  bool verifies() const { return verify_; }
  // Local, thread-safe. How many checksum mismatches check_payload and locate have found so far.
  uint64_t checksum_mismatches() const { return mismatches_.load(); }

  // Local, not thread-safe. Appends a payload for (field, time, block) to its file's write log, with
  // the block's statistics (nullptr: unknown) and its checksums (payload_checksums() with sub_block_bits();
  // empty: computed here).
  Status append(int field, int64_t time, uint64_t block, std::span<const std::byte> payload, uint32_t flags,
                const stats::BlockStats* block_stats = nullptr, std::span<const uint64_t> checksums = {});

  // A block's place in its file's write log.
  struct Reserved {
    std::shared_ptr<io::File> file;
    uint64_t offset = 0;
    std::pair<int64_t, uint64_t> key;  // the file: time, first block
  };
  // Local, not thread-safe; call in canonical (field, slot) order. Reserves `size` bytes for a block in
  // its file's log: lets several threads write payloads whose sizes are known in advance (raw blocks)
  // at once, each into buffered(r) when that is not null, otherwise with r.file->write_at(r.offset, ...).
  // Then finish_reserved() for each, and write_out() before the next reservations.
  Result<Reserved> reserve(int field, int64_t time, uint64_t block, uint64_t size, uint32_t flags);
  // Local, not thread-safe. Where to put a reserved block's bytes in memory when its log is written
  // with direct I/O (durable datasets, file systems that allow it), or nullptr. Call after the last
  // reserve() of a batch; valid until the next reserve(), append() or write_out(). Errors: kIo (out of
  // memory for the direct buffer).
  Result<std::byte*> buffered(const Reserved& r);
  // Local, not thread-safe. Starts writing every log's buffered bytes to its file (direct I/O, one
  // writer thread per log, which overlaps the disk with the next batch's encoding). Errors: kIo, also of
  // an earlier write-out that failed.
  Status write_out();
  // Local, thread-safe. Attaches statistics and checksums (as for append(), not empty) to a reserved
  // block; call after its bytes are written to ask for early write-back of the log.
  void finish_reserved(int field, int64_t time, uint64_t block, const stats::BlockStats* block_stats,
                       std::span<const uint64_t> checksums);

  // Local, thread-safe. The committed statistics of a block: null when unknown (no valid sidecar),
  // count 0 when the block is missing. A committed block's statistics are shared with the table they
  // were read into, not copied (a query asks for those of thousands of blocks). Errors: as locate().
  Result<std::shared_ptr<const stats::BlockStats>> block_stats(int field, int64_t time, uint64_t block,
                                                               ReadReport* report);
  int sub_block_bits() const { return sub_block_bits_; }

  // Local. The two halves of making every written file final (core::commit_writes runs them):
  // prepare() leaves every file complete and durable under a temporary name, each rebuilt in canonical
  // order (header, then payloads by field and slot) when needed; publish() renames them all into place.
  // The parallel writer's ranks agree between the two.
  Status prepare();
  Status publish();
  // Local. Drops uncommitted logs.
  void abort();
  bool has_pending() const { return !pending_.empty(); }
  size_t pending_count() const { return pending_.size(); }
  // Local. The timesteps of the files written since the last commit, ascending, each once.
  std::vector<int64_t> pending_times() const;
  // Local. The first blocks of the files of `time` written since the last commit.
  std::vector<int64_t> pending_files(int64_t time) const;
  // Local. Removes the data files (and sidecars) of a timestep not yet in the .idx that this commit does
  // not write: leftovers of a run that died before its commit, which must not become visible with it.
  Status remove_stale(int64_t time, const std::vector<int64_t>& written_first_blocks);
  // Local. Forgets cached header tables (after the files changed on disk).
  void forget_stored();
  // Local. The folders this object created for write logs, outermost first.
  const std::vector<std::string>& created_dirs() const { return created_dirs_; }

  // Local, thread-safe. Size and header-table CRC of the committed file holding `block` (nullopt if absent).
  Result<std::optional<std::pair<uint64_t, uint32_t>>> file_identity(int64_t time, uint64_t block);
  // Local, thread-safe. Whether the committed file holding `block` has a sidecar with checksums that
  // describes it (false for an absent file).
  Result<bool> has_checksums(int64_t time, uint64_t block);

  // Local. The path of the file holding `block` at `time`.
  Result<std::string> file_path(int64_t time, uint64_t block) const;

 private:
  struct Stored;
  struct Pending;
  using Key = std::pair<int64_t, uint64_t>;  // time, first block of the file

  Result<Stored*> stored(const Key& key, ReadReport* report);
  // A committed file (or sidecar) opened by prefetch_headers, or opened now. Call with mutex_ held.
  Result<std::shared_ptr<const io::Readable>> open_committed(const std::string& path);
  Result<Pending*> pending(const Key& key);
  Status finish(const Key& key, Pending& p);
  Status rebuild(const Key& key, Pending& p, Stored* old);
  Status prepare_locked();
  void remove_pending_files();                   // every log and temporary file of pending_, then pending_ cleared
  Status make_buffer(Pending& p, uint64_t end);  // room in p.buffer for the log's bytes up to `end`
  Status write_out(Pending& p);                  // hands the buffered bytes to a writer thread
  Status wait_written(Pending& p);               // waits for the writer; the log's first write error if any
  // The sidecar of a committed file, loaded once; with `entries`, its statistics decoded too.
  Status load_stats(Stored& s, ReadReport* report, bool entries);
  Status load_whole_sidecar(Stored& s, const io::Readable& f, ReadReport* report, bool entries);
  bool load_sidecar_layout(Stored& s, const std::shared_ptr<const io::Readable>& f, ReadReport* report);
  Status load_sidecar_entry(Stored& s, size_t index, ReadReport* report);
  Status load_whole_after_entries(Stored& s, ReadReport* report, bool entries);  // leaves entry by entry
  bool piecewise_sidecar(uint64_t sidecar_size, size_t entries_needed) const;
  Status bind_stats(Stored& s, std::shared_ptr<stats::StatsTable> t, const std::string& path);
  Result<std::vector<std::byte>> read_sidecar(const io::Readable& f, const std::string& path, ReadReport* report) const;
  Status write_stats(Pending& p, Stored* old, const std::vector<format::BlockEntry>& entries, uint64_t file_size,
                     std::span<const std::byte> header, const std::vector<uint64_t>& checksums);
  Status mismatch(const BlockLocation& where, const std::string& what) const;
  // For a location whose sidecar was read entry by entry: the error of the whole sidecar when it is
  // malformed (a damaged sidecar, not payload, is then the cause of a mismatch), ok otherwise.
  Status whole_sidecar_verdict(const BlockLocation& where) const;
  std::vector<int> components() const;

  const format::IdxFile* idx_;
  std::string idx_dir_;
  bool durable_;
  int sub_block_bits_ = 0;
  bool verify_ = true;
  std::shared_ptr<const io::Storage> storage_;
  mutable std::atomic<uint64_t> mismatches_{0};
  std::atomic<uint64_t> generation_{1};
  std::shared_ptr<io::FaultSeam> fault_seam_ = std::make_shared<io::FaultSeam>();
  std::mutex mutex_;
  std::map<Key, std::unique_ptr<Stored>> stored_;
  std::map<std::string, std::shared_ptr<const io::Readable>> opened_ahead_;  // by prefetch_headers, for stored()
  // What read_headers_ahead's thread read: written by it alone until `ready`, then by this object alone.
  struct ReadAhead {
    std::atomic<bool> ready{false};
    std::map<std::string, std::shared_ptr<const io::Readable>> files;          // data files, opened
    std::map<std::string, std::pair<std::vector<std::byte>, uint64_t>> heads;  // a data file's table, size
  };
  std::shared_ptr<ReadAhead> read_ahead_;  // dropped by forget_stored()
  // The header table and size of a data file that read_headers_ahead read, taken (false: none).
  bool take_read_ahead(const std::string& path, std::vector<std::byte>& head, uint64_t& size);
  std::set<std::string> whole_sidecars_;  // sidecars prefetch_headers asked for whole: load_stats reads them so
  std::map<Key, std::unique_ptr<Pending>> pending_;
  std::vector<std::string> created_dirs_;
};

}  // namespace hzio::core
