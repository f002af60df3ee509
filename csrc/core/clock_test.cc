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
  int64_t steady = Clock::SteadyNow(), mine = Clock::Now();
  EXPECT_NEAR(static_cast<double>(mine), static_cast<double>(steady), 50'000.0);
}

}  // namespace
}  // namespace api_tracer
