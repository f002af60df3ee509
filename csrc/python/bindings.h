// The topics of the extension module api_tracer._C, each adding its
// functions to the module; module.cc calls them in turn.
#pragma once

#include <pybind11/pybind11.h>

#include "core/status.h"

namespace api_tracer::python {

// Raises the Python exception for a failed Status (the one place core
// errors become exceptions): IOError -> OSError, InvalidArgument ->
// ValueError, FailedPrecondition -> RuntimeError, ParseError ->
// ValueError(message, column), else RuntimeError.
void RaiseIfError(const Status& st);

void InitSessionBindings(pybind11::module_& m);  // start, stop, record, ...
void InitConfigBindings(pybind11::module_& m);   // parse and format config lines
void InitProfileBindings(pybind11::module_& m);  // the layer profiler
void InitCrashNote(pybind11::module_& m);        // replay's note on a fatal signal

}  // namespace api_tracer::python
