// What the three files of api_config_sources.yaml's code share
// (sources.cc: the record format; sources_reader.cc: reading a file;
// sources_merge.cc: merging many): not part of the core's interface.
#pragma once

#include <string>
#include <string_view>

namespace api_tracer::sources_internal {

// `s` for a message: at most `max` bytes, control characters as '?'.
std::string Shown(std::string_view s, size_t max = 60);
// The 0-based offset of the first byte of `s` that is not UTF-8, or npos.
size_t BadUtf8(std::string_view s);

}  // namespace api_tracer::sources_internal
