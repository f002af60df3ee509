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
// Whether `s` is `lower` (lowercase ASCII) in any case.
bool EqualsIgnoringCase(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != lower[i]) return false;
  }
  return true;
}

bool LooksTyped(std::string_view s) {
  static constexpr std::string_view kWords[] = {"yes", "no", "true", "false", "on", "off", "y", "n", "null", "~"};
  if (s.size() <= 5) {  // the longest word
    for (std::string_view w : kWords) {
      if (EqualsIgnoringCase(s, w)) return true;
    }
  }
  if (s == "<<" || s == "=") return true;
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body.empty()) return false;
  auto numeric = [](std::string_view t) {
    for (char c : t) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == 'x' || c == 'X' ||
                c == 'o' || c == 'O' || c == '_' || c == '.' || c == ':' || c == '+' || c == '-';
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
    std::string_view rest = body.substr(1);
    return EqualsIgnoringCase(rest, "inf") || EqualsIgnoringCase(rest, "nan") ||
           (!rest.empty() && rest[0] >= '0' && rest[0] <= '9' && numeric(rest));
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

}  // namespace

bool IsPlainString(std::string_view s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  const std::string_view kIndicators = "#,[]{}&*!|>'\"%@`";
  if (kIndicators.find(s.front()) != std::string_view::npos) return false;
  if ((s.front() == '-' || s.front() == '?' || s.front() == ':') && (s.size() == 1 || s[1] == ' ')) {
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

void EmitEntries(const Node& map, int indent, std::string* out) { EmitMapEntries(map, indent, out, false); }

namespace {

// Values written straight into block-style YAML, laid out as Emit lays out
// the same Node tree (a mapping's sequence not indented; after "- ", the
// first entry or item on that line), without building the tree: a record
// body is made once per distinct config, on the traced thread, and its cost
// is the cost of a config's first sight.
class ValueWriter {
 public:
  explicit ValueWriter(std::string* out) : out_(out) {}

  // The entries of a mapping at `indent`; with `first_inline`, the first one
  // continues the line ("- " was written).
  class Entries {
   public:
    Entries(ValueWriter* w, int indent, bool first_inline) : w_(w), indent_(indent), inline_(first_inline) {}
    void Raw(std::string_view key, std::string_view yaml) {
      Key(key);
      w_->out_->push_back(' ');
      w_->out_->append(yaml);
      w_->out_->push_back('\n');
    }
    void String(std::string_view key, std::string_view s) {
      Key(key);
      w_->out_->push_back(' ');
      AppendString(s, w_->out_);
      w_->out_->push_back('\n');
    }
    void Int(std::string_view key, int64_t i) {
      char buf[24];
      Raw(key, std::string_view(buf, std::to_chars(buf, buf + sizeof buf, i).ptr));
    }
    void Float(std::string_view key, double d) {
      std::string text;
      AppendFloat(d, &text);
      Raw(key, text);
    }
    void Ints(std::string_view key, const std::vector<int64_t>& v) {
      Key(key);
      std::string* out = w_->out_;
      out->append(v.empty() ? " []\n" : "\n");
      for (int64_t i : v) {
        Indent(indent_, out);
        out->append("- ");
        char buf[24];
        out->append(buf, std::to_chars(buf, buf + sizeof buf, i).ptr);
        out->push_back('\n');
      }
    }
    void Items(std::string_view key, const std::vector<Value>& items, size_t begin, size_t end) {
      Key(key);
      w_->out_->append(begin == end ? " []\n" : "\n");
      w_->Seq(items, begin, end, indent_, false);
    }
    void Value(std::string_view key, const api_tracer::Value& v) {
      Key(key);
      w_->AfterKey(v, indent_);
    }
    // A nested mapping: its entries follow, at indent + 2 (Begin), or "{}".
    Entries Map(std::string_view key, bool empty) {
      Key(key);
      w_->out_->append(empty ? " {}\n" : "\n");
      return Entries(w_, indent_ + 2, false);
    }
    // A nested sequence: its items follow at this indent, or "[]".
    void SeqKey(std::string_view key, bool empty) {
      Key(key);
      w_->out_->append(empty ? " []\n" : "\n");
    }
    int indent() const { return indent_; }

   private:
    void Key(std::string_view key) {
      if (!inline_) Indent(indent_, w_->out_);
      inline_ = false;
      AppendString(key, w_->out_);
      w_->out_->push_back(':');
    }
    ValueWriter* w_;
    int indent_;
    bool inline_;
  };

  // `v` after "KEY:" of a mapping at `indent`.
  void AfterKey(const api_tracer::Value& v, int indent) {
    if (IsScalar(v)) {
      out_->push_back(' ');
      Scalar(v);
    } else if (v.kind() == Value::Kind::kList) {
      out_->append(v.items().empty() ? " []\n" : "\n");
      Seq(v.items(), 0, v.items().size(), indent, false);
    } else {
      out_->push_back('\n');
      Map(v, Entries(this, indent + 2, false));
    }
  }

  // `v` after "- ", its lines at `indent`.
  void Inline(const api_tracer::Value& v, int indent) {
    if (IsScalar(v)) {
      Scalar(v);
    } else if (v.kind() == Value::Kind::kList) {
      if (v.items().empty()) out_->append("[]\n");
      Seq(v.items(), 0, v.items().size(), indent, true);
    } else {
      Map(v, Entries(this, indent, true));
    }
  }

  // items[begin, end) as a sequence at `indent`.
  void Seq(const std::vector<api_tracer::Value>& items, size_t begin, size_t end, int indent, bool first_inline) {
    for (size_t i = begin; i < end; ++i) {
      if (i > begin || !first_inline) Indent(indent, out_);
      out_->append("- ");
      Inline(items[i], indent + 2);
    }
  }

 private:
  static bool IsScalar(const api_tracer::Value& v) {
    using K = Value::Kind;
    K k = v.kind();
    return k == K::kNone || k == K::kBool || k == K::kInt || k == K::kBigInt || k == K::kFloat || k == K::kStr;
  }

  // A scalar's text, then the end of its line.
  void Scalar(const api_tracer::Value& v) {
    using K = Value::Kind;
    switch (v.kind()) {
      case K::kNone: out_->append("null"); break;
      case K::kBool: out_->append(v.as_bool() ? "true" : "false"); break;
      case K::kInt: {
        char buf[24];
        out_->append(buf, std::to_chars(buf, buf + sizeof buf, v.as_int()).ptr);
        break;
      }
      case K::kBigInt: out_->append(v.text()); break;
      case K::kFloat: AppendFloat(v.real(), out_); break;
      default: AppendString(v.text(), out_); break;  // kStr
    }
    out_->push_back('\n');
  }

  // The mapping form of a value that is not a scalar or a list
  // (docs/format.md lists each kind's form).
  void Map(const api_tracer::Value& v, Entries e) {
    API_TRACER_HANDLES_VALUE_KINDS(15);
    using K = Value::Kind;
    switch (v.kind()) {
      case K::kComplex:
        e.String("type", "complex");
        e.Float("real", v.real());
        e.Float("imag", v.imag());
        return;
      case K::kEllipsis: e.String("type", "ellipsis"); return;
      case K::kTuple:
        e.String("type", "tuple");
        e.Items("items", v.items(), 0, v.items().size());
        return;
      case K::kDict: {
        e.String("type", "dict");
        const auto& items = v.items();
        bool string_keys = true;
        for (size_t i = 0; i < items.size(); i += 2) string_keys = string_keys && items[i].kind() == K::kStr;
        if (string_keys) {
          Entries inner = e.Map("items", items.empty());
          for (size_t i = 0; i + 1 < items.size(); i += 2) inner.Value(items[i].text(), items[i + 1]);
        } else {  // a sequence of [key, value] pairs
          e.SeqKey("items", false);
          for (size_t i = 0; i + 1 < items.size(); i += 2) {
            Indent(e.indent(), out_);
            out_->append("- ");
            Seq(items, i, i + 2, e.indent() + 2, true);
          }
        }
        return;
      }
      case K::kSlice:
        e.String("type", "slice");
        e.Value("start", v.items()[0]);
        e.Value("stop", v.items()[1]);
        e.Value("step", v.items()[2]);
        return;
      case K::kTensor: {
        const TensorInfo& t = v.tensor();
        e.String("type", "torch.Tensor");
        e.Ints("shape", t.shape);
        std::string dtype = "torch." + t.dtype;
        e.String("dtype", dtype);
        e.String("device", t.device);
        if (!t.stride.empty()) e.Ints("stride", t.stride);
        if (t.storage_size >= 0) {
          e.Int("storage_offset", t.storage_offset);
          e.Int("storage_size", t.storage_size);
        }
        if (t.requires_grad) e.Raw("requires_grad", "true");
        if (!t.layout.empty()) e.String("layout", t.layout);
        if (!t.subclass.empty()) e.String("subclass", t.subclass);
        if (t.nnz >= 0) e.Int("nnz", t.nnz);
        if (!t.qscheme.empty()) {
          e.String("qscheme", t.qscheme);
          if (t.qscheme == kPerTensorAffine) {
            std::string scale;
            AppendPyFloat(t.scale, &scale);
            e.Raw("scale", scale);
            e.Int("zero_point", t.zero_point);
          } else if (t.axis >= 0) {
            e.Int("axis", t.axis);
          }
        }
        return;
      }
      case K::kSymbol:
        e.String("type", "symbol");
        e.String("name", v.text());
        return;
      case K::kObject: {
        e.String("type", "object");
        e.String("name", v.text());
        size_t npos = v.positional_count();
        if (npos) e.Items("args", v.items(), 0, npos);
        if (!v.keywords().empty()) {
          Entries kwargs = e.Map("kwargs", false);
          for (size_t i = 0; i < v.keywords().size(); ++i) kwargs.Value(v.keywords()[i], v.items()[npos + i]);
        }
        return;
      }
      default: return;  // scalars and lists are not mappings
    }
  }

  std::string* out_;
};

}  // namespace

std::string RecordBody(const Call& call) {
  std::string out;
  ValueWriter w(&out);
  ValueWriter::Entries body(&w, 2, false);
  body.Items("args", call.args, 0, call.args.size());
  ValueWriter::Entries kwargs = body.Map("kwargs", call.kwargs.empty());
  for (const auto& [name, value] : call.kwargs) kwargs.Value(name, value);
  return out;
}

}  // namespace api_tracer::yaml
