#include "core/writers.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <span>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "core/format.h"
#include "core/per_thread.h"
#include "core/sources.h"
#include "core/string_hash.h"
#include "core/yaml.h"

namespace api_tracer {

struct TraceWriter::Record {
  const Aggregator::Config* config;
  int level, depth, thread;
  const std::string* backward;  // its "  backward: ...\n" line (a Buffer's Lines), or null
  const std::string* module;
};

struct TraceWriter::Buffer {
  Chunk records;
  uint64_t dropped = 0;  // calls Append kept out once the limit was reached
  using Lines = std::unordered_map<std::string, std::string, StringHash, std::equal_to<>>;
  // "  KEY: VALUE\n" per value of a record field: quoting is checked once
  // (the nodes never move: records point at their lines).
  Lines backward_lines, module_lines;

  static const std::string* Line(Lines& lines, std::string_view key, std::string_view value) {
    if (value.empty()) return nullptr;
    auto it = lines.find(value);
    if (it == lines.end()) {
      std::string line = "  " + std::string(key) + ": ";
      yaml::AppendString(value, &line);
      line.push_back('\n');
      it = lines.emplace(std::string(value), std::move(line)).first;
    }
    return &it->second;
  }
};

TraceWriter::TraceWriter(Sink* yaml, Sink* txt, bool write_level, uint64_t limit)
    : yaml_(yaml), txt_(txt), write_level_(write_level), limit_(limit) {}

TraceWriter::~TraceWriter() {
  if (!thread_) return;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  thread_->join();
  delete thread_;
}

namespace {

// The fields TraceWriter adds to a record.
constexpr std::string_view kLevelField = "  level: ";
constexpr std::string_view kDepthField = "  depth: ";
constexpr std::string_view kThreadField = "  thread: ";

// `prefix`, `value`, newline: a YAML record's integer field.
void AppendIntField(std::string* out, std::string_view prefix, int value) {
  char digits[16];
  char* end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out->append(prefix);
  out->append(digits, end);
  out->push_back('\n');
}

// Each distinct line once, in byte order.
void WriteSortedUnique(std::vector<std::string> lines, std::ostream& out) {
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  for (const auto& line : lines) out << line << '\n';
}

}  // namespace

void TraceWriter::Append(const Aggregator::Config& config, const RecordExtras& extras) {
  Buffer& b = buffers_.Local();
  if (full_.load(std::memory_order_relaxed)) {
    ++b.dropped;
    return;
  }
  if (b.records.capacity() < kChunkRecords) b.records.reserve(kChunkRecords);
  b.records.push_back({&config, extras.level, extras.depth, extras.thread,
                       Buffer::Line(b.backward_lines, "backward", extras.backward),
                       Buffer::Line(b.module_lines, "module", extras.module)});
  if (b.records.size() >= kChunkRecords) Hand(b);
}

void TraceWriter::Hand(Buffer& b) {
  Chunk chunk;
  chunk.swap(b.records);
  std::unique_lock<std::mutex> lock(queue_mu_);
  if (forked_) {  // no writer's thread in this process
    lock.unlock();
    WriteOut(chunk);
    return;
  }
  if (!thread_) {
    // The thread takes no signal: a process-wide one (SIGTERM, Ctrl-C) goes
    // to a thread of the program, whose blocking call it interrupts.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = new std::thread(&TraceWriter::Work, this);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  room_cv_.wait(lock, [this] { return queue_.size() < kMaxQueuedChunks; });
  queue_.push_back(std::move(chunk));
  queue_cv_.notify_one();
}

void TraceWriter::Work() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  while (true) {
    queue_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopped, and everything written
    Chunk chunk = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    room_cv_.notify_all();
    {
      std::lock_guard<std::mutex> work(work_mu_);
      WriteOut(chunk);
    }
    lock.lock();
    busy_ = false;
    room_cv_.notify_all();
  }
}

void TraceWriter::Drain() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  room_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void TraceWriter::PrepareFork() {
  work_mu_.lock();
  queue_mu_.lock();
}

void TraceWriter::ParentAfterFork() {
  queue_mu_.unlock();
  work_mu_.unlock();
}

void TraceWriter::ChildAfterFork() {
  forked_ = true;
  queue_.clear();  // the parent's to write
  thread_ = nullptr;  // the parent's thread: not in this process
  queue_mu_.unlock();
  work_mu_.unlock();
}

void TraceWriter::Write(Sink* sink, std::string_view data) {
  if (!error_.ok() || data.empty()) return;  // a failed file is not written again
  error_ = sink->Write(data);
}

void TraceWriter::WriteOut(const Chunk& chunk) {
  // Formatted before the files' lock is taken (configs seen for the first
  // time get their text here); each record's end is kept for the limit.
  std::string yaml, txt;
  std::vector<std::pair<size_t, size_t>> ends;  // after each record: yaml's size, txt's
  if (limit_) ends.reserve(chunk.size());
  for (const Record& r : chunk) {
    yaml.append(*r.config->yaml_header);
    if (write_level_) AppendIntField(&yaml, kLevelField, r.level);
    if (r.depth >= 0) AppendIntField(&yaml, kDepthField, r.depth);
    if (r.thread >= 0) AppendIntField(&yaml, kThreadField, r.thread);
    if (r.backward) yaml.append(*r.backward);
    if (r.module) yaml.append(*r.module);
    yaml.append(r.config->yaml_body());
    txt.append(r.config->line());
    txt.push_back('\n');
    if (limit_) ends.emplace_back(yaml.size(), txt.size());
  }
  std::lock_guard<std::mutex> lock(files_mu_);
  size_t yaml_end = yaml.size(), txt_end = txt.size();
  if (limit_ && written_ + yaml_end + txt_end > limit_) {
    // The records that still fit go out whole (a record is one line of the
    // text, and one "- " entry of the YAML); the rest are counted.
    size_t kept = 0;
    while (kept < ends.size() && written_ + ends[kept].first + ends[kept].second <= limit_) ++kept;
    yaml_end = kept ? ends[kept - 1].first : 0;
    txt_end = kept ? ends[kept - 1].second : 0;
    dropped_ += ends.size() - kept;
    full_.store(true, std::memory_order_relaxed);
  }
  Write(yaml_, std::string_view(yaml).substr(0, yaml_end));
  Write(txt_, std::string_view(txt).substr(0, txt_end));
  written_ += yaml_end + txt_end;
}

Status TraceWriter::Finish() {
  Drain();  // the chunks handed over first: each thread's records stay in order
  buffers_.ForEach([this](Buffer& b) {
    WriteOut(b.records);
    b.records.clear();
    std::lock_guard<std::mutex> lock(files_mu_);
    dropped_ += std::exchange(b.dropped, 0);
  });
  std::lock_guard<std::mutex> lock(files_mu_);
  if (dropped_) {
    std::string note = TraceLimitNote(limit_, dropped_);
    Write(yaml_, note);
    Write(txt_, note);
  }
  return error_;
}

TraceLevels CountTraceLevels(std::istream& yaml) {
  TraceLevels out;
  std::string line;
  for (uint64_t lineno = 1; std::getline(yaml, line); ++lineno) {
    if (!line.starts_with(kLevelField)) continue;
    std::string_view value = std::string_view(line).substr(kLevelField.size());
    int level = -1;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), level);
    bool digits = !value.empty() && value.front() != '-' && value.front() != '+';
    if (!digits || ec != std::errc() || end != value.data() + value.size() || level > kMaxLevel) {
      out.bad_line = lineno;
      out.bad_value = std::string(value.substr(0, 40));
      return out;
    }
    ++out.counts[level];
  }
  return out;
}

namespace {
constexpr std::string_view kNoteParts[] = {"# trace_limit of ", " bytes reached: ", " calls not written"};
}  // namespace

std::string TraceLimitNote(uint64_t limit, uint64_t dropped) {
  return std::string(kNoteParts[0]) + std::to_string(limit) + std::string(kNoteParts[1]) + std::to_string(dropped) +
         std::string(kNoteParts[2]) + "\n";
}

bool ParseTraceLimitNote(std::string_view line, uint64_t* limit, uint64_t* dropped) {
  if (line.ends_with('\n')) line.remove_suffix(1);
  auto expect = [&line](std::string_view part) {
    if (!line.starts_with(part)) return false;
    line.remove_prefix(part.size());
    return true;
  };
  auto number = [&line](uint64_t* out) {
    auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), *out);
    if (ec != std::errc() || end == line.data()) return false;
    line.remove_prefix(static_cast<size_t>(end - line.data()));
    return true;
  };
  return expect(kNoteParts[0]) && number(limit) && expect(kNoteParts[1]) && number(dropped) && expect(kNoteParts[2]) &&
         line.empty();
}

Summary Summarize(const Aggregator& agg) {
  Summary s;
  auto [api_counts, config_lines, config_counts] = agg.CountsAndLines();
  for (const auto& c : api_counts) s.api_counts.emplace_back(agg.apis().Name(c.api), c.count);
  s.config_lines = std::move(config_lines);
  s.config_counts = std::move(config_counts);
  for (auto& [api, stacks] : agg.Stacks()) s.stacks.emplace_back(agg.apis().Name(api), std::move(stacks));
  s.value_profiles = agg.ValueProfiles();
  return s;
}

std::string Render(SummaryWriter write, const Summary& s) {
  std::ostringstream out;
  write(s, out);
  return std::move(out).str();
}

void WriteApis(const Summary& s, std::ostream& out) {
  std::vector<std::string> names;
  for (const auto& [name, count] : s.api_counts) names.push_back(name);
  WriteSortedUnique(std::move(names), out);
}

void WriteConfigs(const Summary& s, std::ostream& out) { WriteSortedUnique(s.config_lines, out); }

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          *out += "\\u00";
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 15]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void WriteConfigSources(const Summary& s, std::ostream& out) {
  std::vector<size_t> order(s.config_lines.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.config_lines[a] < s.config_lines[b]; });
  auto calls = [&](size_t i) { return i < s.config_counts.size() ? s.config_counts[i] : 0; };
  uint64_t total = 0;
  for (size_t i = 0; i < s.config_lines.size(); ++i) total += calls(i);
  std::string text;
  AppendLabels({{s.label, total}}, &text);
  text += order.empty() ? "configs: []\n" : "configs:\n";
  SourceEntry e;
  e.sources = 1;
  for (size_t k = 0; k < order.size();) {
    e.config = s.config_lines[order[k]];
    e.calls = 0;
    for (; k < order.size() && s.config_lines[order[k]] == e.config; ++k) e.calls += calls(order[k]);
    e.top = {{s.label, e.calls}};
    AppendSourceEntry(e, &text);
  }
  out << text;
}

void WriteStatistics(const Summary& s, std::ostream& out) {
  std::vector<std::pair<std::string, uint64_t>> counts = s.api_counts;
  uint64_t total = 0;
  for (const auto& c : counts) total += c.second;
  out << "Total APIs: " << counts.size() << '\n';
  out << "Total API calls: " << total << "\n\n";
  std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string key;
  for (const auto& [name, count] : counts) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f", 100.0 * static_cast<double>(count) / static_cast<double>(total));
    key.clear();
    yaml::AppendString(name, &key);  // a YAML mapping: any API name reads back
    out << key << ": " << count << " (" << pct << "%)\n";
  }
}

void WriteStacks(const Summary& s, std::ostream& out) {
  auto stacks = s.stacks;
  std::sort(stacks.begin(), stacks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  yaml::Node root = yaml::Node::Map();
  for (const auto& [api, list] : stacks) {
    yaml::Node entry = yaml::Node::Map();
    yaml::Node& seq = entry.Set("3stacks", yaml::Node::Seq());
    for (const Stack& stack : list) {
      yaml::Node& frames = seq.Add(yaml::Node::Seq());
      for (const auto& frame : stack) frames.Add(yaml::Node::String(frame));
    }
    root.Set(api, std::move(entry));
  }
  std::string text;
  yaml::Emit(root, 0, &text);
  out << text;
}

void WriteValueRanges(const Summary& s, std::ostream& out) {
  std::map<std::string, std::map<std::string, ValueProfile>> merged;  // line -> path -> profile
  for (const auto& [line, paths] : s.value_profiles) {
    for (const auto& [path, profile] : paths) merged[line][path].Merge(profile);
  }
  auto ints = [](std::initializer_list<int64_t> values, std::span<const int64_t> more = {}) {
    yaml::Node seq = yaml::Node::Seq();
    for (int64_t v : values) seq.Add(yaml::Node::Scalar(std::to_string(v)));
    for (int64_t v : more) seq.Add(yaml::Node::Scalar(std::to_string(v)));
    return seq;
  };
  auto floats = [](std::initializer_list<double> values) {
    yaml::Node seq = yaml::Node::Seq();
    for (double v : values) {
      std::string text;
      AppendPyFloat(v, &text);  // as Python writes it: read back exactly
      seq.Add(yaml::Node::Scalar(text));
    }
    return seq;
  };
  yaml::Node root = yaml::Node::Seq();
  for (const auto& [line, paths] : merged) {
    yaml::Node entry = yaml::Node::Map();
    yaml::Node ranges = yaml::Node::Map(), values = yaml::Node::Map(), sentinels = yaml::Node::Map();
    yaml::Node sorted = yaml::Node::Seq(), sums = yaml::Node::Map(), finite = yaml::Node::Map(),
               nonfinite = yaml::Node::Map();
    for (const auto& [path, p] : paths) {
      if (!p.valid) continue;
      if (p.floating) {
        if (p.finite) finite.Set(path, floats({p.fmin, p.fmax}));
        yaml::Node others = yaml::Node::Seq();
        for (auto [held, name] : {std::pair{p.nan, "nan"}, {p.posinf, "inf"}, {p.neginf, "-inf"}}) {
          if (held) others.Add(yaml::Node::Scalar(name));
        }
        if (!others.items.empty()) nonfinite.Set(path, std::move(others));
        continue;
      }
      ranges.Set(path, ints({p.min, p.max}));
      if (!p.many) {
        values.Set(path, ints({}, p.distinct));
      } else if (!p.many_negatives && !p.negatives.empty() && p.nonneg_min <= p.max) {
        yaml::Node& sentinel = sentinels.Set(path, yaml::Node::Map());
        sentinel.Set("values", ints({}, p.negatives));
        sentinel.Set("rest", ints({p.nonneg_min, p.max}));
      }
      if (p.sorted) sorted.Add(yaml::Node::String(path));
      // (where every value is one, the shape in the line says the sum)
      if (p.same_sum && p.min < p.max) sums.Set(path, yaml::Node::Scalar(std::to_string(p.sum)));
    }
    if (ranges.entries.empty() && finite.entries.empty() && nonfinite.entries.empty()) continue;
    entry.Set("config", yaml::Node::String(line));
    if (!ranges.entries.empty()) entry.Set("ranges", std::move(ranges));
    if (!values.entries.empty()) entry.Set("values", std::move(values));
    if (!sentinels.entries.empty()) entry.Set("sentinels", std::move(sentinels));
    if (!sorted.items.empty()) entry.Set("sorted", std::move(sorted));
    if (!sums.entries.empty()) entry.Set("sums", std::move(sums));
    if (!finite.entries.empty()) entry.Set("floats", std::move(finite));
    if (!nonfinite.entries.empty()) entry.Set("nonfinite", std::move(nonfinite));
    root.Add(std::move(entry));
  }
  std::string text;
  yaml::Emit(root, 0, &text);
  out << text;
}

}  // namespace api_tracer
