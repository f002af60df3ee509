#include "python/inplace.h"

#include <array>
#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "core/flat_index.h"
#include "python/objects.h"
#include "python/outermost.h"

namespace api_tracer::python {
namespace {

// The calling conventions a trampoline is made for (PyMethodDef.ml_flags).
enum Convention : int { kVarargs, kVarargsKeywords, kNoArgs, kOne, kFast, kFastKeywords, kConventions };

// Trampolines per convention, for method descriptors; each is one
// descriptor's for the life of the process. torch.Tensor has 385 methods of
// the second kind and 196 of the third.
constexpr size_t kPoolSize[kConventions] = {64, 1024, 512, 128, 64, 128};

// The convention of `flags`, or -1 for one no trampoline is made for
// (METH_METHOD's defining-class argument, METH_STATIC and METH_CLASS
// descriptors, which are not method descriptors).
int ConventionOf(int flags) {
  switch (flags & (METH_VARARGS | METH_KEYWORDS | METH_NOARGS | METH_O | METH_FASTCALL | METH_METHOD | METH_STATIC |
                   METH_CLASS)) {
    case METH_VARARGS: return kVarargs;
    case METH_VARARGS | METH_KEYWORDS: return kVarargsKeywords;
    case METH_NOARGS: return kNoArgs;
    case METH_O: return kOne;
    case METH_FASTCALL: return kFast;
    case METH_FASTCALL | METH_KEYWORDS: return kFastKeywords;
    default: return -1;
  }
}

struct Slot {
  pybind11::object object;  // the C function or the descriptor: kept, so its address names this slot
  PyMethodDef* original = nullptr;
  PyMethodDef copy{};           // a descriptor's: the original's, but ml_meth is the trampoline
  vectorcallfunc saved = nullptr;  // a C function's own vectorcall pointer
  bool descriptor = false;
  bool patched = false;
  // Armed by the session that patched it last.
  uint64_t epoch = 0;
  ApiId api = 0;
  int level = 0;
};

std::deque<Slot>& Slots() {  // never shrinks: a trampoline or a bound method may refer to any
  static auto* slots = new std::deque<Slot>();
  return *slots;
}

// Slots by the address of their object: an open-addressing index, as a
// patched C function's every call looks its slot up.
FlatIndex& SlotIndex() {
  static auto* index = new FlatIndex();
  return *index;
}

Slot* FindSlot(PyObject* obj) {
  int32_t i = SlotIndex().Find(reinterpret_cast<uintptr_t>(obj));
  return i < 0 ? nullptr : &Slots()[static_cast<size_t>(i)];
}

Slot* Pool(int convention, size_t i);

// A call's positional arguments with the descriptor's instance first.
class WithSelf {
 public:
  WithSelf(PyObject* self, PyObject* const* args, size_t n) {
    if (n + 1 > kInline) heap_.resize(n + 1);
    PyObject** out = data();
    out[0] = self;
    for (size_t i = 0; i < n; ++i) out[i + 1] = args[i];
  }
  PyObject** data() { return heap_.empty() ? inline_.data() : heap_.data(); }

 private:
  static constexpr size_t kInline = 12;
  std::array<PyObject*, kInline> inline_;
  std::vector<PyObject*> heap_;
};

template <typename Fn>
Fn Meth(const Slot* s) {
  return reinterpret_cast<Fn>(reinterpret_cast<void (*)(void)>(s->original->ml_meth));
}

// What a descriptor's trampoline does: records the call (the instance as its
// first argument), then calls the original C function.
PyObject* CallVarargs(Slot* s, PyObject* self, PyObject* args, PyObject* kwargs) {
  auto invoke = [&] {
    return s->original->ml_flags & METH_KEYWORDS ? Meth<PyCFunctionWithKeywords>(s)(self, args, kwargs)
                                                 : Meth<PyCFunction>(s)(self, args);
  };
  if (!RecordsNow(s->level, s->epoch)) return invoke();
  size_t n = static_cast<size_t>(PyTuple_GET_SIZE(args));
  WithSelf all(self, n ? &PyTuple_GET_ITEM(args, 0) : nullptr, n);
  CallArgs call{all.data(), n + 1, nullptr, kwargs && PyDict_Check(kwargs) ? kwargs : nullptr};
  return RecordThenCall(s->level, s->api, s->object.ptr(), call, invoke);
}

PyObject* CallNoArgs(Slot* s, PyObject* self, PyObject* unused) {
  auto invoke = [&] { return Meth<PyCFunction>(s)(self, unused); };
  if (!RecordsNow(s->level, s->epoch)) return invoke();
  return RecordThenCall(s->level, s->api, s->object.ptr(), CallArgs::Vector(&self, 1, nullptr), invoke);
}

PyObject* CallOne(Slot* s, PyObject* self, PyObject* arg) {
  auto invoke = [&] { return Meth<PyCFunction>(s)(self, arg); };
  if (!RecordsNow(s->level, s->epoch)) return invoke();
  PyObject* both[2] = {self, arg};
  return RecordThenCall(s->level, s->api, s->object.ptr(), CallArgs::Vector(both, 2, nullptr), invoke);
}

PyObject* CallFast(Slot* s, PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  auto invoke = [&] {
    return kwnames || s->original->ml_flags & METH_KEYWORDS
               ? Meth<_PyCFunctionFastWithKeywords>(s)(self, args, nargs, kwnames)
               : Meth<_PyCFunctionFast>(s)(self, args, nargs);
  };
  if (!RecordsNow(s->level, s->epoch)) return invoke();
  size_t nkw = kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
  WithSelf all(self, args, static_cast<size_t>(nargs) + nkw);
  CallArgs call = CallArgs::Vector(all.data(), static_cast<size_t>(nargs) + 1, kwnames);
  return RecordThenCall(s->level, s->api, s->object.ptr(), call, invoke);
}

// Trampoline<C, I>::Fn is the C function of the PyMethodDef copy in slot I
// of convention C's pool.
template <int C, size_t I>
struct Trampoline;
template <size_t I>
struct Trampoline<kVarargs, I> {
  static PyObject* Fn(PyObject* self, PyObject* args) { return CallVarargs(Pool(kVarargs, I), self, args, nullptr); }
};
template <size_t I>
struct Trampoline<kVarargsKeywords, I> {
  static PyObject* Fn(PyObject* self, PyObject* args, PyObject* kwargs) {
    return CallVarargs(Pool(kVarargsKeywords, I), self, args, kwargs);
  }
};
template <size_t I>
struct Trampoline<kNoArgs, I> {
  static PyObject* Fn(PyObject* self, PyObject* unused) { return CallNoArgs(Pool(kNoArgs, I), self, unused); }
};
template <size_t I>
struct Trampoline<kOne, I> {
  static PyObject* Fn(PyObject* self, PyObject* arg) { return CallOne(Pool(kOne, I), self, arg); }
};
template <size_t I>
struct Trampoline<kFast, I> {
  static PyObject* Fn(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    return CallFast(Pool(kFast, I), self, args, nargs, nullptr);
  }
};
template <size_t I>
struct Trampoline<kFastKeywords, I> {
  static PyObject* Fn(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return CallFast(Pool(kFastKeywords, I), self, args, nargs, kwnames);
  }
};

using AnyFunction = void (*)(void);

template <int C, size_t... I>
std::vector<AnyFunction> Table(std::index_sequence<I...>) {
  return {reinterpret_cast<AnyFunction>(&Trampoline<C, I>::Fn)...};
}

// Per convention, the trampolines and the slots they serve (taken in order).
struct PoolState {
  std::vector<AnyFunction> trampolines;
  std::vector<Slot*> slots;
};

std::array<PoolState, kConventions>& Pools() {
  static auto* pools = new std::array<PoolState, kConventions>{
      PoolState{Table<kVarargs>(std::make_index_sequence<kPoolSize[kVarargs]>()), {}},
      PoolState{Table<kVarargsKeywords>(std::make_index_sequence<kPoolSize[kVarargsKeywords]>()), {}},
      PoolState{Table<kNoArgs>(std::make_index_sequence<kPoolSize[kNoArgs]>()), {}},
      PoolState{Table<kOne>(std::make_index_sequence<kPoolSize[kOne]>()), {}},
      PoolState{Table<kFast>(std::make_index_sequence<kPoolSize[kFast]>()), {}},
      PoolState{Table<kFastKeywords>(std::make_index_sequence<kPoolSize[kFastKeywords]>()), {}},
  };
  return *pools;
}

Slot* Pool(int convention, size_t i) { return Pools()[convention].slots[i]; }

// A patched C function's vectorcall: records the call, then calls the
// function as CPython does: through the vectorcall it had (a METH_NOARGS
// function's), or where it had none, through its tp_call (a tuple and a dict).
PyObject* CFunctionVectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Slot* s = FindSlot(callable);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  auto invoke = [&] {
    return s && s->saved ? s->saved(callable, args, nargsf, kwnames)
                         : _PyObject_MakeTpCall(PyThreadState_Get(), callable, args, nargs, kwnames);
  };
  if (!s || !RecordsNow(s->level, s->epoch)) return invoke();
  return RecordThenCall(s->level, s->api, callable, CallArgs::Vector(args, static_cast<size_t>(nargs), kwnames),
                        invoke);
}

// The slot of `obj`, made on first use.
Slot& SlotOf(PyObject* obj) {
  if (Slot* s = FindSlot(obj)) return *s;
  SlotIndex().Insert(reinterpret_cast<uintptr_t>(obj), static_cast<int32_t>(Slots().size()));
  Slots().emplace_back();
  Slots().back().object = Borrow(obj);
  return Slots().back();
}

// Arms `s` for the active session, which must record `level`.
bool Arm(Slot& s, const char* api, int level) {
  Session* session = Session::Active();
  if (!session || !session->Records(level)) {
    PyErr_SetString(PyExc_RuntimeError, "patching needs an active session that records its level");
    return false;
  }
  s.epoch = session->epoch();
  s.api = session->Intern(api);
  s.level = level;
  return true;
}

// patch_c_function(function, api, level) -> bool: False where `function`
// cannot be patched in place: it is not a plain builtin function, or the
// interpreter calls it without its vectorcall pointer where it specializes
// a call site (METH_O and METH_FASTCALL functions).
PyObject* PatchCFunction(PyObject*, PyObject* args) {
  PyObject* obj;
  const char* api;
  int level;
  if (!PyArg_ParseTuple(args, "Osi", &obj, &api, &level)) return nullptr;
  if (!PyCFunction_CheckExact(obj)) Py_RETURN_FALSE;
  auto* f = reinterpret_cast<PyCFunctionObject*>(obj);
  int convention = ConventionOf(f->m_ml->ml_flags & ~METH_STATIC);
  if (convention != kVarargs && convention != kVarargsKeywords && convention != kNoArgs) Py_RETURN_FALSE;
  Slot& s = SlotOf(obj);
  if (!s.patched) {
    s.original = f->m_ml;
    s.saved = f->vectorcall;
  }
  if (!Arm(s, api, level)) return nullptr;
  f->vectorcall = CFunctionVectorcall;
  s.patched = true;
  Py_RETURN_TRUE;
}

// patch_method_descriptor(descriptor, api, level) -> bool: False where it
// cannot be (a convention without trampolines, or its pool is used up).
PyObject* PatchMethodDescriptor(PyObject*, PyObject* args) {
  PyObject* obj;
  const char* api;
  int level;
  if (!PyArg_ParseTuple(args, "Osi", &obj, &api, &level)) return nullptr;
  if (Py_TYPE(obj) != &PyMethodDescr_Type) Py_RETURN_FALSE;
  auto* d = reinterpret_cast<PyMethodDescrObject*>(obj);
  if (!FindSlot(obj)) {
    int convention = ConventionOf(d->d_method->ml_flags);
    if (convention < 0) Py_RETURN_FALSE;
    PoolState& pool = Pools()[convention];
    if (pool.slots.size() == pool.trampolines.size()) Py_RETURN_FALSE;  // used up: the caller wraps it instead
    Slot& s = SlotOf(obj);
    s.descriptor = true;
    s.original = d->d_method;
    s.copy = *d->d_method;
    s.copy.ml_meth = reinterpret_cast<PyCFunction>(pool.trampolines[pool.slots.size()]);
    pool.slots.push_back(&s);
  }
  Slot& s = SlotOf(obj);
  if (!Arm(s, api, level)) return nullptr;
  d->d_method = &s.copy;
  s.patched = true;
  Py_RETURN_TRUE;
}

// unpatch(obj): puts back what patch_* changed; nothing for another object.
PyObject* Unpatch(PyObject*, PyObject* obj) {
  Slot* found = FindSlot(obj);
  if (!found || !found->patched) Py_RETURN_NONE;
  Slot& s = *found;
  if (s.descriptor) {
    reinterpret_cast<PyMethodDescrObject*>(obj)->d_method = s.original;
  } else {
    reinterpret_cast<PyCFunctionObject*>(obj)->vectorcall = s.saved;
  }
  s.patched = false;
  s.epoch = 0;
  Py_RETURN_NONE;
}

PyMethodDef kFunctions[] = {
    {"patch_c_function", PatchCFunction, METH_VARARGS,
     "patch_c_function(function, api, level) -> bool: records the calls of a builtin function in place."},
    {"patch_method_descriptor", PatchMethodDescriptor, METH_VARARGS,
     "patch_method_descriptor(descriptor, api, level) -> bool: records the calls of a method descriptor in "
     "place."},
    {"unpatch", Unpatch, METH_O, "unpatch(obj): undoes patch_c_function or patch_method_descriptor."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void InitInPlace(pybind11::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), kFunctions) != 0) throw pybind11::error_already_set();
}

}  // namespace api_tracer::python
