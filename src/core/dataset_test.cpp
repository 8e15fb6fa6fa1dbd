// Tests for the one-process Dataset against a plain in-memory oracle.
#include "hzio/dataset.hpp"

#include "hzio/testing.hpp"
#include "io/posix_file.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

namespace hzio {
namespace {

std::string temp_path(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("hzio_core_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return (d / name).string();
}

CreateOptions options_3d(Point dims, const std::string& codec, Layout layout, int bpb, int64_t bpf) {
  CreateOptions o;
  o.dims = {dims[0], dims[1], dims[2]};
  o.fields = {{"a", {Scalar::kFloat32, 1}, codec, layout, 0}};
  o.bits_per_block = bpb;
  o.blocks_per_file = bpf;
  o.overwrite = true;
  return o;
}

std::vector<float> ramp(const Point& d) {
  std::vector<float> v(static_cast<size_t>(d[0] * d[1] * d[2]));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f + 1.0f;
  return v;
}

TEST(Dataset, FullWriteThenFullReadReturnsTheSameArray) {
  for (Layout layout : {Layout::kHzOrder, Layout::kRowMajor}) {
    for (const char* codec : {"raw", "zip", "lz4"}) {
      const Point dims{13, 7, 5};
      const std::string path = temp_path("full.idx");
      auto v = ramp(dims);
      {
        auto ds = Dataset::create(path, options_3d(dims, codec, layout, 4, 3)).value();
        ASSERT_TRUE(ds->write_box({{0, 0, 0}, dims}, "a", 0, v.data(), v.size() * 4).is_ok());
        ASSERT_TRUE(ds->close().is_ok());
      }
      auto ds = Dataset::open(path).value();
      std::vector<float> out(v.size());
      ASSERT_TRUE(ds->read_box({{0, 0, 0}, dims}, -1, "a", 0, out.data(), out.size() * 4).is_ok());
      EXPECT_EQ(out, v) << codec;
    }
  }
}

TEST(Dataset, CoarseReadsReturnTheSourceSampledAtTheLevelSpacing) {
  const Point dims{16, 12, 9};
  const std::string path = temp_path("coarse.idx");
  auto v = ramp(dims);
  auto ds = Dataset::create(path, options_3d(dims, "zip", Layout::kHzOrder, 5, 4)).value();
  ASSERT_TRUE(ds->write_box({{0, 0, 0}, dims}, "a", 0, v.data(), v.size() * 4).is_ok());
  ASSERT_TRUE(ds->flush().is_ok());
  std::mt19937 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    Box box;
    for (int a = 0; a < 3; ++a) {
      box.lo[a] = std::uniform_int_distribution<int64_t>(0, dims[a] - 1)(rng);
      box.hi[a] = std::uniform_int_distribution<int64_t>(box.lo[a] + 1, dims[a])(rng);
    }
    const int level = std::uniform_int_distribution<int>(0, ds->max_level())(rng);
    SampleGrid g = ds->level_grid(box, level).value();
    std::vector<float> out(static_cast<size_t>(g.sample_count()));
    ASSERT_TRUE(ds->read_box(box, level, "a", 0, out.data(), out.size() * 4).is_ok());
    for (int64_t z = 0; z < g.count[2]; ++z)
      for (int64_t y = 0; y < g.count[1]; ++y)
        for (int64_t x = 0; x < g.count[0]; ++x) {
          const int64_t px = g.origin[0] + x * g.spacing[0], py = g.origin[1] + y * g.spacing[1],
                        pz = g.origin[2] + z * g.spacing[2];
          ASSERT_EQ(out[static_cast<size_t>((z * g.count[1] + y) * g.count[0] + x)],
                    v[static_cast<size_t>((pz * dims[1] + py) * dims[0] + px)]);
        }
  }
}

TEST(Dataset, PartialWritesMergeWithWhatIsStored) {
  const Point dims{20, 10, 6};
  const std::string path = temp_path("partial.idx");
  std::vector<float> oracle(static_cast<size_t>(dims[0] * dims[1] * dims[2]), 0.0f);
  std::mt19937 rng(5);
  for (int round = 0; round < 2; ++round) {
    auto ds = round == 0 ? Dataset::create(path, options_3d(dims, "lz4", Layout::kHzOrder, 4, 2)).value()
                         : Dataset::open(path, {.writable = true}).value();
    for (int w = 0; w < 6; ++w) {
      Box box;
      for (int a = 0; a < 3; ++a) {
        box.lo[a] = std::uniform_int_distribution<int64_t>(0, dims[a] - 1)(rng);
        box.hi[a] = std::uniform_int_distribution<int64_t>(box.lo[a] + 1, dims[a])(rng);
      }
      std::vector<float> data(static_cast<size_t>(box.sample_count()));
      for (auto& x : data) x = static_cast<float>(rng() % 1000);
      size_t k = 0;
      for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
        for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
          for (int64_t x = box.lo[0]; x < box.hi[0]; ++x)
            oracle[static_cast<size_t>((z * dims[1] + y) * dims[0] + x)] = data[k++];
      ASSERT_TRUE(ds->write_box(box, "a", 0, data.data(), data.size() * 4).is_ok());
    }
    ASSERT_TRUE(ds->close().is_ok());
  }
  auto ds = Dataset::open(path).value();
  std::vector<float> out(oracle.size());
  ASSERT_TRUE(ds->read_box({{0, 0, 0}, dims}, -1, "a", 0, out.data(), out.size() * 4).is_ok());
  EXPECT_EQ(out, oracle);
}

// Durable writes go to disk with direct I/O from staging buffers (pages of the log written whole, the
// last one padded and cut at commit); others through the page cache. Both must leave the same bytes,
// and reads of not yet committed blocks must see them, whichever buffer holds them.
TEST(Dataset, DirectAndPageCacheWritersLeaveIdenticalFiles) {
  const Point dims{40, 33, 21};
  const size_t n = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
  std::map<std::string, std::vector<char>> files[2];
  for (int durable = 0; durable < 2; ++durable) {
    const std::string path = temp_path(durable ? "direct/d.idx" : "cached/d.idx");
    CreateOptions o = options_3d(dims, "raw", Layout::kHzOrder, 9, 5);
    o.fields.push_back({"b", {Scalar::kFloat64, 1}, "zip", Layout::kHzOrder, 0});  // compressed, same files
    o.fields.push_back({"c", {Scalar::kInt16, 1}, "raw", Layout::kRowMajor, 0});
    o.times = {0, 1};
    std::vector<float> a(n, 0.0f);
    std::vector<double> b(n, 0.0);
    std::vector<int16_t> c(n, 0);
    std::mt19937 rng(17);
    for (int round = 0; round < 2; ++round) {
      auto ds = round == 0 ? Dataset::create(path, o, {.writable = true, .durable = durable == 1}).value()
                           : Dataset::open(path, {.writable = true, .durable = durable == 1}).value();
      for (int w = 0; w < 5; ++w) {
        Box box{{0, 0, 0}, dims};
        if (w > 0) {  // the first write covers everything, later ones merge partial boxes
          for (int ax = 0; ax < 3; ++ax) {
            box.lo[ax] = std::uniform_int_distribution<int64_t>(0, dims[ax] - 1)(rng);
            box.hi[ax] = std::uniform_int_distribution<int64_t>(box.lo[ax] + 1, dims[ax])(rng);
          }
        }
        std::vector<float> da;
        std::vector<double> db;
        std::vector<int16_t> dc;
        for (int64_t z = box.lo[2]; z < box.hi[2]; ++z)
          for (int64_t y = box.lo[1]; y < box.hi[1]; ++y)
            for (int64_t x = box.lo[0]; x < box.hi[0]; ++x) {
              const size_t i = static_cast<size_t>((z * dims[1] + y) * dims[0] + x);
              a[i] = static_cast<float>(rng() % 1000);
              b[i] = static_cast<double>(rng() % 50) * 0.25;
              c[i] = static_cast<int16_t>(rng() % 30000);
              da.push_back(a[i]);
              db.push_back(b[i]);
              dc.push_back(c[i]);
            }
        ASSERT_TRUE(ds->write_box(box, "a", round, da.data(), da.size() * 4).is_ok());
        ASSERT_TRUE(ds->write_box(box, "b", round, db.data(), db.size() * 8).is_ok());
        ASSERT_TRUE(ds->write_box(box, "c", round, dc.data(), dc.size() * 2).is_ok());
        // Uncommitted blocks read back as written.
        std::vector<float> ra(n);
        std::vector<double> rb(n);
        std::vector<int16_t> rc(n);
        ASSERT_TRUE(ds->read_box({{0, 0, 0}, dims}, -1, "a", round, ra.data(), n * 4).is_ok());
        ASSERT_TRUE(ds->read_box({{0, 0, 0}, dims}, -1, "b", round, rb.data(), n * 8).is_ok());
        ASSERT_TRUE(ds->read_box({{0, 0, 0}, dims}, -1, "c", round, rc.data(), n * 2).is_ok());
        ASSERT_EQ(ra, a) << "durable " << durable << " round " << round << " write " << w;
        ASSERT_EQ(rb, b);
        ASSERT_EQ(rc, c);
        if (w == 2) {  // a commit in between: later writes rebuild files
          ASSERT_TRUE(ds->flush().is_ok());
        }
      }
      ASSERT_TRUE(ds->close().is_ok());
    }
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(path).parent_path())) {
      if (!e.is_regular_file() || e.path().extension() == ".idx") continue;
      std::ifstream in(e.path(), std::ios::binary);
      files[durable][std::filesystem::relative(e.path(), std::filesystem::path(path).parent_path()).string()] =
          std::vector<char>(std::istreambuf_iterator<char>(in), {});
    }
  }
  ASSERT_GT(files[0].size(), 2u);
  ASSERT_EQ(files[0].size(), files[1].size());
  for (const auto& [name, bytes] : files[0]) EXPECT_TRUE(files[1].count(name) && files[1][name] == bytes) << name;
}

// A write that fails on the disk (here: the test hook's full disk, hit by a writer thread's direct
// write) fails the call and discards the uncommitted writes; what was committed before stays.
TEST(Dataset, AFailedDirectWriteLeavesTheCommittedDataIntact) {
  const Point dims{128, 128, 64};
  const size_t n = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
  const std::string path = temp_path("direct_fail/d.idx");
  std::vector<float> first = ramp(dims), second(n, -1.0f);
  auto ds = Dataset::create(path, options_3d(dims, "raw", Layout::kHzOrder, 12, 256)).value();  // one file
  ASSERT_TRUE(ds->write_box({{0, 0, 0}, dims}, "a", 0, first.data(), n * 4).is_ok());
  ASSERT_TRUE(ds->flush().is_ok());
  // The write may return before its bytes reach the disk; the failure shows at the latest in the commit.
  ASSERT_TRUE(testing::inject_fault(*ds, "write", "", 28, int64_t{1} << 20).is_ok());  // ENOSPC
  Status s = ds->write_box({{0, 0, 0}, dims}, "a", 0, second.data(), n * 4);
  std::vector<float> out(n);
  if (s.is_ok()) {  // a read meets the failure first: the commit must still refuse the damaged log
    const Status r = ds->read_box({{0, 0, 0}, dims}, -1, "a", 0, out.data(), n * 4);
    testing::clear_fault(*ds);
    if (r.is_ok()) {
      EXPECT_EQ(out, second);
    }
    s = ds->flush();
  }
  testing::clear_fault(*ds);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("disk full"), std::string::npos) << s.to_string();
  ASSERT_TRUE(ds->read_box({{0, 0, 0}, dims}, -1, "a", 0, out.data(), n * 4).is_ok());
  EXPECT_EQ(out, first);
  ASSERT_TRUE(ds->close().is_ok());
  auto back = Dataset::open(path).value();
  ASSERT_TRUE(back->read_box({{0, 0, 0}, dims}, -1, "a", 0, out.data(), n * 4).is_ok());
  EXPECT_EQ(out, first);
}

TEST(ReadBuffer, StartsOnAPageAndHoldsWhatWasAskedFor) {
  for (size_t bytes : {size_t{1}, size_t{5000}, size_t{3} << 20, (size_t{9} << 20) + 7}) {
    ReadBuffer b(bytes);
    EXPECT_EQ(b.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 4096, 0u) << bytes;
    std::memset(b.data(), 0x5a, bytes);
    EXPECT_EQ(b.data()[bytes - 1], std::byte{0x5a});
  }
}

TEST(Dataset, ProgressiveReadNeverReadsABlockTwiceAndEndsAtFullResolution) {
  const Point dims{32, 32, 32};
  const std::string path = temp_path("prog.idx");
  auto v = ramp(dims);
  auto ds = Dataset::create(path, options_3d(dims, "raw", Layout::kHzOrder, 6, 8)).value();
  ASSERT_TRUE(ds->write_box({{0, 0, 0}, dims}, "a", 0, v.data(), v.size() * 4).is_ok());
  ASSERT_TRUE(ds->flush().is_ok());
  auto p = ProgressiveRead::start(*ds, {{0, 0, 0}, dims}, "a", 0, {0, 3, 6, 9, 12, 15}).value();
  int64_t blocks = 0;
  std::vector<float> out;
  while (!p->done()) {
    SampleGrid g = p->next_grid().value();
    out.assign(static_cast<size_t>(g.sample_count()), 0);
    ReadReport r;
    ASSERT_TRUE(p->next(out.data(), out.size() * 4, &r).is_ok());
    blocks += r.blocks_read;
  }
  EXPECT_EQ(out, v);
  EXPECT_EQ(blocks, ds->block_count());
}

TEST(Dataset, MissingBlocksReadAsTheDefaultValue) {
  const Point dims{16, 16, 1};
  CreateOptions o;
  o.dims = {16, 16};
  o.fields = {{"d", {Scalar::kUint8, 1}, "raw", Layout::kHzOrder, 7}};
  o.bits_per_block = 4;
  o.overwrite = true;
  const std::string path = temp_path("missing.idx");
  auto ds = Dataset::create(path, o).value();
  std::vector<uint8_t> one(4, 1);
  ASSERT_TRUE(ds->write_box({{0, 0, 0}, {2, 2, 1}}, "d", 0, one.data(), 4).is_ok());
  ASSERT_TRUE(ds->close().is_ok());
  auto r = Dataset::open(path).value();
  std::vector<uint8_t> out(256);
  ASSERT_TRUE(r->read_box({{0, 0, 0}, dims}, -1, "d", 0, out.data(), 256).is_ok());
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[17], 1);
  EXPECT_EQ(out[2], 7);
  EXPECT_EQ(out[255], 7);
}

TEST(Dataset, WritesOfTheWrongSizeOrOutsideTheBoxAreRejected) {
  const std::string path = temp_path("bad.idx");
  auto ds = Dataset::create(path, options_3d({8, 8, 8}, "raw", Layout::kHzOrder, 0, 0)).value();
  std::vector<float> v(8);
  EXPECT_EQ(ds->write_box({{0, 0, 0}, {2, 2, 2}}, "a", 0, v.data(), 4).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ds->write_box({{7, 0, 0}, {9, 2, 2}}, "a", 0, v.data(), 32).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ds->write_box({{0, 0, 0}, {2, 2, 2}}, "nope", 0, v.data(), 32).code(), ErrorCode::kNotFound);
  EXPECT_EQ(ds->write_box({{0, 0, 0}, {2, 2, 2}}, "a", 3, v.data(), 32).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace hzio
