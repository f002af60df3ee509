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
    // Each pair read back to back; the rate from two pairs about 1 ms apart.
    auto pair = [](int64_t& ns, uint64_t& ticks) {
      ticks = __rdtsc();
      ns = SteadyNow();
    };
    int64_t ns0, ns1;
    uint64_t t0, t1;
    pair(ns0, t0);
    do {
      pair(ns1, t1);
    } while (ns1 - ns0 < 1'000'000);
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
