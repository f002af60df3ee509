#include "core/glob.h"

namespace api_tracer {

bool GlobMatch(std::string_view p, std::string_view s) {
  // Iterative matching with single-star backtracking: linear in practice.
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool ApiFilter::Allows(std::string_view name) const {
  bool included = include_.empty();
  for (const auto& p : include_) {
    if (GlobMatch(p, name)) {
      included = true;
      break;
    }
  }
  if (!included) return false;
  for (const auto& p : exclude_) {
    if (GlobMatch(p, name)) return false;
  }
  return true;
}

}  // namespace api_tracer
