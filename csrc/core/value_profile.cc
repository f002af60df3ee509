#include "core/value_profile.h"

#include <algorithm>

namespace api_tracer {
namespace {

// Inserts `v` into the ascending `set`; past kFew values the set is dropped
// and `*many` set.
void Insert(std::vector<int64_t>* set, bool* many, int64_t v) {
  if (*many) return;
  auto it = std::lower_bound(set->begin(), set->end(), v);
  if (it != set->end() && *it == v) return;
  if (set->size() == ValueProfile::kFew) {
    set->clear();
    *many = true;
    return;
  }
  set->insert(it, v);
}

}  // namespace

void ValueProfile::AddDistinct(int64_t v) {
  Insert(&distinct, &many, v);
  if (v < 0) Insert(&negatives, &many_negatives, v);
}

ValueProfile ValueProfile::Of(std::span<const int64_t> values) {
  ValueProfile p;
  if (values.empty()) return p;
  p.valid = true;
  p.min = p.max = values[0];
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t v = values[i];
    p.min = std::min(p.min, v);
    p.max = std::max(p.max, v);
    if (i && v < values[i - 1]) p.sorted = false;
    if (v >= 0) p.nonneg_min = std::min(p.nonneg_min, v);
    p.same_sum = p.same_sum && !__builtin_add_overflow(p.sum, v, &p.sum);
    p.AddDistinct(v);
  }
  if (!p.same_sum) p.sum = 0;
  return p;
}

void ValueProfile::Merge(const ValueProfile& other) {
  if (!other.valid) return;
  if (!valid) {
    *this = other;
    return;
  }
  if (floating != other.floating) return;
  if (floating) {
    if (other.finite) {
      fmin = finite ? std::min(fmin, other.fmin) : other.fmin;
      fmax = finite ? std::max(fmax, other.fmax) : other.fmax;
      finite = true;
    }
    nan = nan || other.nan;
    posinf = posinf || other.posinf;
    neginf = neginf || other.neginf;
    return;
  }
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  sorted = sorted && other.sorted;
  nonneg_min = std::min(nonneg_min, other.nonneg_min);
  same_sum = same_sum && other.same_sum && sum == other.sum;
  if (!same_sum) sum = 0;
  if (other.many) {
    distinct.clear();
    many = true;
  }
  for (int64_t v : other.distinct) Insert(&distinct, &many, v);
  if (other.many_negatives) {
    negatives.clear();
    many_negatives = true;
  }
  for (int64_t v : other.negatives) Insert(&negatives, &many_negatives, v);
}

}  // namespace api_tracer
