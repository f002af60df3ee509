#include "core/recorder.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace api_tracer {

namespace {

// The files of an output set (docs/format.md), each with the option that
// asks for it (none: always written).
enum File { kTraceYaml, kTraceTxt, kApis, kConfigs, kStatistics, kStacks, kValueRanges, kNumFiles };
constexpr struct {
  const char* stem;
  const char* ext;
  bool RecorderOptions::*wanted;
} kFiles[kNumFiles] = {
    {"api_trace", ".yaml", &RecorderOptions::stream_trace},
    {"api_trace", ".txt", &RecorderOptions::stream_trace},
    {"api_apis", ".txt", nullptr},
    {"api_configs", ".yaml", nullptr},
    {"api_statistics", ".yaml", nullptr},
    {"api_stacks", ".yaml", &RecorderOptions::record_stack},
    {"api_value_ranges", ".yaml", &RecorderOptions::value_ranges},
};

}  // namespace

struct Recorder::OutputSet {
  std::unique_ptr<Aggregator> agg;
  std::array<std::ofstream, kNumFiles> files;  // those the options want are open
  std::unique_ptr<TraceWriter> trace;
};

Recorder::Recorder(const RecorderOptions& options)
    : options_(options), by_level_(kMaxLevel + 1, nullptr) {}

Recorder::~Recorder() { Close(); }

std::string Recorder::Path(int level, std::string_view stem, std::string_view ext) const {
  std::string name(stem);
  if (!options_.merge) name += "_level_" + std::to_string(level);
  name += ext;
  return (std::filesystem::path(options_.output_dir) / name).string();
}

static Status OpenFile(const std::string& path, std::ofstream* f) {
  f->open(path, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!f->is_open()) {
    return Status::IOError("cannot open " + path + " for writing: " + std::strerror(errno));
  }
  return Status::OK();
}

Status Recorder::Open(const RecorderOptions& options, std::unique_ptr<Recorder>* out) {
  if (options.levels.empty()) return Status::InvalidArgument("no levels to record");
  for (int level : options.levels) {
    if (level < 0 || level > kMaxLevel) {
      return Status::InvalidArgument("level " + std::to_string(level) + " is out of range");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(options.output_dir, ec);
  if (ec) {
    return Status::IOError("cannot create output directory " + options.output_dir + ": " +
                           ec.message());
  }
  std::unique_ptr<Recorder> rec(new Recorder(options));
  bool write_level = options.merge && options.levels.size() > 1;
  for (int level : options.levels) {
    if (rec->by_level_[level]) continue;
    if (options.merge && !rec->sets_.empty()) {
      rec->by_level_[level] = rec->sets_.front().get();
      continue;
    }
    auto set = std::make_unique<OutputSet>();
    set->agg = std::make_unique<Aggregator>(&rec->apis_, options.format, options.value_ranges);
    for (int f = 0; f < kNumFiles; ++f) {
      if (kFiles[f].wanted && !(options.*kFiles[f].wanted)) continue;
      Status st = OpenFile(rec->Path(level, kFiles[f].stem, kFiles[f].ext), &set->files[f]);
      if (!st.ok()) return st;
    }
    if (options.stream_trace) {
      set->trace = std::make_unique<TraceWriter>(&set->files[kTraceYaml], &set->files[kTraceTxt], write_level);
    }
    rec->by_level_[level] = set.get();
    rec->sets_.push_back(std::move(set));
  }
  *out = std::move(rec);
  return Status::OK();
}

const Aggregator::Config* Recorder::Record(const KeyWriter& key, const RecordExtras& extras,
                                           Status* status) {
  int level = extras.level;
  OutputSet* set = level >= 0 && level <= kMaxLevel ? SetFor(level) : nullptr;
  if (!set) {
    *status = Status::InvalidArgument("level " + std::to_string(level) + " is not recorded");
    return nullptr;
  }
  const Aggregator::Config* config = set->agg->Record(key.view(), key.ranges(), status);
  if (config && set->trace) set->trace->Append(*config, extras);
  return config;
}

bool Recorder::WantsStack(int level, ApiId api) const {
  return options_.record_stack && SetFor(level)->agg->WantsStack(api);
}

void Recorder::AddStack(int level, ApiId api, uint64_t hash, const std::function<Stack()>& make) {
  SetFor(level)->agg->AddStack(api, hash, make);
}

Status Recorder::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  Status result;
  auto keep_first = [&result](const Status& st) {
    if (result.ok() && !st.ok()) result = st;
  };
  for (auto& set : sets_) {
    if (set->trace) keep_first(set->trace->Flush());
    Summary summary = Summarize(*set->agg);
    auto& files = set->files;
    WriteApis(summary, files[kApis]);
    WriteConfigs(summary, files[kConfigs]);
    WriteStatistics(summary, files[kStatistics]);
    if (files[kStacks].is_open()) WriteStacks(summary, files[kStacks]);
    if (files[kValueRanges].is_open()) WriteValueRanges(summary, files[kValueRanges]);
    for (std::ofstream& f : files) {
      if (!f.is_open()) continue;
      f.close();
      if (f.fail()) keep_first(Status::IOError("writing to " + options_.output_dir + " failed"));
    }
  }
  return result;
}

}  // namespace api_tracer
