// Safe removal of RecordFunction callbacks.
//
// Callbacks are plain functions that read an owner object through a global
// atomic pointer. A callback holds a CallbackGuard while it uses the owner;
// to retire the owner, clear the pointer, remove the callbacks, then
// WaitForCallbacks(): when it returns no thread is inside a callback that saw
// the old owner, which may then be freed. (Each thread raises a flag of its
// own; the waiter reads every thread's flag after clearing the pointer.)
// Thread-safety: as described; WaitForCallbacks must not run inside a callback.
#pragma once

#include <atomic>

namespace api_tracer::aten {

class CallbackGuard {
 public:
  CallbackGuard();
  ~CallbackGuard();
  CallbackGuard(const CallbackGuard&) = delete;
  CallbackGuard& operator=(const CallbackGuard&) = delete;

 private:
  std::atomic<bool>& busy_;
};

void WaitForCallbacks();

}  // namespace api_tracer::aten
