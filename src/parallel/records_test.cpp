// Tests for records, without MPI: a box cut into records per block (pieces and whole blocks) against a
// brute-force walk over the block's hz addresses, and blocks assembled from the records of several
// boxes, written by write_chunk, against the same data written by the one-process writer (the files
// must be byte-identical).
#include "parallel/records.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <tuple>

#include "format/file_name.hpp"
#include "parallel/write_plan.hpp"
#include "stats/stats_file.hpp"

namespace hzio::parallel {
namespace {

constexpr Point kDims{20, 17, 13};
constexpr int kBitsPerBlock = 6;
constexpr float kDefault = -1.5f;

std::string temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / ("hzio_records_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::unique_ptr<Dataset> make_dataset(const std::string& name, const char* codec) {
  CreateOptions o;
  o.dims = {kDims[0], kDims[1], kDims[2]};
  o.fields = {{"v", {Scalar::kFloat32, 1}, codec, Layout::kHzOrder, kDefault}};
  o.bits_per_block = kBitsPerBlock;
  o.blocks_per_file = 4;
  o.sub_block_bits = 2;
  o.overwrite = true;
  return Dataset::create(temp_dir() + "/" + name, o).value();
}

std::vector<float> random_array(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(static_cast<size_t>(kDims[0] * kDims[1] * kDims[2]));
  for (float& x : v) x = static_cast<float>(rng() % 20000) / 7.0f - 1000.0f;
  return v;
}

float at(const std::vector<float>& a, const Point& p) {
  return a[static_cast<size_t>((p[2] * kDims[1] + p[1]) * kDims[0] + p[0])];
}

bool inside(const Box& b, const Point& p) {
  for (int i = 0; i < 3; ++i)
    if (p[i] < b.lo[i] || p[i] >= b.hi[i]) return false;
  return true;
}

std::vector<float> sub_array(const std::vector<float>& a, const Box& b) {
  std::vector<float> out;
  for (int64_t z = b.lo[2]; z < b.hi[2]; ++z)
    for (int64_t y = b.lo[1]; y < b.hi[1]; ++y)
      for (int64_t x = b.lo[0]; x < b.hi[0]; ++x) out.push_back(at(a, {x, y, z}));
  return out;
}

// The points of `block` (sample i at hz address block * 2^bpb + i) inside the dataset box.
std::vector<std::pair<uint64_t, Point>> points_of_block(const hzorder::HzSpace& space, uint64_t block) {
  std::vector<std::pair<uint64_t, Point>> out;
  const Box all{{0, 0, 0}, kDims};
  for (uint64_t i = 0; i < (uint64_t{1} << kBitsPerBlock); ++i) {
    const Point p = space.hz_to_point((block << kBitsPerBlock) + i);
    if (inside(all, p)) out.push_back({i, p});
  }
  return out;
}

std::vector<float> as_floats(const std::byte* p, uint64_t bytes) {
  std::vector<float> v(bytes / 4);
  std::memcpy(v.data(), p, bytes);
  return v;
}

TEST(Records, PiecesHoldTheBoxsSamplesOfTheBlockAndWholeBlocksAreInHzOrderWithTheirStatistics) {
  auto ds = make_dataset("cut.idx", "raw");
  core::DatasetParts d(*ds);
  const std::vector<float> array = random_array(3);
  std::mt19937 rng(5);
  int pieces = 0, wholes = 0;
  for (int trial = 0; trial < 12; ++trial) {
    Box box;
    for (int a = 0; a < 3; ++a) {
      const int64_t p = static_cast<int64_t>(rng() % static_cast<uint32_t>(kDims[a]));
      const int64_t q = static_cast<int64_t>(rng() % static_cast<uint32_t>(kDims[a]));
      box.lo[a] = std::min(p, q);
      box.hi[a] = std::max(p, q) + 1;
    }
    if (trial == 0) box = {{0, 0, 0}, kDims};  // every block whole
    const std::vector<float> data = sub_array(array, box);
    core::WriteTally tally(d.space.max_level());
    for (uint64_t block : d.space.blocks_of_box(box, 0, d.space.max_level())) {
      const RecordShape shape = record_shape(d, 0, box, block);
      std::vector<std::byte> buffer(shape.bytes());
      write_record(d, 0, 7, box, reinterpret_cast<const std::byte*>(data.data()), block, buffer.data(), nullptr, tally);
      std::vector<Record> records;
      ASSERT_TRUE(parse_records(buffer, records).is_ok());
      ASSERT_EQ(records.size(), 1u);
      const Record& r = records[0];
      EXPECT_EQ(r.header.field, 0);
      EXPECT_EQ(r.header.time, 7);
      EXPECT_EQ(r.header.block, block);
      const auto points = points_of_block(d.space, block);
      const bool whole =
          std::all_of(points.begin(), points.end(), [&](const auto& q) { return inside(box, q.second); });
      ASSERT_EQ(r.header.whole != 0, whole) << "block " << block;
      const std::vector<float> got = as_floats(r.data, r.header.bytes);
      if (whole) {
        ++wholes;
        // Sample i of the block is the array's value at its hz address, or the default value outside.
        std::vector<float> want(size_t{1} << kBitsPerBlock, kDefault);
        for (const auto& [i, p] : points) want[i] = at(array, p);
        EXPECT_EQ(got, want) << "block " << block;
        ASSERT_NE(r.stats, nullptr);
        stats::RangeStats st;
        stats::read_range_record(r.stats, st, 1);
        EXPECT_EQ(st.count, points.size());
        float lo = at(array, points[0].second), hi = lo;
        for (const auto& q : points) {
          lo = std::min(lo, at(array, q.second));
          hi = std::max(hi, at(array, q.second));
        }
        EXPECT_EQ(st.min[0], lo);
        EXPECT_EQ(st.max[0], hi);
      } else {
        ++pieces;
        // The block's points inside the box, ordered x fastest (a dense sub-grid of the block's grid).
        std::vector<Point> mine;
        for (const auto& q : points)
          if (inside(box, q.second)) mine.push_back(q.second);
        std::sort(mine.begin(), mine.end(), [](const Point& a, const Point& b) {
          return std::tie(a[2], a[1], a[0]) < std::tie(b[2], b[1], b[0]);
        });
        std::vector<float> want;
        for (const Point& p : mine) want.push_back(at(array, p));
        EXPECT_EQ(got, want) << "block " << block;
        EXPECT_EQ(r.stats, nullptr);
        int64_t n = 1;
        for (int a = 0; a < 3; ++a) n *= r.header.hi[a] - r.header.lo[a];
        EXPECT_EQ(static_cast<size_t>(n), mine.size());
      }
    }
  }
  EXPECT_GT(pieces, 0);
  EXPECT_GT(wholes, 0);
}

std::vector<char> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every file of one dataset's data folder, by name.
std::map<std::string, std::vector<char>> data_files(const std::string& idx_path) {
  std::map<std::string, std::vector<char>> out;
  const std::filesystem::path folder = std::filesystem::path(idx_path).replace_extension();
  for (const auto& e : std::filesystem::recursive_directory_iterator(folder))
    if (e.is_regular_file()) out[std::filesystem::relative(e.path(), folder).string()] = file_bytes(e.path());
  return out;
}

TEST(Records, BlocksAssembledFromSeveralBoxesWriteTheFilesTheOneProcessWriterWrites) {
  for (const char* codec : {"raw", "zip"}) {
    const std::vector<float> array = random_array(11);
    // Three "ranks": uneven z slabs, the middle one cut in two boxes, so that blocks get pieces from
    // up to four boxes, in rank order.
    const std::vector<BoxInfo> boxes = {{0, 0, 0, Box{{0, 0, 0}, {20, 17, 5}}},
                                        {1, 0, 0, Box{{0, 0, 5}, {20, 9, 9}}},
                                        {1, 0, 0, Box{{0, 9, 5}, {20, 17, 9}}},
                                        {2, 0, 0, Box{{0, 0, 9}, {20, 17, 13}}}};
    auto assembled = make_dataset(std::string("assembled_") + codec + ".idx", codec);
    core::DatasetParts d(*assembled);
    PlanOptions options;
    options.aggregator_bytes = 1024;  // several chunks per file
    const WritePlan plan = make_write_plan(d.idx, d.space, boxes, 3, options, {static_cast<int64_t>(d.block_bytes(0))});
    std::vector<std::vector<float>> data;
    for (const BoxInfo& b : boxes) data.push_back(sub_array(array, b.box));
    core::WriteTally tally(d.space.max_level());
    for (const auto& round : plan.rounds)
      for (int c : round) {
        const Chunk& chunk = plan.chunks[static_cast<size_t>(c)];
        // Every box's records for the chunk's entries, in box order, into one buffer.
        std::vector<std::byte> buffer;
        std::vector<int64_t> entries;
        for (size_t i = 0; i < boxes.size(); ++i)
          for (uint64_t block : *plan.box_blocks[i]) {
            const int64_t entry = format::entry_in_file(d.idx, 0, block);
            if (format::first_block_of_file(d.idx, static_cast<int64_t>(block)) != chunk.first_block ||
                entry < chunk.entry_begin || entry >= chunk.entry_end)
              continue;
            const RecordShape shape = record_shape(d, 0, boxes[i].box, block);
            const size_t at = buffer.size();
            buffer.resize(at + shape.bytes());
            write_record(d, 0, 0, boxes[i].box, reinterpret_cast<const std::byte*>(data[i].data()), block,
                         buffer.data() + at, nullptr, tally);
            entries.push_back(entry);
          }
        std::sort(entries.begin(), entries.end());
        entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
        std::vector<Record> records;
        ASSERT_TRUE(parse_records(buffer, records).is_ok());
        ChunkSlots slots;
        ASSERT_TRUE(reserve_chunk(d, chunk, entries, slots).is_ok());
        ASSERT_TRUE(write_chunk(d, chunk, records, slots, tally).is_ok()) << codec;
      }
    ASSERT_TRUE(assembled->flush().is_ok());
    std::vector<float> back(array.size());
    ASSERT_TRUE(assembled->read_box({{0, 0, 0}, kDims}, -1, "v", 0, back.data(), back.size() * 4).is_ok());
    EXPECT_EQ(back, array) << codec;
    // The one-process writer, given the same boxes, writes the same bytes.
    auto serial = make_dataset(std::string("serial_") + codec + ".idx", codec);
    for (size_t i = 0; i < boxes.size(); ++i)
      ASSERT_TRUE(serial->write_box(boxes[i].box, "v", 0, data[i].data(), data[i].size() * 4).is_ok());
    ASSERT_TRUE(serial->flush().is_ok());
    const auto want = data_files(temp_dir() + "/serial_" + codec + ".idx");
    const auto got = data_files(temp_dir() + "/assembled_" + codec + ".idx");
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(got, want) << codec;
  }
}

}  // namespace
}  // namespace hzio::parallel
