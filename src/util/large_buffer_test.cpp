// Tests for LargeBuffer: huge-page aligned mappings, their page-size advice, and released mappings kept
// for reuse.
#include "util/large_buffer.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace hzio::util {
namespace {

long minor_faults() {
  rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

// The kernel's VmFlags of the mapping holding `p` (/proc/self/smaps): "hg" is MADV_HUGEPAGE advice,
// "nh" MADV_NOHUGEPAGE.
std::string vm_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') inside = at >= lo && at < hi;
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8) + " ";
  }
  return "";
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

TEST(LargeBuffer, SmallPageBuffersAreAdvisedAgainstHugePagesAndAKeptMappingTakesItsNewUsersAdvice) {
  const size_t bytes = size_t{8} << 20;
  std::byte* first = nullptr;
  {
    LargeBuffer huge(bytes);
    ASSERT_NE(vm_flags(huge.data()), "") << "no /proc/self/smaps entry for the buffer";
    EXPECT_NE(vm_flags(huge.data()).find(" hg "), std::string::npos) << vm_flags(huge.data());
    first = huge.data();
  }
  LargeBuffer small(bytes, Pages::kSmall);  // the kept mapping again, now advised against huge pages
  EXPECT_EQ(small.data(), first);
  EXPECT_NE(vm_flags(small.data()).find(" nh "), std::string::npos) << vm_flags(small.data());
  EXPECT_EQ(vm_flags(small.data()).find(" hg "), std::string::npos) << vm_flags(small.data());
  LargeBuffer fresh(bytes * 8, Pages::kSmall);  // a new mapping
  EXPECT_NE(vm_flags(fresh.data()).find(" nh "), std::string::npos) << vm_flags(fresh.data());
  LargeBuffer moved(std::move(fresh));  // the policy moves with the memory: growing keeps small pages
  moved.reserve(bytes * 16);
  EXPECT_NE(vm_flags(moved.data()).find(" nh "), std::string::npos) << vm_flags(moved.data());
}

TEST(LargeBuffer, AKeptMappingGoesFirstToABufferOfTheSamePages) {
  // A collective write's receive buffer (small pages) may touch a few of its pages and a direct-write
  // buffer (huge pages) fills all of its own: each should get back the mapping its kind left, not the
  // other's, whose untouched pages would be fresh memory again.
  const size_t bytes = size_t{10} << 20;
  std::byte* small_first = nullptr;
  std::byte* huge_first = nullptr;
  {
    LargeBuffer small(bytes, Pages::kSmall);
    LargeBuffer huge(bytes, Pages::kHuge);
    small_first = small.data();
    huge_first = huge.data();
  }  // the huge-page mapping is kept first, then the small-page one
  LargeBuffer small(bytes, Pages::kSmall);
  LargeBuffer huge(bytes, Pages::kHuge);
  EXPECT_EQ(small.data(), small_first);
  EXPECT_EQ(huge.data(), huge_first);
}

TEST(LargeBuffer, AnAllocatorTakesOnlyAKeptMappingOfItsOwnSize) {
  // large_free knows only the size asked for: a larger kept mapping handed to large_allocate would come
  // back smaller, and its tail would stay mapped for good.
  const size_t big = size_t{26} << 20, asked = size_t{22} << 20;
  std::byte* first = nullptr;
  {
    LargeBuffer b(big);
    first = b.data();
  }
  std::byte* p = large_allocate(asked);
  EXPECT_NE(p, first);
  large_free(p, asked);
  LargeBuffer again(big);  // the kept mapping, whole
  EXPECT_EQ(again.data(), first);
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
