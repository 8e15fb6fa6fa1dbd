#include "util/large_buffer.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "util/fork_guard.hpp"

namespace hzio::util {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr std::align_val_t kSmallAlign{4096};  // smaller buffers start on a page too (direct I/O)

bool mapped(size_t capacity) { return capacity >= kHugePage; }

// Released mappings kept for reuse. Fresh memory is zeroed by the kernel on first touch, a visible
// part of a collective write's CPU time (bench/write_bench.py), and on
// virtual machines that hand freed memory back to the host, touching it again also costs host faults,
// which can take longer than the read that fills it (bench/read_bench.py, reused-array references).
// Kept mappings are marked MADV_FREE: the kernel may still take their pages under memory pressure
// (they then read as zeros), otherwise reuse is free.
class MappingCache {
 public:
  static MappingCache& get() {
    static MappingCache cache;
    static const bool registered = (hold_across_fork(cache.mutex_), true);
    (void)registered;
    return cache;
  }
  // A kept mapping of at least `capacity` bytes and at most twice that (exactly `capacity` with `exact`),
  // or nullptr. Mappings last used for the same kind of pages go first: buffers of one kind are used
  // alike (the direct-write buffers fill every page, an exchange's receive buffer may touch a few), so
  // handing a barely touched mapping to a buffer that fills it would cost the fresh memory the cache is
  // there to save (bench/first_write_bench.py, second writes).
  std::byte* take(size_t capacity, size_t& taken, bool exact, Pages pages) {
    std::lock_guard lock(mutex_);
    auto best = kept_.end();
    const size_t most = exact ? capacity : 2 * capacity;
    auto better = [&](const Kept& k) {
      if (best == kept_.end()) return true;
      if ((k.pages == pages) != (best->pages == pages)) return k.pages == pages;
      return k.capacity < best->capacity;
    };
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (it->capacity >= capacity && it->capacity <= most && better(*it)) best = it;
    if (best == kept_.end()) return nullptr;
    std::byte* p = best->data;
    taken = best->capacity;
    bytes_ -= taken;
    kept_.erase(best);
    return p;
  }
  // Keeps a mapping, or unmaps it when the cache is full (then the oldest kept ones go first).
  void give(std::byte* p, size_t capacity, Pages pages) {
    ::madvise(p, capacity, MADV_FREE);
    std::lock_guard lock(mutex_);
    kept_.push_back({p, capacity, pages});
    bytes_ += capacity;
    while (bytes_ > kCacheBytes || kept_.size() > kCacheEntries) {
      ::munmap(kept_.front().data, kept_.front().capacity);
      bytes_ -= kept_.front().capacity;
      kept_.erase(kept_.begin());
    }
  }

 private:
  // Enough for a rank's staging copies and exchange buffers of typical writes, which then skip the
  // page faults of fresh memory (bench/write_bench.py --copy).
  static constexpr size_t kCacheBytes = size_t{1} << 30;
  static constexpr size_t kCacheEntries = 16;
  std::mutex mutex_;
  struct Kept {
    std::byte* data;
    size_t capacity;
    Pages pages;  // what its last user asked for
  };
  std::vector<Kept> kept_;
  size_t bytes_ = 0;
};

// Advises a mapping for huge pages or against them (advice only: failure is harmless).
void advise_pages(std::byte* p, size_t capacity, Pages pages) {
  ::madvise(p, capacity, pages == Pages::kHuge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

// `exact`: the memory goes back with its size only (large_free), so a larger kept mapping will not do.
std::byte* allocate(size_t bytes, size_t& capacity, Pages pages, bool exact) {
  if (bytes > (size_t{1} << 60)) throw std::bad_alloc();  // rounding up below must not wrap
  if (bytes < kHugePage) {
    capacity = bytes;
    return bytes ? static_cast<std::byte*>(::operator new(bytes, kSmallAlign)) : nullptr;
  }
  capacity = (bytes + kHugePage - 1) & ~(kHugePage - 1);
  if (std::byte* kept = MappingCache::get().take(capacity, capacity, exact, pages)) {
    advise_pages(kept, capacity, pages);  // pages it still holds keep their size; new ones follow this
    return kept;
  }
  // Map one huge page more than needed and trim, so the start is huge-page aligned.
  void* raw = ::mmap(nullptr, capacity + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + capacity, end = begin + capacity + kHugePage;
  if (end > tail) ::munmap(reinterpret_cast<void*>(tail), end - tail);
  advise_pages(reinterpret_cast<std::byte*>(aligned), capacity, pages);
  return reinterpret_cast<std::byte*>(aligned);
}

}  // namespace

LargeBuffer::LargeBuffer(LargeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      pages_(other.pages_) {}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    pages_ = other.pages_;
  }
  return *this;
}

void LargeBuffer::reserve(size_t bytes) {
  if (bytes <= capacity_ && data_) {
    size_ = bytes;
    return;
  }
  // Grow geometrically: fresh memory costs more to touch than reused memory.
  reset(std::max(bytes, capacity_ + capacity_ / 2));
  size_ = bytes;
}

void LargeBuffer::reset(size_t bytes) {
  release();
  data_ = allocate(bytes, capacity_, pages_, false);
  size_ = bytes;
}

std::byte* large_allocate(size_t bytes) {
  size_t capacity = 0;
  return allocate(bytes, capacity, Pages::kHuge, true);
}

void large_free(std::byte* data, size_t bytes) noexcept {
  if (!data) return;
  const size_t capacity = bytes < kHugePage ? bytes : (bytes + kHugePage - 1) & ~(kHugePage - 1);  // as allocate()
  if (mapped(capacity))
    MappingCache::get().give(data, capacity, Pages::kHuge);  // as large_allocate
  else
    ::operator delete(data, kSmallAlign);
}

void LargeBuffer::release() noexcept {
  if (data_ && mapped(capacity_))
    MappingCache::get().give(data_, capacity_, pages_);
  else if (data_)
    ::operator delete(data_, kSmallAlign);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

Status copy_staged(LargeBuffer& buffer, const void* data, size_t bytes) {
  try {
    buffer.reset(bytes);
  } catch (const std::bad_alloc&) {
    return io_error("out of memory staging a write of " + std::to_string(bytes) + " bytes");
  }
  if (bytes > 0) std::memcpy(buffer.data(), data, bytes);
  return Status::ok();
}

size_t answer_budget_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t limit =
      pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : uint64_t{8} << 30;
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) limit = std::min<uint64_t>(limit, as.rlim_cur);
  return static_cast<size_t>(std::min<uint64_t>(limit / 2, SIZE_MAX));
}

}  // namespace hzio::util
