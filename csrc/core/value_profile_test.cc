#include "core/value_profile.h"

#include <gtest/gtest.h>

#include <limits>
#include <numeric>

namespace api_tracer {
namespace {

TEST(ValueProfileTest, FewValuesAreKeptWithTheirOrder) {
  ValueProfile p = ValueProfile::Of(std::vector<int64_t>{0, 3, 3, 7});
  EXPECT_TRUE(p.valid && p.sorted && !p.many);
  EXPECT_EQ(p.min, 0);
  EXPECT_EQ(p.max, 7);
  EXPECT_EQ(p.distinct, (std::vector<int64_t>{0, 3, 7}));
  EXPECT_EQ(p.nonneg_min, 0);
  EXPECT_FALSE(ValueProfile::Of(std::vector<int64_t>{2, 1}).sorted);
  EXPECT_FALSE(ValueProfile::Of({}).valid);
}

TEST(ValueProfileTest, PastKFewValuesTheNegativesStayApart) {
  std::vector<int64_t> target(500);
  std::iota(target.begin(), target.end(), 0);
  target[17] = target[200] = -100;  // ignore_index
  ValueProfile p = ValueProfile::Of(target);
  EXPECT_TRUE(p.many && p.distinct.empty());
  EXPECT_FALSE(p.many_negatives);
  EXPECT_EQ(p.negatives, (std::vector<int64_t>{-100}));
  EXPECT_EQ(p.min, -100);
  EXPECT_EQ(p.nonneg_min, 0);
  EXPECT_EQ(p.max, 499);
}

TEST(ValueProfileTest, MergeIsTheProfileOfBothCalls) {
  std::vector<int64_t> a = {0, 2, 4}, b = {1, 1, -1}, both = {0, 2, 4, 1, 1, -1};
  ValueProfile p = ValueProfile::Of(a);
  p.Merge(ValueProfile::Of(b));
  ValueProfile expected = ValueProfile::Of(both);
  expected.sorted = false;  // order is per call: neither, here
  expected.same_sum = false;  // sums are per call: 6 and 1
  expected.sum = 0;
  EXPECT_EQ(p, expected);
  ValueProfile sorted = ValueProfile::Of(a);
  sorted.Merge(ValueProfile::Of(std::vector<int64_t>{5, 9}));
  EXPECT_TRUE(sorted.sorted);  // each call's values were in order
  ValueProfile empty;
  empty.Merge(p);
  EXPECT_EQ(empty, p);
  // Segment lengths adding up to the data's length in every call keep
  // their sum; one call of another sum, or one that overflows, loses it.
  ValueProfile lengths = ValueProfile::Of(std::vector<int64_t>{1, 3, 0, 2});
  lengths.Merge(ValueProfile::Of(std::vector<int64_t>{2, 2, 2, 0}));
  EXPECT_TRUE(lengths.same_sum);
  EXPECT_EQ(lengths.sum, 6);
  ValueProfile other = lengths;
  other.Merge(ValueProfile::Of(std::vector<int64_t>{2, 2, 2, 1}));
  EXPECT_FALSE(other.same_sum);
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(ValueProfile::Of(std::vector<int64_t>{big, 1}).same_sum);
  EXPECT_TRUE(ValueProfile::Of(std::vector<int64_t>{big, -1}).same_sum);
  std::vector<int64_t> wide(40);
  std::iota(wide.begin(), wide.end(), 0);
  p.Merge(ValueProfile::Of(wide));
  EXPECT_TRUE(p.many && p.distinct.empty());
  EXPECT_EQ(p.negatives, (std::vector<int64_t>{-1}));
}

TEST(ValueProfileTest, AFloatingTensorKeepsItsFiniteRangeAndWhatElseItHeld) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {0.25, nan, 0.75, -inf, 0.5};
  ValueProfile p = ValueProfile::OfFloats(values);
  EXPECT_TRUE(p.valid && p.floating && p.finite);
  EXPECT_EQ(p.fmin, 0.25);
  EXPECT_EQ(p.fmax, 0.75);
  EXPECT_TRUE(p.nan && p.neginf && !p.posinf);

  std::vector<double> more = {inf, 2.0};
  p.Merge(ValueProfile::OfFloats(more));
  EXPECT_EQ(p.fmin, 0.25);
  EXPECT_EQ(p.fmax, 2.0);
  EXPECT_TRUE(p.posinf);

  std::vector<double> none_finite = {nan};
  ValueProfile q = ValueProfile::OfFloats(none_finite);
  EXPECT_TRUE(q.valid && !q.finite && q.nan);
  q.Merge(ValueProfile::OfFloats(values));  // the finite range comes with the first finite values
  EXPECT_TRUE(q.finite);
  EXPECT_EQ(q.fmin, 0.25);
  EXPECT_EQ(q.fmax, 0.75);

  std::vector<int64_t> ints = {1, 2};
  ValueProfile i = ValueProfile::Of(ints);
  i.Merge(p);  // another kind: kept as it was
  EXPECT_EQ(i, ValueProfile::Of(ints));
  EXPECT_FALSE(ValueProfile::OfFloats({}).valid);
}

}  // namespace
}  // namespace api_tracer
