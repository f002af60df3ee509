#include "python/stack.h"

#include <frameobject.h>

namespace api_tracer::python {
namespace {

std::string Str(PyObject* s) {
  Py_ssize_t n;
  const char* p = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &n) : nullptr;
  if (!p) {
    PyErr_Clear();
    return "?";
  }
  return std::string(p, n);
}

}  // namespace

const StackCapture::CodeInfo& StackCapture::Info(const pybind11::object& code_object) {
  auto it = codes_.find(code_object);
  if (it != codes_.end()) return it->second;
  auto* code = reinterpret_cast<PyCodeObject*>(code_object.ptr());
  CodeInfo info;
  info.filename = Str(code->co_filename);
  info.name = Str(code->co_name);
  info.qualname = Str(code->co_qualname);
  size_t slash = info.filename.find_last_of('/');
  info.basename = slash == std::string::npos ? info.filename : info.filename.substr(slash + 1);
  info.skip = info.filename.rfind("<frozen ", 0) == 0;
  for (const auto& prefix : skip_prefixes_) {
    info.skip = info.skip || info.filename.rfind(prefix, 0) == 0;
  }
  return codes_.emplace(code_object, std::move(info)).first->second;
}

std::string StackCapture::FormatFrame(const Frame& f) const {
  switch (format_) {
    case Format::kShort: return f.code->basename + ":" + std::to_string(f.line) + " in " + f.code->qualname;
    case Format::kFull:
      return "File \"" + f.code->filename + "\", line " + std::to_string(f.line) + ", in " + f.code->name;
    case Format::kApi: return f.module + "." + f.code->qualname;
  }
  return {};
}

void StackCapture::Offer(Recorder* recorder, int level, ApiId api) {
  if (!recorder->WantsStack(level, api)) return;
  std::vector<Frame> frames;  // innermost first while walking
  uint64_t hash = 1469598103934665603ull;
  pybind11::object frame_object = Steal(PyThreadState_GetFrame(PyThreadState_Get()));
  while (frame_object && static_cast<int>(frames.size()) < kMaxFrames) {
    auto* frame = reinterpret_cast<PyFrameObject*>(frame_object.ptr());
    pybind11::object code = Steal(PyFrame_GetCode(frame));
    const CodeInfo& info = Info(code);
    if (!info.skip) {
      Frame f{&info, PyFrame_GetLineNumber(frame), {}};
      if (format_ == Format::kApi) {
        pybind11::object globals = Steal(PyFrame_GetGlobals(frame));
        PyObject* name = globals ? PyDict_GetItemString(globals.ptr(), "__name__") : nullptr;
        f.module = name ? Str(name) : "?";
      }
      hash = (hash ^ reinterpret_cast<uintptr_t>(code.ptr())) * 1099511628211ull;
      hash = (hash ^ static_cast<uint64_t>(f.line)) * 1099511628211ull;
      frames.push_back(std::move(f));
    }
    frame_object = Steal(PyFrame_GetBack(frame));
  }
  recorder->AddStack(level, api, hash, [&] {
    Stack stack;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) stack.push_back(FormatFrame(*it));
    return stack;
  });
}

}  // namespace api_tracer::python
