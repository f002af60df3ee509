#include "core/aggregator.h"

#include <algorithm>
#include <limits>
#include <map>

#include "core/per_thread.h"
#include "core/yaml.h"

namespace api_tracer {
namespace {

// The paths of a call's integer and bool tensors, in the order a converter
// writes them (depth first, positional before keyword arguments).
void CollectRangePaths(const Value& v, const std::string& path, std::vector<std::string>* out) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kTensor:
      if (IsIntegralDtype(v.tensor().dtype)) out->push_back(path);
      return;
    case K::kList:
    case K::kTuple:
      for (size_t i = 0; i < v.items().size(); ++i) {
        CollectRangePaths(v.items()[i], path + "[" + std::to_string(i) + "]", out);
      }
      return;
    case K::kDict:
      for (size_t i = 0; i + 1 < v.items().size(); i += 2) {
        std::string key;
        FormatValue(v.items()[i], {}, &key);
        CollectRangePaths(v.items()[i], path + ".keys[" + std::to_string(i / 2) + "]", out);
        CollectRangePaths(v.items()[i + 1], path + "[" + key + "]", out);
      }
      return;
    case K::kSlice:
    case K::kObject: {
      size_t npos = v.kind() == K::kObject ? v.positional_count() : v.items().size();
      for (size_t i = 0; i < npos; ++i) {
        CollectRangePaths(v.items()[i], path + ".args[" + std::to_string(i) + "]", out);
      }
      for (size_t i = 0; i < v.keywords().size(); ++i) {
        CollectRangePaths(v.items()[npos + i], path + "." + v.keywords()[i], out);
      }
      return;
    }
    default:
      return;
  }
}

void AtomicMin(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void AtomicMax(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

const Aggregator::Config* Aggregator::Record(std::string_view key, std::span<const ValueRange> ranges,
                                             Status* status) {
  LocalCache& cache = local_caches_.Local();
  Config* config;
  if (auto it = cache.find(key); it != cache.end()) {
    config = it->second;
  } else {
    auto [stored_key, interned] = Intern(key, status);
    if (!interned) return nullptr;
    cache.emplace(stored_key, interned);
    config = interned;
  }
  config->count.fetch_add(1, std::memory_order_relaxed);
  if (config->range_min && ranges.size() == config->range_paths.size()) {
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (!ranges[i].valid) continue;
      AtomicMin(config->range_min[i], ranges[i].min);
      AtomicMax(config->range_max[i], ranges[i].max);
    }
  }
  return config;
}

std::pair<std::string_view, Aggregator::Config*> Aggregator::Intern(std::string_view key, Status* status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = configs_.find(key); it != configs_.end()) return {it->first, it->second.get()};
  // First sight. Decoding and formatting under the lock costs each distinct
  // config once, and spares a race between two threads meeting it together.
  ApiId api;
  Call call;
  Status st = DecodeCall(key, &api, &call);
  if (!st.ok()) {
    *status = st;
    return {};
  }
  call.api = apis_->Name(api);
  auto config = std::make_unique<Config>();
  config->api = api;
  config->line = FormatCall(call, format_);
  config->yaml_body = yaml::RecordBody(call);
  config->yaml_header = &apis_->YamlHeader(api);
  if (value_ranges_) {
    for (size_t i = 0; i < call.args.size(); ++i) {
      CollectRangePaths(call.args[i], "args[" + std::to_string(i) + "]", &config->range_paths);
    }
    for (const auto& [name, value] : call.kwargs) {
      CollectRangePaths(value, "kwargs." + name, &config->range_paths);
    }
    size_t n = config->range_paths.size();
    if (n) {
      config->range_min = std::make_unique<std::atomic<int64_t>[]>(n);
      config->range_max = std::make_unique<std::atomic<int64_t>[]>(n);
      for (size_t i = 0; i < n; ++i) {
        config->range_min[i] = std::numeric_limits<int64_t>::max();
        config->range_max[i] = std::numeric_limits<int64_t>::min();
      }
    }
  }
  if (api_seen_.insert(api).second) api_order_.push_back(api);
  Config* result = config.get();
  return {configs_.emplace(std::string(key), std::move(config)).first->first, result};
}

bool Aggregator::WantsStack(ApiId api) const {
  std::lock_guard<std::mutex> lock(stacks_mu_);
  auto it = stacks_.find(api);
  return it == stacks_.end() || it->second.stacks.size() < kMaxStacks;
}

void Aggregator::AddStack(ApiId api, uint64_t hash, const std::function<Stack()>& make) {
  auto wanted = [&](const StackSet& set) {
    return set.stacks.size() < kMaxStacks &&
           std::find(set.hashes.begin(), set.hashes.end(), hash) == set.hashes.end();
  };
  {
    std::lock_guard<std::mutex> lock(stacks_mu_);
    if (!wanted(stacks_[api])) return;
  }
  Stack stack = make();
  std::lock_guard<std::mutex> lock(stacks_mu_);
  StackSet& set = stacks_[api];
  if (!wanted(set)) return;  // another thread added it, or filled the set, meanwhile
  set.hashes.push_back(hash);
  set.stacks.push_back(std::move(stack));
}

Aggregator::CountsAndLinesResult Aggregator::CountsAndLines() const {
  std::lock_guard<std::mutex> lock(mu_);
  CountsAndLinesResult result;
  std::unordered_map<ApiId, uint64_t> counts;
  result.config_lines.reserve(configs_.size());
  for (const auto& [key, config] : configs_) {
    counts[config->api] += config->count.load(std::memory_order_relaxed);
    result.config_lines.push_back(config->line);
  }
  result.api_counts.reserve(api_order_.size());
  for (ApiId api : api_order_) result.api_counts.push_back({api, counts[api]});
  return result;
}

std::vector<std::pair<ApiId, std::vector<Stack>>> Aggregator::Stacks() const {
  std::lock_guard<std::mutex> lock(stacks_mu_);
  std::vector<std::pair<ApiId, std::vector<Stack>>> result;
  for (const auto& [api, set] : stacks_) {
    if (!set.stacks.empty()) result.emplace_back(api, set.stacks);
  }
  return result;
}

std::vector<std::pair<std::string, std::vector<Aggregator::Range>>> Aggregator::ValueRanges() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::map<std::string, std::pair<int64_t, int64_t>>> merged;
  for (const auto& [key, config] : configs_) {
    for (size_t i = 0; i < config->range_paths.size(); ++i) {
      int64_t lo = config->range_min[i].load(), hi = config->range_max[i].load();
      if (lo > hi) continue;  // no values seen (empty tensors)
      auto [it, fresh] = merged[config->line].try_emplace(config->range_paths[i], lo, hi);
      if (!fresh) {
        it->second.first = std::min(it->second.first, lo);
        it->second.second = std::max(it->second.second, hi);
      }
    }
  }
  std::vector<std::pair<std::string, std::vector<Range>>> result;
  for (auto& [line, paths] : merged) {
    std::vector<Range> ranges;
    for (auto& [path, mm] : paths) ranges.push_back({path, mm.first, mm.second});
    result.emplace_back(line, std::move(ranges));
  }
  return result;
}

}  // namespace api_tracer
