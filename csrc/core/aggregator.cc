#include "core/aggregator.h"

#include <algorithm>
#include <limits>

#include "core/per_thread.h"
#include "core/value_path.h"
#include "core/yaml.h"

namespace api_tracer {
namespace {

// The paths of a call's profiled tensors (IsProfiledDtype; value_path.h),
// in the order a converter writes them (depth first, positional before
// keyword arguments).
void CollectProfilePaths(const Value& v, const std::string& path, bool floats, std::vector<std::string>* out) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kTensor:
      if (IsProfiledDtype(v.tensor().dtype, floats)) out->push_back(path);
      return;
    case K::kList:
    case K::kTuple:
      for (size_t i = 0; i < v.items().size(); ++i) {
        CollectProfilePaths(v.items()[i], ItemPath(path, i), floats, out);
      }
      return;
    case K::kDict:
      for (size_t i = 0; i + 1 < v.items().size(); i += 2) {
        std::string key;
        FormatValue(v.items()[i], {}, &key);
        CollectProfilePaths(v.items()[i], KeyPath(path, i / 2), floats, out);
        CollectProfilePaths(v.items()[i + 1], ValuePath(path, key), floats, out);
      }
      return;
    case K::kSlice:
    case K::kObject: {
      size_t npos = v.kind() == K::kObject ? v.positional_count() : v.items().size();
      for (size_t i = 0; i < npos; ++i) {
        CollectProfilePaths(v.items()[i], CallArgumentPath(path, i), floats, out);
      }
      for (size_t i = 0; i < v.keywords().size(); ++i) {
        CollectProfilePaths(v.items()[npos + i], CallKeywordPath(path, v.keywords()[i]), floats, out);
      }
      return;
    }
    default: return;
  }
}

}  // namespace

const Aggregator::Config* Aggregator::Record(std::string_view key, std::span<const ValueProfile> profiles,
                                             Status* status) {
  LocalCache& cache = local_caches_.Local();
  Config* config;
  if (auto it = cache.find(key); it != cache.end()) {
    config = it->second;
  } else {
    auto [stored_key, interned] = Intern(key, profiles.size(), status);
    if (!interned) return nullptr;
    cache.emplace(stored_key, interned);
    config = interned;
  }
  config->count.fetch_add(1, std::memory_order_relaxed);
  if (!config->profiles.empty() && profiles.size() == config->profiles.size()) {
    std::lock_guard<std::mutex> lock(config->profiles_mu);
    for (size_t i = 0; i < profiles.size(); ++i) config->profiles[i].Merge(profiles[i]);
  }
  return config;
}

std::pair<std::string_view, Aggregator::Config*> Aggregator::Intern(std::string_view key, size_t nprofiles,
                                                                    Status* status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = configs_.find(key); it != configs_.end()) return {it->first, it->second.get()};
  // First sight: the key is checked (a corrupt one is refused now), and
  // decoded when the config is first formatted (Render).
  ApiId api;
  Status st = CheckCall(key, &api);
  if (!st.ok()) {
    *status = st;
    return {};
  }
  auto config = std::make_unique<Config>();
  config->owner = this;
  config->api = api;
  config->yaml_header = &apis_->YamlHeader(api);
  // (a key's profiled arguments are fixed by its dtypes: every call of it has as many)
  if (value_profiles_) config->profiles.resize(nprofiles);
  if (api_seen_.insert(api).second) api_order_.push_back(api);
  Config* result = config.get();
  std::string_view stored = configs_.emplace(std::string(key), std::move(config)).first->first;
  result->key = stored;
  return {stored, result};
}

const Aggregator::Config::Text& Aggregator::Config::Rendered() const {
  std::call_once(once, [this] { owner->Render(*this); });
  return text;
}

void Aggregator::Render(const Config& config) const {
  ApiId api;
  Call call;
  DecodeCall(config.key, &api, &call);  // (checked at its first sight)
  call.api = apis_->Name(config.api);
  config.text.line = FormatCall(call, format_);
  config.text.yaml_body = yaml::RecordBody(call);
  if (value_profiles_) {
    std::vector<std::string>& paths = config.text.profile_paths;
    for (size_t i = 0; i < call.args.size(); ++i) {
      CollectProfilePaths(call.args[i], ArgumentPath(i), float_profiles_, &paths);
    }
    for (const auto& [name, value] : call.kwargs)
      CollectProfilePaths(value, KeywordPath(name), float_profiles_, &paths);
  }
}

bool Aggregator::WantsStack(ApiId api) const {
  std::lock_guard<std::mutex> lock(stacks_mu_);
  auto it = stacks_.find(api);
  return it == stacks_.end() || it->second.stacks.size() < kMaxStacks;
}

void Aggregator::AddStack(ApiId api, uint64_t hash, const std::function<Stack()>& make) {
  auto wanted = [&](const StackSet& set) {
    return set.stacks.size() < kMaxStacks && std::find(set.hashes.begin(), set.hashes.end(), hash) == set.hashes.end();
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
  CountsAndLinesResult result;
  std::vector<const Config*> configs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unordered_map<ApiId, uint64_t> counts;
    configs.reserve(configs_.size());
    result.config_counts.reserve(configs_.size());
    for (const auto& [key, config] : configs_) {
      // read once: the API's sum and the config's own count are the same number
      uint64_t count = config->count.load(std::memory_order_relaxed);
      counts[config->api] += count;
      // a config made but not counted yet (Record counts it after the
      // lock): in the next snapshot, with its first call
      if (count == 0) continue;
      configs.push_back(config.get());
      result.config_counts.push_back(count);
    }
    result.api_counts.reserve(api_order_.size());
    for (ApiId api : api_order_) result.api_counts.push_back({api, counts[api]});
  }
  // formatted outside the lock: new configs are not held up meanwhile
  result.config_lines.reserve(configs.size());
  for (const Config* config : configs) result.config_lines.push_back(config->line());
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

std::vector<std::pair<std::string, Aggregator::PathProfiles>> Aggregator::ValueProfiles() const {
  std::vector<const Config*> configs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, config] : configs_) {
      if (!config->profiles.empty()) configs.push_back(config.get());
    }
  }
  std::vector<std::pair<std::string, PathProfiles>> result;
  for (const Config* config : configs) {
    const std::vector<std::string>& paths = config->profile_paths();
    PathProfiles held;
    std::lock_guard<std::mutex> profiles_lock(config->profiles_mu);
    for (size_t i = 0; i < paths.size() && i < config->profiles.size(); ++i) {
      if (config->profiles[i].valid) held.emplace_back(paths[i], config->profiles[i]);
    }
    if (!held.empty()) result.emplace_back(config->line(), std::move(held));
  }
  return result;
}

}  // namespace api_tracer
