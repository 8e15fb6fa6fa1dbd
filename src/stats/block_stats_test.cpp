// Tests for block statistics against a brute-force pass over the block's points, and the sidecar format.
#include "stats/block_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/stats_file.hpp"

namespace hzio::stats {
namespace {

TEST(BlockStats, MinMaxAndCountLeaveOutPaddingSamples) {
  hzorder::HzSpace space(format::Bitmask::parse("V0120120120").value(), 5);  // 16x8x8 power-of-two box
  const Box dataset{{0, 0, 0}, {10, 6, 5}};
  std::mt19937 rng(9);
  for (uint64_t b = 0; b < space.block_count(); ++b) {
    std::vector<float> v(32);
    for (auto& x : v) x = static_cast<float>(rng() % 1000) - 500.0f;
    float mn = 1e30f, mx = -1e30f;
    uint64_t n = 0;
    for (uint32_t i = 0; i < 32; ++i) {
      const Point p = space.hz_to_point((b << 5) + i);
      if (p[0] < 10 && p[1] < 6 && p[2] < 5) {
        mn = std::min(mn, v[i]);
        mx = std::max(mx, v[i]);
        ++n;
      }
    }
    const BlockStats s =
        compute_block_stats(space, b, Layout::kHzOrder, std::as_bytes(std::span(v)), {Scalar::kFloat32, 1}, dataset, 2);
    EXPECT_EQ(s.block.count, n) << b;
    if (n) {
      EXPECT_EQ(s.block.min[0], mn);
      EXPECT_EQ(s.block.max[0], mx);
    }
    ASSERT_EQ(s.parts.size(), 4u);
    uint64_t parts = 0;
    for (const auto& p : s.parts) parts += p.count;
    EXPECT_EQ(parts, n);
  }
}

TEST(BlockStats, BlockFromPartsEqualsOnePassWithNansComponentsAndPadding) {
  hzorder::HzSpace space(format::Bitmask::parse("V0120120120").value(), 6);
  const Box dataset{{0, 0, 0}, {11, 7, 5}};
  std::mt19937 rng(4);
  for (uint64_t b = 0; b < space.block_count(); ++b) {
    std::vector<double> v(64 * 3);
    for (auto& x : v) x = rng() % 7 == 0 ? NAN : static_cast<double>(rng() % 2000) - 1000.0;
    if (b == 1) std::fill(v.begin(), v.begin() + 3 * 16, NAN);  // an all-NaN part
    const auto bytes = std::as_bytes(std::span(v));
    const BlockStats whole = compute_block_stats(space, b, Layout::kHzOrder, bytes, {Scalar::kFloat64, 3}, dataset, 0);
    const BlockStats split = compute_block_stats(space, b, Layout::kHzOrder, bytes, {Scalar::kFloat64, 3}, dataset, 2);
    EXPECT_EQ(split.block.count, whole.block.count) << b;
    EXPECT_EQ(split.block.min, whole.block.min) << b;
    EXPECT_EQ(split.block.max, whole.block.max) << b;
  }
}

TEST(BlockStats, SixtyFourBitIntegersRoundOutward) {
  hzorder::HzSpace space(format::Bitmask::parse("V01").value(), 2);
  std::vector<int64_t> v = {(int64_t{1} << 60) + 1, 5, 7, 9};
  const BlockStats s = compute_block_stats(space, 0, Layout::kHzOrder, std::as_bytes(std::span(v)), {Scalar::kInt64, 1},
                                           Box{{0, 0, 0}, {2, 2, 1}}, 0);
  EXPECT_GE(s.block.max[0], static_cast<double>((int64_t{1} << 60) + 1));
  EXPECT_EQ(s.block.min[0], 5.0);
}

TEST(StatsFile, RoundTripsAndRejectsStaleOrDamagedSidecars) {
  StatsTable t;
  t.sub_block_bits = 1;
  t.blocks_per_file = 2;
  t.components = {1, 3};
  t.entries.resize(4);
  t.entries[0].block = {7, {1.0}, {2.0}};
  t.entries[0].parts = {{3, {1.0}, {1.5}}, {4, {1.2}, {2.0}}};
  t.entries[1].block.count = kUnknown;
  t.entries[3].block = {2, {0, 1, 2}, {3, 4, 5}};
  t.entries[3].parts = {{1, {0, 1, 2}, {0, 1, 2}}, {1, {3, 4, 5}, {3, 4, 5}}};
  const auto bytes = serialize_stats_file(t, 1234, 99);
  auto back = parse_stats_file(bytes, {1, 3}, 2, 1234, 99, "s").value();
  EXPECT_EQ(back.entries[0].block.count, 7u);
  EXPECT_EQ(back.entries[0].parts[1].min[0], 1.2);
  EXPECT_EQ(back.entries[1].block.count, kUnknown);
  EXPECT_EQ(back.entries[3].block.max[2], 5.0);
  EXPECT_EQ(parse_stats_file(bytes, {1, 3}, 2, 1235, 99, "s").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(parse_stats_file(std::span(bytes).first(bytes.size() - 1), {1, 3}, 2, 1234, 99, "s").status().code(),
            ErrorCode::kCorrupt);
  EXPECT_EQ(parse_stats_file(bytes, {1, 1}, 2, 1234, 99, "s").status().code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace hzio::stats
