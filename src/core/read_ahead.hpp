// Bringing a read's blocks into the page cache ahead of the workers that place them: hints for block
// by block reads, and an ordered loader that windowed reads wait on (docs/design/read-path.md). Layer: core.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "hzio/status.hpp"
#include "io/posix_file.hpp"

namespace hzio::core {

// A byte range of one data file that a read will use.
struct Span {
  const io::Readable* file;
  uint64_t begin, end;
};

// Local. Asks for the given byte ranges ahead of their use, from the calling thread, without waiting:
// the ranges of each file in file order, neighbours closer than 64 KiB merged into one request, each
// request a WILLNEED hint unless it is known to be in memory (asking needs the file's mapping: with
// `may_map` false, only files mapped already are asked). Every request is queued before the first read or placement
// waits for one, so the disk serves a small read's blocks concurrently instead of one after another, and the gaps
// between the blocks are not read.
void hint_ranges(std::vector<Span> ranges, bool may_map = true);

// Streams the payloads of a large read into the page cache from a helper thread, in the order the
// workers place blocks (per file, neighbouring blocks merged into requests of up to 64 MiB), so
// a cold read keeps the disk busy while the cores decode; the workers' page faults then find pages
// read or on their way. Ranges already in the page cache are skipped, so a warm read costs a mincore
// per request. Stops early when destroyed. Local; the spans' files must outlive it.
class Prefetcher {
 public:
  explicit Prefetcher(std::vector<Span> blocks);
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher();

 private:
  void run(const std::vector<Span>& blocks);
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Loads blocks into the page cache from a helper thread and lets workers wait until the blocks they
// need are loaded. The files are loaded one after the other, in the order the windows first need them
// (`first_use`: a lower value is needed earlier), each front to back (io::File::load, requests of up
// to 8 MiB): one sequential stream, which the kernel's readahead keeps ahead and fills into large
// folios. Unlike hints, the workers never fault on a page still on the disk: such a fault reads it in
// small pages (slower to map, then and on every later read), and an I/O error there would kill the
// process instead of failing the read. Stops early when destroyed. Local; the spans' files must
// outlive it.
class BlockLoader {
 public:
  BlockLoader(std::vector<Span> blocks, std::vector<uint32_t> first_use);
  BlockLoader(const BlockLoader&) = delete;
  BlockLoader& operator=(const BlockLoader&) = delete;
  ~BlockLoader();

  // Local, thread-safe. Waits until the given blocks (indices into the constructor's list) are
  // loaded; false if loading failed. Blocks whose first_use is UINT32_MAX are never loaded.
  bool wait_for(const std::vector<uint32_t>& blocks);
  // Local, thread-safe. The first loading error (ok while none). Once every wait has returned true,
  // it stays ok: the loads still running are of blocks nobody waits for.
  Status status();

 private:
  void run();
  std::vector<Span> blocks_;
  std::mutex mutex_;
  std::condition_variable progress_;
  std::vector<std::vector<uint32_t>> files_;  // per file, in loading order: its blocks in file order
  std::vector<bool> loaded_;
  bool failed_ = false;
  Status error_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hzio::core
