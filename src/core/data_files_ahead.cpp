// Header tables read ahead at a read-only open (DataFiles::read_headers_ahead, data_files.hpp).
#include <atomic>
#include <system_error>
#include <thread>

#include "core/data_files.hpp"
#include "format/file_name.hpp"

namespace hzio::core {
namespace {

std::atomic<int> running_read_ahead{0};

}  // namespace

int DataFiles::read_ahead_threads() { return running_read_ahead.load(std::memory_order_acquire); }

void DataFiles::read_headers_ahead(int64_t time, size_t max_files, std::function<bool()> unchanged) {
  if (!idx_->time.contains(time)) return;
  std::vector<std::string> paths;
  const auto per_file = static_cast<uint64_t>(idx_->blocks_per_file);
  const auto blocks = static_cast<uint64_t>(idx_->total_blocks());
  for (uint64_t first = 0; first < blocks && paths.size() < max_files; first += per_file) {
    if (auto path = format::data_file_path(*idx_, idx_dir_, static_cast<int64_t>(first), time); path.is_ok())
      paths.push_back(*path);
  }
  const uint64_t table = format::header_table_bytes(static_cast<int>(idx_->fields.size()), idx_->blocks_per_file);
  auto ahead = std::make_shared<ReadAhead>();
  {
    std::lock_guard lock(mutex_);
    read_ahead_ = ahead;
  }
  // The thread holds what it uses (the storage, the paths, its own results); never this object.
  running_read_ahead.fetch_add(1, std::memory_order_acq_rel);
  auto work = [ahead, storage = storage_, paths = std::move(paths), table, unchanged = std::move(unchanged)] {
    // Every table asked for at once, exactly (a first read of a cold file would also read ahead around
    // it, bytes a read at open has no use for), then read.
    std::vector<std::pair<std::string, std::shared_ptr<const io::Readable>>> opened;
    for (const std::string& path : paths) {
      if (auto f = storage->open(path); f.is_ok()) {
        (*f)->advise_willneed(0, table);
        opened.emplace_back(path, std::move(f).value());
      }
    }
    for (auto& [path, f] : opened) {
      uint64_t size = 0;
      auto head = f->read_prefix(table, &size);
      if (!head.is_ok()) continue;
      ahead->heads[path] = {std::move(head).value(), size};
      ahead->files[path] = std::move(f);
    }
    if (unchanged()) ahead->ready.store(true, std::memory_order_release);
  };
  try {
    std::thread([work = std::move(work)]() mutable {
      {
        auto run = std::move(work);  // its captures are freed here, before the count says the thread is done
        run();
      }
      running_read_ahead.fetch_sub(1, std::memory_order_acq_rel);
    }).detach();
  } catch (const std::system_error&) {  // no thread to be had: reads find the tables themselves
    running_read_ahead.fetch_sub(1, std::memory_order_acq_rel);
  }
}

bool DataFiles::take_read_ahead(const std::string& path, std::vector<std::byte>& head, uint64_t& size) {
  if (!read_ahead_ || !read_ahead_->ready.load(std::memory_order_acquire)) return false;
  auto it = read_ahead_->heads.find(path);
  if (it == read_ahead_->heads.end()) return false;
  head = std::move(it->second.first);
  size = it->second.second;
  read_ahead_->heads.erase(it);
  return true;
}

}  // namespace hzio::core
