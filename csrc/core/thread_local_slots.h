// ThreadLocalSlots: per-thread state belonging to one object (an Aggregator's
// config cache, a TraceWriter's buffer), found without a lock.
//
// Each owner has a process-unique generation number; a thread keeps a few
// slots keyed by it. A slot of an owner that is gone is simply reused later
// (generations never repeat, so a stale slot cannot be mistaken for a live
// owner's); with more live owners than slots, the oldest owner's slot is
// given up, which costs that owner a rebuild, never correctness.
// Thread-safety: each thread touches only its own slots.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

namespace api_tracer {

inline uint64_t NextGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// T must be default-constructible; Get() returns this thread's T for the
// owner with `generation`, freshly made the first time.
template <typename T, typename Tag, size_t kSlots = 8>
class ThreadLocalSlots {
 public:
  static T& Get(uint64_t generation) {
    thread_local std::array<Slot, kSlots> slots;
    Slot* oldest = &slots[0];
    for (Slot& s : slots) {
      if (s.generation == generation) return *s.value;
      if (s.generation < oldest->generation) oldest = &s;
    }
    oldest->generation = generation;
    oldest->value = std::make_unique<T>();
    return *oldest->value;
  }

 private:
  struct Slot {
    uint64_t generation = 0;
    std::unique_ptr<T> value;
  };
};

}  // namespace api_tracer
