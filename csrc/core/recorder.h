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
#include <span>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/aggregator.h"
#include "core/api_table.h"
#include "core/format.h"
#include "core/options.h"
#include "core/status.h"
#include "core/writers.h"

namespace api_tracer {

// The files of an output set (docs/format.md): the two traces, then the
// summary files with their writers; each with the option that asks for it.
struct OutputFile {
  std::string_view stem, ext;
  bool (*wanted)(const TraceOptions&);  // nullptr: always written
  std::string_view option;     // the name of that option ("": always written)
  SummaryWriter summary;       // nullptr: a trace file

  // DIR/STEM[SUFFIX].EXT, the suffix being "" (merged) or "_level_N".
  std::string Path(std::string_view dir, std::string_view suffix) const;
};
enum OutputFileIndex {
  kTraceYaml,
  kTraceTxt,
  kApis,
  kConfigs,
  kStatistics,
  kStacks,
  kValueRanges,
  kConfigSources,
  kNumOutputFiles
};
std::span<const OutputFile, kNumOutputFiles> OutputFiles();

// Writes the summary files of `summary` that `options` asks for, each
// replaced atomically (file.h); the first error.
Status WriteSummaryFiles(const Summary& summary, const TraceOptions& options, std::string_view dir,
                         std::string_view suffix);

class Recorder {
 public:
  // Opens the file sets of options.levels in options.output_path.
  static Status Open(const TraceOptions& options, std::unique_ptr<Recorder>* out);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  ApiTable& apis() { return apis_; }
  const TraceOptions& options() const { return options_; }

  // Records one call seen by `extras.level` (one of the options' levels); `key`
  // was written with an id from apis(). Returns the call's config, or nullptr
  // when the call cannot be recorded (the first such error is kept for Close).
  const Aggregator::Config* Record(const KeyWriter& key, const RecordExtras& extras);

  bool WantsStack(int level, ApiId api) const;
  void AddStack(int level, ApiId api, uint64_t hash, const std::function<Stack()>& make);

  // The suffix of `level`'s file set: "_level_N", or "" when merged.
  std::string Suffix(int level) const;

  // Writes every set's summary files now, as they stand; the first error.
  Status Snapshot();

  // Flushes the traces and writes the last snapshot. Returns the first error
  // of doing so, else the first error of Record, else OK.
  Status Close();

 private:
  struct OutputSet;
  friend struct ForkGuard;

  explicit Recorder(const TraceOptions& options);
  OutputSet* SetFor(int level) const { return by_level_[static_cast<size_t>(level)]; }
  void SnapshotLoop();
  void KeepRecordError(const Status& st);

  const TraceOptions options_;
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
