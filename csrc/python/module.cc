// api_tracer._C: the extension module. The per-call machinery lives in
// hooks.cc, convert.cc and session.cc; this file only assembles the module.
#include "python/bindings.h"
#include "python/code_hook.h"
#include "python/hooks.h"
#include "python/inplace.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "api_tracer's C++ engine: the hooks, the converter and the recorder.";
  api_tracer::python::InitHooks(m);
  api_tracer::python::InitInPlace(m);
  api_tracer::python::InitCodeHooks(m);
  api_tracer::python::InitErrorBindings(m);
  api_tracer::python::InitSessionBindings(m);
  api_tracer::python::InitConfigBindings(m);
  api_tracer::python::InitProfileBindings(m);
  api_tracer::python::InitCrashNote(m);
}
