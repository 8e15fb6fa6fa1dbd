// The local file system and memory as places datasets are read from (storage.hpp).
#include "io/storage.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>

#include "io/posix_file.hpp"

namespace hzio::io {
namespace {

class LocalStorage final : public Storage {
 public:
  bool writable() const override { return true; }
  Result<std::shared_ptr<const Readable>> open(const std::string& path) const override {
    HZIO_ASSIGN_OR_RETURN(File f, File::open(path, File::Mode::kRead));
    return std::shared_ptr<const Readable>(std::make_shared<File>(std::move(f)));
  }
  Result<std::string> read_text(const std::string& path, size_t max_bytes) const override {
    return read_text_file(path, max_bytes);
  }
  Result<PathKind> path_kind(const std::string& path) const override { return io::path_kind(path); }
  Result<std::array<uint64_t, 5>> identity(const std::string& path) const override { return path_identity(path); }
  Result<std::vector<std::string>> list_files(const std::string& dir, int max_depth) const override {
    return io::list_files(dir, max_depth);
  }
};

// A file of a MemoryStorage: its bytes as they were when opened.
class MemoryFile final : public Readable {
 public:
  MemoryFile(std::string path, std::shared_ptr<const std::vector<std::byte>> bytes, uint64_t version, uint64_t changed)
      : path_(std::move(path)), bytes_(std::move(bytes)), version_(version), changed_(changed) {}
  const std::string& path() const override { return path_; }
  Result<uint64_t> size() const override { return static_cast<uint64_t>(bytes_->size()); }
  Result<std::array<uint64_t, 5>> identity() const override {
    return std::array<uint64_t, 5>{0, version_, bytes_->size(), changed_, changed_};
  }
  Status read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (offset > bytes_->size() || out.size() > bytes_->size() - offset)
      return corrupt("read " + path_ + ": the file ends at byte " + std::to_string(bytes_->size()) + ", before byte " +
                     std::to_string(offset + out.size()));
    std::copy_n(bytes_->data() + offset, out.size(), out.data());
    return Status::ok();
  }
  const std::byte* map_readonly() const override { return bytes_->empty() ? nullptr : bytes_->data(); }
  size_t mapped_bytes() const override { return bytes_->size(); }
  bool mapped() const override { return true; }
  Status load(uint64_t offset, uint64_t length) const override {
    if (offset > bytes_->size() || length > bytes_->size() - offset)
      return corrupt("load " + path_ + ": the file ends at byte " + std::to_string(bytes_->size()));
    return Status::ok();
  }
  bool resident(uint64_t, uint64_t) const override { return true; }
  void advise_willneed(uint64_t, uint64_t) const override {}

 private:
  std::string path_;
  std::shared_ptr<const std::vector<std::byte>> bytes_;
  uint64_t version_;
  uint64_t changed_;  // when it was put, as a file's modification time (nanoseconds since the epoch)
};

bool below(const std::string& path, const std::string& dir) {
  const std::string prefix = dir == "/" ? dir : dir + "/";
  return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Result<std::vector<std::byte>> Readable::read_prefix(uint64_t max_bytes, uint64_t* size, uint64_t limit) const {
  HZIO_ASSIGN_OR_RETURN(uint64_t total, this->size());
  if (total > limit) return corrupt("file " + path() + " is implausibly large (" + std::to_string(total) + " bytes)");
  std::vector<std::byte> bytes(static_cast<size_t>(std::min(total, max_bytes)));
  HZIO_RETURN_IF_ERROR(read_at(0, bytes));
  *size = total;
  return bytes;
}

std::shared_ptr<const Storage> local_storage() {
  static const auto storage = std::make_shared<const LocalStorage>();
  return storage;
}

void MemoryStorage::put(const std::string& path, std::vector<std::byte> bytes) {
  // Versions are unique in the process, as a local file's identity is: what the read path remembers
  // of one version of a file (its checked checksums) never applies to another storage's file.
  static std::atomic<uint64_t> next_version{1};
  auto shared = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  const uint64_t now = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  std::lock_guard lock(mutex_);
  files_[path] = {std::move(shared), next_version++, now};
}

void MemoryStorage::put(const std::string& path, std::string_view text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  put(path, std::vector<std::byte>(p, p + text.size()));
}

void MemoryStorage::erase(const std::string& path) {
  std::lock_guard lock(mutex_);
  files_.erase(path);
}

Result<std::shared_ptr<const Readable>> MemoryStorage::open(const std::string& path) const {
  std::lock_guard lock(mutex_);
  auto it = files_.find(path);
  if (it == files_.end()) {
    for (const auto& [name, entry] : files_)
      if (below(name, path)) return io_error("open " + path + ": not a regular file (folder)");
    return not_found("open " + path + ": No such file or directory");
  }
  return std::shared_ptr<const Readable>(
      std::make_shared<MemoryFile>(path, it->second.bytes, it->second.version, it->second.changed));
}

Result<std::string> MemoryStorage::read_text(const std::string& path, size_t max_bytes) const {
  HZIO_ASSIGN_OR_RETURN(auto f, open(path));
  HZIO_ASSIGN_OR_RETURN(uint64_t size, f->size());
  if (size > max_bytes)
    return format_error("file " + path + " is " + std::to_string(size) + " bytes, too large for a .idx");
  std::string text(size, '\0');
  HZIO_RETURN_IF_ERROR(f->read_at(0, std::as_writable_bytes(std::span(text))));
  return text;
}

Result<PathKind> MemoryStorage::path_kind(const std::string& path) const {
  std::lock_guard lock(mutex_);
  if (files_.count(path)) return PathKind::kFile;
  for (const auto& [name, entry] : files_)
    if (below(name, path)) return PathKind::kDirectory;
  return PathKind::kMissing;
}

Result<std::array<uint64_t, 5>> MemoryStorage::identity(const std::string& path) const {
  HZIO_ASSIGN_OR_RETURN(auto f, open(path));
  return f->identity();
}

Result<std::vector<std::string>> MemoryStorage::list_files(const std::string& dir, int max_depth) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, entry] : files_) {
    if (!below(name, dir)) continue;
    const std::string rest = name.substr(dir == "/" ? 1 : dir.size() + 1);
    if (std::count(rest.begin(), rest.end(), '/') <= max_depth) out.push_back(name);
  }
  return out;
}

}  // namespace hzio::io
