#include "core/parse_foreign.h"

#include <charconv>
#include <set>
#include <tuple>
#include <utility>

namespace api_tracer {

bool IsForeignCall(const std::string& name) {
  static const std::set<std::string> kCalls = {"tuple", "Dtype", "VarType", "type", "complex", "paddle.Size"};
  return kCalls.count(name) > 0;
}

std::string ForeignValue(const std::string& name, std::vector<Value> items, bool keywords, Value* out) {
  if (keywords) return name + "(...) takes no keyword arguments";
  if (name == "tuple") {
    *out = Value::Tuple(std::move(items));
    return "";
  }
  if (name == "complex") {
    double parts[2] = {0.0, 0.0};
    if (items.empty() || items.size() > 2) return "complex takes (real, imaginary)";
    for (size_t i = 0; i < items.size(); ++i) {
      const Value& v = items[i];
      if (v.kind() == Value::Kind::kFloat) {
        parts[i] = v.real();
      } else if (v.kind() == Value::Kind::kInt) {
        parts[i] = static_cast<double>(v.as_int());
      } else {
        return "complex takes real numbers";
      }
    }
    *out = Value::Complex(parts[0], parts[1]);
    return "";
  }
  if (name == "paddle.Size") {
    if (items.size() != 1 || items[0].kind() != Value::Kind::kList) return "paddle.Size takes a list";
    *out = std::move(items[0]);
    return "";
  }
  // Dtype(float32), VarType(float32), type(numpy.float32), type(int): a name
  if (items.size() != 1 || items[0].kind() != Value::Kind::kSymbol) return name + " takes one name";
  std::string symbol = items[0].text();
  if (name != "type") {
    if (symbol.find('.') != std::string::npos) return name + " takes a dtype's name, such as float32";
    symbol = "paddle." + symbol;
  }
  *out = Value::Symbol(std::move(symbol));
  return "";
}

std::string PlaceValue(std::string_view text, Value* out) {
  const char* kUsage = "Place takes cpu, gpu_pinned or a device and its index, such as gpu:0";
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::string_view kind = text.substr(0, text.find(':'));
  std::vector<Value> args;
  if (kind.size() < text.size()) {
    std::string_view digits = text.substr(kind.size() + 1);
    int64_t index = -1;
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || res.ptr != digits.data() + digits.size() || index < 0) return kUsage;
    args.push_back(Value::Int(index));
  }
  // (spelled, the call, whether it takes an index)
  static const std::tuple<std::string_view, const char*, bool> kPlaces[] = {
      {"cpu", "paddle.CPUPlace", false},
      {"gpu", "paddle.CUDAPlace", true},
      {"gpu_pinned", "paddle.CUDAPinnedPlace", false},
      {"xpu", "paddle.XPUPlace", true},
      {"ipu", "paddle.IPUPlace", true}};
  for (const auto& [spelled, call, indexed] : kPlaces) {
    if (kind == spelled && indexed == !args.empty()) {
      *out = Value::Object(call, std::move(args));
      return "";
    }
  }
  return kUsage;
}

}  // namespace api_tracer
