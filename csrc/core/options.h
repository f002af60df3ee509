// TraceOptions: every option of one tracing session, in the one struct that
// the recorder, the native observer and the Python session read.
//
// The options a C++ program sets (api_tracer::Options, the public API) are
// its base, with their defaults; the fields below are what the Python front
// end adds. The fields take the names of api_tracer.options.TracerOptions,
// which fills this struct in one call (_C.TraceOptions) and takes the
// defaults of these fields from it: a field is defined here once.
#pragma once

#include <vector>

#include "api_tracer/options.h"
#include "core/format.h"

namespace api_tracer {

// The levels the project defines. A TracingHook of the user's takes any
// number up to kMaxLevel.
enum Level : int {
  kSetattrLevel = 0,        // SetattrHook: Python APIs replaced by wrappers
  kTorchFunctionLevel = 1,  // TorchFunctionHook: a TorchFunctionMode
  kTorchDispatchLevel = 2,  // TorchDispatchHook: a TorchDispatchMode
  kNativeLevel = 3,         // NativeHook: the at::RecordFunction observer
  kMaxLevel = 63,
};

// How api_stacks.yaml writes a frame (python/stack.h).
enum class StackFormat { kShort, kFull, kApi };

struct TraceOptions : Options {
  std::vector<int> levels = {kSetattrLevel};  // each in [0, kMaxLevel]
  bool merge_output = false;                  // one file set for all levels, else one per level
  bool record_stack = false;                  // write api_stacks.yaml
  StackFormat stack_format = StackFormat::kShort;

  FormatOptions format() const { return {show_device, show_requires_grad}; }
  // Whether floating tensor arguments get value profiles (IsProfiledDtype).
  bool float_profiles() const { return value_ranges && float_ranges; }
};

}  // namespace api_tracer
