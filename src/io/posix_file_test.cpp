// Tests for the POSIX file layer: short files, page-cache residency, missing files, simulated full disk,
// atomic replace.
#include "io/posix_file.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "io/faults.hpp"

namespace hzio::io {
namespace {

std::string temp_dir() {
  auto d = std::filesystem::temp_directory_path() / ("hzio_io_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

// A file of `bytes` bytes of `value` in the test folder, synced (its pages are clean: evictable); its path.
std::string filled_file(const std::string& name, size_t bytes, std::byte value) {
  const std::string p = temp_dir() + "/" + name;
  File w = File::open(p, File::Mode::kCreate).value();
  std::vector<std::byte> data(bytes, value);
  EXPECT_TRUE(w.write_at(0, data).is_ok());
  EXPECT_TRUE(w.sync().is_ok());
  return p;
}

TEST(PosixFile, ReadingPastTheEndIsCorruptAndNamesTheFile) {
  const std::string p = temp_dir() + "/short.bin";
  File f = File::open(p, File::Mode::kCreate).value();
  std::byte b[4]{};
  ASSERT_TRUE(f.write_at(0, b).is_ok());
  std::byte out[8];
  Status s = f.read_at(0, out);
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("short.bin"), std::string::npos);
}

TEST(PosixFile, ResidentSeesWrittenPagesAndRejectsRangesPastTheEnd) {
  const std::string p = filled_file("resident.bin", size_t{1} << 20, std::byte{7});
  File f = File::open(p, File::Mode::kRead).value();
  EXPECT_TRUE(f.resident(0, 1 << 20));         // just written: in the page cache
  EXPECT_TRUE(f.resident(4097, 10));           // unaligned ranges are widened to pages
  EXPECT_FALSE(f.resident(0, (1 << 20) + 1));  // past the end of the mapping
  EXPECT_FALSE(f.resident(0, 0));
}

TEST(PosixFile, LoadBringsEvictedPagesBackAndStopsAtTheEndWithAClearError) {
  const std::string p = filled_file("load.bin", size_t{4} << 20, std::byte{3});
  File f = File::open(p, File::Mode::kRead).value();
  const int fd = ::open(p.c_str(), O_RDONLY);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
  ASSERT_TRUE(f.load(size_t{1} << 20, size_t{2} << 20).is_ok());
  EXPECT_TRUE(f.resident(size_t{1} << 20, size_t{2} << 20));
  Status s = f.load(size_t{3} << 20, size_t{2} << 20);  // 1 MiB past the end
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("load.bin"), std::string::npos);
  EXPECT_NE(s.message().find(std::to_string(size_t{4} << 20)), std::string::npos);
}

TEST(PosixFile, LoadingAMappedFileThatShrankFailsWithAClearErrorNotASignal) {
  // Large loads go through the mapping; pages past the new end would raise SIGBUS if touched.
  const std::string p = filled_file("shrunk.bin", size_t{8} << 20, std::byte{5});
  File f = File::open(p, File::Mode::kRead).value();
  ASSERT_NE(f.map_readonly(), nullptr);
  ASSERT_EQ(::truncate(p.c_str(), off_t{3} << 20), 0);
  Status s = f.load(size_t{1} << 20, size_t{6} << 20);
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("shrunk.bin"), std::string::npos);
  EXPECT_TRUE(f.load(0, size_t{3} << 20).is_ok());  // what is left still loads
}

TEST(PosixFile, SpecialFilesAreRefusedAtOnceNamingWhatTheyAre) {
  const std::string fifo = temp_dir() + "/pipe.bin";
  std::filesystem::remove(fifo);  // left by an earlier process of the same pid (the folder is per pid)
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (File::Mode mode : {File::Mode::kRead, File::Mode::kReadWrite, File::Mode::kCreate}) {
    auto f = File::open(fifo, mode);  // would wait for a writer forever if opened as is
    ASSERT_FALSE(f.is_ok());
    EXPECT_EQ(f.status().code(), ErrorCode::kIo);
    EXPECT_NE(f.status().message().find(fifo), std::string::npos) << f.status().to_string();
    EXPECT_NE(f.status().message().find("a FIFO"), std::string::npos) << f.status().to_string();
  }
  auto dir = File::open(temp_dir(), File::Mode::kRead);
  ASSERT_FALSE(dir.is_ok());
  EXPECT_NE(dir.status().message().find("a folder"), std::string::npos) << dir.status().to_string();
  auto dev = File::open("/dev/null", File::Mode::kRead);
  ASSERT_FALSE(dev.is_ok());
  EXPECT_NE(dev.status().message().find("a character device"), std::string::npos) << dev.status().to_string();
  EXPECT_FALSE(read_text_file(fifo).is_ok());
}

TEST(PosixFile, OpeningAMissingFileIsNotFound) {
  EXPECT_EQ(File::open(temp_dir() + "/absent.bin", File::Mode::kRead).status().code(), ErrorCode::kNotFound);
}

// A seam armed with injected faults, as a dataset's is in tests.
std::shared_ptr<FaultSeam> armed_seam(const Fault& fault) {
  auto seam = std::make_shared<FaultSeam>();
  seam->set(InjectedFaults::make(fault).value());
  return seam;
}

TEST(PosixFile, AFullDiskFailsTheWriteWithAClearMessage) {
  auto seam = std::make_shared<FaultSeam>();
  File f = File::open(temp_dir() + "/full.bin", File::Mode::kCreate, seam).value();
  File other = File::open(temp_dir() + "/other.bin", File::Mode::kCreate).value();  // no seam: never fails
  std::vector<std::byte> data(100);
  ASSERT_TRUE(f.write_at(0, data).is_ok());  // nothing armed yet
  seam->set(InjectedFaults::make(Fault::disk_full_after(50)).value());
  Status s = f.write_at(0, data);
  EXPECT_TRUE(other.write_at(0, data).is_ok());
  seam->set(nullptr);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_NE(s.message().find("disk full"), std::string::npos);
  EXPECT_TRUE(f.write_at(0, data).is_ok());  // disarmed
}

TEST(PosixFile, AnInjectedFaultHitsOnlyItsOperationAndMatchingPaths) {
  Fault rename_fault;
  rename_fault.op = FaultOp::kRename;
  rename_fault.path_pattern = "b\\.bin$";
  rename_fault.error = 5;  // EIO
  auto seam = armed_seam(rename_fault);
  const std::string dir = temp_dir();
  ASSERT_TRUE(File::open(dir + "/a.tmp", File::Mode::kCreate, seam).is_ok());  // create is not hit
  ASSERT_TRUE(File::open(dir + "/b.tmp", File::Mode::kCreate, seam).is_ok());
  EXPECT_TRUE(rename_file(dir + "/a.tmp", dir + "/a.bin", false, nullptr, seam.get()).is_ok());
  bool renamed = true;
  const Status s = rename_file(dir + "/b.tmp", dir + "/b.bin", false, &renamed, seam.get());
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_FALSE(renamed);
  EXPECT_TRUE(file_exists(dir + "/b.tmp"));
  EXPECT_TRUE(rename_file(dir + "/b.tmp", dir + "/b.bin", false).is_ok());  // without the seam it works
  Fault bad;
  bad.path_pattern = "(";
  EXPECT_EQ(InjectedFaults::make(bad).status().code(), ErrorCode::kInvalidArgument);
  bad.path_pattern = "";
  bad.error = 0;
  EXPECT_EQ(InjectedFaults::make(bad).status().code(), ErrorCode::kInvalidArgument);
}

TEST(PosixFile, DirectWritesLandWhetherAlignedOrNotAndReportAFullDisk) {
  const std::string p = temp_dir() + "/direct.bin";
  auto seam = std::make_shared<FaultSeam>();
  File f = File::open(p, File::Mode::kCreate, seam).value();
  const bool direct = f.enable_direct();
  // An aligned buffer (direct I/O when the file system allows it) and an unaligned one (page cache).
  void* mem = std::aligned_alloc(kDirectAlign, 3 * kDirectAlign);
  std::span<std::byte> aligned(static_cast<std::byte*>(mem), 3 * kDirectAlign);
  for (size_t i = 0; i < aligned.size(); ++i) aligned[i] = static_cast<std::byte>(i * 7 + 1);
  ASSERT_TRUE(f.write_direct_at(kDirectAlign, aligned).is_ok());
  ASSERT_TRUE(f.write_direct_at(10, aligned.subspan(1, 100)).is_ok());
  EXPECT_EQ(f.size().value(), 4 * kDirectAlign);
  std::vector<std::byte> back(4 * kDirectAlign);
  ASSERT_TRUE(f.read_at(0, back).is_ok());
  EXPECT_TRUE(std::equal(aligned.begin(), aligned.end(), back.begin() + kDirectAlign)) << "direct " << direct;
  EXPECT_TRUE(std::equal(aligned.begin() + 1, aligned.begin() + 101, back.begin() + 10));
  ASSERT_TRUE(f.truncate(kDirectAlign + 5).is_ok());
  EXPECT_EQ(f.size().value(), kDirectAlign + 5);
  seam->set(InjectedFaults::make(Fault::disk_full_after(static_cast<int64_t>(kDirectAlign))).value());
  Status s = f.write_direct_at(0, aligned);
  seam->set(nullptr);
  EXPECT_NE(s.message().find("disk full"), std::string::npos) << s.to_string();
  std::free(mem);
}

TEST(PosixFile, AtomicReplaceLeavesTheOldContentWhenTheWriteFails) {
  const std::string p = temp_dir() + "/meta.idx";
  ASSERT_TRUE(replace_file_atomically(p, "old", false).is_ok());
  EXPECT_FALSE(replace_file_atomically(p, "new content", false, armed_seam(Fault::disk_full_after(1))).is_ok());
  EXPECT_EQ(read_text_file(p).value(), "old");
}

TEST(PosixFile, MakeDirsSucceedsWhenOthersCreateTheSameFoldersAtOnce) {
  for (int round = 0; round < 20; ++round) {
    const std::string root = temp_dir() + "/race" + std::to_string(round);
    std::vector<std::thread> threads;
    std::vector<Status> results(8);
    for (size_t t = 0; t < results.size(); ++t) {
      threads.emplace_back([&, t] { results[t] = make_dirs(root + "/a/b/time_" + std::to_string(t % 2) + "/c"); });
    }
    for (auto& t : threads) t.join();
    for (const Status& s : results) EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
}

TEST(PosixFile, MakeDirsNamesTheFileInTheWay) {
  const std::string root = temp_dir() + "/blocked_dirs";
  std::filesystem::remove_all(root);  // a folder of an earlier run whose pid was the same
  std::filesystem::create_directories(root);
  File::open(root + "/f", File::Mode::kCreate).value();
  std::vector<std::string> created;
  const Status s = make_dirs(root + "/f/g/h", &created);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_NE(s.message().find(root + "/f is in the way"), std::string::npos) << s.to_string();
  EXPECT_TRUE(created.empty());
  ASSERT_TRUE(make_dirs(root + "/x/y", &created).is_ok());
  EXPECT_EQ(created, (std::vector<std::string>{root + "/x", root + "/x/y"}));
}

}  // namespace
}  // namespace hzio::io
