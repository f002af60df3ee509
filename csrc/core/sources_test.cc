#include "core/sources.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace api_tracer {
namespace {

struct StringSink : Sink {
  std::string data;
  Status Write(std::string_view bytes) override {
    data.append(bytes);
    return Status::OK();
  }
};

class SourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sources_test_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // A set of one label whose configs each have the given calls.
  MergeInput Set(const std::string& name, const std::string& label,
                 const std::vector<std::pair<std::string, uint64_t>>& configs) {
    std::string sources, lines;
    uint64_t total = 0;
    for (const auto& c : configs) total += c.second;
    AppendLabels({{label, total}}, &sources);
    sources += "configs:\n";
    for (const auto& [config, calls] : configs) {
      AppendSourceEntry({config, calls, 1, {{label, calls}}, false}, &sources);
      lines += config + "\n";
    }
    return {Write(name + ".sources", sources), Write(name + ".configs", lines)};
  }
  // The error reading `text` gives, as "LINE:COLUMN: message" ("" if none).
  std::string ReadError(const std::string& text) {
    std::unique_ptr<SourcesReader> r;
    Status e = SourcesReader::Open(Write("f.yaml", text), &r);
    if (e.ok()) {
      SourceEntry entry;
      while (r->Next(&entry)) {
      }
      e = r->error();
    }
    return e.ok() ? "" : std::to_string(e.line()) + ":" + std::to_string(e.column()) + ": " + e.message();
  }

  std::filesystem::path dir_;
};

const char kHead[] = "labels:\n- {\"label\": \"a\", \"calls\": 3}\nconfigs:\n";

TEST_F(SourcesTest, ReadsWhatItWrites) {
  std::string text = kHead;
  AppendSourceEntry({"f(1)", 2, 1, {{"a", 2}}, false}, &text);
  AppendSourceEntry({"g(\"\\u00e9\")", 1, 1, {{"a", 1}}, false}, &text);
  std::unique_ptr<SourcesReader> r;
  ASSERT_TRUE(SourcesReader::Open(Write("f.yaml", text), &r).ok());
  EXPECT_EQ(r->labels(), (SourceCounts{{"a", 3}}));
  SourceEntry e;
  ASSERT_TRUE(r->Next(&e));
  EXPECT_EQ(e.config, "f(1)");
  EXPECT_EQ(r->line(), 4u);
  ASSERT_TRUE(r->Next(&e));
  EXPECT_EQ(e.config, "g(\"\\u00e9\")");
  EXPECT_FALSE(r->Next(&e));
  EXPECT_TRUE(r->error().ok()) << r->error().message();
}

TEST_F(SourcesTest, RefusesDamageByLineAndColumn) {
  std::string h = kHead;
  EXPECT_EQ(ReadError(h + "- {\"config\": \"f(1)\", \"calls\": 3, \"sources\": 1, \"from\": {\"a\": 3}}\n"), "");
  EXPECT_EQ(ReadError(h + "- {\"config\": \"f(1)\", \"calls\": 3, \"sources\": 1, \"from\": {\"b\": 3}}\n"),
            "4:0: from names 'b', which is not among the labels");
  EXPECT_EQ(ReadError(h + "- {\"config\": \"f(1)\", \"calls\": 3, \"sources\": 1, \"from\": [[[[\n"),
            "4:56: not a record as the tracer writes it: a list: the format has none");
  EXPECT_EQ(ReadError(h + "- {\"config\": \"f(1)\", \"calls\": 18446744073709551616, \"sources\": 1}\n"),
            "4:31: not a record as the tracer writes it: a count above 2^64 - 1, more than a tracer counts");
  EXPECT_EQ(ReadError(h + "- {\"config\": \"f(1)\", \"calls\": 2, \"sources\": 1, \"from\": {\"a\": 2}}\n"),
            "3:0: the configs' calls add up to 2, the labels' to 3");
  EXPECT_EQ(ReadError(h + "- {\"config\": \"f(1)\", \"calls\": 3, \"sources\": 1, \"from\": {\"a\": 3}}"),
            "4:0: ends inside a line: the file was cut");
  EXPECT_EQ(ReadError("labels:\n- {\"label\": \"a\", \"calls\": 0}\n"),
            "0:0: no 'configs:' after the labels: the file was cut");
  EXPECT_EQ(ReadError(h + "- {\"config\": \"\\ud800\", \"calls\": 3, \"sources\": 1, \"from\": {\"a\": 3}}\n"),
            "4:21: not a record as the tracer writes it: a lone surrogate escape");
  EXPECT_EQ(ReadError(std::string("labels:\n- {\"label\": \"a\xff\", \"calls\": 0}\nconfigs: []\n")),
            "2:15: not UTF-8: byte 0xff");
}

TEST_F(SourcesTest, MergeAddsCallsAndRanksSources) {
  MergeInput a = Set("a", "a", {{"f(1)", 2}, {"g(1)", 1}});
  MergeInput b = Set("b", "b", {{"f(1)", 5}, {"h(1)", 1}});
  StringSink configs, sources;
  MergeResult result;
  Status e = MergeSources({a, b}, &configs, &sources, {}, &result);
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(configs.data, "f(1)\ng(1)\nh(1)\n");
  EXPECT_EQ(sources.data,
            "labels:\n- {\"label\": \"a\", \"calls\": 3}\n- {\"label\": \"b\", \"calls\": 6}\nconfigs:\n"
            "- {\"config\": \"f(1)\", \"calls\": 7, \"sources\": 2, \"from\": {\"b\": 5, \"a\": 2}}\n"
            "- {\"config\": \"g(1)\", \"calls\": 1, \"sources\": 1, \"from\": {\"a\": 1}}\n"
            "- {\"config\": \"h(1)\", \"calls\": 1, \"sources\": 1, \"from\": {\"b\": 1}}\n");
  EXPECT_EQ(result.configs, 3u);
  ASSERT_EQ(result.api_calls.size(), 2u);
}

TEST_F(SourcesTest, MergeRefusesALineThatDoesNotParse) {
  MergeInput a = Set("a", "a", {{"f(1, [)", 2}});
  StringSink configs, sources;
  MergeResult result;
  Status e = MergeSources({a}, &configs, &sources, {}, &result);
  EXPECT_EQ(e.path(), a.sources);
  EXPECT_EQ(e.line(), 4u);
  EXPECT_FALSE(e.ok());
}

}  // namespace
}  // namespace api_tracer

namespace api_tracer {
namespace {

TEST(Labels, AreTextWithoutControlsOfBoundedLength) {
  EXPECT_TRUE(IsLabel("bert base"));
  EXPECT_TRUE(IsLabel(std::string(kMaxLabel - 1, 'x') + "\xc3\xa9"));  // characters, not bytes
  EXPECT_FALSE(IsLabel(std::string(kMaxLabel + 1, 'x')));
  EXPECT_FALSE(IsLabel(""));
  EXPECT_FALSE(IsLabel("a\tb"));
  EXPECT_FALSE(IsLabel("a\xc2\x85"));  // NEL, a C1 control
  EXPECT_FALSE(IsLabel("a\xff"));
}

}  // namespace
}  // namespace api_tracer
