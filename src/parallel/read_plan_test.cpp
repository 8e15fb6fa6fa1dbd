// Tests for the collective read plan (no MPI needed: the plan is a pure function). The oracle is a
// brute-force walk over every sample of each request.
#include "parallel/read_plan.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "format/file_name.hpp"
#include "parallel/plan_test_util.hpp"

namespace hzio::parallel {
namespace {

using testing::make_idx;

// The blocks holding the samples of `box` at levels 0..level, one sample at a time.
std::set<uint64_t> blocks_by_sample(const hzorder::HzSpace& space, const Box& box, int level) {
  std::set<uint64_t> out;
  for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
    for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
      for (int64_t x = box.lo[0]; x < box.hi[0]; ++x) {
        const uint64_t hz = space.point_to_hz({x, y, z});
        if (hzorder::HzSpace::level_of(hz) <= level) out.insert(hz >> space.bits_per_block());
      }
  return out;
}

Box random_box(std::mt19937& rng, Point dims) {
  Box b;
  for (int a = 0; a < 3; ++a) {
    std::uniform_int_distribution<int64_t> d(0, dims[a] - 1);
    int64_t p = d(rng), q = d(rng);
    b.lo[a] = std::min(p, q);
    b.hi[a] = std::max(p, q) + 1;
  }
  return b;
}

TEST(ReadPlan, WantedHoldsExactlyTheBlocksOfEachRequestAndWhoAsked) {
  const Point dims{32, 24, 20};
  const format::IdxFile idx = make_idx(dims, 6, 8, 2);
  const hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<ReadRequest> req(5);
    for (int r = 0; r < 5; ++r) {
      if (r == 2) continue;  // rank 2 asks for nothing
      req[r] = {r % 2, trial % 3, static_cast<int>(rng() % (space.max_level() + 1)), random_box(rng, dims), false};
    }
    const ReadPlan plan = plan_read(idx, space, req, {256, 256}, true, 1 << 20, ReadMethod::kAuto);
    std::map<BlockKey, std::vector<int>> expect;
    int64_t asked = 0;
    for (int r = 0; r < 5; ++r) {
      if (req[r].empty) continue;
      for (uint64_t b : blocks_by_sample(space, req[r].box, req[r].level)) {
        expect[{req[r].field, req[r].time, b}].push_back(r);
        ++asked;
      }
    }
    EXPECT_EQ(plan.wanted, expect) << "trial " << trial;
    EXPECT_EQ(plan.asked, asked);
    // One node: the ranks share the page cache, so auto never picks two-phase.
    EXPECT_EQ(plan.method, ReadMethod::kIndependent);
    EXPECT_TRUE(plan.rounds.empty());
  }
}

TEST(ReadPlan, AutoPicksTwoPhaseOnlyAcrossNodesForOverlappingRequests) {
  const Point dims{32, 32, 32};
  const format::IdxFile idx = make_idx(dims, 6, 8, 1);
  const hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  const Box all{{0, 0, 0}, dims};
  const int fine = space.max_level();
  const std::vector<ReadRequest> same(4, ReadRequest{0, 0, fine, all, false});
  std::vector<ReadRequest> disjoint;
  for (int r = 0; r < 4; ++r) disjoint.push_back({0, 0, fine, Box{{0, 0, 8 * r}, {32, 32, 8 * r + 8}}, false});
  EXPECT_EQ(plan_read(idx, space, same, {256}, false, 1 << 20, ReadMethod::kAuto).method, ReadMethod::kTwoPhase);
  EXPECT_EQ(plan_read(idx, space, same, {256}, true, 1 << 20, ReadMethod::kAuto).method, ReadMethod::kIndependent);
  EXPECT_EQ(plan_read(idx, space, disjoint, {256}, false, 1 << 20, ReadMethod::kAuto).method, ReadMethod::kIndependent);
  EXPECT_EQ(plan_read(idx, space, {same[0]}, {256}, false, 1 << 20, ReadMethod::kAuto).method,
            ReadMethod::kIndependent);
  // An explicit method is kept.
  EXPECT_EQ(plan_read(idx, space, disjoint, {256}, true, 1 << 20, ReadMethod::kTwoPhase).method, ReadMethod::kTwoPhase);
}

TEST(ReadPlan, TwoPhaseRoundsCoverEveryBlockOnceAndKeepEachReaderUnderTheBudget) {
  const Point dims{64, 32, 32};
  const format::IdxFile idx = make_idx(dims, 8, 4, 2);
  const hzorder::HzSpace space(idx.bitmask, idx.bits_per_block);
  std::mt19937 rng(11);
  const std::vector<int64_t> block_bytes{1024, 2048};
  for (size_t budget : {size_t{1}, size_t{4096}, size_t{20000}, size_t{1} << 30}) {
    std::vector<ReadRequest> req;
    for (int r = 0; r < 6; ++r) req.push_back({r % 2, 0, space.max_level(), random_box(rng, dims), r == 4});
    const ReadPlan plan = plan_read(idx, space, req, block_bytes, false, budget, ReadMethod::kTwoPhase);
    ASSERT_FALSE(plan.rounds.empty());
    std::set<BlockKey> moved;
    for (const auto& round : plan.rounds) {
      std::map<int, int64_t> load;  // reader -> bytes it sends this round
      for (const BlockKey& k : round) {
        EXPECT_TRUE(moved.insert(k).second) << "block " << k.block << " moved twice";
        const FileKey file{k.time, format::first_block_of_file(idx, static_cast<int64_t>(k.block))};
        ASSERT_TRUE(plan.reader.count(file));
        load[plan.reader.at(file)] += block_bytes[k.field] * static_cast<int64_t>(plan.wanted.at(k).size());
      }
      // Over budget only when a reader's first block alone exceeds it.
      for (const auto& [reader, bytes] : load)
        if (bytes > static_cast<int64_t>(budget)) {
          int mine = 0;
          for (const BlockKey& k : round)
            if (plan.reader.at(file_of(idx, k)) == reader) ++mine;
          EXPECT_EQ(mine, 1) << "budget " << budget;
        }
    }
    std::set<BlockKey> wanted;
    for (const auto& [k, ranks] : plan.wanted) wanted.insert(k);
    EXPECT_EQ(moved, wanted);
    // Every file has one reader, and the readers take turns over the files.
    std::vector<int> readers;
    for (const auto& [file, r] : plan.reader) readers.push_back(r);
    for (size_t i = 0; i < readers.size(); ++i) EXPECT_EQ(readers[i], static_cast<int>(i % 6));
  }
}

}  // namespace
}  // namespace hzio::parallel
