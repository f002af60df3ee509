#include "core/recorder.h"

#include "core/sources.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>

namespace api_tracer {

namespace {

// Keeps the first error of several steps that all run.
struct FirstError {
  Status status;
  void Keep(const Status& st) {
    if (status.ok() && !st.ok()) status = st;
  }
};

}  // namespace

std::span<const OutputFile, kNumOutputFiles> OutputFiles() {
  constexpr auto trace = [](const TraceOptions& o) { return o.stream_trace; };
  constexpr auto stacks = [](const TraceOptions& o) { return o.record_stack; };
  constexpr auto ranges = [](const TraceOptions& o) { return o.value_ranges; };
  constexpr auto labelled = [](const TraceOptions& o) { return !o.label.empty(); };
  static constexpr OutputFile kFiles[kNumOutputFiles] = {
      {"api_trace", ".yaml", trace, "stream_trace", nullptr},
      {"api_trace", ".txt", trace, "stream_trace", nullptr},
      {"api_apis", ".txt", nullptr, "", &WriteApis},
      {"api_configs", ".yaml", nullptr, "", &WriteConfigs},
      {"api_statistics", ".yaml", nullptr, "", &WriteStatistics},
      {"api_stacks", ".yaml", stacks, "record_stack", &WriteStacks},
      {"api_value_ranges", ".yaml", ranges, "value_ranges", &WriteValueRanges},
      {"api_config_sources", ".yaml", labelled, "label", &WriteConfigSources},
  };
  return std::span<const OutputFile, kNumOutputFiles>(kFiles);
}

std::string OutputFile::Path(std::string_view dir, std::string_view suffix) const {
  std::string name = std::string(stem) + std::string(suffix) + std::string(ext);
  return (std::filesystem::path(dir) / name).string();
}

Status WriteSummaryFiles(const Summary& summary, const TraceOptions& options, std::string_view dir,
                         std::string_view suffix) {
  FirstError error;
  for (const OutputFile& file : OutputFiles()) {
    if (file.summary && (!file.wanted || file.wanted(options))) {
      error.Keep(ReplaceFile(file.Path(dir, suffix), Render(file.summary, summary)));
    }
  }
  return error.status;
}

struct Recorder::OutputSet {
  std::string suffix;
  std::unique_ptr<Aggregator> agg;
  std::unique_ptr<FileSink> trace_yaml, trace_txt;
  std::unique_ptr<TraceWriter> trace;
};

// fork(): no snapshot may be under way in the parent while another thread
// forks (the child would inherit the aggregator's locks held), and the
// child's copy of a recorder has no snapshot thread and writes nothing.
struct ForkGuard {
  static std::mutex& Mu() {
    static auto* mu = new std::mutex;  // never destroyed: atfork handlers outlive static destructors
    return *mu;
  }
  static std::vector<Recorder*>& Live() {
    static auto* live = new std::vector<Recorder*>;
    return *live;
  }
  static void Add(Recorder* r) {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(&Prepare, &Parent, &Child); });
    std::lock_guard<std::mutex> lock(Mu());
    Live().push_back(r);
  }
  static void Remove(Recorder* r) {
    std::lock_guard<std::mutex> lock(Mu());
    std::erase(Live(), r);
  }
  static void Prepare() {
    Mu().lock();
    for (Recorder* r : Live()) {
      r->snapshot_mu_.lock();
      for (auto& set : r->sets_) {
        if (set->trace) set->trace->PrepareFork();
      }
    }
  }
  static void Parent() {
    for (Recorder* r : Live()) {
      for (auto& set : r->sets_) {
        if (set->trace) set->trace->ParentAfterFork();
      }
      r->snapshot_mu_.unlock();
    }
    Mu().unlock();
  }
  static void Child() {
    for (Recorder* r : Live()) {
      r->forked_ = true;
      for (auto& set : r->sets_) {
        if (set->trace) set->trace->ChildAfterFork();
      }
      r->snapshot_mu_.unlock();
    }
    Mu().unlock();
  }
};

Recorder::Recorder(const TraceOptions& options) : options_(options), by_level_(kMaxLevel + 1, nullptr) {}

Recorder::~Recorder() {
  Close();
  ForkGuard::Remove(this);
}

std::string Recorder::Suffix(int level) const { return options_.merge_output ? "" : "_level_" + std::to_string(level); }

Status Recorder::Open(const TraceOptions& options, std::unique_ptr<Recorder>* out) {
  if (options.levels.empty()) return Status::InvalidArgument("no levels to record");
  for (int level : options.levels) {
    if (level < 0 || level > kMaxLevel) {
      return Status::InvalidArgument("level " + std::to_string(level) + " is out of range");
    }
  }
  if (!(options.snapshot_interval >= 0)) {
    return Status::InvalidArgument("snapshot_interval must be at least 0 seconds");
  }
  if (!options.label.empty() && !IsLabel(options.label)) {
    return Status::InvalidArgument("label must be text without control characters, of at most " +
                                   std::to_string(kMaxLabel) + " characters");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.output_path, ec);
  if (ec) {
    return Status::IOError("cannot create output directory " + options.output_path + ": " + ec.message());
  }
  std::unique_ptr<Recorder> rec(new Recorder(options));
  bool write_level = options.merge_output && options.levels.size() > 1;
  for (int level : options.levels) {
    if (rec->by_level_[level]) continue;
    if (options.merge_output && !rec->sets_.empty()) {
      rec->by_level_[level] = rec->sets_.front().get();
      continue;
    }
    auto set = std::make_unique<OutputSet>();
    set->suffix = rec->Suffix(level);
    // What a process killed while it wrote this set's summary files left.
    for (const OutputFile& file : OutputFiles()) {
      if (file.summary) RemoveStaleTemporary(file.Path(options.output_path, set->suffix));
    }
    set->agg =
        std::make_unique<Aggregator>(&rec->apis_, options.format(), options.value_ranges, options.float_profiles());
    if (options.stream_trace) {
      for (auto [f, file] : {std::pair{kTraceYaml, &set->trace_yaml}, std::pair{kTraceTxt, &set->trace_txt}}) {
        Status st = FileSink::Create(OutputFiles()[f].Path(options.output_path, set->suffix), file);
        if (!st.ok()) return st;
      }
      set->trace =
          std::make_unique<TraceWriter>(set->trace_yaml.get(), set->trace_txt.get(), write_level, options.trace_limit);
    }
    rec->by_level_[level] = set.get();
    rec->sets_.push_back(std::move(set));
  }
  ForkGuard::Add(rec.get());  // with its sets: a fork waits for their trace writers
  // The first snapshot: the summary files exist (empty) from the start, and
  // a directory where they cannot be written fails now.
  if (Status st = rec->Snapshot(); !st.ok()) return st;
  if (options.snapshot_interval > 0) {
    // The thread takes no signal: a process-wide one (SIGTERM, Ctrl-C) goes
    // to a thread of the program, whose blocking call it interrupts.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rec->loop_ = new std::thread(&Recorder::SnapshotLoop, rec.get());
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  *out = std::move(rec);
  return Status::OK();
}

void Recorder::SnapshotLoop() {
  const auto interval = std::chrono::duration<double>(options_.snapshot_interval);
  std::unique_lock<std::mutex> lock(loop_mu_);
  while (!loop_cv_.wait_for(lock, interval, [this] { return stop_; })) {
    lock.unlock();
    Snapshot();  // a failure is tried again next time, and reported by the one at Close
    lock.lock();
  }
}

const Aggregator::Config* Recorder::Record(const KeyWriter& key, const RecordExtras& extras) {
  int level = extras.level;
  OutputSet* set = level >= 0 && level <= kMaxLevel ? SetFor(level) : nullptr;
  if (!set) {
    KeepRecordError(Status::InvalidArgument("level " + std::to_string(level) + " is not recorded"));
    return nullptr;
  }
  Status st;
  const Aggregator::Config* config = set->agg->Record(key.view(), key.profiles(), &st);
  if (!config) {
    KeepRecordError(st);
    return nullptr;
  }
  if (set->trace) set->trace->Append(*config, extras);
  return config;
}

void Recorder::KeepRecordError(const Status& st) {
  std::lock_guard<std::mutex> lock(record_error_mu_);
  if (record_error_.ok()) record_error_ = st;
}

bool Recorder::WantsStack(int level, ApiId api) const {
  return options_.record_stack && SetFor(level)->agg->WantsStack(api);
}

void Recorder::AddStack(int level, ApiId api, uint64_t hash, const std::function<Stack()>& make) {
  SetFor(level)->agg->AddStack(api, hash, make);
}

Status Recorder::Snapshot() {
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  if (forked_) return Status::OK();
  FirstError error;
  for (auto& set : sets_) {
    Summary summary = Summarize(*set->agg);
    summary.label = options_.label;
    error.Keep(WriteSummaryFiles(summary, options_, options_.output_path, set->suffix));
  }
  return error.status;
}

Status Recorder::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  if (forked_) return Status::OK();  // the parent's files: not ours to write
  if (loop_) {
    {
      std::lock_guard<std::mutex> lock(loop_mu_);
      stop_ = true;
    }
    loop_cv_.notify_all();
    loop_->join();
    delete loop_;
    loop_ = nullptr;
  }
  FirstError error;
  for (auto& set : sets_) {
    if (!set->trace) continue;
    error.Keep(set->trace->Finish());
    error.Keep(set->trace_yaml->Close());
    error.Keep(set->trace_txt->Close());
  }
  error.Keep(Snapshot());
  std::lock_guard<std::mutex> lock(record_error_mu_);
  error.Keep(record_error_);
  return error.status;
}

}  // namespace api_tracer
