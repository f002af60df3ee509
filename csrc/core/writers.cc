#include "core/writers.h"

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
#include "core/string_hash.h"
#include "core/yaml.h"

namespace api_tracer {

struct TraceWriter::Buffer {
  std::string yaml;
  std::string txt;
  uint64_t dropped = 0;  // calls Append kept out once the limit was reached
  using Lines = std::unordered_map<std::string, std::string, StringHash, std::equal_to<>>;
  // "  KEY: VALUE\n" per value of a record field: quoting is checked once.
  Lines backward_lines, module_lines;

  static const std::string& Line(Lines& lines, std::string_view key, std::string_view value) {
    auto it = lines.find(value);
    if (it == lines.end()) {
      std::string line = "  " + std::string(key) + ": ";
      yaml::AppendString(value, &line);
      line.push_back('\n');
      it = lines.emplace(std::string(value), std::move(line)).first;
    }
    return it->second;
  }
};

TraceWriter::TraceWriter(Sink* yaml, Sink* txt, bool write_level, uint64_t limit)
    : yaml_(yaml), txt_(txt), write_level_(write_level), limit_(limit) {}

TraceWriter::~TraceWriter() = default;

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

// The end of the record of `yaml` (records start with "- " at the start of a
// line) that starts at `from`.
size_t RecordEnd(const std::string& yaml, size_t from) {
  size_t next = yaml.find("\n- ", from);
  return next == std::string::npos ? yaml.size() : next + 1;
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
  b.yaml.append(*config.yaml_header);
  if (write_level_) AppendIntField(&b.yaml, kLevelField, extras.level);
  if (extras.depth >= 0) AppendIntField(&b.yaml, kDepthField, extras.depth);
  if (extras.thread >= 0) AppendIntField(&b.yaml, kThreadField, extras.thread);
  if (!extras.backward.empty()) b.yaml.append(Buffer::Line(b.backward_lines, "backward", extras.backward));
  if (!extras.module.empty()) b.yaml.append(Buffer::Line(b.module_lines, "module", extras.module));
  b.yaml.append(config.yaml_body);
  b.txt.append(config.line);
  b.txt.push_back('\n');
  if (b.yaml.size() + b.txt.size() >= kChunkBytes) WriteOut(b);
}

void TraceWriter::Write(Sink* sink, std::string_view data) {
  if (!error_.ok() || data.empty()) return;  // a failed file is not written again
  error_ = sink->Write(data);
}

void TraceWriter::WriteOut(Buffer& b) {
  std::lock_guard<std::mutex> lock(files_mu_);
  size_t yaml_end = b.yaml.size(), txt_end = b.txt.size();
  if (limit_ && written_ + yaml_end + txt_end > limit_) {
    // The records that still fit go out whole (a record is one line of the
    // text, and one "- " entry of the YAML); the rest are counted.
    yaml_end = txt_end = 0;
    while (txt_end < b.txt.size()) {
      size_t txt_next = b.txt.find('\n', txt_end) + 1;
      size_t yaml_next = RecordEnd(b.yaml, yaml_end + 1);
      if (written_ + yaml_next + txt_next > limit_) break;
      yaml_end = yaml_next;
      txt_end = txt_next;
    }
    dropped_ += static_cast<uint64_t>(std::count(b.txt.begin() + static_cast<std::ptrdiff_t>(txt_end), b.txt.end(), '\n'));
    full_.store(true, std::memory_order_relaxed);
  }
  Write(yaml_, std::string_view(b.yaml).substr(0, yaml_end));
  Write(txt_, std::string_view(b.txt).substr(0, txt_end));
  written_ += yaml_end + txt_end;
  b.yaml.clear();
  b.txt.clear();
}

Status TraceWriter::Finish() {
  buffers_.ForEach([this](Buffer& b) {
    WriteOut(b);
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
  return expect(kNoteParts[0]) && number(limit) && expect(kNoteParts[1]) && number(dropped) &&
         expect(kNoteParts[2]) && line.empty();
}

Summary Summarize(const Aggregator& agg) {
  Summary s;
  auto [api_counts, config_lines] = agg.CountsAndLines();
  for (const auto& c : api_counts) s.api_counts.emplace_back(agg.apis().Name(c.api), c.count);
  s.config_lines = std::move(config_lines);
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
