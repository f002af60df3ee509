// ValueProfile: what an integer or bool tensor argument held, small enough
// to keep per config (api_value_ranges.yaml), so that replay draws index
// values the program could have passed:
// - its smallest and largest value;
// - its distinct values, while there are at most kFew of them;
// - past that, its distinct negative values while they are few (sentinels:
//   an ignore_index of -100, a padding index of -1) and the smallest of the
//   others, so the others' range is known apart from them;
// - whether the values were in non-decreasing order (offsets, boundaries:
//   such a tensor starts at its smallest value and ends at its largest);
// - their sum, while every call's was the same: what ties such a tensor to
//   another argument's size (segment_reduce's lengths add up to the data's
//   length, ctc_loss's target lengths to the targets', a mask's count of
//   true values to masked_scatter's source).
// A floating tensor's profile (float_ranges; `floating` set) keeps instead
// the range of its finite values, which says their sign and whether they
// lie in [0, 1] (probabilities), and which non-finite values it held.
// Thread-safety: a plain value.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

namespace api_tracer {

struct ValueProfile {
  static constexpr size_t kFew = 16;

  bool valid = false;  // false: no value seen (an empty tensor)
  int64_t min = 0, max = 0;
  bool sorted = true;
  std::vector<int64_t> distinct;  // ascending, while !many
  bool many = false;
  std::vector<int64_t> negatives;  // ascending, while !many_negatives
  bool many_negatives = false;
  int64_t nonneg_min = std::numeric_limits<int64_t>::max();  // the smallest value >= 0 (max(): none)
  bool same_sum = true;  // every call's values added up to `sum` (false: they differed, or overflowed)
  int64_t sum = 0;

  // A floating tensor's: `valid` where any value was seen, `finite` where a
  // finite one was (then [fmin, fmax] holds them), and the others it held.
  bool floating = false;
  bool finite = false;
  double fmin = 0, fmax = 0;
  bool nan = false, posinf = false, neginf = false;

  // The profile of `values`, in their order.
  static ValueProfile Of(std::span<const int64_t> values);
  // The profile of a floating tensor's `values` (double, float, or a type
  // that converts to float: c10::Half, c10::BFloat16): one pass, with no
  // branch on the way for finite values.
  template <typename T>
  static ValueProfile OfFloats(std::span<const T> values);
  static ValueProfile OfFloats(std::span<const double> values) { return OfFloats<double>(values); }
  // The profile of both tensors' values (two calls of one config); the
  // order holds where it held in both. Profiles of two kinds (integer and
  // floating: no config has both at one path) keep the first's.
  void Merge(const ValueProfile& other);
  // Adds `v` to the distinct values (and the negatives), keeping the caps.
  void AddDistinct(int64_t v);

  bool operator==(const ValueProfile&) const = default;
};

template <typename T>
ValueProfile ValueProfile::OfFloats(std::span<const T> values) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  ValueProfile p;
  p.floating = true;
  if (values.empty()) return p;
  p.valid = true;
  Acc lo = std::numeric_limits<Acc>::infinity(), hi = -lo;
  bool nonfinite = false;
  for (const T& raw : values) {
    Acc v = static_cast<Acc>(raw);
    bool finite = std::isfinite(v);
    lo = finite && v < lo ? v : lo;
    hi = finite && v > hi ? v : hi;
    nonfinite |= !finite;
  }
  if (nonfinite) {  // which ones: rare, a second pass
    for (const T& raw : values) {
      Acc v = static_cast<Acc>(raw);
      if (std::isnan(v))
        p.nan = true;
      else if (std::isinf(v))
        (v > 0 ? p.posinf : p.neginf) = true;
    }
  }
  p.finite = lo <= hi;
  if (p.finite) {
    p.fmin = static_cast<double>(lo);
    p.fmax = static_cast<double>(hi);
  }
  return p;
}

}  // namespace api_tracer
