// Value: one argument of a captured API call, abstracted the way a config
// line writes it (tensors by shape and dtype, everything else by value).
//
// A Value is a small tree. It is built on the cold path only: when a config
// is seen for the first time (decoded from its key, see key.h), or when a
// config line is parsed. The hot path never builds Values.
// Ownership: a Value owns its children. Thread-safety: a plain value type.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace api_tracer {

// What a tensor argument is reduced to.
// The quantization scheme a scale and zero point imply (a config line
// writes only those for it).
inline constexpr std::string_view kPerTensorAffine = "torch.per_tensor_affine";

struct TensorInfo {
  std::vector<int64_t> shape;
  std::string dtype = "float32";  // Python's name without "torch."
  std::string device = "cpu";     // torch.device's str(): "cpu", "cuda:0"
  // Empty when the tensor is contiguous; else one stride per dimension.
  std::vector<int64_t> stride;
  bool requires_grad = false;
  // Empty for torch.strided; else the layout's Python name ("torch.sparse_coo").
  std::string layout;
  // Empty for torch.Tensor itself; else the subclass's qualified name.
  std::string subclass;
  // Sparse layouts: the number of specified elements (-1: not sparse).
  int64_t nnz = -1;
  // Quantized dtypes: the scheme's Python name ("torch.per_tensor_affine");
  // per tensor its scale and zero point, per channel its axis.
  std::string qscheme;
  double scale = 0;
  int64_t zero_point = 0;
  int64_t axis = -1;
  // A strided tensor that does not cover its storage (a view into a larger
  // one: a slice, a chunk, as_strided's window): its offset in it and the
  // storage's size, in elements; -1: it covers its storage, from its start.
  int64_t storage_offset = -1;
  int64_t storage_size = -1;

  bool operator==(const TensorInfo&) const = default;
};

// The kinds of Value, in order, as X(kind) for each:
//   kInt     fits in int64
//   kBigInt  an integer beyond int64, kept as its decimal digits in text()
//   kDict    items(): key0, value0, key1, value1, ...
//   kSlice   items(): start, stop, step
//   kSymbol  a named constant written bare: torch.float16, torch.strided
//   kObject  NAME(args..., kw=v...): torch.device("cpu"), torch.Size([2]),
//            torch.nn.Linear(3, 4), and placeholders such as Opaque("T")
//
// Adding a kind? Add it here; then each place below stops the build (an
// API_TRACER_HANDLES_VALUE_KINDS(n) beside it) until it handles the kind and
// its `n` is raised to the new number of kinds:
//   core/value.h, value.cc      a constructor; operator==
//   core/key.cc                 a tag; KeyWriter::Write, and the decoder
//   core/format.cc              FormatValue: its config-line text
//   core/parse.cc               the grammar that reads that text back; Hashable
//   core/yaml.cc                ValueWriter: its YAML form (and docs/format.md)
//   core/aggregator.cc          CollectRangePaths: tensors inside it
//   python/config_bindings.cc   ToPython (and src/api_tracer/values.py)
//   python/convert.cc           Converter::Write: the Python objects that are it
//   aten/ivalue_key.cc          WriteIValue: the IValues that are it
//   core/test_values.h          EveryKind(): values of it, which the key, parse
//                               and YAML tests round-trip (value_test.cc fails
//                               while there is none)
// clang-format off
#define API_TRACER_VALUE_KINDS(X)                                                 \
  X(kNone) X(kBool) X(kInt) X(kBigInt) X(kFloat) X(kComplex) X(kStr) X(kEllipsis) \
  X(kList) X(kTuple) X(kDict) X(kSlice) X(kTensor) X(kSymbol) X(kObject)
// clang-format on

class Value {
 public:
#define API_TRACER_KIND_ENUMERATOR(kind) kind,
#define API_TRACER_KIND_PLUS_ONE(kind) +1
  enum class Kind : uint8_t { API_TRACER_VALUE_KINDS(API_TRACER_KIND_ENUMERATOR) };
  static constexpr int kNumKinds = 0 API_TRACER_VALUE_KINDS(API_TRACER_KIND_PLUS_ONE);
#undef API_TRACER_KIND_ENUMERATOR
#undef API_TRACER_KIND_PLUS_ONE

  Value() = default;

  static Value None() { return Value(Kind::kNone); }
  static Value Bool(bool b) {
    Value v(Kind::kBool);
    v.int_ = b;
    return v;
  }
  static Value Int(int64_t i) {
    Value v(Kind::kInt);
    v.int_ = i;
    return v;
  }
  static Value BigInt(std::string digits) {
    Value v(Kind::kBigInt);
    v.text_ = std::move(digits);
    return v;
  }
  // NaNs are stored as the one canonical quiet NaN: the text says "nan"
  // whatever the sign or payload, and equal text must mean equal values.
  static Value Float(double d);
  static Value Complex(double re, double im);
  static Value Str(std::string s) {
    Value v(Kind::kStr);
    v.text_ = std::move(s);
    return v;
  }
  static Value Ellipsis() { return Value(Kind::kEllipsis); }
  static Value List(std::vector<Value> items) { return Container(Kind::kList, std::move(items)); }
  static Value Tuple(std::vector<Value> items) { return Container(Kind::kTuple, std::move(items)); }
  // `items` alternates keys and values.
  static Value Dict(std::vector<Value> items) { return Container(Kind::kDict, std::move(items)); }
  static Value Slice(Value start, Value stop, Value step);
  static Value Tensor(TensorInfo info);
  static Value Symbol(std::string name) {
    Value v(Kind::kSymbol);
    v.text_ = std::move(name);
    return v;
  }
  // The last `keywords.size()` items are keyword arguments, named in order.
  static Value Object(std::string name, std::vector<Value> items, std::vector<std::string> keywords = {});

  Kind kind() const { return kind_; }
  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double real() const { return real_; }
  double imag() const { return imag_; }
  // kStr: the string; kBigInt: the digits; kSymbol and kObject: the name.
  const std::string& text() const { return text_; }
  const std::vector<Value>& items() const { return items_; }
  // kObject: the names of its keyword arguments.
  const std::vector<std::string>& keywords() const { return keywords_; }
  size_t positional_count() const { return items_.size() - keywords_.size(); }
  const TensorInfo& tensor() const { return *tensor_; }

  // Structural equality. Floats compare by bits, so that nan == nan and
  // 0.0 != -0.0: what matters is that the same text is written.
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

 private:
  explicit Value(Kind k) : kind_(k) {}
  static Value Container(Kind k, std::vector<Value> items) {
    Value v(k);
    v.items_ = std::move(items);
    return v;
  }

  Kind kind_ = Kind::kNone;
  int64_t int_ = 0;
  double real_ = 0;
  double imag_ = 0;
  std::string text_;
  std::vector<Value> items_;
  std::vector<std::string> keywords_;
  std::shared_ptr<const TensorInfo> tensor_;
};

// Beside each place that handles every kind of Value (the list is above
// API_TRACER_VALUE_KINDS): `n` is the number of kinds it handles, so adding a
// kind stops the build there until the place is updated.
#define API_TRACER_HANDLES_VALUE_KINDS(n)                                          \
  static_assert(::api_tracer::Value::kNumKinds == (n),                             \
                "a kind of Value was added: handle it here, then raise the count " \
                "(core/value.h lists every such place)")

// `d`, or the canonical quiet NaN when `d` is any NaN.
double CanonicalNan(double d);

// One API call: the API's dotted name, positional arguments as passed, then
// keyword arguments as passed.
struct Call {
  std::string api;
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;

  bool operator==(const Call&) const = default;
};

}  // namespace api_tracer
