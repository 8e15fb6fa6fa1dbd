// LargeBuffer: uninitialized scratch memory for bulk sample data (staged boxes, exchange buffers,
// read results). Buffers of 2 MiB and more come straight from mmap, aligned to 2 MiB and advised for
// transparent huge pages or against them (Pages): the kernel zeroes and maps fresh memory on first
// touch, one fault per 4 KiB page, which costs more than copying the same bytes, and huge pages cut
// most of those faults (bench/read_bench.py, whose reused-array references show the cost of fresh
// memory), except where fresh huge pages cost more to touch (Pages::kSmall). Released
// mappings are kept for reuse (up to 1 GiB and 16 mappings per process, marked MADV_FREE so that the
// kernel can still reclaim their pages), so that repeated flushes and reads do not pay for fresh memory
// again.
// Smaller buffers come from the heap, aligned to 4 KiB. Every buffer can feed a direct (O_DIRECT) write.
#pragma once

#include <cstddef>

#include "hzio/status.hpp"

namespace hzio::util {

// The pages fresh mappings ask for. kHuge suits memory used again and again within a process (read
// results), where huge pages cut faults and TLB misses. kSmall suits the write path's staging copies
// and exchange buffers, which a one-shot write touches once: on virtual machines that hand free memory
// back to the host (free page reporting), a fresh huge page is taken from such memory and its first
// touch costs host faults, far more than zeroing 4 KiB pages from the guest's own free lists
// (bench/first_write_bench.py: the first write of fresh processes).
enum class Pages { kHuge, kSmall };

class LargeBuffer {
 public:
  LargeBuffer() = default;
  explicit LargeBuffer(Pages pages) : pages_(pages) {}
  // Local. Throws std::bad_alloc when the memory cannot be mapped.
  explicit LargeBuffer(size_t bytes, Pages pages = Pages::kHuge) : pages_(pages) { reset(bytes); }
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;
  LargeBuffer(LargeBuffer&& other) noexcept;
  LargeBuffer& operator=(LargeBuffer&& other) noexcept;
  ~LargeBuffer() { release(); }

  // Local. Makes room for at least `bytes`; keeps the current memory (and its contents) when it is big
  // enough, otherwise replaces it with fresh uninitialized memory. Throws std::bad_alloc.
  void reserve(size_t bytes);
  // Local. Replaces the memory with exactly `bytes` of fresh uninitialized memory (0: none).
  void reset(size_t bytes);

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }  // what reset/reserve asked for
  bool empty() const { return size_ == 0; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // bytes mapped or allocated
  Pages pages_ = Pages::kHuge;
};

// Local. `buffer` replaced by a copy of the `bytes` bytes at `data`, as a write stages a caller's box.
// Running out of memory is an I/O error naming the size, not an exception.
Status copy_staged(LargeBuffer& buffer, const void* data, size_t bytes);

// Local, thread-safe. A LargeBuffer's memory without the object, for allocators of standard containers:
// `bytes` uninitialized bytes (nullptr for 0), given back with large_free and the same `bytes`.
// Throws std::bad_alloc.
std::byte* large_allocate(size_t bytes);
void large_free(std::byte* data, size_t bytes) noexcept;

// Local. What one answer whose size the data decides, not the request (a value-range query's matches),
// may take: half the smaller of the machine's physical memory and the process's address-space limit
// (RLIMIT_AS). Past it such an answer fails with an error naming its size instead of growing without
// bound. It does not see a container's memory limit (cgroup memory.max), the memory other processes use,
// or the address space this process already holds: under those the kernel may still refuse sooner.
size_t answer_budget_bytes();

}  // namespace hzio::util
