// The topics of the extension module api_tracer._C, each adding its
// functions to the module; module.cc calls them in turn.
#pragma once

#include <pybind11/pybind11.h>

#include "core/status.h"

namespace api_tracer::python {

// Raises the Python exception for a failed Status (python/errors.cc, the
// one place core errors become exceptions): an error located in a file
// (Status::At) -> InputError(path, message, line, column); ParseError ->
// ConfigSyntaxError(message, column); IOError -> OSError; InvalidArgument
// -> ValueError; else RuntimeError. The two classes are
// api_tracer.errors', registered by set_error_types.
void RaiseIfError(const Status& st);

void InitErrorBindings(pybind11::module_& m);    // set_error_types
void InitSessionBindings(pybind11::module_& m);  // start, stop, record, ...
void InitConfigBindings(pybind11::module_& m);   // parse and format config lines
void InitProfileBindings(pybind11::module_& m);  // the layer profiler
void InitCrashNote(pybind11::module_& m);        // replay's note on a fatal signal

}  // namespace api_tracer::python
