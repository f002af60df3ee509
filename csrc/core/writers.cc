#include "core/writers.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <unordered_map>

#include "core/per_thread.h"
#include "core/string_hash.h"
#include "core/yaml.h"

namespace api_tracer {

struct TraceWriter::Buffer {
  std::string yaml;
  std::string txt;
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

TraceWriter::TraceWriter(std::ostream* yaml, std::ostream* txt, bool write_level)
    : yaml_(yaml), txt_(txt), write_level_(write_level) {}

TraceWriter::~TraceWriter() = default;

namespace {

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
  b.yaml.append(*config.yaml_header);
  if (write_level_) AppendIntField(&b.yaml, "  level: ", extras.level);
  if (extras.depth >= 0) AppendIntField(&b.yaml, "  depth: ", extras.depth);
  if (!extras.backward.empty()) b.yaml.append(Buffer::Line(b.backward_lines, "backward", extras.backward));
  if (!extras.module.empty()) b.yaml.append(Buffer::Line(b.module_lines, "module", extras.module));
  b.yaml.append(config.yaml_body);
  b.txt.append(config.line);
  b.txt.push_back('\n');
  if (b.yaml.size() + b.txt.size() >= kChunkBytes) WriteOut(b);
}

void TraceWriter::WriteOut(Buffer& b) {
  std::lock_guard<std::mutex> lock(files_mu_);
  yaml_->write(b.yaml.data(), static_cast<std::streamsize>(b.yaml.size()));
  txt_->write(b.txt.data(), static_cast<std::streamsize>(b.txt.size()));
  failed_ = failed_ || !yaml_->good() || !txt_->good();
  b.yaml.clear();
  b.txt.clear();
}

Status TraceWriter::Flush() {
  buffers_.ForEach([this](Buffer& b) { WriteOut(b); });
  std::lock_guard<std::mutex> lock(files_mu_);
  yaml_->flush();
  txt_->flush();
  failed_ = failed_ || !yaml_->good() || !txt_->good();
  return failed_ ? Status::IOError("writing the trace failed") : Status::OK();
}

Summary Summarize(const Aggregator& agg) {
  Summary s;
  for (const auto& c : agg.ApiCounts()) s.api_counts.emplace_back(agg.apis().Name(c.api), c.count);
  s.config_lines = agg.ConfigLines();
  for (auto& [api, stacks] : agg.Stacks()) s.stacks.emplace_back(agg.apis().Name(api), std::move(stacks));
  s.value_ranges = agg.ValueRanges();
  return s;
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
  for (const auto& [name, count] : counts) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f", 100.0 * static_cast<double>(count) / static_cast<double>(total));
    out << name << ": " << count << " (" << pct << "%)\n";
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
  auto ranges = s.value_ranges;
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  yaml::Node root = yaml::Node::Seq();
  for (const auto& [line, list] : ranges) {
    yaml::Node& entry = root.Add(yaml::Node::Map());
    entry.Set("config", yaml::Node::String(line));
    yaml::Node& args = entry.Set("ranges", yaml::Node::Map());
    for (const auto& r : list) {
      yaml::Node& pair = args.Set(r.path, yaml::Node::Seq());
      pair.Add(yaml::Node::Scalar(std::to_string(r.min)));
      pair.Add(yaml::Node::Scalar(std::to_string(r.max)));
    }
  }
  std::string text;
  yaml::Emit(root, 0, &text);
  out << text;
}

}  // namespace api_tracer
