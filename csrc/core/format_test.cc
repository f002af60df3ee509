#include "core/format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/test_values.h"

namespace api_tracer {
namespace {

std::string Repr(double d) {
  std::string s;
  AppendPyFloat(d, &s);
  return s;
}

std::string Fmt(const Value& v, FormatOptions opts = {}) {
  std::string s;
  FormatValue(v, opts, &s);
  return s;
}

TEST(FormatTest, FloatsFollowPythonRepr) {
  // Expected strings are what CPython's repr() prints.
  EXPECT_EQ(Repr(0.1), "0.1");
  EXPECT_EQ(Repr(1.0), "1.0");
  EXPECT_EQ(Repr(-0.0), "-0.0");
  EXPECT_EQ(Repr(1e-05), "1e-05");
  EXPECT_EQ(Repr(0.0001), "0.0001");
  EXPECT_EQ(Repr(1e16), "1e+16");
  EXPECT_EQ(Repr(1e15), "1000000000000000.0");
  EXPECT_EQ(Repr(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(Repr(123456.789), "123456.789");
  EXPECT_EQ(Repr(2.23606797749979), "2.23606797749979");
  EXPECT_EQ(Repr(1.5e-07), "1.5e-07");
  EXPECT_EQ(Repr(1e100), "1e+100");
  EXPECT_EQ(Repr(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(Repr(5e-324), "5e-324");
  EXPECT_EQ(Repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(Repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(Repr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(Repr(std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(FormatTest, ComplexFollowsPythonRepr) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Fmt(Value::Complex(1, 2)), "(1+2j)");
  EXPECT_EQ(Fmt(Value::Complex(0, 1)), "1j");
  EXPECT_EQ(Fmt(Value::Complex(0, -1)), "-1j");
  EXPECT_EQ(Fmt(Value::Complex(-0.0, 1)), "(-0+1j)");
  EXPECT_EQ(Fmt(Value::Complex(1.5, -0.5)), "(1.5-0.5j)");
  EXPECT_EQ(Fmt(Value::Complex(1, 0)), "(1+0j)");
  EXPECT_EQ(Fmt(Value::Complex(nan, inf)), "(nan+infj)");
  EXPECT_EQ(Fmt(Value::Complex(1, -inf)), "(1-infj)");
}

TEST(FormatTest, ProductDescriptionExamples) {
  TensorInfo t = testing::MakeTensor({2, 3});
  Call add{"torch.add", {Value::Tensor(t), Value::Tensor(t)}, {{"alpha", Value::Int(10)}}};
  EXPECT_EQ(FormatCall(add), "torch.add(Tensor([2, 3], \"float32\"), Tensor([2, 3], \"float32\"), alpha=10)");

  TensorInfo strided = testing::MakeTensor({3, 4});
  strided.stride = {1, 3};
  Call addmm{
      "torch.ops.aten.addmm.default",
      {Value::Tensor(testing::MakeTensor({4})), Value::Tensor(testing::MakeTensor({2, 3})), Value::Tensor(strided)},
      {}};
  EXPECT_EQ(FormatCall(addmm),
            "torch.ops.aten.addmm.default(Tensor([4], \"float32\"), Tensor([2, 3], \"float32\"), "
            "Tensor([3, 4], \"float32\", stride=[1, 3]))");

  Call getitem{"torch.Tensor.__getitem__",
               {Value::Tensor(testing::MakeTensor({4, 5}, "int64")),
                Value::Tuple({Value::Slice(Value::None(), Value::Int(2), Value::None()), Value::Ellipsis()})},
               {}};
  EXPECT_EQ(FormatCall(getitem), "torch.Tensor.__getitem__(Tensor([4, 5], \"int64\"), (slice(None, 2, None), ...))");

  Call randn{"torch.randn", {Value::Int(2), Value::Int(3)}, {{"device", Value::Str("cpu")}}};
  EXPECT_EQ(FormatCall(randn), "torch.randn(2, 3, device=\"cpu\")");
  Call zeros{"torch.zeros", {Value::Int(3)}, {{"dtype", Value::Symbol("torch.float16")}}};
  EXPECT_EQ(FormatCall(zeros), "torch.zeros(3, dtype=torch.float16)");
  Call kw_only{"f", {}, {{"k", Value::Str("v")}}};
  EXPECT_EQ(FormatCall(kw_only), "f(k=\"v\")");
  Call none{"g", {}, {}};
  EXPECT_EQ(FormatCall(none), "g()");
}

TEST(FormatTest, ContainersAndObjects) {
  EXPECT_EQ(Fmt(Value::Tuple({Value::Int(1)})), "(1,)");
  EXPECT_EQ(Fmt(Value::Tuple({})), "()");
  EXPECT_EQ(Fmt(Value::List({Value::Int(1), Value::Float(0.5)})), "[1, 0.5]");
  EXPECT_EQ(Fmt(Value::Dict({Value::Str("k"), Value::Int(1), Value::Int(2), Value::None()})), "{\"k\": 1, 2: None}");
  EXPECT_EQ(Fmt(Value::Object("torch.device", {Value::Str("cuda:0")})), "torch.device(\"cuda:0\")");
  EXPECT_EQ(Fmt(Value::Object("torch.Size", {Value::List({Value::Int(2), Value::Int(3)})})), "torch.Size([2, 3])");
  EXPECT_EQ(Fmt(Value::Object("torch.Generator", {Value::Str("cpu")}, {"device"})), "torch.Generator(device=\"cpu\")");
  EXPECT_EQ(Fmt(Value::BigInt("-123456789012345678901")), "-123456789012345678901");
}

TEST(FormatTest, StringEscapes) {
  EXPECT_EQ(Fmt(Value::Str("a\"b\\c\nd\te\x01")), "\"a\\\"b\\\\c\\nd\\te\\x01\"");
  EXPECT_EQ(Fmt(Value::Str("\xc3\xa9")), "\"\xc3\xa9\"");
}

TEST(FormatTest, OptionalTensorFields) {
  TensorInfo t = testing::MakeTensor({2});
  t.device = "cuda:0";
  t.requires_grad = true;
  EXPECT_EQ(Fmt(Value::Tensor(t)), "Tensor([2], \"float32\")");
  FormatOptions all{.tensor_device = true, .tensor_requires_grad = true};
  EXPECT_EQ(Fmt(Value::Tensor(t), all), "Tensor([2], \"float32\", device=\"cuda:0\", requires_grad=True)");
  TensorInfo cpu = testing::MakeTensor({2});
  EXPECT_EQ(Fmt(Value::Tensor(cpu), all), "Tensor([2], \"float32\")");
}

}  // namespace
}  // namespace api_tracer
