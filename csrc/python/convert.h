// Converter: Python call arguments -> a call key (key.h), in C++.
//
// Tensors, torch.Size/dtype/device/layout/memory_format/qscheme/Generator
// and the builtin types are read natively (tensor metadata through
// THPVariable_Unpack, never through Python attribute calls). Any other type
// is classified once, by the dialect's Python `classify(type)` callback,
// which answers (RuleKind, payload), bound as _C.Rule:
//   (Rule.opaque, name)    -> Opaque("name")
//   (Rule.replace, fn)     -> fn(obj)'s value is written instead
//   (Rule.instance, fn[, placeholder[, modes]])
//                          -> like replace, but computed once per object
//                             (modules: their constructor call) and cached
//                             until the object dies. Where fn answers a Call
//                             named `placeholder` (it cannot write the object
//                             as a call that rebuilds it), the constructor
//                             call level 0 saw making the object, if it saw
//                             it, is written instead (inside Eval(...) where
//                             fn answers Eval(placeholder)). With `modes`
//                             True the object is a torch.nn.Module whose
//                             written form also depends on the `training`
//                             flags of its submodules: it is computed again
//                             when they change (model.eval()); `modes`
//                             may name the attribute holding the children
//                             (a dict) where it is not `_modules`.
//   (Rule.tensor, reader)  -> a tensor of another framework, read by the
//                             TensorReader `reader` through the type's
//                             C-level attributes, with no Python frame
//                             (TensorReader below)
// and the answer is cached per type. Values built by the dialect use the
// classes of api_tracer.values (Call, Symbol, TensorSpec), read natively too.
//
// Writing never fails and never raises: a value that cannot be read becomes a
// placeholder naming its type, and any Python error is cleared.
// Thread-safety: the GIL must be held; one Converter per session.
#pragma once

#include <string>
#include <unordered_map>

#include "core/key.h"
#include "python/objects.h"

namespace api_tracer::python {

// How the values of a type are written (see above).
enum class RuleKind { kOpaque, kReplace, kInstance, kTensor };

// How a framework other than torch exposes its tensors' fields, named by a
// dialect (Rule.tensor): attributes read with the C API (a C-level getter
// costs a few tens of nanoseconds, no Python frame), so that such a tensor
// is written as natively as torch's are.
struct TensorReader {
  pybind11::object shape;            // attribute: a sequence of ints
  pybind11::object dtype;            // attribute: the dtype object,
  ObjectMap<std::string> dtypes;     //   named by this table ("float32")
  pybind11::object dtype_name;       //   or, for one not in it, by this callable (null: Opaque)
  pybind11::object stride;           // attribute: a sequence of ints, written where not contiguous (null: none)
  pybind11::object requires_grad;    // attribute: a bool (null: never)
  bool grad_negated = false;         //   that says the opposite (Paddle's stop_gradient)
  pybind11::object device;           // callable(tensor) -> str, asked only where devices are shown (null: "cpu")
  pybind11::object values;           // callable(tensor) -> a C-contiguous int64 or float64 buffer of
                            //   its values, asked only for value profiles (null: none)
};

// A call's arguments as CPython hands them over: either a vectorcall
// (args[0..nargs) positional, then the values named by kwnames), or a tuple
// and an optional dict.
struct CallArgs {
  PyObject* const* args = nullptr;
  size_t nargs = 0;
  PyObject* kwnames = nullptr;  // tuple of str, or nullptr
  PyObject* kwargs = nullptr;  // dict, or nullptr (tuple form only)

  static CallArgs Vector(PyObject* const* args, size_t nargs, PyObject* kwnames) {
    return {args, nargs, kwnames, nullptr};
  }
  static CallArgs Tuple(PyObject* tuple, PyObject* kwargs) {
    return {&PyTuple_GET_ITEM(tuple, 0), static_cast<size_t>(PyTuple_GET_SIZE(tuple)), nullptr,
            kwargs && PyDict_Check(kwargs) ? kwargs : nullptr};
  }
  // The same call without its first positional argument (a bound self).
  CallArgs DropFirst() const {
    CallArgs c = *this;
    if (c.nargs) {
      ++c.args;
      --c.nargs;
    }
    return c;
  }
};

class Converter {
 public:
  // `classify` is the dialect's callback described above; `tensor_type_name`
  // names a tensor subclass (e.g. "torch.nn.Parameter"). Either may be
  // nullptr. With `value_ranges`, integer and bool tensors also get their
  // ValueProfile; with `float_ranges` too, floating ones (IsProfiledDtype).
  // `devices`: the session shows devices (only then does a TensorReader's
  // device callable run).
  Converter(PyObject* classify, PyObject* tensor_type_name, bool value_ranges = false, bool float_ranges = false,
            bool devices = false);
  Converter(const Converter&) = delete;
  Converter& operator=(const Converter&) = delete;

  void WriteCall(ApiId api, const CallArgs& call, KeyWriter* w);
  // The call as a value: NAME(args..., kw=v...).
  void WriteObject(const std::string& name, const CallArgs& call, KeyWriter* w, int depth = 0);
  void Write(PyObject* obj, KeyWriter* w, int depth = 0);

  // Keeps the constructor call that made `obj` (level 0 saw it), encoded:
  // what stands for `obj` where the instance rule's fn cannot describe it.
  void RememberConstruction(PyObject* obj, std::string encoded, std::vector<ValueProfile> profiles);
  // Drops an instance entry; called by the weakref callback.
  void ForgetInstance(PyObject* obj);

 private:
  struct TypeRule {
    RuleKind kind;
    std::string name;  // kOpaque; kInstance: the placeholder's call name ("" if none)
    pybind11::object fn;  // kReplace, kInstance; kTensor: the TensorReader
    bool modes = false;  // kInstance: a module, whose training flags count,
    pybind11::object children;  // its children's attribute (interned str)
    const TensorReader* reader = nullptr;  // kTensor: fn's
  };
  struct Instance {
    std::string construction;  // the constructor call level 0 saw making it, encoded ("": none)
    std::vector<ValueProfile> construction_profiles;  // the value profiles of the tensors it holds
    std::string encoded;  // what it is written as, once described
    std::vector<ValueProfile> profiles;  // ... and the value profiles of its tensors then, in their order
    bool described = false;
    uint64_t modes = 0;  // the training flags it was described with (TypeRule::modes)
    pybind11::object weakref;  // its callback forgets the entry
  };

  const TypeRule& Rule(PyTypeObject* type);
  void WriteTensor(PyObject* obj, KeyWriter* w);
  void WriteForeignTensor(PyObject* obj, const TensorReader& reader, KeyWriter* w);
  void WriteOpaque(PyTypeObject* type, KeyWriter* w);
  // Bytes encoded before (a described instance) and the profiles of their tensors.
  void WriteEncoded(std::string_view encoded, const std::vector<ValueProfile>& profiles, KeyWriter* w);
  void WriteValueObject(PyObject* obj, KeyWriter* w, int depth);
  void WriteInstance(PyObject* obj, const TypeRule& rule, KeyWriter* w, int depth);
  // The entry of `obj`, made (with the weak reference that forgets it) on
  // first use; nullptr where `obj` cannot be weakly referenced.
  Instance* Entry(PyObject* obj);
  void WriteArguments(const CallArgs& call, bool count_kwargs, KeyWriter* w, int depth = 0);
  const std::string& SubclassName(PyTypeObject* type);

  const pybind11::object classify_;
  const pybind11::object tensor_type_name_;
  const bool value_ranges_;
  const bool float_ranges_;
  const bool devices_;
  ObjectMap<TypeRule> rules_;  // by type
  ObjectMap<std::string> subclasses_;  // by tensor subclass
  std::unordered_map<PyObject*, Instance> instances_;  // an entry goes when its object dies
};

// Registers the Python classes of api_tracer.values (borrowed, kept alive by
// their module) so the converter can recognize them.
void SetValueTypes(PyObject* call, PyObject* symbol, PyObject* tensor_spec);

// The converter of the running session (nullptr when none); used by the
// weakref callbacks.
Converter* ActiveConverter();
void SetActiveConverter(Converter* c);

}  // namespace api_tracer::python
