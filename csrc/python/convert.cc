#include "python/convert.h"

#include <ATen/record_function.h>

#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/Layout.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/QScheme.h>
#include <torch/csrc/Size.h>
#include <torch/csrc/Storage.h>
#include <torch/csrc/autograd/python_variable.h>

#include "aten/tensor_fields.h"

namespace api_tracer::python {
namespace {

// A call of the dialect's Python code, with RecordFunction off on this
// thread: no callback (level 3, a profiler) sees the operators it runs
// (describing a module builds one on the meta device). Taken here, around
// the callbacks, and not around every call's conversion: toggling it
// rebuilds the thread's active callbacks.
pybind11::object CallDialect(PyObject* fn, PyObject* arg) {
  at::RecordFunctionGuard off(false);
  return Steal(PyObject_CallOneArg(fn, arg));
}

PyTypeObject* g_call_type = nullptr;
PyTypeObject* g_symbol_type = nullptr;
PyTypeObject* g_tensor_spec_type = nullptr;
Converter* g_active = nullptr;

// The UTF-8 of a str that has no plain UTF-8 form (lone surrogates):
// escaped, "?" if even that fails.
std::string Escaped(PyObject* s) {
  pybind11::object b = Steal(PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace"));
  if (!b) {
    PyErr_Clear();
    return "?";
  }
  return std::string(PyBytes_AS_STRING(b.ptr()), PyBytes_GET_SIZE(b.ptr()));
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

// The attribute `name` of `obj`, or a null object (error cleared).
pybind11::object Attr(PyObject* obj, const char* name) {
  pybind11::object v = Steal(PyObject_GetAttrString(obj, name));
  if (!v) PyErr_Clear();
  return v;
}

std::string QualifiedName(PyTypeObject* type) {
  std::string name;
  pybind11::object module = Attr(AsObject(type), "__module__");
  if (module && PyUnicode_Check(module.ptr()) && PyUnicode_CompareWithASCIIString(module.ptr(), "builtins")) {
    name = Utf8(module.ptr()) + ".";
  }
  pybind11::object qualname = Attr(AsObject(type), "__qualname__");
  name += qualname && PyUnicode_Check(qualname.ptr()) ? Utf8(qualname.ptr()) : std::string(type->tp_name);
  return name;
}

// A torch constant's Python spelling: qschemes name themselves without "torch.".
std::string TorchName(std::string_view name) {
  return name.rfind("torch.", 0) == 0 ? std::string(name) : "torch." + std::string(name);
}

bool ReadInts(PyObject* seq, std::vector<int64_t>* out) {
  pybind11::object fast = Steal(PySequence_Fast(seq, ""));
  if (!fast) {
    PyErr_Clear();
    return false;
  }
  out->clear();
  bool ok = true;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.ptr()) && ok; ++i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast.ptr(), i));
    ok = !(v == -1 && PyErr_Occurred());
    out->push_back(v);
  }
  PyErr_Clear();
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

Converter::Converter(PyObject* classify, PyObject* tensor_type_name, bool value_ranges, bool float_ranges, bool devices)
    : classify_(Borrow(classify)),
      tensor_type_name_(Borrow(tensor_type_name)),
      value_ranges_(value_ranges),
      float_ranges_(float_ranges),
      devices_(devices) {}

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
    pybind11::object digits = Steal(PyObject_Str(obj));  // fails past Python's digit limit
    if (!digits) {
      PyErr_Clear();
      return WriteOpaque(type, w);
    }
    return w->BigInt(Utf8(digits.ptr()));
  }
  if (type == &PyFloat_Type) return w->Float(PyFloat_AS_DOUBLE(obj));
  if (depth > kMaxValueDepth) return WriteOpaque(type, w);
  if (type == &PyUnicode_Type) return WithUtf8(obj, [w](std::string_view text) { w->Str(text); });
  if (type == &PyTuple_Type || type == &PyList_Type) {
    Py_ssize_t n = Py_SIZE(obj);
    type == &PyTuple_Type ? w->BeginTuple(n) : w->BeginList(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (type == &PyTuple_Type) {
        Write(PyTuple_GET_ITEM(obj, i), w, depth + 1);
        continue;
      }
      // A dialect callback could change the list while we walk it: hold the item.
      pybind11::object item = Borrow(i < PyList_GET_SIZE(obj) ? PyList_GET_ITEM(obj, i) : Py_None);
      Write(item.ptr(), w, depth + 1);
    }
    return;
  }
  if (type == &PyDict_Type) {
    // Iterate over a snapshot of the items: callbacks cannot disturb it.
    pybind11::object items = Steal(PyDict_Items(obj));
    if (!items) {
      PyErr_Clear();
      return WriteOpaque(type, w);
    }
    Py_ssize_t n = PyList_GET_SIZE(items.ptr());
    w->BeginDict(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* kv = PyList_GET_ITEM(items.ptr(), i);
      Write(PyTuple_GET_ITEM(kv, 0), w, depth + 1);
      Write(PyTuple_GET_ITEM(kv, 1), w, depth + 1);
    }
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
  if (THPStorageClass && PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(THPStorageClass))) {
    // torch.UntypedStorage: Storage(nbytes) (docs/format.md), as level 3 writes it (aten/ivalue_key.cc)
    const c10::Storage& storage = THPStorage_Unpack(obj);
    auto nbytes = storage.unsafeGetStorageImpl() ? storage.sym_nbytes().maybe_as_int() : std::nullopt;
    if (!nbytes) return WriteOpaque(type, w);  // freed, or of a symbolic size
    w->BeginObject("Storage", 1, 0);
    return w->Int(*nbytes);
  }
  const TypeRule& rule = Rule(type);
  switch (rule.kind) {
    case RuleKind::kOpaque: w->BeginObject("Opaque", 1, 0); return w->Str(rule.name);
    case RuleKind::kReplace: {
      pybind11::object r = CallDialect(rule.fn.ptr(), obj);
      if (!r) {
        PyErr_Clear();
        return WriteOpaque(type, w);
      }
      return Write(r.ptr(), w, depth + 1);
    }
    case RuleKind::kInstance: return WriteInstance(obj, rule, w, depth);
    case RuleKind::kTensor: return WriteForeignTensor(obj, *rule.reader, w);
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
  if (value_ranges_ && IsProfiledDtype(fields.dtype, float_ranges_)) w->AddProfile(aten::ReadValueProfile(tensor));
}

namespace {

// The profile of the values a TensorReader's `values` callable gives: a
// C-contiguous buffer of int64 ("q", "l") or float64 ("d"); none for another.
ValueProfile BufferProfile(PyObject* values) {
  Py_buffer view;
  if (PyObject_GetBuffer(values, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return {};
  }
  ValueProfile p;
  std::string_view format = view.format ? view.format : "B";
  if (!format.empty() && (format[0] == '<' || format[0] == '=' || format[0] == '@')) format.remove_prefix(1);
  auto n = static_cast<size_t>(view.itemsize ? view.len / view.itemsize : 0);
  if ((format == "q" || format == "l") && view.itemsize == 8) {
    p = ValueProfile::Of({static_cast<const int64_t*>(view.buf), n});
  } else if (format == "d" && view.itemsize == 8) {
    p = ValueProfile::OfFloats(std::span<const double>(static_cast<const double*>(view.buf), n));
  }
  PyBuffer_Release(&view);
  return p;
}

}  // namespace

void Converter::WriteForeignTensor(PyObject* obj, const TensorReader& reader, KeyWriter* w) {
  static thread_local std::vector<int64_t> shape, stride;
  pybind11::object dims = Steal(PyObject_GetAttr(obj, reader.shape.ptr()));
  pybind11::object dtype = Steal(PyObject_GetAttr(obj, reader.dtype.ptr()));
  if (!dims || !dtype || !ReadInts(dims.ptr(), &shape)) {
    PyErr_Clear();
    return WriteOpaque(Py_TYPE(obj), w);
  }
  TensorFields fields;
  fields.shape = shape;
  std::string named;  // a dtype the table does not hold, as dtype_name says
  if (auto it = reader.dtypes.find(dtype.ptr()); it != reader.dtypes.end()) {
    fields.dtype = it->second;
  } else {
    pybind11::object r = reader.dtype_name ? CallDialect(reader.dtype_name.ptr(), dtype.ptr()) : pybind11::object();
    if (!r || !PyUnicode_Check(r.ptr())) {
      PyErr_Clear();
      return WriteOpaque(Py_TYPE(obj), w);
    }
    named = Utf8(r.ptr());
    fields.dtype = named;
  }
  if (reader.stride) {
    pybind11::object s = Steal(PyObject_GetAttr(obj, reader.stride.ptr()));
    if (s && ReadInts(s.ptr(), &stride) && stride.size() == shape.size()) {
      // Contiguous (as torch counts it: a size-1 dimension's stride is free) writes none.
      int64_t expected = 1;
      bool contiguous = true;
      for (size_t i = shape.size(); i-- > 0;) {
        if (shape[i] != 1 && stride[i] != expected) contiguous = false;
        expected *= shape[i];
      }
      if (!contiguous && expected != 0) fields.stride = stride;
    }
    PyErr_Clear();
  }
  if (reader.requires_grad) {
    pybind11::object g = Steal(PyObject_GetAttr(obj, reader.requires_grad.ptr()));
    if (g) fields.requires_grad = (g.ptr() == Py_True) != reader.grad_negated;
    PyErr_Clear();
  }
  std::string device = "cpu";
  if (devices_ && reader.device) {
    pybind11::object d = CallDialect(reader.device.ptr(), obj);
    if (d && PyUnicode_Check(d.ptr())) device = Utf8(d.ptr());
    PyErr_Clear();
  }
  fields.device = device;
  w->Tensor(fields);
  if (value_ranges_ && reader.values && IsProfiledDtype(fields.dtype, float_ranges_)) {
    pybind11::object values = CallDialect(reader.values.ptr(), obj);
    PyErr_Clear();
    w->AddProfile(values ? BufferProfile(values.ptr()) : ValueProfile{});
  }
}

void Converter::WriteOpaque(PyTypeObject* type, KeyWriter* w) {
  w->BeginObject("Opaque", 1, 0);
  w->Str(QualifiedName(type));
}

const std::string& Converter::SubclassName(PyTypeObject* type) {
  auto it = subclasses_.find(type);
  if (it != subclasses_.end()) return it->second;
  pybind11::object r;
  if (tensor_type_name_) r = CallDialect(tensor_type_name_.ptr(), AsObject(type));
  std::string name = r && PyUnicode_Check(r.ptr()) ? Utf8(r.ptr()) : QualifiedName(type);
  PyErr_Clear();
  // Another thread may have added it while tensor_type_name ran: that one stays.
  return subclasses_.try_emplace(Borrow(type), std::move(name)).first->second;
}

const Converter::TypeRule& Converter::Rule(PyTypeObject* type) {
  auto it = rules_.find(type);
  if (it != rules_.end()) return it->second;
  TypeRule rule{RuleKind::kOpaque, QualifiedName(type), {}};
  pybind11::object answer;
  if (classify_) answer = CallDialect(classify_.ptr(), AsObject(type));
  PyObject* r = answer.ptr();
  Py_ssize_t size = r && PyTuple_Check(r) ? PyTuple_GET_SIZE(r) : 0;
  if (size >= 2 && size <= 4 && pybind11::isinstance<RuleKind>(PyTuple_GET_ITEM(r, 0))) {
    auto kind = pybind11::handle(PyTuple_GET_ITEM(r, 0)).cast<RuleKind>();
    PyObject* payload = PyTuple_GET_ITEM(r, 1);
    PyObject* placeholder = size >= 3 ? PyTuple_GET_ITEM(r, 2) : nullptr;
    PyObject* modes = size == 4 && kind == RuleKind::kInstance ? PyTuple_GET_ITEM(r, 3) : nullptr;
    rule.modes = modes == Py_True || (modes && PyUnicode_Check(modes));
    static PyObject* const kModules = PyUnicode_InternFromString("_modules");
    rule.children = Borrow(modes && PyUnicode_Check(modes) ? modes : kModules);
    if (kind == RuleKind::kOpaque && PyUnicode_Check(payload) && !placeholder) {
      rule.name = Utf8(payload);
    } else if (kind == RuleKind::kTensor && !placeholder && pybind11::isinstance<TensorReader>(payload)) {
      rule.kind = kind;
      rule.fn = Borrow(payload);
      rule.reader = &pybind11::handle(payload).cast<const TensorReader&>();
    } else if (kind != RuleKind::kTensor && kind != RuleKind::kOpaque && PyCallable_Check(payload) &&
               (!placeholder || (kind == RuleKind::kInstance && PyUnicode_Check(placeholder)))) {
      rule.kind = kind;
      rule.fn = Borrow(payload);
      rule.name = placeholder ? Utf8(placeholder) : std::string();
    }
  }
  PyErr_Clear();
  // Another thread may have added it while classify ran: that one stays.
  return rules_.try_emplace(Borrow(type), std::move(rule)).first->second;
}

void Converter::WriteValueObject(PyObject* obj, KeyWriter* w, int depth) {
  PyTypeObject* type = Py_TYPE(obj);
  pybind11::object name = Attr(obj, "name");
  if (type == g_symbol_type) {
    name&& PyUnicode_Check(name.ptr()) ? w->Symbol(Utf8(name.ptr())) : WriteOpaque(type, w);
  } else if (type == g_tensor_spec_type) {
    pybind11::object shape = Attr(obj, "shape"), stride = Attr(obj, "stride"), dtype = Attr(obj, "dtype"),
                     device = Attr(obj, "device"), grad = Attr(obj, "requires_grad");
    std::vector<int64_t> dims, strides;
    bool ok = shape && ReadInts(shape.ptr(), &dims) && dtype && PyUnicode_Check(dtype.ptr()) && device &&
              PyUnicode_Check(device.ptr()) && (!stride || stride.is_none() || ReadInts(stride.ptr(), &strides));
    if (!ok) return WriteOpaque(type, w);
    // The optional fields: None where absent.
    auto text = [&](const char* attr) {
      pybind11::object v = Attr(obj, attr);
      return v && PyUnicode_Check(v.ptr()) ? Utf8(v.ptr()) : std::string();
    };
    auto number = [&](const char* attr, int64_t absent) {
      pybind11::object v = Attr(obj, attr);
      return v && PyLong_Check(v.ptr()) ? PyLong_AsLongLong(v.ptr()) : absent;
    };
    std::string dtype_s = Utf8(dtype.ptr()), device_s = Utf8(device.ptr()), layout = text("layout"),
                qscheme = text("qscheme");
    TensorFields f;
    f.shape = dims;
    f.stride = strides;
    f.dtype = dtype_s;
    f.device = device_s;
    f.requires_grad = grad.ptr() == Py_True;
    if (layout == "torch.strided") layout.clear();
    f.layout = layout;
    f.nnz = number("nnz", -1);
    f.qscheme = qscheme;
    pybind11::object scale = Attr(obj, "scale");
    f.scale = scale && PyFloat_Check(scale.ptr()) ? PyFloat_AsDouble(scale.ptr()) : 0;
    f.zero_point = number("zero_point", 0);
    f.axis = number("axis", -1);
    f.storage_offset = number("storage_offset", -1);
    f.storage_size = number("storage_size", -1);
    PyErr_Clear();
    w->Tensor(f);
  } else {
    pybind11::object args = Attr(obj, "args"), kwargs = Attr(obj, "kwargs");
    if (name && PyUnicode_Check(name.ptr()) && args && PyTuple_Check(args.ptr()) && kwargs &&
        PyDict_Check(kwargs.ptr())) {
      WriteObject(Utf8(name.ptr()), CallArgs::Tuple(args.ptr(), kwargs.ptr()), w, depth + 1);
    } else {
      WriteOpaque(type, w);
    }
  }
}

namespace {

// The training flags of a module (torch.nn.Module, paddle.nn.Layer) and
// of its submodules (the dict `children_attr` names, depth first), hashed: read from the modules' __dict__, no
// Python code runs.
uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t ModuleModes(PyObject* module, PyObject* children_attr, int depth = 0) {
  static PyObject* const kTraining = PyUnicode_InternFromString("training");
  PyObject** dict = _PyObject_GetDictPtr(module);
  if (!dict || !*dict || depth > kMaxValueDepth) return 0;
  uint64_t h = Mix(PyDict_GetItemWithError(*dict, kTraining) == Py_True ? 1 : 2);
  PyObject* children = PyDict_GetItemWithError(*dict, children_attr);
  if (children && PyDict_Check(children)) {
    Py_ssize_t pos = 0;
    PyObject *key, *child;
    while (PyDict_Next(children, &pos, &key, &child)) {
      h = Mix(h * 31 + (child == Py_None ? 3 : ModuleModes(child, children_attr, depth + 1)));
    }
  }
  PyErr_Clear();
  return h;
}

// Where `r` is a Call of one argument, a Call named `placeholder` (the
// dialect's Eval(Module("x"))): the outer call's name.
std::optional<std::string> WrapsPlaceholder(PyObject* r, const std::string& placeholder) {
  pybind11::object args = Attr(r, "args");
  PyErr_Clear();
  if (!args || !PyTuple_Check(args.ptr()) || PyTuple_GET_SIZE(args.ptr()) != 1) return std::nullopt;
  PyObject* inner = PyTuple_GET_ITEM(args.ptr(), 0);
  if (Py_TYPE(inner) != g_call_type) return std::nullopt;
  pybind11::object inner_name = Attr(inner, "name"), name = Attr(r, "name");
  PyErr_Clear();
  if (!inner_name || !PyUnicode_Check(inner_name.ptr()) || Utf8(inner_name.ptr()) != placeholder || !name ||
      !PyUnicode_Check(name.ptr())) {
    return std::nullopt;
  }
  return Utf8(name.ptr());
}

}  // namespace

void Converter::WriteInstance(PyObject* obj, const TypeRule& rule, KeyWriter* w, int depth) {
  uint64_t modes = rule.modes ? ModuleModes(obj, rule.children.ptr()) : 0;
  auto it = instances_.find(obj);
  if (it != instances_.end() && it->second.described && it->second.modes == modes) {
    return WriteEncoded(it->second.encoded, it->second.profiles, w);
  }
  pybind11::object r = CallDialect(rule.fn.ptr(), obj);
  PyErr_Clear();
  bool placeholder = !r;
  std::optional<std::string> wrapper;  // the call around the placeholder, if any
  if (r && !rule.name.empty() && Py_TYPE(r.ptr()) == g_call_type) {
    pybind11::object name = Attr(r.ptr(), "name");
    placeholder = name && PyUnicode_Check(name.ptr()) && Utf8(name.ptr()) == rule.name;
    PyErr_Clear();
    if (!placeholder) wrapper = WrapsPlaceholder(r.ptr(), rule.name);
  }
  // fn may have run Python that constructed objects: look again.
  it = instances_.find(obj);
  if ((placeholder || wrapper) && it != instances_.end() && !it->second.construction.empty()) {
    // The construction call stands for it, from now on while its modes stay.
    KeyWriter local;
    if (wrapper) local.BeginObject(*wrapper, 1, 0);
    local.Raw(it->second.construction);
    it->second.encoded = std::string(local.view());
    it->second.profiles = it->second.construction_profiles;
    it->second.described = true;
    it->second.modes = modes;
    return WriteEncoded(it->second.encoded, it->second.profiles, w);
  }
  if (!r) return WriteOpaque(Py_TYPE(obj), w);
  KeyWriter local;
  Write(r.ptr(), &local, depth + 1);
  WriteEncoded(local.view(), local.profiles(), w);
  if (Instance* entry = Entry(obj)) {
    entry->encoded = std::string(local.view());
    entry->profiles = local.profiles();
    entry->described = true;
    entry->modes = modes;
  }
}

void Converter::WriteEncoded(std::string_view encoded, const std::vector<ValueProfile>& profiles, KeyWriter* w) {
  // The profiles go with the bytes, in their order: the aggregator pairs a
  // call's profiles with its profiled tensors' paths by their order.
  w->Raw(encoded);
  for (const ValueProfile& p : profiles) w->AddProfile(p);
}

void Converter::RememberConstruction(PyObject* obj, std::string encoded, std::vector<ValueProfile> profiles) {
  if (Instance* entry = Entry(obj)) {
    entry->construction = std::move(encoded);
    entry->construction_profiles = std::move(profiles);
  }
}

Converter::Instance* Converter::Entry(PyObject* obj) {
  if (auto it = instances_.find(obj); it != instances_.end()) return &it->second;
  pybind11::object key = Steal(PyLong_FromVoidPtr(obj));
  pybind11::object callback = key ? Steal(PyCFunction_New(&kForgetDef, key.ptr())) : pybind11::object();
  pybind11::object ref = callback ? Steal(PyWeakref_NewRef(obj, callback.ptr())) : pybind11::object();
  if (!ref) {  // not weak-referenceable: not cached
    PyErr_Clear();
    return nullptr;
  }
  Instance& entry = instances_[obj];
  entry.weakref = std::move(ref);
  return &entry;
}

void Converter::ForgetInstance(PyObject* obj) { instances_.erase(obj); }

}  // namespace api_tracer::python
