// StackCapture: the Python call stack of a recorded call, for api_stacks.yaml.
//
// The walk identifies a stack by its (code object, line) pairs and only
// formats frames for a stack the output set has not seen yet and has room
// for (Aggregator::kMaxStacks per API); once an API has its stacks, a call
// costs one lookup. Frames of the skipped files (the tracer's own package,
// torch's package, Python's frozen modules) are left out: a stack shows the
// program's own frames, outermost first.
//
// Formats: "short"  file.py:12 in Net.forward
//          "full"   File "/abs/file.py", line 12, in forward
//          "api"    mypkg.model.Net.forward
// Thread-safety: the GIL must be held.
#pragma once

#include <string>
#include <vector>

#include "core/recorder.h"
#include "python/objects.h"

namespace api_tracer::python {

class StackCapture {
 public:
  using Format = StackFormat;
  static constexpr int kMaxFrames = 32;

  StackCapture(Format format, std::vector<std::string> skip_prefixes)
      : format_(format), skip_prefixes_(std::move(skip_prefixes)) {}
  StackCapture(const StackCapture&) = delete;
  StackCapture& operator=(const StackCapture&) = delete;

  // Offers the current thread's stack as a stack of `api` at `level`.
  void Offer(Recorder* recorder, int level, ApiId api);

 private:
  struct CodeInfo {
    bool skip;
    std::string filename;
    std::string basename;
    std::string name;
    std::string qualname;
  };
  struct Frame {
    const CodeInfo* code;
    int line;
    std::string module;  // kApi only
  };

  const CodeInfo& Info(const pybind11::object& code);
  std::string FormatFrame(const Frame& f) const;

  const Format format_;
  const std::vector<std::string> skip_prefixes_;
  ObjectMap<CodeInfo> codes_;  // by code object
};

}  // namespace api_tracer::python
