// The writers of an output set's files (docs/format.md describes each one).
//
// TraceWriter streams api_trace.yaml and api_trace.txt while tracing: each
// call appends its cached YAML record and config line to a buffer, and the
// buffer goes to its sink once it holds kFlushBytes, so memory stays bounded
// however long the run. The summary writers produce the other four files
// from an Aggregator when tracing stops.
//
// Writers take their sinks as std::ostream, so tests run them against string
// streams. Thread-safety: TraceWriter::Append may be called concurrently; the
// summary writers read a snapshot of the Aggregator.
#pragma once

#include <mutex>
#include <ostream>
#include <string>

#include "core/aggregator.h"
#include "core/status.h"

namespace api_tracer {

class TraceWriter {
 public:
  static constexpr size_t kFlushBytes = 1 << 20;

  // `yaml` and `txt` are borrowed and must outlive the writer. With
  // `write_level`, each YAML record carries "level: N" (merged output of
  // several levels).
  TraceWriter(std::ostream* yaml, std::ostream* txt, bool write_level)
      : yaml_(yaml), txt_(txt), write_level_(write_level) {}

  void Append(const Aggregator::Config& config, int level);
  // Writes out what is buffered and flushes the sinks; reports the first
  // write error seen since the writer was made.
  Status Flush();

 private:
  void WriteOutLocked();

  std::ostream* yaml_;
  std::ostream* txt_;
  const bool write_level_;
  std::mutex mu_;
  std::string yaml_buf_;
  std::string txt_buf_;
  bool failed_ = false;
};

// api_apis.txt: the distinct API names, byte-wise sorted, one a line.
void WriteApis(const Aggregator& agg, std::ostream& out);
// api_configs.yaml: the distinct config lines, byte-wise sorted, one a line.
void WriteConfigs(const Aggregator& agg, std::ostream& out);
// api_statistics.yaml: totals, then "api: count (pp.pp%)" by count
// descending, ties in first-seen order.
void WriteStatistics(const Aggregator& agg, std::ostream& out);
// api_stacks.yaml: per API, byte-wise sorted, its stacks under "3stacks".
void WriteStacks(const Aggregator& agg, std::ostream& out);

}  // namespace api_tracer
