// Level 0 in place: an API is made to record its calls without another
// object taking its place, so that everything that holds, hashes, compares
// or pickles it (torch's caches of its own functions, `activation is
// F.relu`, pickle's lookup by qualified name, fx and TorchScript tables)
// meets the very object it meets untraced.
//
//   C function (builtin_function_or_method, METH_VARARGS): CPython calls it
//       through the vectorcall pointer of the object itself when there is
//       one; ours is put there, and calls the function as CPython would
//       without it. Its PyMethodDef, which its hash and equality read, stays.
//   method descriptor (torch.Tensor.add): its PyMethodDef pointer is pointed
//       at a copy (same name, doc and flags) whose C function is one of a
//       fixed pool of trampolines, one per descriptor, which knows its slot.
//       A descriptor's hash is its identity; every call of it, unbound,
//       bound or specialized by the interpreter, reads the pointer.
//   Python function: its code is replaced by an instrumented copy
//       (api_tracer/instrument.py) that calls its CodeHook with its
//       parameters on entry, and the hook's `leave` or `unwind` on its way
//       out (a return, an exception): code_hook.h; the function keeps its identity,
//       signature, source and frames. A Python function's arguments are
//       seen bound, so they are written in one spelling: the parameters
//       without a default positionally, the others by keyword where they are
//       not their default.
//
// A slot is assigned to a C function or descriptor once per process and kept
// (a bound method made while tracing keeps the copy of a descriptor's
// PyMethodDef, and calls through its slot after stop); it is armed by each
// session that patches it and records only in that session.
// Thread-safety: the GIL must be held.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

namespace api_tracer::python {

// Adds patch_c_function, patch_method_descriptor and unpatch to `m` (the
// Python functions' CodeHook: code_hook.h).
void InitInPlace(pybind11::module_& m);

}  // namespace api_tracer::python
