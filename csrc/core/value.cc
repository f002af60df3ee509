#include "core/value.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace api_tracer {

double CanonicalNan(double d) { return std::isnan(d) ? std::numeric_limits<double>::quiet_NaN() : d; }

Value Value::Float(double d) {
  Value v(Kind::kFloat);
  v.real_ = CanonicalNan(d);
  return v;
}

Value Value::Complex(double re, double im) {
  Value v(Kind::kComplex);
  v.real_ = CanonicalNan(re);
  v.imag_ = CanonicalNan(im);
  return v;
}

Value Value::Slice(Value start, Value stop, Value step) {
  std::vector<Value> items;
  items.reserve(3);
  items.push_back(std::move(start));
  items.push_back(std::move(stop));
  items.push_back(std::move(step));
  return Container(Kind::kSlice, std::move(items));
}

Value Value::Tensor(TensorInfo info) {
  Value v(Kind::kTensor);
  v.tensor_ = std::make_shared<const TensorInfo>(std::move(info));
  return v;
}

Value Value::Object(std::string name, std::vector<Value> items, std::vector<std::string> keywords) {
  Value v(Kind::kObject);
  v.text_ = std::move(name);
  v.items_ = std::move(items);
  v.keywords_ = std::move(keywords);
  return v;
}

static bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool Value::operator==(const Value& o) const {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kNone:
    case Kind::kEllipsis: return true;
    case Kind::kBool:
    case Kind::kInt: return int_ == o.int_;
    case Kind::kFloat: return SameBits(real_, o.real_);
    case Kind::kComplex: return SameBits(real_, o.real_) && SameBits(imag_, o.imag_);
    case Kind::kBigInt:
    case Kind::kStr:
    case Kind::kSymbol: return text_ == o.text_;
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDict:
    case Kind::kSlice: return items_ == o.items_;
    case Kind::kTensor: return *tensor_ == *o.tensor_;
    case Kind::kObject: return text_ == o.text_ && items_ == o.items_ && keywords_ == o.keywords_;
  }
  return false;
}

}  // namespace api_tracer
