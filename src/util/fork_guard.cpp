// Process-wide mutexes held across fork() (fork_guard.hpp).
#include "util/fork_guard.hpp"

#include <pthread.h>

#include <vector>

namespace hzio::util {
namespace {

struct Registry {
  std::mutex mutex;  // guards `held`; itself taken first at a fork
  std::vector<std::mutex*> held;
};

Registry& registry() {
  // Never destroyed: a fork may happen while the process exits.
  static Registry* r = [] {
    auto* reg = new Registry;
    // Taken in registration order, released in reverse, in the parent and the child alike.
    ::pthread_atfork(
        [] {
          registry().mutex.lock();
          for (std::mutex* m : registry().held) m->lock();
        },
        [] {
          for (auto it = registry().held.rbegin(); it != registry().held.rend(); ++it) (*it)->unlock();
          registry().mutex.unlock();
        },
        [] {
          for (auto it = registry().held.rbegin(); it != registry().held.rend(); ++it) (*it)->unlock();
          registry().mutex.unlock();
        });
    return reg;
  }();
  return *r;
}

}  // namespace

void hold_across_fork(std::mutex& mutex) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.held.push_back(&mutex);
}

}  // namespace hzio::util
