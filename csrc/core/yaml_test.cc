#include "core/yaml.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/test_values.h"

namespace api_tracer::yaml {
namespace {

TEST(YamlTest, PlainOnlyWhenItLoadsBackAsTheString) {
  for (const char* s : {"cpu", "cuda:0", "torch.float32", "3stacks", "example.py:12 in <module>", "a-b", "x#y",
                        "File \"a.py\", line 3, in f", "\xc3\xa9t\xc3\xa9"}) {
    EXPECT_TRUE(IsPlainString(s)) << s;
  }
  for (const char* s :
       {"",     "true", "False", "yes",   "off",   "null", "~",     "y",    "N",    "12",         "-3",
        "0x1f", "0o17", "1.5",   "1e5",   "1e-05", ".inf", "-.inf", ".nan", "1:20", "2001-12-14", "2001-12-14T21:59:43",
        "+1",   "-.5",  ".5e3",  "0b101", "- x",   "a: b", "a #b",  "#x",   "@x",   "`x",         "x:",
        " x",   "x ",   "a\nb",  "'q'",   "\"q\"", "[x]",  "{x}",   "*x",   "&x",   "!x",         "|",
        ">",    "%x",   "<<",    "="}) {
    EXPECT_FALSE(IsPlainString(s)) << s;
  }
}

TEST(YamlTest, FloatsLoadAsFloats) {
  auto f = [](double d) {
    std::string s;
    AppendFloat(d, &s);
    return s;
  };
  EXPECT_EQ(f(0.1), "0.1");
  EXPECT_EQ(f(1e-05), "1.0e-05");
  EXPECT_EQ(f(1.5e+16), "1.5e+16");
  EXPECT_EQ(f(2.0), "2.0");
  EXPECT_EQ(f(std::numeric_limits<double>::infinity()), ".inf");
  EXPECT_EQ(f(-std::numeric_limits<double>::infinity()), "-.inf");
  EXPECT_EQ(f(std::numeric_limits<double>::quiet_NaN()), ".nan");
}

TEST(YamlTest, RecordBodyMatchesTheGoldenLayout) {
  TensorInfo t = testing::MakeTensor({2, 3});
  Call add{"torch.add", {Value::Tensor(t), Value::Tensor(t)}, {{"alpha", Value::Int(10)}}};
  const char* tensor =
      "  - type: torch.Tensor\n"
      "    shape:\n"
      "    - 2\n"
      "    - 3\n"
      "    dtype: torch.float32\n"
      "    device: cpu\n";
  EXPECT_EQ(RecordBody(add), std::string("  args:\n") + tensor + tensor +
                                 "  kwargs:\n"
                                 "    alpha: 10\n");
  Call ones{"torch.ones", {Value::Int(2), Value::Int(3)}, {}};
  EXPECT_EQ(RecordBody(ones), "  args:\n  - 2\n  - 3\n  kwargs: {}\n");
  Call empty{"f", {}, {}};
  EXPECT_EQ(RecordBody(empty), "  args: []\n  kwargs: {}\n");
}

TEST(YamlTest, TypedFormsOfOtherValues) {
  Call c{"f",
         {Value::Tuple({Value::Int(1)}), Value::List({Value::List({}), Value::List({Value::Int(1)})}),
          Value::Complex(1, -2), Value::Symbol("torch.float16"), Value::Dict({Value::Int(1), Value::Str("a")}),
          Value::Object("torch.device", {Value::Str("cuda:0")})},
         {{"s", Value::Str("true")}}};
  EXPECT_EQ(RecordBody(c),
            "  args:\n"
            "  - type: tuple\n"
            "    items:\n"
            "    - 1\n"
            "  - - []\n"
            "    - - 1\n"
            "  - type: complex\n"
            "    real: 1.0\n"
            "    imag: -2.0\n"
            "  - type: symbol\n"
            "    name: torch.float16\n"
            "  - type: dict\n"
            "    items:\n"
            "    - - 1\n"
            "      - a\n"
            "  - type: object\n"
            "    name: torch.device\n"
            "    args:\n"
            "    - cuda:0\n"
            "  kwargs:\n"
            "    s: \"true\"\n");
}

// What the YAML keeps of a value, for a reader to load it back: distinct
// values of every kind, distinct text.
TEST(YamlTest, DistinctValuesHaveDistinctYaml) {
  auto yaml = [](const Value& v) { return RecordBody(Call{"f", {v}, {}}); };
  auto values = testing::EveryKind();
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = i + 1; j < values.size(); ++j) {
      EXPECT_NE(yaml(values[i]), yaml(values[j])) << i << " vs " << j << ":\n" << yaml(values[i]);
    }
  }
}

}  // namespace
}  // namespace api_tracer::yaml
