// api_tracer._C: the extension module. The per-call machinery lives in
// hooks.cc, convert.cc and session.cc; this file only assembles the module.
#include "python/bindings.h"
#include "python/hooks.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "api_tracer's C++ engine: the hooks, the converter and the recorder.";
  if (!api_tracer::py::InitHooks(m.ptr())) throw py::error_already_set();
  api_tracer::py::InitSessionBindings(m);
  api_tracer::py::InitConfigBindings(m);
  api_tracer::py::InitProfileBindings(m);
  api_tracer::py::InitCrashNote(m);
}
