// Level 0 in place for Python functions (inplace.h says how): `CodeHook` and
// `CodeExit`, the C++ callables a function's instrumented code
// (api_tracer/trace/instrument.py) calls on its way in and out.
// Thread-safety: the GIL must be held.
#pragma once

#include <pybind11/pybind11.h>

namespace api_tracer::python {

// Adds the types CodeHook and CodeExit to `m`.
void InitCodeHooks(pybind11::module_& m);

}  // namespace api_tracer::python
