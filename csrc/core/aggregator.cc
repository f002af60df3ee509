#include "core/aggregator.h"

#include <algorithm>

#include "core/yaml.h"

namespace api_tracer {

const Aggregator::Config* Aggregator::Record(std::string_view key, Status* status) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = configs_.find(key);
  if (it != configs_.end()) {
    it->second->count.fetch_add(1, std::memory_order_relaxed);
    return it->second.get();
  }
  // First sight. Decoding and formatting under the lock costs each distinct
  // config once, and spares a race between two threads meeting it together.
  ApiId api;
  Call call;
  Status st = DecodeCall(key, &api, &call);
  if (!st.ok()) {
    *status = st;
    return nullptr;
  }
  call.api = apis_->Name(api);
  auto config = std::make_unique<Config>();
  config->api = api;
  config->line = FormatCall(call, format_);
  config->yaml_body = yaml::RecordBody(call);
  config->yaml_header = &apis_->YamlHeader(api);
  config->count.store(1, std::memory_order_relaxed);
  if (api_seen_.insert(api).second) api_order_.push_back(api);
  const Config* result = config.get();
  configs_.emplace(std::string(key), std::move(config));
  return result;
}

bool Aggregator::WantsStack(ApiId api) const {
  std::lock_guard<std::mutex> lock(stacks_mu_);
  auto it = stacks_.find(api);
  return it == stacks_.end() || it->second.stacks.size() < kMaxStacks;
}

void Aggregator::AddStack(ApiId api, uint64_t hash, const std::function<Stack()>& make) {
  std::lock_guard<std::mutex> lock(stacks_mu_);
  StackSet& set = stacks_[api];
  if (set.stacks.size() >= kMaxStacks ||
      std::find(set.hashes.begin(), set.hashes.end(), hash) != set.hashes.end()) {
    return;
  }
  set.hashes.push_back(hash);
  set.stacks.push_back(make());
}

std::vector<Aggregator::ApiCount> Aggregator::ApiCounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_map<ApiId, uint64_t> counts;
  for (const auto& [key, config] : configs_) {
    counts[config->api] += config->count.load(std::memory_order_relaxed);
  }
  std::vector<ApiCount> result;
  result.reserve(api_order_.size());
  for (ApiId api : api_order_) result.push_back({api, counts[api]});
  return result;
}

std::vector<std::string> Aggregator::ConfigLines() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> lines;
  lines.reserve(configs_.size());
  for (const auto& [key, config] : configs_) lines.push_back(config->line);
  return lines;
}

std::vector<std::pair<ApiId, std::vector<Stack>>> Aggregator::Stacks() const {
  std::lock_guard<std::mutex> lock(stacks_mu_);
  std::vector<std::pair<ApiId, std::vector<Stack>>> result;
  for (const auto& [api, set] : stacks_) {
    if (!set.stacks.empty()) result.emplace_back(api, set.stacks);
  }
  return result;
}

}  // namespace api_tracer
