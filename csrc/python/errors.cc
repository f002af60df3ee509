// Errors across the boundary: a core Status becomes the Python exception of
// its kind here, and nowhere else. api_tracer/errors.py defines the
// classes; api_tracer/__init__.py registers them (set_error_types) before
// anything is parsed or read.
#include "python/bindings.h"

namespace api_tracer::python {
namespace {

struct ErrorTypes {
  pybind11::object config_syntax_error, input_error;
};
ErrorTypes& Types() {
  static ErrorTypes* types = new ErrorTypes();  // lives as long as the module
  return *types;
}

}  // namespace

void RaiseIfError(const Status& st) {
  if (st.ok()) return;
  const ErrorTypes& types = Types();
  if (!st.path().empty() && types.input_error) {  // located in a file: bad input, named
    pybind11::object line = pybind11::none(), column = pybind11::none();
    if (st.line()) line = pybind11::int_(st.line());
    if (st.column()) column = pybind11::int_(st.column());
    PyErr_SetObject(types.input_error.ptr(), pybind11::make_tuple(st.path(), st.message(), line, column).ptr());
    throw pybind11::error_already_set();
  }
  switch (st.code()) {
    case Status::Code::kParseError:
      if (types.config_syntax_error) {
        PyErr_SetObject(types.config_syntax_error.ptr(), pybind11::make_tuple(st.message(), st.column()).ptr());
      } else {
        PyErr_SetString(PyExc_ValueError, st.message().c_str());
      }
      break;
    case Status::Code::kIOError: PyErr_SetString(PyExc_OSError, st.message().c_str()); break;
    case Status::Code::kInvalidArgument: PyErr_SetString(PyExc_ValueError, st.message().c_str()); break;
    default:  // kFailedPrecondition
      PyErr_SetString(PyExc_RuntimeError, st.message().c_str());
  }
  throw pybind11::error_already_set();
}

void InitErrorBindings(pybind11::module_& m) {
  m.def(
      "set_error_types",
      [](pybind11::object config_syntax_error, pybind11::object input_error) {
        Types() = {std::move(config_syntax_error), std::move(input_error)};
      },
      pybind11::arg("config_syntax_error"), pybind11::arg("input_error"),
      "The Python classes core errors are raised as: a config line that does not parse, "
      "ConfigSyntaxError(message, column); a file not as the tracer writes it, InputError(path, message, line, "
      "column). OSError, ValueError and RuntimeError for the rest (python/errors.cc).");
}

}  // namespace api_tracer::python
