// Safe publication and removal of the owner of RecordFunction callbacks.
//
// Callbacks are plain functions that read an owner object (an observer's
// state) through a CallbackOwner. A callback holds a CallbackGuard while it
// uses the owner; Remove() unpublishes the owner, removes the callbacks, then
// waits until no thread is inside a callback that saw it, so that the owner
// may be freed. (Each thread raises a flag of its own, saving and restoring
// the previous value so that guards nest; the waiter reads every thread's
// flag after unpublishing.) In a forked child the flags of the parent's other
// threads are forgotten: those threads do not exist there.
// Thread-safety: as described; Remove() must not run inside a callback, nor
// with a lock a callback may need (the GIL, for callbacks that read Python
// symbolic sizes).
#pragma once

#include <ATen/record_function.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"

namespace api_tracer::aten {

class CallbackGuard {
 public:
  CallbackGuard();
  ~CallbackGuard();
  CallbackGuard(const CallbackGuard&) = delete;
  CallbackGuard& operator=(const CallbackGuard&) = delete;

 private:
  std::atomic<bool>& busy_;
  const bool was_busy_;
};

// Returns once no thread is inside a CallbackGuard taken before the call.
void WaitForCallbacks();

// One owner of type T at a time, published to the callbacks registered with it.
template <typename T>
class CallbackOwner {
 public:
  // For callbacks, under a CallbackGuard: the published owner, or nullptr.
  T* Get() const { return owner_.load(std::memory_order_seq_cst); }
  bool Installed() const { return Get() != nullptr; }

  // Registers `callback` and publishes `owner`; FailedPrecondition(`busy`)
  // when an owner is published already.
  Status Install(std::unique_ptr<T> owner, at::RecordFunctionCallback callback, const std::string& busy) {
    std::lock_guard<std::mutex> lock(mu_);
    if (owner_.load()) return Status::FailedPrecondition(busy);
    handle_ = at::addGlobalCallback(std::move(callback));
    owner_.store(owner.release(), std::memory_order_seq_cst);
    return Status::OK();
  }

  // Unpublishes the owner (only if `mine` says it is the caller's, when
  // given), removes the callbacks and waits for the threads still inside
  // one; returns the owner, or nullptr when nothing was removed.
  std::unique_ptr<T> Remove(const std::function<bool(const T&)>& mine = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    T* owner = owner_.load();
    if (!owner || (mine && !mine(*owner))) return nullptr;
    owner_.store(nullptr, std::memory_order_seq_cst);
    at::removeCallback(handle_);
    WaitForCallbacks();
    return std::unique_ptr<T>(owner);
  }

  // In a process just forked from one with an owner: forget it (it is left
  // as it is: what it points to is the parent's) and its callbacks.
  void AbandonAfterFork() {
    if (owner_.exchange(nullptr, std::memory_order_seq_cst)) at::removeCallback(handle_);
  }

 private:
  std::mutex mu_;
  std::atomic<T*> owner_{nullptr};
  at::CallbackHandle handle_ = 0;
};

// The autograd node a BACKWARD_FUNCTION RecordFunction stands for, from its
// name ("autograd::engine::evaluate_function: AddmmBackward0").
inline std::string_view AutogradNodeName(const at::RecordFunction& fn) {
  std::string_view name = fn.name();
  size_t colon = name.rfind(": ");
  return colon == std::string_view::npos ? name : name.substr(colon + 2);
}

}  // namespace api_tracer::aten
