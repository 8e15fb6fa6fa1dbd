// Tests for the collective write schedule (no MPI needed: the plan is a pure function).
#include "parallel/write_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "format/file_name.hpp"
#include "parallel/plan_test_util.hpp"

namespace hzio::parallel {
namespace {

using testing::make_idx;

std::vector<BoxInfo> slabs(Point dims, int ranks, int fields) {
  std::vector<BoxInfo> out;
  for (int r = 0; r < ranks; ++r)
    for (int f = 0; f < fields; ++f)
      out.push_back({r, f, 0, Box{{0, 0, dims[2] * r / ranks}, {dims[0], dims[1], dims[2] * (r + 1) / ranks}}});
  return out;
}

TEST(WritePlan, EveryTouchedEntryIsInExactlyOneChunkWithinTheBudget) {
  const format::IdxFile idx = make_idx({64, 48, 40}, 8, 16, 2);
  hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  PlanOptions opt;
  opt.aggregator_bytes = 5 * 1024;  // five 1 KiB blocks per chunk
  const auto boxes = slabs({64, 48, 40}, 5, 2);
  const WritePlan plan = make_write_plan(idx, space, boxes, 5, opt, {1024, 1024});
  std::map<std::pair<int64_t, int64_t>, int> seen;  // (first block, entry) -> chunks holding it
  for (const auto& b : boxes)
    for (uint64_t blk : space.blocks_of_box(b.box, 0, space.max_level()))
      seen[{format::first_block_of_file(idx, blk), b.field * 16 + format::slot_in_file(idx, blk)}] = 0;
  for (const Chunk& c : plan.chunks) {
    EXPECT_LE(c.bytes, 5 * 1024);
    for (auto& [key, n] : seen)
      if (key.first == c.first_block && key.second >= c.entry_begin && key.second < c.entry_end) ++n;
  }
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key.first << " " << key.second;
}

TEST(WritePlan, LocalizedAggregatorsHoldTheirFilesSamplesAndAreBalanced) {
  const Point dims{128, 128, 128};
  const format::IdxFile idx = make_idx(dims, 12, 8, 1);
  hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  const int ranks = 8;
  const auto boxes = slabs(dims, ranks, 1);
  const WritePlan plan = make_write_plan(idx, space, boxes, ranks, {}, {4 << 12});
  std::map<int64_t, std::set<int>> holders;
  for (const auto& b : boxes)
    for (uint64_t blk : space.blocks_of_box(b.box, 0, space.max_level()))
      holders[format::first_block_of_file(idx, blk)].insert(b.rank);
  std::map<int, int> per_rank;
  for (const Chunk& c : plan.chunks) {
    EXPECT_TRUE(holders[c.first_block].count(c.aggregator)) << "file " << c.first_block;
    ++per_rank[c.aggregator];
  }
  EXPECT_EQ(plan.aggregators, ranks);  // 64 files over 8 ranks: everyone aggregates
  for (const auto& [r, n] : per_rank) EXPECT_EQ(n, 8) << "rank " << r;
}

TEST(WritePlan, UniformPlacementSpreadsOverRanksAndRoundsHoldOneChunkPerAggregator) {
  const format::IdxFile idx = make_idx({64, 64, 64}, 10, 4, 1);
  hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  PlanOptions opt;
  opt.uniform = true;
  const WritePlan plan = make_write_plan(idx, space, slabs({64, 64, 64}, 3, 1), 6, opt, {4 << 10});
  EXPECT_EQ(plan.aggregators, 6);
  for (const auto& round : plan.rounds) {
    std::set<int> aggs;
    for (int c : round) EXPECT_TRUE(aggs.insert(plan.chunks[static_cast<size_t>(c)].aggregator).second);
  }
}

TEST(WritePlan, AggregatorCountCapsTheDistinctAggregators) {
  const format::IdxFile idx = make_idx({64, 64, 64}, 10, 4, 1);
  hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  PlanOptions opt;
  opt.aggregator_count = 2;
  const WritePlan plan = make_write_plan(idx, space, slabs({64, 64, 64}, 8, 1), 8, opt, {4 << 10});
  EXPECT_EQ(plan.aggregators, 2);
}

}  // namespace
}  // namespace hzio::parallel
