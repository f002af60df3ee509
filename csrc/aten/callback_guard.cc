#include "aten/callback_guard.h"

#include <pthread.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace api_tracer::aten {
namespace {

struct alignas(64) Activity {
  std::atomic<bool> busy{false};
};

// Never destroyed (threads may register while the library unloads); made
// anew in a forked child, where another thread may have held the lock.
std::mutex* g_mu = new std::mutex();
std::vector<Activity*>* g_activities = new std::vector<Activity*>();

struct Registration {
  Activity activity;
  Registration() {
    std::lock_guard<std::mutex> lock(*g_mu);
    g_activities->push_back(&activity);
  }
  ~Registration() {
    std::lock_guard<std::mutex> lock(*g_mu);
    std::erase(*g_activities, &activity);
  }
};

Activity& Mine() {
  static thread_local Registration registration;
  return registration.activity;
}

// In a forked child only the forking thread exists: the others' flags (one
// may have been raised at the fork) would be waited for forever.
void ForgetOtherThreadsAfterFork() {
  g_mu = new std::mutex();
  auto* fresh = new std::vector<Activity*>();
  g_activities = fresh;
  Activity& mine = Mine();  // registers into `fresh` if this thread had not yet
  if (std::find(fresh->begin(), fresh->end(), &mine) == fresh->end()) fresh->push_back(&mine);
}

[[maybe_unused]] const bool g_at_fork_registered = [] {
  pthread_atfork(nullptr, nullptr, &ForgetOtherThreadsAfterFork);
  return true;
}();

}  // namespace

CallbackGuard::CallbackGuard() : busy_(Mine().busy), was_busy_(busy_.load(std::memory_order_relaxed)) {
  busy_.store(true, std::memory_order_seq_cst);
}

CallbackGuard::~CallbackGuard() { busy_.store(was_busy_, std::memory_order_release); }

void WaitForCallbacks() {
  std::lock_guard<std::mutex> lock(*g_mu);
  for (Activity* a : *g_activities) {
    while (a->busy.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
}

}  // namespace api_tracer::aten
