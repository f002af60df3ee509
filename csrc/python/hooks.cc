#include "python/hooks.h"

#include <torch/csrc/jit/python/pybind_utils.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "aten/ivalue_key.h"
#include "aten/observer.h"
#include "python/outermost.h"
#include "python/pytype.h"
#include "python/session.h"

namespace api_tracer::python {
namespace {

struct Wrapper {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* original;
  PyObject* owner;  // the class, for constructors (an __init__: args[0] is the object being made); else nullptr
  PyObject* weaklist;
  uint64_t epoch;
  ApiId api;
  int level;
  int every;   // the level recording every call, nested ones too; -1: none (outermost.h)
  bool binds;  // bind `self` when looked up through an instance
};

PyTypeObject WrapperType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// Remembers that `self` was made by this constructor call: what a module
// passed as an argument later is written as where the dialect cannot read
// its arguments back (convert.h, Rule.instance).
void RememberConstruction(Session* s, Wrapper* w, const CallArgs& call) {
  PyObject* self = call.args[0];
  if (reinterpret_cast<PyObject*>(Py_TYPE(self)) != w->owner) return;  // a subclass's super().__init__
  Suspend suspend;
  KeyWriter key;
  s->converter().WriteObject(s->ApiName(w->api), call.DropFirst(), &key);
  s->converter().RememberConstruction(self, std::string(key.view()), key.profiles());
}

PyObject* WrapperCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* w = reinterpret_cast<Wrapper*>(self);
  auto invoke = [&] { return PyObject_Vectorcall(w->original, args, nargsf, kwnames); };
  Recording r = RecordsNow(w->level, w->every, w->epoch);
  if (!r) return invoke();
  CallArgs call = CallArgs::Vector(args, PyVectorcall_NARGS(nargsf), kwnames);
  if (w->owner == nullptr) return RecordThenCall(r, w->level, w->api, w->original, call, invoke);
  if (call.nargs == 0) return invoke();
  Session* s = Session::Active();
  Session::Pin pin(s);  // while `s` is used: the call may stop it
  RecordWhere(s, r, w->api, call.DropFirst());
  PyObject* result;
  {
    OpenCall open(w->level, w->original);
    result = invoke();
  }
  if (result && Session::Active() == s) RememberConstruction(s, w, call);
  return result;
}

PyObject* WrapperNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"original", "api", "level", "binds", "owner", "every", nullptr};
  PyObject* original;
  const char* api;
  int level;
  int binds = 0;
  PyObject* owner = Py_None;
  int every = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Osi|$pOi", const_cast<char**>(kwlist), &original, &api, &level,
                                   &binds, &owner, &every)) {
    return nullptr;
  }
  Session* s = Session::Active();
  if (!s) {
    PyErr_SetString(PyExc_RuntimeError, "ApiWrapper needs an active tracing session");
    return nullptr;
  }
  if (!RecordsAny(s, level, every)) {
    PyErr_Format(PyExc_ValueError, "level %d is not being traced", every >= 0 && level != every ? every : level);
    return nullptr;
  }
  if (!PyCallable_Check(original)) {
    PyErr_SetString(PyExc_TypeError, "ApiWrapper wraps callables only");
    return nullptr;
  }
  auto* w = reinterpret_cast<Wrapper*>(type->tp_alloc(type, 0));
  if (!w) return nullptr;
  w->vectorcall = WrapperCall;
  w->original = Py_NewRef(original);
  w->owner = owner == Py_None ? nullptr : Py_NewRef(owner);
  w->epoch = s->epoch();
  w->api = s->Intern(api);
  w->level = level;
  w->every = every;
  w->binds = binds;
  return reinterpret_cast<PyObject*>(w);
}

int WrapperTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* w = reinterpret_cast<Wrapper*>(self);
  Py_VISIT(w->original);
  Py_VISIT(w->owner);
  return 0;
}

int WrapperClear(PyObject* self) {
  auto* w = reinterpret_cast<Wrapper*>(self);
  Py_CLEAR(w->original);
  Py_CLEAR(w->owner);
  return 0;
}

void WrapperDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  if (reinterpret_cast<Wrapper*>(self)->weaklist) PyObject_ClearWeakRefs(self);
  WrapperClear(self);
  Py_TYPE(self)->tp_free(self);
}

PyObject* WrapperGet(PyObject* self, PyObject* obj, PyObject* /*type*/) {
  auto* w = reinterpret_cast<Wrapper*>(self);
  if (!w->binds || obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyObject* WrapperGetAttr(PyObject* self, PyObject* name) {
  return GetAttrOrWrapped(self, name, reinterpret_cast<Wrapper*>(self)->original);
}

PyObject* WrapperRepr(PyObject* self) {
  return PyUnicode_FromFormat("<api_tracer wrapper of %R>", reinterpret_cast<Wrapper*>(self)->original);
}

// A wrapper hashes and compares as the callable it wraps: a set or dict of
// torch's functions built while it stood in their place finds them after.
PyObject* Unwrapped(PyObject* obj) {
  return Py_TYPE(obj) == &WrapperType ? reinterpret_cast<Wrapper*>(obj)->original : obj;
}

Py_hash_t WrapperHash(PyObject* self) { return PyObject_Hash(Unwrapped(self)); }

PyObject* WrapperRichCompare(PyObject* a, PyObject* b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  return PyObject_RichCompare(Unwrapped(a), Unwrapped(b), op);
}

PyObject* WrapperWrapped(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<Wrapper*>(self)->original); }

PyGetSetDef kWrapperGetSet[] = {
    {"__wrapped__", WrapperWrapped, nullptr, "The wrapped original.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// Whether `v`, passed for the operator's argument `i`, is its default, as
// level 3 decides it (aten/ivalue_key.h): converted as the schema types it.
bool IsDefault(const aten::OpSignature& sig, size_t i, PyObject* v) {
  if (i >= sig.args.size() || !sig.args[i].default_value) return false;
  try {
    return sig.args[i].IsDefault(torch::jit::toIValue(v, sig.args[i].type));
  } catch (const std::exception&) {  // not of its type: not its default
    return false;
  }
}

// A level-2 call as PyTorch hands it to the mode, less the defaults PyTorch
// leaves in: an optional tensor a C++ caller passed undefined comes as None,
// its default, as does a Python caller's, which PyTorch leaves out. Left out
// too, the positional arguments before it that are their defaults. So level
// 2 writes what level 3 does, and what a replay of the line is traced as.
// Any new keyword dict is kept in `*kept`.
CallArgs WithoutDefaults(const aten::OpSignature& sig, CallArgs call, pybind11::object* kept) {
  bool none_last = call.nargs > 0 && call.args[call.nargs - 1] == Py_None;
  bool none_keyword = false;
  PyObject *key, *value;
  for (Py_ssize_t pos = 0; call.kwargs && PyDict_Next(call.kwargs, &pos, &key, &value);) {
    none_keyword |= value == Py_None;
  }
  if (!none_last && !none_keyword) return call;  // PyTorch's decision stands: the common case
  while (call.nargs > 0 && IsDefault(sig, call.nargs - 1, call.args[call.nargs - 1])) --call.nargs;
  if (none_keyword && (*kept = Steal(PyDict_New()))) {
    for (Py_ssize_t pos = 0; PyDict_Next(call.kwargs, &pos, &key, &value);) {
      const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
      auto arg = std::find_if(sig.args.begin(), sig.args.end(),
                              [&](const aten::OpSignature::Arg& a) { return name && a.name == name; });
      if (arg != sig.args.end() && IsDefault(sig, arg - sig.args.begin(), value)) continue;
      if (PyDict_SetItem(kept->ptr(), key, value) < 0) PyErr_Clear();
    }
    call.kwargs = kept->ptr();
  }
  PyErr_Clear();
  return call;
}

// The operator level 2's handler is calling on this thread, until a mode
// meets the first call inside that call. An operator's call goes to the
// torch function modes first, so level 1's mode meets it again where no
// level-1 call encloses it (where the program reached the operator past
// level 1: Tensor.set_ with a storage, torch.from_numpy's lift_fresh). That
// call is level 2's, not the program's: level 1 passes it on unrecorded.
thread_local PyObject* level2_calling = nullptr;

// (mode, func, types, args[, kwargs]) -> func(*args, **kwargs), recorded.
PyObject* ModeHandler(int level, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 4 || nargs > 5 || !PyTuple_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError, "expected (mode, func, types, args, kwargs=None)");
    return nullptr;
  }
  PyObject* func = args[1];
  PyObject* call_args = args[3];
  PyObject* call_kwargs = nargs == 5 && args[4] != Py_None ? args[4] : nullptr;
  // A method looked up on torch.Tensor while level 0 runs is our wrapper:
  // the mode stands for the original.
  if (Py_TYPE(func) == &WrapperType) func = reinterpret_cast<Wrapper*>(func)->original;
  Session* s = Session::Active();
  Session::Pin pin(s);  // while `s` and its targets are used: the call may stop it
  HookThreadState& ts = CurrentThread();
  PyObject* target = func;
  Session::ApiEntry uncached;  // holds `target` when it is named for this call only
  bool level2s_call = false;
  if (level == 1) {
    level2s_call = level2_calling != nullptr && level2_calling == func;
    level2_calling = nullptr;  // the calls inside it are the program's again (an operator's Python kernel's)
  }
  if (s && !SuspendRecording::Active() && s->Records(level)) {
    const Session::ApiEntry* api = s->Resolve(func, &uncached);
    if (api->target) target = api->target.ptr();
    // The first call a mode sees inside a wrapper's call, or inside an
    // operator call the native observer recorded, is nested directly in it;
    // if it is the same API, it is the same call.
    bool same_call = false;
    if (s->merges()) {
      same_call = ts.open_call == func;
      if (aten::OpenCall native = aten::TakeOpenCall(); native.open) same_call = same_call || native.api == api->id;
    }
    ts.open_call = nullptr;
    if (api->included && !same_call && !level2s_call) {
      CallArgs call = CallArgs::Tuple(call_args, call_kwargs);
      pybind11::object kept;
      s->Record(level, api->id, level == 2 && api->op ? WithoutDefaults(*api->op, call, &kept) : call);
    }
  }
  if (level != 2) return PyObject_Call(target, call_args, call_kwargs);
  PyObject* outer = level2_calling;
  level2_calling = func;
  PyObject* result = PyObject_Call(target, call_args, call_kwargs);
  level2_calling = outer;
  return result;
}

PyObject* TorchFunctionHandler(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return ModeHandler(1, args, nargs);
}

PyObject* TorchDispatchHandler(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return ModeHandler(2, args, nargs);
}

PyMethodDef kHandlers[] = {
    {"torch_function_handler", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(TorchFunctionHandler)),
     METH_FASTCALL, "__torch_function__ of the level-1 mode (bind with types.MethodType)."},
    {"torch_dispatch_handler", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(TorchDispatchHandler)),
     METH_FASTCALL, "__torch_dispatch__ of the level-2 mode (bind with types.MethodType)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void InitHooks(pybind11::module_& m) {
  InitVectorcallType(&WrapperType, "api_tracer._C.ApiWrapper", sizeof(Wrapper), offsetof(Wrapper, vectorcall),
                     "ApiWrapper(original, api, level, *, binds=False, owner=None, every=-1): records calls of "
                     "`original` as `api`: the outermost at `level`, and every call at `every` (unless -1); with "
                     "`owner` (a class) it wraps the class's __init__ and records constructions.",
                     true);
  WrapperType.tp_new = WrapperNew;
  WrapperType.tp_dealloc = WrapperDealloc;
  WrapperType.tp_traverse = WrapperTraverse;
  WrapperType.tp_clear = WrapperClear;
  WrapperType.tp_descr_get = WrapperGet;
  WrapperType.tp_getattro = WrapperGetAttr;
  WrapperType.tp_repr = WrapperRepr;
  WrapperType.tp_hash = WrapperHash;
  WrapperType.tp_richcompare = WrapperRichCompare;
  WrapperType.tp_getset = kWrapperGetSet;
  WrapperType.tp_weaklistoffset = offsetof(Wrapper, weaklist);
  AddType(m, "ApiWrapper", &WrapperType);
  if (PyModule_AddFunctions(m.ptr(), kHandlers) != 0) throw pybind11::error_already_set();
}

}  // namespace api_tracer::python
