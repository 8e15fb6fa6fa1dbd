// Tests for the commit protocol of data files: what a commit leaves on disk is a canonical data file
// (header table, then the payloads packed in entry order) whatever the order of the writes, blocks not
// rewritten survive a rewrite, and a failed commit changes nothing.
#include "core/data_files.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "format/file_name.hpp"
#include "io/faults.hpp"

namespace hzio::core {
namespace {

// Makes every written file final, as a commit does.
Status commit(DataFiles& files) {
  HZIO_RETURN_IF_ERROR(files.prepare());
  return files.publish();
}

namespace fs = std::filesystem;

// One field, 4 blocks of 16 samples in one file; timestep 0 is committed from the start.
format::IdxFile four_blocks() {
  return format::IdxFile::parse(
             "(version)\n6\n(box)\n0 7 0 7\n(fields)\nv uint8\n(bits)\nV010101\n(bitsperblock)\n4\n"
             "(blocksperfile)\n4\n(filename_template)\n./d/%04x.bin\n",
             "/x/d.idx")
      .value();
}

std::string fresh_dir(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("hzio_data_files_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::vector<std::byte> payload(size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(seed * 31 + i);
  return v;
}

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::vector<std::byte>(reinterpret_cast<std::byte*>(c.data()),
                                reinterpret_cast<std::byte*>(c.data()) + c.size());
}

// The file's payloads in entry order, checking that they are packed right after the header table.
std::vector<std::vector<std::byte>> canonical_payloads(const std::string& path, int64_t bpf) {
  const std::vector<std::byte> bytes = file_bytes(path);
  const uint64_t table = format::header_table_bytes(1, bpf);
  auto entries = format::parse_header_table(std::span(bytes).first(table), 1, bpf, bytes.size(), path).value();
  std::vector<std::vector<std::byte>> out;
  uint64_t at = table;
  for (const auto& e : entries) {
    if (!e.present()) {
      out.emplace_back();
      continue;
    }
    EXPECT_EQ(e.offset, at) << "payloads are not packed in entry order";
    out.emplace_back(bytes.begin() + static_cast<ptrdiff_t>(e.offset),
                     bytes.begin() + static_cast<ptrdiff_t>(e.offset + e.size));
    at += e.size;
  }
  EXPECT_EQ(at, bytes.size());
  return out;
}

TEST(DataFiles, ACommitLeavesACanonicalFileWhateverTheOrderOfTheWrites) {
  for (bool in_order : {true, false}) {
    const std::string dir = fresh_dir(in_order ? "ordered" : "shuffled");
    format::IdxFile idx = four_blocks();
    DataFiles files(&idx, dir, false);
    const std::vector<int> order = in_order ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{2, 0, 3, 1, 2};
    std::vector<std::vector<std::byte>> expected(4);
    for (int b : order) {
      expected[static_cast<size_t>(b)] = payload(5 + b, b + static_cast<int>(in_order) * 10);
      ASSERT_TRUE(files.append(0, 0, static_cast<uint64_t>(b), expected[static_cast<size_t>(b)], 3).is_ok());
    }
    ASSERT_TRUE(commit(files).is_ok());
    EXPECT_EQ(canonical_payloads(dir + "/d/0000.bin", 4), expected);
    for (const auto& e : fs::directory_iterator(dir + "/d")) {
      EXPECT_EQ(e.path().filename().string().find(".log."), std::string::npos) << e.path();
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
    }
  }
}

TEST(DataFiles, ARewriteKeepsTheBlocksItDoesNotWrite) {
  const std::string dir = fresh_dir("rewrite");
  format::IdxFile idx = four_blocks();
  std::vector<std::vector<std::byte>> expected(4);
  {
    DataFiles files(&idx, dir, false);
    for (int b = 0; b < 4; ++b) {
      expected[static_cast<size_t>(b)] = payload(8, b);
      ASSERT_TRUE(files.append(0, 0, static_cast<uint64_t>(b), expected[static_cast<size_t>(b)], 3).is_ok());
    }
    ASSERT_TRUE(commit(files).is_ok());
  }
  DataFiles files(&idx, dir, false);
  expected[1] = payload(20, 99);
  ASSERT_TRUE(files.append(0, 0, 1, expected[1], 3).is_ok());
  ASSERT_TRUE(commit(files).is_ok());
  EXPECT_EQ(canonical_payloads(dir + "/d/0000.bin", 4), expected);
}

TEST(DataFiles, AFailedCommitChangesNothingAndLeavesNoTemporaryFile) {
  const std::string dir = fresh_dir("failed");
  format::IdxFile idx = four_blocks();
  {
    DataFiles files(&idx, dir, false);
    ASSERT_TRUE(files.append(0, 0, 0, payload(8, 1), 3).is_ok());
    ASSERT_TRUE(commit(files).is_ok());
  }
  const std::vector<std::byte> before = file_bytes(dir + "/d/0000.bin");
  for (const char* step : {"write", "rename"}) {
    DataFiles files(&idx, dir, false);
    ASSERT_TRUE(files.append(0, 0, 2, payload(8, 2), 3).is_ok());  // not in entry order after block 0: rebuilt
    io::Fault f;
    f.op = std::string(step) == "write" ? io::FaultOp::kWrite : io::FaultOp::kRename;
    f.path_pattern = std::string(step) == "write" ? "\\.tmp\\." : "0000\\.bin$";
    files.fault_seam()->set(io::InjectedFaults::make(f).value());
    const Status s = commit(files);
    EXPECT_EQ(s.code(), ErrorCode::kIo) << step;
    EXPECT_EQ(file_bytes(dir + "/d/0000.bin"), before) << step;
    for (const auto& e : fs::directory_iterator(dir + "/d")) {
      const std::string name = e.path().filename().string();
      EXPECT_TRUE(name == "0000.bin" || name == "0000.bin.hzstats") << step << ": " << name;
    }
  }
}

// The statistics a block was committed with, from its payload of uint8 samples.
stats::BlockStats stats_of(const std::vector<std::byte>& bytes) {
  stats::BlockStats st;
  st.block.count = bytes.size();
  const auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  st.block.min = {static_cast<double>(*lo)};
  st.block.max = {static_cast<double>(*hi)};
  return st;
}

// A read that verifies loads only a sidecar's checksums; statistics asked for later, and those a
// rewrite carries over for the blocks it does not write, are still the committed ones.
TEST(DataFiles, StatisticsSurviveAReadThatLoadedOnlyTheChecksums) {
  const std::string dir = fresh_dir("lazy_stats");
  format::IdxFile idx = four_blocks();
  std::vector<std::vector<std::byte>> blocks(4);
  {
    DataFiles files(&idx, dir, false);
    for (int b = 0; b < 4; ++b) {
      blocks[static_cast<size_t>(b)] = payload(16, b + 3);
      const stats::BlockStats st = stats_of(blocks[static_cast<size_t>(b)]);
      ASSERT_TRUE(files.append(0, 0, static_cast<uint64_t>(b), blocks[static_cast<size_t>(b)], 3, &st).is_ok());
    }
    ASSERT_TRUE(commit(files).is_ok());
  }
  auto expect_stats = [&](DataFiles& files, int b) {
    auto got = files.block_stats(0, 0, static_cast<uint64_t>(b), nullptr);
    ASSERT_TRUE(got.is_ok()) << got.status().message();
    ASSERT_NE(got.value(), nullptr) << "block " << b << ": statistics unknown";
    const stats::BlockStats want = stats_of(blocks[static_cast<size_t>(b)]);
    EXPECT_EQ(got.value()->block.count, want.block.count) << b;
    EXPECT_EQ(got.value()->block.min, want.block.min) << b;
    EXPECT_EQ(got.value()->block.max, want.block.max) << b;
  };
  {
    DataFiles files(&idx, dir, false);
    auto where = files.locate(0, 0, 2, nullptr);
    ASSERT_TRUE(where.is_ok() && where.value().has_value());
    ASSERT_NE(where.value()->sidecar, nullptr);
    EXPECT_TRUE(files.check_payload(*where.value(), blocks[2]).is_ok());
    expect_stats(files, 2);
    expect_stats(files, 0);
  }
  {
    DataFiles files(&idx, dir, false);
    ASSERT_TRUE(files.locate(0, 0, 0, nullptr).is_ok());  // checksums only, then a rewrite of block 1
    blocks[1] = payload(16, 40);
    const stats::BlockStats st = stats_of(blocks[1]);
    ASSERT_TRUE(files.append(0, 0, 1, blocks[1], 3, &st).is_ok());
    ASSERT_TRUE(commit(files).is_ok());
  }
  DataFiles files(&idx, dir, false);
  for (int b = 0; b < 4; ++b) expect_stats(files, b);
}

}  // namespace
}  // namespace hzio::core
