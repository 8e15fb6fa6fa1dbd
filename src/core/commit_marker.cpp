// The commit marker and the reader's check around a read (commit_marker.hpp).
#include "core/commit_marker.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "io/posix_file.hpp"

namespace hzio::core {
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// Whether a live process other than this one holds the marker; its text when it does.
bool held_by_another(const io::Storage& storage, const std::string& idx_path, std::string* holder) {
  auto text = storage.read_text(commit_marker_path(idx_path), 4096);
  if (!text.is_ok()) return false;  // absent (or unreadable: nothing to wait for)
  std::istringstream in(text.value());
  long long pid = 0;
  std::string host;
  if (!(in >> pid >> host) || pid <= 0) return true;  // being written: a commit is starting
  if (holder) *holder = "process " + std::to_string(pid) + " on " + host;
  if (host != host_name()) return true;  // another node's process: nothing tells whether it lives
  if (pid == ::getpid()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

Result<IdxVersion> idx_version(const io::Storage& storage, const std::string& idx_path) {
  auto id = storage.identity(idx_path);
  if (!id.is_ok()) return io_error(id.status().message());
  return IdxVersion{id.value()[0], id.value()[1], id.value()[2], static_cast<int64_t>(id.value()[3]),
                    static_cast<int64_t>(id.value()[4])};
}

}  // namespace

std::string commit_marker_path(const std::string& idx_path) { return idx_path + ".commit"; }

Status hold_commit_marker(const std::string& idx_path) {
  return io::replace_file_atomically(commit_marker_path(idx_path),
                                     std::to_string(::getpid()) + " " + host_name() + "\n", false);
}

void release_commit_marker(const std::string& idx_path) { (void)io::remove_path(commit_marker_path(idx_path)); }

Result<IdxVersion> await_idx_version(const io::Storage& storage, const std::string& idx_path, double wait_seconds) {
  const auto start = std::chrono::steady_clock::now();
  std::string holder;
  for (auto pause = std::chrono::microseconds(100); held_by_another(storage, idx_path, &holder);
       pause = std::min(pause * 2, std::chrono::microseconds(20000))) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > wait_seconds) {
      return io_error("a commit (" + holder + ") has held " + commit_marker_path(idx_path) + " for " +
                      std::to_string(static_cast<int>(wait_seconds)) +
                      " s; if that writer is dead, remove the file (`hzio verify --repair` does on its host)");
    }
    std::this_thread::sleep_for(pause);
  }
  return idx_version(storage, idx_path);
}

bool idx_unchanged(const io::Storage& storage, const std::string& idx_path, const IdxVersion& v) {
  if (held_by_another(storage, idx_path, nullptr)) return false;
  auto now = idx_version(storage, idx_path);
  return now.is_ok() && now.value() == v;
}

}  // namespace hzio::core
