// The key of a call: a compact binary encoding of an API id and its arguments.
//
// This is what the hot path produces. A converter (Python objects in
// csrc/python, IValues in csrc/aten) writes a call straight into a KeyWriter,
// without building a Value tree; the key is then hashed and looked up (see
// aggregator.h). Only a key seen for the first time is decoded back into a
// Call to be formatted. The encoding is injective: equal keys <=> equal calls.
//
// Layout: every value is a tag byte followed by its payload; counts and
// lengths are LEB128 varints; integers are zigzag varints; doubles are their
// 8 raw bytes (NaN canonicalized).
//
// Thread-safety: a KeyWriter is used by one thread at a time (the converters
// keep one per thread and reuse its buffer, so steady-state encoding does not
// allocate).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/value.h"
#include "core/value_profile.h"

namespace api_tracer {

using ApiId = uint32_t;

// How deep the converters follow nested arguments (lists of lists, ...):
// a value past it is written as Opaque(its type). Readers of other formats
// refuse deeper values rather than have them cut (_C.MAX_VALUE_DEPTH).
constexpr int kMaxValueDepth = 32;

// What the hot path knows of a tensor, as views into the converter's memory.
struct TensorFields {
  std::span<const int64_t> shape;
  std::span<const int64_t> stride;  // empty when contiguous
  std::string_view dtype;
  std::string_view device;
  bool requires_grad = false;
  std::string_view layout;    // empty for torch.strided
  std::string_view subclass;  // empty for torch.Tensor
  int64_t nnz = -1;           // sparse: specified elements
  std::string_view qscheme;   // quantized: the scheme (empty: not quantized)
  double scale = 0;
  int64_t zero_point = 0;
  int64_t axis = -1;
  int64_t storage_offset = -1;  // a view not covering its storage (TensorInfo)
  int64_t storage_size = -1;
};

class KeyWriter {
 public:
  void Clear() {
    buf_.clear();
    profiles_.clear();
  }
  std::string_view view() const { return buf_; }

  // Value profiles, one per integer or bool tensor written, in the order
  // they were written; converters add them only when asked to. Not part of
  // the key: profiles are merged per config (aggregator.h).
  void AddProfile(ValueProfile p) { profiles_.push_back(std::move(p)); }
  const std::vector<ValueProfile>& profiles() const { return profiles_; }

  // A call is BeginCall, `nargs` values, BeginKwargs, then `nkwargs` times
  // Keyword + value.
  void BeginCall(ApiId api, size_t nargs);
  void BeginKwargs(size_t nkwargs);
  void Keyword(std::string_view name);

  void None();
  void Bool(bool b);
  void Int(int64_t i);
  void BigInt(std::string_view digits);
  void Float(double d);
  void Complex(double re, double im);
  void Str(std::string_view s);
  void Ellipsis();
  void BeginList(size_t n);
  void BeginTuple(size_t n);
  void BeginDict(size_t n);  // then n times key, value
  void BeginSlice();         // then start, stop, step
  void Tensor(const TensorFields& t);
  void Symbol(std::string_view name);
  // Then `nargs` values, then `nkwargs` times Keyword + value.
  void BeginObject(std::string_view name, size_t nargs, size_t nkwargs);

  // Writes an already built value (used by tests, the parser's users and
  // cold paths; the converters write directly).
  void Write(const Value& v);

  // Appends an already encoded value, e.g. one cached per object.
  void Raw(std::string_view encoded) { buf_.append(encoded); }

 private:
  void Tag(uint8_t t) { buf_.push_back(static_cast<char>(t)); }
  void Varint(uint64_t v);
  void Text(std::string_view s);
  void Double(double d);

  std::string buf_;
  std::vector<ValueProfile> profiles_;
};

// Whether values of this dtype (a Python dtype name) are integers or bools;
// floating ("float32", "bfloat16", "float8_e4m3fn": not complex).
bool IsIntegralDtype(std::string_view dtype);
bool IsFloatingDtype(std::string_view dtype);
// Whether a tensor of this dtype gets a ValueProfile: integer and bool ones,
// and floating ones where `floats` (float_ranges) asks.
inline bool IsProfiledDtype(std::string_view dtype, bool floats) {
  return IsIntegralDtype(dtype) || (floats && IsFloatingDtype(dtype));
}

// Decodes a key written by BeginCall...: its API id and arguments. `out->api`
// is left empty (the id names it). Corruption if the key is malformed.
Status DecodeCall(std::string_view key, ApiId* api, Call* out);
// Checks `key` as DecodeCall does, building nothing: *api only.
inline Status CheckCall(std::string_view key, ApiId* api) { return DecodeCall(key, api, nullptr); }

// Encodes and decodes a single value (no call header).
std::string EncodeValue(const Value& v);
Status DecodeValue(std::string_view encoded, Value* out);

}  // namespace api_tracer
