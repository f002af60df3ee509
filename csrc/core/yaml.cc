#include "core/yaml.h"

#include <charconv>
#include <cstdio>

#include "core/format.h"

namespace api_tracer::yaml {
namespace {

// Strings a YAML loader would resolve to something else: YAML 1.1's (what
// PyYAML resolves) and YAML 1.2's booleans, nulls, numbers, timestamps and
// merge keys. Conservative: a string that might be read as something other
// than itself is quoted; quoting one more string than needed costs nothing.
bool LooksTyped(std::string_view s) {
  static constexpr std::string_view kWords[] = {"yes", "no", "true", "false", "on", "off", "y", "n", "null", "~"};
  std::string lower;
  for (char c : s) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (std::string_view w : kWords) {
    if (lower == w) return true;
  }
  if (s == "<<" || s == "=") return true;
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body.empty()) return false;
  auto numeric = [](std::string_view t) {
    for (char c : t) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == 'x' ||
                c == 'X' || c == 'o' || c == 'O' || c == '_' || c == '.' || c == ':' || c == '+' || c == '-';
      if (!ok) return false;
    }
    return true;
  };
  bool digit_first = body[0] >= '0' && body[0] <= '9';
  // ints (decimal, 0x, 0o, 0b, sexagesimal), floats, and dates
  if (digit_first && numeric(body)) return true;
  // timestamps with a time part: 2001-12-14T21:59:43
  if (s.size() >= 6 && numeric(s.substr(0, 4)) && s[4] == '-' && s[5] >= '0' && s[5] <= '9') return true;
  if (body[0] == '.') {
    std::string_view rest = std::string_view(lower).substr(lower.size() - body.size() + 1);
    return rest == "inf" || rest == "nan" || (!rest.empty() && rest[0] >= '0' && rest[0] <= '9' && numeric(rest));
  }
  return false;
}

void Indent(int n, std::string* out) { out->append(static_cast<size_t>(n), ' '); }

void EmitInline(const Node& node, int indent, std::string* out);

void EmitScalar(const Node& node, std::string* out) {
  if (node.kind == Node::Kind::kString) {
    AppendString(node.text, out);
  } else {
    out->append(node.text);
  }
}

bool IsEmptyCollection(const Node& node, std::string* out) {
  if (node.kind == Node::Kind::kSeq && node.items.empty()) {
    out->append("[]\n");
    return true;
  }
  if (node.kind == Node::Kind::kMap && node.entries.empty()) {
    out->append("{}\n");
    return true;
  }
  return false;
}

void EmitItems(const Node& seq, int indent, std::string* out, bool first_inline) {
  for (size_t i = 0; i < seq.items.size(); ++i) {
    if (i || !first_inline) Indent(indent, out);
    out->append("- ");
    EmitInline(seq.items[i], indent + 2, out);
  }
}

void EmitMapEntries(const Node& map, int indent, std::string* out, bool first_inline) {
  for (size_t i = 0; i < map.entries.size(); ++i) {
    const auto& [key, value] = map.entries[i];
    if (i || !first_inline) Indent(indent, out);
    AppendString(key, out);
    out->push_back(':');
    if (value.kind == Node::Kind::kScalar || value.kind == Node::Kind::kString) {
      out->push_back(' ');
      EmitScalar(value, out);
      out->push_back('\n');
      continue;
    }
    std::string empty;
    if (IsEmptyCollection(value, &empty)) {
      out->push_back(' ');
      out->append(empty);
    } else if (value.kind == Node::Kind::kSeq) {
      out->push_back('\n');
      EmitItems(value, indent, out, false);
    } else {
      out->push_back('\n');
      EmitMapEntries(value, indent + 2, out, false);
    }
  }
}

// The rest of a node that starts right after a "- ".
void EmitInline(const Node& node, int indent, std::string* out) {
  if (node.kind == Node::Kind::kScalar || node.kind == Node::Kind::kString) {
    EmitScalar(node, out);
    out->push_back('\n');
  } else if (!IsEmptyCollection(node, out)) {
    if (node.kind == Node::Kind::kSeq) {
      EmitItems(node, indent, out, true);
    } else {
      EmitMapEntries(node, indent, out, true);
    }
  }
}

Node TypedMap(const char* type) {
  Node m = Node::Map();
  m.Set("type", Node::String(type));
  return m;
}

Node FloatNode(double d) {
  std::string s;
  AppendFloat(d, &s);
  return Node::Scalar(std::move(s));
}

Node IntNode(int64_t i) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, i);
  return Node::Scalar(std::string(buf, res.ptr));
}

Node IntSeq(const std::vector<int64_t>& v) {
  Node seq = Node::Seq();
  for (int64_t i : v) seq.Add(IntNode(i));
  return seq;
}

Node Items(const std::vector<Value>& items, size_t begin, size_t end) {
  Node seq = Node::Seq();
  for (size_t i = begin; i < end; ++i) seq.Add(FromValue(items[i]));
  return seq;
}

}  // namespace

bool IsPlainString(std::string_view s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  const std::string_view kIndicators = "#,[]{}&*!|>'\"%@`";
  if (kIndicators.find(s.front()) != std::string_view::npos) return false;
  if ((s.front() == '-' || s.front() == '?' || s.front() == ':') &&
      (s.size() == 1 || s[1] == ' ')) {
    return false;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (c < 0x20 || c == 0x7f) return false;
    if (c == ':' && i + 1 < s.size() && s[i + 1] == ' ') return false;
    if (c == '#' && s[i - 1] == ' ') return false;
  }
  return !LooksTyped(s);
}

void AppendString(std::string_view s, std::string* out) {
  if (IsPlainString(s)) {
    out->append(s);
    return;
  }
  AppendQuoted(s, out);  // its escapes are valid in YAML double-quoted style
}

void AppendFloat(double d, std::string* out) {
  std::string repr;
  AppendPyFloat(d, &repr);
  if (repr == "nan") {
    out->append(".nan");
  } else if (repr == "inf" || repr == "-inf") {
    out->append(repr[0] == '-' ? "-.inf" : ".inf");
  } else if (size_t e = repr.find('e'); e != std::string::npos && repr.find('.') == std::string::npos) {
    out->append(repr, 0, e);
    out->append(".0");
    out->append(repr, e);
  } else {
    out->append(repr);
  }
}

void Emit(const Node& node, int indent, std::string* out) {
  std::string empty;
  if (IsEmptyCollection(node, &empty)) {
    out->append(empty);
  } else if (node.kind == Node::Kind::kSeq) {
    EmitItems(node, indent, out, false);
  } else if (node.kind == Node::Kind::kMap) {
    EmitMapEntries(node, indent, out, false);
  } else {
    EmitScalar(node, out);
    out->push_back('\n');
  }
}

void EmitEntries(const Node& map, int indent, std::string* out) {
  EmitMapEntries(map, indent, out, false);
}

Node FromValue(const Value& v) {
  API_TRACER_HANDLES_VALUE_KINDS(15);
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kNone: return Node::Scalar("null");
    case K::kBool: return Node::Scalar(v.as_bool() ? "true" : "false");
    case K::kInt: return IntNode(v.as_int());
    case K::kBigInt: return Node::Scalar(v.text());
    case K::kFloat: return FloatNode(v.real());
    case K::kStr: return Node::String(v.text());
    case K::kList: return Items(v.items(), 0, v.items().size());
    case K::kComplex: {
      Node m = TypedMap("complex");
      m.Set("real", FloatNode(v.real()));
      m.Set("imag", FloatNode(v.imag()));
      return m;
    }
    case K::kEllipsis: return TypedMap("ellipsis");
    case K::kTuple: {
      Node m = TypedMap("tuple");
      m.Set("items", Items(v.items(), 0, v.items().size()));
      return m;
    }
    case K::kDict: {
      Node m = TypedMap("dict");
      bool string_keys = true;
      for (size_t i = 0; i < v.items().size(); i += 2) {
        string_keys = string_keys && v.items()[i].kind() == K::kStr;
      }
      Node items = string_keys ? Node::Map() : Node::Seq();
      for (size_t i = 0; i + 1 < v.items().size(); i += 2) {
        if (string_keys) {
          items.Set(v.items()[i].text(), FromValue(v.items()[i + 1]));
        } else {
          items.Add(Items(v.items(), i, i + 2));
        }
      }
      m.Set("items", std::move(items));
      return m;
    }
    case K::kSlice: {
      Node m = TypedMap("slice");
      m.Set("start", FromValue(v.items()[0]));
      m.Set("stop", FromValue(v.items()[1]));
      m.Set("step", FromValue(v.items()[2]));
      return m;
    }
    case K::kTensor: {
      const TensorInfo& t = v.tensor();
      Node m = TypedMap("torch.Tensor");
      m.Set("shape", IntSeq(t.shape));
      m.Set("dtype", Node::String("torch." + t.dtype));
      m.Set("device", Node::String(t.device));
      if (!t.stride.empty()) m.Set("stride", IntSeq(t.stride));
      if (t.storage_size >= 0) {
        m.Set("storage_offset", Node::Scalar(std::to_string(t.storage_offset)));
        m.Set("storage_size", Node::Scalar(std::to_string(t.storage_size)));
      }
      if (t.requires_grad) m.Set("requires_grad", Node::Scalar("true"));
      if (!t.layout.empty()) m.Set("layout", Node::String(t.layout));
      if (!t.subclass.empty()) m.Set("subclass", Node::String(t.subclass));
      if (t.nnz >= 0) m.Set("nnz", Node::Scalar(std::to_string(t.nnz)));
      if (!t.qscheme.empty()) {
        m.Set("qscheme", Node::String(t.qscheme));
        if (t.qscheme == kPerTensorAffine) {
          std::string scale;
          AppendPyFloat(t.scale, &scale);
          m.Set("scale", Node::Scalar(scale));
          m.Set("zero_point", Node::Scalar(std::to_string(t.zero_point)));
        } else if (t.axis >= 0) {
          m.Set("axis", Node::Scalar(std::to_string(t.axis)));
        }
      }
      return m;
    }
    case K::kSymbol: {
      Node m = TypedMap("symbol");
      m.Set("name", Node::String(v.text()));
      return m;
    }
    case K::kObject: {
      Node m = TypedMap("object");
      m.Set("name", Node::String(v.text()));
      size_t npos = v.positional_count();
      if (npos) m.Set("args", Items(v.items(), 0, npos));
      if (!v.keywords().empty()) {
        Node kwargs = Node::Map();
        for (size_t i = 0; i < v.keywords().size(); ++i) {
          kwargs.Set(v.keywords()[i], FromValue(v.items()[npos + i]));
        }
        m.Set("kwargs", std::move(kwargs));
      }
      return m;
    }
  }
  return Node::Scalar("null");
}

std::string RecordBody(const Call& call) {
  Node body = Node::Map();
  Node& args = body.Set("args", Node::Seq());
  for (const Value& a : call.args) args.Add(FromValue(a));
  Node& kwargs = body.Set("kwargs", Node::Map());
  for (const auto& [name, value] : call.kwargs) kwargs.Set(name, FromValue(value));
  std::string out;
  EmitEntries(body, 2, &out);
  return out;
}

}  // namespace api_tracer::yaml
