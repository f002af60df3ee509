// The config line formatter: a Call as one line of Python-like text.
//
//   torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=10)
//
// docs/format.md is the grammar; parse.h reads it back, and
// Parse(Format(call)) == call for every call whose tensors' hidden fields
// (see FormatOptions) are at their defaults or shown. Scalars follow Python's
// repr; strings are double-quoted with backslash escapes.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/value.h"

namespace api_tracer {

// Which optional tensor fields a config line shows. Strides of a
// non-contiguous tensor and a non-strided layout are always shown.
struct FormatOptions {
  bool tensor_device = false;         // device="cuda:0" (shown when not cpu)
  bool tensor_requires_grad = false;  // requires_grad=True (shown when set)
};

// repr() of a Python float ("0.1", "1e-05", "2.0", "inf", "nan"). With
// `add_dot_0` false, integral values lose their ".0", as in a complex's repr.
void AppendPyFloat(double d, std::string* out, bool add_dot_0 = true);
// repr() of a Python complex: "1j", "(1+2j)", "(-0-1.5j)".
void AppendPyComplex(double re, double im, std::string* out);
// A double-quoted string literal with backslash escapes.
void AppendQuoted(std::string_view s, std::string* out);

void FormatValue(const Value& v, const FormatOptions& opts, std::string* out);
std::string FormatCall(const Call& call, const FormatOptions& opts = {});

}  // namespace api_tracer
