// Tests for LargeBuffer: huge-page aligned mappings, and released mappings kept for reuse.
#include "util/large_buffer.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstring>

namespace hzio::util {
namespace {

long minor_faults() {
  rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

TEST(LargeBuffer, BuffersOfTwoMiBAndMoreStartOnAHugePage) {
  LargeBuffer b(size_t{3} << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20), 0u);
  EXPECT_EQ(b.size(), size_t{3} << 20);
}

TEST(LargeBuffer, AReleasedMappingIsHandedOutAgainWithoutNewPageFaults) {
  const size_t bytes = size_t{24} << 20;
  std::byte* first = nullptr;
  {
    LargeBuffer b(bytes);
    std::memset(b.data(), 1, bytes);  // every page touched
    first = b.data();
  }
  LargeBuffer again(bytes - (size_t{1} << 20));  // a little smaller still fits the kept mapping
  EXPECT_EQ(again.data(), first);
  const long before = minor_faults();
  std::memset(again.data(), 2, again.size());
  // Fresh memory faults once per 2 MiB huge page (12 here) or per 4 KiB page (6144).
  EXPECT_LT(minor_faults() - before, 4);
  LargeBuffer other(bytes * 4);  // much larger than anything kept: a new mapping, whose pages fault
  const long fresh = minor_faults();
  std::memset(other.data(), 3, other.size());
  EXPECT_GE(minor_faults() - fresh, 48);
}

TEST(LargeBuffer, MemoryOfAnAllocatorIsReusedLikeABuffers) {
  const size_t bytes = size_t{24} << 20;
  std::byte* first = large_allocate(bytes);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, bytes);
  large_free(first, bytes);
  std::byte* again = large_allocate(bytes);  // what a query's mask gets the next time: the same pages
  EXPECT_EQ(again, first);
  const long before = minor_faults();
  std::memset(again, 0, bytes);
  EXPECT_LT(minor_faults() - before, 4);
  large_free(again, bytes);
  std::byte* small = large_allocate(100);  // from the heap, aligned as a LargeBuffer's
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 4096, 0u);
  large_free(small, 100);
  EXPECT_EQ(large_allocate(0), nullptr);
  large_free(nullptr, 0);
}

}  // namespace
}  // namespace hzio::util
