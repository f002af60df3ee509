// MergeSources (sources.h): many sets' api_config_sources.yaml and
// api_configs.yaml merged into one pair, as one k-way merge of their sorted
// lines, each distinct config line checked once.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>
#include <unordered_map>

#include "core/sources.h"
#include "core/sources_internal.h"
#include "core/string_hash.h"

namespace api_tracer {

using sources_internal::Shown;

// -- merging --------------------------------------------------------------------------------

namespace {

// One input of a merge: its reader, its configs file read beside it, its
// current entry, and its calls per API.
struct Input {
  std::unique_ptr<SourcesReader> reader;
  std::FILE* configs = nullptr;
  std::string configs_path;
  char* buf = nullptr;
  size_t cap = 0, configs_line = 0;
  SourceEntry entry;
  bool live = false;
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> api_calls;

  ~Input() {
    if (configs) std::fclose(configs);
    std::free(buf);
  }

  // The next entry, checked against the configs file's next line.
  Status Advance() {
    live = reader->Next(&entry);
    if (!reader->error().ok()) return reader->error();
    errno = 0;
    ssize_t n = ::getline(&buf, &cap, configs);
    if (n < 0 && std::ferror(configs)) {
      return Status::IOError(std::string("cannot read: ") + std::strerror(errno)).At(configs_path);
    }
    if (n >= 0) ++configs_line;
    std::string_view line = n > 0 ? std::string_view(buf, static_cast<size_t>(n) - 1) : std::string_view();
    if (!live) {
      if (n >= 0) {
        return Status::Corruption("a config past the last of " + reader->path() +
                                  ": the two are written together and hold the same lines")
            .At(configs_path, configs_line);
      }
      return Status::OK();
    }
    if (n < 0) {
      return Status::Corruption("ends before the config of " + reader->path() + ":" + std::to_string(reader->line()) +
                                ": the two are written together and hold the same lines")
          .At(configs_path);
    }
    if (buf[n - 1] != '\n' || line != entry.config) {
      return Status::Corruption("differs from " + reader->path() + ":" + std::to_string(reader->line()) +
                                " (the configs there): the two are written together and hold the same lines")
          .At(configs_path, configs_line);
    }
    std::string_view api = std::string_view(entry.config).substr(0, entry.config.find('('));
    auto it = api_calls.find(api);
    if (it == api_calls.end()) it = api_calls.emplace(std::string(api), 0).first;
    it->second += entry.calls;
    return Status::OK();
  }
};

class Buffered {
 public:
  explicit Buffered(Sink* sink) : sink_(sink) {}
  std::string* text() { return &text_; }
  Status MaybeFlush() { return text_.size() >= (1u << 20) ? Flush() : Status::OK(); }
  Status Flush() {
    Status st = sink_->Write(text_);
    text_.clear();
    return st;
  }

 private:
  Sink* sink_;
  std::string text_;
};

}  // namespace

Status MergeSources(const std::vector<MergeInput>& inputs, Sink* configs_out, Sink* sources_out,
                    const ParseOptions& options, MergeResult* result) {
  std::vector<std::unique_ptr<Input>> in;
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> labels;
  size_t labelled = 0;
  for (const MergeInput& m : inputs) {
    auto input = std::make_unique<Input>();
    if (Status st = SourcesReader::Open(m.sources, &input->reader); !st.ok()) return st;
    if (Status st = OpenRegularFile(m.configs, &input->configs); !st.ok()) return st;
    input->configs_path = m.configs;
    for (const auto& [label, calls] : input->reader->labels()) {
      uint64_t& sum = labels[label];
      if (sum + calls < sum) {
        return Status::Corruption("the calls of '" + Shown(label) + "' add up past 2^64 - 1").At(m.sources);
      }
      sum += calls;
    }
    labelled += input->reader->labels().size();
    in.push_back(std::move(input));
  }
  const bool disjoint = labels.size() == labelled;  // no source in two inputs
  SourceCounts head(labels.begin(), labels.end());
  std::sort(head.begin(), head.end());
  Buffered configs(configs_out), sources(sources_out);
  AppendLabels(head, sources.text());

  // the inputs by their current config (then index: equal lines meet in input order)
  auto later = [&](size_t a, size_t b) {
    int c = in[a]->entry.config.compare(in[b]->entry.config);
    return c != 0 ? c > 0 : a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (size_t i = 0; i < in.size(); ++i) {
    if (Status st = in[i]->Advance(); !st.ok()) return st;
    if (in[i]->live) heap.push(i);
  }
  std::vector<size_t> group;
  SourceEntry merged;
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> counts;
  uint64_t distinct = 0;
  while (!heap.empty()) {
    group.clear();
    group.push_back(heap.top());
    heap.pop();
    while (!heap.empty() && in[heap.top()]->entry.config == in[group[0]]->entry.config) {
      group.push_back(heap.top());
      heap.pop();
    }
    const SourceEntry& first = in[group[0]]->entry;
    if (Status st = CheckConfigLine(first.config, options); !st.ok()) {
      // (its column is the config's, not the record line's: not said)
      return Status::Corruption(st.message()).At(in[group[0]]->reader->path(), in[group[0]]->reader->line());
    }
    if (group.size() == 1) {
      merged = first;
    } else {
      merged.config = first.config;
      merged.calls = 0;
      counts.clear();
      bool complete = true, at_most = !disjoint;
      uint64_t sum_sources = 0;
      for (size_t i : group) {
        const SourceEntry& e = in[i]->entry;
        if (merged.calls + e.calls < merged.calls) {
          return Status::Corruption("the calls of this config add up past 2^64 - 1")
              .At(in[i]->reader->path(), in[i]->reader->line());
        }
        merged.calls += e.calls;
        sum_sources = std::min<uint64_t>(sum_sources + std::min<uint64_t>(e.sources, head.size()), head.size());
        complete = complete && e.sources == e.top.size() && !e.at_most;
        at_most = at_most || e.at_most;
        for (const auto& [label, n] : e.top) counts[label] += n;
      }
      merged.top.assign(counts.begin(), counts.end());
      Rank(&merged.top);
      // no more sources than labels, however the inputs overlap
      merged.sources = complete ? merged.top.size() : std::max<uint64_t>(sum_sources, merged.top.size());
      merged.at_most = !complete && at_most;
      if (merged.top.size() > kMaxListed) merged.top.resize(kMaxListed);
    }
    if (distinct++ == 0) *sources.text() += "configs:\n";
    *configs.text() += merged.config;
    configs.text()->push_back('\n');
    AppendSourceEntry(merged, sources.text());
    for (size_t i : group) {
      if (Status st = in[i]->Advance(); !st.ok()) return st;
      if (in[i]->live) heap.push(i);
    }
    Status st = configs.MaybeFlush();
    if (st.ok()) st = sources.MaybeFlush();
    if (!st.ok()) return st;
  }
  if (distinct == 0) *sources.text() += "configs: []\n";
  Status st = configs.Flush();
  if (st.ok()) st = sources.Flush();
  if (!st.ok()) return st;
  result->configs = distinct;
  result->api_calls.clear();
  for (const auto& input : in) {
    result->api_calls.emplace_back(input->api_calls.begin(), input->api_calls.end());
  }
  return {};
}

}  // namespace api_tracer
