// Tests for the ordered block loader: workers wait for exactly their blocks, failures end the waits.
#include "core/read_ahead.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <vector>

namespace hzio::core {
namespace {

std::string temp_path(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("hzio_read_ahead_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return (d / name).string();
}

// A file of `bytes`, written durably and then evicted from the page cache, so loads must read it.
io::File written_file(const std::string& name, size_t bytes) {
  const std::string p = temp_path(name);
  io::File w = io::File::open(p, io::File::Mode::kCreate).value();
  std::vector<std::byte> data(bytes, std::byte{1});
  EXPECT_TRUE(w.write_at(0, data).is_ok());
  EXPECT_TRUE(w.sync().is_ok());
  const int fd = ::open(p.c_str(), O_RDONLY);
  EXPECT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
  io::File f = io::File::open(p, io::File::Mode::kRead).value();
  EXPECT_FALSE(f.resident(0, bytes));
  return f;
}

TEST(BlockLoader, EveryWaitReturnsOnceItsBlocksAreLoadedAcrossFiles) {
  io::File a = written_file("a.bin", 3 << 20), b = written_file("b.bin", 2 << 20);
  std::vector<Span> blocks;
  std::vector<uint32_t> first_use;
  for (uint64_t k = 0; k < 12; ++k) {  // 256 KiB blocks, b's needed first, a's in reverse file order
    const bool in_a = k < 8;
    const uint64_t at = (in_a ? k : k - 8) << 18;
    blocks.push_back({in_a ? &a : &b, at, at + (1 << 18)});
    first_use.push_back(in_a ? static_cast<uint32_t>(20 - k) : static_cast<uint32_t>(k - 8));
  }
  BlockLoader loader(blocks, first_use);
  EXPECT_TRUE(loader.wait_for({9, 0}));
  EXPECT_TRUE(blocks[9].file->resident(blocks[9].begin, 1 << 18) && blocks[0].file->resident(0, 1 << 18));
  EXPECT_TRUE(loader.wait_for({7, 3, 11}));
  std::vector<uint32_t> all(blocks.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  EXPECT_TRUE(loader.wait_for(all));
  for (const Span& s : blocks) EXPECT_TRUE(s.file->resident(s.begin, s.end - s.begin));
  EXPECT_TRUE(loader.status().is_ok());
}

TEST(BlockLoader, BlocksNoWindowUsesAreNeverLoaded) {
  io::File a = written_file("unused.bin", 1 << 20);
  BlockLoader loader({{&a, 0, 1 << 19}, {&a, 1 << 19, 1 << 20}, {&a, 1 << 20, 2 << 20}}, {0, 1, UINT32_MAX});
  EXPECT_TRUE(loader.wait_for({0, 1}));  // the third block lies past the end of the file: never read
  EXPECT_TRUE(loader.status().is_ok());
}

TEST(BlockLoader, ABlockPastTheEndOfItsFileFailsTheWaitsWithTheFilesName) {
  io::File a = written_file("short.bin", 1 << 20);
  std::vector<Span> blocks{{&a, 0, 1 << 19}, {&a, 1 << 19, 1 << 20}, {&a, 1 << 20, 3 << 19}};
  BlockLoader loader(blocks, {0, 1, 2});
  EXPECT_FALSE(loader.wait_for({0, 1, 2}));
  const Status s = loader.status();
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("short.bin"), std::string::npos);
}

}  // namespace
}  // namespace hzio::core
