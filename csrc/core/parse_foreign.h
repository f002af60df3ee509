#pragma once

// PaddleAPITest's spellings of values (its config files, tester/api_config,
// and its reader, config_analyzer.py), read into the values this project's
// own lines give: tuple(a,b,) a tuple, Dtype(float32) and VarType(float32)
// paddle.float32, type(numpy.float32) numpy.float32, complex(1.0,2.0) a
// complex, paddle.Size([2, 3]) the list [2, 3] (their reader rewrites it
// so), Place(gpu:0) paddle.CUDAPlace(0). The parser (parse.cc) reads
// list[a,b,], Ellipsis and -math.inf where they start.

#include <string>
#include <string_view>
#include <vector>

#include "core/value.h"

namespace api_tracer {

// Whether `name`(...) is one of their calls of a value.
bool IsForeignCall(const std::string& name);

// The value of their call `name`(items): "" and *out set, or what is wrong.
std::string ForeignValue(const std::string& name, std::vector<Value> items, bool keywords, Value* out);

// The value of Place(inside): "" and *out set, or what is wrong.
std::string PlaceValue(std::string_view inside, Value* out);

}  // namespace api_tracer
