#include "core/writers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <sstream>
#include <thread>

namespace api_tracer {
namespace {

// A Sink into a string; with `fail`, every write fails as a full disk would.
struct StringSink : Sink {
  std::string data;
  bool fail = false;
  std::string str() const { return data; }
  Status Write(std::string_view bytes) override {
    if (fail) return Status::IOError("writing test.txt failed: No space left on device");
    data.append(bytes);
    return Status::OK();
  }
};

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
  WriteStatistics(Summarize(agg_), out);
  EXPECT_EQ(out.str(),
            "Total APIs: 4\n"
            "Total API calls: 8\n"
            "\n"
            "torch.zeros: 3 (37.50%)\n"
            "torch.add: 2 (25.00%)\n"
            "torch.abs: 2 (25.00%)\n"
            "torch.randn: 1 (12.50%)\n");
}

TEST_F(WritersTest, StatisticsAreYamlWhateverTheApiName) {
  Call("torch.add", 1);
  Call("my: api", 1);
  std::ostringstream out;
  WriteStatistics(Summarize(agg_), out);
  EXPECT_EQ(out.str(),
            "Total APIs: 2\n"
            "Total API calls: 2\n"
            "\n"
            "torch.add: 1 (50.00%)\n"
            "\"my: api\": 1 (50.00%)\n");
}

TEST_F(WritersTest, LevelsOfAMergedTraceAreCountedAsWritten) {
  StringSink yaml, txt;
  TraceWriter trace(&yaml, &txt, /*write_level=*/true);
  Call("torch.add", 1);
  for (int level : {0, 3, 3, 1, 3}) trace.Append(*last_, {.level = level});
  ASSERT_TRUE(trace.Finish().ok());
  std::istringstream in(yaml.str());
  TraceLevels levels = CountTraceLevels(in);
  EXPECT_EQ(levels.counts, (std::map<int, uint64_t>{{0, 1}, {1, 1}, {3, 3}}));
  EXPECT_EQ(levels.bad_line, 0u);
}

TEST_F(WritersTest, ALevelFieldThatIsNotALevelEndsTheCountWithItsLine) {
  for (const char* bad : {"-5", "64", "99999999999999999999", "3x", "", "+1", " 1"}) {
    std::istringstream in(std::string("- api: a\n  level: 1\n- api: b\n  level: ") + bad + "\n");
    TraceLevels levels = CountTraceLevels(in);
    EXPECT_EQ(levels.bad_line, 4u) << bad;
    EXPECT_EQ(levels.bad_value, bad);
    EXPECT_EQ(levels.counts, (std::map<int, uint64_t>{{1, 1}})) << bad;
  }
}

TEST_F(WritersTest, ApisAndConfigsAreSortedBytewise) {
  Call("torch.zeros", 10);
  Call("torch.Tensor.sum", 1);
  Call("torch.add", 2);
  Call("torch.add", 1);
  std::ostringstream apis, configs;
  WriteApis(Summarize(agg_), apis);
  WriteConfigs(Summarize(agg_), configs);
  EXPECT_EQ(apis.str(), "torch.Tensor.sum\ntorch.add\ntorch.zeros\n");
  EXPECT_EQ(configs.str(), "torch.Tensor.sum(1)\ntorch.add(1)\ntorch.add(2)\ntorch.zeros(10)\n");
}

TEST_F(WritersTest, ConfigSourcesCountEachLineUnderTheLabel) {
  Call("torch.zeros", 10, 3);
  Call("torch.add", 2);
  Call("torch.add", 1, 2);
  Summary s = Summarize(agg_);
  s.label = "m\"1";
  std::ostringstream out;
  WriteConfigSources(s, out);
  EXPECT_EQ(out.str(),
            "labels:\n"
            "- {\"label\": \"m\\\"1\", \"calls\": 6}\n"
            "configs:\n"
            "- {\"config\": \"torch.add(1)\", \"calls\": 2, \"sources\": 1, \"from\": {\"m\\\"1\": 2}}\n"
            "- {\"config\": \"torch.add(2)\", \"calls\": 1, \"sources\": 1, \"from\": {\"m\\\"1\": 1}}\n"
            "- {\"config\": \"torch.zeros(10)\", \"calls\": 3, \"sources\": 1, \"from\": {\"m\\\"1\": 3}}\n");
}

TEST_F(WritersTest, ConfigSourcesOfNothingAreAnEmptyList) {
  Summary s = Summarize(agg_);
  s.label = "job";
  std::ostringstream out;
  WriteConfigSources(s, out);
  EXPECT_EQ(out.str(), "labels:\n- {\"label\": \"job\", \"calls\": 0}\nconfigs: []\n");
}

TEST(JsonString, EscapesAsJsonDumps) {
  std::string out;
  AppendJsonString("a\"b\\c\n\x01\x7f\xc3\xa9", &out);
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\\u007f\xc3\xa9\"");
}

TEST_F(WritersTest, EmptySetWritesEmptySummaries) {
  std::ostringstream apis, stats, stacks;
  WriteApis(Summarize(agg_), apis);
  WriteStatistics(Summarize(agg_), stats);
  WriteStacks(Summarize(agg_), stacks);
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
  WriteStacks(Summarize(agg_), out);
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

TEST_F(WritersTest, TraceStreamsInCallOrderAndWritesFullChunks) {
  StringSink yaml, txt;
  TraceWriter trace(&yaml, &txt, /*write_level=*/true);
  Call("torch.add", 1);
  trace.Append(*last_, {.level = 1});
  Call("torch.ones", 7);
  trace.Append(*last_, {.level = 0});
  EXPECT_EQ(txt.str(), "");  // still buffered
  ASSERT_TRUE(trace.Finish().ok());
  EXPECT_EQ(txt.str(), "torch.add(1)\ntorch.ones(7)\n");
  EXPECT_EQ(yaml.str(),
            "- api: torch.add\n  level: 1\n  args:\n  - 1\n  kwargs: {}\n"
            "- api: torch.ones\n  level: 0\n  args:\n  - 7\n  kwargs: {}\n");
  // A full buffer goes to the writer's thread, which writes it without a
  // Finish (Drain waits for it, to read the sink).
  for (size_t i = 0; i < TraceWriter::kChunkRecords; ++i) trace.Append(*last_, {.level = 0});
  trace.Drain();
  EXPECT_EQ(txt.str().size(), std::string("torch.add(1)\ntorch.ones(7)\n").size() +
                                  TraceWriter::kChunkRecords * std::string("torch.ones(7)\n").size());
}

TEST_F(WritersTest, TraceLimitCutsBetweenRecordsAndCountsTheRest) {
  Call("torch.add", 1);  // 13 bytes of text, 44 of YAML a record
  StringSink yaml, txt;
  TraceWriter trace(&yaml, &txt, false, /*limit=*/200);
  for (int i = 0; i < 10; ++i) trace.Append(*last_, {.level = 0});
  ASSERT_TRUE(trace.Finish().ok());
  std::string record = "- api: torch.add\n  args:\n  - 1\n  kwargs: {}\n";
  std::string note = "# trace_limit of 200 bytes reached: 7 calls not written\n";
  EXPECT_EQ(txt.str(), "torch.add(1)\ntorch.add(1)\ntorch.add(1)\n" + note);
  EXPECT_EQ(yaml.str(), record + record + record + note);
  EXPECT_EQ(trace.dropped(), 7u);
  uint64_t limit = 0, dropped = 0;
  EXPECT_TRUE(ParseTraceLimitNote(note, &limit, &dropped));
  EXPECT_EQ(limit, 200u);
  EXPECT_EQ(dropped, 7u);
  EXPECT_FALSE(ParseTraceLimitNote("torch.add(1)", &limit, &dropped));
  EXPECT_FALSE(ParseTraceLimitNote(note + "x", &limit, &dropped));
}

TEST_F(WritersTest, TraceLimitHoldsAcrossThreads) {
  constexpr int kThreads = 4, kCalls = 30000;
  constexpr uint64_t kLimit = 300 << 10;  // past the first chunks, inside the calls made
  Call("torch.mul", 12345);
  StringSink yaml, txt;
  TraceWriter trace(&yaml, &txt, false, kLimit);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) trace.Append(*last_, {.level = 0});
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(trace.Finish().ok());
  std::string note = TraceLimitNote(kLimit, trace.dropped());
  const std::string& text = txt.data;
  const std::string& records_yaml = yaml.data;
  ASSERT_TRUE(text.ends_with(note));
  ASSERT_TRUE(records_yaml.ends_with(note));
  size_t lines = std::count(text.begin(), text.end(), '\n') - 1;
  EXPECT_EQ(lines + trace.dropped(), uint64_t{kThreads} * kCalls);
  EXPECT_LE(text.size() + records_yaml.size() - 2 * note.size(), kLimit);
  EXPECT_GT(text.size() + records_yaml.size() - 2 * note.size(), kLimit - 100);  // cut at the last record that fit
  size_t records = 0;
  for (size_t at = records_yaml.find("- api:"); at != std::string::npos; at = records_yaml.find("- api:", at + 1)) {
    ++records;
  }
  EXPECT_EQ(records, lines);
}

TEST_F(WritersTest, WriteErrorsAreReported) {
  StringSink yaml, txt;
  txt.fail = true;
  TraceWriter trace(&yaml, &txt, false);
  Call("torch.add", 1);
  trace.Append(*last_, {.level = 0});
  Status st = trace.Finish();
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_EQ(st.message(), "writing test.txt failed: No space left on device");
}

}  // namespace
}  // namespace api_tracer

namespace api_tracer {
namespace {

TEST_F(WritersTest, RecordExtrasAreWrittenBeforeTheArguments) {
  StringSink yaml, txt;
  TraceWriter trace(&yaml, &txt, /*write_level=*/false);
  Call("torch.ops.aten.mul.Tensor", 1);
  trace.Append(*last_, {.level = 3, .depth = 2, .backward = "MulBackward0"});
  ASSERT_TRUE(trace.Finish().ok());
  EXPECT_EQ(yaml.str(),
            "- api: torch.ops.aten.mul.Tensor\n  depth: 2\n  backward: MulBackward0\n"
            "  args:\n  - 1\n  kwargs: {}\n");
}

TEST_F(WritersTest, ThreadsAppendingAtOnceLoseNothingAndKeepTheirOrder) {
  StringSink yaml, txt;
  TraceWriter trace(&yaml, &txt, false);
  constexpr int kThreads = 6, kCalls = 20000;
  std::vector<const Aggregator::Config*> configs;
  for (int t = 0; t < kThreads; ++t) {
    Call("t", t);
    configs.push_back(last_);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) trace.Append(*configs[t], {.level = 0});
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(trace.Finish().ok());
  std::istringstream lines(txt.str());
  std::string line;
  std::vector<int> per_thread(kThreads);
  while (std::getline(lines, line)) ++per_thread[std::stoi(line.substr(2))];
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_thread[t], kCalls) << t;
}

TEST_F(WritersTest, ManyWritersOnOneThreadStillStream) {
  // More writers than a thread has slots for, taking turns: each keeps one
  // buffer, which goes to its sink whenever it fills.
  constexpr int kWriters = 12, kCalls = 20000;
  Call("torch.zeros", 1);
  std::vector<StringSink> yaml(kWriters), txt(kWriters);
  std::vector<std::unique_ptr<TraceWriter>> writers;
  for (int i = 0; i < kWriters; ++i) writers.push_back(std::make_unique<TraceWriter>(&yaml[i], &txt[i], false));
  for (int c = 0; c < kCalls; ++c) {
    for (auto& w : writers) w->Append(*last_, {.level = 0});
  }
  for (auto& w : writers) w->Drain();
  for (int i = 0; i < kWriters; ++i) EXPECT_GT(txt[i].str().size(), 0u) << "writer " << i << " streamed nothing";
  for (int i = 0; i < kWriters; ++i) {
    ASSERT_TRUE(writers[i]->Finish().ok());
    EXPECT_EQ(txt[i].str().size(), kCalls * std::string("torch.zeros(1)\n").size()) << i;
  }
}

TEST_F(WritersTest, ValueRangesFile) {
  ApiTable apis;
  Aggregator agg(&apis, {}, true);
  KeyWriter w;
  w.BeginCall(apis.Intern("torch.ops.aten.nll_loss.default"), 3);
  for (const char* dtype : {"float32", "int64", "int64"}) {
    TensorInfo t;
    t.shape = {40};
    t.dtype = dtype;
    w.Write(Value::Tensor(t));
  }
  w.BeginKwargs(0);
  std::vector<int64_t> target, offsets = {0, 3, 3, 7};
  for (int64_t i = 0; i < 40; ++i) target.push_back(i % 8 == 0 ? -100 : i * 10);
  w.AddProfile(ValueProfile::Of(target));   // many values, one sentinel
  w.AddProfile(ValueProfile::Of(offsets));  // few values, in order
  Status st;
  ASSERT_NE(agg.Record(w.view(), w.profiles(), &st), nullptr);
  std::ostringstream out;
  WriteValueRanges(Summarize(agg), out);
  EXPECT_EQ(out.str(),
            "- config: torch.ops.aten.nll_loss.default(Tensor([40], \"float32\"), Tensor([40], \"int64\"), "
            "Tensor([40], \"int64\"))\n"
            "  ranges:\n"
            "    args[1]:\n"
            "    - -100\n"
            "    - 390\n"
            "    args[2]:\n"
            "    - 0\n"
            "    - 7\n"
            "  values:\n"
            "    args[2]:\n"
            "    - 0\n"
            "    - 3\n"
            "    - 7\n"
            "  sentinels:\n"
            "    args[1]:\n"
            "      values:\n"
            "      - -100\n"
            "      rest:\n"
            "      - 10\n"
            "      - 390\n"
            "  sorted:\n"
            "  - args[2]\n"
            "  sums:\n"
            "    args[1]: 6500\n"
            "    args[2]: 13\n");
}

TEST_F(WritersTest, FloatingProfilesAreWrittenWhenAsked) {
  ApiTable apis;
  for (bool floats : {false, true}) {
    Aggregator agg(&apis, {}, true, floats);
    KeyWriter w;
    w.BeginCall(apis.Intern("torch.bernoulli"), 2);
    for (const char* dtype : {"float32", "int64"}) {
      TensorInfo t;
      t.shape = {3};
      t.dtype = dtype;
      w.Write(Value::Tensor(t));
    }
    w.BeginKwargs(0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (floats) w.AddProfile(ValueProfile::OfFloats(std::vector<double>{0.1, 1e-05, nan}));
    w.AddProfile(ValueProfile::Of(std::vector<int64_t>{2, 2, 2}));
    Status st;
    ASSERT_NE(agg.Record(w.view(), w.profiles(), &st), nullptr);
    std::ostringstream out;
    WriteValueRanges(Summarize(agg), out);
    std::string ints =
        "- config: torch.bernoulli(Tensor([3], \"float32\"), Tensor([3], \"int64\"))\n"
        "  ranges:\n    args[1]:\n    - 2\n    - 2\n"
        "  values:\n    args[1]:\n    - 2\n"
        "  sorted:\n  - args[1]\n";
    // floats as Python writes them, so that they read back exactly
    EXPECT_EQ(out.str(), floats ? ints +
                                      "  floats:\n    args[0]:\n    - 1e-05\n    - 0.1\n"
                                      "  nonfinite:\n    args[0]:\n    - nan\n"
                                : ints);
  }
}

}  // namespace
}  // namespace api_tracer
