// StringHash: for unordered containers keyed by std::string that are looked
// up by std::string_view without building a string (with std::equal_to<>).
#pragma once

#include <functional>
#include <string_view>

namespace api_tracer {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

}  // namespace api_tracer
