#include "core/value.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "core/test_values.h"

namespace api_tracer {
namespace {

struct NamedKind {
  Value::Kind kind;
  const char* name;
};
#define API_TRACER_NAMED_KIND(kind) {Value::Kind::kind, #kind},
constexpr NamedKind kKinds[] = {API_TRACER_VALUE_KINDS(API_TRACER_NAMED_KIND)};
#undef API_TRACER_NAMED_KIND
static_assert(std::size(kKinds) == Value::kNumKinds);

// The key, parse and YAML tests round-trip testing::EveryKind(): a kind added
// to the table without values there would go untested.
TEST(ValueTest, EveryKindHasValuesForTheRoundTripTests) {
  std::vector<Value> values = testing::EveryKind();
  for (const auto& [kind, name] : kKinds) {
    EXPECT_TRUE(std::any_of(values.begin(), values.end(), [kind](const Value& v) { return v.kind() == kind; }))
        << "testing::EveryKind() has no value of kind " << name;
  }
}

}  // namespace
}  // namespace api_tracer
