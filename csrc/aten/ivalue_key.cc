#include "aten/ivalue_key.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/jit_type.h>

namespace api_tracer::aten {
namespace {

OpSignature::Kind KindOf(const c10::TypePtr& real_type) {
  c10::TypePtr t = real_type;
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  switch (t->kind()) {
    case c10::TypeKind::ScalarTypeType: return OpSignature::Kind::kScalarType;
    case c10::TypeKind::LayoutType: return OpSignature::Kind::kLayout;
    case c10::TypeKind::MemoryFormatType: return OpSignature::Kind::kMemoryFormat;
    default: return OpSignature::Kind::kGeneric;
  }
}

std::string_view MemoryFormatName(int64_t m) {
  switch (static_cast<c10::MemoryFormat>(m)) {
    case c10::MemoryFormat::Contiguous: return "torch.contiguous_format";
    case c10::MemoryFormat::Preserve: return "torch.preserve_format";
    case c10::MemoryFormat::ChannelsLast: return "torch.channels_last";
    case c10::MemoryFormat::ChannelsLast3d: return "torch.channels_last_3d";
    default: return "torch.memory_format_unknown";
  }
}

void WriteOpaque(std::string_view what, KeyWriter* w) {
  w->BeginObject("Opaque", 1, 0);
  w->Str(what);
}

void WriteIValue(const c10::IValue& v, OpSignature::Kind kind, WriteContext* ctx, KeyWriter* w, int depth);

void WriteItems(c10::ArrayRef<c10::IValue> items, bool tuple, WriteContext* ctx, KeyWriter* w, int depth) {
  tuple ? w->BeginTuple(items.size()) : w->BeginList(items.size());
  for (const auto& item : items) WriteIValue(item, OpSignature::Kind::kGeneric, ctx, w, depth + 1);
}

void WriteSymInt(const c10::SymInt& s, KeyWriter* w) {
  if (auto i = s.maybe_as_int()) return w->Int(*i);
  w->BeginObject("torch.SymInt", 1, 0);
  w->Str(s.toSymNodeImplUnowned()->str());
}

void WriteIValue(const c10::IValue& v, OpSignature::Kind kind, WriteContext* ctx, KeyWriter* w, int depth) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  if (depth > kMaxValueDepth) return WriteOpaque("list", w);
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return w->None();  // an absent optional tensor: None, as Python sees it
    // A Python number passed where the schema takes a Tensor (torch.mul(x,
    // 2)) travels as a 0-dim CPU "wrapped number": write the number, as
    // PyTorch does when it hands the call to a Python dispatch mode.
    if (t.defined() && t.unsafeGetTensorImpl()->is_wrapped_number()) {
      switch (t.scalar_type()) {
        case at::kLong: return w->Int(*t.const_data_ptr<int64_t>());
        case at::kDouble: return w->Float(*t.const_data_ptr<double>());
        case at::kBool: return w->Bool(*t.const_data_ptr<bool>());
        case at::kComplexDouble: {
          auto c = *t.const_data_ptr<c10::complex<double>>();
          return w->Complex(c.real(), c.imag());
        }
        default: break;
      }
    }
    TensorFields f;
    if (!ReadTensor(t, &ctx->scratch, &f)) return WriteOpaque("torch.Tensor", w);
    w->Tensor(f);
    if (ctx->value_ranges && IsProfiledDtype(f.dtype, ctx->float_ranges)) w->AddProfile(ReadValueProfile(t));
    return;
  }
  if (v.isNone()) return w->None();
  if (v.isBool()) return w->Bool(v.toBool());
  if (v.isInt()) {
    int64_t i = v.toInt();
    switch (kind) {
      case OpSignature::Kind::kScalarType: return w->Symbol(DtypeSymbol(static_cast<c10::ScalarType>(i)));
      case OpSignature::Kind::kLayout: {
        std::string_view name = LayoutName(static_cast<c10::Layout>(i));
        return w->Symbol(name.empty() ? "torch.strided" : name);
      }
      case OpSignature::Kind::kMemoryFormat: return w->Symbol(MemoryFormatName(i));
      default: return w->Int(i);
    }
  }
  if (v.isDouble()) return w->Float(v.toDouble());
  if (v.isComplexDouble()) {
    auto c = v.toComplexDouble();
    return w->Complex(c.real(), c.imag());
  }
  if (v.isString()) return w->Str(v.toStringRef());
  if (v.isSymInt()) return WriteSymInt(v.toSymInt(), w);
  if (v.isSymFloat()) {
    const c10::SymFloat& f = v.toSymFloat();
    if (!f.is_symbolic()) return w->Float(f.as_float_unchecked());
    w->BeginObject("torch.SymFloat", 1, 0);
    return w->Str(f.toSymNodeImpl()->str());
  }
  if (v.isSymBool()) {
    const c10::SymBool& b = v.toSymBool();
    if (auto c = b.maybe_as_bool()) return w->Bool(*c);
    w->BeginObject("torch.SymBool", 1, 0);
    return w->Str(b.toSymNodeImplUnowned()->str());
  }
  if (v.isIntList()) {
    auto list = v.toIntList();
    w->BeginList(list.size());
    for (int64_t i : list) w->Int(i);
    return;
  }
  if (v.isSymIntList()) {
    auto list = v.toSymIntList();
    w->BeginList(list.size());
    for (const c10::SymInt& s : list) WriteSymInt(s, w);
    return;
  }
  if (v.isList()) return WriteItems(v.toListRef(), false, ctx, w, depth);
  if (v.isTuple()) return WriteItems(v.toTupleRef().elements(), true, ctx, w, depth);
  if (v.isGenericDict()) {
    auto dict = v.toGenericDict();
    w->BeginDict(dict.size());
    for (const auto& entry : dict) {
      WriteIValue(entry.key(), OpSignature::Kind::kGeneric, ctx, w, depth + 1);
      WriteIValue(entry.value(), OpSignature::Kind::kGeneric, ctx, w, depth + 1);
    }
    return;
  }
  if (v.isDevice()) {
    w->BeginObject("torch.device", 1, 0);
    return w->Str(DeviceName(v.toDevice()));
  }
  if (v.isGenerator()) {
    w->BeginObject("torch.Generator", 0, 1);
    w->Keyword("device");
    return w->Str(DeviceName(v.toGenerator().device()));
  }
  if (v.isStorage()) {  // Storage(nbytes), as levels 0-2 write a torch.UntypedStorage (python/convert.cc)
    const c10::Storage& storage = v.toStorage();
    auto nbytes = storage.unsafeGetStorageImpl() ? storage.sym_nbytes().maybe_as_int() : std::nullopt;
    if (!nbytes) return WriteOpaque("Storage", w);  // freed, or of a symbolic size
    w->BeginObject("Storage", 1, 0);
    return w->Int(*nbytes);
  }
  return WriteOpaque(v.tagKind(), w);
}

}  // namespace

bool OpSignature::Arg::IsDefault(const c10::IValue& v) const {
  if (!default_value) return false;
  const c10::IValue& d = *default_value;
  if (d.isNone()) return v.isNone() || (v.isTensor() && !v.toTensor().defined());  // both written None
  if (d.isBool()) return v.isBool() && v.toBool() == d.toBool();
  if (d.isInt()) return v.isInt() && v.toInt() == d.toInt();
  if (d.isDouble()) return v.isDouble() && v.toDouble() == d.toDouble();
  if (v.isTensor()) return false;
  return d == v;
}

OpSignature::OpSignature(const c10::FunctionSchema& schema) {
  const std::string& name = schema.name();  // "aten::add"
  size_t colons = name.find("::");
  api = "torch.ops.";
  if (colons == std::string::npos) {
    api += name;
  } else {
    api.append(name, 0, colons).append(".").append(name, colons + 2);
  }
  api += ".";
  api += schema.overload_name().empty() ? "default" : schema.overload_name();
  for (const c10::Argument& a : schema.arguments()) {
    args.push_back({a.name(), a.kwarg_only(), KindOf(a.real_type()), a.default_value(), a.type()});
  }
}

std::shared_ptr<const OpSignature> OpSignature::Find(const std::string& name, const std::string& overload) {
  std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findSchema({name, overload});
  return op ? std::make_shared<const OpSignature>(op->schema()) : nullptr;
}

void WriteOpCall(const OpSignature& sig, ApiId api, c10::ArrayRef<const c10::IValue> inputs, WriteContext* ctx,
                 KeyWriter* w) {
  if (inputs.size() != sig.args.size()) {  // not the schema's shape: all positional
    w->BeginCall(api, inputs.size());
    for (const auto& v : inputs) WriteIValue(v, OpSignature::Kind::kGeneric, ctx, w, 0);
    return w->BeginKwargs(0);
  }
  auto is_default = [&](size_t i) { return sig.args[i].IsDefault(inputs[i]); };
  size_t kwarg_start = sig.args.size();
  while (kwarg_start > 0 && sig.args[kwarg_start - 1].kwarg_only) --kwarg_start;
  size_t positional_end = kwarg_start;
  while (positional_end > 0 && is_default(positional_end - 1)) --positional_end;
  w->BeginCall(api, positional_end);
  for (size_t i = 0; i < positional_end; ++i) WriteIValue(inputs[i], sig.args[i].kind, ctx, w, 0);
  size_t nkwargs = 0;
  for (size_t i = kwarg_start; i < sig.args.size(); ++i) nkwargs += !is_default(i);
  w->BeginKwargs(nkwargs);
  for (size_t i = kwarg_start; i < sig.args.size(); ++i) {
    if (is_default(i)) continue;
    w->Keyword(sig.args[i].name);
    WriteIValue(inputs[i], sig.args[i].kind, ctx, w, 0);
  }
}

}  // namespace api_tracer::aten
