#include "core/clock.h"

#include <fstream>
#include <mutex>
#include <string>

namespace api_tracer {

std::atomic<bool> Clock::use_tsc_{false};
uint64_t Clock::base_ticks_ = 0;
int64_t Clock::mult_ = 0;
int64_t Clock::base_ns_ = 0;

namespace {

bool KernelClockIsTsc() {
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  return static_cast<bool>(in >> source) && source == "tsc";
}

}  // namespace

void Clock::Init() {
#if defined(__x86_64__)
  static std::once_flag once;
  std::call_once(once, [] {
    if (!KernelClockIsTsc()) return;
    // A pair: steady_clock between two TSC reads, kept only when they are
    // close (the thread was not preempted in between), the TSC taken as
    // their middle; the rate from two pairs about 1 ms apart.
    auto pair = [](int64_t& ns, uint64_t& ticks) {
      uint64_t best = UINT64_MAX;
      for (int i = 0; i < 100 && best > 200; ++i) {
        uint64_t before = __rdtsc();
        int64_t now = SteadyNow();
        uint64_t after = __rdtsc();
        if (after > before && after - before < best) {
          best = after - before;
          ns = now;
          ticks = before + (after - before) / 2;
        }
      }
      return best != UINT64_MAX;
    };
    int64_t ns0 = 0, ns1 = 0;
    uint64_t t0 = 0, t1 = 0;
    if (!pair(ns0, t0)) return;
    int64_t until = SteadyNow() + 1'000'000;
    while (SteadyNow() < until) {
    }
    if (!pair(ns1, t1)) return;
    if (t1 <= t0) return;
    double ns_per_tick = static_cast<double>(ns1 - ns0) / static_cast<double>(t1 - t0);
    if (!(ns_per_tick > 0.01 && ns_per_tick < 100.0)) return;  // not a plausible counter
    mult_ = static_cast<int64_t>(ns_per_tick * 4294967296.0);
    base_ticks_ = t1;
    base_ns_ = ns1;
    use_tsc_.store(true, std::memory_order_release);
  });
#endif
}

}  // namespace api_tracer
