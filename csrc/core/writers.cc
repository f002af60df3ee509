#include "core/writers.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "core/yaml.h"

namespace api_tracer {

void TraceWriter::Append(const Aggregator::Config& config, int level) {
  std::lock_guard<std::mutex> lock(mu_);
  yaml_buf_.append(*config.yaml_header);
  if (write_level_) {
    char buf[32];
    int n = std::snprintf(buf, sizeof buf, "  level: %d\n", level);
    yaml_buf_.append(buf, n);
  }
  yaml_buf_.append(config.yaml_body);
  txt_buf_.append(config.line);
  txt_buf_.push_back('\n');
  if (yaml_buf_.size() + txt_buf_.size() >= kFlushBytes) WriteOutLocked();
}

void TraceWriter::WriteOutLocked() {
  yaml_->write(yaml_buf_.data(), static_cast<std::streamsize>(yaml_buf_.size()));
  txt_->write(txt_buf_.data(), static_cast<std::streamsize>(txt_buf_.size()));
  failed_ = failed_ || !yaml_->good() || !txt_->good();
  yaml_buf_.clear();
  txt_buf_.clear();
}

Status TraceWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  WriteOutLocked();
  yaml_->flush();
  txt_->flush();
  failed_ = failed_ || !yaml_->good() || !txt_->good();
  return failed_ ? Status::IOError("writing the trace failed") : Status::OK();
}

void WriteApis(const Aggregator& agg, std::ostream& out) {
  std::vector<std::string> names;
  for (const auto& c : agg.ApiCounts()) names.push_back(agg.apis().Name(c.api));
  std::sort(names.begin(), names.end());
  for (const auto& name : names) out << name << '\n';
}

void WriteConfigs(const Aggregator& agg, std::ostream& out) {
  std::vector<std::string> lines = agg.ConfigLines();
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  for (const auto& line : lines) out << line << '\n';
}

void WriteStatistics(const Aggregator& agg, std::ostream& out) {
  std::vector<Aggregator::ApiCount> counts = agg.ApiCounts();
  uint64_t total = 0;
  for (const auto& c : counts) total += c.count;
  out << "Total APIs: " << counts.size() << '\n';
  out << "Total API calls: " << total << "\n\n";
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  for (const auto& c : counts) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f", 100.0 * static_cast<double>(c.count) /
                                               static_cast<double>(total));
    out << agg.apis().Name(c.api) << ": " << c.count << " (" << pct << "%)\n";
  }
}

void WriteStacks(const Aggregator& agg, std::ostream& out) {
  auto stacks = agg.Stacks();
  std::sort(stacks.begin(), stacks.end(), [&](const auto& a, const auto& b) {
    return agg.apis().Name(a.first) < agg.apis().Name(b.first);
  });
  yaml::Node root = yaml::Node::Map();
  for (const auto& [api, list] : stacks) {
    yaml::Node entry = yaml::Node::Map();
    yaml::Node& seq = entry.Set("3stacks", yaml::Node::Seq());
    for (const Stack& stack : list) {
      yaml::Node& frames = seq.Add(yaml::Node::Seq());
      for (const auto& frame : stack) frames.Add(yaml::Node::String(frame));
    }
    root.Set(agg.apis().Name(api), std::move(entry));
  }
  std::string text;
  yaml::Emit(root, 0, &text);
  out << text;
}

}  // namespace api_tracer
