#include "core/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace api_tracer {
namespace {

TEST(ClockTest, IsSteadyClockNanosecondsAndNeverGoesBack) {
  Clock::Init();
  int64_t before = Clock::SteadyNow();
  int64_t ours = Clock::Now();
  int64_t after = Clock::SteadyNow();
  // The same clock: between two steady-clock reads, give or take the
  // rate's few parts in 10^5 since Init.
  EXPECT_GE(ours, before - 50'000);
  EXPECT_LE(ours, after + 50'000);
  int64_t last = Clock::Now();
  for (int i = 0; i < 1'000'000; ++i) {
    int64_t now = Clock::Now();
    ASSERT_GE(now, last);
    last = now;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Still the same clock, read between two steady-clock reads (a thread
  // preempted between two reads would see them far apart: the tightest
  // bracket of a few tries is kept).
  int64_t lo = 0, mine = 0, hi = INT64_MAX / 2;
  for (int i = 0; i < 1000 && hi - lo > 10'000; ++i) {
    int64_t a = Clock::SteadyNow(), m = Clock::Now(), b = Clock::SteadyNow();
    if (b - a < hi - lo) lo = a, mine = m, hi = b;
  }
  EXPECT_GE(mine, lo - 50'000);
  EXPECT_LE(mine, hi + 50'000);
}

}  // namespace
}  // namespace api_tracer
