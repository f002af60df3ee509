#include "core/recorder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

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
    dir_ = fs::temp_directory_path() / ("api_tracer_recorder_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Record(Recorder* rec, int level, const char* api, int arg) {
    KeyWriter w;
    w.BeginCall(rec->apis().Intern(api), 1);
    w.Int(arg);
    w.BeginKwargs(0);
    ASSERT_NE(rec->Record(w, {.level = level}), nullptr);
  }

  // Options of one merged set in dir_.
  TraceOptions Merged() const {
    TraceOptions opts;
    opts.output_path = dir_.string();
    opts.merge_output = true;
    return opts;
  }
  std::unique_ptr<Recorder> Open(const TraceOptions& opts) {
    std::unique_ptr<Recorder> rec;
    Status st = Recorder::Open(opts, &rec);
    EXPECT_TRUE(st.ok()) << st.message();
    return rec;
  }

  fs::path dir_;
};

TEST_F(RecorderTest, MergedSetOfSeveralLevels) {
  TraceOptions opts;
  opts.output_path = (dir_ / "nested" / "out").string();
  opts.levels = {0, 2};
  opts.merge_output = true;
  std::unique_ptr<Recorder> rec;
  ASSERT_TRUE(Recorder::Open(opts, &rec).ok());
  Record(rec.get(), 0, "torch.add", 1);
  Record(rec.get(), 2, "torch.ops.aten.add.Tensor", 1);
  ASSERT_TRUE(rec->Close().ok());
  fs::path out = opts.output_path;
  EXPECT_EQ(Slurp(out / "api_trace.txt"), "torch.add(1)\ntorch.ops.aten.add.Tensor(1)\n");
  EXPECT_NE(Slurp(out / "api_trace.yaml").find("  level: 2\n"), std::string::npos);
  EXPECT_EQ(Slurp(out / "api_apis.txt"), "torch.add\ntorch.ops.aten.add.Tensor\n");
  EXPECT_TRUE(fs::exists(out / "api_configs.yaml"));
  EXPECT_TRUE(fs::exists(out / "api_statistics.yaml"));
  EXPECT_FALSE(fs::exists(out / "api_stacks.yaml"));
  EXPECT_TRUE(rec->Close().ok());  // idempotent
}

TEST_F(RecorderTest, OpeningASetRemovesTheTemporaryFilesAKilledProcessLeft) {
  // One for each summary file, those this session does not write included
  // (api_stacks.yaml was asked for by the killed one, not by this one).
  fs::create_directories(dir_);
  for (const char* name : {".api_apis.txt.tmp", ".api_configs.yaml.tmp", ".api_statistics.yaml.tmp",
                           ".api_stacks.yaml.tmp", ".api_value_ranges.yaml.tmp"}) {
    std::ofstream(dir_ / name) << "half a snapshot";
  }
  std::ofstream(dir_ / ".mine.tmp") << "not the tracer's";
  std::unique_ptr<Recorder> rec = Open(Merged());
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() == ".tmp") left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{".mine.tmp"});
  ASSERT_TRUE(rec->Close().ok());
}

TEST_F(RecorderTest, OneSetPerLevelWithSuffixes) {
  TraceOptions opts;
  opts.output_path = dir_.string();
  opts.levels = {1, 2};
  opts.record_stack = true;
  std::unique_ptr<Recorder> rec;
  ASSERT_TRUE(Recorder::Open(opts, &rec).ok());
  Record(rec.get(), 1, "torch.add", 1);
  Record(rec.get(), 2, "torch.ops.aten.add.Tensor", 1);
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

// The policy of every level, the native observer's included: a call that
// cannot be recorded is left out, the others still are, and Close returns the
// first such error.
TEST_F(RecorderTest, CloseReturnsTheFirstCallThatCouldNotBeRecorded) {
  TraceOptions opts;
  opts.output_path = dir_.string();
  opts.levels = {1, 3};
  std::unique_ptr<Recorder> rec = Open(opts);
  ASSERT_TRUE(rec);
  Record(rec.get(), 3, "torch.ops.aten.add.Tensor", 1);
  KeyWriter unrecorded_level;
  unrecorded_level.BeginCall(rec->apis().Intern("torch.add"), 0);
  unrecorded_level.BeginKwargs(0);
  EXPECT_EQ(rec->Record(unrecorded_level, {.level = 0}), nullptr);
  KeyWriter corrupt;
  corrupt.BeginCall(rec->apis().Intern("torch.mul"), 1);  // and no argument
  EXPECT_EQ(rec->Record(corrupt, {.level = 3}), nullptr);
  Record(rec.get(), 3, "torch.ops.aten.add.Tensor", 2);
  Status st = rec->Close();
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "level 0 is not recorded");
  EXPECT_EQ(Slurp(dir_ / "api_trace_level_3.txt"), "torch.ops.aten.add.Tensor(1)\ntorch.ops.aten.add.Tensor(2)\n");
  EXPECT_EQ(Slurp(dir_ / "api_apis_level_3.txt"), "torch.ops.aten.add.Tensor\n");
  EXPECT_TRUE(rec->Close().ok());  // reported once
}

TEST_F(RecorderTest, AWriteErrorAtCloseComesBeforeACallThatCouldNotBeRecorded) {
  fs::create_directories(dir_);
  fs::create_symlink("/dev/full", dir_ / "api_trace.txt");  // every write: ENOSPC
  std::unique_ptr<Recorder> rec = Open(Merged());
  ASSERT_TRUE(rec);
  KeyWriter corrupt;
  corrupt.BeginCall(rec->apis().Intern("torch.mul"), 1);
  EXPECT_EQ(rec->Record(corrupt, {.level = 0}), nullptr);
  Record(rec.get(), 0, "torch.add", 1);
  EXPECT_EQ(rec->Close().code(), Status::Code::kIOError);
}

TEST_F(RecorderTest, UnwritableOutputFailsAtOpen) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  TraceOptions opts;
  opts.output_path = (dir_ / "file" / "sub").string();
  std::unique_ptr<Recorder> rec;
  Status st = Recorder::Open(opts, &rec);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find(opts.output_path), std::string::npos) << st.message();
  EXPECT_EQ(rec, nullptr);
}

TEST_F(RecorderTest, StreamingOffWritesNoTrace) {
  TraceOptions opts = Merged();
  opts.stream_trace = false;
  std::unique_ptr<Recorder> rec = Open(opts);
  ASSERT_TRUE(rec);
  Record(rec.get(), 0, "torch.add", 1);
  ASSERT_TRUE(rec->Close().ok());
  EXPECT_FALSE(fs::exists(dir_ / "api_trace.txt"));
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "torch.add(1)\n");
}

TEST_F(RecorderTest, SummariesAreSnapshotsWrittenWhileTracing) {
  TraceOptions opts = Merged();
  opts.snapshot_interval = 0.02;
  std::unique_ptr<Recorder> rec = Open(opts);
  ASSERT_TRUE(rec);
  // The first snapshot is taken at Open: the files are whole from the start.
  EXPECT_EQ(Slurp(dir_ / "api_statistics.yaml"), "Total APIs: 0\nTotal API calls: 0\n\n");
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "");
  Record(rec.get(), 0, "torch.add", 1);
  Record(rec.get(), 0, "torch.add", 1);
  // The files of a snapshot are replaced one after another: wait for the last.
  for (int i = 0; i < 500 && Slurp(dir_ / "api_statistics.yaml").find("torch.add") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "torch.add(1)\n");  // before Close
  EXPECT_EQ(Slurp(dir_ / "api_statistics.yaml"), "Total APIs: 1\nTotal API calls: 2\n\ntorch.add: 2 (100.00%)\n");
  ASSERT_TRUE(rec->Close().ok());
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(entry.path().filename().string().ends_with(".tmp")) << entry.path();
  }
}

TEST_F(RecorderTest, WithoutAnIntervalTheSummariesAreWrittenAtOpenAndClose) {
  TraceOptions opts = Merged();
  opts.snapshot_interval = 0;
  std::unique_ptr<Recorder> rec = Open(opts);
  ASSERT_TRUE(rec);
  Record(rec.get(), 0, "torch.add", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "");
  ASSERT_TRUE(rec->Close().ok());
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "torch.add(1)\n");
}

TEST_F(RecorderTest, AFullDiskNamesTheFileAndKeepsTheSummaries) {
  fs::create_directories(dir_);
  fs::create_symlink("/dev/full", dir_ / "api_trace.txt");  // every write: ENOSPC
  TraceOptions opts = Merged();
  std::unique_ptr<Recorder> rec = Open(opts);
  ASSERT_TRUE(rec);
  Record(rec.get(), 0, "torch.add", 1);
  Status st = rec->Close();
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_EQ(st.message(), "writing " + (dir_ / "api_trace.txt").string() + " failed: No space left on device");
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "torch.add(1)\n");
  EXPECT_EQ(Slurp(dir_ / "api_trace.yaml"), "- api: torch.add\n  args:\n  - 1\n  kwargs: {}\n");
}

TEST_F(RecorderTest, AForkedChildWritesNothingOfTheParents) {
  TraceOptions opts;
  opts.output_path = dir_.string();
  opts.merge_output = true;
  opts.snapshot_interval = 0.001;  // snapshots all the time, forks among them
  std::unique_ptr<Recorder> rec;
  ASSERT_TRUE(Recorder::Open(opts, &rec).ok());
  Record(rec.get(), 0, "torch.add", 1);  // buffered in the parent at the fork
  for (int i = 0; i < 20; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      KeyWriter w;
      w.BeginCall(rec->apis().Intern("torch.child"), 0);
      w.BeginKwargs(0);
      rec->Record(w, {.level = 0});
      bool ok = rec->Snapshot().ok() && rec->Close().ok();  // write nothing, and do not wait for a thread
      rec.release();  // its destructor would do the same
      ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ASSERT_TRUE(rec->Close().ok());
  EXPECT_EQ(Slurp(dir_ / "api_trace.txt"), "torch.add(1)\n");
  EXPECT_EQ(Slurp(dir_ / "api_configs.yaml"), "torch.add(1)\n");
}

}  // namespace
}  // namespace api_tracer
