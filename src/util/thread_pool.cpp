// ThreadPool implementation: workers pull indices from a shared counter.
#include "util/thread_pool.hpp"

#include <utility>

namespace hzio::util {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_items() {
  std::unique_lock lock(mutex_);
  while (fn_ && next_ < n_) {
    size_t i = next_++;
    const auto* fn = fn_;
    lock.unlock();
    std::exception_ptr failed;
    try {
      (*fn)(i);
    } catch (...) {  // e.g. std::bad_alloc: carried to the caller, never out of a worker thread
      failed = std::current_exception();
    }
    lock.lock();
    if (failed) {
      if (!error_) error_ = failed;
      finished_ += n_ - next_;  // the items nobody will run now
      next_ = n_;
    }
    if (++finished_ == n_) done_.notify_all();
  }
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_items();
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  run_items();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return finished_ == n_; });
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    lock.unlock();
    std::rethrow_exception(e);
  }
}

}  // namespace hzio::util
