#include "core/format.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace api_tracer {

void AppendPyFloat(double d, std::string* out, bool add_dot_0) {
  if (std::isnan(d)) {
    out->append("nan");
    return;
  }
  if (std::isinf(d)) {
    out->append(d < 0 ? "-inf" : "inf");
    return;
  }
  // Shortest round-trip digits, then laid out by Python's repr rule: fixed
  // notation when the decimal point falls within -4 < decpt <= 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  if (sci.front() == '-') {
    out->push_back('-');
    sci.remove_prefix(1);
  }
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exp10);
  int decpt = exp10 + 1;
  int ndigits = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out->append("0.");
      out->append(-decpt, '0');
      out->append(digits);
    } else if (decpt >= ndigits) {
      out->append(digits);
      out->append(decpt - ndigits, '0');
      if (add_dot_0) out->append(".0");
    } else {
      out->append(digits, 0, decpt);
      out->push_back('.');
      out->append(digits, decpt);
    }
    return;
  }
  out->push_back(digits[0]);
  if (ndigits > 1) {
    out->push_back('.');
    out->append(digits, 1);
  }
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
  out->append(exp);
}

void AppendPyComplex(double re, double im, std::string* out) {
  if (re == 0 && !std::signbit(re)) {
    AppendPyFloat(im, out, false);
    out->push_back('j');
    return;
  }
  out->push_back('(');
  AppendPyFloat(re, out, false);
  if (std::isnan(im) || !std::signbit(im)) out->push_back('+');
  AppendPyFloat(std::isnan(im) ? std::fabs(im) : im, out, false);
  out->append("j)");
}

void AppendQuoted(std::string_view s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\x%02x", c);
          out->append(esc);
        } else {
          out->push_back(static_cast<char>(c));  // UTF-8 passes through
        }
    }
  }
  out->push_back('"');
}

namespace {

void AppendInts(const std::vector<int64_t>& v, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out->append(", ");
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, v[i]);
    out->append(buf, res.ptr);
  }
  out->push_back(']');
}

void FormatItems(const std::vector<Value>& items, size_t begin, size_t end, const FormatOptions& opts,
                 std::string* out) {
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) out->append(", ");
    FormatValue(items[i], opts, out);
  }
}

void FormatTensor(const TensorInfo& t, const FormatOptions& opts, std::string* out) {
  out->append("Tensor(");
  AppendInts(t.shape, out);
  out->append(", ");
  AppendQuoted(t.dtype, out);
  if (!t.stride.empty()) {
    out->append(", stride=");
    AppendInts(t.stride, out);
  }
  if (t.storage_size >= 0) {
    out->append(", storage_offset=");
    out->append(std::to_string(t.storage_offset));
    out->append(", storage_size=");
    out->append(std::to_string(t.storage_size));
  }
  if (!t.layout.empty()) {
    out->append(", layout=");
    out->append(t.layout);
  }
  if (t.nnz >= 0) {
    out->append(", nnz=");
    out->append(std::to_string(t.nnz));
  }
  if (t.qscheme == kPerTensorAffine) {  // the scheme most quantized tensors have: implied by a scale
    out->append(", scale=");
    AppendPyFloat(t.scale, out);
    out->append(", zero_point=");
    out->append(std::to_string(t.zero_point));
  } else if (!t.qscheme.empty()) {
    out->append(", qscheme=");
    out->append(t.qscheme);
    if (t.axis >= 0) {
      out->append(", axis=");
      out->append(std::to_string(t.axis));
    }
  }
  if (opts.tensor_device && t.device != "cpu") {
    out->append(", device=");
    AppendQuoted(t.device, out);
  }
  if (opts.tensor_requires_grad && t.requires_grad) out->append(", requires_grad=True");
  out->push_back(')');
}

}  // namespace

void FormatValue(const Value& v, const FormatOptions& opts, std::string* out) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kNone: out->append("None"); return;
    case K::kBool: out->append(v.as_bool() ? "True" : "False"); return;
    case K::kInt: {
      char buf[24];
      auto res = std::to_chars(buf, buf + sizeof buf, v.as_int());
      out->append(buf, res.ptr);
      return;
    }
    case K::kBigInt: out->append(v.text()); return;
    case K::kFloat: AppendPyFloat(v.real(), out); return;
    case K::kComplex: AppendPyComplex(v.real(), v.imag(), out); return;
    case K::kStr: AppendQuoted(v.text(), out); return;
    case K::kEllipsis: out->append("..."); return;
    case K::kSymbol: out->append(v.text()); return;
    case K::kList:
      out->push_back('[');
      FormatItems(v.items(), 0, v.items().size(), opts, out);
      out->push_back(']');
      return;
    case K::kTuple:
      out->push_back('(');
      FormatItems(v.items(), 0, v.items().size(), opts, out);
      if (v.items().size() == 1) out->push_back(',');
      out->push_back(')');
      return;
    case K::kDict:
      out->push_back('{');
      for (size_t i = 0; i + 1 < v.items().size(); i += 2) {
        if (i) out->append(", ");
        FormatValue(v.items()[i], opts, out);
        out->append(": ");
        FormatValue(v.items()[i + 1], opts, out);
      }
      out->push_back('}');
      return;
    case K::kSlice:
      out->append("slice(");
      FormatItems(v.items(), 0, 3, opts, out);
      out->push_back(')');
      return;
    case K::kTensor: FormatTensor(v.tensor(), opts, out); return;
    case K::kObject: {
      out->append(v.text());
      out->push_back('(');
      size_t npos = v.positional_count();
      FormatItems(v.items(), 0, npos, opts, out);
      for (size_t i = 0; i < v.keywords().size(); ++i) {
        if (npos + i) out->append(", ");
        out->append(v.keywords()[i]);
        out->push_back('=');
        FormatValue(v.items()[npos + i], opts, out);
      }
      out->push_back(')');
      return;
    }
  }
}

std::string FormatCall(const Call& call, const FormatOptions& opts) {
  std::string out = call.api;
  out.push_back('(');
  FormatItems(call.args, 0, call.args.size(), opts, &out);
  for (size_t i = 0; i < call.kwargs.size(); ++i) {
    if (i || !call.args.empty()) out.append(", ");
    out.append(call.kwargs[i].first);
    out.push_back('=');
    FormatValue(call.kwargs[i].second, opts, &out);
  }
  out.push_back(')');
  return out;
}

}  // namespace api_tracer
