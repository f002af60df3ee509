// A value's path inside a call: the name of its value profile in
// api_value_ranges.yaml, and of the argument a replay or a fuzzer's
// mutation speaks of. docs/format.md, "Value paths", is the grammar:
//
//   args[0]  kwargs.NAME          a call's arguments
//   [I]                           an item of a list or tuple
//   .keys[I]  [KEY]               a dict's I-th key, and the value under KEY
//                                 (KEY as a config line writes it)
//   .args[I]  .NAME               an object's (or a slice's) argument I, and
//                                 its keyword argument NAME
//
// Python walks the same paths (api_tracer/values.py: children, walk);
// tests/formats/test_value_paths.py holds the two together.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace api_tracer {

std::string ArgumentPath(size_t i);
std::string KeywordPath(std::string_view name);
std::string ItemPath(const std::string& path, size_t i);
std::string KeyPath(const std::string& path, size_t i);
// `key` as the config line writes it (FormatValue).
std::string ValuePath(const std::string& path, std::string_view key);
std::string CallArgumentPath(const std::string& path, size_t i);
std::string CallKeywordPath(const std::string& path, std::string_view name);

}  // namespace api_tracer
