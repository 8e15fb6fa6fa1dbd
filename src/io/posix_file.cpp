// POSIX implementation of the io layer (see posix_file.hpp).
#include "io/posix_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "io/faults.hpp"

namespace hzio::io {
namespace {

Status os_error(const std::string& what, const std::string& path, int err) {
  std::string reason = err == ENOSPC ? "disk full (ENOSPC)" : std::strerror(err);
  if (err == ENOENT) return not_found(what + " " + path + ": " + reason);
  return io_error(what + " " + path + ": " + reason);
}

const char* file_type_name(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  return "a special file";
}

int fault_error(FaultSeam* seam, FaultOp op, const std::string& path) { return seam ? seam->error(op, path) : 0; }

Status sync_dir(const std::string& dir, FaultSeam* seam) {
  if (const int fault = fault_error(seam, FaultOp::kSync, dir)) return os_error("fsync directory", dir, fault);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return os_error("open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? Status::ok() : os_error("fsync directory", dir, err);
}

// pwrite until all of `data` is written, honouring the seam's faults. `failed_errno` (if given)
// receives the errno of a failed pwrite.
Status pwrite_all(int fd, const std::string& path, uint64_t offset, std::span<const std::byte> data, FaultSeam* seam,
                  int* failed_errno = nullptr) {
  size_t done = 0;
  while (done < data.size()) {
    int fault = 0;
    const size_t wanted = data.size() - done;
    const size_t chunk = seam ? static_cast<size_t>(seam->write_allowance(path, wanted, &fault)) : wanted;
    if (chunk == 0) return os_error("write", path, fault);
    ssize_t n = ::pwrite(fd, data.data() + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (failed_errno) *failed_errno = errno;
      return os_error("write", path, errno);
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace

File::~File() { (void)close(); }

// Moves happen only before a file is shared (mapping is done later through shared pointers).
File::File(File&& o) noexcept
    : fd_(o.fd_),
      direct_fd_(o.direct_fd_),
      direct_refused_(o.direct_refused_.load()),
      path_(std::move(o.path_)),
      seam_(std::move(o.seam_)) {
  o.fd_ = -1;
  o.direct_fd_ = -1;
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    (void)close();
    fd_ = o.fd_;
    direct_fd_ = o.direct_fd_;
    direct_refused_ = o.direct_refused_.load();
    path_ = std::move(o.path_);
    seam_ = std::move(o.seam_);
    o.fd_ = -1;
    o.direct_fd_ = -1;
  }
  return *this;
}

const std::byte* File::map_readonly() const {
  std::call_once(map_once_, [this] {
    struct stat st;
    if (fd_ < 0 || ::fstat(fd_, &st) != 0 || st.st_size <= 0) return;
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return;
    map_ = p;
    map_bytes_ = static_cast<size_t>(st.st_size);
  });
  map_asked_.store(true, std::memory_order_release);
  return static_cast<const std::byte*>(map_);
}

Result<File> File::open(const std::string& path, Mode mode, std::shared_ptr<FaultSeam> seam) {
  int flags = O_CLOEXEC;
  if (mode == Mode::kRead) flags |= O_RDONLY;
  if (mode == Mode::kReadWrite) flags |= O_RDWR;
  if (mode == Mode::kCreate) flags |= O_RDWR | O_CREAT | O_TRUNC;
  const int fault = mode == Mode::kCreate ? fault_error(seam.get(), FaultOp::kCreate, path) : 0;
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever; it is refused below. The flag
  // changes nothing for the regular files that are kept.
  int fd = fault ? -1 : ::open(path.c_str(), flags | O_NONBLOCK, 0644);
  if (fd < 0) return os_error(mode == Mode::kCreate ? "create" : "open", path, fault ? fault : errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return os_error("stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("open " + path + ": not a regular file (" + file_type_name(st.st_mode) + ")");
  }
  File f;
  f.fd_ = fd;
  f.path_ = path;
  f.seam_ = std::move(seam);
  return f;
}

Result<uint64_t> File::size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return os_error("stat", path_, errno);
  return static_cast<uint64_t>(st.st_size);
}

namespace {

std::array<uint64_t, 5> identity_of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
          static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000u + st.st_mtim.tv_nsec,
          static_cast<uint64_t>(st.st_ctim.tv_sec) * 1000000000u + st.st_ctim.tv_nsec};
}

}  // namespace

Result<std::array<uint64_t, 5>> File::identity() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return os_error("stat", path_, errno);
  return identity_of(st);
}

Result<std::array<uint64_t, 5>> path_identity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    const std::string what = "stat " + path + ": " + std::strerror(err);
    return err == ENOENT ? not_found(what) : io_error(what);
  }
  return identity_of(st);
}

Status File::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("read", path_, errno);
    if (n == 0) {
      return corrupt("file " + path_ + " ends at byte " + std::to_string(offset + done) + ", expected " +
                     std::to_string(offset + out.size()));
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status File::write_at(uint64_t offset, std::span<const std::byte> data) {
  return pwrite_all(fd_, path_, offset, data, seam_.get());
}

bool File::enable_direct() {
  if (direct_fd_ >= 0) return true;
  if (fd_ < 0) return false;
  direct_fd_ = ::open(path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  return direct_fd_ >= 0;
}

Status File::write_direct_at(uint64_t offset, std::span<const std::byte> data) {
  const bool aligned = offset % kDirectAlign == 0 && data.size() % kDirectAlign == 0 &&
                       reinterpret_cast<uintptr_t>(data.data()) % kDirectAlign == 0;
  // Under armed faults, writes may stop at any byte: only the page cache path allows that.
  if (direct_fd_ < 0 || !aligned || direct_refused_.load() || (seam_ && seam_->armed())) return write_at(offset, data);
  int err = 0;
  Status s = pwrite_all(direct_fd_, path_, offset, data, nullptr, &err);
  if (s.is_ok() || err != EINVAL) return s;
  // The file system takes O_DIRECT opens but not these requests: write through the page cache from now on.
  direct_refused_ = true;
  return write_at(offset, data);
}

Status File::truncate(uint64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return os_error("truncate", path_, errno);
  return Status::ok();
}

Status File::sync() {
  if (const int fault = fault_error(seam_.get(), FaultOp::kSync, path_)) return os_error("fsync", path_, fault);
  if (::fsync(fd_) != 0) return os_error("fsync", path_, errno);
  return Status::ok();
}

void File::start_writeback(uint64_t offset, uint64_t length) {
  ::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(length), SYNC_FILE_RANGE_WRITE);
}

void File::advise_willneed(uint64_t offset, uint64_t length) const {
  ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_WILLNEED);
}

namespace {

// Loads of at least this many bytes are read in huge folios (File::load), unless widening them to
// huge-page boundaries would more than double them; smaller loads gain nothing from huge folios
// (bench/read_bench.py, cold then warm full reads).
constexpr uint64_t kHugeLoadMin = uint64_t{1} << 20;

// The size of the page-cache folios a mapping maps with one page-table entry (the PMD size of
// transparent huge pages: 2 MiB on x86-64), or 0 when the kernel does not say.
uint64_t huge_page_bytes() {
  static const uint64_t bytes = [] {
    unsigned long long b = 0;
    if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r")) {
      if (std::fscanf(f, "%llu", &b) != 1) b = 0;
      std::fclose(f);
    }
    return (b & (b - 1)) == 0 ? static_cast<uint64_t>(b) : uint64_t{0};  // a power of two, or nothing
  }();
  return bytes;
}

std::atomic<bool> g_huge_loads{true};  // cleared once the kernel refuses MADV_POPULATE_READ

}  // namespace

bool File::load_huge(uint64_t offset, uint64_t length) const {
#if defined(MADV_POPULATE_READ) && defined(MADV_HUGEPAGE)
  const uint64_t huge = huge_page_bytes();
  if (huge == 0 || length < kHugeLoadMin || !g_huge_loads.load(std::memory_order_relaxed)) return false;
  if (!map_readonly() || offset + length > map_bytes_) return false;
  const uint64_t first = offset & ~(huge - 1);
  const uint64_t end = std::min<uint64_t>((offset + length + huge - 1) & ~(huge - 1), map_bytes_);
  if (end - first > 2 * length) return false;  // not worth reading the neighbours of a short range
  // A short-lived mapping of the range, advised MADV_HUGEPAGE, whose faults then read whole huge
  // folios into the page cache; populating it faults them all in. The file's own mapping later maps
  // those folios with one entry each, and keeps no advice: small reads of it fault in small pages as
  // before, and it is not split into many areas.
  const size_t bytes = static_cast<size_t>(end - first);
  void* m = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(first));
  if (m == MAP_FAILED) return false;
  bool ok = ::madvise(m, bytes, MADV_HUGEPAGE) == 0;
  if (ok && ::madvise(m, bytes, MADV_POPULATE_READ) != 0) {
    if (errno == EINVAL) g_huge_loads.store(false, std::memory_order_relaxed);  // not on this kernel
    ok = false;
  }
  ::munmap(m, bytes);
  return ok;
#else
  (void)offset;
  (void)length;
  return false;
#endif
}

Status File::load(uint64_t offset, uint64_t length) const {
  if (load_huge(offset, length)) return Status::ok();
  static const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  uint64_t done = 0;
  while (done < length) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(length - done, uint64_t{1} << 30));
    ssize_t n = -1;
    if (null_fd >= 0) {
      off_t at = static_cast<off_t>(offset + done);
      n = ::sendfile(null_fd, fd_, &at, chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EINVAL && errno != ENOSYS) return os_error("read", path_, errno);
    }
    if (n < 0) {  // no /dev/null or no sendfile for this file: read into a buffer instead
      std::vector<std::byte> buffer(std::min<size_t>(chunk, size_t{1} << 20));
      HZIO_RETURN_IF_ERROR(read_at(offset + done, buffer));
      done += buffer.size();
      continue;
    }
    if (n == 0) {
      return corrupt("file " + path_ + " ends at byte " + std::to_string(offset + done) + ", expected " +
                     std::to_string(offset + length));
    }
    done += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

bool File::resident(uint64_t offset, uint64_t length) const {
  const std::byte* base = map_readonly();
  if (!base || length == 0 || offset + length > map_bytes_) return false;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t first = offset / page * page, end = offset + length;
  const size_t pages = static_cast<size_t>((end - first + page - 1) / page);
  std::vector<unsigned char> in(pages);
  if (::mincore(const_cast<std::byte*>(base) + first, static_cast<size_t>(end - first), in.data()) != 0) return false;
  for (unsigned char c : in)
    if (!(c & 1)) return false;
  return true;
}

Status File::close() {
  if (map_) {
    ::munmap(map_, map_bytes_);
    map_ = nullptr;
  }
  if (direct_fd_ >= 0) {
    ::close(direct_fd_);
    direct_fd_ = -1;
  }
  if (fd_ < 0) return Status::ok();
  int rc = ::close(fd_);
  fd_ = -1;
  return rc == 0 ? Status::ok() : os_error("close", path_, errno);
}

Result<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  HZIO_ASSIGN_OR_RETURN(File f, File::open(path, File::Mode::kRead));
  HZIO_ASSIGN_OR_RETURN(uint64_t size, f.size());
  if (size > max_bytes)
    return format_error("file " + path + " is " + std::to_string(size) + " bytes, too large for a .idx");
  std::string text(size, '\0');
  HZIO_RETURN_IF_ERROR(f.read_at(0, std::as_writable_bytes(std::span(text))));
  return text;
}

Result<std::string> write_temp_file(const std::string& path, std::string_view text, bool durable,
                                    std::shared_ptr<FaultSeam> seam) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  HZIO_ASSIGN_OR_RETURN(File f, File::open(tmp, File::Mode::kCreate, std::move(seam)));
  Status s = f.write_at(0, std::as_bytes(std::span(text.data(), text.size())));
  if (s.is_ok() && durable) s = f.sync();
  if (s.is_ok()) s = f.close();
  if (!s.is_ok()) {
    (void)remove_path(tmp);
    return s;
  }
  return tmp;
}

Status replace_file_atomically(const std::string& path, std::string_view text, bool durable,
                               std::shared_ptr<FaultSeam> seam) {
  HZIO_ASSIGN_OR_RETURN(std::string tmp, write_temp_file(path, text, durable, seam));
  bool renamed = false;
  Status s = rename_file(tmp, path, durable, &renamed, seam.get());
  if (!renamed) (void)remove_path(tmp);
  return s;
}

Status rename_file(const std::string& from, const std::string& to, bool durable, bool* renamed, FaultSeam* seam) {
  if (renamed) *renamed = false;
  if (const int fault = fault_error(seam, FaultOp::kRename, to))
    return os_error("rename to " + to + " from", from, fault);
  if (::rename(from.c_str(), to.c_str()) != 0) return os_error("rename to " + to + " from", from, errno);
  if (renamed) *renamed = true;
  return durable ? sync_dir(parent_dir(to), seam) : Status::ok();
}

Status make_dirs(const std::string& dir, std::vector<std::string>* created) {
  auto in_the_way = [&](const std::string& p) {
    return io_error("cannot create folder " + dir + ": " + p + " is in the way (not a folder)");
  };
  struct stat st;
  std::vector<std::string> missing;
  for (std::filesystem::path p(dir); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    if (::stat(p.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return in_the_way(p.string());
      break;
    }
    if (errno != ENOENT && errno != ENOTDIR) return os_error("create folder", p.string(), errno);
    missing.push_back(p.string());
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) {
      if (created) created->push_back(*it);
      continue;
    }
    const int err = errno;
    // Another process (an MPI rank writing the same dataset) may have made it meanwhile.
    if (err == EEXIST && ::stat(it->c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    return err == EEXIST || err == ENOTDIR ? in_the_way(*it) : os_error("create folder", *it, err);
  }
  return Status::ok();
}

Result<PathKind> path_kind(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) return os_error("inspect", path, errno);
    // Missing, or a dangling link (lstat sees the link). A folder made meanwhile counts as missing.
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode) ? PathKind::kOther : PathKind::kMissing;
  }
  if (S_ISDIR(st.st_mode)) return PathKind::kDirectory;
  return S_ISREG(st.st_mode) ? PathKind::kFile : PathKind::kOther;
}

bool remove_empty_folder(const std::string& dir) { return ::rmdir(dir.c_str()) == 0; }

Result<std::vector<std::string>> list_files(const std::string& dir, int max_depth) {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      if (it.depth() >= max_depth) it.disable_recursion_pending();
      continue;
    }
    out.push_back(it->path().lexically_normal().string());
  }
  if (ec) return io_error("list folder " + dir + ": " + ec.message());
  return out;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status remove_path(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec) return io_error("remove " + path + ": " + ec.message());
  return Status::ok();
}

std::string parent_dir(const std::string& path) {
  auto p = std::filesystem::path(path).parent_path();
  return p.empty() ? "." : p.string();
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : p).lexically_normal().string();
}

}  // namespace hzio::io
