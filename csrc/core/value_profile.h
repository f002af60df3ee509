// ValueProfile: what an integer or bool tensor argument held, small enough
// to keep per config (api_value_ranges.yaml), so that replay draws index
// values the program could have passed:
// - its smallest and largest value;
// - its distinct values, while there are at most kFew of them;
// - past that, its distinct negative values while they are few (sentinels:
//   an ignore_index of -100, a padding index of -1) and the smallest of the
//   others, so the others' range is known apart from them;
// - whether the values were in non-decreasing order (offsets, boundaries:
//   such a tensor starts at its smallest value and ends at its largest).
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
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

  // The profile of `values`, in their order.
  static ValueProfile Of(std::span<const int64_t> values);
  // The profile of both tensors' values (two calls of one config); the
  // order holds where it held in both.
  void Merge(const ValueProfile& other);
  // Adds `v` to the distinct values (and the negatives), keeping the caps.
  void AddDistinct(int64_t v);

  bool operator==(const ValueProfile&) const = default;
};

}  // namespace api_tracer
