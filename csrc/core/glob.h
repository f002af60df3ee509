// API-name patterns: shell-style globs ("torch.Tensor.*.__get__") in which
// '*' matches any run of characters (dots included) and '?' one character.
// ApiFilter decides once per API whether it is recorded: included when it
// matches an include pattern and no exclude pattern.
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace api_tracer {

bool GlobMatch(std::string_view pattern, std::string_view name);

class ApiFilter {
 public:
  ApiFilter() = default;
  ApiFilter(std::vector<std::string> include, std::vector<std::string> exclude)
      : include_(std::move(include)), exclude_(std::move(exclude)) {}

  bool Allows(std::string_view name) const;

 private:
  std::vector<std::string> include_;  // empty: everything
  std::vector<std::string> exclude_;
};

}  // namespace api_tracer
