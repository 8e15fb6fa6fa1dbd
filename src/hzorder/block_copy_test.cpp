// Tests for the encode/decode kernel against per-sample HZ addressing.
#include "hzorder/block_copy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace hzio::hzorder {
namespace {

TEST(BlockCopy, EncodingABoxPutsEverySampleAtItsHzIndex) {
  HzSpace s(format::Bitmask::parse("V0120120120").value(), 5);
  const Point p2 = s.bitmask().pow2_dims();
  std::vector<uint32_t> src(static_cast<size_t>(p2[0] * p2[1] * p2[2]));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i * 2654435761u);
  ArrayView view{reinterpret_cast<std::byte*>(src.data()), {{0, 0, 0}, {1, 1, 1}, p2}, 4};
  Box all{{0, 0, 0}, p2};
  for (Layout layout : {Layout::kHzOrder, Layout::kRowMajor}) {
    for (uint64_t b = 0; b < s.block_count(); ++b) {
      std::vector<uint32_t> block(32, 0xFFFFFFFF);
      int64_t copied = 0;
      for (const hzorder::Run& r : s.block_runs(b, layout))
        copied += copy_run(r, all, reinterpret_cast<std::byte*>(block.data()), view, Direction::kArrayToBlock);
      EXPECT_EQ(copied, 32);
      if (layout != Layout::kHzOrder) continue;
      for (uint32_t i = 0; i < 32; ++i) {
        const Point p = s.hz_to_point((b << 5) + i);
        EXPECT_EQ(block[i], src[static_cast<size_t>((p[2] * p2[1] + p[1]) * p2[0] + p[0])]);
      }
    }
  }
}

// Every sample size the kernels specialize, and bitmasks whose lowest index bits put x first, second
// or nowhere near the bottom (the paired fast paths of the whole-run encoder, and the general one).
template <class T>
void check_encoding(const char* bitmask, int bpb) {
  HzSpace s(format::Bitmask::parse(bitmask).value(), bpb);
  const Point p2 = s.bitmask().pow2_dims();
  std::vector<T> src(static_cast<size_t>(p2[0] * p2[1] * p2[2]));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(i * 2654435761u + 7);
  ArrayView view{reinterpret_cast<std::byte*>(src.data()), {{0, 0, 0}, {1, 1, 1}, p2}, sizeof(T)};
  const Box all{{0, 0, 0}, p2};
  const uint64_t n = uint64_t{1} << bpb;
  for (uint64_t b = 0; b < s.block_count(); ++b) {
    std::vector<T> block(n, T(-1));
    for (const hzorder::Run& r : s.block_runs(b, Layout::kHzOrder))
      copy_run(r, all, reinterpret_cast<std::byte*>(block.data()), view, Direction::kArrayToBlock);
    for (uint64_t i = 0; i < n; ++i) {
      const Point p = s.hz_to_point((b << bpb) + i);
      ASSERT_EQ(block[i], src[static_cast<size_t>((p[2] * p2[1] + p[1]) * p2[0] + p[0])])
          << bitmask << " block " << b << " sample " << i << " size " << sizeof(T);
    }
  }
}

TEST(BlockCopy, EncodingMatchesHzAddressingForEverySampleSizeAndBitOrder) {
  for (const char* bitmask : {"V0120120120", "V2102102101", "V1201200012", "V0212010021", "V0011220120", "V2221110000", "V0101010101"}) {
    check_encoding<uint8_t>(bitmask, 7);
    check_encoding<uint32_t>(bitmask, 7);
    check_encoding<uint64_t>(bitmask, 7);
    check_encoding<double>(bitmask, 4);
  }
}

TEST(BlockCopy, DecodingAtACoarseLevelFillsExactlyTheLevelGrid) {
  HzSpace s(format::Bitmask::parse("V012012012").value(), 4);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    Box box;
    for (int a = 0; a < 3; ++a) {
      box.lo[a] = std::uniform_int_distribution<int64_t>(0, 7)(rng);
      box.hi[a] = std::uniform_int_distribution<int64_t>(box.lo[a] + 1, 8)(rng);
    }
    const int level = std::uniform_int_distribution<int>(0, 9)(rng);
    const SampleGrid g = s.grid_in_box(box, level);
    std::vector<uint64_t> out(static_cast<size_t>(g.sample_count()), ~uint64_t{0});
    ArrayView view{reinterpret_cast<std::byte*>(out.data()), g, 8};
    std::vector<uint64_t> blocks;
    for (int h = 0; h <= level; ++h) s.blocks_in_box(box, h, blocks);
    for (uint64_t b : blocks) {
      std::vector<uint64_t> block(16);
      for (uint64_t i = 0; i < 16; ++i) block[i] = (b << 4) + i;  // each sample holds its own hz
      for (const hzorder::Run& r : s.block_runs(b, Layout::kHzOrder)) {
        if (b == 0 && HzSpace::level_of(r.first) > level) continue;
        copy_run(r, box, reinterpret_cast<std::byte*>(block.data()), view, Direction::kBlockToArray);
      }
    }
    for (int64_t z = 0; z < g.count[2]; ++z)
      for (int64_t y = 0; y < g.count[1]; ++y)
        for (int64_t x = 0; x < g.count[0]; ++x) {
          const Point p{g.origin[0] + x * g.spacing[0], g.origin[1] + y * g.spacing[1], g.origin[2] + z * g.spacing[2]};
          EXPECT_EQ(out[static_cast<size_t>((z * g.count[1] + y) * g.count[0] + x)], s.point_to_hz(p));
        }
  }
}

}  // namespace
}  // namespace hzio::hzorder
