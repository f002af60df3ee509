#include "aten/callback_guard.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

namespace api_tracer::aten {
namespace {

struct alignas(64) Activity {
  std::atomic<bool> busy{false};
};

std::mutex g_mu;
std::vector<Activity*> g_activities;

struct Registration {
  Activity activity;
  Registration() {
    std::lock_guard<std::mutex> lock(g_mu);
    g_activities.push_back(&activity);
  }
  ~Registration() {
    std::lock_guard<std::mutex> lock(g_mu);
    g_activities.erase(std::remove(g_activities.begin(), g_activities.end(), &activity), g_activities.end());
  }
};

std::atomic<bool>& MyFlag() {
  static thread_local Registration registration;
  return registration.activity.busy;
}

}  // namespace

CallbackGuard::CallbackGuard() : busy_(MyFlag()) { busy_.store(true, std::memory_order_seq_cst); }

CallbackGuard::~CallbackGuard() { busy_.store(false, std::memory_order_release); }

void WaitForCallbacks() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (Activity* a : g_activities) {
    while (a->busy.load(std::memory_order_acquire)) std::this_thread::yield();
  }
}

}  // namespace api_tracer::aten
