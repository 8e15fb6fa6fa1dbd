// Where a dataset's files are read from: the seam between the read path and the bytes. The local file
// system (io::File) is the default; memory holds a dataset for fuzzing and tests; remote back-ends
// plug in here too. Writes, commits and repairs stay on the local file system. Layer: io.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hzio/status.hpp"

namespace hzio::io {

enum class PathKind { kMissing, kFile, kDirectory, kOther };

// The largest text file (a .idx) read whole.
inline constexpr size_t kMaxTextFileBytes = size_t{64} << 20;

// One open file, read only. Every call is Local and thread-safe.
class Readable {
 public:
  virtual ~Readable() = default;
  virtual const std::string& path() const = 0;
  // Current size in bytes. Errors: kIo.
  virtual Result<uint64_t> size() const = 0;
  // What tells this version of the file from any other (for a local file: device, inode, size,
  // modification and change times). Errors: kIo.
  virtual Result<std::array<uint64_t, 5>> identity() const = 0;
  // Reads exactly out.size() bytes at `offset`. Errors: kCorrupt if the file ends first, kIo.
  virtual Status read_at(uint64_t offset, std::span<std::byte> out) const = 0;
  // The first min(max_bytes, size) bytes, and the file's size in *size: one request where the back-end
  // has requests (a ranged GET tells the size too). Errors: kNotFound (the file is absent: remote files
  // are opened without asking), kCorrupt when the file is larger than `limit` (local files: found before
  // anything is read), kIo.
  virtual Result<std::vector<std::byte>> read_prefix(uint64_t max_bytes, uint64_t* size,
                                                     uint64_t limit = UINT64_MAX) const;
  // The whole file in memory, readable while this object lives, or nullptr when the back-end has no
  // such view (reads then go through read_at).
  virtual const std::byte* map_readonly() const = 0;
  virtual size_t mapped_bytes() const = 0;
  // Whether map_readonly() has been asked already (and so costs nothing more to ask again).
  virtual bool mapped() const = 0;
  // Brings a range close (the page cache, for local files) and waits for it; a no-op where the bytes
  // are already in memory. Errors: kIo, kCorrupt if the file ends before the range does.
  virtual Status load(uint64_t offset, uint64_t length) const = 0;
  // Whether a range is known to be in memory (false when unknown).
  virtual bool resident(uint64_t offset, uint64_t length) const = 0;
  // A hint that a range will be read soon; never fails.
  virtual void advise_willneed(uint64_t offset, uint64_t length) const = 0;
};

// A place datasets are read from. Paths are absolute and lexically normalised (io::absolute_path).
// Every call is Local and thread-safe.
class Storage {
 public:
  virtual ~Storage() = default;
  // Whether datasets opened here may be written (only the local file system).
  virtual bool writable() const = 0;
  // Whether reads check, around themselves, that no commit published meanwhile (the commit marker and
  // the .idx's identity: docs/design/commit.md "Atomic rewrites"). Remote storage does not: a reader
  // elsewhere cannot tell whether the process holding a marker lives.
  virtual bool checks_commits() const { return true; }
  // Whether many small reads of one file cost about what their bytes cost (local files, memory), so
  // that a reader may take a few entries of a large table instead of all of it. Remote storage pays a
  // round trip per request.
  virtual bool cheap_small_reads() const { return true; }
  // How users name the file at `path` (a URL for remote storage).
  virtual std::string describe(const std::string& path) const { return path; }
  // Opens a regular file. Errors: kNotFound (absent), kIo (not a regular file, or unreadable).
  virtual Result<std::shared_ptr<const Readable>> open(const std::string& path) const = 0;
  // A whole small file (a .idx, a commit marker). Errors: kNotFound, kIo, kFormat if above max_bytes.
  virtual Result<std::string> read_text(const std::string& path, size_t max_bytes) const = 0;
  // What is at `path`. Errors: kIo when it cannot tell.
  virtual Result<PathKind> path_kind(const std::string& path) const = 0;
  // The identity of the file at `path` (as Readable::identity). Errors: kNotFound, kIo.
  virtual Result<std::array<uint64_t, 5>> identity(const std::string& path) const = 0;
  // Every entry below `dir` that is not a folder, at most `max_depth` folder levels down. Errors: kIo.
  virtual Result<std::vector<std::string>> list_files(const std::string& dir, int max_depth) const = 0;
  // Requests sent and body bytes received so far (remote storage; local storage sends none). Thread-safe.
  struct Traffic {
    int64_t requests = 0, bytes = 0;
  };
  virtual Traffic traffic() const { return {}; }
};

// Local. The local file system (shared, stateless).
std::shared_ptr<const Storage> local_storage();

// Files held in memory: a dataset folder without a disk, for fuzzing the read path and for tests.
// Folders exist where files lie below them. Read only for datasets; put() and erase() change it. A
// file's identity is (0, a version unique in the process, size, the time of its put() twice).
class MemoryStorage final : public Storage {
 public:
  // Local, thread-safe. Adds or replaces the file at `path` (absolute). Readers that opened the old
  // bytes keep them.
  void put(const std::string& path, std::vector<std::byte> bytes);
  void put(const std::string& path, std::string_view text);
  // Local, thread-safe. Removes a file if present.
  void erase(const std::string& path);

  bool writable() const override { return false; }
  Result<std::shared_ptr<const Readable>> open(const std::string& path) const override;
  Result<std::string> read_text(const std::string& path, size_t max_bytes) const override;
  Result<PathKind> path_kind(const std::string& path) const override;
  Result<std::array<uint64_t, 5>> identity(const std::string& path) const override;
  Result<std::vector<std::string>> list_files(const std::string& dir, int max_depth) const override;

 private:
  struct Entry {
    std::shared_ptr<const std::vector<std::byte>> bytes;
    uint64_t version = 0;  // unique in the process: changes with every put()
    uint64_t changed = 0;  // when it was put (nanoseconds since the epoch)
  };
  mutable std::mutex mutex_;
  std::map<std::string, Entry> files_;
};

}  // namespace hzio::io
