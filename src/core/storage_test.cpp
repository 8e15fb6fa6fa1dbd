// Tests for reading datasets through another io::Storage than the local file system: a dataset copied
// into memory (under a root that does not exist on disk) reads as the written arrays, its checksums
// are checked, and it cannot be opened for writing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "core/dataset_parts.hpp"
#include "hzio/dataset.hpp"
#include "io/storage.hpp"

namespace hzio {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("hzio_storage_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* p = reinterpret_cast<const std::byte*>(c.data());
  return {p, p + c.size()};
}

// Every file of the folder holding `idx_path`, put into memory under `root` instead.
std::shared_ptr<io::MemoryStorage> copy_to_memory(const std::string& idx_path, const std::string& root) {
  auto storage = std::make_shared<io::MemoryStorage>();
  const fs::path dir = fs::path(idx_path).parent_path();
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    storage->put(root + "/" + fs::relative(e.path(), dir).string(), file_bytes(e.path().string()));
  }
  return storage;
}

struct Written {
  std::string idx;
  Point dims;
  std::vector<float> a;    // field "a", timesteps 0 and 1 (times 1 holds a + 1)
  std::vector<int16_t> b;  // field "b", timestep 0
};

Written write_dataset(const std::string& name, Point dims, const std::string& codec) {
  Written w;
  w.dims = dims;
  w.idx = fresh_dir(name) + "/d.idx";
  CreateOptions o;
  o.dims = {dims[0], dims[1], dims[2]};
  o.fields = {{"a", DType::parse("float32").value(), codec}, {"b", DType::parse("int16").value(), "zip"}};
  o.times = {0, 1};
  o.bits_per_block = 12;
  o.blocks_per_file = 8;
  const size_t n = static_cast<size_t>(dims[0] * dims[1] * dims[2]);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-50, 50);
  w.a.resize(n);
  w.b.resize(n);
  for (size_t i = 0; i < n; ++i) {
    w.a[i] = u(rng) + static_cast<float>(i % 97);
    w.b[i] = static_cast<int16_t>(static_cast<int>(i * 31 % 20000) - 10000);
  }
  std::vector<float> a1(w.a);
  for (float& v : a1) v += 1;
  auto created = Dataset::create(w.idx, o, {.durable = false});
  EXPECT_TRUE(created.is_ok()) << created.status().message();
  if (!created.is_ok()) return w;
  auto& ds = created.value();
  const Box all{{0, 0, 0}, dims};
  EXPECT_TRUE(ds->write_box(all, "a", 0, w.a.data(), n * 4).is_ok());
  EXPECT_TRUE(ds->write_box(all, "a", 1, a1.data(), n * 4).is_ok());
  EXPECT_TRUE(ds->write_box(all, "b", 0, w.b.data(), n * 2).is_ok());
  EXPECT_TRUE(ds->close().is_ok());
  return w;
}

TEST(Storage, ADatasetInMemoryReadsAsWritten) {
  // 128^3 float32 reads in windows from the memory "mappings"; 24 x 20 x 16 reads block by block.
  for (const auto& [dims, codec] : {std::pair{Point{128, 128, 128}, "raw"}, std::pair{Point{24, 20, 16}, "raw"},
                                    std::pair{Point{24, 20, 16}, "zip"}}) {
    const Written w = write_dataset(std::string("in_memory_") + codec, dims, codec);
    const std::string root = "/hzio-not-on-disk-" + std::to_string(::getpid());
    ASSERT_FALSE(fs::exists(root));
    auto storage = copy_to_memory(w.idx, root);
    auto opened = core::DatasetParts::open_in(storage, root + "/d.idx", {});
    ASSERT_TRUE(opened.is_ok()) << opened.status().message();
    Dataset& ds = **opened;
    const size_t n = w.a.size();
    const Box all{{0, 0, 0}, dims};
    std::vector<float> a(n);
    ASSERT_TRUE(ds.read_box(all, -1, "a", 0, a.data(), n * 4).is_ok());
    EXPECT_EQ(a, w.a);
    ASSERT_TRUE(ds.read_box(all, -1, "a", 1, a.data(), n * 4).is_ok());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], w.a[i] + 1) << i;
    std::vector<int16_t> b(n);
    ASSERT_TRUE(ds.read_box(all, -1, "b", 0, b.data(), n * 2).is_ok());
    EXPECT_EQ(b, w.b);
    // A sub-box, against the written array.
    const Box sub{{3, 2, 1}, {17, 11, 9}};
    std::vector<float> s(14 * 9 * 8);
    ASSERT_TRUE(ds.read_box(sub, -1, "a", 0, s.data(), s.size() * 4).is_ok());
    for (int64_t z = 1; z < 9; ++z)
      for (int64_t y = 2; y < 11; ++y)
        for (int64_t x = 3; x < 17; ++x)
          ASSERT_EQ(s[static_cast<size_t>(((z - 1) * 9 + (y - 2)) * 14 + (x - 3))],
                    w.a[static_cast<size_t>((z * dims[1] + y) * dims[0] + x)]);
    // A value-range query finds exactly the samples NumPy would.
    QueryResult q;
    ASSERT_TRUE(ds.query(all, -1, "a", 0, 80, 90, 0, false, &q).is_ok());
    size_t expected = 0;
    for (float v : w.a) expected += v >= 80 && v <= 90;
    EXPECT_EQ(q.points.size() / 3, expected);
    // Block listing and verification go through the storage too.
    auto infos = ds.block_infos("a", 0, true);
    ASSERT_TRUE(infos.is_ok()) << infos.status().message();
    EXPECT_FALSE(infos->empty());
    for (const BlockInfo& i : *infos) {
      EXPECT_EQ(i.file.rfind(root, 0), 0u) << i.file;
      EXPECT_TRUE(ds.verify_block("a", 0, i.block).is_ok()) << i.block;
    }
  }
}

TEST(Storage, DamagedBytesInMemoryFailTheReadNamingTheFile) {
  const Written w = write_dataset("damaged", Point{24, 20, 16}, "raw");
  const std::string root = "/hzio-not-on-disk-damaged";
  auto storage = copy_to_memory(w.idx, root);
  auto infos = core::DatasetParts::open_in(storage, root + "/d.idx", {}).value()->block_infos("a", 0, true);
  ASSERT_TRUE(infos.is_ok() && !infos->empty());
  const BlockInfo& victim = infos->back();  // a block of field "a"
  ASSERT_GT(victim.size, 0u);
  const std::string data_file = victim.file;
  auto before = storage->open(data_file);
  ASSERT_TRUE(before.is_ok()) << before.status().message();
  std::vector<std::byte> bytes(before.value()->size().value());
  ASSERT_TRUE(before.value()->read_at(0, bytes).is_ok());
  bytes[victim.offset + victim.size / 2] ^= std::byte{0x10};
  storage->put(data_file, std::move(bytes));
  auto ds = core::DatasetParts::open_in(storage, root + "/d.idx", {}).value();
  std::vector<float> a(w.a.size());
  const Status s = ds->read_box({{0, 0, 0}, w.dims}, -1, "a", 0, a.data(), a.size() * 4);
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find(data_file), std::string::npos) << s.message();
  // Unchecked, the read returns the bytes as they are.
  auto unchecked = core::DatasetParts::open_in(storage, root + "/d.idx", {.verify_checksums = false}).value();
  EXPECT_TRUE(unchecked->read_box({{0, 0, 0}, w.dims}, -1, "a", 0, a.data(), a.size() * 4).is_ok());
  EXPECT_NE(a, w.a);
}

TEST(Storage, AMemoryDatasetIsReadOnlyAndMissingFilesAreNamed) {
  auto storage = std::make_shared<io::MemoryStorage>();
  auto missing = core::DatasetParts::open_in(storage, "/nowhere/d.idx", {});
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nowhere/d.idx"), std::string::npos);
  const Written w = write_dataset("read_only", Point{16, 16, 16}, "raw");
  auto copy = copy_to_memory(w.idx, "/mem");
  auto writable = core::DatasetParts::open_in(copy, "/mem/d.idx", {.writable = true});
  EXPECT_EQ(writable.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Storage, MemoryStorageListsFilesAndFoldersLikeADisk) {
  io::MemoryStorage m;
  m.put("/r/a.idx", std::string_view("x"));
  m.put("/r/d/0000.bin", std::string_view("0123"));
  m.put("/r/d/sub/0001.bin", std::string_view("4567"));
  EXPECT_EQ(m.path_kind("/r/a.idx").value(), io::PathKind::kFile);
  EXPECT_EQ(m.path_kind("/r/d").value(), io::PathKind::kDirectory);
  EXPECT_EQ(m.path_kind("/r/dd").value(), io::PathKind::kMissing);
  EXPECT_EQ(m.open("/r/d").status().code(), ErrorCode::kIo);
  EXPECT_EQ(m.open("/r/x").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(m.list_files("/r", 0).value(), std::vector<std::string>{"/r/a.idx"});
  EXPECT_EQ(m.list_files("/r", 2).value().size(), 3u);
  auto f = m.open("/r/d/0000.bin").value();
  m.put("/r/d/0000.bin", std::string_view("abcdef"));  // an open file keeps the bytes it had
  std::vector<std::byte> got(4);
  ASSERT_TRUE(f->read_at(0, got).is_ok());
  EXPECT_EQ(static_cast<char>(got[3]), '3');
  EXPECT_EQ(f->read_at(2, got).code(), ErrorCode::kCorrupt);  // past the end
  EXPECT_NE(f->identity().value(), m.open("/r/d/0000.bin").value()->identity().value());
}

}  // namespace
}  // namespace hzio
