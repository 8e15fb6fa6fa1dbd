// Tests for value-range queries (Dataset::query, docs/design/read-path.md "Queries") against a brute-force
// scan of the same data held in memory: the matches, the mask, and which blocks statistics rule out.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "hzio/dataset.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("hzio_query_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

const Point kDims{20, 12, 9};
constexpr int kBitsPerBlock = 6;
constexpr int kSubBlockBits = 2;  // parts of 16 samples
constexpr double kMissingDefault = -5;

int64_t at(const Point& p) { return (p[2] * kDims[1] + p[1]) * kDims[0] + p[0]; }
bool in_box(const Point& p, const Box& b) {
  for (int a = 0; a < kMaxDims; ++a)
    if (p[a] < b.lo[a] || p[a] >= b.hi[a]) return false;
  return true;
}

// One field's samples as the test wrote them (the default where it wrote none), and which blocks it wrote.
struct Truth {
  std::string field;
  bool raw_hz = false;  // raw HZ-order blocks: the query reads only their matching parts
  std::vector<double> value;
  std::set<uint64_t> written_blocks;
};

// The dataset the queries run on: "t" (float32, raw, HZ order) and "z" (int16, zip, row-major) written
// whole, "m" (float32, raw, default -5) written in two boxes only, so that most of its blocks are missing.
class Query : public ::testing::Test {
 protected:
  void SetUp() override {
    CreateOptions o;
    o.dims = {kDims[0], kDims[1], kDims[2]};
    o.fields = {{"t", {Scalar::kFloat32, 1}, "raw", Layout::kHzOrder, 0},
                {"z", {Scalar::kInt16, 1}, "zip", Layout::kRowMajor, 0},
                {"m", {Scalar::kFloat32, 1}, "raw", Layout::kHzOrder, kMissingDefault}};
    o.bits_per_block = kBitsPerBlock;
    o.blocks_per_file = 16;
    o.overwrite = true;
    o.sub_block_bits = kSubBlockBits;
    ds_ = Dataset::create(temp_path("q.idx"), o).value();
    space_ = std::make_unique<hzorder::HzSpace>(format::Bitmask::parse(ds_->bitmask()).value(), kBitsPerBlock);
    std::mt19937 rng(3);
    // Values grow along the axes, so that the blocks of the finer levels hold narrow ranges.
    write("t", true, {{0, 0, 0}, kDims}, 0, [&](const Point& p) {
      return static_cast<double>(p[0] + 20 * p[1] + 300 * p[2] + static_cast<int64_t>(rng() % 8));
    });
    write("z", false, {{0, 0, 0}, kDims}, 0,
          [&](const Point& p) { return static_cast<double>((p[0] * p[1] + 7 * p[2]) % 200 - 100); });
    write("m", true, {{0, 0, 0}, {10, 6, 9}}, kMissingDefault,
          [&](const Point& p) { return static_cast<double>(p[0] * 10 + p[1] + static_cast<int64_t>(rng() % 3)); });
    write("m", true, {{15, 8, 0}, {20, 12, 4}}, kMissingDefault,
          [&](const Point& p) { return static_cast<double>(100 + p[0] + p[2]); });
    ASSERT_TRUE(ds_->flush().is_ok());  // queries see committed statistics only
  }

  template <class Fn>
  void write(const std::string& field, bool raw_hz, const Box& box, double default_value, Fn value_of) {
    Truth& t = truth_[field];
    if (t.value.empty()) t.value.assign(static_cast<size_t>(kDims[0] * kDims[1] * kDims[2]), default_value);
    t.field = field;
    t.raw_hz = raw_hz;
    const bool is_f32 = field != "z";
    std::vector<std::byte> data(static_cast<size_t>(box.sample_count()) * (is_f32 ? 4 : 2));
    size_t k = 0;
    for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
      for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
        for (int64_t x = box.lo[0]; x < box.hi[0]; ++x, ++k) {
          const Point p{x, y, z};
          const double v = value_of(p);
          t.value[static_cast<size_t>(at(p))] = v;
          t.written_blocks.insert(space_->point_to_hz(p) >> kBitsPerBlock);
          const float f = static_cast<float>(v);
          const int16_t s = static_cast<int16_t>(v);
          std::memcpy(&data[k * (is_f32 ? 4 : 2)], is_f32 ? static_cast<const void*>(&f) : &s, is_f32 ? 4 : 2);
        }
    ASSERT_TRUE(ds_->write_box(box, field, 0, data.data(), data.size()).is_ok());
  }

  // The spacing of resolution `level`: 2^(digits naming the axis at bitmask positions level+1..maxh)
  // (docs/format.md "Levels as grids").
  Point spacing(int level) const {
    Point s{1, 1, 1};
    const std::string& bits = ds_->bitmask();
    for (int k = level + 1; k <= ds_->max_level(); ++k) s[bits[static_cast<size_t>(k)] - '0'] *= 2;
    return s;
  }

  // Brute force: runs the query and checks its matches, mask and block counts against the scan. Adds to
  // the tallies that show the cases meant something.
  void check(const std::string& field, const Box& box, int level, double lo, double hi) {
    SCOPED_TRACE(field + " box " + box.to_string() + " level " + std::to_string(level) + " range [" +
                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
    const Truth& t = truth_.at(field);
    const Point s = spacing(level < 0 ? ds_->max_level() : level);
    std::vector<int64_t> points;
    std::vector<double> values;
    std::vector<uint8_t> mask;
    std::set<uint64_t> candidates, with_match;
    // The level's grid in the box, C order: the order of NumPy's nonzero() on read(box, level).
    for (int64_t z = (box.lo[2] + s[2] - 1) / s[2] * s[2]; z < box.hi[2]; z += s[2])
      for (int64_t y = (box.lo[1] + s[1] - 1) / s[1] * s[1]; y < box.hi[1]; y += s[1])
        for (int64_t x = (box.lo[0] + s[0] - 1) / s[0] * s[0]; x < box.hi[0]; x += s[0]) {
          const Point p{x, y, z};
          const double v = t.value[static_cast<size_t>(at(p))];
          const uint64_t block = space_->point_to_hz(p) >> kBitsPerBlock;
          candidates.insert(block);
          mask.push_back(v >= lo && v <= hi);
          if (!mask.back()) continue;
          points.insert(points.end(), {x, y, z});
          values.push_back(v);
          with_match.insert(block);
        }
    // Which present candidate blocks exact statistics rule out: every sample of the block inside the
    // dataset box out of range, or, for raw blocks with parts, every part's samples.
    int64_t present = 0, skipped = 0;
    const uint64_t n = uint64_t{1} << kBitsPerBlock, part = n >> kSubBlockBits;
    for (uint64_t b : candidates) {
      if (!t.written_blocks.count(b)) continue;
      ++present;
      // Per part (HZ order: sample i is address b * 2^bpb + i), [min, max] of its samples in the dataset.
      std::vector<double> pmin(size_t{1} << kSubBlockBits, INFINITY), pmax(pmin.size(), -INFINITY);
      for (uint64_t i = 0; i < n; ++i) {
        const Point p = space_->hz_to_point((b << kBitsPerBlock) + i);
        if (!in_box(p, ds_->box())) continue;
        const double v = t.value[static_cast<size_t>(at(p))];
        pmin[i / part] = std::min(pmin[i / part], v);
        pmax[i / part] = std::max(pmax[i / part], v);
      }
      double bmin = INFINITY, bmax = -INFINITY;
      bool any_part = false;
      for (size_t k = 0; k < pmin.size(); ++k) {
        bmin = std::min(bmin, pmin[k]);
        bmax = std::max(bmax, pmax[k]);
        any_part = any_part || (pmax[k] >= lo && pmin[k] <= hi);
      }
      const bool block_may = bmax >= lo && bmin <= hi;
      const bool rule_out = !block_may || (t.raw_hz && !any_part);
      // No false negatives: a block holding a match is never ruled out.
      ASSERT_FALSE(rule_out && with_match.count(b)) << "block " << b;
      skipped += rule_out;
      parts_only_ += rule_out && block_may;
    }

    QueryResult r;
    ASSERT_TRUE(ds_->query(box, level, field, 0, lo, hi, 0, false, &r).is_ok());
    EXPECT_EQ(r.points, points);
    std::vector<double> got;
    const size_t sb = field == "z" ? 2 : 4;
    for (size_t k = 0; k < r.values.size() / sb; ++k) {
      float f;
      int16_t i16;
      std::memcpy(sb == 2 ? static_cast<void*>(&i16) : &f, &r.values[k * sb], sb);
      got.push_back(sb == 2 ? i16 : f);
    }
    EXPECT_EQ(got, values);
    EXPECT_EQ(r.blocks_skipped, skipped);
    EXPECT_EQ(r.report.blocks_read, present - skipped);
    EXPECT_EQ(r.report.blocks_missing, 0);
    int64_t present_with_match = 0;
    for (uint64_t b : with_match) present_with_match += t.written_blocks.count(b);
    EXPECT_GE(r.report.blocks_read, present_with_match);

    QueryResult m;
    ASSERT_TRUE(ds_->query(box, level, field, 0, lo, hi, 0, true, &m).is_ok());
    EXPECT_EQ(std::vector<uint8_t>(m.mask.begin(), m.mask.end()), mask);
    EXPECT_TRUE(m.points.empty());
    EXPECT_EQ(m.blocks_skipped, skipped);
    skipped_ += skipped;
    matches_ += static_cast<int64_t>(values.size());
  }

  std::unique_ptr<Dataset> ds_;
  std::unique_ptr<hzorder::HzSpace> space_;
  std::map<std::string, Truth> truth_;
  int64_t skipped_ = 0, parts_only_ = 0, matches_ = 0;
};

const Box kAll{{0, 0, 0}, kDims};
const Box kSub{{3, 2, 1}, {17, 11, 7}};

TEST_F(Query, MatchesEqualABruteForceScanAtFullResolutionForManyRanges) {
  for (const std::string field : {"t", "z"}) {
    for (auto [lo, hi] : {std::pair{-1e9, 1e9}, {100.0, 400.0}, {2000.0, 2100.0}, {-20.0, 20.0}, {5000.0, 6000.0}}) {
      check(field, kAll, -1, lo, hi);
    }
  }
  // A range of one value: exactly the samples holding it.
  check("t", kAll, ds_->max_level(), truth_["t"].value[77], truth_["t"].value[77]);
  EXPECT_GT(matches_, 0);
  EXPECT_GT(skipped_, 0);
  EXPECT_GT(parts_only_, 0);  // raw blocks whose range meets the query's but none of whose parts do
}

TEST_F(Query, SubBoxesAndCoarseLevelsScanOnlyTheirGrid) {
  for (const std::string field : {"t", "z"}) {
    for (int level : {ds_->max_level(), ds_->max_level() - 2, kBitsPerBlock + 1, 3}) {
      for (auto [lo, hi] : {std::pair{-1e9, 1e9}, {300.0, 900.0}, {-50.0, 0.0}, {1500.0, 1510.0}}) {
        check(field, kSub, level, lo, hi);
        check(field, kAll, level, lo, hi);
      }
    }
  }
  EXPECT_GT(matches_, 0);
  EXPECT_GT(skipped_, 0);
}

TEST_F(Query, MissingBlocksMatchWhenTheRangeHoldsTheDefaultValue) {
  for (int level : {ds_->max_level(), ds_->max_level() - 1, 4}) {
    for (const Box& box : {kAll, kSub}) {
      for (auto [lo, hi] : {std::pair{-6.0, -4.0},  // the default only
                            {-5.0, 50.0},           // the default and some written values
                            {0.0, 50.0},            // written values only
                            {100.0, 130.0}}) {
        check("m", box, level, lo, hi);
      }
    }
  }
  EXPECT_GT(matches_, 0);
  EXPECT_GT(skipped_, 0);
}

TEST_F(Query, AnEmptyRangeOrAMissingComponentIsAnInvalidArgument) {
  QueryResult r;
  EXPECT_EQ(ds_->query(kAll, -1, "t", 0, 2, 1, 0, false, &r).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ds_->query(kAll, -1, "t", 0, 1, 2, 1, false, &r).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace hzio
