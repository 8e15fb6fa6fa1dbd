// POSIX file access for the data and .idx files: positional reads and writes, sync, atomic rename,
// folders. Tests make its operations fail through a dataset's FaultSeam (faults.hpp). Layer: io (depends
// on util).
#pragma once

#include <atomic>
#include <cstddef>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hzio/status.hpp"
#include "io/faults.hpp"
#include "io/storage.hpp"

namespace hzio::io {

// Alignment of direct (page-cache bypassing) writes: buffer address, file offset and length. A page
// covers every logical block size Linux file systems use.
inline constexpr uint64_t kDirectAlign = 4096;

// An open file descriptor; closes on destruction. Move-only. Errors name the path and strerror. As a
// Readable, the local file system's files.
class File final : public Readable {
 public:
  enum class Mode { kRead, kReadWrite, kCreate };  // kCreate truncates or creates, read-write

  File() = default;
  ~File() override;
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // Local. Errors: kNotFound if the file is absent (read modes), kIo otherwise. `seam` (of the dataset
  // the file belongs to; none by default) may fail its create, writes and fsync.
  static Result<File> open(const std::string& path, Mode mode, std::shared_ptr<FaultSeam> seam = nullptr);

  const std::string& path() const override { return path_; }
  // Local. Current size in bytes.
  Result<uint64_t> size() const override;
  // Local. What tells this version of the file from any other: device, inode, size, modification and
  // change times (a rename keeps them; a rewrite in place or a new file changes them). Errors: kIo.
  Result<std::array<uint64_t, 5>> identity() const override;
  // Local. Reads exactly out.size() bytes at `offset`. Errors: kCorrupt if the file ends first, kIo.
  Status read_at(uint64_t offset, std::span<std::byte> out) const override;
  // Local. Writes all of `data` at `offset`. Errors: kIo (ENOSPC is reported as "disk full").
  Status write_at(uint64_t offset, std::span<const std::byte> data);
  // Local. Opens a second descriptor on the file with O_DIRECT for write_direct_at. Returns false (and
  // leaves the file as it was) when the file system refuses direct I/O.
  bool enable_direct();
  // Local, thread-safe for disjoint ranges. Writes `data` at `offset` without going through the page
  // cache after enable_direct() (`offset`, `data.size()` and the address of `data` multiples of kDirectAlign);
  // through the page cache otherwise, or when the file system rejects the request. Errors: as write_at.
  Status write_direct_at(uint64_t offset, std::span<const std::byte> data);
  // Local. Sets the file's size (ftruncate). Errors: kIo.
  Status truncate(uint64_t size);
  // Local. fsync. Errors: kIo.
  Status sync();
  // Local. Starts write-back of a written range without waiting (a hint; never fails).
  void start_writeback(uint64_t offset, uint64_t length);
  // Local. Asks the kernel to start reading a range into the page cache now (a hint; never fails).
  void advise_willneed(uint64_t offset, uint64_t length) const override;
  // Local, thread-safe. Reads a range into the page cache without copying it anywhere, in large
  // folios, which mappings fault in and unmap much faster than 4 KiB pages (WILLNEED hints leave
  // those, and every later warm read of the data pays for them: bench/read_bench.py times warm reads
  // after cold ones). A range of 1 MiB or more
  // is read in huge folios (2 MiB on x86-64): widened to their boundaries unless that more than doubles
  // it, mapped on its own, advised MADV_HUGEPAGE and populated, then unmapped; map_readonly() then maps
  // each such folio with one page-table entry where the kernel aligns file mappings. Anything else, or
  // when that fails, goes through sendfile to /dev/null and the kernel's sequential readahead, which
  // also reports the error. Waits for the data. Errors: kIo, kCorrupt if the file ends before the range does.
  Status load(uint64_t offset, uint64_t length) const override;
  // Local, thread-safe. Whether every page of the range is in the page cache (mincore on the mapping);
  // false when unknown (no mapping).
  bool resident(uint64_t offset, uint64_t length) const override;
  Status close();
  // Local, thread-safe. A read-only mapping of the whole file (valid while this object lives; the
  // file must not shrink meanwhile), or nullptr if mapping failed. Mapped once, on first use.
  const std::byte* map_readonly() const override;
  size_t mapped_bytes() const override { return map_bytes_; }
  // Local, thread-safe.
  bool mapped() const override { return map_asked_.load(std::memory_order_acquire); }

 private:
  bool load_huge(uint64_t offset, uint64_t length) const;
  int fd_ = -1;
  int direct_fd_ = -1;                       // O_DIRECT descriptor for write_direct_at, or -1
  std::atomic<bool> direct_refused_{false};  // a direct write failed with EINVAL: use the page cache
  std::string path_;
  std::shared_ptr<FaultSeam> seam_;
  mutable std::once_flag map_once_;
  mutable std::atomic<bool> map_asked_{false};  // map_once_ has run
  mutable void* map_ = nullptr;
  mutable size_t map_bytes_ = 0;
};

// Local. Reads a whole (small) file such as a .idx. Errors: kNotFound, kIo, kFormat if above max_bytes.
Result<std::string> read_text_file(const std::string& path, size_t max_bytes = kMaxTextFileBytes);
// Local. Writes `text` to path via a temporary file, fsync and rename, then syncs the directory,
// so readers see the old or the new content, never a mix. Errors: kIo.
Status replace_file_atomically(const std::string& path, std::string_view text, bool durable,
                               std::shared_ptr<FaultSeam> seam = nullptr);
// Local. The first half of replace_file_atomically: writes `text` (and fsyncs it if durable) to
// "<path>.tmp.<pid>" and returns that path; nothing is left behind on error. Errors: kIo.
Result<std::string> write_temp_file(const std::string& path, std::string_view text, bool durable,
                                    std::shared_ptr<FaultSeam> seam = nullptr);
// Local. rename(2), then (if durable) fsync of the destination directory. *renamed (when given) says
// whether the rename happened, which it has when only the fsync failed. `seam` may fail the rename or
// the fsync. Errors: kIo.
Status rename_file(const std::string& from, const std::string& to, bool durable, bool* renamed = nullptr,
                   FaultSeam* seam = nullptr);
// Local. File::identity of the file at `path` (links followed). Errors: kNotFound, kIo.
Result<std::array<uint64_t, 5>> path_identity(const std::string& path);
bool file_exists(const std::string& path);
// Local. Removes a file or an empty directory if present. Errors: kIo.
Status remove_path(const std::string& path);
std::string parent_dir(const std::string& path);
// Local. What is at `path` (symbolic links followed; a dangling link is kOther; a path under a file is
// kMissing). Errors: kIo when the OS cannot tell (no permission, a name too long), naming the reason.
Result<PathKind> path_kind(const std::string& path);
// Local. Removes `dir` if it is an empty folder (never a link to one); returns whether it did.
bool remove_empty_folder(const std::string& dir);
// Local. Every entry below `dir` that is not a folder (files, links, special files), at most
// `max_depth` folder levels down, without following links to folders. Errors: kIo.
Result<std::vector<std::string>> list_files(const std::string& dir, int max_depth);
// Local. mkdir -p; the folders it created (outermost first) go to *created when given. Errors: kIo naming a
// file that is in the way.
Status make_dirs(const std::string& dir, std::vector<std::string>* created = nullptr);
// Local. Absolute, lexically normalised path.
std::string absolute_path(const std::string& path);

}  // namespace hzio::io
