#include "core/parse_number.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

namespace api_tracer {
namespace {

// Whether an unsigned decimal token out of double's range is too large
// rather than too small. Such a value is at least 1e308 or under 1e-323, so
// the sign of its first nonzero digit's power of ten tells (the token is
// never zero: zero is in range).
bool Overflows(std::string_view token) {
  size_t e = token.find_first_of("eE");
  std::string_view mantissa = token.substr(0, e);
  int64_t point = static_cast<int64_t>(std::min(mantissa.find('.'), mantissa.size()));
  int64_t first = static_cast<int64_t>(mantissa.find_first_not_of("0."));
  int64_t power = first < point ? point - first - 1 : point - first;
  int64_t exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = token.substr(e + 1);
    bool negative = digits[0] == '-';
    if (digits[0] == '-' || digits[0] == '+') digits.remove_prefix(1);
    // An exponent beyond int64 outweighs any run of digits before it.
    if (std::from_chars(digits.data(), digits.data() + digits.size(), exponent).ec != std::errc()) {
      exponent = std::numeric_limits<int64_t>::max() / 2;
    }
    if (negative) exponent = -exponent;
  }
  return power + exponent >= 0;
}

}  // namespace

// The double a real token stands for, as Python's float() reads it: the
// nearest one, inf beyond the largest and 0 below the smallest (signed).
double ToDouble(std::string_view token) {
  bool neg = !token.empty() && token[0] == '-';
  if (!token.empty() && (token[0] == '-' || token[0] == '+')) token.remove_prefix(1);
  double d = 0;
  if (token == "inf") {
    d = std::numeric_limits<double>::infinity();
  } else if (token == "nan") {
    d = std::numeric_limits<double>::quiet_NaN();
  } else if (std::from_chars(token.data(), token.data() + token.size(), d).ec == std::errc::result_out_of_range &&
             Overflows(token)) {
    d = std::numeric_limits<double>::infinity();  // (d stays 0 on underflow)
  }
  return neg ? -d : d;
}

}  // namespace api_tracer
