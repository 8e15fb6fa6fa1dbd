#include "util/large_buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <utility>

namespace hzio::util {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

bool mapped(size_t capacity) { return capacity >= kHugePage; }

std::byte* allocate(size_t bytes, size_t& capacity) {
  if (bytes < kHugePage) {
    capacity = bytes;
    return bytes ? static_cast<std::byte*>(::operator new(bytes)) : nullptr;
  }
  capacity = (bytes + kHugePage - 1) & ~(kHugePage - 1);
  // Map one huge page more than needed and trim, so the start is huge-page aligned.
  void* raw = ::mmap(nullptr, capacity + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + capacity, end = begin + capacity + kHugePage;
  if (end > tail) ::munmap(reinterpret_cast<void*>(tail), end - tail);
  ::madvise(reinterpret_cast<void*>(aligned), capacity, MADV_HUGEPAGE);  // advice only: failure is harmless
  return reinterpret_cast<std::byte*>(aligned);
}

}  // namespace

LargeBuffer::LargeBuffer(LargeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
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
  data_ = allocate(bytes, capacity_);
  size_ = bytes;
}

void LargeBuffer::release() noexcept {
  if (data_ && mapped(capacity_)) ::munmap(data_, capacity_);
  else if (data_) ::operator delete(data_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

}  // namespace hzio::util
