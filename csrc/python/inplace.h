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
// One object listed under several names (torch.conv2d is also
// torch.nn.functional.conv2d, one builtin; Optimizer.zero_grad is each
// optimizer's zero_grad; Adam.step is AdamW's) is patched once, and each of
// its calls is named by the listing it was made through (`Listings`): a
// method's by the class of the object it was called on (the first listed
// class in its MRO), a function's by the name the calling frame's code
// reached it under, where that can be known: the call instruction's callable
// loaded as a chain of attributes from a global name (F.conv2d,
// torch.nn.functional.conv2d), which api_tracer/trace/instrument.py's
// `call_sites` reads from the bytecode once per code object and this
// evaluates in the frame, through modules' and classes' dicts (no code
// runs), checking that it reaches the very object called. Where it cannot be
// known (a name imported bare, a local alias, a call made from C), the call
// takes the name the object was armed with.
//
// A slot is assigned to a C function or descriptor once per process and kept
// (a bound method made while tracing keeps the copy of a descriptor's
// PyMethodDef, and calls through its slot after stop); it is armed by each
// session that patches it and records only in that session.
// Thread-safety: the GIL must be held.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "core/key.h"

namespace api_tracer::python {

class Session;

// One name of an object listed under several: `owner.attr` (a module or a
// class) is recorded as `api`, unless the session's patterns leave it out.
struct Listing {
  pybind11::object owner;
  pybind11::object attr;  // str
  ApiId api = 0;
  bool allowed = true;
};

// How a call picks its listing: by the call site (functions), by the class
// of the first argument (methods, property getters) or by the first
// argument, a class (classmethods).
enum class NamedBy { kCallSite, kInstance, kClass };

struct Listings {
  std::vector<Listing> items;
  NamedBy by = NamedBy::kCallSite;

  // names: a sequence of (owner, attr, api); by: "site", "instance" or
  // "class". nullptr with a Python error set where they are not that.
  static std::unique_ptr<Listings> Parse(PyObject* names, const char* by, Session* s);
  // The listing a call of `fn` is made through; nullptr where none can be
  // known. `receiver`: its first argument (nullptr: none). `in_callee`: the
  // thread's current frame is fn's own (a Python function), its caller's
  // is the call site.
  const Listing* Choose(PyObject* fn, PyObject* receiver, bool in_callee) const;
};

// Adds patch_c_function, patch_method_descriptor and unpatch to `m` (the
// Python functions' CodeHook: code_hook.h).
void InitInPlace(pybind11::module_& m);

}  // namespace api_tracer::python
