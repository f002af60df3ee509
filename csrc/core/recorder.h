// Recorder: one tracing session's output. It owns the API table, one output
// set per level (or a single merged set), and the open files of each set.
//
// Open() creates the output directory and opens every file up front, so an
// unwritable path fails before anything is traced. Record() aggregates a call
// and streams it to its set's trace files. Close() flushes the traces and
// writes the summary files; it is idempotent, and the destructor calls it.
//
// Thread-safety: Record, WantsStack and AddStack may be called concurrently;
// Open and Close are called once, by the owner, with no Record in flight.
#pragma once

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
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
  // was written by `key` with an id from apis(). Returns the call's config.
  const Aggregator::Config* Record(const KeyWriter& key, const RecordExtras& extras, Status* status);

  bool WantsStack(int level, ApiId api) const;
  void AddStack(int level, ApiId api, uint64_t hash, const std::function<Stack()>& make);

  // The file an output set writes, e.g. Path(1, "api_trace", ".txt") is
  // DIR/api_trace_level_1.txt when levels are not merged.
  std::string Path(int level, std::string_view stem, std::string_view ext) const;

  Status Close();

 private:
  struct OutputSet;

  explicit Recorder(const RecorderOptions& options);
  OutputSet* SetFor(int level) const { return by_level_[static_cast<size_t>(level)]; }

  RecorderOptions options_;
  ApiTable apis_;
  std::vector<std::unique_ptr<OutputSet>> sets_;
  std::vector<OutputSet*> by_level_;  // indexed by level
  bool closed_ = false;
};

}  // namespace api_tracer
