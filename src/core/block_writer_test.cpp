// Tests for the block write pipeline: blocks given or made, raw or compressed, come back from the data
// files exactly as written; statistics come with them; a missing block's base is the default value.
#include "core/block_writer.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "core/dataset_parts.hpp"

namespace hzio::core {
namespace {

std::unique_ptr<Dataset> make_dataset(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("hzio_block_writer_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  CreateOptions o;
  o.dims = {16, 16, 16};
  o.fields = {{"r", {Scalar::kFloat32, 1}, "raw", Layout::kHzOrder, 0},
              {"z", {Scalar::kInt16, 1}, "zip", Layout::kRowMajor, 7}};
  o.bits_per_block = 6;
  o.overwrite = true;
  o.sub_block_bits = 2;
  return Dataset::create((dir / name).string(), o).value();
}

std::vector<std::byte> random_bytes(size_t n, uint32_t seed, size_t sample_bytes) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; i += sample_bytes) {
    const float f = static_cast<float>(rng() % 1000) - 500.0f;  // finite values for either dtype
    if (sample_bytes == 4)
      std::memcpy(&v[i], &f, 4);
    else {
      const int16_t s = static_cast<int16_t>(f);
      std::memcpy(&v[i], &s, 2);
    }
  }
  return v;
}

TEST(BlockWriter, BlocksGivenOrMadeComeBackAsWrittenWithTheirStatistics) {
  auto ds = make_dataset("w.idx");
  DatasetParts d(*ds);
  BlockWriter writer = d.block_writer();
  const std::vector<std::byte> raw = random_bytes(writer.block_bytes(0), 1, 4);
  const std::vector<std::byte> zipped = random_bytes(writer.block_bytes(1), 2, 2);
  std::vector<BlockToWrite> records(3);
  records[0] = {.field = 0, .time = 0, .block = 1};
  records[0].make = [&](std::span<std::byte> out) {
    std::memcpy(out.data(), raw.data(), out.size());
    return Status::ok();
  };
  records[1] = {.field = 0, .time = 0, .block = 2, .samples = raw.data()};
  records[2] = {.field = 1, .time = 0, .block = 3, .samples = zipped.data()};
  auto slots = writer.reserve(records);
  ASSERT_TRUE(slots.is_ok()) << slots.status().to_string();
  ASSERT_TRUE(writer.write(records, slots.value()).is_ok());
  EXPECT_EQ(records[0].stored_bytes, static_cast<int64_t>(raw.size()));
  EXPECT_LT(records[2].stored_bytes, static_cast<int64_t>(zipped.size()) + 64);
  for (const BlockToWrite& r : records) {
    const std::vector<std::byte>& expected = r.field == 0 ? raw : zipped;
    ASSERT_TRUE(r.stats.has_value());
    const auto computed = stats::compute_block_stats(d.space, r.block, d.coding[r.field].layout, expected,
                                                     d.coding[r.field].dtype, d.idx.box, 2);
    EXPECT_EQ(r.stats->block.min, computed.block.min);
    EXPECT_EQ(r.stats->block.max, computed.block.max);
    EXPECT_EQ(r.stats->parts.size(), 4u);
  }
  for (const char* where : {"in the write log", "in the committed data file"}) {
    for (const BlockToWrite& r : records) {
      std::vector<std::byte> back(writer.block_bytes(r.field));
      ASSERT_TRUE(writer.base(r.field, 0, r.block, back).is_ok());
      EXPECT_EQ(back, r.field == 0 ? raw : zipped) << "block " << r.block << " " << where;
    }
    ASSERT_TRUE(ds->flush().is_ok());
  }
  std::vector<std::byte> missing(writer.block_bytes(1));
  ASSERT_TRUE(writer.base(1, 0, 5, missing).is_ok());
  for (size_t i = 0; i < missing.size(); i += 2) {
    int16_t v = 0;
    std::memcpy(&v, &missing[i], 2);
    ASSERT_EQ(v, 7) << "sample " << i / 2 << " of a missing block is not the default value";
  }
  ASSERT_TRUE(ds->close().is_ok());
}

TEST(BlockWriter, AMakeErrorFailsTheWriteAndNamesTheReason) {
  auto ds = make_dataset("e.idx");
  BlockWriter writer = DatasetParts(*ds).block_writer();
  std::vector<BlockToWrite> records(1);
  records[0] = {.field = 1, .time = 0, .block = 0};
  records[0].make = [](std::span<std::byte>) { return corrupt("the stored block is damaged"); };
  auto slots = writer.reserve(records);
  ASSERT_TRUE(slots.is_ok());
  const Status s = writer.write(records, slots.value());
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("damaged"), std::string::npos);
  ds->abandon();
}

}  // namespace
}  // namespace hzio::core
