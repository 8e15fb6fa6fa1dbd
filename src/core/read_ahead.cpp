// Prefetching and ordered loading of a read's blocks (see read_ahead.hpp).
#include "core/read_ahead.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <system_error>
#include <tuple>

namespace hzio::core {

void hint_ranges(std::vector<Span> ranges, bool may_map) {
  constexpr uint64_t kGap = uint64_t{64} << 10;
  std::sort(ranges.begin(), ranges.end(),
            [](const Span& a, const Span& b) { return std::tie(a.file, a.begin) < std::tie(b.file, b.begin); });
  const auto issue = [&](const Span& s) {
    if (s.end > s.begin && !((may_map || s.file->mapped()) && s.file->resident(s.begin, s.end - s.begin)))
      s.file->advise_willneed(s.begin, s.end - s.begin);
  };
  for (size_t i = 0; i < ranges.size();) {
    Span request = ranges[i];
    for (++i; i < ranges.size() && ranges[i].file == request.file && ranges[i].begin <= request.end + kGap; ++i)
      request.end = std::max(request.end, ranges[i].end);
    issue(request);
  }
}

Prefetcher::Prefetcher(std::vector<Span> blocks) {
  if (!blocks.empty()) thread_ = std::thread([this, blocks = std::move(blocks)] { run(blocks); });
}

Prefetcher::~Prefetcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Prefetcher::run(const std::vector<Span>& blocks) {
  constexpr uint64_t kGap = uint64_t{64} << 10;  // blocks this close merge into one request
  // Requests of up to 64 MiB: larger hints let the kernel read each file in longer sequential runs,
  // which cold reads gain from over 4 MiB requests (bench/read_bench.py, cold full reads).
  constexpr uint64_t kRequest = uint64_t{64} << 20;
  const auto issue = [](const Span& s) {
    if (!s.file->resident(s.begin, s.end - s.begin)) s.file->advise_willneed(s.begin, s.end - s.begin);
  };
  std::map<const io::Readable*, Span> pending;  // the request being built for each file
  for (const Span& b : blocks) {
    if (stop_) return;
    auto [it, fresh] = pending.try_emplace(b.file, b);
    if (fresh) continue;
    Span& p = it->second;
    if (b.begin >= p.end && b.begin - p.end <= kGap && b.end - p.begin <= kRequest) {
      p.end = b.end;
    } else {
      issue(p);
      p = b;
    }
  }
  for (const auto& [file, p] : pending) {
    if (stop_) return;
    issue(p);
  }
}

BlockLoader::BlockLoader(std::vector<Span> blocks, std::vector<uint32_t> first_use)
    : blocks_(std::move(blocks)), loaded_(blocks_.size(), false) {
  // Files in the order windows first need them, each file's blocks in file order.
  std::map<const io::Readable*, size_t> index;
  std::vector<uint32_t> soonest;
  for (uint32_t i = 0; i < blocks_.size(); ++i) {
    if (first_use[i] == UINT32_MAX) continue;  // nobody waits for it: no load whose error could fail the read
    auto [it, fresh] = index.try_emplace(blocks_[i].file, files_.size());
    if (fresh) {
      files_.emplace_back();
      soonest.push_back(UINT32_MAX);
    }
    files_[it->second].push_back(i);
    soonest[it->second] = std::min(soonest[it->second], first_use[i]);
  }
  std::vector<size_t> order(files_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return soonest[a] < soonest[b]; });
  std::vector<std::vector<uint32_t>> sorted;
  for (size_t k : order) {
    sorted.push_back(std::move(files_[k]));
    std::sort(sorted.back().begin(), sorted.back().end(),
              [&](uint32_t a, uint32_t b) { return blocks_[a].begin < blocks_[b].begin; });
  }
  files_ = std::move(sorted);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {  // no loader: the waits must fail, not hang
    failed_ = true;
    error_ = io_error(std::string("cannot start a thread to load blocks: ") + e.what());
  }
}

BlockLoader::~BlockLoader() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void BlockLoader::run() {
  // One sequential stream: loading the data files one after the other, front to back, reads them as
  // fast as a plain sendfile of the whole files, while interleaving the files by need (from one thread
  // or several) makes the disk seek and delays the read (bench/read_bench.py, cold full reads).
  constexpr uint64_t kRequest = uint64_t{8} << 20;
  for (const std::vector<uint32_t>& file : files_) {
    for (size_t from = 0; from < file.size() && !stop_;) {
      // The next blocks of the file, adjacent on disk, up to kRequest.
      Span request = blocks_[file[from]];
      size_t to = from + 1;
      while (to < file.size() && blocks_[file[to]].begin == request.end &&
             blocks_[file[to]].end - request.begin <= kRequest)
        request.end = blocks_[file[to++]].end;
      Status s = request.file->load(request.begin, request.end - request.begin);
      std::lock_guard lock(mutex_);
      if (!s.is_ok()) {
        failed_ = true;
        error_ = s;
        progress_.notify_all();
        return;
      }
      for (size_t k = from; k < to; ++k) loaded_[file[k]] = true;
      progress_.notify_all();
      from = to;
    }
  }
}

bool BlockLoader::wait_for(const std::vector<uint32_t>& blocks) {
  std::unique_lock lock(mutex_);
  progress_.wait(lock, [&] {
    if (failed_) return true;
    for (uint32_t b : blocks)
      if (!loaded_[b]) return false;
    return true;
  });
  return !failed_;
}

Status BlockLoader::status() {
  std::lock_guard lock(mutex_);
  return error_;
}

}  // namespace hzio::core
