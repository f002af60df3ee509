// The writers of an output set's files (docs/format.md describes each one).
//
// TraceWriter streams api_trace.yaml and api_trace.txt while tracing: each
// call appends a small record to its thread's buffer, and a buffer goes to
// the writer's thread, which formats it and writes it to the files, once it
// holds kChunkRecords, so memory stays bounded however long the run. With a limit (trace_limit), the files
// stop at that many bytes, cut between records, and end with a note of how
// many calls were not written. The summary writers produce the other files
// from a Summary (an Aggregator's, or one `api-tracer merge` built).
//
// Thread-safety: TraceWriter::Append may be called concurrently with
// itself, never with Finish (the hooks stop before the recorder closes); the
// summary writers read a snapshot of the Aggregator.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <istream>
#include <map>
#include <mutex>
#include <ostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/aggregator.h"
#include "core/file.h"
#include "core/options.h"
#include "core/status.h"
#include "core/per_thread.h"

namespace api_tracer {

// What a record of api_trace.yaml carries beside its config.
struct RecordExtras {
  int level = 0;
  int depth = -1;              // >= 0: "depth: N" (every nested op recorded)
  int thread = -1;             // >= 0: "thread: N", an intra-op worker thread's call (with depth)
  std::string_view backward;   // non-empty: "backward: MulBackward0"
  std::string_view module;     // non-empty: "module: Net.features.0"
};

class TraceWriter {
 public:
  // Each thread appends a small record (its config, its extra fields) to a
  // buffer of its own, with no lock: threads never wait for each other per
  // call. A buffer of kChunkRecords goes to the writer's thread, which
  // formats the records (and any config not formatted yet: a first sight's
  // cost leaves the traced thread) and writes them out under the files'
  // lock; with kMaxQueuedChunks waiting, the traced thread waits for room,
  // so memory stays bounded. A thread's records keep their order; the
  // records of different threads interleave by chunks.
  static constexpr size_t kChunkRecords = 1024;
  static constexpr size_t kMaxQueuedChunks = 8;

  // `yaml` and `txt` are borrowed and must outlive the writer. With
  // `write_level`, each YAML record carries "level: N" (merged output of
  // several levels). `limit`: the most bytes both files together take
  // (0: no limit).
  TraceWriter(Sink* yaml, Sink* txt, bool write_level, uint64_t limit = 0);
  ~TraceWriter();

  void Append(const Aggregator::Config& config, const RecordExtras& extras);
  // Writes out every thread's buffer and, when the limit cut the trace, the
  // note of the calls not written (TraceLimitNote) to both files; reports
  // the first write error seen since the writer was made.
  Status Finish();
  // Waits until every chunk handed to the writer's thread is written (the
  // buffers still filling are not).
  void Drain();
  // The calls the limit kept out of the files (complete after Finish).
  uint64_t dropped() const { return dropped_; }

  // fork(): before, no chunk is being written or queued (the child would
  // inherit the locks held); after, in the child, which has no writer's
  // thread, chunks are written by the thread that fills them.
  void PrepareFork();
  void ParentAfterFork();
  void ChildAfterFork();

 private:
  struct Buffer;
  struct Record;
  using Chunk = std::vector<Record>;
  void Hand(Buffer& b);
  void Work();
  void WriteOut(const Chunk& chunk);
  void Write(Sink* sink, std::string_view data);

  Sink* yaml_;
  Sink* txt_;
  const bool write_level_;
  const uint64_t limit_;
  std::atomic<bool> full_{false};  // the limit is reached: Append only counts
  std::mutex files_mu_;            // the sinks, written_, dropped_, error_
  uint64_t written_ = 0;
  uint64_t dropped_ = 0;
  Status error_;
  PerThread<Buffer> buffers_;

  // The writer's thread, started by the first chunk; its queue.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;  // a chunk queued, or stop_
  std::condition_variable room_cv_;   // a chunk taken, or the thread idle
  std::deque<Chunk> queue_;
  bool busy_ = false;  // the thread is writing a chunk it took
  bool stop_ = false;
  bool forked_ = false;  // this process is a fork() child: no thread here
  std::thread* thread_ = nullptr;  // (a child's copy is dropped, never joined)
  std::mutex work_mu_;  // held while the thread writes a chunk
};

// Per level, how many records of api_trace.yaml say "level: N" (those of
// a merged set of several levels), read as TraceWriter writes them: N a
// level in [0, kMaxLevel] in decimal digits. The first field that is not
// ends the count, with its line and value kept.
struct TraceLevels {
  std::map<int, uint64_t> counts;
  uint64_t bad_line = 0;  // 1-based line of a level field that is not a level; 0: none
  std::string bad_value;
};
TraceLevels CountTraceLevels(std::istream& yaml);

// The last line of api_trace.yaml and api_trace.txt when trace_limit cut
// them: "# trace_limit of LIMIT bytes reached: N calls not written\n".
std::string TraceLimitNote(uint64_t limit, uint64_t dropped);
// Reads such a line (with or without its newline) back; false for any other.
bool ParseTraceLimitNote(std::string_view line, uint64_t* limit, uint64_t* dropped);

// What the summary files say of an output set: taken from an Aggregator
// when tracing stops, or built by `api-tracer merge` from several sets.
struct Summary {
  std::vector<std::pair<std::string, uint64_t>> api_counts;  // first-seen order
  std::vector<std::string> config_lines;                     // any order, duplicates allowed
  std::vector<uint64_t> config_counts;                       // the calls of each config line, where known
  std::string label;                                         // the set's source (api_config_sources.yaml)
  std::vector<std::pair<std::string, std::vector<Stack>>> stacks;
  // Per config line, its arguments' value profiles (a line may come more
  // than once: the writer merges).
  std::vector<std::pair<std::string, Aggregator::PathProfiles>> value_profiles;
};
Summary Summarize(const Aggregator& agg);

using SummaryWriter = void (*)(const Summary&, std::ostream&);
// What `write` makes of `s`, as a string.
std::string Render(SummaryWriter write, const Summary& s);

// api_apis.txt: the distinct API names, byte-wise sorted, one a line.
void WriteApis(const Summary& s, std::ostream& out);
// api_configs.yaml: the distinct config lines, byte-wise sorted, one a line.
void WriteConfigs(const Summary& s, std::ostream& out);
// api_config_sources.yaml (with a label): YAML a record a line, each a JSON
// object. `labels:` the set's sources with their calls (here the one
// label); `configs:` per config line (byte-wise sorted, duplicates added) its
// calls, its number of sources and those sources with their calls:
//   labels:
//   - {"label": "resnet", "calls": 12}
//   configs:
//   - {"config": "torch.add(...)", "calls": 12, "sources": 1, "from": {"resnet": 12}}
void WriteConfigSources(const Summary& s, std::ostream& out);
// A string as JSON writes it (json.dumps(s, ensure_ascii=False)), appended.
void AppendJsonString(std::string_view s, std::string* out);
// api_statistics.yaml: totals, then "api: count (pp.pp%)" by count
// descending, ties in first-seen order.
void WriteStatistics(const Summary& s, std::ostream& out);
// api_stacks.yaml: per API, byte-wise sorted, its stacks under "3stacks".
void WriteStacks(const Summary& s, std::ostream& out);
// api_value_ranges.yaml: per config line (sorted) with integer or bool
// tensor arguments, each argument's profile merged over every call
// (ValueProfile; docs/format.md): `ranges` (path: [min, max]), `values` (the
// distinct values, where few), `sentinels` (where many: the few negative
// values and the range of the rest), `sorted` (paths in non-decreasing
// order in every call).
void WriteValueRanges(const Summary& s, std::ostream& out);

}  // namespace api_tracer
