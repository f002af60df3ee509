// ApiTable: interns API names ("torch.add") into dense ids.
//
// One table serves a whole tracing session, so that a call's key (key.h)
// means the same in every output set. Names are interned on the cold path
// (the first time a hook meets a callable); ids are then carried around.
// Thread-safety: all methods may be called concurrently. References returned
// stay valid for the table's lifetime.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/key.h"

namespace api_tracer {

class ApiTable {
 public:
  ApiId Intern(std::string_view name);
  const std::string& Name(ApiId id) const;
  // "- api: NAME\n", the first line of this API's api_trace.yaml records.
  const std::string& YamlHeader(ApiId id) const;

 private:
  struct Entry {
    std::string name;
    std::string yaml_header;
  };
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::unordered_map<std::string_view, ApiId> ids_;  // keys: the entries' names
};

}  // namespace api_tracer
