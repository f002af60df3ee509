#include "core/key.h"

#include <gtest/gtest.h>

#include "core/test_values.h"

namespace api_tracer {
namespace {

TEST(KeyTest, EveryKindRoundTrips) {
  for (const Value& v : testing::EveryKind()) {
    Value back;
    ASSERT_TRUE(DecodeValue(EncodeValue(v), &back).ok());
    EXPECT_EQ(back, v);
  }
}

TEST(KeyTest, DistinctValuesHaveDistinctKeys) {
  auto values = testing::EveryKind();
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = i + 1; j < values.size(); ++j) {
      EXPECT_NE(EncodeValue(values[i]), EncodeValue(values[j])) << i << " vs " << j;
    }
  }
}

TEST(KeyTest, CallRoundTrips) {
  KeyWriter w;
  w.BeginCall(42, 2);
  w.Int(2);
  w.Write(Value::Tensor(testing::MakeTensor({2, 3})));
  w.BeginKwargs(1);
  w.Keyword("device");
  w.Str("cpu");
  ApiId api;
  Call call;
  ASSERT_TRUE(DecodeCall(w.view(), &api, &call).ok());
  EXPECT_EQ(api, 42u);
  ASSERT_EQ(call.args.size(), 2u);
  EXPECT_EQ(call.args[0], Value::Int(2));
  ASSERT_EQ(call.kwargs.size(), 1u);
  EXPECT_EQ(call.kwargs[0].first, "device");
  EXPECT_EQ(call.kwargs[0].second, Value::Str("cpu"));
}

TEST(KeyTest, TensorFieldsDistinguishKeys) {
  TensorInfo a = testing::MakeTensor({2, 3});
  TensorInfo b = a;
  b.device = "cuda:0";
  TensorInfo c = a;
  c.requires_grad = true;
  TensorInfo d = a;
  d.stride = {1, 2};
  TensorInfo e = a;  // a window of a larger storage
  e.storage_offset = 0;
  e.storage_size = 7;
  TensorInfo f = e;
  f.storage_offset = 1;
  std::string ka = EncodeValue(Value::Tensor(a));
  EXPECT_NE(ka, EncodeValue(Value::Tensor(b)));
  EXPECT_NE(ka, EncodeValue(Value::Tensor(c)));
  EXPECT_NE(ka, EncodeValue(Value::Tensor(d)));
  EXPECT_NE(ka, EncodeValue(Value::Tensor(e)));
  EXPECT_NE(EncodeValue(Value::Tensor(e)), EncodeValue(Value::Tensor(f)));
}

// CheckCall, which builds nothing, accepts what DecodeCall accepts: every
// kind of value, and refuses each cut of such a key.
TEST(KeyTest, CheckingAgreesWithDecoding) {
  auto values = testing::EveryKind();
  KeyWriter w;
  w.BeginCall(7, values.size());
  for (const Value& v : values) w.Write(v);
  w.BeginKwargs(1);
  w.Keyword("k");
  w.Write(Value::List(values));
  std::string key(w.view());
  ApiId api = 0;
  EXPECT_TRUE(CheckCall(key, &api).ok());
  EXPECT_EQ(api, 7u);
  Call call;
  for (size_t n = 0; n < key.size(); n += 7) {
    EXPECT_EQ(CheckCall(key.substr(0, n), &api).ok(), DecodeCall(key.substr(0, n), &api, &call).ok()) << n;
  }
}

TEST(KeyTest, NanIsCanonical) {
  double neg_nan = -std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(EncodeValue(Value::Float(neg_nan)), EncodeValue(Value::Float(std::numeric_limits<double>::quiet_NaN())));
}

TEST(KeyTest, CorruptKeysAreRejected) {
  KeyWriter w;
  w.BeginCall(1, 1);
  w.Str("hello");
  w.BeginKwargs(0);
  std::string key(w.view());
  ApiId api;
  Call call;
  for (size_t n = 0; n < key.size(); ++n) {
    EXPECT_FALSE(DecodeCall(key.substr(0, n), &api, &call).ok()) << n;
    EXPECT_FALSE(CheckCall(key.substr(0, n), &api).ok()) << n;
  }
  EXPECT_FALSE(DecodeCall(key + "x", &api, &call).ok());
  // A huge count must not make the decoder allocate.
  std::string bogus = "\x11\x01\xff\xff\xff\xff\x0f";
  EXPECT_FALSE(DecodeCall(bogus, &api, &call).ok());
}

}  // namespace
}  // namespace api_tracer
