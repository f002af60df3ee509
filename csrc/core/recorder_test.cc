#include "core/recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace api_tracer {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("api_tracer_recorder_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Record(Recorder* rec, int level, const char* api, int arg) {
    KeyWriter w;
    w.BeginCall(rec->apis().Intern(api), 1);
    w.Int(arg);
    w.BeginKwargs(0);
    Status st;
    ASSERT_NE(rec->Record(w, {.level = level}, &st), nullptr) << st.message();
  }

  fs::path dir_;
};

TEST_F(RecorderTest, MergedSetOfSeveralLevels) {
  RecorderOptions opts;
  opts.output_dir = (dir_ / "nested" / "out").string();
  opts.levels = {0, 2};
  opts.merge = true;
  std::unique_ptr<Recorder> rec;
  ASSERT_TRUE(Recorder::Open(opts, &rec).ok());
  Record(rec.get(), 0, "torch.add", 1);
  Record(rec.get(), 2, "torch.ops.aten.add.Tensor", 1);
  ASSERT_TRUE(rec->Close().ok());
  fs::path out = opts.output_dir;
  EXPECT_EQ(Slurp(out / "api_trace.txt"), "torch.add(1)\ntorch.ops.aten.add.Tensor(1)\n");
  EXPECT_NE(Slurp(out / "api_trace.yaml").find("  level: 2\n"), std::string::npos);
  EXPECT_EQ(Slurp(out / "api_apis.txt"), "torch.add\ntorch.ops.aten.add.Tensor\n");
  EXPECT_TRUE(fs::exists(out / "api_configs.yaml"));
  EXPECT_TRUE(fs::exists(out / "api_statistics.yaml"));
  EXPECT_FALSE(fs::exists(out / "api_stacks.yaml"));
  EXPECT_TRUE(rec->Close().ok());  // idempotent
}

TEST_F(RecorderTest, OneSetPerLevelWithSuffixes) {
  RecorderOptions opts;
  opts.output_dir = dir_.string();
  opts.levels = {1, 2};
  opts.record_stack = true;
  std::unique_ptr<Recorder> rec;
  ASSERT_TRUE(Recorder::Open(opts, &rec).ok());
  Record(rec.get(), 1, "torch.add", 1);
  Record(rec.get(), 2, "torch.ops.aten.add.Tensor", 1);
  Status st;
  KeyWriter w;
  EXPECT_EQ(rec->Record(w, {.level = 0}, &st), nullptr);  // level 0 is not recorded
  EXPECT_FALSE(st.ok());
  ASSERT_TRUE(rec->Close().ok());
  EXPECT_EQ(Slurp(dir_ / "api_trace_level_1.txt"), "torch.add(1)\n");
  EXPECT_EQ(Slurp(dir_ / "api_trace_level_2.txt"), "torch.ops.aten.add.Tensor(1)\n");
  EXPECT_EQ(Slurp(dir_ / "api_trace_level_1.yaml").find("level:"), std::string::npos);
  for (const char* f : {"api_apis", "api_statistics", "api_configs", "api_stacks"}) {
    for (int level : {1, 2}) {
      const char* ext = std::string(f) == "api_apis" ? ".txt" : ".yaml";
      EXPECT_TRUE(fs::exists(dir_ / (std::string(f) + "_level_" + std::to_string(level) + ext)));
    }
  }
}

TEST_F(RecorderTest, UnwritableOutputFailsAtOpen) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  RecorderOptions opts;
  opts.output_dir = (dir_ / "file" / "sub").string();
  std::unique_ptr<Recorder> rec;
  Status st = Recorder::Open(opts, &rec);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find(opts.output_dir), std::string::npos) << st.message();
  EXPECT_EQ(rec, nullptr);
}

TEST_F(RecorderTest, StreamingOffWritesNoTrace) {
  RecorderOptions opts;
  opts.output_dir = dir_.string();
  opts.merge = true;
  opts.stream_trace = false;
  std::unique_ptr<Recorder> rec;
  ASSERT_TRUE(Recorder::Open(opts, &rec).ok());
  Record(rec.get(), 0, "torch.add", 1);
  ASSERT_TRUE(rec->Close().ok());
  EXPECT_FALSE(fs::exists(dir_ / "api_trace.txt"));
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "torch.add(1)\n");
}

}  // namespace
}  // namespace api_tracer
