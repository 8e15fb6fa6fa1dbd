// ReadCache: a byte-bounded LRU of block byte ranges (see read_cache.hpp).
#include "core/read_cache.hpp"

#include <algorithm>
#include <cstring>

#include "util/fork_guard.hpp"

namespace hzio::core {
namespace {

// Buffers of released Bytes, for the next ones: at most kHeld bytes in all, process-wide, so that the
// reads of a dataset opened after another was closed find memory that is already mapped.
struct Released {
  static constexpr size_t kHeld = size_t{16} << 20;
  std::mutex mutex;
  std::multimap<size_t, std::byte*> buffers;  // by capacity
  size_t held = 0;
};

Released& released() {
  static auto* r = [] {
    auto* made = new Released;  // never destroyed: Bytes may be released while the process exits
    util::hold_across_fork(made->mutex);
    return made;
  }();
  return *r;
}

void give_back(std::byte* data, size_t capacity) {
  Released& r = released();
  {
    std::lock_guard lock(r.mutex);
    if (r.held + capacity <= Released::kHeld) {
      r.buffers.emplace(capacity, data);
      r.held += capacity;
      return;
    }
  }
  delete[] data;
}

}  // namespace

namespace {

size_t capacity_for(uint64_t begin, uint64_t end) {
  constexpr size_t kGrain = size_t{64} << 10;  // capacities are multiples of this, so that sizes meet again
  const size_t size = static_cast<size_t>(end - begin);
  return std::max<size_t>(kGrain, (size + kGrain - 1) / kGrain * kGrain);
}

std::byte* take_released(size_t capacity) {
  Released& r = released();
  std::lock_guard lock(r.mutex);
  const auto it = r.buffers.find(capacity);
  if (it == r.buffers.end()) return nullptr;
  std::byte* data = it->second;
  r.held -= capacity;
  r.buffers.erase(it);
  return data;
}

std::shared_ptr<ReadCache::Bytes> own(uint64_t begin, uint64_t end, std::byte* data, size_t capacity) {
  auto* b = new ReadCache::Bytes{begin, end, data, capacity};
  return std::shared_ptr<ReadCache::Bytes>(b, [](ReadCache::Bytes* p) {
    give_back(p->data, p->capacity);
    delete p;
  });
}

}  // namespace

std::shared_ptr<ReadCache::Bytes> ReadCache::make_bytes(uint64_t begin, uint64_t end) {
  if (auto reused = reuse_bytes(begin, end)) return reused;
  const size_t capacity = capacity_for(begin, end);
  return own(begin, end, new std::byte[capacity], capacity);
}

std::shared_ptr<ReadCache::Bytes> ReadCache::reuse_bytes(uint64_t begin, uint64_t end) {
  const size_t capacity = capacity_for(begin, end);
  std::byte* data = take_released(capacity);
  return data ? own(begin, end, data, capacity) : nullptr;
}

std::shared_ptr<const ReadCache::Bytes> ReadCache::find(uint64_t generation, const io::Readable* file, uint64_t offset,
                                                        uint64_t begin, uint64_t end) {
  if (capacity_ == 0) return nullptr;
  std::lock_guard lock(mutex_);
  auto it = index_.find({generation, file, offset});
  if (it == index_.end()) return nullptr;
  const std::shared_ptr<const Bytes>& b = it->second->bytes;
  if (b->begin > begin || b->end < end) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return b;
}

void ReadCache::put(uint64_t generation, const io::Readable* file, uint64_t offset,
                    std::shared_ptr<const Bytes> bytes) {
  const size_t size = bytes->capacity;
  if (bytes->end == bytes->begin || size > capacity_) return;
  std::lock_guard lock(mutex_);
  if (generation < generation_) return;  // a read that started before the files were replaced
  if (generation != generation_) {       // the files were replaced: nothing held describes them now
    lru_.clear();
    index_.clear();
    held_ = 0;
    generation_ = generation;
  }
  const Key key{generation, file, offset};
  if (auto it = index_.find(key); it != index_.end()) drop_locked(it->second);
  while (held_ + size > capacity_ && !lru_.empty()) drop_locked(std::prev(lru_.end()));
  lru_.push_front({key, std::move(bytes)});
  index_[key] = lru_.begin();
  held_ += size;
}

void ReadCache::clear() {
  std::lock_guard lock(mutex_);
  lru_.clear();
  index_.clear();
  held_ = 0;
}

bool ResultCache::copy_out(const Key& key, std::byte* out, size_t bytes) {
  if (bytes > largest_) return false;
  std::lock_guard lock(mutex_);
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if (!(it->key == key) || it->bytes->end != bytes) continue;
    std::memcpy(out, it->bytes->data, bytes);
    lru_.splice(lru_.begin(), lru_, it);
    return true;
  }
  return false;
}

void ResultCache::put(const Key& key, const std::byte* data, size_t bytes) {
  if (bytes == 0 || bytes > largest_) return;
  auto held = ReadCache::reuse_bytes(0, bytes);
  if (!held) {
    // Fresh memory costs a page fault per page on its first touch, as much as the read it would save
    // (a fresh process's first read, bench/small_read_bench.py): a box is kept in fresh memory only
    // when it is read a second time.
    {
      std::lock_guard lock(mutex_);
      const bool again = std::find(seen_.begin(), seen_.end(), key) != seen_.end();
      if (!again) {
        seen_.push_front(key);
        if (seen_.size() > kEntries) seen_.pop_back();
        return;
      }
    }
    held = ReadCache::make_bytes(0, bytes);  // may throw bad_alloc: the caller's read stands without it
  }
  std::memcpy(held->data, data, bytes);
  std::lock_guard lock(mutex_);
  if (key.generation < generation_) return;  // a read that started before the files were replaced
  if (key.generation != generation_) lru_.clear();
  generation_ = key.generation;
  std::erase_if(lru_, [&](const Entry& e) { return e.key == key; });
  lru_.push_front({key, std::move(held)});
  if (lru_.size() > kEntries) lru_.pop_back();
}

void ResultCache::clear() {
  std::lock_guard lock(mutex_);
  lru_.clear();
  seen_.clear();
}

void ReadCache::drop_locked(std::list<Entry>::iterator it) {
  held_ -= it->bytes->capacity;
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace hzio::core
