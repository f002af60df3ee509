#include "aten/tensor_fields.h"

#include <optional>

#include <ATen/Dispatch.h>
#include <ATen/Functions.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <array>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace api_tracer::aten {

namespace {

// torch's name of a dtype: PyTorch's own for those it spells differently
// from c10, else c10's name lower-cased (newer or rarer dtypes).
std::string SpellDtype(c10::ScalarType t) {
  using S = c10::ScalarType;
  switch (t) {
    case S::Byte: return "uint8";
    case S::Char: return "int8";
    case S::Short: return "int16";
    case S::Int: return "int32";
    case S::Long: return "int64";
    case S::UInt16: return "uint16";
    case S::UInt32: return "uint32";
    case S::UInt64: return "uint64";
    case S::Half: return "float16";
    case S::Float: return "float32";
    case S::Double: return "float64";
    case S::BFloat16: return "bfloat16";
    case S::ComplexHalf: return "complex32";
    case S::ComplexFloat: return "complex64";
    case S::ComplexDouble: return "complex128";
    case S::Bool: return "bool";
    case S::QInt8: return "qint8";
    case S::QUInt8: return "quint8";
    case S::QInt32: return "qint32";
    case S::QUInt4x2: return "quint4x2";
    case S::QUInt2x4: return "quint2x4";
    case S::Float8_e5m2: return "float8_e5m2";
    case S::Float8_e4m3fn: return "float8_e4m3fn";
    case S::Float8_e5m2fnuz: return "float8_e5m2fnuz";
    case S::Float8_e4m3fnuz: return "float8_e4m3fnuz";
    default: {
      std::string name;
      for (char c : std::string(c10::toString(t))) name.push_back(static_cast<char>(std::tolower(c)));
      return name;
    }
  }
}

constexpr size_t kDtypes = static_cast<size_t>(c10::ScalarType::NumOptions);
constexpr size_t kTorchDot = 6;  // "torch."

// "torch.<name>" of every dtype, built once, never freed: views into it
// stay valid for the life of the process; no lock to read.
const std::array<std::string, kDtypes>& DtypeSymbols() {
  static const auto* table = [] {
    auto* t = new std::array<std::string, kDtypes>();
    for (size_t i = 0; i < kDtypes; ++i) (*t)[i] = "torch." + SpellDtype(static_cast<c10::ScalarType>(i));
    return t;
  }();
  return *table;
}

}  // namespace

std::string_view DtypeName(c10::ScalarType t) {
  auto i = static_cast<size_t>(t);
  if (i < kDtypes) return std::string_view(DtypeSymbols()[i]).substr(kTorchDot);
  // Past the table (not a dtype this torch numbers): spelled once, interned.
  static std::mutex mu;
  static std::unordered_map<size_t, std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = names.try_emplace(i);
  if (fresh) it->second = SpellDtype(t);
  return it->second;
}

std::string_view DtypeSymbol(c10::ScalarType t) {
  auto i = static_cast<size_t>(t);
  return i < kDtypes ? std::string_view(DtypeSymbols()[i]) : std::string_view("torch.undefined");
}

std::string_view DeviceName(c10::Device d) {
  if (d.is_cpu() && !d.has_index()) return "cpu";
  // Few distinct devices exist in a process: intern their names once.
  static std::mutex mu;
  static std::deque<std::string> storage;
  static std::unordered_map<int32_t, std::string_view> names;
  int32_t key = (static_cast<int32_t>(d.type()) << 16) | static_cast<uint16_t>(d.index());
  thread_local std::unordered_map<int32_t, std::string_view> local;
  if (auto it = local.find(key); it != local.end()) return it->second;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = names.try_emplace(key);
  if (fresh) it->second = storage.emplace_back(d.str());
  local.emplace(key, it->second);
  return it->second;
}

std::string_view LayoutName(c10::Layout l) {
  switch (l) {
    case c10::kStrided: return "";
    case c10::kSparse: return "torch.sparse_coo";
    case c10::kSparseCsr: return "torch.sparse_csr";
    case c10::kSparseCsc: return "torch.sparse_csc";
    case c10::kSparseBsr: return "torch.sparse_bsr";
    case c10::kSparseBsc: return "torch.sparse_bsc";
    case c10::kMkldnn: return "torch._mkldnn";
    case c10::kJagged: return "torch.jagged";
    default: return "torch.strided_unknown";
  }
}

// A quantized tensor's scheme, and its scale and zero point (per tensor) or
// axis (per channel).
static void ReadQuantizer(const at::Tensor& t, TensorFields* out) {
  switch (t.qscheme()) {
    case c10::kPerTensorAffine:
    case c10::kPerTensorSymmetric:
      out->qscheme = t.qscheme() == c10::kPerTensorAffine ? api_tracer::kPerTensorAffine : "torch.per_tensor_symmetric";
      out->scale = t.q_scale();
      out->zero_point = t.q_zero_point();
      return;
    case c10::kPerChannelAffine: out->qscheme = "torch.per_channel_affine"; break;
    case c10::kPerChannelSymmetric: out->qscheme = "torch.per_channel_symmetric"; break;
    default: out->qscheme = "torch.per_channel_affine_float_qparams"; break;
  }
  out->axis = t.q_per_channel_axis();
}

static void ReadSymInts(c10::SymIntArrayRef sizes, std::vector<int64_t>* out) {
  out->clear();
  for (const c10::SymInt& s : sizes) out->push_back(s.maybe_as_int().value_or(-1));
}

namespace {

// A view that does not cover its storage (from its start, to its end): its
// offset in the storage and the storage's size, in elements.
void ReadStorageWindow(const at::Tensor& t, TensorFields* out) {
  int64_t itemsize = static_cast<int64_t>(t.element_size());
  int64_t elements = itemsize ? static_cast<int64_t>(t.storage().nbytes()) / itemsize : 0;
  int64_t offset = t.storage_offset();
  int64_t spanned = 0;  // the elements from the first to the last one it holds
  if (t.numel() > 0) {
    spanned = 1;
    for (int64_t i = 0; i < t.dim(); ++i) spanned += (t.size(i) - 1) * std::abs(t.stride(i));
  }
  if (offset != 0 || spanned != elements) {
    out->storage_offset = offset;
    out->storage_size = elements;
  }
}

}  // namespace

bool ReadTensor(const at::Tensor& t, TensorScratch* scratch, TensorFields* out) {
  if (!t.defined() || t.is_nested()) return false;
  try {
    c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    bool symbolic = impl->has_symbolic_sizes_strides();
    if (symbolic) {
      ReadSymInts(t.sym_sizes(), &scratch->shape);
    } else {
      auto sizes = t.sizes();
      scratch->shape.assign(sizes.begin(), sizes.end());
    }
    scratch->stride.clear();
    c10::Layout layout = t.layout();
    if (layout == c10::kStrided) {
      bool contiguous = symbolic ? impl->sym_is_contiguous().maybe_as_bool().value_or(true) : t.is_contiguous();
      if (!contiguous) {
        if (symbolic) {
          ReadSymInts(t.sym_strides(), &scratch->stride);
        } else {
          auto strides = t.strides();
          scratch->stride.assign(strides.begin(), strides.end());
        }
      }
    }
    out->shape = scratch->shape;
    out->stride = scratch->stride;
    out->dtype = DtypeName(t.scalar_type());
    out->device = DeviceName(t.device());
    out->requires_grad = t.requires_grad();
    out->layout = LayoutName(layout);
    out->nnz = -1;
    out->qscheme = {};
    out->storage_offset = out->storage_size = -1;
    if (layout == c10::kStrided && !symbolic && impl->has_storage() && !t.is_quantized()) {
      ReadStorageWindow(t, out);
    }
    if (layout == c10::kSparse || layout == c10::kSparseCsr || layout == c10::kSparseCsc) {
      out->nnz = t._nnz();
    } else if (t.is_quantized()) {
      ReadQuantizer(t, out);
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

namespace {

// Tensors up to this many elements are profiled from a copy of their values
// in one pass; larger ones by reductions on their device.
constexpr int64_t kScanLimit = 1 << 16;

// Ranges up to this wide are counted value by value (bincount) in a large
// tensor; a wider one counts as many distinct values (no sort of the data).
constexpr int64_t kCountableRange = 4096;

// The distinct values of `values` (all in [lo, hi]), ascending, or none
// when there may be more than ValueProfile::kFew.
std::optional<std::vector<int64_t>> FewDistinct(const at::Tensor& values, int64_t lo, int64_t hi) {
  if (hi - lo >= kCountableRange) return std::nullopt;
  at::Tensor counts = at::bincount(values.sub(lo), {}, hi - lo + 1).cpu();
  const int64_t* c = counts.data_ptr<int64_t>();
  std::vector<int64_t> distinct;
  for (int64_t i = 0; i <= hi - lo; ++i) {
    if (!c[i]) continue;
    if (distinct.size() == ValueProfile::kFew) return std::nullopt;
    distinct.push_back(lo + i);
  }
  return distinct;
}

// The profile of a large tensor, by reductions on its device.
ValueProfile ProfileByReductions(const at::Tensor& flat) {
  ValueProfile p;
  p.valid = true;
  p.min = flat.min().item<int64_t>();
  p.max = flat.max().item<int64_t>();
  p.sorted = flat.slice(0, 1).ge(flat.slice(0, 0, -1)).all().item<bool>();
  if (p.max >= 0) p.nonneg_min = p.min >= 0 ? p.min : flat.masked_select(flat.ge(0)).min().item<int64_t>();
  // the sum in int64 wraps where the values' own would overflow: known only
  // where no partial sum can (every |value| times the count inside int64)
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t bound = p.min == std::numeric_limits<int64_t>::min()
                      ? kMax
                      : std::max(p.min < 0 ? -p.min : p.min, p.max < 0 ? -p.max : p.max);
  p.same_sum = bound == 0 || flat.numel() <= kMax / bound;
  p.sum = p.same_sum ? flat.sum().item<int64_t>() : 0;
  if (auto distinct = FewDistinct(flat, p.min, p.max)) {
    for (int64_t v : *distinct) p.AddDistinct(v);
    return p;
  }
  p.many = true;
  if (p.min < 0) {
    at::Tensor negative = flat.masked_select(flat.lt(0));
    auto negatives = FewDistinct(negative, p.min, negative.max().item<int64_t>());
    p.many_negatives = !negatives;
    if (negatives) p.negatives = *negatives;
  }
  return p;
}

// The profile of a large floating tensor, by reductions on its device.
ValueProfile FloatProfileByReductions(const at::Tensor& flat) {
  ValueProfile p;
  p.floating = p.valid = true;
  at::Tensor finite = flat.isfinite();
  p.nan = flat.isnan().any().item<bool>();
  p.posinf = flat.isposinf().any().item<bool>();
  p.neginf = flat.isneginf().any().item<bool>();
  at::Tensor values = finite.all().item<bool>() ? flat : flat.masked_select(finite);
  p.finite = values.numel() > 0;
  if (p.finite) {
    auto [lo, hi] = at::aminmax(values);
    p.fmin = lo.item<double>();
    p.fmax = hi.item<double>();
  }
  return p;
}

}  // namespace

ValueProfile ReadValueProfile(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0 || t.is_meta() || t.layout() != c10::kStrided ||
      t.key_set().has(c10::DispatchKey::Python)) {
    return {};
  }
  try {
    at::DisableRecordFunctionGuard no_observers;
    c10::impl::ExcludeDispatchKeyGuard no_python(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    at::AutoDispatchBelowADInplaceOrView no_autograd;
    if (at::isFloatingType(t.scalar_type())) {
      // On the CPU, one pass over the values as they are (no copy of a
      // contiguous tensor, no conversion); on a device, by reductions there.
      if (!t.is_cpu()) return FloatProfileByReductions(t.reshape(-1));
      at::Tensor values = t.contiguous();
      auto type = values.scalar_type();
      if (type != at::kDouble && type != at::kFloat && type != at::kHalf && type != at::kBFloat16) {
        values = values.to(at::kFloat);  // the float8 types: a copy, each value exact in float32
      }
      ValueProfile p;
      auto n = static_cast<size_t>(values.numel());
      AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, values.scalar_type(), "value_profile", [&] {
        p = ValueProfile::OfFloats(std::span<const scalar_t>(values.const_data_ptr<scalar_t>(), n));
      });
      return p;
    }
    at::Tensor flat = t.reshape(-1).to(at::kLong);
    if (flat.numel() > kScanLimit) return ProfileByReductions(flat);
    at::Tensor values = flat.cpu().contiguous();
    return ValueProfile::Of({values.data_ptr<int64_t>(), static_cast<size_t>(values.numel())});
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace api_tracer::aten
