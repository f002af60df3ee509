#include "core/flat_index.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace api_tracer {
namespace {

TEST(FlatIndexTest, FindsWhatWasInsertedAcrossGrowth) {
  FlatIndex index;
  EXPECT_EQ(index.Find(42), -1);
  for (int i = 1; i <= 10000; ++i) index.Insert(static_cast<uint64_t>(i) * 4096, i);
  EXPECT_EQ(index.size(), 10000u);
  for (int i = 1; i <= 10000; ++i) ASSERT_EQ(index.Find(static_cast<uint64_t>(i) * 4096), i);
  EXPECT_EQ(index.Find(4097), -1);
}

}  // namespace
}  // namespace api_tracer
