// Values of every kind, for the round-trip tests (test-only header);
// value_test.cc checks that each kind of Value's table has some.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "core/value.h"

namespace api_tracer::testing {

inline TensorInfo MakeTensor(std::vector<int64_t> shape, std::string dtype = "float32") {
  TensorInfo t;
  t.shape = std::move(shape);
  t.dtype = std::move(dtype);
  return t;
}

inline std::vector<Value> EveryKind() {
  using V = Value;
  TensorInfo strided = MakeTensor({3, 4});
  strided.stride = {1, 3};
  TensorInfo window = MakeTensor({2, 2});  // a view at offset 5 of a 20-element storage
  window.stride = {1, 2};
  window.storage_offset = 5;
  window.storage_size = 20;
  TensorInfo scalar = MakeTensor({}, "int64");
  TensorInfo sparse = MakeTensor({5, 5}, "float64");
  sparse.layout = "torch.sparse_coo";
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {
      V::None(),
      V::Bool(true),
      V::Bool(false),
      V::Int(0),
      V::Int(-7),
      V::Int(std::numeric_limits<int64_t>::max()),
      V::Int(std::numeric_limits<int64_t>::min()),
      V::BigInt("123456789012345678901234567890"),
      V::BigInt("-99999999999999999999"),
      V::Float(0.1),
      V::Float(1e-05),
      V::Float(-0.0),
      V::Float(1e16),
      V::Float(123.0),
      V::Float(2.5e-300),
      V::Float(inf),
      V::Float(-inf),
      V::Float(nan),
      V::Complex(1, 2),
      V::Complex(0, 1),
      V::Complex(-0.0, -1),
      V::Complex(1.5, -inf),
      V::Complex(nan, nan),
      V::Complex(0, -2.5),
      V::Str(""),
      V::Str("cpu"),
      V::Str("a \"quoted\" \\ line\nnext\ttab\x01"),
      V::Str("\xc3\xa9t\xc3\xa9"),
      V::Ellipsis(),
      V::List({}),
      V::List({V::Int(1), V::List({V::Int(2), V::Str("x")})}),
      V::Tuple({}),
      V::Tuple({V::Int(1)}),
      V::Tuple({V::None(), V::Ellipsis()}),
      V::Dict({}),
      V::Dict({V::Str("k"), V::Int(1), V::Int(2), V::Float(0.5)}),
      V::Slice(V::None(), V::Int(2), V::None()),
      V::Tensor(MakeTensor({2, 3})),
      V::Tensor(strided),
      V::Tensor(window),
      V::Tensor(scalar),
      V::Tensor(sparse),
      V::Symbol("torch.float16"),
      V::Symbol("torch.channels_last"),
      V::Object("torch.device", {V::Str("cuda:0")}),
      V::Object("torch.Size", {V::List({V::Int(2), V::Int(3)})}),
      V::Object("torch.nn.Linear", {V::Int(3), V::Int(4), V::Bool(false)}, {"bias"}),
      V::Object("Opaque", {V::Str("mylib.Thing")}),
      V::Object("torch.Generator", {V::Str("cpu")}, {"device"}),
  };
}

}  // namespace api_tracer::testing
