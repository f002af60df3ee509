#include "core/parse.h"

#include "core/parse_foreign.h"
#include "core/parse_number.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace api_tracer {
namespace {

constexpr int kMaxDepth = 200;

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Whether t's elements, laid out by its shape and strides (contiguous where
// none are written) from its storage offset, lie inside its storage (none
// of them when a size is 0). Each step is checked against the storage's
// size, so no product of a hostile line's sizes overflows.
bool WindowInside(const TensorInfo& t) {
  const __int128 size = t.storage_size;
  for (int64_t d : t.shape) {
    if (d == 0) return true;
    if (d < 0) return false;
  }
  __int128 last = t.storage_offset, contiguous = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    __int128 stride = t.stride.empty() ? contiguous : t.stride[i];
    if (stride < 0) return false;
    last += static_cast<__int128>(t.shape[i] - 1) * std::min(stride, size);
    if (last >= size) return false;
    contiguous = std::min(contiguous * t.shape[i], size);
  }
  return true;
}

class Parser {
 public:
  Parser(std::string_view s, const ParseOptions& options) : s_(s), options_(options) {}

  Status Call(api_tracer::Call* out) {
    SkipSpace();
    if (!Dotted(&out->api)) return Error("expected an API name");
    SkipSpace();
    if (!Eat('(')) return Error("expected '(' after the API name");
    std::vector<Value> items;
    std::vector<std::string> keywords;
    Status st = Arguments(')', &items, &keywords, 0);
    if (!st.ok()) return st;
    size_t npos = items.size() - keywords.size();
    out->args.assign(std::make_move_iterator(items.begin()), std::make_move_iterator(items.begin() + npos));
    out->kwargs.clear();
    for (size_t i = 0; i < keywords.size(); ++i) {
      out->kwargs.emplace_back(std::move(keywords[i]), std::move(items[npos + i]));
    }
    return End();
  }

  Status Single(Value* out) {
    Status st = Parse(out, 0);
    if (!st.ok()) return st;
    return End();
  }

 private:
  Status End() {
    SkipSpace();
    if (pos_ != s_.size()) return Error("unexpected text after the end");
    return Status::OK();
  }

  Status Error(const std::string& msg) const {
    // Columns count characters, not bytes: skip UTF-8 continuation bytes.
    size_t column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if ((static_cast<unsigned char>(s_[i]) & 0xc0) != 0x80) ++column;
    }
    return Status::ParseError(msg, column);
  }

  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n')) {
      ++pos_;
    }
  }
  bool Peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  bool Eat(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }
  bool Ident(std::string* out) {
    if (pos_ >= s_.size() || !IsIdentStart(s_[pos_])) return false;
    size_t start = pos_;
    while (pos_ < s_.size() && IsIdentChar(s_[pos_])) ++pos_;
    out->assign(s_.substr(start, pos_ - start));
    return true;
  }
  bool Dotted(std::string* out) {
    if (!Ident(out)) return false;
    std::string part;
    while (Peek('.') && pos_ + 1 < s_.size() && IsIdentStart(s_[pos_ + 1])) {
      ++pos_;
      Ident(&part);
      out->push_back('.');
      out->append(part);
    }
    return true;
  }

  // Items up to `close`: values, then `name=value` keywords when allowed.
  Status Arguments(char close, std::vector<Value>* items, std::vector<std::string>* keywords, int depth) {
    SkipSpace();
    if (Eat(close)) return Status::OK();
    while (true) {
      SkipSpace();
      size_t save = pos_;
      std::string name;
      bool keyword = false;
      if (keywords && Ident(&name)) {
        SkipSpace();
        if (Peek('=') && !(pos_ + 1 < s_.size() && s_[pos_ + 1] == '=')) {
          ++pos_;
          keyword = true;
        } else {
          pos_ = save;
        }
      }
      if (!keyword && keywords && !keywords->empty()) {
        return Error("positional argument after a keyword argument");
      }
      if (keyword) {
        for (const auto& k : *keywords) {
          if (k == name) {
            pos_ = save;
            return Error("keyword argument '" + name + "' repeated");
          }
        }
        keywords->push_back(name);
      }
      Value v;
      Status st = Parse(&v, depth + 1);
      if (!st.ok()) return st;
      items->push_back(std::move(v));
      SkipSpace();
      if (Eat(close)) return Status::OK();
      if (pos_ == s_.size()) return Error(std::string("the line ends before its closing '") + close + "' (cut short?)");
      if (s_.substr(pos_) == "...") return Error("the line ends in '...': cut short by whoever wrote it");
      if (!Eat(',')) return Error(std::string("expected ',' or '") + close + "'");
      SkipSpace();
      if (Eat(close)) return Status::OK();  // a trailing comma
    }
  }

  Status Parse(Value* out, int depth) {
    if (depth > kMaxDepth) return Error("nested too deeply");
    SkipSpace();
    if (pos_ >= s_.size()) return Error("the line ends where a value should be (cut short?)");
    char c = s_[pos_];
    if (c == '"' || c == '\'') return String(out);
    if (c == '[') {
      ++pos_;
      std::vector<Value> items;
      Status st = Arguments(']', &items, nullptr, depth);
      if (st.ok()) *out = Value::List(std::move(items));
      return st;
    }
    if (c == '(') return Paren(out, depth);
    if (c == '{') return Dict(out, depth);
    if (c == '.' && s_.substr(pos_, 3) == "...") {
      pos_ += 3;
      *out = Value::Ellipsis();
      return Status::OK();
    }
    if (c == '-' && s_.substr(pos_ + 1, 5) == "math.") return NegatedConstant(out);
    if (c == '-' || IsDigit(c) || c == '.') return Number(out);
    if (IsIdentStart(c)) return Named(out, depth);
    return Error("expected a value");
  }

  Status String(Value* out) {
    char quote = s_[pos_++];
    std::string text;
    while (true) {
      if (pos_ >= s_.size()) return Error("unterminated string");
      char c = s_[pos_++];
      if (c == quote) break;
      if (c == '\n') return Error("newline in string");
      if (c != '\\') {
        text.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return Error("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case '\\': text.push_back('\\'); break;
        case '"': text.push_back('"'); break;
        case '\'': text.push_back('\''); break;
        case 'n': text.push_back('\n'); break;
        case 'r': text.push_back('\r'); break;
        case 't': text.push_back('\t'); break;
        case '0': text.push_back('\0'); break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (s_.size() - pos_ < n) return Error("truncated escape");
          uint32_t cp = 0;
          auto res = std::from_chars(s_.data() + pos_, s_.data() + pos_ + n, cp, 16);
          if (res.ptr != s_.data() + pos_ + n || cp > 0x10ffff) return Error("bad escape");
          if (cp >= 0xd800 && cp <= 0xdfff) {
            pos_ -= 2;  // point at the backslash
            return Error("a lone surrogate is not a character: the string would have no UTF-8");
          }
          pos_ += n;
          AppendUtf8(cp, &text);
          break;
        }
        default:
          pos_ -= 2;  // point at the backslash
          return Error(std::string("unknown escape '\\") + e + "'");
      }
    }
    *out = Value::Str(std::move(text));
    return Status::OK();
  }

  // A real number token: [-](digits[.digits][e[+-]digits] | inf | nan).
  // Sets *is_float when the token is not a plain integer.
  bool RealToken(std::string_view* token, bool* is_float) {
    size_t start = pos_;
    if (Peek('-') || Peek('+')) ++pos_;
    if (s_.substr(pos_, 3) == "inf" || s_.substr(pos_, 3) == "nan") {
      pos_ += 3;
      if (pos_ < s_.size() && IsIdentChar(s_[pos_]) && s_[pos_] != 'j') {
        pos_ = start;
        return false;
      }
      *token = s_.substr(start, pos_ - start);
      *is_float = true;
      return true;
    }
    size_t digits_start = pos_;
    while (pos_ < s_.size() && IsDigit(s_[pos_])) ++pos_;
    bool any = pos_ > digits_start;
    *is_float = false;
    if (Peek('.') && s_.substr(pos_, 3) != "...") {
      ++pos_;
      *is_float = true;
      size_t frac = pos_;
      while (pos_ < s_.size() && IsDigit(s_[pos_])) ++pos_;
      any = any || pos_ > frac;
    }
    if (!any) {
      pos_ = start;
      return false;
    }
    if (Peek('e') || Peek('E')) {
      size_t save = pos_++;
      if (Peek('+') || Peek('-')) ++pos_;
      size_t exp = pos_;
      while (pos_ < s_.size() && IsDigit(s_[pos_])) ++pos_;
      if (pos_ == exp) {
        pos_ = save;
      } else {
        *is_float = true;
      }
    }
    *token = s_.substr(start, pos_ - start);
    return true;
  }

  Status Number(Value* out) {
    size_t start = pos_;
    std::string_view token;
    bool is_float;
    if (!RealToken(&token, &is_float)) return Error("malformed number");
    if (Eat('j')) {
      *out = Value::Complex(0.0, ToDouble(token));
      return Status::OK();
    }
    size_t after = pos_;
    std::string_view im_token;
    bool im_float;
    if ((Peek('+') || Peek('-')) && RealToken(&im_token, &im_float) && Eat('j')) {
      *out = Value::Complex(ToDouble(token), ToDouble(im_token));  // re+imj unbracketed (PaddleAPITest's)
      return Status::OK();
    }
    pos_ = after;
    if (pos_ < s_.size() && IsIdentChar(s_[pos_])) {
      pos_ = start;
      return Error("malformed number");
    }
    if (is_float) {
      *out = Value::Float(ToDouble(token));
      return Status::OK();
    }
    std::string_view digits = token;
    if (digits[0] == '+') digits.remove_prefix(1);
    size_t count = digits.size() - (digits[0] == '-');
    if (options_.max_int_digits != 0 && count > options_.max_int_digits) {
      pos_ = start;
      return Error("an integer of " + std::to_string(count) + " digits, over the limit of " +
                   std::to_string(options_.max_int_digits) + " (Python's sys.set_int_max_str_digits)");
    }
    int64_t i;
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), i);
    if (res.ec == std::errc() && res.ptr == digits.data() + digits.size()) {
      *out = Value::Int(i);
    } else {
      *out = Value::BigInt(std::string(digits));
    }
    return Status::OK();
  }

  // "(re+imj)" is a complex number; anything else in parentheses a tuple.
  Status Paren(Value* out, int depth) {
    size_t open = pos_++;
    std::string_view re_token, im_token;
    bool is_float;
    if (RealToken(&re_token, &is_float) && (Peek('+') || Peek('-')) && RealToken(&im_token, &is_float) && Eat('j') &&
        Eat(')')) {
      *out = Value::Complex(ToDouble(re_token), ToDouble(im_token));
      return Status::OK();
    }
    pos_ = open + 1;
    std::vector<Value> items;
    SkipSpace();
    if (Eat(')')) {
      *out = Value::Tuple({});
      return Status::OK();
    }
    bool trailing_comma = false;
    while (true) {
      Value v;
      Status st = Parse(&v, depth + 1);
      if (!st.ok()) return st;
      items.push_back(std::move(v));
      SkipSpace();
      if (Eat(')')) break;
      if (pos_ == s_.size()) return Error("the line ends before its closing ')' (cut short?)");
      if (s_.substr(pos_) == "...") return Error("the line ends in '...': cut short by whoever wrote it");
      if (!Eat(',')) return Error("expected ',' or ')'");
      SkipSpace();
      if (Eat(')')) {
        trailing_comma = true;
        break;
      }
    }
    if (items.size() == 1 && !trailing_comma) {
      pos_ = open;
      return Error("a one-element tuple needs a trailing comma");
    }
    *out = Value::Tuple(std::move(items));
    return Status::OK();
  }

  Status Dict(Value* out, int depth) {
    ++pos_;
    std::vector<Value> items;
    SkipSpace();
    while (!Eat('}')) {
      Value k, v;
      size_t key_start = pos_;
      Status st = Parse(&k, depth + 1);
      if (!st.ok()) return st;
      if (!Hashable(k)) {
        pos_ = key_start;
        return Error("a dict key must be hashable");
      }
      SkipSpace();
      if (!Eat(':')) return Error("expected ':' in a dict");
      st = Parse(&v, depth + 1);
      if (!st.ok()) return st;
      items.push_back(std::move(k));
      items.push_back(std::move(v));
      SkipSpace();
      if (Eat('}')) break;
      if (!Eat(',')) return Error("expected ',' or '}'");
      SkipSpace();
    }
    *out = Value::Dict(std::move(items));
    return Status::OK();
  }

  // Whether Python can hash the value `v` stands for, as a dict key must be.
  bool Hashable(const Value& v) const {
    API_TRACER_HANDLES_VALUE_KINDS(15);
    switch (v.kind()) {
      case Value::Kind::kList:
      case Value::Kind::kDict: return false;
      case Value::Kind::kSlice:
        if (!options_.hashable_slices) return false;
        [[fallthrough]];
      case Value::Kind::kTuple:
        return std::all_of(v.items().begin(), v.items().end(), [this](const Value& item) { return Hashable(item); });
      default: return true;
    }
  }

  Status Named(Value* out, int depth) {
    size_t start = pos_;
    std::string name;
    Dotted(&name);
    if (name == "inf" || name == "nan") {
      pos_ = start;
      return Number(out);
    }
    if (name == "infj" || name == "nanj") {
      *out = Value::Complex(0.0, ToDouble(std::string_view(name).substr(0, 3)));
      return Status::OK();
    }
    if (name == "None") {
      *out = Value::None();
      return Status::OK();
    }
    if (name == "True" || name == "False") {
      *out = Value::Bool(name == "True");
      return Status::OK();
    }
    if (name == "math.inf" || name == "math.nan") {
      *out = Value::Float(ToDouble(std::string_view(name).substr(5)));
      return Status::OK();
    }
    if (name == "Ellipsis") {
      *out = Value::Ellipsis();
      return Status::OK();
    }
    SkipSpace();
    if (name == "list" && Peek('[')) return Parse(out, depth);  // PaddleAPITest's list[a,b,]
    if (name == "Place" && Peek('(')) return Place(start, out);
    if (!Eat('(')) {
      *out = Value::Symbol(std::move(name));
      return Status::OK();
    }
    std::vector<Value> items;
    std::vector<std::string> keywords;
    Status st = Arguments(')', &items, &keywords, depth);
    if (!st.ok()) return st;
    if (name == "Tensor") return MakeTensor(start, std::move(items), keywords, out);
    if (IsForeignCall(name)) return Foreign(start, name, std::move(items), keywords, out);
    if (name == "slice") {
      if (items.size() != 3 || !keywords.empty()) {
        pos_ = start;
        return Error("slice takes exactly (start, stop, step)");
      }
      *out = Value::Slice(std::move(items[0]), std::move(items[1]), std::move(items[2]));
      return Status::OK();
    }
    *out = Value::Object(std::move(name), std::move(items), std::move(keywords));
    return Status::OK();
  }

  // PaddleAPITest's calls of a value (parse_foreign.h), read as ours.
  Status Foreign(size_t start, const std::string& name, std::vector<Value> items,
                 const std::vector<std::string>& keywords, Value* out) {
    std::string error = ForeignValue(name, std::move(items), !keywords.empty(), out);
    if (error.empty()) return Status::OK();
    pos_ = start;
    return Error(error);
  }

  // Place(cpu), Place(gpu:0): the paddle call that makes the place.
  Status Place(size_t start, Value* out) {
    size_t close = s_.find(')', pos_);
    if (close == std::string_view::npos) return Error("unterminated Place(...)");
    std::string error = PlaceValue(s_.substr(pos_ + 1, close - pos_ - 1), out);
    if (!error.empty()) {
      pos_ = start;
      return Error(error);
    }
    pos_ = close + 1;
    return Status::OK();
  }

  // -math.inf, -math.nan (PaddleAPITest's spelling of a negative infinity).
  Status NegatedConstant(Value* out) {
    size_t start = pos_++;
    std::string name;
    Dotted(&name);
    if (name != "math.inf" && name != "math.nan") {
      pos_ = start;
      return Error("malformed number");
    }
    *out = Value::Float(-ToDouble(std::string_view(name).substr(5)));
    return Status::OK();
  }

  static bool IntList(const Value& v, std::vector<int64_t>* out) {
    if (v.kind() != Value::Kind::kList) return false;
    out->clear();
    for (const Value& item : v.items()) {
      if (item.kind() != Value::Kind::kInt) return false;
      out->push_back(item.as_int());
    }
    return true;
  }

  Status MakeTensor(size_t start, std::vector<Value> items, const std::vector<std::string>& keywords, Value* out) {
    auto fail = [&](const std::string& msg) {
      pos_ = start;
      return Error(msg);
    };
    size_t npos = items.size() - keywords.size();
    TensorInfo t;
    if (npos != 2 || !IntList(items[0], &t.shape) || items[1].kind() != Value::Kind::kStr) {
      return fail("Tensor takes (shape, \"dtype\") then optional fields");
    }
    t.dtype = items[1].text();
    for (size_t i = 0; i < keywords.size(); ++i) {
      const std::string& k = keywords[i];
      const Value& v = items[npos + i];
      if (k == "stride" || k == "strides") {  // (strides: PaddleAPITest's)
        if (!IntList(v, &t.stride) || t.stride.size() != t.shape.size()) {
          return fail("Tensor stride must be a list of ints, one per dimension");
        }
      } else if (k == "is_contiguous") {  // PaddleAPITest's, beside its strides
        if (v.kind() != Value::Kind::kBool) return fail("Tensor is_contiguous must be True or False");
      } else if (k == "device") {
        if (v.kind() != Value::Kind::kStr) return fail("Tensor device must be a string");
        t.device = v.text();
      } else if (k == "requires_grad") {
        if (v.kind() != Value::Kind::kBool) return fail("Tensor requires_grad must be True or False");
        t.requires_grad = v.as_bool();
      } else if (k == "layout") {
        if (v.kind() != Value::Kind::kSymbol) return fail("Tensor layout must be a name");
        t.layout = v.text() == "torch.strided" ? "" : v.text();
      } else if (k == "nnz" || k == "zero_point" || k == "axis") {
        if (v.kind() != Value::Kind::kInt || (k != "zero_point" && v.as_int() < 0)) {
          return fail("Tensor " + k + (k == "zero_point" ? " must be an int" : " must be an int of at least 0"));
        }
        (k == "nnz" ? t.nnz : k == "axis" ? t.axis : t.zero_point) = v.as_int();
      } else if (k == "storage_offset" || k == "storage_size") {
        if (v.kind() != Value::Kind::kInt || v.as_int() < 0)
          return fail("Tensor " + k + " must be an int of at least 0");
        (k == "storage_offset" ? t.storage_offset : t.storage_size) = v.as_int();
      } else if (k == "scale") {
        if (v.kind() != Value::Kind::kFloat && v.kind() != Value::Kind::kInt)
          return fail("Tensor scale must be a number");
        t.scale = v.kind() == Value::Kind::kFloat ? v.real() : static_cast<double>(v.as_int());
        if (t.qscheme.empty()) t.qscheme = kPerTensorAffine;
      } else if (k == "qscheme") {
        if (v.kind() != Value::Kind::kSymbol) return fail("Tensor qscheme must be a name");
        t.qscheme = v.text();
      } else {
        return fail("unknown Tensor field '" + k + "'");
      }
    }
    if ((t.storage_offset < 0) != (t.storage_size < 0)) {
      return fail("Tensor storage_offset and storage_size come together");
    }
    if (t.storage_size >= 0 && !WindowInside(t)) {
      return fail("Tensor storage_offset and storage_size must hold its elements (its window inside the storage)");
    }
    *out = Value::Tensor(std::move(t));
    return Status::OK();
  }

  std::string_view s_;
  const ParseOptions& options_;
  size_t pos_ = 0;
};

}  // namespace

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

Status ParseCall(std::string_view line, Call* out, const ParseOptions& options) {
  return Parser(line, options).Call(out);
}

Status ParseValue(std::string_view text, Value* out, const ParseOptions& options) {
  return Parser(text, options).Single(out);
}

}  // namespace api_tracer
