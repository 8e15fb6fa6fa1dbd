// The one thread pool of hzio: parallel_for over an index range. Layer: util.
#pragma once

#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace hzio::util {

class ThreadPool {
 public:
  // Local. threads <= 0 means std::thread::hardware_concurrency().
  explicit ThreadPool(int threads);
  ~ThreadPool();
  // Local, thread-safe. A pool of `threads` threads (counted as by the constructor) for the caller
  // alone: one that an earlier owner gave back when there is one, else a new one. Dropping the last
  // reference gives it back (a few idle pools are kept, the others stop): opening a dataset then
  // starts no threads (bench/small_read_bench.py, open + read of a small box).
  static std::shared_ptr<ThreadPool> acquire(int threads);
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Local, not reentrant. Runs fn(i) for i in [0, n) on the pool and the calling thread; returns when
  // all are done. If an fn(i) throws (std::bad_alloc, say), the items not yet started are skipped and the
  // first exception is rethrown here once every running item has returned.
  void parallel_for(size_t n, const std::function<void(size_t)>& fn);

 private:
  void work();
  void run_items();

  std::vector<std::thread> workers_;
  const int owner_ = static_cast<int>(::getpid());  // the process whose threads these are (acquire and fork)
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0, next_ = 0, finished_ = 0;
  std::exception_ptr error_;  // the first exception an item threw in the current parallel_for
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace hzio::util
