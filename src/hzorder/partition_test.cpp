// Tests for partitions against a brute-force oracle over every sample: HzSpace gives each sample's block,
// and the partition boxes (cut from the pow2 box by hand here) give its partition.
#include "hzorder/partition.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "hzio/mosaic.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio::hzorder {
namespace {

struct Case {
  std::string bitmask;
  Point dims;
  int bpb;
  int count;
};

// Which of `boxes` holds p (the oracle's own search, not Partitions::of_point).
int owner(const std::vector<Box>& boxes, const Point& p) {
  int found = -1;
  for (size_t q = 0; q < boxes.size(); ++q) {
    const Box& b = boxes[q];
    if (p[0] >= b.lo[0] && p[0] < b.hi[0] && p[1] >= b.lo[1] && p[1] < b.hi[1] && p[2] >= b.lo[2] && p[2] < b.hi[2]) {
      EXPECT_EQ(found, -1) << "partitions overlap at " << p[0] << "," << p[1] << "," << p[2];
      found = static_cast<int>(q);
    }
  }
  return found;
}

void check(const Case& c) {
  SCOPED_TRACE(c.bitmask + " R=" + std::to_string(c.count) + " bpb=" + std::to_string(c.bpb));
  const auto bitmask = format::Bitmask::parse(c.bitmask).value();
  const Box domain{{0, 0, 0}, c.dims};
  auto made = Partitions::make(bitmask, c.bpb, domain, c.count);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  const Partitions& parts = made.value();
  ASSERT_EQ(parts.count(), c.count);
  std::vector<Box> boxes;
  for (int q = 0; q < c.count; ++q) boxes.push_back(parts.box(q));
  const HzSpace space(bitmask, c.bpb);
  std::map<uint64_t, std::set<int>> block_parts;  // the partitions each block's samples lie in
  int64_t total = 0;
  for (int64_t z = 0; z < c.dims[2]; ++z)
    for (int64_t y = 0; y < c.dims[1]; ++y)
      for (int64_t x = 0; x < c.dims[0]; ++x) {
        const Point p{x, y, z};
        const int q = owner(boxes, p);
        ASSERT_GE(q, 0) << "no partition holds " << x << "," << y << "," << z;
        ASSERT_EQ(parts.of_point(p), q);
        block_parts[space.point_to_hz(p) >> c.bpb].insert(q);
        ++total;
      }
  int64_t summed = 0;
  for (int q = 0; q < c.count; ++q) summed += boxes[static_cast<size_t>(q)].sample_count();
  EXPECT_EQ(summed, total);
  for (const auto& [block, qs] : block_parts) {
    const int q = parts.of_block(block);
    if (q >= 0) {
      EXPECT_EQ(qs, std::set<int>{q}) << "block " << block;
    } else {
      EXPECT_LT(block, static_cast<uint64_t>(c.count)) << "only blocks below R are shared";
    }
  }
  // Ranges of blocks (data files of every power-of-two and odd size): one partition exactly when every
  // block in them has that one.
  for (uint64_t per_file : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{4}, uint64_t{8}}) {
    for (uint64_t first = 0; first < space.block_count(); first += per_file) {
      std::set<int> qs;
      for (uint64_t b = first; b < std::min(first + per_file, space.block_count()); ++b) qs.insert(parts.of_block(b));
      const int want = qs.size() == 1 ? *qs.begin() : -1;
      EXPECT_EQ(parts.of_blocks(first, std::min(per_file, space.block_count() - first)), want)
          << "blocks " << first << "+" << per_file;
    }
  }
  // samples_of against counting, on a box that leaves out the first x column where it can.
  const Box probe{{std::min<int64_t>(1, c.dims[0] - 1), 0, 0}, c.dims};
  std::vector<int64_t> want(static_cast<size_t>(c.count), 0);
  for (int64_t z = probe.lo[2]; z < probe.hi[2]; ++z)
    for (int64_t y = probe.lo[1]; y < probe.hi[1]; ++y)
      for (int64_t x = probe.lo[0]; x < probe.hi[0]; ++x) ++want[static_cast<size_t>(owner(boxes, {x, y, z}))];
  EXPECT_EQ(parts.samples_of(probe), want);
}

TEST(Partitions, MatchBruteForce) {
  for (const Case& c : std::vector<Case>{{"V012012", {4, 4, 4}, 2, 2},
                                         {"V012012", {4, 4, 4}, 2, 8},
                                         {"V210210", {4, 4, 4}, 1, 4},
                                         {"V0011", {4, 4, 1}, 1, 4},
                                         {"V0101", {4, 4, 1}, 0, 16},
                                         {"V1100101010", {32, 32, 1}, 4, 16},
                                         {"V2210101", {3, 5, 4}, 2, 4},
                                         {"V01201201", {7, 6, 3}, 3, 8},
                                         {"V01201201", {8, 8, 4}, 3, 1}})
    check(c);
}

TEST(Partitions, RandomBitmasks) {
  std::mt19937 rng(14);
  for (int trial = 0; trial < 40; ++trial) {
    std::string text = "V";
    Point pow2{1, 1, 1};
    const int n = 3 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      const int a = static_cast<int>(rng() % 3);
      text += static_cast<char>('0' + a);
      pow2[a] *= 2;
    }
    Point dims;
    for (int a = 0; a < 3; ++a) dims[a] = pow2[a] / 2 + 1 + static_cast<int64_t>(rng() % (pow2[a] / 2 + 1));
    for (int a = 0; a < 3; ++a) dims[a] = std::min(dims[a], pow2[a]);
    const int k = static_cast<int>(rng() % (n + 1));
    check({text, dims, static_cast<int>(rng() % (n + 1)), 1 << k});
  }
}

TEST(Partitions, RefusesBadCounts) {
  const auto bitmask = format::Bitmask::parse("V012").value();
  const Box domain{{0, 0, 0}, {2, 2, 2}};
  EXPECT_EQ(Partitions::make(bitmask, 1, domain, 3).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Partitions::make(bitmask, 1, domain, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Partitions::make(bitmask, 1, domain, 16).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Partitions::make(bitmask, 1, domain, 8).is_ok());
}

}  // namespace
}  // namespace hzio::hzorder

namespace hzio {
namespace {

// A mosaic of 4 partitions of a 30 x 20 x 17 domain under V012012012012012 (32^3; x, y, z, x, ...): the
// template xy cuts x at 16 and y at 16.
Mosaic four_parts() {
  Mosaic m;
  m.dims = {30, 20, 17};
  m.bitmask = "V012012012012012";
  m.bits_per_block = 8;
  m.partitions = 4;
  m.parts = {{0, "a_p0.idx", {0, 0, 0}},
             {1, "a_p1.idx", {0, 16, 0}},
             {2, "a_p2.idx", {16, 0, 0}},
             {3, "a_p3.idx", {16, 16, 0}}};
  return m;
}

TEST(CheckMosaic, TakesThePartitionsOfTheTemplate) {
  auto g = check_mosaic(four_parts());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->part_bitmask, "V2012012012012");
  ASSERT_EQ(g->boxes.size(), 4u);
  EXPECT_EQ(g->boxes[3].lo, (Point{16, 16, 0}));
  EXPECT_EQ(g->boxes[3].hi, (Point{30, 20, 17}));
}

TEST(CheckMosaic, RefusesPartsThatAreNotThePartitions) {
  const auto fails = [](Mosaic m, const std::string& why) {
    auto g = check_mosaic(m);
    ASSERT_FALSE(g.is_ok());
    EXPECT_EQ(g.status().code(), ErrorCode::kFormat);
    EXPECT_NE(g.status().message().find(why), std::string::npos) << g.status().message();
  };
  Mosaic m = four_parts();
  m.parts[1].offset = {0, 15, 0};
  fails(m, "offset of partition 1");
  m = four_parts();
  m.parts.erase(m.parts.begin() + 2);
  fails(m, "partition 2 has no part");
  m = four_parts();
  m.dims = {90, 33, 17};
  fails(m, "does not cover");
  m = four_parts();
  m.bitmask = "Vxyz";
  fails(m, "hzio_bitmask");
  m = four_parts();
  m.dims = {14, 20, 17};  // partitions 2 and 3 (x >= 16) lie outside
  fails(m, "outside hzio_dims");
  m = four_parts();
  m.partitions = 1 << 16;
  fails(m, "does not fit");
}

}  // namespace
}  // namespace hzio
