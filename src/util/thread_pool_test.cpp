// Tests for ThreadPool: every item runs once, and an item that throws reaches the caller, not a worker.
#include "util/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <vector>

namespace hzio::util {
namespace {

TEST(ThreadPool, RunsEveryItemOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> runs(1000);
  pool.parallel_for(runs.size(), [&](size_t i) { runs[i] += 1; });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
}

TEST(ThreadPool, AnItemThatThrowsReachesTheCallerAndThePoolGoesOn) {
  ThreadPool pool(4);
  std::atomic<int> ran{0};
  for (int round = 0; round < 20; ++round) {
    const size_t bad = static_cast<size_t>(round) * 37 % 500;
    EXPECT_THROW(pool.parallel_for(500,
                                   [&](size_t i) {
                                     ran += 1;
                                     if (i == bad) throw std::bad_alloc();
                                   }),
                 std::bad_alloc);
  }
  EXPECT_GT(ran.load(), 0);
  std::vector<std::atomic<int>> runs(300);  // afterwards, every item of a new call runs once
  pool.parallel_for(runs.size(), [&](size_t i) { runs[i] += 1; });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
}

}  // namespace
}  // namespace hzio::util
