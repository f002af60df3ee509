#include "core/key.h"

#include <cstring>

namespace api_tracer {
namespace {

enum Tag : uint8_t {
  kTagNone = 1,
  kTagFalse,
  kTagTrue,
  kTagInt,
  kTagBigInt,
  kTagFloat,
  kTagComplex,
  kTagStr,
  kTagEllipsis,
  kTagList,
  kTagTuple,
  kTagDict,
  kTagSlice,
  kTagTensor,
  kTagSymbol,
  kTagObject,
  kTagCall,
};

// Tensor flag bits.
enum : uint8_t {
  kHasStride = 1,
  kRequiresGrad = 2,
  kHasLayout = 4,
  kHasSubclass = 8,
  kHasNnz = 16,
  kQuantized = 32,
  kHasStorage = 64,
};

uint64_t ZigZag(int64_t i) { return (static_cast<uint64_t>(i) << 1) ^ static_cast<uint64_t>(i >> 63); }
int64_t UnZigZag(uint64_t u) { return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1); }

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  bool done() const { return pos_ == s_.size(); }

  bool Byte(uint8_t* b) {
    if (pos_ >= s_.size()) return false;
    *b = static_cast<uint8_t>(s_[pos_++]);
    return true;
  }
  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = result;
        return true;
      }
    }
    return false;
  }
  // A count of items that each take at least one byte: bounded by what is
  // left, so a corrupt count cannot make the decoder reserve huge memory.
  bool Count(uint64_t* n) { return Varint(n) && *n <= s_.size() - pos_; }
  // A string (skipped where out is null).
  bool Text(std::string* out) {
    uint64_t n;
    if (!Varint(&n) || n > s_.size() - pos_) return false;
    if (out) out->assign(s_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Double(double* d) {
    if (s_.size() - pos_ < sizeof(double)) return false;
    std::memcpy(d, s_.data() + pos_, sizeof(double));
    pos_ += sizeof(double);
    return true;
  }
  bool Int(int64_t* out) {
    uint64_t u;
    if (!Varint(&u)) return false;
    *out = UnZigZag(u);
    return true;
  }
  bool Ints(uint64_t n, std::vector<int64_t>* out) {
    out->resize(n);
    for (auto& x : *out) {
      uint64_t u;
      if (!Varint(&u)) return false;
      x = UnZigZag(u);
    }
    return true;
  }

  // A value; where out is null, only checked (nothing is built).
  bool Value(api_tracer::Value* out, int depth);
  bool Items(uint64_t n, std::vector<api_tracer::Value>* items, int depth) {
    if (!items) {
      for (uint64_t i = 0; i < n; ++i) {
        if (!Value(nullptr, depth + 1)) return false;
      }
      return true;
    }
    items->resize(n);
    for (auto& item : *items) {
      if (!Value(&item, depth + 1)) return false;
    }
    return true;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

constexpr int kMaxDepth = 200;

bool Reader::Value(api_tracer::Value* out, int depth) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  using V = api_tracer::Value;
  if (depth > kMaxDepth) return false;
  uint8_t tag;
  if (!Byte(&tag)) return false;
  switch (tag) {
    case kTagNone:
      if (out) *out = V::None();
      return true;
    case kTagFalse:
    case kTagTrue:
      if (out) *out = V::Bool(tag == kTagTrue);
      return true;
    case kTagInt: {
      uint64_t u;
      if (!Varint(&u)) return false;
      if (out) *out = V::Int(UnZigZag(u));
      return true;
    }
    case kTagBigInt:
    case kTagStr:
    case kTagSymbol: {
      std::string s;
      if (!Text(out ? &s : nullptr)) return false;
      if (!out) return true;
      *out = tag == kTagBigInt ? V::BigInt(std::move(s))
             : tag == kTagStr  ? V::Str(std::move(s))
                               : V::Symbol(std::move(s));
      return true;
    }
    case kTagFloat: {
      double d;
      if (!Double(&d)) return false;
      if (out) *out = V::Float(d);
      return true;
    }
    case kTagComplex: {
      double re, im;
      if (!Double(&re) || !Double(&im)) return false;
      if (out) *out = V::Complex(re, im);
      return true;
    }
    case kTagEllipsis:
      if (out) *out = V::Ellipsis();
      return true;
    case kTagList:
    case kTagTuple:
    case kTagDict: {
      uint64_t n;
      if (!Count(&n)) return false;
      if (tag == kTagDict) n *= 2;
      std::vector<V> items;
      if (!Items(n, out ? &items : nullptr, depth)) return false;
      if (!out) return true;
      *out = tag == kTagList    ? V::List(std::move(items))
             : tag == kTagTuple ? V::Tuple(std::move(items))
                                : V::Dict(std::move(items));
      return true;
    }
    case kTagSlice: {
      std::vector<V> items;
      if (!Items(3, out ? &items : nullptr, depth)) return false;
      if (!out) return true;
      *out = V::Slice(std::move(items[0]), std::move(items[1]), std::move(items[2]));
      return true;
    }
    case kTagTensor: {
      thread_local TensorInfo scratch;  // a check's: its buffers reused, its values ignored
      TensorInfo built;
      TensorInfo& t = out ? built : scratch;
      uint8_t flags;
      uint64_t ndim;
      if (!Byte(&flags) || !Count(&ndim) || !Ints(ndim, &t.shape)) return false;
      if ((flags & kHasStride) && !Ints(ndim, &t.stride)) return false;
      if (!Text(out ? &t.dtype : nullptr) || !Text(out ? &t.device : nullptr)) return false;
      t.requires_grad = flags & kRequiresGrad;
      if ((flags & kHasLayout) && !Text(out ? &t.layout : nullptr)) return false;
      if ((flags & kHasSubclass) && !Text(out ? &t.subclass : nullptr)) return false;
      if ((flags & kHasNnz) && !Int(&t.nnz)) return false;
      if ((flags & kQuantized) &&
          !(Text(out ? &t.qscheme : nullptr) && Double(&t.scale) && Int(&t.zero_point) && Int(&t.axis))) {
        return false;
      }
      if ((flags & kHasStorage) && !(Int(&t.storage_offset) && Int(&t.storage_size))) return false;
      if (out) *out = V::Tensor(std::move(t));
      return true;
    }
    case kTagObject: {
      std::string name;
      uint64_t nargs, nkwargs;
      if (!Text(out ? &name : nullptr) || !Count(&nargs) || !Count(&nkwargs)) return false;
      if (!out) {
        if (!Items(nargs, nullptr, depth)) return false;
        for (uint64_t i = 0; i < nkwargs; ++i) {
          if (!Text(nullptr) || !Value(nullptr, depth + 1)) return false;
        }
        return true;
      }
      std::vector<V> items(nargs + nkwargs);
      std::vector<std::string> keywords(nkwargs);
      for (uint64_t i = 0; i < nargs; ++i) {
        if (!Value(&items[i], depth + 1)) return false;
      }
      for (uint64_t i = 0; i < nkwargs; ++i) {
        if (!Text(&keywords[i]) || !Value(&items[nargs + i], depth + 1)) return false;
      }
      *out = V::Object(std::move(name), std::move(items), std::move(keywords));
      return true;
    }
    default: return false;
  }
}

}  // namespace

void KeyWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    buf_.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  buf_.push_back(static_cast<char>(v));
}

void KeyWriter::Text(std::string_view s) {
  Varint(s.size());
  buf_.append(s);
}

void KeyWriter::Double(double d) {
  d = CanonicalNan(d);
  char bytes[sizeof d];
  std::memcpy(bytes, &d, sizeof d);
  buf_.append(bytes, sizeof d);
}

void KeyWriter::BeginCall(ApiId api, size_t nargs) {
  Tag(kTagCall);
  Varint(api);
  Varint(nargs);
}
void KeyWriter::BeginKwargs(size_t nkwargs) { Varint(nkwargs); }
void KeyWriter::Keyword(std::string_view name) { Text(name); }

void KeyWriter::None() { Tag(kTagNone); }
void KeyWriter::Bool(bool b) { Tag(b ? kTagTrue : kTagFalse); }
void KeyWriter::Int(int64_t i) {
  Tag(kTagInt);
  Varint(ZigZag(i));
}
void KeyWriter::BigInt(std::string_view digits) {
  Tag(kTagBigInt);
  Text(digits);
}
void KeyWriter::Float(double d) {
  Tag(kTagFloat);
  Double(d);
}
void KeyWriter::Complex(double re, double im) {
  Tag(kTagComplex);
  Double(re);
  Double(im);
}
void KeyWriter::Str(std::string_view s) {
  Tag(kTagStr);
  Text(s);
}
void KeyWriter::Ellipsis() { Tag(kTagEllipsis); }
void KeyWriter::BeginList(size_t n) {
  Tag(kTagList);
  Varint(n);
}
void KeyWriter::BeginTuple(size_t n) {
  Tag(kTagTuple);
  Varint(n);
}
void KeyWriter::BeginDict(size_t n) {
  Tag(kTagDict);
  Varint(n);
}
void KeyWriter::BeginSlice() { Tag(kTagSlice); }
void KeyWriter::Symbol(std::string_view name) {
  Tag(kTagSymbol);
  Text(name);
}
void KeyWriter::BeginObject(std::string_view name, size_t nargs, size_t nkwargs) {
  Tag(kTagObject);
  Text(name);
  Varint(nargs);
  Varint(nkwargs);
}

void KeyWriter::Tensor(const TensorFields& t) {
  Tag(kTagTensor);
  uint8_t flags = (t.stride.empty() ? 0 : kHasStride) | (t.requires_grad ? kRequiresGrad : 0) |
                  (t.layout.empty() ? 0 : kHasLayout) | (t.subclass.empty() ? 0 : kHasSubclass) |
                  (t.nnz < 0 ? 0 : kHasNnz) | (t.qscheme.empty() ? 0 : kQuantized) |
                  (t.storage_size < 0 ? 0 : kHasStorage);
  buf_.push_back(static_cast<char>(flags));
  Varint(t.shape.size());
  for (int64_t d : t.shape) Varint(ZigZag(d));
  for (int64_t s : t.stride) Varint(ZigZag(s));
  Text(t.dtype);
  Text(t.device);
  if (!t.layout.empty()) Text(t.layout);
  if (!t.subclass.empty()) Text(t.subclass);
  if (t.nnz >= 0) Varint(ZigZag(t.nnz));
  if (!t.qscheme.empty()) {
    Text(t.qscheme);
    Double(t.scale);
    Varint(ZigZag(t.zero_point));
    Varint(ZigZag(t.axis));
  }
  if (t.storage_size >= 0) {
    Varint(ZigZag(t.storage_offset));
    Varint(ZigZag(t.storage_size));
  }
}

void KeyWriter::Write(const Value& v) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kNone: return None();
    case K::kBool: return Bool(v.as_bool());
    case K::kInt: return Int(v.as_int());
    case K::kBigInt: return BigInt(v.text());
    case K::kFloat: return Float(v.real());
    case K::kComplex: return Complex(v.real(), v.imag());
    case K::kStr: return Str(v.text());
    case K::kEllipsis: return Ellipsis();
    case K::kSymbol: return Symbol(v.text());
    case K::kList:
    case K::kTuple:
      v.kind() == K::kList ? BeginList(v.items().size()) : BeginTuple(v.items().size());
      for (const auto& item : v.items()) Write(item);
      return;
    case K::kDict:
      BeginDict(v.items().size() / 2);
      for (const auto& item : v.items()) Write(item);
      return;
    case K::kSlice:
      BeginSlice();
      for (const auto& item : v.items()) Write(item);
      return;
    case K::kTensor: {
      const TensorInfo& t = v.tensor();
      return Tensor({t.shape, t.stride, t.dtype, t.device, t.requires_grad, t.layout, t.subclass, t.nnz, t.qscheme,
                     t.scale, t.zero_point, t.axis, t.storage_offset, t.storage_size});
    }
    case K::kObject: {
      size_t npos = v.positional_count();
      BeginObject(v.text(), npos, v.keywords().size());
      for (size_t i = 0; i < npos; ++i) Write(v.items()[i]);
      for (size_t i = 0; i < v.keywords().size(); ++i) {
        Keyword(v.keywords()[i]);
        Write(v.items()[npos + i]);
      }
      return;
    }
  }
}

Status DecodeCall(std::string_view key, ApiId* api, Call* out) {
  Reader r(key);
  uint8_t tag;
  uint64_t id, nargs, nkwargs;
  if (!r.Byte(&tag) || tag != kTagCall || !r.Varint(&id) || !r.Count(&nargs)) {
    return Status::Corruption("bad call key header");
  }
  *api = static_cast<ApiId>(id);
  if (out) out->api.clear();
  if (!r.Items(nargs, out ? &out->args : nullptr, 0) || !r.Count(&nkwargs)) {
    return Status::Corruption("bad call key arguments");
  }
  if (out) out->kwargs.resize(nkwargs);
  for (uint64_t i = 0; i < nkwargs; ++i) {
    auto* kwarg = out ? &out->kwargs[i] : nullptr;
    if (!r.Text(kwarg ? &kwarg->first : nullptr) || !r.Value(kwarg ? &kwarg->second : nullptr, 0)) {
      return Status::Corruption("bad call key keyword arguments");
    }
  }
  if (!r.done()) return Status::Corruption("trailing bytes in call key");
  return Status::OK();
}

bool IsIntegralDtype(std::string_view dtype) {
  return dtype == "bool" || dtype == "int64" || dtype == "int32" || dtype == "int16" || dtype == "int8" ||
         dtype == "uint8" || dtype == "uint16" || dtype == "uint32" || dtype == "uint64";
}

bool IsFloatingDtype(std::string_view dtype) { return dtype.starts_with("float") || dtype == "bfloat16"; }

std::string EncodeValue(const Value& v) {
  KeyWriter w;
  w.Write(v);
  return std::string(w.view());
}

Status DecodeValue(std::string_view encoded, Value* out) {
  Reader r(encoded);
  if (!r.Value(out, 0) || !r.done()) return Status::Corruption("bad encoded value");
  return Status::OK();
}

}  // namespace api_tracer
