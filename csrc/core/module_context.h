// ModuleContext: the nn.Module path the calling thread is running, as the
// tracer's module hooks (APITracer(tag_modules=...)) report it; every level
// reads it when it records a call (RecordExtras::module).
//
// Paths are interned by Set(), for one tracing session; a thread's stack
// left by an earlier session is ignored (each entry carries the session's
// generation). Thread-safety: Push/Pop/Current touch only the calling
// thread's stack; Set and Clear are called with no call being recorded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace api_tracer {

class ModuleContext {
 public:
  // Replaces the interned paths (ids are indexes into `paths`).
  static void Set(std::vector<std::string> paths);
  static void Clear();
  static void Push(int id);
  static void Pop();
  // The innermost module path of this thread, or "" outside every module.
  static std::string_view Current();
};

}  // namespace api_tracer
