#include "core/api_table.h"

#include "core/yaml.h"

namespace api_tracer {

ApiId ApiTable::Intern(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  auto entry = std::make_unique<Entry>();
  entry->name = std::string(name);
  entry->yaml_header = "- api: ";
  yaml::AppendString(name, &entry->yaml_header);
  entry->yaml_header.push_back('\n');
  ApiId id = static_cast<ApiId>(entries_.size());
  entries_.push_back(std::move(entry));
  ids_.emplace(entries_.back()->name, id);
  return id;
}

const std::string& ApiTable::Name(ApiId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.at(id)->name;
}

const std::string& ApiTable::YamlHeader(ApiId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.at(id)->yaml_header;
}

}  // namespace api_tracer
