#include "core/value_path.h"

namespace api_tracer {

std::string ArgumentPath(size_t i) { return "args[" + std::to_string(i) + "]"; }

std::string KeywordPath(std::string_view name) { return "kwargs." + std::string(name); }

std::string ItemPath(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string KeyPath(const std::string& path, size_t i) { return path + ".keys[" + std::to_string(i) + "]"; }

std::string ValuePath(const std::string& path, std::string_view key) { return path + "[" + std::string(key) + "]"; }

std::string CallArgumentPath(const std::string& path, size_t i) { return path + ".args[" + std::to_string(i) + "]"; }

std::string CallKeywordPath(const std::string& path, std::string_view name) { return path + "." + std::string(name); }

}  // namespace api_tracer
