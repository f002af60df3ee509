// Level 0 in place, for Python functions (inplace.h): `CodeHook`, what a
// function's instrumented code calls on entry with its parameters, and
// `CodeExit`, what it calls on its way out; a call is recorded (or, for an
// __init__ of the API list's classes, a construction) as the outermost call
// of its level on the thread.
#include "python/code_hook.h"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "python/inplace.h"
#include "python/objects.h"
#include "python/outermost.h"
#include "python/pytype.h"

namespace api_tracer::python {
namespace {

// CodeHook(function): what the instrumented code of `function` calls on
// entry, with its parameters in the code's order (positional, keyword-only,
// *args, **kwargs); it answers a token, which the code hands to CodeExit
// when it leaves.
struct CodeHook {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* function;  // the function whose code calls this hook
  PyObject* names;     // its parameters' names, a tuple in the code's order
  int argcount, posonly, kwonly;
  bool varargs, varkw;
  // Armed by a session (arm()).
  uint64_t epoch;
  int level;
  int every;  // the level recording every call, nested ones too; -1: none (outermost.h)
  ApiId api;
  bool quiet;  // records nothing, nor anything called inside (api None)
  // A constructor (an __init__ of the API list's classes): per class whose
  // construction it is, the API; a call is recorded as the first of these
  // classes in the made object's MRO, and without `self`.
  std::vector<std::pair<pybind11::object, ApiId>>* owners;
  // A function listed under several names: each call is recorded as the
  // one it was made through, where that can be known (inplace.h), else as
  // `api`.
  Listings* listings;
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

// The first argument of a call (its receiver, for a method): the first
// parameter, or where there is none, the first value *args holds (a
// decorator's wrapper: torch's Optimizer.zero_grad); nullptr where none.
PyObject* Receiver(const CodeHook* h, PyObject* const* p) {
  if (h->argcount > 0) return p[0];
  PyObject* rest = h->varargs ? p[h->kwonly] : nullptr;
  return rest && PyTuple_Check(rest) && PyTuple_GET_SIZE(rest) > 0 ? PyTuple_GET_ITEM(rest, 0) : nullptr;
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
    auto is_default = [&](int i) {
      return i >= first_default && p[i] == PyTuple_GET_ITEM(defaults, i - first_default);
    };
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

  CallArgs args() const { return CallArgs::Vector(values_.data(), nargs_, kwnames_ ? kwnames_.ptr() : nullptr); }

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
  frame.construction_profiles = key.profiles();
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
  Recording r = RecordsNow(h->level, h->every, h->epoch);
  if (!r) {
    if (h->owners && !h->quiet && RecordsOutside(h->level, h->epoch)) Remember(h, args, n, token);
    return answer;
  }
  CodeFrame& entered = ts.code_frames.back();
  if (h->quiet) {  // open, as a recorded call is, so that nothing inside is recorded
    entered.level = h->level;
    entered.quiet = true;
    entered.outer_call = ts.open_call;
    ++ts.depth[h->level];
    ++ts.quiet;
    return answer;
  }
  ApiId api = h->api;
  bool exact = false;
  bool constructor = h->owners != nullptr;
  if (constructor && (n == 0 || !Owner(h, args[0], &api, &exact))) return answer;
  if (h->listings && !constructor) {
    if (const Listing* l = h->listings->Choose(h->function, Receiver(h, args), true)) {
      if (!l->allowed) return answer;  // a name the session's patterns leave out
      api = l->api;
    }
  }
  Session* s = Session::Active();
  Session::Pin pin(s);
  BoundCall call(h, args, constructor ? 1 : 0);
  RecordWhere(s, r, api, call.args());
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
      if (f.quiet) --ts.quiet;
    }
    Session* s = Session::Active();
    if (returned && f.made && ts.code_frames.size() == keep + 1 && s && s->epoch() == f.epoch) {
      s->converter().RememberConstruction(f.made, std::move(f.construction), std::move(f.construction_profiles));
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
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "the function's code names fewer variables than it has parameters");
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
  h->listings = nullptr;
  h->epoch = 0;
  h->every = -1;
  if (CodeHookInit(h, function) < 0) {
    Py_DECREF(h);
    return nullptr;
  }
  return AsObject(h);
}

// arm(api, level, owners=None, names=None, by="site", every=-1): records,
// in the active session, calls as `api`: the outermost at `level`, every
// call at `every` (unless -1: outermost.h); with owners (a list of (class,
// api)), as constructions; with names (a list of (owner, attr, api), the
// names a function is listed under), each call as the one it was made
// through, picked `by` its call site, its instance's class or its class
// (inplace.h), else as `api`; with api None, nothing, and nothing called
// inside at `level`.
PyObject* CodeHookArm(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"api", "level", "owners", "names", "by", "every", nullptr};
  auto* h = reinterpret_cast<CodeHook*>(self);
  const char* api;
  int level;
  PyObject* owners = Py_None;
  PyObject* names = Py_None;
  const char* by = "site";
  int every = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "zi|OOsi", const_cast<char**>(kwlist), &api, &level, &owners, &names,
                                   &by, &every)) {
    return nullptr;
  }
  Session* s = Session::Active();
  if (!RecordsAny(s, level, every)) {
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
  std::unique_ptr<Listings> listings;
  if (names != Py_None) {
    listings = Listings::Parse(names, by, s);
    if (!listings) return nullptr;
  }
  delete h->owners;
  h->owners = owners == Py_None ? nullptr : new std::vector<std::pair<pybind11::object, ApiId>>(std::move(table));
  delete h->listings;
  h->listings = listings.release();
  h->quiet = api == nullptr;
  h->api = api ? s->Intern(api) : 0;
  h->level = level;
  h->every = every;
  h->epoch = s->epoch();
  Py_RETURN_NONE;
}

int CodeHookTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* h = reinterpret_cast<CodeHook*>(self);
  Py_VISIT(h->function);
  if (h->owners) {
    for (auto& [owner, id] : *h->owners) Py_VISIT(owner.ptr());
  }
  if (h->listings) {
    for (auto& l : h->listings->items) Py_VISIT(l.owner.ptr());
  }
  return 0;
}

int CodeHookClear(PyObject* self) {
  auto* h = reinterpret_cast<CodeHook*>(self);
  Py_CLEAR(h->function);
  Py_CLEAR(h->names);
  delete h->owners;
  h->owners = nullptr;
  delete h->listings;
  h->listings = nullptr;
  return 0;
}

void CodeHookDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  CodeHookClear(self);
  Py_TYPE(self)->tp_free(self);
}

PyMethodDef kCodeHookMethods[] = {
    {"arm", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(CodeHookArm)), METH_VARARGS | METH_KEYWORDS,
     "arm(api, level, owners=None, names=None, by='site', every=-1): record in the active session."},
    {nullptr, nullptr, 0, nullptr},
};

// CodeExit(returned): what the instrumented code calls with its token on
// its way out: by a return (returned=True) or by an exception.
struct CodeExit {
  PyObject_HEAD vectorcallfunc vectorcall;
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

}  // namespace

void InitCodeHooks(pybind11::module_& m) {
  InitVectorcallType(&CodeHookType, "api_tracer._C.CodeHook", sizeof(CodeHook), offsetof(CodeHook, vectorcall),
                     "CodeHook(function): called by function's instrumented code on entry (inplace.h).", true);
  CodeHookType.tp_new = CodeHookNew;
  CodeHookType.tp_dealloc = CodeHookDealloc;
  CodeHookType.tp_traverse = CodeHookTraverse;
  CodeHookType.tp_clear = CodeHookClear;
  CodeHookType.tp_methods = kCodeHookMethods;
  InitVectorcallType(&CodeExitType, "api_tracer._C.CodeExit", sizeof(CodeExit), offsetof(CodeExit, vectorcall),
                     "CodeExit(returned): called by instrumented code with its token on its way out.", false);
  CodeExitType.tp_new = CodeExitNew;
  AddType(m, "CodeHook", &CodeHookType);
  AddType(m, "CodeExit", &CodeExitType);
}

}  // namespace api_tracer::python
