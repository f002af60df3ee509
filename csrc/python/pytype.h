// The C types of the extension's own that a hot path calls through
// vectorcall (ApiWrapper, CodeHook, CodeExit, ScopedForward), filled and
// added alike: the fields every one of them sets here, the rest by its file.
// Thread-safety: at module initialization, with the GIL held.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

namespace api_tracer::python {

// Sets `type`'s name, size, doc and vectorcall offset, its call through
// vectorcall, and its flags (with garbage collection where `gc`).
inline void InitVectorcallType(PyTypeObject* type, const char* name, Py_ssize_t basicsize, Py_ssize_t vectorcall_offset,
                               const char* doc, bool gc) {
  type->tp_name = name;
  type->tp_basicsize = basicsize;
  type->tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | (gc ? Py_TPFLAGS_HAVE_GC : 0);
  type->tp_doc = doc;
  type->tp_call = PyVectorcall_Call;
  type->tp_vectorcall_offset = vectorcall_offset;
}

// Readies `type` and adds it to `m` as `name`; throws the error where either fails.
inline void AddType(pybind11::module_& m, const char* name, PyTypeObject* type) {
  if (PyType_Ready(type) < 0 || PyModule_AddObjectRef(m.ptr(), name, reinterpret_cast<PyObject*>(type)) < 0) {
    throw pybind11::error_already_set();
  }
}

}  // namespace api_tracer::python
