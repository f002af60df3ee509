// PerThread<T>: one T per thread for one owner (an Aggregator's config
// cache, a TraceWriter's buffer, a Profiler's frames), owned by the owner
// and found on the hot path without a lock.
//
// Each owner has a process-unique generation number; a thread keeps a few
// slots mapping generations to its T's for them. A slot of an owner that is
// gone is simply reused later (generations never repeat, so a stale slot
// cannot be mistaken for a live owner's). With more live owners than slots
// the oldest slot is given up; the owner then finds the thread's T again in
// its own registry, under its mutex: a thread never gets a second T from one
// owner, whatever the number of owners.
// Thread-safety: Local() from any thread; ForEach() under the owner's lock,
// while other threads may be calling Local().
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace api_tracer {

inline uint64_t NextGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// A number for the calling thread, never reused by a later thread (unlike
// std::thread::id).
inline uint64_t ThisThreadNumber() {
  thread_local const uint64_t number = NextGeneration();
  return number;
}

template <typename T, size_t kSlots = 8>
class PerThread {
 public:
  PerThread() : generation_(NextGeneration()) {}
  PerThread(const PerThread&) = delete;
  PerThread& operator=(const PerThread&) = delete;

  // The calling thread's T; `make(index)` builds it the first time, index
  // being how many threads came before this one.
  template <typename Make>
  T& Local(Make&& make) {
    thread_local std::array<Slot, kSlots> slots;
    Slot* oldest = &slots[0];
    for (Slot& s : slots) {
      if (s.generation == generation_) return *s.value;
      if (s.generation < oldest->generation) oldest = &s;
    }
    std::lock_guard<std::mutex> lock(mu_);
    T*& mine = by_thread_[ThisThreadNumber()];
    if (!mine) {
      all_.push_back(make(all_.size()));
      mine = all_.back().get();
    }
    *oldest = Slot{generation_, mine};
    return *mine;
  }
  T& Local() {
    return Local([](size_t) { return std::make_unique<T>(); });
  }

  // Calls f(T&) on every thread's T, in the order the threads came.
  template <typename F>
  void ForEach(F&& f) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& t : all_) f(*t);
  }

 private:
  struct Slot {
    uint64_t generation = 0;
    T* value = nullptr;
  };

  const uint64_t generation_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<T>> all_;
  std::unordered_map<uint64_t, T*> by_thread_;
};

}  // namespace api_tracer
