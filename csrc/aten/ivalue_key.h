// IValue -> call key (key.h), for aten operators seen by the native observer.
//
// An OpSignature is what the key writer needs of an operator's schema: its
// name as a config names it ("torch.ops.aten.add.Tensor"), and per argument
// its name, whether it is keyword-only, its default, and whether an int in
// it stands for a dtype, layout or memory format. Arguments are split the
// way PyTorch hands them to a Python dispatch mode: positional arguments up
// to the last one that differs from its default, then keyword-only
// arguments that differ from their defaults. So level 3 writes the same
// config line as level 2 for the same call. An argument is its default when
// it is written as the default is: an absent optional tensor (an undefined
// tensor, which callers in C++ pass) is None, as a Python caller's None is,
// though PyTorch's own comparison keeps it; level 2 leaves it out too
// (python/hooks.cc), so that a replay, whose None PyTorch leaves out, is
// traced as the very same line.
// Thread-safety: an OpSignature is immutable; the writers keep no state.
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aten/tensor_fields.h"
#include "core/key.h"

namespace api_tracer::aten {

struct OpSignature {
  enum class Kind { kGeneric, kScalarType, kLayout, kMemoryFormat };
  struct Arg {
    std::string name;
    bool kwarg_only;
    Kind kind;
    std::optional<c10::IValue> default_value;
    c10::TypePtr type;  // as the schema declares it
    // Whether `v` is this argument's default (most defaults are None, a bool,
    // an int or a double: those compare without IValue::equals).
    bool IsDefault(const c10::IValue& v) const;
  };

  explicit OpSignature(const c10::FunctionSchema& schema);
  // The signature of the operator registered as `name` ("aten::add") and
  // `overload` ("Tensor"; "" for the default), or nullptr if there is none.
  static std::shared_ptr<const OpSignature> Find(const std::string& name, const std::string& overload);

  std::string api;  // torch.ops.NAMESPACE.NAME.OVERLOAD
  std::vector<Arg> args;
};

// Per-call scratch; `value_ranges` asks for the profiles of integer and
// bool tensors, `float_ranges` of floating ones too (IsProfiledDtype).
struct WriteContext {
  TensorScratch scratch;
  bool value_ranges = false;
  bool float_ranges = false;
};

// Writes the call of `sig` with `inputs` (RecordFunction::inputs()).
void WriteOpCall(const OpSignature& sig, ApiId api, c10::ArrayRef<const c10::IValue> inputs, WriteContext* ctx,
                 KeyWriter* w);

}  // namespace api_tracer::aten
