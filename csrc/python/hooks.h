// The C++ callables behind levels 0-2 (and user hooks built on them):
//
//   ApiWrapper                 replaces an API by setattr (level 0): records
//                              the call, then calls the original. Behaves as
//                              the original does when looked up on a class
//                              (binds self like a function or method
//                              descriptor), forwards unknown attributes to it,
//                              and exposes it as __wrapped__.
//   torch_function_handler     a TorchFunctionMode's __torch_function__
//                              (level 1), bound to the mode with MethodType.
//   torch_dispatch_handler     a TorchDispatchMode's __torch_dispatch__
//                              (level 2), bound the same way.
//
// Each records only while its session is active and the thread is not
// running the tracer's own code; a wrapper records only the outermost call
// of its level on a thread. With merged output, a mode's call directly inside
// a wrapper's call of the same callable is the same call, recorded once.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

namespace api_tracer::python {

// Adds ApiWrapper and the two handlers to `m`.
void InitHooks(pybind11::module_& m);

// tp_getattro of a callable standing in for `wrapped` (__name__, __doc__,
// __module__, ...): its own attributes, else the wrapped callable's.
inline PyObject* GetAttrOrWrapped(PyObject* self, PyObject* name, PyObject* wrapped) {
  PyObject* r = PyObject_GenericGetAttr(self, name);
  if (r || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  PyErr_Clear();
  return PyObject_GetAttr(wrapped, name);
}

}  // namespace api_tracer::python
