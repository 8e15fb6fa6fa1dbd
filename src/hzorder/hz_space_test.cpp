// Tests for HZ address math against the seed papers' tables and a brute-force oracle.
#include "hzorder/hz_space.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace hzio::hzorder {
namespace {

HzSpace space(const char* bits, int bpb) { return HzSpace(format::Bitmask::parse(bits).value(), bpb); }

TEST(HzSpace, MatchesThe4x4TableOfTheViSUSSlides) {
  // Seed 000: HZ order of a 4x4 grid with bitmask V0101, rows listed from y = 3 down to y = 0.
  const int table[4][4] = {{10, 11, 14, 15}, {2, 5, 3, 7}, {8, 9, 12, 13}, {0, 4, 1, 6}};
  const int levels[4][4] = {{4, 4, 4, 4}, {2, 3, 2, 3}, {4, 4, 4, 4}, {0, 3, 1, 3}};
  HzSpace s = space("V0101", 4);
  for (int row = 0; row < 4; ++row) {
    for (int x = 0; x < 4; ++x) {
      const int y = 3 - row;
      const uint64_t hz = s.point_to_hz({x, y, 0});
      EXPECT_EQ(hz, static_cast<uint64_t>(table[row][x])) << "x=" << x << " y=" << y;
      EXPECT_EQ(HzSpace::level_of(hz), levels[row][x]);
    }
  }
}

TEST(HzSpace, MatchesThe2x2x2TableOfThePidxPaper) {
  // Seed 004 Table I (bitmask V210): (x, y, z) -> HZ, level.
  const int rows[8][5] = {{0, 0, 0, 0, 0}, {0, 0, 1, 1, 1}, {0, 1, 0, 2, 2}, {0, 1, 1, 3, 2},
                          {1, 0, 0, 4, 3}, {1, 0, 1, 6, 3}, {1, 1, 0, 5, 3}, {1, 1, 1, 7, 3}};
  HzSpace s = space("V210", 3);
  for (const auto& r : rows) {
    EXPECT_EQ(s.point_to_hz({r[0], r[1], r[2]}), static_cast<uint64_t>(r[3]));
    EXPECT_EQ(HzSpace::level_of(static_cast<uint64_t>(r[3])), r[4]);
  }
}

TEST(HzSpace, MatchesTheWorkedExamplesCheckedAgainstOpenVisusFiles) {
  HzSpace s2 = space("V0101010", 4);
  EXPECT_EQ(s2.point_to_hz({3, 5, 0}), 83u);
  HzSpace s3 = space("V012012012012012", 12);
  EXPECT_EQ(s3.point_to_hz({16, 0, 0}), 1u);
  EXPECT_EQ(s3.point_to_hz({0, 16, 0}), 2u);
  EXPECT_EQ(s3.point_to_hz({0, 0, 16}), 4u);
  EXPECT_EQ(s3.point_to_hz({1, 2, 3}), 16398u);
  EXPECT_EQ(s3.point_to_hz({31, 31, 31}), 32767u);
}

TEST(HzSpace, HzToPointInvertsPointToHzForEveryAddress) {
  for (const char* bits : {"V0101010", "V012012012", "V0120120120", "V1010100", "V22110"}) {
    HzSpace s = space(bits, 3);
    std::set<uint64_t> seen;
    const Point p2 = s.bitmask().pow2_dims();
    for (int64_t z = 0; z < p2[2]; ++z)
      for (int64_t y = 0; y < p2[1]; ++y)
        for (int64_t x = 0; x < p2[0]; ++x) {
          const uint64_t hz = s.point_to_hz({x, y, z});
          EXPECT_LT(hz, uint64_t{1} << s.max_level());
          EXPECT_TRUE(seen.insert(hz).second);
          EXPECT_EQ(s.hz_to_point(hz), (Point{x, y, z}));
        }
  }
}

// Every index of every run of every block must hold the point whose hz is block * 2^bpb + index.
void check_runs(const HzSpace& s, Layout layout) {
  for (uint64_t b = 0; b < s.block_count(); ++b) {
    std::set<uint64_t> indices;
    for (const hzorder::Run& r : s.block_runs(b, layout)) {
      for (int64_t z = 0; z < r.ns[2]; ++z)
        for (int64_t y = 0; y < r.ns[1]; ++y)
          for (int64_t x = 0; x < r.ns[0]; ++x) {
            const uint64_t i = r.first + r.luts->axis[0][x] + r.luts->axis[1][y] + r.luts->axis[2][z];
            const Point p{r.p0[0] + x * r.delta[0], r.p0[1] + y * r.delta[1], r.p0[2] + z * r.delta[2]};
            ASSERT_LT(i, uint64_t{1} << s.bits_per_block());
            EXPECT_TRUE(indices.insert(i).second);
            if (layout == Layout::kHzOrder)
              EXPECT_EQ(s.point_to_hz(p), (b << s.bits_per_block()) + i);
            else
              EXPECT_EQ(s.point_to_hz(p) >> s.bits_per_block(), b);
          }
    }
    EXPECT_EQ(indices.size(), size_t{1} << s.bits_per_block());
  }
}

TEST(HzSpace, BlockRunsCoverEachBlockExactlyInHzOrder) {
  for (int bpb : {1, 2, 3, 5, 7}) check_runs(space("V0120120", bpb), Layout::kHzOrder);
  check_runs(space("V0101010", 4), Layout::kHzOrder);
}

TEST(HzSpace, BlockRunsCoverEachBlockExactlyInRowMajorOrder) {
  for (int bpb : {1, 2, 3, 5, 7}) check_runs(space("V0120120", bpb), Layout::kRowMajor);
}

TEST(HzSpace, RowMajorBlocksMatchTheOpenVisusGridExamples) {
  HzSpace s = space("V0101010", 4);
  auto b0 = s.block_runs(0, Layout::kRowMajor);
  EXPECT_EQ(b0[0].delta, (Point{4, 2, 1}));
  EXPECT_EQ(b0[0].ns, (Point{4, 4, 1}));
  auto b1 = s.block_runs(1, Layout::kRowMajor);
  EXPECT_EQ(b1[0].p0, (Point{2, 0, 0}));
  EXPECT_EQ(b1[0].delta, (Point{4, 2, 1}));
  HzSpace s3 = space("V012012012012012", 12);
  auto c1 = s3.block_runs(1, Layout::kRowMajor);
  EXPECT_EQ(c1[0].p0, (Point{1, 0, 0}));
  EXPECT_EQ(c1[0].delta, (Point{2, 2, 2}));
  EXPECT_EQ(c1[0].ns, (Point{16, 16, 16}));
  auto c2 = s3.block_runs(2, Layout::kRowMajor);
  EXPECT_EQ(c2[0].p0, (Point{0, 1, 0}));
  EXPECT_EQ(c2[0].delta, (Point{1, 2, 2}));
}

// A random non-empty box inside [0, p2).
Box random_box(std::mt19937& rng, const Point& p2) {
  Box box;
  for (int a = 0; a < kMaxDims; ++a) {
    box.lo[a] = std::uniform_int_distribution<int64_t>(0, p2[a] - 1)(rng);
    box.hi[a] = std::uniform_int_distribution<int64_t>(box.lo[a] + 1, p2[a])(rng);
  }
  return box;
}

TEST(HzSpace, BlocksInBoxEqualsBruteForceOverRandomBoxesAndLevels) {
  std::mt19937 rng(7);
  for (const char* bits : {"V0120120120", "V0101010", "V22110"}) {
    for (int bpb : {2, 4}) {
      HzSpace s = space(bits, bpb);
      const Point p2 = s.bitmask().pow2_dims();
      for (int trial = 0; trial < 60; ++trial) {
        const Box box = random_box(rng, p2);
        const int level = std::uniform_int_distribution<int>(0, s.max_level())(rng);
        std::set<uint64_t> expected;
        for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
          for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
            for (int64_t x = box.lo[0]; x < box.hi[0]; ++x) {
              const uint64_t hz = s.point_to_hz({x, y, z});
              if (HzSpace::level_of(hz) <= level) expected.insert(hz >> bpb);
            }
        std::vector<uint64_t> got;
        for (int h = 0; h <= level; ++h) {
          if (h > bpb || h == level || h == bpb) s.blocks_in_box(box, h, got);
        }
        std::set<uint64_t> got_set(got.begin(), got.end());
        EXPECT_EQ(got_set, expected) << bits << " bpb " << bpb << " level " << level << " " << box.to_string();
      }
    }
  }
}

// Block ids of more than 32 bits (a bitmask of 44 levels with 2-sample blocks: 2^43 blocks) are
// computed in full, against the brute force over a small box far from the origin.
TEST(HzSpace, BlockIdsBeyondThirtyTwoBitsEqualBruteForce) {
  HzSpace s = space("V01201201201201201201201201201201201201201210", 1);
  ASSERT_EQ(s.max_level(), 44);
  const Point p2 = s.bitmask().pow2_dims();
  const Box box{{p2[0] - 3, p2[1] - 2, p2[2] / 2 + 1}, {p2[0], p2[1], p2[2] / 2 + 3}};
  std::set<uint64_t> expected;
  for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
    for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
      for (int64_t x = box.lo[0]; x < box.hi[0]; ++x) expected.insert(s.point_to_hz({x, y, z}) >> 1);
  ASSERT_GT(*expected.rbegin(), uint64_t{1} << 40);
  std::vector<uint64_t> got;
  s.blocks_in_box(box, s.max_level(), got);
  s.blocks_in_box(box, s.max_level() - 1, got);
  for (uint64_t b : got) EXPECT_TRUE(expected.count(b)) << b;
  std::set<uint64_t> finest;
  for (uint64_t b : expected)
    if (HzSpace::level_of(b << 1) >= s.max_level() - 1) finest.insert(b);
  EXPECT_EQ(std::set<uint64_t>(got.begin(), got.end()), finest);
}

TEST(HzSpace, BlockPlanOfABoxIsEveryBlockWithASampleOfTheLevelsAscending) {
  std::mt19937 rng(11);
  for (const char* bits : {"V0120120120", "V22110"}) {
    HzSpace s = space(bits, 3);
    const Point p2 = s.bitmask().pow2_dims();
    for (int trial = 0; trial < 60; ++trial) {
      const Box box = random_box(rng, p2);
      const int hi = std::uniform_int_distribution<int>(0, s.max_level())(rng);
      const int lo = std::uniform_int_distribution<int>(0, hi)(rng);
      std::set<uint64_t> expected;  // brute force over the samples of the box
      for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
        for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
          for (int64_t x = box.lo[0]; x < box.hi[0]; ++x) {
            const uint64_t hz = s.point_to_hz({x, y, z});
            const int level = HzSpace::level_of(hz);
            if (level >= lo && level <= hi) expected.insert(hz >> 3);
          }
      const std::vector<uint64_t> got = s.blocks_of_box(box, lo, hi);
      EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
      EXPECT_EQ(std::set<uint64_t>(got.begin(), got.end()), expected)
          << bits << " levels " << lo << ".." << hi << " " << box.to_string();
      EXPECT_EQ(got.size(), expected.size());
    }
  }
}

TEST(HzSpace, GridInBoxMatchesOpenVisusCoarseReadShapes) {
  HzSpace s = space("V0101010", 4);
  Box box{{0, 0, 0}, {16, 8, 1}};
  EXPECT_EQ(s.grid_in_box(box, 1).count, (Point{2, 1, 1}));
  EXPECT_EQ(s.grid_in_box(box, 2).count, (Point{2, 2, 1}));
  HzSpace s3 = space("V012012012012012", 12);
  Box cube{{0, 0, 0}, {32, 32, 32}};
  EXPECT_EQ(s3.grid_in_box(cube, 0).count, (Point{1, 1, 1}));
  EXPECT_EQ(s3.grid_in_box(cube, 1).count, (Point{2, 1, 1}));
  EXPECT_EQ(s3.grid_in_box(cube, 9).count, (Point{8, 8, 8}));
  EXPECT_EQ(s3.grid_in_box(cube, 12).count, (Point{16, 16, 16}));
}

TEST(HzSpace, AWindowHoldsTwoToTheWindowBitsSamplesAndOneIndexRangePerLevel) {
  for (const char* text : {"V012012012", "V0101010101", "V2210100", "V0000112222"}) {
    HzSpace s(format::Bitmask::parse(text).value(), 3);
    const Point p2 = s.bitmask().pow2_dims();
    for (int level = 0; level <= s.max_level(); ++level) {
      const SampleGrid g = s.grid_in_box({{0, 0, 0}, p2}, level);
      for (int bits = 0; bits <= s.max_level() + 1; ++bits) {
        const Point t = s.window_extent(level, bits);
        ASSERT_EQ(t[0] * t[1] * t[2], int64_t{1} << std::min(bits, level)) << text << " " << level << " " << bits;
        // The last window of the grid: per level, its addresses must be consecutive.
        std::map<int, std::vector<uint64_t>> by_level;
        for (int64_t z = g.count[2] - t[2]; z < g.count[2]; ++z)
          for (int64_t y = g.count[1] - t[1]; y < g.count[1]; ++y)
            for (int64_t x = g.count[0] - t[0]; x < g.count[0]; ++x) {
              const uint64_t hz = s.point_to_hz({x * g.spacing[0], y * g.spacing[1], z * g.spacing[2]});
              by_level[HzSpace::level_of(hz)].push_back(hz);
            }
        for (auto& [h, v] : by_level) {
          std::sort(v.begin(), v.end());
          EXPECT_EQ(v.back() - v.front() + 1, v.size()) << text << " level " << level << " bits " << bits << " h " << h;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hzio::hzorder
