#include "python/convert.h"

#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/Layout.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/QScheme.h>
#include <torch/csrc/Size.h>
#include <torch/csrc/autograd/python_variable.h>

#include "aten/tensor_fields.h"

namespace api_tracer::python {
namespace {

constexpr int kMaxDepth = 32;

PyTypeObject* g_call_type = nullptr;
PyTypeObject* g_symbol_type = nullptr;
PyTypeObject* g_tensor_spec_type = nullptr;
Converter* g_active = nullptr;

// The UTF-8 of a str that has no plain UTF-8 form (lone surrogates):
// escaped, "?" if even that fails.
std::string Escaped(PyObject* s) {
  PyObject* b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
  if (!b) {
    PyErr_Clear();
    return "?";
  }
  std::string out(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
  Py_DECREF(b);
  return out;
}

// A UTF-8 copy of a str; lone surrogates are escaped rather than failing.
std::string Utf8(PyObject* s) {
  Py_ssize_t n;
  if (const char* p = PyUnicode_AsUTF8AndSize(s, &n)) return std::string(p, n);
  PyErr_Clear();
  return Escaped(s);
}

// use(UTF-8 of str `s`), without a copy but for strings holding lone
// surrogates (escaped).
template <typename Use>
void WithUtf8(PyObject* s, Use&& use) {
  Py_ssize_t n;
  if (const char* p = PyUnicode_AsUTF8AndSize(s, &n)) return use(std::string_view(p, static_cast<size_t>(n)));
  PyErr_Clear();
  use(std::string_view(Escaped(s)));
}

std::string QualifiedName(PyTypeObject* type) {
  std::string name;
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__module__");
  if (module && PyUnicode_Check(module) && PyUnicode_CompareWithASCIIString(module, "builtins")) {
    name = Utf8(module) + ".";
  }
  Py_XDECREF(module);
  PyErr_Clear();
  PyObject* qualname = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__qualname__");
  name += qualname && PyUnicode_Check(qualname) ? Utf8(qualname) : std::string(type->tp_name);
  Py_XDECREF(qualname);
  PyErr_Clear();
  return name;
}

// A torch constant's Python spelling: qschemes name themselves without "torch.".
std::string TorchName(std::string_view name) {
  return name.rfind("torch.", 0) == 0 ? std::string(name) : "torch." + std::string(name);
}

// The attribute `name` of `obj`, or nullptr (error cleared).
PyObject* Attr(PyObject* obj, const char* name) {
  PyObject* v = PyObject_GetAttrString(obj, name);
  if (!v) PyErr_Clear();
  return v;
}

bool ReadInts(PyObject* seq, std::vector<int64_t>* out) {
  PyObject* fast = PySequence_Fast(seq, "");
  if (!fast) {
    PyErr_Clear();
    return false;
  }
  out->clear();
  bool ok = true;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast) && ok; ++i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    ok = !(v == -1 && PyErr_Occurred());
    out->push_back(v);
  }
  PyErr_Clear();
  Py_DECREF(fast);
  return ok;
}

PyObject* ForgetCallback(PyObject* key, PyObject* /*weakref*/) {
  if (Converter* c = ActiveConverter()) {
    c->ForgetInstance(reinterpret_cast<PyObject*>(PyLong_AsVoidPtr(key)));
  }
  Py_RETURN_NONE;
}

PyMethodDef kForgetDef = {"_forget_instance", ForgetCallback, METH_O, nullptr};

}  // namespace

void SetValueTypes(PyObject* call, PyObject* symbol, PyObject* tensor_spec) {
  g_call_type = reinterpret_cast<PyTypeObject*>(call);
  g_symbol_type = reinterpret_cast<PyTypeObject*>(symbol);
  g_tensor_spec_type = reinterpret_cast<PyTypeObject*>(tensor_spec);
}

Converter* ActiveConverter() { return g_active; }
void SetActiveConverter(Converter* c) { g_active = c; }

Converter::Converter(PyObject* classify, PyObject* tensor_type_name, bool value_ranges)
    : classify_(classify), tensor_type_name_(tensor_type_name), value_ranges_(value_ranges) {
  Py_XINCREF(classify_);
  Py_XINCREF(tensor_type_name_);
}

Converter::~Converter() {
  for (auto& [type, rule] : rules_) {
    Py_XDECREF(rule.fn);
    Py_DECREF(type);
  }
  for (auto& [type, name] : subclasses_) Py_DECREF(type);
  for (auto& [obj, inst] : instances_) Py_DECREF(inst.weakref);
  Py_XDECREF(classify_);
  Py_XDECREF(tensor_type_name_);
}

void Converter::WriteCall(ApiId api, const CallArgs& call, KeyWriter* w) {
  w->BeginCall(api, call.nargs);
  WriteArguments(call, /*count_kwargs=*/true, w);
}

void Converter::WriteObject(const std::string& name, const CallArgs& call, KeyWriter* w, int depth) {
  size_t nkwargs = call.kwnames  ? static_cast<size_t>(PyTuple_GET_SIZE(call.kwnames))
                   : call.kwargs ? static_cast<size_t>(PyDict_GET_SIZE(call.kwargs))
                                 : 0;
  w->BeginObject(name, call.nargs, nkwargs);
  WriteArguments(call, /*count_kwargs=*/false, w, depth);
}

// The positional arguments, then the keyword arguments; a call's layout
// counts them first, an object's header already did.
void Converter::WriteArguments(const CallArgs& call, bool count_kwargs, KeyWriter* w, int depth) {
  for (size_t i = 0; i < call.nargs; ++i) Write(call.args[i], w, depth);
  if (call.kwnames) {
    Py_ssize_t n = PyTuple_GET_SIZE(call.kwnames);
    if (count_kwargs) w->BeginKwargs(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      WithUtf8(PyTuple_GET_ITEM(call.kwnames, i), [w](std::string_view k) { w->Keyword(k); });
      Write(call.args[call.nargs + i], w, depth);
    }
  } else if (call.kwargs) {
    if (count_kwargs) w->BeginKwargs(static_cast<size_t>(PyDict_GET_SIZE(call.kwargs)));
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(call.kwargs, &pos, &k, &v)) {
      PyUnicode_Check(k) ? WithUtf8(k, [w](std::string_view name) { w->Keyword(name); }) : w->Keyword("?");
      Write(v, w, depth);
    }
  } else if (count_kwargs) {
    w->BeginKwargs(0);
  }
}

void Converter::Write(PyObject* obj, KeyWriter* w, int depth) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  PyTypeObject* type = Py_TYPE(obj);
  // The common cases first, by exact type.
  if (type == reinterpret_cast<PyTypeObject*>(THPVariableClass)) return WriteTensor(obj, w);
  if (obj == Py_None) return w->None();
  if (type == &PyBool_Type) return w->Bool(obj == Py_True);
  if (type == &PyLong_Type) {
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (!overflow) return w->Int(v);
    PyObject* digits = PyObject_Str(obj);  // fails past Python's digit limit
    if (!digits) {
      PyErr_Clear();
      return WriteOpaque(type, w);
    }
    w->BigInt(Utf8(digits));
    Py_DECREF(digits);
    return;
  }
  if (type == &PyFloat_Type) return w->Float(PyFloat_AS_DOUBLE(obj));
  if (depth > kMaxDepth) return WriteOpaque(type, w);
  if (type == &PyUnicode_Type) return WithUtf8(obj, [w](std::string_view text) { w->Str(text); });
  if (type == &PyTuple_Type || type == &PyList_Type) {
    Py_ssize_t n = Py_SIZE(obj);
    type == &PyTuple_Type ? w->BeginTuple(n) : w->BeginList(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      // A list could be changed by a dialect callback while we walk it.
      PyObject* item = type == &PyTuple_Type ? PyTuple_GET_ITEM(obj, i)
                       : i < PyList_GET_SIZE(obj) ? PyList_GET_ITEM(obj, i)
                                                  : Py_None;
      Py_INCREF(item);
      Write(item, w, depth + 1);
      Py_DECREF(item);
    }
    return;
  }
  if (type == &PyDict_Type) {
    // Iterate over a snapshot of the items: callbacks cannot disturb it.
    PyObject* items = PyDict_Items(obj);
    if (!items) {
      PyErr_Clear();
      return WriteOpaque(type, w);
    }
    Py_ssize_t n = PyList_GET_SIZE(items);
    w->BeginDict(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* kv = PyList_GET_ITEM(items, i);
      Write(PyTuple_GET_ITEM(kv, 0), w, depth + 1);
      Write(PyTuple_GET_ITEM(kv, 1), w, depth + 1);
    }
    Py_DECREF(items);
    return;
  }
  if (PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(THPVariableClass))) {
    return WriteTensor(obj, w);
  }
  if (type == &THPSizeType) {
    Py_ssize_t n = PyTuple_GET_SIZE(obj);
    w->BeginObject("torch.Size", 1, 0);
    w->BeginList(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) Write(PyTuple_GET_ITEM(obj, i), w, depth + 1);
    return;
  }
  if (THPDtype_Check(obj)) return w->Symbol(aten::DtypeSymbol(reinterpret_cast<THPDtype*>(obj)->scalar_type));
  if (THPDevice_Check(obj)) {
    w->BeginObject("torch.device", 1, 0);
    return w->Str(aten::DeviceName(reinterpret_cast<THPDevice*>(obj)->device));
  }
  if (THPLayout_Check(obj)) return w->Symbol(TorchName(reinterpret_cast<THPLayout*>(obj)->name));
  if (THPMemoryFormat_Check(obj)) return w->Symbol(TorchName(reinterpret_cast<THPMemoryFormat*>(obj)->name));
  if (THPQScheme_Check(obj)) return w->Symbol(TorchName(reinterpret_cast<THPQScheme*>(obj)->name));
  if (THPGeneratorClass && PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(THPGeneratorClass))) {
    w->BeginObject("torch.Generator", 0, 1);
    w->Keyword("device");
    return w->Str(aten::DeviceName(reinterpret_cast<THPGenerator*>(obj)->cdata.device()));
  }
  if (type == &PyComplex_Type) {
    Py_complex c = PyComplex_AsCComplex(obj);
    return w->Complex(c.real, c.imag);
  }
  if (type == &PySlice_Type) {
    auto* s = reinterpret_cast<PySliceObject*>(obj);
    w->BeginSlice();
    Write(s->start, w, depth + 1);
    Write(s->stop, w, depth + 1);
    return Write(s->step, w, depth + 1);
  }
  if (obj == Py_Ellipsis) return w->Ellipsis();
  if (type == g_call_type || type == g_symbol_type || type == g_tensor_spec_type) {
    return WriteValueObject(obj, w, depth);
  }
  const TypeRule& rule = Rule(type);
  switch (rule.kind) {
    case TypeRule::kOpaque:
      w->BeginObject("Opaque", 1, 0);
      return w->Str(rule.name);
    case TypeRule::kReplace: {
      PyObject* r = PyObject_CallOneArg(rule.fn, obj);
      if (!r) {
        PyErr_Clear();
        return WriteOpaque(type, w);
      }
      Write(r, w, depth + 1);
      Py_DECREF(r);
      return;
    }
    case TypeRule::kInstance:
      return WriteInstance(obj, rule.fn, w, depth);
  }
}

void Converter::WriteTensor(PyObject* obj, KeyWriter* w) {
  static thread_local aten::TensorScratch scratch;
  TensorFields fields;
  const at::Tensor& tensor = THPVariable_Unpack(obj);
  if (!aten::ReadTensor(tensor, &scratch, &fields)) {
    return WriteOpaque(Py_TYPE(obj), w);
  }
  PyTypeObject* type = Py_TYPE(obj);
  if (type != reinterpret_cast<PyTypeObject*>(THPVariableClass)) fields.subclass = SubclassName(type);
  w->Tensor(fields);
  if (value_ranges_ && IsIntegralDtype(fields.dtype)) w->AddRange(aten::ReadValueRange(tensor));
}

void Converter::WriteOpaque(PyTypeObject* type, KeyWriter* w) {
  w->BeginObject("Opaque", 1, 0);
  w->Str(QualifiedName(type));
}

const std::string& Converter::SubclassName(PyTypeObject* type) {
  auto it = subclasses_.find(type);
  if (it != subclasses_.end()) return it->second;
  std::string name;
  PyObject* r = tensor_type_name_ ? PyObject_CallOneArg(tensor_type_name_, reinterpret_cast<PyObject*>(type))
                                  : nullptr;
  name = r && PyUnicode_Check(r) ? Utf8(r) : QualifiedName(type);
  Py_XDECREF(r);
  PyErr_Clear();
  // Another thread may have added it while tensor_type_name ran.
  auto [added, fresh] = subclasses_.emplace(type, std::move(name));
  if (fresh) Py_INCREF(type);
  return added->second;
}

const Converter::TypeRule& Converter::Rule(PyTypeObject* type) {
  auto it = rules_.find(type);
  if (it != rules_.end()) return it->second;
  TypeRule rule{TypeRule::kOpaque, QualifiedName(type), nullptr};
  PyObject* r = classify_ ? PyObject_CallOneArg(classify_, reinterpret_cast<PyObject*>(type)) : nullptr;
  if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(r, 0))) {
    std::string kind = Utf8(PyTuple_GET_ITEM(r, 0));
    PyObject* payload = PyTuple_GET_ITEM(r, 1);
    if (kind == "opaque" && PyUnicode_Check(payload)) {
      rule.name = Utf8(payload);
    } else if ((kind == "replace" || kind == "instance") && PyCallable_Check(payload)) {
      rule.kind = kind == "replace" ? TypeRule::kReplace : TypeRule::kInstance;
      rule.fn = payload;
      Py_INCREF(payload);
    }
  }
  Py_XDECREF(r);
  PyErr_Clear();
  // Another thread may have added it while classify ran.
  PyObject* fn = rule.fn;
  auto [added, fresh] = rules_.emplace(type, std::move(rule));
  if (fresh) {
    Py_INCREF(type);
  } else {
    Py_XDECREF(fn);
  }
  return added->second;
}

void Converter::WriteValueObject(PyObject* obj, KeyWriter* w, int depth) {
  PyTypeObject* type = Py_TYPE(obj);
  PyObject* name = Attr(obj, "name");
  if (type == g_symbol_type) {
    name && PyUnicode_Check(name) ? w->Symbol(Utf8(name)) : WriteOpaque(type, w);
  } else if (type == g_tensor_spec_type) {
    PyObject* shape = Attr(obj, "shape");
    PyObject* stride = Attr(obj, "stride");
    PyObject* dtype = Attr(obj, "dtype");
    PyObject* device = Attr(obj, "device");
    PyObject* grad = Attr(obj, "requires_grad");
    std::vector<int64_t> dims, strides;
    bool ok = shape && ReadInts(shape, &dims) && dtype && PyUnicode_Check(dtype) && device &&
              PyUnicode_Check(device) && (!stride || stride == Py_None || ReadInts(stride, &strides));
    if (ok) {
      std::string dtype_s = Utf8(dtype), device_s = Utf8(device);
      TensorFields f;
      f.shape = dims;
      f.stride = strides;
      f.dtype = dtype_s;
      f.device = device_s;
      f.requires_grad = grad == Py_True;
      w->Tensor(f);
    } else {
      WriteOpaque(type, w);
    }
    for (PyObject* o : {shape, stride, dtype, device, grad}) Py_XDECREF(o);
  } else {
    PyObject* args = Attr(obj, "args");
    PyObject* kwargs = Attr(obj, "kwargs");
    if (name && PyUnicode_Check(name) && args && PyTuple_Check(args) && kwargs && PyDict_Check(kwargs)) {
      WriteObject(Utf8(name), CallArgs::Tuple(args, kwargs), w, depth + 1);
    } else {
      WriteOpaque(type, w);
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
  }
  Py_XDECREF(name);
}

void Converter::WriteInstance(PyObject* obj, PyObject* fn, KeyWriter* w, int depth) {
  auto it = instances_.find(obj);
  if (it != instances_.end()) return w->Raw(it->second.encoded);
  PyObject* r = PyObject_CallOneArg(fn, obj);
  if (!r) {
    PyErr_Clear();
    return WriteOpaque(Py_TYPE(obj), w);
  }
  KeyWriter local;
  Write(r, &local, depth + 1);
  Py_DECREF(r);
  w->Raw(local.view());
  RememberInstance(obj, std::string(local.view()));
}

void Converter::RememberInstance(PyObject* obj, std::string encoded) {
  if (instances_.count(obj)) {
    instances_[obj].encoded = std::move(encoded);
    return;
  }
  PyObject* key = PyLong_FromVoidPtr(obj);
  PyObject* callback = key ? PyCFunction_New(&kForgetDef, key) : nullptr;
  PyObject* ref = callback ? PyWeakref_NewRef(obj, callback) : nullptr;
  Py_XDECREF(callback);
  Py_XDECREF(key);
  if (!ref) {  // not weak-referenceable: not cached
    PyErr_Clear();
    return;
  }
  instances_.emplace(obj, Instance{std::move(encoded), ref});
}

void Converter::ForgetInstance(PyObject* obj) {
  auto it = instances_.find(obj);
  if (it == instances_.end()) return;
  Py_DECREF(it->second.weakref);
  instances_.erase(it);
}

}  // namespace api_tracer::python
