// The raw bytes that small reads took from committed data files, kept for the reads that follow: a box
// read again, or a viewer's tiles, which share their coarse blocks (docs/design/read-path.md "Read
// cache"). Layer: core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "hzio/types.hpp"
#include "io/storage.hpp"

namespace hzio::core {

class ReadCache {
 public:
  // The payload bytes [begin, end) of the block at byte `offset` of a data file, in memory that
  // make_bytes() took from a process-wide store of released buffers when it could: fresh memory costs a
  // page fault per page on first touch, which a small read notices.
  struct Bytes {
    uint64_t begin = 0, end = 0;
    std::byte* data = nullptr;  // end - begin bytes
    size_t capacity = 0;        // bytes allocated at data
    std::span<std::byte> bytes() const { return {data, static_cast<size_t>(end - begin)}; }
  };
  // Local, thread-safe. Uninitialized room for the bytes [begin, end); std::bad_alloc when out of memory.
  static std::shared_ptr<Bytes> make_bytes(uint64_t begin, uint64_t end);
  // Local, thread-safe. The same, but only from the released buffers: null when none fits.
  static std::shared_ptr<Bytes> reuse_bytes(uint64_t begin, uint64_t end);

  // Local. Holds at most `capacity` bytes (0: nothing).
  explicit ReadCache(size_t capacity) : capacity_(capacity) {}

  // Local, thread-safe. The bytes held for the block at `offset` of `file` if they cover [begin, end)
  // and were put in `generation` (DataFiles::generation: the files were not replaced since), or null.
  std::shared_ptr<const Bytes> find(uint64_t generation, const io::Readable* file, uint64_t offset, uint64_t begin,
                                    uint64_t end);
  // Local, thread-safe. Keeps `bytes` for that block (replacing what was held for it), dropping the least
  // recently used beyond the capacity; nothing when they alone exceed it. A new generation drops all.
  void put(uint64_t generation, const io::Readable* file, uint64_t offset, std::shared_ptr<const Bytes> bytes);
  // Local, thread-safe.
  void clear();
  size_t capacity() const { return capacity_; }

 private:
  using Key = std::tuple<uint64_t, const io::Readable*, uint64_t>;
  struct Entry {
    Key key;
    std::shared_ptr<const Bytes> bytes;
  };
  void drop_locked(std::list<Entry>::iterator it);

  const size_t capacity_;
  std::mutex mutex_;
  uint64_t generation_ = 0;
  size_t held_ = 0;
  std::list<Entry> lru_;  // most recently used first
  std::map<Key, std::list<Entry>::iterator> index_;
};

// The assembled outputs of the last few small reads: a box read again is one copy, as a chunked format's
// cache of decoded chunks gives. Keyed by DataFiles::generation(), so that a commit this process makes
// or sees drops them (docs/design/read-path.md "Read cache"). Layer: core.
class ResultCache {
 public:
  struct Key {
    uint64_t generation = 0;
    int field = 0;
    int64_t time = 0;
    int level = 0;
    Box box;
    bool operator==(const Key& o) const {
      return generation == o.generation && field == o.field && time == o.time && level == o.level &&
             box.lo == o.box.lo && box.hi == o.box.hi;
    }
  };
  static constexpr size_t kEntries = 4;
  static constexpr size_t kLargest = size_t{4} << 20;  // larger reads are not kept (and rarely repeated)

  // Local. Results of at most `largest` bytes each (0: none).
  explicit ResultCache(size_t largest) : largest_(largest) {}
  size_t largest() const { return largest_; }
  // Local, thread-safe. Copies the result held for `key` into `out` (`bytes` long); false if none.
  bool copy_out(const Key& key, std::byte* out, size_t bytes);
  // Local, thread-safe. Keeps a copy of a result (the least recently used goes beyond kEntries; a new
  // generation drops all): at once when released memory can hold it, otherwise the second time the same
  // key is put (fresh memory's page faults cost as much as the read the copy would save).
  void put(const Key& key, const std::byte* data, size_t bytes);
  // Local, thread-safe.
  void clear();

 private:
  struct Entry {
    Key key;
    std::shared_ptr<ReadCache::Bytes> bytes;
  };
  const size_t largest_;
  std::mutex mutex_;
  uint64_t generation_ = 0;
  std::list<Entry> lru_;  // most recently used first
  std::list<Key> seen_;   // keys put once without being kept, most recent first
};

}  // namespace hzio::core
