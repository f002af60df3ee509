// Owning references to Python objects for code that calls the C API.
//
// A reference the C API returns is wrapped at once in a pybind11::object:
// Steal takes over a new reference, Borrow adds one to a borrowed reference
// that must outlive its owner. Either is dropped when the object goes, on
// every path. (In a release build a pybind11::object costs what
// Py_XINCREF/Py_XDECREF by hand cost, and no more.)
//
// ObjectMap keys a map by the identity of Python objects and holds a
// reference to each key, so that no other object can take a key's address
// while it is in the map. It is looked up with a bare pointer, without
// touching a reference count.
//
// The CPython object structs (PyTypeObject, PyCodeObject, ...) are taken
// where a PyObject* is, as the C API's own casts do.
// Thread-safety: the GIL must be held.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <functional>
#include <unordered_map>

namespace api_tracer::python {

template <typename T>
PyObject* AsObject(T* p) {
  return reinterpret_cast<PyObject*>(p);
}
inline PyObject* AsObject(const pybind11::handle& h) { return h.ptr(); }

template <typename T>
pybind11::object Steal(T* new_reference) {
  return pybind11::reinterpret_steal<pybind11::object>(AsObject(new_reference));
}
template <typename T>
pybind11::object Borrow(T* borrowed) {
  return pybind11::reinterpret_borrow<pybind11::object>(AsObject(borrowed));
}

// Hash and equality by identity, of owned keys and bare pointers alike.
struct ByIdentity {
  using is_transparent = void;
  template <typename A>
  size_t operator()(const A& a) const noexcept {
    return std::hash<PyObject*>()(AsObject(a));
  }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const noexcept {
    return AsObject(a) == AsObject(b);
  }
};

template <typename T>
using ObjectMap = std::unordered_map<pybind11::object, T, ByIdentity, ByIdentity>;

}  // namespace api_tracer::python
