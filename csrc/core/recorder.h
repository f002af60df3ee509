// Recorder: one tracing session's output. It owns the API table, one output
// set per level (or a single merged set), and the open files of each set.
//
// Open() creates the output directory, opens the trace files and writes a
// first snapshot of the summary files, so an unwritable path fails before
// anything is traced. Record() aggregates a call and streams it to its set's
// trace files; a call it cannot record (a level not recorded, a corrupt key)
// is left out and the first such error kept, for Close() to return. The
// summary files (api_apis.txt, api_configs.yaml, api_statistics.yaml, and
// api_stacks.yaml, api_value_ranges.yaml when asked) are snapshots:
// rewritten atomically (file.h: ReplaceFile) every snapshot_interval seconds
// by a thread of the recorder's own, and at Close(), so a process killed at
// any moment leaves each of them whole, at most one interval old. Close()
// flushes the traces and writes the last snapshot; it is idempotent, and the
// destructor calls it.
//
// A process forked from one with a recorder has no snapshot thread, and its
// copy of the recorder writes nothing: the files are the parent's.
//
// Thread-safety: Record, WantsStack and AddStack may be called concurrently
// (and with the snapshot thread); Open and Close are called once, by the
// owner, with no Record in flight.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/aggregator.h"
#include "core/api_table.h"
#include "core/format.h"
#include "core/status.h"
#include "core/writers.h"

namespace api_tracer {

struct RecorderOptions {
  std::string output_dir = "trace_output";
  std::vector<int> levels = {0};  // each in [0, kMaxLevel]
  bool merge = false;             // one set for all levels, else one per level
  bool record_stack = false;      // write api_stacks.yaml
  bool stream_trace = true;       // write api_trace.yaml and api_trace.txt
  bool value_ranges = false;      // keep and write integer tensors' value ranges
  double snapshot_interval = 30;  // seconds between snapshots of the summaries (0: at close only)
  uint64_t trace_limit = 1ull << 30;  // bytes of api_trace.* per output set (0: no limit)
  FormatOptions format;
};

class Recorder {
 public:
  static constexpr int kMaxLevel = 63;

  static Status Open(const RecorderOptions& options, std::unique_ptr<Recorder>* out);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  ApiTable& apis() { return apis_; }

  // Records one call seen by `extras.level` (one of the options' levels); `key`
  // was written with an id from apis(). Returns the call's config, or nullptr
  // when the call cannot be recorded (the first such error is kept for Close).
  const Aggregator::Config* Record(const KeyWriter& key, const RecordExtras& extras);

  bool WantsStack(int level, ApiId api) const;
  void AddStack(int level, ApiId api, uint64_t hash, const std::function<Stack()>& make);

  // The file an output set writes, e.g. Path(1, "api_trace", ".txt") is
  // DIR/api_trace_level_1.txt when levels are not merged.
  std::string Path(int level, std::string_view stem, std::string_view ext) const;

  // Writes every set's summary files now, as they stand; the first error.
  Status Snapshot();

  // Flushes the traces and writes the last snapshot. Returns the first error
  // of doing so, else the first error of Record, else OK.
  Status Close();

 private:
  struct OutputSet;
  friend struct ForkGuard;

  explicit Recorder(const RecorderOptions& options);
  OutputSet* SetFor(int level) const { return by_level_[static_cast<size_t>(level)]; }
  void SnapshotLoop();
  void KeepRecordError(const Status& st);

  RecorderOptions options_;
  ApiTable apis_;
  std::vector<std::unique_ptr<OutputSet>> sets_;
  std::vector<OutputSet*> by_level_;  // indexed by level
  bool closed_ = false;

  std::mutex record_error_mu_;  // taken only when a call fails
  Status record_error_;         // the first failed Record's

  std::mutex snapshot_mu_;  // one snapshot at a time; held across fork()
  std::mutex loop_mu_;      // stop_, with loop_cv_
  std::condition_variable loop_cv_;
  bool stop_ = false;
  std::thread* loop_ = nullptr;  // owned; leaked in a forked child, where it does not run
  bool forked_ = false;          // this is a forked child's copy: write nothing
};

}  // namespace api_tracer
