// Tests for indexing templates against seed 002's example and a brute-force oracle: every level's HZ
// order (HzSpace::point_to_hz) visits the ranks in increasing order.
#include "hzio/index_template.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "format/bitmask.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio {
namespace {

enum class Order { kRowMajor, kColumnMajor, kMorton };

// The boxes of a grid of ranks (x first) of `extent` samples each, numbered in `order`.
std::vector<Box> grid_boxes(const Point& grid, const Point& extent, Order order) {
  const int64_t n = grid[0] * grid[1] * grid[2];
  std::vector<Box> boxes(static_cast<size_t>(n));
  std::vector<Point> positions;
  for (int64_t z = 0; z < grid[2]; ++z)
    for (int64_t y = 0; y < grid[1]; ++y)
      for (int64_t x = 0; x < grid[0]; ++x) positions.push_back({x, y, z});
  for (const Point& g : positions) {
    int64_t r = 0;
    if (order == Order::kRowMajor) r = (g[2] * grid[1] + g[1]) * grid[0] + g[0];
    if (order == Order::kColumnMajor) r = (g[0] * grid[1] + g[1]) * grid[2] + g[2];
    if (order == Order::kMorton) {  // z, y, x bits in turn from the top, axes without bits left skipped
      std::array<int, 3> left{std::countr_zero(static_cast<uint64_t>(grid[0])),
                              std::countr_zero(static_cast<uint64_t>(grid[1])),
                              std::countr_zero(static_cast<uint64_t>(grid[2]))};
      while (left[0] + left[1] + left[2] > 0) {
        for (int a = 2; a >= 0; --a) {
          if (left[static_cast<size_t>(a)] == 0) continue;
          --left[static_cast<size_t>(a)];
          r = (r << 1) | ((g[static_cast<size_t>(a)] >> left[static_cast<size_t>(a)]) & 1);
        }
      }
    }
    Box& b = boxes[static_cast<size_t>(r)];
    for (int a = 0; a < 3; ++a) {
      b.lo[a] = g[a] * extent[a];
      b.hi[a] = b.lo[a] + extent[a];
    }
  }
  return boxes;
}

// The oracle: within every level, HZ order visits the owners of the samples in non-decreasing rank.
bool gz_curves_visit_ranks_in_order(const std::string& bitmask, const std::vector<Box>& boxes) {
  const hzorder::HzSpace space(format::Bitmask::parse(bitmask).value(), 1);
  std::vector<std::pair<uint64_t, int>> owner;
  for (size_t r = 0; r < boxes.size(); ++r) {
    const Box& b = boxes[r];
    for (int64_t z = b.lo[2]; z < b.hi[2]; ++z)
      for (int64_t y = b.lo[1]; y < b.hi[1]; ++y)
        for (int64_t x = b.lo[0]; x < b.hi[0]; ++x)
          owner.emplace_back(space.point_to_hz({x, y, z}), static_cast<int>(r));
  }
  std::sort(owner.begin(), owner.end());
  for (size_t i = 1; i < owner.size(); ++i) {
    const bool same_level =
        hzorder::HzSpace::level_of(owner[i].first) == hzorder::HzSpace::level_of(owner[i - 1].first);
    if (same_level && owner[i].second < owner[i - 1].second) return false;
  }
  return true;
}

TEST(IndexTemplate, GivesSeed002sExampleFor4x4RanksOf8x8Samples) {
  // Seed 002 section V: 4x4 ranks in row-major order, 8x8 samples each: prefix yyxx, suffix yxyxyx.
  const auto boxes = grid_boxes({4, 4, 1}, {8, 8, 1}, Order::kRowMajor);
  const auto bitmask = rank_conforming_bitmask(2, {32, 32, 1}, boxes);
  ASSERT_TRUE(bitmask.is_ok()) << bitmask.status().message();
  EXPECT_EQ(bitmask.value(), "V1100101010");
  EXPECT_TRUE(check_rank_conforming(bitmask.value(), boxes).is_ok());
  EXPECT_TRUE(gz_curves_visit_ranks_in_order(bitmask.value(), boxes));
  // Morton-numbered ranks need the yxyx prefix instead (seed 002 figure 4).
  const auto morton = grid_boxes({4, 4, 1}, {8, 8, 1}, Order::kMorton);
  EXPECT_EQ(rank_conforming_bitmask(2, {32, 32, 1}, morton).value(), "V1010101010");
  // The OpenVisus default for 32x32 is not rank-conforming for row-major ranks.
  const std::string fallback = format::Bitmask::default_for({32, 32, 1}, 2).text();
  EXPECT_FALSE(check_rank_conforming(fallback, boxes).is_ok());
  EXPECT_FALSE(gz_curves_visit_ranks_in_order(fallback, boxes));
}

TEST(IndexTemplate, RandomDecompositionsAgreeWithTheOracle) {
  std::mt19937 rng(20261128);
  for (int trial = 0; trial < 60; ++trial) {
    const int ndim = 1 + static_cast<int>(rng() % 3);
    Point grid{1, 1, 1}, extent{1, 1, 1}, dims{1, 1, 1};
    for (int a = 0; a < ndim; ++a) {
      grid[a] = int64_t{1} << (rng() % 3);
      extent[a] = int64_t{2} << (rng() % 3);  // boxes at least 2 samples thick: see the swap below
      dims[a] = grid[a] * extent[a];
    }
    const Order order = static_cast<Order>(rng() % 3);
    const auto boxes = grid_boxes(grid, extent, order);
    const auto bitmask = rank_conforming_bitmask(ndim, dims, boxes);
    ASSERT_TRUE(bitmask.is_ok()) << trial << ": " << bitmask.status().message();
    ASSERT_TRUE(format::Bitmask::parse(bitmask.value()).value().check_covers(dims).is_ok()) << bitmask.value();
    EXPECT_TRUE(check_rank_conforming(bitmask.value(), boxes).is_ok()) << bitmask.value();
    EXPECT_TRUE(gz_curves_visit_ranks_in_order(bitmask.value(), boxes)) << trial << " " << bitmask.value();
    // Whenever the check accepts another bitmask (the default, shuffles of this one), the oracle agrees.
    std::vector<std::string> others{format::Bitmask::default_for(dims, ndim).text()};
    for (int i = 0; i < 4; ++i) {
      std::string shuffled = bitmask.value();
      std::shuffle(shuffled.begin() + 1, shuffled.end(), rng);
      others.push_back(shuffled);
    }
    for (const std::string& other : others) {
      if (check_rank_conforming(other, boxes).is_ok()) {
        EXPECT_TRUE(gz_curves_visit_ranks_in_order(other, boxes)) << other;
      }
    }
    // Two ranks swapped: the check refuses the bitmask made before, and so does the oracle (boxes one
    // sample thick could pass it level by level, hence the thickness above).
    if (boxes.size() >= 4) {
      auto swapped = boxes;
      std::swap(swapped[1], swapped[2]);
      EXPECT_FALSE(check_rank_conforming(bitmask.value(), swapped).is_ok());
      EXPECT_FALSE(gz_curves_visit_ranks_in_order(bitmask.value(), swapped)) << trial << " " << bitmask.value();
    }
  }
}

TEST(IndexTemplate, RefusesDecompositionsNoPrefixCanNumber) {
  auto boxes = grid_boxes({4, 1, 1}, {8, 1, 1}, Order::kRowMajor);
  EXPECT_FALSE(rank_conforming_bitmask(1, {32, 1, 1}, {boxes[0], boxes[1], boxes[2]}).is_ok());  // 3 ranks
  auto uneven = boxes;
  uneven[1].hi[0] += 1;  // not equal boxes
  EXPECT_FALSE(rank_conforming_bitmask(1, {32, 1, 1}, uneven).is_ok());
  EXPECT_FALSE(rank_conforming_bitmask(1, {48, 1, 1}, grid_boxes({4, 1, 1}, {12, 1, 1}, Order::kRowMajor)).is_ok());
  auto reversed = boxes;  // ranks numbered with the low bit of the position first: 0, 2, 1, 3
  std::swap(reversed[1], reversed[2]);
  const auto r = rank_conforming_bitmask(1, {32, 1, 1}, reversed);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("low bits first"), std::string::npos) << r.status().message();
  EXPECT_TRUE(check_rank_conforming("V00000", boxes).is_ok());                // 1-D: the only bitmask
  EXPECT_FALSE(check_rank_conforming("V0000", boxes).is_ok());                // 2^4 < 32 samples
  EXPECT_EQ(check_rank_conforming("Vxx", boxes).code(), ErrorCode::kFormat);  // not a bitmask
}

}  // namespace
}  // namespace hzio
