// The config line parser: reads what format.h writes, and nothing more.
//
// A config line is data: it is parsed by this grammar (docs/format.md) and
// never evaluated. Names are kept as text; deciding what a name may refer to
// is the consumer's business (replay resolves them in torch's namespaces only).
// Errors carry the 1-based column (in characters) where parsing stopped.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/value.h"

namespace api_tracer {

// Bounds the consumer sets where the grammar has none.
struct ParseOptions {
  // An integer written with more digits than this (leading zeros count, the
  // sign does not) is refused; 0 allows any size. The Python binding passes
  // sys.get_int_max_str_digits(): Python reads no longer digit string as an
  // int, since the conversion takes quadratic time.
  size_t max_int_digits = 0;
  // Whether a dict key may be or hold a slice: Python hashes slices from 3.12
  // on. A key never holds a list or dict (outside an object, which stands for
  // a value that may well be hashable, such as torch.Size([2])).
  bool hashable_slices = true;
};

// Parses a whole line (surrounding white space allowed) into `out`.
Status ParseCall(std::string_view line, Call* out, const ParseOptions& options = {});

// Appends the code point `cp` (at most 0x10FFFF) as UTF-8.
void AppendUtf8(uint32_t cp, std::string* out);

// Parses a single value, e.g. "Tensor([2], \"int64\")" or "(1+2j)".
Status ParseValue(std::string_view text, Value* out, const ParseOptions& options = {});

}  // namespace api_tracer
