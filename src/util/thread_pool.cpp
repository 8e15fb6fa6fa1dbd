// ThreadPool implementation: workers pull indices from a shared counter.
#include "util/thread_pool.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace hzio::util {
namespace {

// The idle pools acquire() hands out again.
struct IdlePools {
  static constexpr size_t kMax = 4;
  std::mutex mutex;
  std::vector<std::unique_ptr<ThreadPool>> pools;
};

IdlePools& idle_pools() {
  // Never destroyed: pools given back while the process exits must not meet a destroyed registry.
  static IdlePools* idle = [] {
    auto* p = new IdlePools;
    // fork() keeps the registry consistent (no acquire or give-back halfway), and a child, which has
    // none of the parent's threads, forgets the idle pools instead of joining them.
    ::pthread_atfork([] { idle_pools().mutex.lock(); }, [] { idle_pools().mutex.unlock(); },
                     [] {
                       for (auto& pool : idle_pools().pools) (void)pool.release();
                       idle_pools().pools.clear();
                       idle_pools().mutex.unlock();
                     });
    return p;
  }();
  return *idle;
}

}  // namespace

std::shared_ptr<ThreadPool> ThreadPool::acquire(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  IdlePools& idle = idle_pools();
  std::unique_ptr<ThreadPool> pool;
  {
    std::lock_guard lock(idle.mutex);
    auto it = std::find_if(idle.pools.begin(), idle.pools.end(), [&](const auto& p) { return p->size() == threads; });
    if (it != idle.pools.end()) {
      pool = std::move(*it);
      idle.pools.erase(it);
    }
  }
  if (!pool) pool = std::make_unique<ThreadPool>(threads);
  return std::shared_ptr<ThreadPool>(pool.release(), [](ThreadPool* p) {
    if (p->owner_ != ::getpid()) return;  // a pool inherited through fork(): its threads are not here to join
    std::unique_ptr<ThreadPool> back(p);
    IdlePools& idle = idle_pools();
    {
      std::lock_guard lock(idle.mutex);
      if (idle.pools.size() < IdlePools::kMax) idle.pools.push_back(std::move(back));
    }
  });  // a pool beyond kMax stops here, its threads joined after the lock (rare: many datasets at once)
}

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
