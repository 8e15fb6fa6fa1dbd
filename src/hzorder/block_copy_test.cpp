// Tests for the encode/decode kernel against per-sample HZ addressing.
#include "hzorder/block_copy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <tuple>
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
  for (const char* bitmask :
       {"V0120120120", "V2102102101", "V1201200012", "V0212010021", "V0011220120", "V2221110000", "V0101010101"}) {
    check_encoding<uint8_t>(bitmask, 7);
    check_encoding<uint32_t>(bitmask, 7);
    check_encoding<uint64_t>(bitmask, 7);
    check_encoding<double>(bitmask, 4);
  }
}

// Arrays of 16 MiB and more are encoded through a row buffer (block_copy.cpp "encode_through_rows"). A
// box that starts and ends off the block grid checks the buffer's origin and extent, samples of the
// blocks outside the box must keep what the block held, and the array may be the whole space (origin 0)
// or exactly the box (its origin at the box's corner, as the writers pass it).
template <class T>
void check_large_encoding(const char* bitmask, int bpb, const Box& clip, bool array_is_box) {
  HzSpace s(format::Bitmask::parse(bitmask).value(), bpb);
  const Point p2 = s.bitmask().pow2_dims();
  const Box held = array_is_box ? clip : Box{{0, 0, 0}, p2};
  const Point n{held.extent(0), held.extent(1), held.extent(2)};
  auto value = [](const Point& p) { return static_cast<T>(((p[2] * 1024 + p[1]) * 1024 + p[0]) * 2654435761u + 7); };
  std::vector<T> src(static_cast<size_t>(n[0] * n[1] * n[2]));
  ASSERT_GE(src.size() * sizeof(T), size_t{16} << 20) << "too small to take the row-buffer path";
  for (int64_t z = 0; z < n[2]; ++z)
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x)
        src[static_cast<size_t>((z * n[1] + y) * n[0] + x)] = value({held.lo[0] + x, held.lo[1] + y, held.lo[2] + z});
  ArrayView view{reinterpret_cast<std::byte*>(src.data()), {held.lo, {1, 1, 1}, n}, sizeof(T)};
  const uint64_t per_block = uint64_t{1} << bpb;
  std::vector<T> block(per_block);
  int64_t copied = 0;
  for (uint64_t b = 0; b < s.block_count(); ++b) {
    std::fill(block.begin(), block.end(), T(-1));
    for (const hzorder::Run& r : s.block_runs(b, Layout::kHzOrder))
      copied += copy_run(r, clip, reinterpret_cast<std::byte*>(block.data()), view, Direction::kArrayToBlock);
    for (uint64_t i = 0; i < per_block; ++i) {
      const Point p = s.hz_to_point((b << bpb) + i);
      bool inside = true;
      for (int a = 0; a < 3; ++a) inside = inside && p[a] >= clip.lo[a] && p[a] < clip.hi[a];
      ASSERT_EQ(block[i], inside ? value(p) : T(-1))
          << bitmask << " block " << b << " sample " << i << " size " << sizeof(T) << " array is box " << array_is_box;
    }
  }
  EXPECT_EQ(copied, clip.sample_count()) << bitmask;
}

TEST(BlockCopy, LargeArraysEncodeThroughRowBuffersForWholeAndPartialBoxes) {
  // 2^22 samples. The finest levels step along x by 1 or 2 (row buffers), coarser ones further (no buffer);
  // the bit orders put x at index bit 0 (x first), 1 (x second) or elsewhere of the finest runs.
  for (const char* bitmask : {"V0120120120120120120120", "V2102102102102102102100", "V0000000012121212121212",
                              "V1201201201201201201201", "V2012012012012012012012"}) {
    HzSpace s(format::Bitmask::parse(bitmask).value(), 15);
    const Point p2 = s.bitmask().pow2_dims();
    const Box all{{0, 0, 0}, p2};
    const Box part{{3, 5, 17}, {p2[0] - 6, p2[1] - 1, p2[2] - 28}};
    check_large_encoding<uint32_t>(bitmask, 15, all, false);
    check_large_encoding<uint32_t>(bitmask, 15, part, false);
    check_large_encoding<double>(bitmask, 12, part, true);
  }
  const Box all{{0, 0, 0}, {256, 256, 128}};  // 2-byte samples need 2^23 of them for 16 MiB
  check_large_encoding<uint16_t>("V01201201201201201201201", 15, all, false);
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

// A sample of S bytes whose bytes spell its hz address (and a salt beyond 8 bytes), so a decoded
// array can be checked point by point against HzSpace::point_to_hz.
template <size_t S>
std::array<uint8_t, S> hz_sample(uint64_t hz) {
  std::array<uint8_t, S> v{};
  for (size_t i = 0; i < S; ++i) v[i] = static_cast<uint8_t>(i < 8 ? hz >> (8 * i) : 0xA5 ^ i);
  return v;
}

template <size_t S>
void check_windows_in_block_order(const char* bitmask, int bpb) {
  using Sample = std::array<uint8_t, S>;
  HzSpace s(format::Bitmask::parse(bitmask).value(), bpb);
  const Point p2 = s.bitmask().pow2_dims();
  const Box all{{0, 0, 0}, p2};
  const uint64_t n = uint64_t{1} << bpb;
  for (int level = 0; level <= s.max_level(); ++level) {
    const SampleGrid g = s.grid_in_box(all, level);
    for (int window_bits : {1, 3, 5, 7}) {
      const Point t = s.window_extent(level, window_bits);
      for (int64_t tz = 0; tz < g.count[2]; tz += t[2])
        for (int64_t ty = 0; ty < g.count[1]; ty += t[1])
          for (int64_t tx = 0; tx < g.count[0]; tx += t[0]) {
            SampleGrid tg{{tx * g.spacing[0], ty * g.spacing[1], tz * g.spacing[2]}, g.spacing, t};
            const Box clip{tg.origin,
                           {tg.origin[0] + (t[0] - 1) * g.spacing[0] + 1, tg.origin[1] + (t[1] - 1) * g.spacing[1] + 1,
                            tg.origin[2] + (t[2] - 1) * g.spacing[2] + 1}};
            std::vector<Sample> window(static_cast<size_t>(tg.sample_count()));
            ArrayView view{reinterpret_cast<std::byte*>(window.data()), tg, S};
            std::vector<uint64_t> blocks;
            for (int h = 0; h <= level; ++h) s.blocks_in_box(clip, h, blocks);
            std::sort(blocks.begin(), blocks.end());
            blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
            for (uint64_t b : blocks) {
              std::vector<Sample> block(n);
              for (uint64_t i = 0; i < n; ++i) block[i] = hz_sample<S>((b << bpb) + i);
              for (const hzorder::Run& r : s.block_runs(b, Layout::kHzOrder)) {
                if (b == 0 && HzSpace::level_of(r.first) > level) continue;
                ASSERT_GE(copy_run_in_block_order(r, clip, reinterpret_cast<std::byte*>(block.data()), view,
                                                  Direction::kBlockToArray),
                          0)
                    << bitmask << " level " << level << " window_bits " << window_bits << " block " << b;
              }
            }
            for (int64_t z = 0; z < t[2]; ++z)
              for (int64_t y = 0; y < t[1]; ++y)
                for (int64_t x = 0; x < t[0]; ++x) {
                  const Point p{tg.origin[0] + x * g.spacing[0], tg.origin[1] + y * g.spacing[1],
                                tg.origin[2] + z * g.spacing[2]};
                  ASSERT_EQ(window[static_cast<size_t>((z * t[1] + y) * t[0] + x)], hz_sample<S>(s.point_to_hz(p)))
                      << bitmask << " level " << level << " window_bits " << window_bits << " point " << p[0] << ","
                      << p[1] << "," << p[2];
                }
            // Encoding the window back writes exactly the block entries of its samples.
            const Sample sentinel = hz_sample<S>(~uint64_t{0});
            for (uint64_t b : blocks) {
              std::vector<Sample> block(n, sentinel);
              for (const hzorder::Run& r : s.block_runs(b, Layout::kHzOrder)) {
                if (b == 0 && HzSpace::level_of(r.first) > level) continue;
                ASSERT_GE(copy_run_in_block_order(r, clip, reinterpret_cast<std::byte*>(block.data()), view,
                                                  Direction::kArrayToBlock),
                          0);
              }
              for (uint64_t i = 0; i < n; ++i) {
                const uint64_t hz = (b << bpb) + i;
                const Point p = s.hz_to_point(hz);
                bool inside = HzSpace::level_of(hz) <= level;
                for (int a = 0; a < kMaxDims; ++a)
                  inside =
                      inside && p[a] >= clip.lo[a] && p[a] < clip.hi[a] && (p[a] - tg.origin[a]) % g.spacing[a] == 0;
                ASSERT_EQ(block[i], inside ? hz_sample<S>(hz) : sentinel)
                    << bitmask << " level " << level << " block " << b << " index " << i;
              }
            }
          }
    }
  }
}

TEST(BlockCopy, AlignedWindowsDecodeAndEncodeInBlockOrderForEverySampleSizeAndBitOrder) {
  for (const char* bitmask :
       {"V0120120120", "V2102102101", "V1201200012", "V0212010021", "V0011220120", "V0101010101"}) {
    check_windows_in_block_order<1>(bitmask, 5);
    check_windows_in_block_order<4>(bitmask, 5);
    check_windows_in_block_order<8>(bitmask, 3);
    check_windows_in_block_order<12>(bitmask, 4);
    check_windows_in_block_order<16>(bitmask, 6);
  }
}

TEST(BlockCopy, BlockOrderCopyRefusesAPartThatIsNotOneIndexRange) {
  HzSpace s(format::Bitmask::parse("V012012012").value(), 6);
  const hzorder::Run r = s.block_runs(3, Layout::kHzOrder)[0];
  std::vector<uint32_t> block(64, 7), out(512, 0);
  ArrayView view{reinterpret_cast<std::byte*>(out.data()), {{0, 0, 0}, {1, 1, 1}, {8, 8, 8}}, 4};
  // Starting one sample into the run along x: the part is neither aligned nor a power of two.
  Box clip{{r.p0[0] + r.delta[0], r.p0[1], r.p0[2]}, {8, 8, 8}};
  EXPECT_EQ(
      copy_run_in_block_order(r, clip, reinterpret_cast<std::byte*>(block.data()), view, Direction::kBlockToArray), -1);
  EXPECT_EQ(std::count(out.begin(), out.end(), 0u), 512);
  // Row-major blocks have no index bits to walk.
  const hzorder::Run rm = s.block_runs(3, Layout::kRowMajor)[0];
  EXPECT_EQ(copy_run_in_block_order(rm, Box{{0, 0, 0}, {8, 8, 8}}, reinterpret_cast<std::byte*>(block.data()), view,
                                    Direction::kBlockToArray),
            -1);
  // The whole run is one range.
  EXPECT_EQ(copy_run_in_block_order(r, Box{{0, 0, 0}, {8, 8, 8}}, reinterpret_cast<std::byte*>(block.data()), view,
                                    Direction::kBlockToArray),
            64);
}

TEST(BlockCopy, RowCopiesLandEveryByteWithOrWithoutStreamingStores) {
  alignas(64) static std::byte dst[4096 + 64];
  std::vector<std::byte> src(8 * 192);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 7 + 1);
  // Whole aligned lines (streaming), then a destination 16 bytes past a line, then rows of 40 bytes.
  for (auto [shift, row, stride] : {std::tuple{0, 192, 256}, std::tuple{16, 192, 256}, std::tuple{0, 40, 64}}) {
    std::memset(dst, 0, sizeof dst);
    copy_rows_streaming(dst + shift, static_cast<size_t>(stride), src.data(), static_cast<size_t>(row), 8);
    for (int r = 0; r < 8; ++r)
      for (int i = 0; i < stride; ++i) {
        const std::byte want = i < row ? src[static_cast<size_t>(r * row + i)] : std::byte{0};
        ASSERT_EQ(dst[shift + r * stride + i], want) << "shift " << shift << " row " << r << " byte " << i;
      }
  }
}

}  // namespace
}  // namespace hzio::hzorder
