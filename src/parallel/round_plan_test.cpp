// Tests for the plan of one collective write round (no MPI needed: every rank's plan is computed here,
// and the plans must agree with each other and with a brute-force count of the records each block gets).
#include "parallel/round_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <tuple>

#include "format/file_name.hpp"
#include "parallel/plan_test_util.hpp"

namespace hzio::parallel {
namespace {

using testing::make_idx;

// Record shapes chosen to exercise every case: some whole blocks large enough to travel detached.
RecordShape stub_shape(int field, const Box& box, uint64_t block) {
  RecordShape s;
  s.whole = (block + static_cast<uint64_t>(box.lo[2])) % 3 != 1;
  s.samples = s.whole ? kDetachedBlockBytes + 8 * block + 4 * static_cast<uint64_t>(field) : 100 + block % 50;
  s.stats = s.whole ? 48 : 0;
  return s;
}

// Two fields (field 0 raw), two timesteps, `ranks` ranks, and the write plan of their boxes.
struct WriteCase {
  WriteCase(int ranks, uint32_t seed, size_t budget);
  format::IdxFile idx = make_idx({32, 32, 32}, 7, 8, 2);
  hzorder::HzSpace space{idx.bitmask, idx.bits_per_block};
  std::vector<BoxInfo> boxes;
  int ranks;
  WritePlan plan;
  std::vector<bool> raw{true, false};
};

WriteCase::WriteCase(int ranks_, uint32_t seed, size_t budget) : ranks(ranks_) {
  const Point dims{32, 32, 32};
  std::mt19937 rng(seed);
  // Each rank holds a z-slab, cut in two boxes for field 0, and one box of field 1 at a second timestep;
  // rank 1 stages nothing.
  for (int r = 0; r < ranks; ++r) {
    if (r == 1) continue;
    const int64_t z0 = dims[2] * r / ranks, z1 = dims[2] * (r + 1) / ranks;
    const int64_t y = 1 + static_cast<int64_t>(rng() % 30);
    boxes.push_back({r, 0, 0, Box{{0, 0, z0}, {32, y, z1}}});
    boxes.push_back({r, 0, 0, Box{{0, y, z0}, {32, 32, z1}}});
    boxes.push_back({r, 1, 5, Box{{0, 0, z0}, {32, 32, z1}}});
  }
  PlanOptions options;
  options.aggregator_bytes = budget;
  std::vector<int64_t> block_bytes{int64_t{4} << 7, int64_t{4} << 7};
  plan = make_write_plan(idx, space, boxes, ranks, options, block_bytes);
}

OwnBoxes own_boxes(const std::vector<BoxInfo>& boxes, int rank) {
  OwnBoxes own{boxes.size(), 0};
  for (size_t i = 0; i < boxes.size(); ++i)
    if (boxes[i].rank == rank) {
      own.first = std::min(own.first, i);
      ++own.count;
    }
  if (own.count == 0) own.first = 0;
  return own;
}

// The chunk of `round` holding (field, block) at `time`, by a scan of the chunks, or -1.
int chunk_of(const WriteCase& s, const std::vector<int>& round, int field, int64_t time, uint64_t block) {
  for (int c : round) {
    const Chunk& ch = s.plan.chunks[static_cast<size_t>(c)];
    const int64_t entry = format::entry_in_file(s.idx, field, block);
    if (ch.time == time && ch.first_block == format::first_block_of_file(s.idx, static_cast<int64_t>(block)) &&
        entry >= ch.entry_begin && entry < ch.entry_end)
      return c;
  }
  return -1;
}

void check_round(const WriteCase& s, const std::vector<int>& round) {
  std::vector<RoundPlan> plans;
  for (int r = 0; r < s.ranks; ++r)
    plans.push_back(plan_round(s.idx, s.plan, round, s.boxes, own_boxes(s.boxes, r), r, s.ranks, s.raw, stub_shape));
  // Brute force: the records every (chunk, entry) of the round gets, and who makes each, in order.
  std::map<std::pair<int, int64_t>, int> records;
  std::vector<std::vector<std::tuple<int, size_t, uint64_t>>> expect(s.ranks);  // per rank: (dest, box, block)
  for (size_t i = 0; i < s.boxes.size(); ++i) {
    const BoxInfo& b = s.boxes[i];
    for (uint64_t block : s.space.blocks_of_box(b.box, 0, s.space.max_level())) {
      const int c = chunk_of(s, round, b.field, b.time, block);
      if (c < 0) continue;
      ++records[{c, format::entry_in_file(s.idx, b.field, block)}];
      expect[b.rank].push_back({s.plan.chunks[static_cast<size_t>(c)].aggregator, i, block});
    }
  }
  for (int r = 0; r < s.ranks; ++r) {
    const RoundPlan& p = plans[r];
    // The items are this rank's records, by destination, each in staging order.
    std::vector<std::tuple<int, size_t, uint64_t>> got;
    for (const auto& item : p.items) got.push_back({item.dest, item.box, item.block});
    std::stable_sort(expect[r].begin(), expect[r].end(),
                     [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    EXPECT_EQ(got, expect[r]) << "rank " << r;
    // Detached: a large whole block of a raw field, its block's only record in the round.
    int64_t end = 0;
    for (const auto& item : p.items) {
      const BoxInfo& b = s.boxes[item.box];
      const RecordShape shape = stub_shape(b.field, b.box, item.block);
      const int c = chunk_of(s, round, b.field, b.time, item.block);
      const bool detached = shape.whole && shape.samples >= kDetachedBlockBytes && s.raw[b.field] &&
                            records[{c, format::entry_in_file(s.idx, b.field, item.block)}] == 1;
      EXPECT_EQ(item.detached, detached);
      EXPECT_EQ(item.bulk_at, end) << "records are packed back to back";
      end += static_cast<int64_t>(shape.bulk_bytes(detached));
      EXPECT_EQ(item.data_bytes, detached ? static_cast<int64_t>(shape.samples) : 0);
      if (detached) {
        EXPECT_EQ(item.data_at % 8, 0);
      }
    }
    EXPECT_EQ(p.send_bulk.back(), end);
    EXPECT_GE(p.send_bytes, end);
    // What this rank sends to each other rank is what that rank expects from it.
    for (int q = 0; q < s.ranks; ++q) {
      if (q == r) continue;
      EXPECT_EQ(p.send_bulk[q + 1] - p.send_bulk[q], plans[q].recv_bulk[r + 1] - plans[q].recv_bulk[r])
          << r << " -> " << q;
      std::vector<std::pair<int64_t, int64_t>> sent, expected;
      for (const auto& item : p.items)
        if (item.detached && item.dest == q) {
          const BoxInfo& b = s.boxes[item.box];
          sent.push_back({format::entry_in_file(s.idx, b.field, item.block), item.data_bytes});
        }
      for (const auto& in : plans[q].incoming)
        if (in.source == r) expected.push_back({in.entry, in.bytes});
      EXPECT_EQ(sent, expected) << r << " -> " << q;
    }
    // An aggregator's entries: every entry of its chunk that some rank's box touches.
    std::set<int64_t> entries;
    for (const auto& [key, n] : records)
      if (s.plan.chunks[static_cast<size_t>(key.first)].aggregator == r) entries.insert(key.second);
    EXPECT_EQ(std::vector<int64_t>(entries.begin(), entries.end()), p.entries) << "rank " << r;
    if (p.chunk < 0) {
      EXPECT_TRUE(entries.empty()) << "rank " << r;
    }
    if (p.chunk >= 0) {
      EXPECT_EQ(s.plan.chunks[static_cast<size_t>(p.chunk)].aggregator, r);
    }
  }
}

TEST(RoundPlan, EveryRanksPlanAgreesWithTheOthersAndWithABruteForceCount) {
  for (int ranks : {1, 2, 3, 5}) {
    for (size_t budget : {size_t{4} << 10, size_t{1} << 20}) {
      const WriteCase s(ranks, 3 + static_cast<uint32_t>(ranks), budget);
      ASSERT_FALSE(s.plan.rounds.empty());
      for (const auto& round : s.plan.rounds) check_round(s, round);
    }
  }
}

TEST(RoundPlan, AdoptedBoxesAreMadeOnceBySameNodeAggregatorsAndSendsStillMatchReceives) {
  for (const auto& [ranks, nodes] : {std::pair{3, 1}, std::pair{5, 1}, std::pair{5, 2}}) {
    const WriteCase s(ranks, 7 + static_cast<uint32_t>(ranks), size_t{1} << 20);
    // One node, or two (the first half of the ranks, the rest); the even ranks' boxes are adopted.
    Adoption adoption;
    std::vector<char> rank_adopted;
    for (int r = 0; r < ranks; ++r) {
      adoption.node_of.push_back(nodes == 2 && r >= (ranks + 1) / 2 ? 1 : 0);
      rank_adopted.push_back(static_cast<char>(r % 2 == 0));
    }
    for (const BoxInfo& b : s.boxes) adoption.adopted.push_back(rank_adopted[static_cast<size_t>(b.rank)]);
    int adopted_items = 0;
    for (const auto& round : s.plan.rounds) {
      std::vector<RoundPlan> plans;
      for (int r = 0; r < ranks; ++r)
        plans.push_back(
            plan_round(s.idx, s.plan, round, s.boxes, own_boxes(s.boxes, r), r, ranks, s.raw, stub_shape, &adoption));
      // Every record of the round (box, block, its chunk's aggregator), by brute force, made exactly once:
      // by the aggregator itself when the box is adopted and on its node, else by the box's rank.
      std::multiset<std::tuple<size_t, uint64_t, int>> made, expected;
      for (int r = 0; r < ranks; ++r)
        for (const auto& item : plans[static_cast<size_t>(r)].items) {
          made.insert({item.box, item.block, item.dest});
          const BoxInfo& b = s.boxes[item.box];
          const bool adopts = adoption.adopted[item.box] && adoption.node_of[static_cast<size_t>(b.rank)] ==
                                                                adoption.node_of[static_cast<size_t>(item.dest)];
          EXPECT_EQ(r, adopts ? item.dest : b.rank) << "box " << item.box;
          adopted_items += adopts && b.rank != r;
        }
      for (size_t i = 0; i < s.boxes.size(); ++i)
        for (uint64_t block : s.space.blocks_of_box(s.boxes[i].box, 0, s.space.max_level())) {
          const int c = chunk_of(s, round, s.boxes[i].field, s.boxes[i].time, block);
          if (c >= 0) expected.insert({i, block, s.plan.chunks[static_cast<size_t>(c)].aggregator});
        }
      EXPECT_EQ(made, expected);
      // What each rank sends another is what that one expects from it.
      for (int r = 0; r < ranks; ++r)
        for (int q = 0; q < ranks; ++q) {
          if (q == r) continue;
          const RoundPlan &p = plans[static_cast<size_t>(r)], &o = plans[static_cast<size_t>(q)];
          EXPECT_EQ(p.send_bulk[q + 1] - p.send_bulk[q], o.recv_bulk[r + 1] - o.recv_bulk[r]) << r << " -> " << q;
          std::vector<std::pair<int64_t, int64_t>> sent, wanted;
          for (const auto& item : p.items)
            if (item.detached && item.dest == q)
              sent.push_back({format::entry_in_file(s.idx, s.boxes[item.box].field, item.block), item.data_bytes});
          for (const auto& in : o.incoming)
            if (in.source == r) wanted.push_back({in.entry, in.bytes});
          EXPECT_EQ(sent, wanted) << r << " -> " << q;
        }
    }
    EXPECT_GT(adopted_items, 0) << ranks << " ranks on " << nodes
                                << " nodes: no box was adopted, the case tests nothing";
  }
}

std::tuple<int64_t, int64_t, int64_t> key_of(const WriteCase& s, const BoxInfo& b, uint64_t block) {
  return {b.time, format::first_block_of_file(s.idx, static_cast<int64_t>(block)),
          format::entry_in_file(s.idx, b.field, block)};
}

TEST(RoundPlan, ABlockWithSeveralRecordsNeverTravelsDetached) {
  const WriteCase s(3, 9, size_t{1} << 20);
  int detached = 0, shared = 0;
  for (const auto& round : s.plan.rounds) {
    std::map<std::tuple<int64_t, int64_t, int64_t>, int> makers;  // (time, file, entry) -> records
    std::vector<RoundPlan> plans;
    for (int r = 0; r < s.ranks; ++r)
      plans.push_back(plan_round(s.idx, s.plan, round, s.boxes, own_boxes(s.boxes, r), r, s.ranks, s.raw, stub_shape));
    for (int r = 0; r < s.ranks; ++r)
      for (const auto& item : plans[r].items) {
        const BoxInfo& b = s.boxes[item.box];
        ++makers[key_of(s, b, item.block)];
      }
    for (int r = 0; r < s.ranks; ++r)
      for (const auto& item : plans[r].items) {
        const BoxInfo& b = s.boxes[item.box];
        const int n = makers[key_of(s, b, item.block)];
        if (n > 1) {
          ++shared;
          EXPECT_FALSE(item.detached);
        }
        detached += item.detached;
      }
  }
  // The case must occur for the test to mean anything: the two field-0 boxes of a rank share blocks.
  EXPECT_GT(shared, 0);
  EXPECT_GT(detached, 0);
}

}  // namespace
}  // namespace hzio::parallel
