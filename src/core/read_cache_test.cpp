// Tests for the read cache: what it holds, what it drops first, and that a new generation forgets all;
// and for the result cache, when it keeps a result.
#include "core/read_cache.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace hzio::core {
namespace {

// Bytes whose capacity is exactly their size, so that the tests count what the cache holds.
std::shared_ptr<const ReadCache::Bytes> bytes(uint64_t begin, uint64_t end) {
  auto b = std::make_shared<ReadCache::Bytes>();
  b->begin = begin;
  b->end = end;
  b->capacity = end - begin;
  return b;
}

// Two distinct addresses to stand for two data files (the cache never dereferences them).
const io::Readable* file(int k) {
  static const char anchors[2] = {};
  return reinterpret_cast<const io::Readable*>(&anchors[k]);
}

TEST(ReadCache, FindsOnlyCoveredRangesOfTheSameBlockFileAndGeneration) {
  ReadCache c(1000);
  c.put(1, file(0), 64, bytes(100, 300));
  EXPECT_NE(c.find(1, file(0), 64, 100, 300), nullptr);
  EXPECT_NE(c.find(1, file(0), 64, 150, 200), nullptr);
  EXPECT_EQ(c.find(1, file(0), 64, 50, 200), nullptr);   // starts before
  EXPECT_EQ(c.find(1, file(0), 64, 150, 301), nullptr);  // ends after
  EXPECT_EQ(c.find(1, file(0), 65, 150, 200), nullptr);  // another block
  EXPECT_EQ(c.find(1, file(1), 64, 150, 200), nullptr);  // another file
  EXPECT_EQ(c.find(2, file(0), 64, 150, 200), nullptr);  // another generation
}

TEST(ReadCache, DropsTheLeastRecentlyUsedBeyondItsCapacity) {
  ReadCache c(1000);
  c.put(1, file(0), 0, bytes(0, 400));
  c.put(1, file(0), 1, bytes(0, 400));
  ASSERT_NE(c.find(1, file(0), 0, 0, 400), nullptr);  // block 0 is now the most recent
  c.put(1, file(0), 2, bytes(0, 400));                // 1200 > 1000: block 1 goes
  EXPECT_NE(c.find(1, file(0), 0, 0, 400), nullptr);
  EXPECT_EQ(c.find(1, file(0), 1, 0, 400), nullptr);
  EXPECT_NE(c.find(1, file(0), 2, 0, 400), nullptr);
  c.put(1, file(0), 3, bytes(0, 1001));  // larger than the whole cache: not kept, nothing dropped
  EXPECT_EQ(c.find(1, file(0), 3, 0, 1), nullptr);
  EXPECT_NE(c.find(1, file(0), 0, 0, 400), nullptr);
}

TEST(ReadCache, ReplacesABlocksBytesAndANewGenerationForgetsEverything) {
  ReadCache c(1000);
  c.put(1, file(0), 0, bytes(0, 100));
  c.put(1, file(0), 0, bytes(0, 500));
  EXPECT_NE(c.find(1, file(0), 0, 0, 500), nullptr);
  c.put(1, file(0), 1, bytes(0, 500));  // 1000: both fit, the replaced 100 bytes no longer count
  EXPECT_NE(c.find(1, file(0), 0, 0, 500), nullptr);
  c.put(2, file(1), 0, bytes(0, 10));
  EXPECT_EQ(c.find(1, file(0), 0, 0, 1), nullptr);
  EXPECT_EQ(c.find(1, file(0), 1, 0, 1), nullptr);
  c.put(1, file(0), 0, bytes(0, 10));  // from a read that started before generation 2: not kept
  EXPECT_EQ(c.find(1, file(0), 0, 0, 10), nullptr);
  EXPECT_NE(c.find(2, file(1), 0, 0, 10), nullptr);
}

TEST(ReadCache, MakeBytesReusesReleasedBuffers) {
  auto a = ReadCache::make_bytes(100, 70000);
  ASSERT_GE(a->capacity, 69900u);
  a->data[0] = std::byte{1};
  a->data[69899] = std::byte{2};  // the whole range is writable
  std::byte* first = a->data;
  a.reset();
  auto b = ReadCache::make_bytes(0, 69950);  // the same capacity class
  EXPECT_EQ(b->data, first);
  EXPECT_EQ(b->bytes().size(), 69950u);
}

TEST(ResultCache, KeepsAResultInFreshMemoryOnlyWhenItsKeyComesAgainAndAtOnceInReleasedMemory) {
  ResultCache c(ResultCache::kLargest);
  const size_t n = size_t{37} << 16;  // a capacity class no other test releases
  std::vector<std::byte> out(n), got(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i * 7);
  const ResultCache::Key key{1, 0, 0, 5, Box{{0, 0, 0}, {8, 8, 8}}}, other{1, 0, 0, 4, Box{{0, 0, 0}, {8, 8, 8}}};
  c.put(key, out.data(), n);  // first time, no released memory of its size: not kept
  EXPECT_FALSE(c.copy_out(key, got.data(), n));
  c.put(key, out.data(), n);  // the same key again: worth fresh memory
  ASSERT_TRUE(c.copy_out(key, got.data(), n));
  EXPECT_EQ(got, out);
  ReadCache::make_bytes(0, n).reset();  // a released buffer of that class: a new key is kept at once
  c.put(other, out.data(), n);
  EXPECT_TRUE(c.copy_out(other, got.data(), n));
}

TEST(ReadCache, CapacityZeroHoldsNothing) {
  ReadCache c(0);
  c.put(1, file(0), 0, bytes(0, 1));
  EXPECT_EQ(c.find(1, file(0), 0, 0, 1), nullptr);
}

}  // namespace
}  // namespace hzio::core
