#include "core/writers.h"

#include <gtest/gtest.h>

#include <sstream>

namespace api_tracer {
namespace {

class WritersTest : public ::testing::Test {
 protected:
  void Call(const char* api, int arg, int times = 1) {
    KeyWriter w;
    w.BeginCall(apis_.Intern(api), 1);
    w.Int(arg);
    w.BeginKwargs(0);
    for (int i = 0; i < times; ++i) {
      Status st;
      last_ = agg_.Record(w.view(), &st);
    }
  }
  ApiTable apis_;
  Aggregator agg_{&apis_, {}};
  const Aggregator::Config* last_ = nullptr;
};

TEST_F(WritersTest, StatisticsSortByCountThenFirstSeen) {
  Call("torch.randn", 1);
  Call("torch.zeros", 1, 3);
  Call("torch.add", 1);
  Call("torch.add", 2);
  Call("torch.abs", 1, 2);
  std::ostringstream out;
  WriteStatistics(agg_, out);
  EXPECT_EQ(out.str(),
            "Total APIs: 4\n"
            "Total API calls: 8\n"
            "\n"
            "torch.zeros: 3 (37.50%)\n"
            "torch.add: 2 (25.00%)\n"
            "torch.abs: 2 (25.00%)\n"
            "torch.randn: 1 (12.50%)\n");
}

TEST_F(WritersTest, ApisAndConfigsAreSortedBytewise) {
  Call("torch.zeros", 10);
  Call("torch.Tensor.sum", 1);
  Call("torch.add", 2);
  Call("torch.add", 1);
  std::ostringstream apis, configs;
  WriteApis(agg_, apis);
  WriteConfigs(agg_, configs);
  EXPECT_EQ(apis.str(), "torch.Tensor.sum\ntorch.add\ntorch.zeros\n");
  EXPECT_EQ(configs.str(), "torch.Tensor.sum(1)\ntorch.add(1)\ntorch.add(2)\ntorch.zeros(10)\n");
}

TEST_F(WritersTest, EmptySetWritesEmptySummaries) {
  std::ostringstream apis, stats, stacks;
  WriteApis(agg_, apis);
  WriteStatistics(agg_, stats);
  WriteStacks(agg_, stacks);
  EXPECT_EQ(apis.str(), "");
  EXPECT_EQ(stats.str(), "Total APIs: 0\nTotal API calls: 0\n\n");
  EXPECT_EQ(stacks.str(), "{}\n");
}

TEST_F(WritersTest, StacksFile) {
  Call("torch.ones", 1);
  ApiId ones = apis_.Intern("torch.ones");
  ApiId add = apis_.Intern("torch.add");
  agg_.AddStack(ones, 1, [] { return Stack{"a.py:3 in <module>"}; });
  agg_.AddStack(add, 1, [] { return Stack{"a.py:9 in main", "a.py:12 in f"}; });
  agg_.AddStack(add, 2, [] { return Stack{"b.py:1 in <module>"}; });
  std::ostringstream out;
  WriteStacks(agg_, out);
  EXPECT_EQ(out.str(),
            "torch.add:\n"
            "  3stacks:\n"
            "  - - a.py:9 in main\n"
            "    - a.py:12 in f\n"
            "  - - b.py:1 in <module>\n"
            "torch.ones:\n"
            "  3stacks:\n"
            "  - - a.py:3 in <module>\n");
}

TEST_F(WritersTest, TraceStreamsInCallOrderAndFlushesWhenFull) {
  std::ostringstream yaml, txt;
  TraceWriter trace(&yaml, &txt, /*write_level=*/true);
  Call("torch.add", 1);
  trace.Append(*last_, 1);
  Call("torch.ones", 7);
  trace.Append(*last_, 0);
  EXPECT_EQ(txt.str(), "");  // still buffered
  ASSERT_TRUE(trace.Flush().ok());
  EXPECT_EQ(txt.str(), "torch.add(1)\ntorch.ones(7)\n");
  EXPECT_EQ(yaml.str(),
            "- api: torch.add\n  level: 1\n  args:\n  - 1\n  kwargs: {}\n"
            "- api: torch.ones\n  level: 0\n  args:\n  - 7\n  kwargs: {}\n");
  // Past kFlushBytes the buffer goes out without an explicit Flush.
  // Each call appends 70 bytes (14 of text, 56 of YAML): this is 1.4 MiB.
  for (size_t i = 0; i < TraceWriter::kFlushBytes / 50; ++i) trace.Append(*last_, 0);
  EXPECT_GT(txt.str().size(), 1000u);
}

TEST_F(WritersTest, WriteErrorsAreReported) {
  std::ostringstream yaml, txt;
  txt.setstate(std::ios::badbit);
  TraceWriter trace(&yaml, &txt, false);
  Call("torch.add", 1);
  trace.Append(*last_, 0);
  EXPECT_FALSE(trace.Flush().ok());
}

}  // namespace
}  // namespace api_tracer
