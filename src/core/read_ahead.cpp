// Prefetching and ordered loading of a read's blocks (see read_ahead.hpp).
#include "core/read_ahead.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <system_error>

namespace hzio::core {

Prefetcher::Prefetcher(std::vector<Span> blocks, uint64_t request_bytes) : request_bytes_(request_bytes) {
  if (!blocks.empty()) thread_ = std::thread([this, blocks = std::move(blocks)] { run(blocks); });
}

Prefetcher::~Prefetcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Prefetcher::run(const std::vector<Span>& blocks) {
  constexpr uint64_t kGap = uint64_t{64} << 10;  // blocks this close merge into one request
  const auto issue = [](const Span& s) {
    if (!s.file->resident(s.begin, s.end - s.begin)) s.file->advise_willneed(s.begin, s.end - s.begin);
  };
  std::map<const io::File*, Span> pending;  // the request being built for each file
  for (const Span& b : blocks) {
    if (stop_) return;
    auto [it, fresh] = pending.try_emplace(b.file, b);
    if (fresh) continue;
    Span& p = it->second;
    if (b.begin >= p.end && b.begin - p.end <= kGap && b.end - p.begin <= request_bytes_) {
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
    : blocks_(std::move(blocks)), first_use_(std::move(first_use)), loaded_(blocks_.size(), false) {
  std::map<const io::File*, size_t> index;
  for (uint32_t i = 0; i < blocks_.size(); ++i) {
    if (first_use_[i] == UINT32_MAX) continue;  // nobody waits for it: no load whose error could fail the read
    auto [it, fresh] = index.try_emplace(blocks_[i].file, files_.size());
    if (fresh) files_.emplace_back();
    files_[it->second].blocks.push_back(i);
  }
  for (FileQueue& q : files_) {
    std::sort(q.blocks.begin(), q.blocks.end(), [&](uint32_t a, uint32_t b) { return blocks_[a].begin < blocks_[b].begin; });
    q.soonest.resize(q.blocks.size());
    uint32_t m = UINT32_MAX;
    for (size_t k = q.blocks.size(); k-- > 0;) q.soonest[k] = m = std::min(m, first_use_[q.blocks[k]]);
  }
  // Four requests in flight: a cold 512^3 read took 0.34-0.40 s with one loader thread per file, 2, 4 or
  // 8 claiming threads, 8 to 32 MiB requests alike (medians; the same files sendfile'd whole: 0.2 s),
  // 0.6-1 s with a single claiming thread. Threads of their own, not the pool's: they wait on the disk.
  try {
    for (int t = 0; t < 4; ++t) threads_.emplace_back([this] { run(); });
  } catch (const std::system_error& e) {
    if (threads_.empty()) {  // no loader at all: the waits must fail, not hang
      failed_ = true;
      error_ = io_error(std::string("cannot start a thread to load blocks: ") + e.what());
    }
  }
}

BlockLoader::~BlockLoader() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
}

void BlockLoader::run() {
  constexpr uint64_t kRequest = uint64_t{8} << 20;
  for (;;) {
    FileQueue* q = nullptr;
    size_t from = 0, to = 0;
    Span request{};
    {
      std::lock_guard lock(mutex_);
      if (stop_ || failed_) return;
      for (FileQueue& f : files_)
        if (f.next < f.blocks.size() && (!q || f.soonest[f.next] < q->soonest[q->next])) q = &f;
      if (!q) return;
      // Claim the next blocks of the file, adjacent on disk, up to kRequest.
      from = q->next;
      request = blocks_[q->blocks[from]];
      to = from + 1;
      while (to < q->blocks.size() && blocks_[q->blocks[to]].begin == request.end &&
             blocks_[q->blocks[to]].end - request.begin <= kRequest) {
        request.end = blocks_[q->blocks[to++]].end;
      }
      q->next = to;
    }
    Status s = request.file->load(request.begin, request.end - request.begin);
    std::lock_guard lock(mutex_);
    if (!s.is_ok()) {
      if (!failed_) error_ = s;
      failed_ = true;
      progress_.notify_all();
      return;
    }
    for (size_t k = from; k < to; ++k) loaded_[q->blocks[k]] = true;
    progress_.notify_all();
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
