#include "python/inplace.h"

#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/flat_index.h"
#include "python/objects.h"
#include "python/outermost.h"

namespace api_tracer::python {
namespace {

// -- the listing a call is made through (inplace.h) ---------------------------

// instrument.call_sites, which the package sets on import (set_call_site_reader).
pybind11::object& CallSiteReader() {
  static auto* reader = new pybind11::object();
  return *reader;
}

// Per code object (held: its address names no other while here), what
// call_sites answered for it: {offset: chain}.
constexpr size_t kCodesKept = 4096;

ObjectMap<pybind11::object>& SiteCache() {
  static auto* cache = new ObjectMap<pybind11::object>();
  return *cache;
}

// The chain ("g" or "n", name, attribute, ...) that loaded the callable of
// the call `frame` is making, or a null object.
pybind11::object CallSiteChain(PyFrameObject* frame) {
  pybind11::object code = Steal(PyFrame_GetCode(frame));
  int lasti = PyFrame_GetLasti(frame);
  if (!code || lasti < 0 || !CallSiteReader()) return {};
  auto& cache = SiteCache();
  auto it = cache.find(code.ptr());
  if (it == cache.end()) {
    pybind11::object sites;
    {
      Suspend suspend;  // the tracer's own Python code
      sites = Steal(PyObject_CallOneArg(CallSiteReader().ptr(), code.ptr()));
    }
    if (!sites || !PyDict_Check(sites.ptr())) {
      PyErr_Clear();
      sites = Steal(PyDict_New());
      if (!sites) {
        PyErr_Clear();
        return {};
      }
    }
    if (cache.size() >= kCodesKept) cache.clear();
    it = cache.try_emplace(code, std::move(sites)).first;
  }
  pybind11::object key = Steal(PyLong_FromLong(lasti));
  PyObject* chain = key ? PyDict_GetItemWithError(it->second.ptr(), key.ptr()) : nullptr;
  if (!chain || !PyTuple_Check(chain) || PyTuple_GET_SIZE(chain) < 3) {
    PyErr_Clear();
    return {};
  }
  return Borrow(chain);
}

// `obj`'s attribute `name` as stored, for a module (its dict) or a class
// (its MRO's dicts), no descriptor bound and no code run; nullptr else.
PyObject* Stored(PyObject* obj, PyObject* name) {
  PyObject* found = nullptr;
  if (PyModule_Check(obj)) {
    PyObject* dict = PyModule_GetDict(obj);
    found = dict ? PyDict_GetItemWithError(dict, name) : nullptr;
  } else if (PyType_Check(obj)) {
    found = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(obj), name);
  }
  PyErr_Clear();
  return found;
}

// Whether the attribute stored as `raw` is `fn` when called: itself, or
// the function a staticmethod or classmethod holds.
bool Calls(PyObject* raw, PyObject* fn) {
  if (raw == fn) return true;
  if (!PyObject_TypeCheck(raw, &PyStaticMethod_Type) && !PyObject_TypeCheck(raw, &PyClassMethod_Type)) return false;
  pybind11::object inner = Steal(PyObject_GetAttrString(raw, "__func__"));
  PyErr_Clear();
  return inner.ptr() == fn;
}

// The listing whose owner is `owner`, or, for a class, the first class of
// its MRO that one is of, with the attribute `attr` (nullptr: none).
const Listing* ListingOf(const std::vector<Listing>& items, PyObject* owner, PyObject* attr) {
  auto find = [&](PyObject* klass) -> const Listing* {
    for (const Listing& l : items) {
      if (l.owner.ptr() != klass) continue;
      if (!attr) return &l;
      int cmp = PyUnicode_Compare(l.attr.ptr(), attr);
      if (cmp == 0) return &l;
      PyErr_Clear();
    }
    return nullptr;
  };
  if (const Listing* l = find(owner)) return l;
  PyObject* mro = PyType_Check(owner) ? reinterpret_cast<PyTypeObject*>(owner)->tp_mro : nullptr;
  for (Py_ssize_t i = 1; mro && PyTuple_Check(mro) && i < PyTuple_GET_SIZE(mro); ++i) {
    if (const Listing* l = find(PyTuple_GET_ITEM(mro, i))) return l;
  }
  return nullptr;
}

// The listing the call `frame` is making reached `fn` through.
const Listing* AtCallSite(const std::vector<Listing>& items, PyObject* fn, PyFrameObject* frame) {
  pybind11::object chain = CallSiteChain(frame);
  if (!chain) return nullptr;
  Py_ssize_t n = PyTuple_GET_SIZE(chain.ptr());
  PyObject* name = PyTuple_GET_ITEM(chain.ptr(), 1);
  if (!PyUnicode_Check(name)) return nullptr;
  pybind11::object globals = Steal(PyFrame_GetGlobals(frame));
  pybind11::object builtins = Steal(PyFrame_GetBuiltins(frame));
  PyObject* obj = globals && PyDict_Check(globals.ptr()) ? PyDict_GetItemWithError(globals.ptr(), name) : nullptr;
  if (!obj && builtins && PyDict_Check(builtins.ptr())) obj = PyDict_GetItemWithError(builtins.ptr(), name);
  PyErr_Clear();
  for (Py_ssize_t i = 2; obj && i < n - 1; ++i) {
    PyObject* attr = PyTuple_GET_ITEM(chain.ptr(), i);
    obj = PyUnicode_Check(attr) ? Stored(obj, attr) : nullptr;
  }
  PyObject* attr = PyTuple_GET_ITEM(chain.ptr(), n - 1);
  if (!obj || !PyUnicode_Check(attr)) return nullptr;
  PyObject* raw = Stored(obj, attr);
  if (!raw || !Calls(raw, fn)) return nullptr;  // not this call's callable (a call from C in between)
  return ListingOf(items, obj, attr);
}

}  // namespace

std::unique_ptr<Listings> Listings::Parse(PyObject* names, const char* by, Session* s) {
  auto out = std::make_unique<Listings>();
  std::string_view how = by ? by : "site";
  if (how == "site") {
    out->by = NamedBy::kCallSite;
  } else if (how == "instance") {
    out->by = NamedBy::kInstance;
  } else if (how == "class") {
    out->by = NamedBy::kClass;
  } else {
    PyErr_SetString(PyExc_ValueError, "by must be 'site', 'instance' or 'class'");
    return nullptr;
  }
  pybind11::object seq = Steal(PySequence_Fast(names, "names must be a list of (owner, attr, api)"));
  if (!seq) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.ptr()); ++i) {
    PyObject *owner, *attr;
    const char* api;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq.ptr(), i), "OUs", &owner, &attr, &api)) return nullptr;
    out->items.push_back({Borrow(owner), Borrow(attr), s->Intern(api), s->Allows(api)});
  }
  return out;
}

const Listing* Listings::Choose(PyObject* fn, PyObject* receiver, bool in_callee) const {
  if (by == NamedBy::kInstance || by == NamedBy::kClass) {
    if (!receiver) return nullptr;
    PyObject* klass = by == NamedBy::kInstance ? AsObject(Py_TYPE(receiver)) : receiver;
    return PyType_Check(klass) ? ListingOf(items, klass, nullptr) : nullptr;
  }
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  pybind11::object caller;
  if (frame && in_callee) {
    caller = Steal(PyFrame_GetBack(frame));
    frame = reinterpret_cast<PyFrameObject*>(caller.ptr());
  }
  return frame ? AtCallSite(items, fn, frame) : nullptr;
}

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
  int every = -1;  // the level recording every call, nested ones too; -1: none (outermost.h)
  std::unique_ptr<Listings> listings;  // a C function listed under several names (inplace.h)
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
  Recording r = RecordsNow(s->level, s->every, s->epoch);
  if (!r) return invoke();
  size_t n = static_cast<size_t>(PyTuple_GET_SIZE(args));
  WithSelf all(self, n ? &PyTuple_GET_ITEM(args, 0) : nullptr, n);
  CallArgs call{all.data(), n + 1, nullptr, kwargs && PyDict_Check(kwargs) ? kwargs : nullptr};
  return RecordThenCall(r, s->level, s->api, s->object.ptr(), call, invoke);
}

PyObject* CallNoArgs(Slot* s, PyObject* self, PyObject* unused) {
  auto invoke = [&] { return Meth<PyCFunction>(s)(self, unused); };
  Recording r = RecordsNow(s->level, s->every, s->epoch);
  if (!r) return invoke();
  return RecordThenCall(r, s->level, s->api, s->object.ptr(), CallArgs::Vector(&self, 1, nullptr), invoke);
}

PyObject* CallOne(Slot* s, PyObject* self, PyObject* arg) {
  auto invoke = [&] { return Meth<PyCFunction>(s)(self, arg); };
  Recording r = RecordsNow(s->level, s->every, s->epoch);
  if (!r) return invoke();
  PyObject* both[2] = {self, arg};
  return RecordThenCall(r, s->level, s->api, s->object.ptr(), CallArgs::Vector(both, 2, nullptr), invoke);
}

PyObject* CallFast(Slot* s, PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  auto invoke = [&] {
    return kwnames || s->original->ml_flags & METH_KEYWORDS
               ? Meth<_PyCFunctionFastWithKeywords>(s)(self, args, nargs, kwnames)
               : Meth<_PyCFunctionFast>(s)(self, args, nargs);
  };
  Recording r = RecordsNow(s->level, s->every, s->epoch);
  if (!r) return invoke();
  size_t nkw = kwnames ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
  WithSelf all(self, args, static_cast<size_t>(nargs) + nkw);
  CallArgs call = CallArgs::Vector(all.data(), static_cast<size_t>(nargs) + 1, kwnames);
  return RecordThenCall(r, s->level, s->api, s->object.ptr(), call, invoke);
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
  Recording r = s ? RecordsNow(s->level, s->every, s->epoch) : Recording{};
  if (!r) return invoke();
  ApiId api = s->api;
  if (s->listings) {
    if (const Listing* l = s->listings->Choose(callable, nargs ? args[0] : nullptr, false)) {
      if (!l->allowed) return invoke();
      api = l->api;
    }
  }
  return RecordThenCall(r, s->level, api, callable, CallArgs::Vector(args, static_cast<size_t>(nargs), kwnames),
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

// Arms `s` for the active session, which must record `level` or `every`.
bool Arm(Slot& s, const char* api, int level, int every) {
  Session* session = Session::Active();
  if (!RecordsAny(session, level, every)) {
    PyErr_SetString(PyExc_RuntimeError, "patching needs an active session that records its level");
    return false;
  }
  s.epoch = session->epoch();
  s.api = session->Intern(api);
  s.level = level;
  s.every = every;
  return true;
}

// patch_c_function(function, api, level, names=None, every=-1) -> bool: False where
// `function` cannot be patched in place: it is not a plain builtin function,
// or the interpreter calls it without its vectorcall pointer where it
// specializes a call site (METH_O and METH_FASTCALL functions). `names`:
// the (owner, attr, api) of each name it is listed under, a call named by
// the one its call site reached it through (inplace.h), else `api`.
PyObject* PatchCFunction(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"function", "api", "level", "names", "every", nullptr};
  PyObject* obj;
  const char* api;
  int level;
  PyObject* names = Py_None;
  int every = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Osi|Oi", const_cast<char**>(kwlist), &obj, &api, &level, &names,
                                   &every)) {
    return nullptr;
  }
  if (!PyCFunction_CheckExact(obj)) Py_RETURN_FALSE;
  auto* f = reinterpret_cast<PyCFunctionObject*>(obj);
  int convention = ConventionOf(f->m_ml->ml_flags & ~METH_STATIC);
  if (convention != kVarargs && convention != kVarargsKeywords && convention != kNoArgs) Py_RETURN_FALSE;
  Slot& s = SlotOf(obj);
  if (!s.patched) {
    s.original = f->m_ml;
    s.saved = f->vectorcall;
  }
  if (!Arm(s, api, level, every)) return nullptr;
  s.listings.reset();
  if (names != Py_None) {
    s.listings = Listings::Parse(names, "site", Session::Active());
    if (!s.listings) return nullptr;
  }
  f->vectorcall = CFunctionVectorcall;
  s.patched = true;
  Py_RETURN_TRUE;
}

// patch_method_descriptor(descriptor, api, level, every=-1) -> bool: False
// where it cannot be (a convention without trampolines, or its pool is used
// up).
PyObject* PatchMethodDescriptor(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"descriptor", "api", "level", "every", nullptr};
  PyObject* obj;
  const char* api;
  int level;
  int every = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Osi|i", const_cast<char**>(kwlist), &obj, &api, &level, &every)) {
    return nullptr;
  }
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
  if (!Arm(s, api, level, every)) return nullptr;
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

// set_call_site_reader(fn): instrument.call_sites (inplace.h).
PyObject* SetCallSiteReader(PyObject*, PyObject* fn) {
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "set_call_site_reader takes a callable");
    return nullptr;
  }
  CallSiteReader() = Borrow(fn);
  SiteCache().clear();
  Py_RETURN_NONE;
}

PyMethodDef kFunctions[] = {
    {"patch_c_function", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(PatchCFunction)),
     METH_VARARGS | METH_KEYWORDS,
     "patch_c_function(function, api, level, names=None, every=-1) -> bool: records the calls of a builtin "
     "function in place: the outermost at `level`, every call at `every` (unless -1)."},
    {"patch_method_descriptor", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(PatchMethodDescriptor)),
     METH_VARARGS | METH_KEYWORDS,
     "patch_method_descriptor(descriptor, api, level, every=-1) -> bool: records the calls of a method "
     "descriptor in place, as patch_c_function does."},
    {"unpatch", Unpatch, METH_O, "unpatch(obj): undoes patch_c_function or patch_method_descriptor."},
    {"set_call_site_reader", SetCallSiteReader, METH_O,
     "set_call_site_reader(fn): fn(code) -> {offset: chain}, how each call of a code object loaded its callable."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void InitInPlace(pybind11::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), kFunctions) != 0) throw pybind11::error_already_set();
}

}  // namespace api_tracer::python
