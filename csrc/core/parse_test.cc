#include "core/parse.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>

#include "core/format.h"
#include "core/test_values.h"

namespace api_tracer {
namespace {

const FormatOptions kAllFields{.tensor_device = true, .tensor_requires_grad = true};

std::string Text(const Value& v) {
  std::string text;
  FormatValue(v, kAllFields, &text);
  return text;
}

TEST(ParseTest, EveryFormattedValueParsesBack) {
  for (const Value& v : testing::EveryKind()) {
    std::string text = Text(v);
    Value back;
    Status st = ParseValue(text, &back);
    ASSERT_TRUE(st.ok()) << text << ": " << st.message();
    EXPECT_EQ(back, v) << text;
  }
}

TEST(ParseTest, EveryFormattedCallParsesBack) {
  auto values = testing::EveryKind();
  Call call{"torch.ops.aten.add.Tensor", values, {}};
  for (size_t i = 0; i < values.size(); ++i) {
    call.kwargs.emplace_back("k" + std::to_string(i), values[i]);
  }
  std::string line = FormatCall(call, kAllFields);
  Call back;
  Status st = ParseCall(line, &back);
  ASSERT_TRUE(st.ok()) << st.message() << " at " << st.column();
  EXPECT_EQ(back, call);
}

TEST(ParseTest, HiddenTensorFieldsTakeDefaults) {
  TensorInfo t = testing::MakeTensor({2, 3});
  t.device = "cuda:1";
  t.requires_grad = true;
  std::string line = FormatCall({"f", {Value::Tensor(t)}, {}});
  Call back;
  ASSERT_TRUE(ParseCall(line, &back).ok());
  EXPECT_EQ(back.args[0].tensor(), testing::MakeTensor({2, 3}));
}

TEST(ParseTest, AcceptsHandWrittenForms) {
  Call c;
  ASSERT_TRUE(ParseCall("  torch.add( 1 , 2.5e3 ,x='s', y=(1,2,), z=-inf ) ", &c).ok());
  EXPECT_EQ(c.args[1], Value::Float(2500));
  EXPECT_EQ(c.kwargs[0].second, Value::Str("s"));
  EXPECT_EQ(c.kwargs[1].second, Value::Tuple({Value::Int(1), Value::Int(2)}));
  Value v;
  ASSERT_TRUE(ParseValue("\"\\u00e9\\x41\"", &v).ok());
  EXPECT_EQ(v, Value::Str("\xc3\xa9"
                          "A"));
  ASSERT_TRUE(ParseValue("\"\\ud7ff\\ue000\\U0001F600\"", &v).ok());  // around the surrogates
  EXPECT_EQ(v, Value::Str("\xed\x9f\xbf"
                          "\xee\x80\x80"
                          "\xf0\x9f\x98\x80"));
}

// PaddleAPITest's spellings (its config files) read as this project's own
// spellings of the same values do.
TEST(ParseTest, ReadsPaddleApiTestSpellings) {
  const std::pair<const char*, const char*> same[] = {
      {"list[5,0,5,0,]", "[5, 0, 5, 0]"},
      {"list[list[1,],list[1,2,],]", "[[1], [1, 2]]"},
      {"tuple(784,)", "(784,)"},
      {"tuple()", "()"},
      {"tuple(Ellipsis,slice(None,256,None),)", "(..., slice(None, 256, None))"},
      {"Dtype(float16)", "paddle.float16"},
      {"VarType(float32)", "paddle.float32"},
      {"type(numpy.float16)", "numpy.float16"},
      {"type(bool)", "bool"},
      {"complex(1.79e+308,-1.79e+308)", "(1.79e+308-1.79e+308j)"},
      {"complex(1,0)", "(1+0j)"},
      {"1.79769313e+308-1.79769313e+308j", "(1.79769313e+308-1.79769313e+308j)"},
      {"-math.inf", "-inf"},
      {"math.inf", "inf"},
      {"math.nan", "nan"},
      {"Place(cpu)", "paddle.CPUPlace()"},
      {"Place(gpu:0)", "paddle.CUDAPlace(0)"},
      {"Place(gpu_pinned)", "paddle.CUDAPinnedPlace()"},
      {"paddle.Size([2, 3])", "[2, 3]"},
      {"Tensor(paddle.Size([64, 128]),\"bfloat16\")", "Tensor([64, 128], \"bfloat16\")"},
      {"Tensor([3, 2],\"float32\",is_contiguous=False,strides=[1, 3])", "Tensor([3, 2], \"float32\", stride=[1, 3])"},
  };
  for (const auto& [theirs, ours] : same) {
    Value a, b;
    ASSERT_TRUE(ParseValue(theirs, &a).ok()) << theirs;
    ASSERT_TRUE(ParseValue(ours, &b).ok()) << ours;
    EXPECT_EQ(a, b) << theirs;
  }
  Call c;
  ASSERT_TRUE(ParseCall("paddle.sum(Tensor([2],\"float32\"), axis=list[0,], )", &c).ok());  // their ", )"
  EXPECT_EQ(c.kwargs[0].second, Value::List({Value::Int(0)}));
  for (const char* cut : {"paddle.f(list[1,2", "paddle.f(tuple(1,", "paddle.f(Tensor([2], ", "paddle.f(list[Tenso ...",
                          "paddle.f(1, Tenso ..."}) {  // lines cut short
    Status st = ParseCall(cut, &c);
    EXPECT_NE(st.message().find("cut short"), std::string::npos) << cut << ": " << st.message();
  }
}

// Out of double's range a number is what Python's float() makes of it: inf
// when too large, 0 when too small, with the sign kept either way.
TEST(ParseTest, NumbersOutOfRangeAreInfOrZero) {
  const double inf = std::numeric_limits<double>::infinity();
  const double max = std::numeric_limits<double>::max();
  const double tiny = std::numeric_limits<double>::denorm_min();
  const std::string zeros(400, '0');
  const std::pair<std::string, Value> cases[] = {
      {"1e309", Value::Float(inf)},
      {"1.8e308", Value::Float(inf)},
      {"1e999999", Value::Float(inf)},
      {"1e99999999999999999999999999", Value::Float(inf)},
      {"-1e309", Value::Float(-inf)},
      {"1" + zeros + ".5", Value::Float(inf)},
      {"1.7976931348623157e308", Value::Float(max)},
      {"1.7976931348623158e308", Value::Float(max)},  // rounds down to the largest
      {"1.7976931348623159e308", Value::Float(inf)},
      {"1e-400", Value::Float(0.0)},
      {"-1e-400", Value::Float(-0.0)},
      {"1e-99999999999999999999999999", Value::Float(0.0)},
      {"0." + zeros + "1", Value::Float(0.0)},
      {"0." + zeros + "5e400", Value::Float(0.5)},
      {"1" + zeros + "e-400", Value::Float(1.0)},
      {"0e99999999999999999999999999", Value::Float(0.0)},
      {"2e-324", Value::Float(0.0)},  // under half the smallest denormal
      {"3e-324", Value::Float(tiny)},
      {"5e-324", Value::Float(tiny)},
      {"2.2250738585072011e-308", Value::Float(2.2250738585072009e-308)},
      {"1e309j", Value::Complex(0.0, inf)},
      {"-1e309j", Value::Complex(0.0, -inf)},
      {"(1e-400-1e309j)", Value::Complex(0.0, -inf)},
      {"(-1e309+1e-400j)", Value::Complex(-inf, 0.0)},
  };
  for (const auto& [text, expected] : cases) {
    Value v;
    Status st = ParseValue(text, &v);
    ASSERT_TRUE(st.ok()) << text << ": " << st.message();
    EXPECT_TRUE(v == expected) << text << " parsed as " << Text(v);
  }
}

struct BadLine {
  std::string line;
  size_t column;
};

// Integers have any size unless the consumer sets a bound (Python does).
TEST(ParseTest, IntegersOverTheDigitLimitAreRefused) {
  const std::string digits(4301, '9');
  Value v;
  ASSERT_TRUE(ParseValue(digits, &v).ok());
  EXPECT_TRUE(v == Value::BigInt(digits));
  const ParseOptions limit{.max_int_digits = 4300};
  for (const std::string& text : {digits.substr(1), "-" + digits.substr(1), digits + ".0", digits + "j"}) {
    EXPECT_TRUE(ParseValue(text, &v, limit).ok()) << text.substr(0, 8);  // a float has no bound
  }
  EXPECT_TRUE(v == Value::Complex(0, std::numeric_limits<double>::infinity()));
  const BadLine cases[] = {{"f(1, -" + digits + ")", 6}, {"f(" + std::string(4301, '0') + ")", 3}};
  for (const auto& [line, column] : cases) {
    Call call;
    Status st = ParseCall(line, &call, limit);
    EXPECT_EQ(st.code(), Status::Code::kParseError) << line.substr(0, 8);
    EXPECT_EQ(st.column(), column) << st.message();
  }
}

// Python's dict needs hashable keys; an object (a Call) hashes whatever it holds.
TEST(ParseTest, DictKeysMustBeHashable) {
  const ParseOptions python311{.hashable_slices = false};
  const std::string good[] = {"f({(1, None): 2, torch.Size([2]): 3, a(b={1: [2]}): 4, Tensor([2], \"int8\"): 5})",
                              "f({(slice(1, (2,), None),): 1})"};
  for (const std::string& line : good) {
    Call call;
    EXPECT_TRUE(ParseCall(line, &call).ok()) << line;
  }
  const BadLine bad[] = {
      {"f({[1]: 2})", 4}, {"f({1: 2, (1, {}): 3})", 10}, {"f({(1, (2, [3])): 4})", 4}, {"f({slice(1, [2], 3): 4})", 4}};
  for (const auto& [line, column] : bad) {
    Call call;
    Status st = ParseCall(line, &call);
    EXPECT_EQ(st.code(), Status::Code::kParseError) << line;
    EXPECT_EQ(st.column(), column) << line << ": " << st.message();
  }
  Call call;
  Status st = ParseCall("f(1, {(1, slice(1, 2, 3)): 2})", &call, python311);
  EXPECT_EQ(st.column(), 7) << st.message();
  EXPECT_TRUE(ParseCall("f({a(slice(1, 2, 3)): 2})", &call, python311).ok());
}

TEST(ParseTest, ErrorsNameTheColumn) {
  const BadLine cases[] = {
      {"", 1},
      {"torch.add", 10},
      {"torch.add(1, 2", 15},
      {"torch.add(1,, 2)", 13},
      {"torch.add(x=1, 2)", 16},
      {"torch.add(1) junk", 14},
      {"torch.add(\"abc)", 11 + 5},
      {"torch.add((1))", 11},
      {"torch.add(Tensor(2, \"float32\"))", 11},
      {"torch.add(Tensor([2], \"float32\", color=1))", 11},
      {"torch.add(1 + 2)", 13},
      {"torch.add(x=1, x=2)", 16},
      {"f(\"\\q\")", 4},
      {"f(\xc3\xa9)", 3},
      {"f(\"\xc3\xa9\\ud800\")", 5},  // a string holds characters, which surrogates are not
      {"f(\"\\U0000dfff\")", 4},
      {"f(Place(tpu:0))", 3},  // PaddleAPITest's spellings, misspelt
      {"f(Place(gpu:x))", 3},
      {"f(Dtype(numpy.float32))", 3},
      {"f(complex(\"a\"))", 3},
      {"f(-math.pi)", 3},
      {"f(paddle.Size(2))", 3},
      {"f(Tensor([2],\"float32\",is_contiguous=1))", 3},
  };
  for (const auto& c : cases) {
    Call call;
    Status st = ParseCall(c.line, &call);
    EXPECT_EQ(st.code(), Status::Code::kParseError) << c.line;
    EXPECT_EQ(st.column(), c.column) << c.line << ": " << st.message();
  }
}

// A view's window must lie inside the storage it names, so that replay
// never builds a tensor reaching past its storage; hostile sizes and strides
// must not overflow the check.
TEST(ParseTest, StorageWindowsMustHoldTheirElements) {
  const char* good[] = {
      "f(Tensor([10], \"float32\", storage_offset=5, storage_size=20))",
      "f(Tensor([2, 2], \"float32\", stride=[1, 2], storage_offset=16, storage_size=20))",
      "f(Tensor([0, 9], \"float32\", storage_offset=99, storage_size=1))",  // no element
      "f(Tensor([4], \"float32\", stride=[0], storage_offset=3, storage_size=4))",
  };
  for (const char* line : good) {
    Call call;
    Status st = ParseCall(line, &call);
    EXPECT_TRUE(st.ok()) << line << ": " << st.message();
  }
  EXPECT_EQ(Text(Value::Tensor([] {
              TensorInfo t = testing::MakeTensor({10});
              t.storage_offset = 5;
              t.storage_size = 20;
              return t;
            }())),
            "Tensor([10], \"float32\", storage_offset=5, storage_size=20)");
  const char* bad[] = {
      "f(Tensor([10], \"float32\", storage_offset=11, storage_size=20))",
      "f(Tensor([2, 2], \"float32\", stride=[1, 2], storage_offset=17, storage_size=20))",
      "f(Tensor([10], \"float32\", storage_offset=5))",
      "f(Tensor([10], \"float32\", storage_size=20))",
      "f(Tensor([10], \"float32\", storage_offset=-1, storage_size=20))",
      "f(Tensor([3037000500, 3037000500], \"float32\", storage_offset=0, storage_size=20))",
      "f(Tensor([2, 2], \"float32\", stride=[9223372036854775807, 9223372036854775807], "
      "storage_offset=9223372036854775807, storage_size=9223372036854775807))",
  };
  for (const char* line : bad) {
    Call call;
    Status st = ParseCall(line, &call);
    EXPECT_EQ(st.code(), Status::Code::kParseError) << line;
    EXPECT_NE(st.message().find("storage_"), std::string::npos) << line << ": " << st.message();
  }
}

TEST(ParseTest, CodeIsNotAValue) {
  // Configs are data: expressions that would run code do not parse.
  const char* lines[] = {
      "torch.add(__import__(\"os\").system(\"echo hi\"))",  // parses as an object: see below
      "torch.add(lambda: 1)",
      "torch.add(1 if True else 2)",
      "torch.add(x.y[0])",
      "torch.add(f\"{x}\")",
      "torch.add(a; b)",
  };
  Call call;
  // The first line is well-formed data: a call-shaped object named
  // "__import__" whose "method" is not part of the grammar, so it fails at '.'.
  for (const char* line : lines) {
    EXPECT_FALSE(ParseCall(line, &call).ok()) << line;
  }
}

TEST(ParseTest, DeepNestingIsAnErrorNotACrash) {
  std::string line = "f(" + std::string(100000, '[') + std::string(100000, ']') + ")";
  Call call;
  Status st = ParseCall(line, &call);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace api_tracer
