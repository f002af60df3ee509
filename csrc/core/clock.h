// Clock: the profiler's timestamps, in steady-clock nanoseconds, read in a
// few nanoseconds.
//
// Where the kernel's own clock source is the time-stamp counter (x86-64,
// /sys/devices/system/clocksource/clocksource0/current_clocksource is
// "tsc": the kernel found it invariant and synchronized across cores),
// std::chrono::steady_clock is the TSC scaled by the vDSO, behind a function
// call and a sequence lock. Clock reads the TSC itself (rdtsc) and scales it
// with a rate measured once per process against steady_clock (over about a
// millisecond, at the first Init, from reads not split by preemption): the
// same counter, monotonic, at a fixed rate. Its scale may differ from
// steady_clock's by a few parts in 10^5 from the calibration, plus what NTP
// slews steady_clock by later (at most 500 parts in 10^6). Anywhere else,
// Now() is steady_clock.
// Thread-safety: Init() from any thread (once); Now() after Init().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace api_tracer {

class Clock {
 public:
  // Chooses the source and measures the TSC's rate: before the first Now().
  static void Init();

  static int64_t Now() {
#if defined(__x86_64__)
    if (use_tsc_.load(std::memory_order_acquire)) return FromTicks(__rdtsc());
#endif
    return SteadyNow();
  }

  static int64_t SteadyNow() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  // ns = base_ns + (ticks - base_ticks) * ns_per_tick, ns_per_tick as a
  // 32.32 fixed-point number.
  static int64_t FromTicks(uint64_t ticks) {
    __int128 scaled = static_cast<__int128>(static_cast<int64_t>(ticks - base_ticks_)) * mult_;
    return base_ns_ + static_cast<int64_t>(scaled >> 32);
  }

  static std::atomic<bool> use_tsc_;
  static uint64_t base_ticks_;
  static int64_t mult_, base_ns_;
};

}  // namespace api_tracer
