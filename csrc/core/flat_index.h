// FlatIndex: a map from nonzero 64-bit keys (0 marks an empty slot) (addresses, packed numbers) to
// int32 values, for one thread's lookups on a hot path: open addressing,
// linear probing, no allocation per entry, no lock.
// Thread-safety: none; one thread owns it.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace api_tracer {

class FlatIndex {
 public:
  // The value stored for `key` (nonzero), or -1.
  int32_t Find(uint64_t key) const {
    assert(key != 0);
    if (keys_.empty()) return -1;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return values_[i];
      if (keys_[i] == 0) return -1;
    }
  }

  // Stores `value` for `key` (nonzero, not yet present).
  void Insert(uint64_t key, int32_t value) {
    assert(key != 0);
    if (2 * (size_ + 1) > keys_.size()) Grow();
    Place(key, value);
    ++size_;
  }

  size_t size() const { return size_; }

  void Clear() { *this = FlatIndex(); }

 private:
  size_t Home(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }

  void Place(uint64_t key, int32_t value) {
    size_t i = Home(key);
    while (keys_[i] != 0) i = (i + 1) & mask_;
    keys_[i] = key;
    values_[i] = value;
  }

  void Grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<int32_t> values = std::move(values_);
    int bits = 64 - shift_ + 1;
    keys_.assign(size_t{1} << bits, 0);
    values_.assign(keys_.size(), 0);
    mask_ = keys_.size() - 1;
    shift_ = 64 - bits;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != 0) Place(keys[i], values[i]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  size_t size_ = 0, mask_ = 0;
  int shift_ = 61;  // 16 slots at the first insert (64 - 61 + 1 bits)
};

}  // namespace api_tracer
