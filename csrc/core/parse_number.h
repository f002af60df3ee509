#pragma once

#include <string_view>

namespace api_tracer {

// The double a real number token ([-+]digits[.digits][e[+-]digits], inf,
// nan) stands for, as Python's float() reads it: the nearest one, inf
// beyond the largest and 0 below the smallest (signed).
double ToDouble(std::string_view token);

}  // namespace api_tracer
