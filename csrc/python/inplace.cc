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

// -- C functions and method descriptors ----------------------------------------

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
  switch (flags & (METH_VARARGS | METH_KEYWORDS | METH_NOARGS | METH_O | METH_FASTCALL | METH_METHOD |
                   METH_STATIC | METH_CLASS)) {
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
  return RecordThenCall(s->level, s->api, callable,
                        CallArgs::Vector(args, static_cast<size_t>(nargs), kwnames), invoke);
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

// -- Python functions ---------------------------------------------------------------

// CodeHook(function): what the instrumented code of `function` calls on
// entry, with its parameters in the code's order (positional, keyword-only,
// *args, **kwargs); it answers a token, which the code hands to CodeExit
// when it leaves.
struct CodeHook {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* function;  // the function whose code calls this hook
  PyObject* names;     // its parameters' names, a tuple in the code's order
  int argcount, posonly, kwonly;
  bool varargs, varkw;
  // Armed by a session (arm()).
  uint64_t epoch;
  int level;
  ApiId api;
  bool quiet;  // records nothing, nor anything called inside (api None)
  // A constructor (an __init__ of the API list's classes): per class whose
  // construction it is, the API; a call is recorded as the first of these
  // classes in the made object's MRO, and without `self`.
  std::vector<std::pair<pybind11::object, ApiId>>* owners;
};

PyTypeObject CodeHookType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// The API of a constructor call making `self`, and whether `self` is of
// exactly that class; false where none of the owners is in its MRO (a class
// of the program's own).
bool Owner(const CodeHook* h, PyObject* self, ApiId* api, bool* exact) {
  PyObject* mro = Py_TYPE(self)->tp_mro;
  if (!mro || !PyTuple_Check(mro)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* klass = PyTuple_GET_ITEM(mro, i);
    for (const auto& [owner, id] : *h->owners) {
      if (owner.ptr() == klass) {
        *api = id;
        *exact = i == 0;
        return true;
      }
    }
  }
  return false;
}

// A bound call as it is written: the parameters without a default
// positionally (and, where *args holds values, every positional parameter),
// the others by keyword where they are not their default (a positional-only
// one positionally, with those before it), then **kwargs.
class BoundCall {
 public:
  BoundCall(const CodeHook* h, PyObject* const* p, int first) {
    PyObject* defaults = PyFunction_GET_DEFAULTS(h->function);
    PyObject* kwdefaults = PyFunction_GET_KW_DEFAULTS(h->function);
    int ndefaults = defaults ? static_cast<int>(PyTuple_GET_SIZE(defaults)) : 0;
    int first_default = h->argcount - ndefaults;
    auto is_default = [&](int i) { return i >= first_default && p[i] == PyTuple_GET_ITEM(defaults, i - first_default); };
    PyObject* rest = h->varargs ? p[h->argcount + h->kwonly] : nullptr;
    Py_ssize_t nrest = rest && PyTuple_Check(rest) ? PyTuple_GET_SIZE(rest) : 0;
    int npositional = first_default;
    if (nrest > 0) {
      npositional = h->argcount;
    } else {
      for (int i = first_default; i < h->posonly; ++i) {
        if (!is_default(i)) npositional = i + 1;
      }
    }
    for (int i = first; i < npositional; ++i) values_.push_back(p[i]);
    for (Py_ssize_t i = 0; i < nrest; ++i) values_.push_back(PyTuple_GET_ITEM(rest, i));
    nargs_ = values_.size();
    for (int i = std::max(npositional, first); i < h->argcount; ++i) {
      if (!is_default(i)) Keyword(PyTuple_GET_ITEM(h->names, i), p[i]);
    }
    for (int i = h->argcount; i < h->argcount + h->kwonly; ++i) {
      PyObject* name = PyTuple_GET_ITEM(h->names, i);
      PyObject* d = kwdefaults && PyDict_Check(kwdefaults) ? PyDict_GetItemWithError(kwdefaults, name) : nullptr;
      if (p[i] != d) Keyword(name, p[i]);
    }
    PyObject* more = h->varkw ? p[h->argcount + h->kwonly + (h->varargs ? 1 : 0)] : nullptr;
    if (more && PyDict_Check(more)) {
      Py_ssize_t pos = 0;
      PyObject *k, *v;
      while (PyDict_Next(more, &pos, &k, &v)) Keyword(k, v);
    }
    PyErr_Clear();
    if (!names_.empty()) {
      kwnames_ = Steal(PyTuple_New(static_cast<Py_ssize_t>(names_.size())));
      for (size_t i = 0; kwnames_ && i < names_.size(); ++i) {
        PyTuple_SET_ITEM(kwnames_.ptr(), static_cast<Py_ssize_t>(i), Py_NewRef(names_[i]));
      }
    }
  }

  CallArgs args() const {
    return CallArgs::Vector(values_.data(), nargs_, kwnames_ ? kwnames_.ptr() : nullptr);
  }

 private:
  void Keyword(PyObject* name, PyObject* value) {
    names_.push_back(name);
    values_.push_back(value);
  }

  std::vector<PyObject*> values_;  // positional, then the keywords' values
  size_t nargs_ = 0;
  std::vector<PyObject*> names_;
  pybind11::object kwnames_;
};

// The construction call of the object an exact constructor of `h` makes,
// encoded into the thread's CodeFrame `token`, to be remembered when the
// constructor returns (Leave).
void Construction(const CodeHook* h, Session* s, ApiId api, const BoundCall& call, PyObject* made, size_t token) {
  Suspend suspend;
  KeyWriter key;
  s->converter().WriteObject(s->ApiName(api), call.args(), &key);
  CodeFrame& frame = CurrentThread().code_frames[token];
  frame.made = made;
  frame.construction = std::string(key.view());
  frame.epoch = h->epoch;
}

// A construction inside a recorded call (a layer that a recorded
// constructor builds, its sublayers): not a config of its own, but
// remembered, so that a config that later holds the object writes the
// call that made it rather than a placeholder.
void Remember(const CodeHook* h, PyObject* const* args, Py_ssize_t n, size_t token) {
  ApiId api = h->api;
  bool exact = false;
  if (n == 0 || !Owner(h, args[0], &api, &exact) || !exact) return;
  Session* s = Session::Active();
  Session::Pin pin(s);
  BoundCall call(h, args, 1);
  Construction(h, s, api, call, args[0], token);
}

PyObject* CodeHookCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* /*kwnames*/) {
  auto* h = reinterpret_cast<CodeHook*>(self);
  HookThreadState& ts = CurrentThread();
  size_t token = ts.code_frames.size();
  PyObject* answer = PyLong_FromSize_t(token);
  if (!answer) {  // never an error at a function's entry: None, and its exit closes nothing
    PyErr_Clear();
    return Py_NewRef(Py_None);
  }
  ts.code_frames.emplace_back();
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  int expected = h->argcount + h->kwonly + h->varargs + h->varkw;
  if (n != expected) return answer;
  if (!RecordsNow(h->level, h->epoch)) {
    if (h->owners && !h->quiet && RecordsOutside(h->level, h->epoch)) Remember(h, args, n, token);
    return answer;
  }
  CodeFrame& entered = ts.code_frames.back();
  if (h->quiet) {  // open, as a recorded call is, so that nothing inside is recorded
    entered.level = h->level;
    entered.outer_call = ts.open_call;
    ++ts.depth[h->level];
    return answer;
  }
  ApiId api = h->api;
  bool exact = false;
  bool constructor = h->owners != nullptr;
  if (constructor && (n == 0 || !Owner(h, args[0], &api, &exact))) return answer;
  Session* s = Session::Active();
  Session::Pin pin(s);
  BoundCall call(h, args, constructor ? 1 : 0);
  s->Record(h->level, api, call.args());
  // (Calls the converter made of instrumented functions have left again.)
  if (constructor && exact) Construction(h, s, api, call, args[0], token);
  CodeFrame& frame = ts.code_frames[token];
  frame.level = h->level;
  frame.outer_call = ts.open_call;
  ++ts.depth[h->level];
  ts.open_call = h->function;
  return answer;
}

// Closes the thread's CodeFrames above `token`; `returned`: the innermost
// of them returned normally (a construction is remembered then).
void Leave(PyObject* token, bool returned) {
  HookThreadState& ts = CurrentThread();
  size_t keep = PyLong_Check(token) ? PyLong_AsSize_t(token) : ts.code_frames.size();
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return;
  }
  while (ts.code_frames.size() > keep) {
    CodeFrame& f = ts.code_frames.back();
    if (f.level >= 0) {
      ts.open_call = f.outer_call;
      --ts.depth[f.level];
    }
    Session* s = Session::Active();
    if (returned && f.made && ts.code_frames.size() == keep + 1 && s && s->epoch() == f.epoch) {
      s->converter().RememberConstruction(f.made, std::move(f.construction));
    }
    ts.code_frames.pop_back();
  }
}

int CodeHookInit(CodeHook* h, PyObject* function) {
  if (!PyFunction_Check(function)) {
    PyErr_SetString(PyExc_TypeError, "CodeHook hooks a Python function");
    return -1;
  }
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(function));
  h->function = Py_NewRef(function);
  h->argcount = code->co_argcount;
  h->posonly = code->co_posonlyargcount;
  h->kwonly = code->co_kwonlyargcount;
  h->varargs = code->co_flags & CO_VARARGS;
  h->varkw = code->co_flags & CO_VARKEYWORDS;
  pybind11::object varnames = Steal(PyObject_GetAttrString(AsObject(code), "co_varnames"));
  int n = h->argcount + h->kwonly + h->varargs + h->varkw;
  if (!varnames || !PyTuple_Check(varnames.ptr()) || PyTuple_GET_SIZE(varnames.ptr()) < n) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the function's code names fewer variables than it has parameters");
    return -1;
  }
  h->names = PyTuple_GetSlice(varnames.ptr(), 0, n);
  return h->names ? 0 : -1;
}

PyObject* CodeHookNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"function", nullptr};
  PyObject* function;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", const_cast<char**>(kwlist), &function)) return nullptr;
  auto* h = reinterpret_cast<CodeHook*>(type->tp_alloc(type, 0));
  if (!h) return nullptr;
  h->vectorcall = CodeHookCall;
  h->owners = nullptr;
  h->epoch = 0;
  if (CodeHookInit(h, function) < 0) {
    Py_DECREF(h);
    return nullptr;
  }
  return AsObject(h);
}

// arm(api, level, owners=None): records, in the active session, calls as
// `api` at `level`; with owners (a list of (class, api)), as constructions;
// with api None, nothing, and nothing called inside at `level`.
PyObject* CodeHookArm(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"api", "level", "owners", nullptr};
  auto* h = reinterpret_cast<CodeHook*>(self);
  const char* api;
  int level;
  PyObject* owners = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "zi|O", const_cast<char**>(kwlist), &api, &level, &owners)) {
    return nullptr;
  }
  Session* s = Session::Active();
  if (!s || !s->Records(level)) {
    PyErr_SetString(PyExc_RuntimeError, "arm() needs an active session that records its level");
    return nullptr;
  }
  std::vector<std::pair<pybind11::object, ApiId>> table;
  if (owners != Py_None) {
    pybind11::object seq = Steal(PySequence_Fast(owners, "owners must be a list of (class, api)"));
    if (!seq) return nullptr;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.ptr()); ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(seq.ptr(), i);
      PyObject* klass;
      const char* name;
      if (!PyArg_ParseTuple(item, "Os", &klass, &name)) return nullptr;
      table.emplace_back(Borrow(klass), s->Intern(name));
    }
  }
  delete h->owners;
  h->owners = owners == Py_None ? nullptr : new std::vector<std::pair<pybind11::object, ApiId>>(std::move(table));
  h->quiet = api == nullptr;
  h->api = api ? s->Intern(api) : 0;
  h->level = level;
  h->epoch = s->epoch();
  Py_RETURN_NONE;
}

int CodeHookTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* h = reinterpret_cast<CodeHook*>(self);
  Py_VISIT(h->function);
  if (h->owners) {
    for (auto& [owner, id] : *h->owners) Py_VISIT(owner.ptr());
  }
  return 0;
}

int CodeHookClear(PyObject* self) {
  auto* h = reinterpret_cast<CodeHook*>(self);
  Py_CLEAR(h->function);
  Py_CLEAR(h->names);
  delete h->owners;
  h->owners = nullptr;
  return 0;
}

void CodeHookDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  CodeHookClear(self);
  Py_TYPE(self)->tp_free(self);
}

PyMethodDef kCodeHookMethods[] = {
    {"arm", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(CodeHookArm)),
     METH_VARARGS | METH_KEYWORDS, "arm(api, level, owners=None): record in the active session."},
    {nullptr, nullptr, 0, nullptr},
};

// CodeExit(returned): what the instrumented code calls with its token on
// its way out: by a return (returned=True) or by an exception.
struct CodeExit {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  bool returned;
};

PyTypeObject CodeExitType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* CodeExitCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject*) {
  if (PyVectorcall_NARGS(nargsf) == 1) Leave(args[0], reinterpret_cast<CodeExit*>(self)->returned);
  return Py_NewRef(Py_None);
}

PyObject* CodeExitNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"returned", nullptr};
  int returned;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "p", const_cast<char**>(kwlist), &returned)) return nullptr;
  auto* e = reinterpret_cast<CodeExit*>(type->tp_alloc(type, 0));
  if (!e) return nullptr;
  e->vectorcall = CodeExitCall;
  e->returned = returned;
  return AsObject(e);
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

bool InitInPlace(PyObject* module) {
  CodeHookType.tp_name = "api_tracer._C.CodeHook";
  CodeHookType.tp_basicsize = sizeof(CodeHook);
  CodeHookType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
  CodeHookType.tp_doc = "CodeHook(function): called by function's instrumented code on entry (inplace.h).";
  CodeHookType.tp_new = CodeHookNew;
  CodeHookType.tp_dealloc = CodeHookDealloc;
  CodeHookType.tp_traverse = CodeHookTraverse;
  CodeHookType.tp_clear = CodeHookClear;
  CodeHookType.tp_call = PyVectorcall_Call;
  CodeHookType.tp_vectorcall_offset = offsetof(CodeHook, vectorcall);
  CodeHookType.tp_methods = kCodeHookMethods;
  CodeExitType.tp_name = "api_tracer._C.CodeExit";
  CodeExitType.tp_basicsize = sizeof(CodeExit);
  CodeExitType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  CodeExitType.tp_doc = "CodeExit(returned): called by instrumented code with its token on its way out.";
  CodeExitType.tp_new = CodeExitNew;
  CodeExitType.tp_call = PyVectorcall_Call;
  CodeExitType.tp_vectorcall_offset = offsetof(CodeExit, vectorcall);
  if (PyType_Ready(&CodeHookType) < 0 || PyType_Ready(&CodeExitType) < 0) return false;
  if (PyModule_AddObjectRef(module, "CodeHook", AsObject(&CodeHookType)) < 0 ||
      PyModule_AddObjectRef(module, "CodeExit", AsObject(&CodeExitType)) < 0) {
    return false;
  }
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace api_tracer::python
