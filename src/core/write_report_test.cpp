// Tests for the write report of one process (Dataset::last_write_report, write_report.hpp): its byte and
// block counts equal what the written boxes imply, found by brute force over their samples' hz addresses.
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <filesystem>
#include <map>
#include <set>

#include "hzio/dataset.hpp"
#include "hzorder/hz_space.hpp"

namespace hzio {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("hzio_write_report_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

const Point kDims{20, 12, 9};
constexpr int kBitsPerBlock = 6;
constexpr int64_t kBlocksPerFile = 8;

// What a commit's writes imply: sample bytes handed to write_box, and per field the blocks they touch.
struct Expected {
  int64_t bytes = 0;
  std::map<std::string, std::set<uint64_t>> blocks;
};

class WriteReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CreateOptions o;
    o.dims = {kDims[0], kDims[1], kDims[2]};
    o.fields = {{"a", {Scalar::kFloat32, 1}, "raw", Layout::kHzOrder, 0},
                {"b", {Scalar::kUint8, 1}, "raw", Layout::kRowMajor, 0},
                {"c", {Scalar::kInt16, 1}, "zip", Layout::kHzOrder, 0}};
    o.bits_per_block = kBitsPerBlock;
    o.blocks_per_file = kBlocksPerFile;
    o.overwrite = true;
    ds_ = Dataset::create(temp_path("w.idx"), o).value();
    space_ = std::make_unique<hzorder::HzSpace>(format::Bitmask::parse(ds_->bitmask()).value(), kBitsPerBlock);
  }

  size_t sample_bytes(const std::string& field) const { return field == "a" ? 4 : field == "b" ? 1 : 2; }

  void write(const std::string& field, const Box& box, Expected& e) {
    std::vector<std::byte> data(static_cast<size_t>(box.sample_count()) * sample_bytes(field));
    for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 37 % 251);
    ASSERT_TRUE(ds_->write_box(box, field, 0, data.data(), data.size()).is_ok());
    e.bytes += static_cast<int64_t>(data.size());
    for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
      for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
        for (int64_t x = box.lo[0]; x < box.hi[0]; ++x)
          e.blocks[field].insert(space_->point_to_hz({x, y, z}) >> kBitsPerBlock);
  }

  // The level of a block (docs/format.md "Level of a block"): bpb for block 0, else bpb + 1 + floor(log2 b).
  static int level_of(uint64_t b) { return b == 0 ? kBitsPerBlock : kBitsPerBlock + std::bit_width(b); }

  // Checks the report of the last commit against `e`. Every block of `e` was written in that commit, so
  // the stored payload bytes are the sizes block_infos gives.
  void check(const Expected& e) {
    const WriteReport& r = ds_->last_write_report();
    EXPECT_EQ(r.bytes, e.bytes);
    std::map<int, int64_t> blocks, stored;
    std::set<uint64_t> files;
    int64_t file_bytes = 0;
    for (const auto& [field, set] : e.blocks) {
      auto infos = ds_->block_infos(field, 0);
      ASSERT_TRUE(infos.is_ok()) << infos.status().to_string();
      for (uint64_t b : set) {
        const BlockInfo& info = infos.value()[b];
        ASSERT_EQ(info.block, static_cast<int64_t>(b));
        ASSERT_GT(info.size, 0u) << field << " block " << b << " was written";
        if (field != "c") {  // a raw payload is the whole block
          EXPECT_EQ(info.size, (uint32_t{1} << kBitsPerBlock) * sample_bytes(field));
        }
        blocks[level_of(b)] += 1;
        stored[level_of(b)] += info.size;
        file_bytes += info.size;
        files.insert(b / kBlocksPerFile);  // every field's blocks share the data files
      }
    }
    std::map<int, int64_t> got_blocks, got_stored;
    for (const LevelTimes& l : r.levels) {
      got_blocks[l.level] = l.blocks;
      got_stored[l.level] = l.bytes;
    }
    EXPECT_EQ(got_blocks, blocks);
    EXPECT_EQ(got_stored, stored);
    EXPECT_EQ(r.file_bytes, file_bytes);
    EXPECT_EQ(r.files, static_cast<int64_t>(files.size()));
    EXPECT_EQ(r.ranks, 1);
    EXPECT_EQ(r.placement, "serial");
  }

  std::unique_ptr<Dataset> ds_;
  std::unique_ptr<hzorder::HzSpace> space_;
};

TEST_F(WriteReportTest, CountsTheSampleBytesAndEachTouchedBlockOnce) {
  Expected e;
  // Disjoint boxes: blocks covered whole, and blocks shared by several boxes (merged, written once).
  write("a", {{0, 0, 0}, {8, 8, 8}}, e);
  write("a", {{8, 0, 0}, {20, 5, 9}}, e);
  write("a", {{3, 9, 2}, {11, 12, 6}}, e);
  write("b", {{0, 0, 0}, kDims}, e);
  write("c", {{5, 5, 5}, {6, 6, 6}}, e);
  write("c", {{10, 0, 0}, {20, 12, 9}}, e);
  ASSERT_TRUE(ds_->flush().is_ok());
  check(e);
}

TEST_F(WriteReportTest, ASecondCommitReportsOnlyItsOwnWrites) {
  Expected first, second;
  write("a", {{0, 0, 0}, kDims}, first);
  ASSERT_TRUE(ds_->flush().is_ok());
  check(first);
  write("b", {{4, 4, 4}, {12, 10, 7}}, second);
  write("c", {{0, 0, 0}, {3, 3, 3}}, second);
  ASSERT_TRUE(ds_->flush().is_ok());
  check(second);
}

TEST_F(WriteReportTest, CloseReportsTheWritesItCommits) {
  Expected e;
  write("c", {{1, 2, 3}, {19, 11, 8}}, e);
  ASSERT_TRUE(ds_->close().is_ok());
  const WriteReport& r = ds_->last_write_report();
  EXPECT_EQ(r.bytes, e.bytes);
  int64_t blocks = 0;
  for (const LevelTimes& l : r.levels) blocks += l.blocks;
  EXPECT_EQ(blocks, static_cast<int64_t>(e.blocks["c"].size()));
}

TEST_F(WriteReportTest, ACommitWithNothingToWriteReportsNothing) {
  Expected e;
  write("a", {{2, 2, 2}, {9, 9, 9}}, e);
  ASSERT_TRUE(ds_->flush().is_ok());
  check(e);
  ASSERT_TRUE(ds_->flush().is_ok());  // nothing to commit
  const WriteReport& r = ds_->last_write_report();
  EXPECT_EQ(r.bytes, 0);
  EXPECT_EQ(r.file_bytes, 0);
  EXPECT_EQ(r.files, 0);
  EXPECT_TRUE(r.levels.empty());
}

}  // namespace
}  // namespace hzio
