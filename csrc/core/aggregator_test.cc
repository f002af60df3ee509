#include "core/aggregator.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/test_values.h"

namespace api_tracer {
namespace {

std::string Key(ApiId api, std::vector<Value> args) {
  KeyWriter w;
  w.BeginCall(api, args.size());
  for (const auto& a : args) w.Write(a);
  w.BeginKwargs(0);
  return std::string(w.view());
}

TEST(AggregatorTest, DeduplicatesAndCounts) {
  ApiTable apis;
  Aggregator agg(&apis, {});
  ApiId add = apis.Intern("torch.add");
  ApiId ones = apis.Intern("torch.ones");
  Status st;
  const auto* c1 = agg.Record(Key(ones, {Value::Int(2)}), &st);
  const auto* c2 = agg.Record(Key(add, {Value::Int(1)}), &st);
  const auto* c3 = agg.Record(Key(add, {Value::Int(1)}), &st);
  const auto* c4 = agg.Record(Key(add, {Value::Int(2)}), &st);
  ASSERT_TRUE(c1 && c2 && c3 && c4);
  EXPECT_EQ(c2, c3);
  EXPECT_NE(c2, c4);
  EXPECT_EQ(c2->line(), "torch.add(1)");
  EXPECT_EQ(c2->count.load(), 2u);
  EXPECT_EQ(*c2->yaml_header, "- api: torch.add\n");
  auto counts = agg.ApiCounts();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0].api, ones);  // first seen
  EXPECT_EQ(counts[0].count, 1u);
  EXPECT_EQ(counts[1].api, add);
  EXPECT_EQ(counts[1].count, 3u);
  EXPECT_EQ(agg.ConfigLines().size(), 3u);
}

TEST(AggregatorTest, CorruptKeyIsReported) {
  ApiTable apis;
  Aggregator agg(&apis, {});
  Status st;
  EXPECT_EQ(agg.Record("garbage", &st), nullptr);
  EXPECT_FALSE(st.ok());
}

TEST(AggregatorTest, KeepsThreeDistinctStacksInFirstSeenOrder) {
  ApiTable apis;
  Aggregator agg(&apis, {});
  ApiId f = apis.Intern("f");
  int made = 0;
  auto make = [&](std::string frame) {
    return [&made, frame] {
      ++made;
      return Stack{frame};
    };
  };
  EXPECT_TRUE(agg.WantsStack(f));
  agg.AddStack(f, 1, make("a"));
  agg.AddStack(f, 1, make("a again"));
  agg.AddStack(f, 2, make("b"));
  agg.AddStack(f, 3, make("c"));
  EXPECT_FALSE(agg.WantsStack(f));
  agg.AddStack(f, 4, make("d"));
  EXPECT_EQ(made, 3);
  auto stacks = agg.Stacks();
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_EQ(stacks[0].second, (std::vector<Stack>{{"a"}, {"b"}, {"c"}}));
}

TEST(AggregatorTest, ManyThreadsCountEveryCall) {
  ApiTable apis;
  Aggregator agg(&apis, {});
  constexpr int kThreads = 8, kCalls = 20000, kConfigs = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ApiId api = apis.Intern(t % 2 ? "odd" : "even");
      for (int i = 0; i < kCalls; ++i) {
        Status st;
        ASSERT_NE(agg.Record(Key(api, {Value::Int(i % kConfigs)}), &st), nullptr);
      }
    });
  }
  for (auto& t : threads) t.join();
  uint64_t total = 0;
  for (const auto& c : agg.ApiCounts()) total += c.count;
  EXPECT_EQ(total, uint64_t{kThreads} * kCalls);
  EXPECT_EQ(agg.ConfigLines().size(), 2u * kConfigs);
}

}  // namespace
}  // namespace api_tracer

namespace api_tracer {
namespace {

TEST(AggregatorTest, ValueProfilesMergePerConfig) {
  ApiTable apis;
  Aggregator agg(&apis, {}, /*value_profiles=*/true);
  ApiId emb = apis.Intern("torch.ops.aten.embedding.default");
  TensorInfo weight = testing::MakeTensor({10, 4});
  TensorInfo index = testing::MakeTensor({3}, "int64");
  auto record = [&](std::vector<int64_t> values) {
    KeyWriter w;
    w.BeginCall(emb, 2);
    w.Write(Value::Tensor(weight));
    w.Write(Value::List({Value::Tensor(index), Value::Tensor(testing::MakeTensor({0}, "bool"))}));
    w.BeginKwargs(0);
    w.AddProfile(ValueProfile::Of(values));
    w.AddProfile(ValueProfile::Of({}));
    Status st;
    ASSERT_NE(agg.Record(w.view(), w.profiles(), &st), nullptr);
  };
  record({3, 5, 7});
  record({0, 5, 5});
  record({9, 2, 4});
  auto profiles = agg.ValueProfiles();
  ASSERT_EQ(profiles.size(), 1u);
  ASSERT_EQ(profiles[0].second.size(), 1u);  // the empty bool tensor never held a value
  const auto& [path, p] = profiles[0].second[0];
  EXPECT_EQ(path, "args[1][0]");
  EXPECT_EQ(p.min, 0);
  EXPECT_EQ(p.max, 9);
  EXPECT_EQ(p.distinct, (std::vector<int64_t>{0, 2, 3, 4, 5, 7, 9}));
  EXPECT_FALSE(p.sorted);  // the third call's values were not in order
}

TEST(AggregatorTest, ManyAggregatorsOnOneThreadKeepTheirOwnCaches) {
  ApiTable apis;
  ApiId f = apis.Intern("f");
  std::vector<std::unique_ptr<Aggregator>> aggs;
  for (int i = 0; i < 20; ++i) aggs.push_back(std::make_unique<Aggregator>(&apis, FormatOptions{}));
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < aggs.size(); ++i) {
      Status st;
      ASSERT_NE(aggs[i]->Record(Key(f, {Value::Int(static_cast<int64_t>(i))}), &st), nullptr);
    }
  }
  for (size_t i = 0; i < aggs.size(); ++i) {
    auto counts = aggs[i]->ApiCounts();
    ASSERT_EQ(counts.size(), 1u);
    EXPECT_EQ(counts[0].count, 3u);
    EXPECT_EQ(aggs[i]->ConfigLines(), std::vector<std::string>{"f(" + std::to_string(i) + ")"});
  }
}

}  // namespace
}  // namespace api_tracer
