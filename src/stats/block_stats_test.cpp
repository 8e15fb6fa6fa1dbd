// Tests for block statistics against a brute-force pass over the block's points, and the sidecar format.
#include "stats/block_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/stats_file.hpp"

#include <xxhash.h>

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
  t.checksums = {11, 12, 0, 0, 0, 0, 41, 42};
  t.data_file_size = 1234;
  t.header_crc = 99;
  const auto bytes = serialize_stats_file(t);
  auto back = parse_stats_file(bytes, {1, 3}, 2, "s").value();
  EXPECT_EQ(back.version, 2u);
  EXPECT_EQ(back.entries[0].block.count, 7u);
  EXPECT_EQ(back.entries[0].parts[1].min[0], 1.2);
  EXPECT_EQ(back.entries[1].block.count, kUnknown);
  EXPECT_EQ(back.entries[3].block.max[2], 5.0);
  EXPECT_EQ(back.checksums, t.checksums);
  EXPECT_EQ(binding_of(back, 1234, 99), Binding::kCurrent);
  EXPECT_EQ(binding_of(back, 1235, 99), Binding::kStale);
  EXPECT_EQ(binding_of(back, 1234, 98), Binding::kHeaderMismatch);
  EXPECT_EQ(parse_stats_file(std::span(bytes).first(bytes.size() - 1), {1, 3}, 2, "s").status().code(),
            ErrorCode::kCorrupt);
  EXPECT_EQ(parse_stats_file(bytes, {1, 1}, 2, "s").status().code(), ErrorCode::kCorrupt);
  // Every flipped bit of the sidecar itself is refused (its own checksum, or a header check first).
  for (size_t bit = 0; bit < 8 * bytes.size(); ++bit) {
    auto flipped = bytes;
    flipped[bit / 8] ^= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
    EXPECT_FALSE(parse_stats_file(flipped, {1, 3}, 2, "s").is_ok()) << "bit " << bit;
  }
}

TEST(StatsFile, ReadsVersionOneWithoutChecksums) {
  // The version 1 sidecar of docs/format.md's tiny example as the changelog's format 1.0 wrote it: one
  // uint8 field, bpf 4, data file of 216 bytes with header CRC 0x7ae909c5.
  const unsigned char v1[] = {
      0x48, 0x5a, 0x53, 0x54, 0x41, 0x54, 0x53, 0x31, 0x01, 0,    0,    0, 0x01, 0,    0,    0, 0x04, 0,    0,
      0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0, 0,    0xd8, 0,    0, 0,    0,    0,
      0,    0,    0xc5, 0x09, 0xe9, 0x7a, 0,    0,    0,    0,    0x01, 0, 0,    0,    0,    0, 0,    0,    0x04,
      0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0, 0,    0,    0,    0, 0,    0,    0,
      0,    0,    0x24, 0x40, 0x04, 0,    0,    0,    0,    0,    0,    0, 0,    0,    0,    0, 0,    0,    0xf0,
      0x3f, 0,    0,    0,    0,    0,    0,    0x26, 0x40, 0x04, 0,    0, 0,    0,    0,    0, 0,    0,    0,
      0,    0,    0,    0,    0x10, 0x40, 0,    0,    0,    0,    0,    0, 0x2a, 0x40, 0x04, 0, 0,    0,    0,
      0,    0,    0,    0,    0,    0,    0,    0,    0,    0x18, 0x40, 0, 0,    0,    0,    0, 0,    0x2e, 0x40};
  static_assert(sizeof(v1) == 152);
  auto t = parse_stats_file(std::as_bytes(std::span(v1)), {1}, 4, "v1").value();
  EXPECT_EQ(t.version, 1u);
  EXPECT_TRUE(t.checksums.empty());
  EXPECT_EQ(t.entries[3].block.max[0], 15.0);
  EXPECT_EQ(binding_of(t, 216, 0x7ae909c5u), Binding::kCurrent);
  EXPECT_EQ(binding_of(t, 216, 1), Binding::kStale);  // version 1: another header table is another file version
}

TEST(StatsFile, ChecksumsAreTheXxHashLibrarysXxh3) {
  // checksum_of may take its AVX2 build: the values must be the library's, for every length and alignment.
  std::vector<std::byte> bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 131 + (i >> 7));
  for (size_t offset : {0, 1, 3}) {
    for (size_t n = 0; n + offset <= bytes.size(); n += n < 300 ? 1 : 97) {
      const auto span = std::span<const std::byte>(bytes).subspan(offset, n);
      ASSERT_EQ(checksum_of(span), XXH3_64bits(span.data(), span.size())) << offset << " " << n;
    }
  }
}

TEST(StatsFile, PayloadChecksumsCoverEqualParts) {
  std::vector<std::byte> payload(100);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 7);
  uint64_t whole = 0, parts[4] = {};
  payload_checksums(payload, 0, &whole);
  EXPECT_EQ(whole, checksum_of(payload));
  payload_checksums(payload, 2, parts);
  EXPECT_EQ(checksum_part_bytes(100, 2), 25u);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(parts[k], checksum_of(std::span(payload).subspan(25 * k, 25)));
  uint64_t short_parts[4] = {};
  payload_checksums(std::span(payload).first(5), 2, short_parts);  // parts of 2, 2, 1 and 0 bytes
  EXPECT_EQ(short_parts[2], checksum_of(std::span(payload).subspan(4, 1)));
  EXPECT_EQ(short_parts[3], checksum_of(std::span<const std::byte>()));
}

}  // namespace
}  // namespace hzio::stats
