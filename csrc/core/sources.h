// api_config_sources.yaml: where each config of a set came from (docs/format.md).
//
// The file is YAML laid out a record a line, each record a JSON object, so
// that it is read, and merged, a line at a time:
//
//   labels:
//   - {"label": "resnet", "calls": 12}
//   configs:
//   - {"config": "torch.add(...)", "calls": 12, "sources": 1, "from": {"resnet": 12}}
//
// `labels` are the set's sources (sorted) with their calls; `configs` its
// config lines (byte-wise sorted, once each) with their calls, their number
// of sources (an upper bound where "at_most": true) and the first sources by
// calls (most first, ties by label; at most kMaxListed).
//
// SourcesReader reads one file and checks every record as it comes;
// MergeSources merges many sets' files into one, a k-way merge of their
// sorted lines: memory grows with the number of sets, not of configs.
// Thread-safety: a reader is used by one thread; the functions are pure.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

#include "core/aggregator.h"
#include "core/file.h"
#include "core/parse.h"
#include "core/string_hash.h"

namespace api_tracer {

// Sources listed per config: as many as api_stacks.yaml keeps stacks.
inline constexpr size_t kMaxListed = Aggregator::kMaxStacks;
// Characters of a label, at most: a key of `from`, which YAML readers bound
// (1,024 characters with its quoting). options.py's LABEL_MAX is this.
inline constexpr size_t kMaxLabel = 256;
// Whether `s` is a label: UTF-8 text without control characters, 1 to
// kMaxLabel characters.
bool IsLabel(std::string_view s);

// The calls of each source (a label), in a record's order.
using SourceCounts = std::vector<std::pair<std::string, uint64_t>>;

struct SourceEntry {
  std::string config;
  uint64_t calls = 0;
  uint64_t sources = 0;
  SourceCounts top;  // ranked: calls descending, then label
  bool at_most = false;
};

// The file's head (labels, sorted by the caller) and a config's record line.
void AppendLabels(const SourceCounts& labels, std::string* out);
void AppendSourceEntry(const SourceEntry& e, std::string* out);
// Sorts sources by calls, most first, ties by label.
void Rank(SourceCounts* counts);

class SourcesReader {
 public:
  // Opens `path` (a regular file only) and reads its labels.
  static Status Open(const std::string& path, std::unique_ptr<SourcesReader>* out);
  ~SourcesReader();
  SourcesReader(const SourcesReader&) = delete;
  SourcesReader& operator=(const SourcesReader&) = delete;

  // The set's sources with their calls, in the file's order.
  const SourceCounts& labels() const { return labels_; }
  // The next config into `e`, checked; false at the end of the file (where
  // the totals are checked too) or on an error (then error() says it).
  bool Next(SourceEntry* e);
  const Status& error() const { return error_; }
  size_t line() const { return line_; }  // the line of the entry Next gave
  const std::string& path() const { return path_; }

 private:
  SourcesReader(std::string path, std::FILE* f) : path_(std::move(path)), f_(f) {}
  bool ReadLine(std::string_view* text);
  bool Fail(std::string message, size_t column = 0);
  bool ReadLabels();

  std::string path_;
  std::FILE* f_;
  char* buf_ = nullptr;
  size_t cap_ = 0;
  size_t line_ = 0, configs_line_ = 0;
  bool empty_configs_ = false, done_ = false;
  SourceCounts labels_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> label_index_;
  std::vector<uint64_t> listed_;  // per label, the calls the configs list for it
  std::string previous_;
  uint64_t total_ = 0;
  Status error_;
};

// Checks what every reader of the file checks of a config line: no control
// character, an API name before its '('.
Status CheckConfigShape(std::string_view line);
// Checks a config line as a consumer reads it: no control character, an API
// name before its '(', arguments the parser reads (the API set aside, so
// that any dialect's name reads). A ParseError says the column (1-based).
Status CheckConfigLine(std::string_view line, const ParseOptions& options);

struct MergeInput {
  std::string sources;  // the set's api_config_sources.yaml
  std::string configs;  // its api_configs.yaml, which must hold the same lines
};

struct MergeResult {
  uint64_t configs = 0;  // distinct configs written
  // Per input, per API (a config line up to its '('), the calls its configs add up to.
  std::vector<std::vector<std::pair<std::string, uint64_t>>> api_calls;
};

// Merges the inputs' configs and sources into `configs_out` (api_configs.yaml)
// and `sources_out` (api_config_sources.yaml): calls added, the sources of a
// config added per label and ranked, their number counted (an upper bound,
// at_most, where inputs that share a label both had sources beyond those
// listed). Each distinct line is checked once (CheckConfigLine).
Status MergeSources(const std::vector<MergeInput>& inputs, Sink* configs_out, Sink* sources_out,
                    const ParseOptions& options, MergeResult* result);

}  // namespace api_tracer
