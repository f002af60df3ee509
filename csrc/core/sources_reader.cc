// SourcesReader (sources.h): one api_config_sources.yaml read a record at a
// time, every record checked as it comes by a strict parser of the JSON
// subset the writer writes (RecordParser: no recursion, every error with
// its column).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/sources.h"
#include "core/sources_internal.h"

namespace api_tracer {

using sources_internal::BadUtf8;
using sources_internal::Shown;

namespace {

constexpr uint64_t kCountMax = UINT64_MAX;
constexpr size_t kMaxFields = 5;  // config, calls, sources, at_most, from

// One value of a record: what the format has (a string, a count, true, an
// object of counts); anything else is refused where it is met.
struct JValue {
  enum Kind { kString, kCount, kTrue, kCounts } kind = kString;
  std::string text;
  uint64_t count = 0;
  SourceCounts counts;
};

// A strict reader of one record, the JSON object after "- ": no recursion
// (the one nested object holds counts only), every error with its column.
class RecordParser {
 public:
  RecordParser(std::string_view s, size_t offset) : s_(s), offset_(offset) {}

  bool Object(std::vector<std::pair<std::string, JValue>>* fields) {
    if (!Eat('{')) return Fail("expected '{'");
    if (Eat('}')) return End();
    do {
      std::string key;
      if (!String(&key) || !Expect(':')) return false;
      for (const auto& f : *fields) {
        if (f.first == key) return Fail("a key given twice");
      }
      JValue v;
      if (!Value(&v)) return false;
      fields->emplace_back(std::move(key), std::move(v));
      if (fields->size() > kMaxFields) return Fail("more fields than a record has");
    } while (Eat(','));
    return Expect('}') && End();
  }

  std::string error;
  size_t column = 0;

 private:
  bool Fail(std::string m) {
    if (error.empty()) {
      error = std::move(m);
      column = offset_ + i_ + 1;
    }
    return false;
  }
  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool Eat(char c) {
    Ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Expect(char c) { return Eat(c) || Fail(std::string("expected '") + c + "'"); }
  bool End() {
    Ws();
    return i_ == s_.size() || Fail("more after the record");
  }

  bool Hex4(uint32_t* out) {
    if (i_ + 4 > s_.size()) return Fail("a \\u escape cut short");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return Fail("a \\u escape of four hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    *out = v;
    return true;
  }

  bool String(std::string* out) {
    Ws();
    if (i_ >= s_.size() || s_[i_] != '"') return Fail("expected a string");
    ++i_;
    while (true) {
      if (i_ >= s_.size()) return Fail("a string without its closing quote");
      char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("a control character in a string (JSON escapes it)");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return Fail("a string cut inside an escape");
      char e = s_[i_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xd800 && cp <= 0xdbff) {
            uint32_t low;
            if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') return Fail("a lone surrogate escape");
            i_ += 2;
            if (!Hex4(&low)) return false;
            if (low < 0xdc00 || low > 0xdfff) return Fail("a lone surrogate escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            return Fail("a lone surrogate escape");
          }
          AppendUtf8(cp, out);
          break;
        }
        default: --i_; return Fail("an escape JSON does not have");
      }
    }
  }

  bool Count(uint64_t* out) {
    size_t start = i_;
    uint64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      auto d = static_cast<uint64_t>(s_[i_] - '0');
      if (v > (kCountMax - d) / 10) {
        i_ = start;
        return Fail("a count above 2^64 - 1, more than a tracer counts");
      }
      v = v * 10 + d;
      ++i_;
    }
    if (i_ - start > 1 && s_[start] == '0') {
      i_ = start;
      return Fail("a number with a leading zero");
    }
    if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) {
      i_ = start;
      return Fail("a count is a whole number");
    }
    *out = v;
    return true;
  }

  bool Value(JValue* v) {
    Ws();
    char c = i_ < s_.size() ? s_[i_] : '\0';
    if (c == '"') {
      v->kind = JValue::kString;
      return String(&v->text);
    }
    if (c >= '0' && c <= '9') {
      v->kind = JValue::kCount;
      return Count(&v->count);
    }
    if (s_.substr(i_, 4) == "true") {
      i_ += 4;
      v->kind = JValue::kTrue;
      return true;
    }
    if (c == '{') {
      ++i_;
      v->kind = JValue::kCounts;
      if (Eat('}')) return true;
      do {
        std::string key;
        uint64_t n;
        if (!String(&key) || !Expect(':')) return false;
        Ws();
        if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') return Fail("a source's calls are a count");
        if (!Count(&n)) return false;
        for (const auto& kv : v->counts) {
          if (kv.first == key) return Fail("a key given twice");
        }
        v->counts.emplace_back(std::move(key), n);
        if (v->counts.size() > kMaxListed) return Fail("more sources than a record lists");
      } while (Eat(','));
      return Expect('}');
    }
    if (c == '-') return Fail("a count is 0 or more");
    return Fail(c == '[' ? "a list: the format has none"
                         : "not a value of the format (a string, a count, true, "
                           "an object of counts)");
  }

  std::string_view s_;
  size_t offset_;
  size_t i_ = 0;
};

const JValue* Field(const std::vector<std::pair<std::string, JValue>>& fields, std::string_view key) {
  for (const auto& f : fields) {
    if (f.first == key) return &f.second;
  }
  return nullptr;
}

std::string FieldNames(const std::vector<std::pair<std::string, JValue>>& fields) {
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ", ") + Shown(f.first, 30);
  return out;  // at most kMaxFields + 1 names: the parser stops past them
}

}  // namespace

// -- reading ------------------------------------------------------------------------------

Status SourcesReader::Open(const std::string& path, std::unique_ptr<SourcesReader>* out) {
  std::FILE* f = nullptr;
  if (Status st = OpenRegularFile(path, &f); !st.ok()) return st;
  std::unique_ptr<SourcesReader> r(new SourcesReader(path, f));
  if (!r->ReadLabels()) return r->error_;
  *out = std::move(r);
  return Status::OK();
}

SourcesReader::~SourcesReader() {
  std::fclose(f_);
  std::free(buf_);
}

bool SourcesReader::Fail(std::string message, size_t column) {
  if (error_.ok()) error_ = Status::Corruption(std::move(message)).At(path_, line_, column);
  return false;
}

bool SourcesReader::ReadLine(std::string_view* text) {
  errno = 0;
  ssize_t n = ::getline(&buf_, &cap_, f_);
  if (n < 0) {
    if (errno != 0 && !std::feof(f_)) return Fail(std::string("cannot read: ") + std::strerror(errno));
    *text = {};
    return false;
  }
  ++line_;
  std::string_view s(buf_, static_cast<size_t>(n));
  if (s.back() != '\n') return Fail("ends inside a line: the file was cut");
  s.remove_suffix(1);
  if (!s.empty() && s.back() == '\r') {
    return Fail("a carriage return: the tracer writes none (the file's line endings were changed)");
  }
  if (size_t bad = BadUtf8(s); bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(s[bad]));
    return Fail(std::string("not UTF-8: byte ") + hex, bad + 1);
  }
  *text = s;
  return true;
}

namespace {
// A record line's fields: "- {...}", its keys exactly `keys` (and `optional`).
bool ReadRecord(std::string_view text, std::initializer_list<std::string_view> keys,
                std::initializer_list<std::string_view> optional, std::vector<std::pair<std::string, JValue>>* fields,
                std::string* error, size_t* column) {
  if (text.substr(0, 3) != "- {") {
    *error = "expected a record '- {...}', not " + Shown(text);
    return false;
  }
  RecordParser p(text.substr(2), 2);
  if (!p.Object(fields)) {
    *error = "not a record as the tracer writes it: " + p.error;
    *column = p.column;
    return false;
  }
  size_t have = 0;
  for (auto k : keys) have += Field(*fields, k) != nullptr;
  size_t extra = 0;
  for (auto k : optional) extra += Field(*fields, k) != nullptr;
  if (have != keys.size() || have + extra != fields->size()) {
    std::string want;
    for (auto k : keys) want += (want.empty() ? "" : ", ") + std::string(k);
    *error =
        "a record has the fields " + want + (optional.size() ? " (and at_most)" : "") + ", not " + FieldNames(*fields);
    return false;
  }
  return true;
}

std::string CountError(std::string_view what, uint64_t least) {
  return std::string(what) + " must be a whole number from " + std::to_string(least) + " to 2^64 - 1";
}
}  // namespace

bool SourcesReader::ReadLabels() {
  std::string_view text;
  if (!ReadLine(&text)) {
    if (!error_.ok()) return false;
    line_ = 0;
    return Fail("empty: the tracer writes at least 'labels:' and a label here; the file was cut");
  }
  if (text != "labels:") return Fail("expected 'labels:', not " + Shown(text));
  while (true) {
    if (!ReadLine(&text)) {
      if (!error_.ok()) return false;
      line_ = 0;
      return Fail("no 'configs:' after the labels: the file was cut");
    }
    if (text == "configs:" || text == "configs: []") {
      configs_line_ = line_;
      empty_configs_ = text == "configs: []";
      break;
    }
    std::vector<std::pair<std::string, JValue>> fields;
    std::string error;
    size_t column = 0;
    if (!ReadRecord(text, {"label", "calls"}, {}, &fields, &error, &column)) return Fail(error, column);
    const JValue* label = Field(fields, "label");
    const JValue* calls = Field(fields, "calls");
    if (label->kind != JValue::kString || !IsLabel(label->text)) {
      return Fail("a label is text without control characters, of 1 to " + std::to_string(kMaxLabel) + " characters");
    }
    if (calls->kind != JValue::kCount) return Fail(CountError("calls", 0));
    if (!labels_.empty() && label->text <= labels_.back().first) {
      return Fail(label->text == labels_.back().first ? "the label '" + Shown(label->text) + "' is listed twice"
                                                      : "the labels are out of order: the tracer writes them sorted");
    }
    label_index_.emplace(label->text, labels_.size());
    labels_.emplace_back(label->text, calls->count);
  }
  if (labels_.empty()) {
    line_ = 1;
    return Fail("no label: a set with this file has at least one source");
  }
  listed_.assign(labels_.size(), 0);
  return true;
}

bool SourcesReader::Next(SourceEntry* e) {
  if (done_ || !error_.ok()) return false;
  std::string_view text;
  if (!ReadLine(&text)) {
    if (!error_.ok()) return false;
    done_ = true;
    uint64_t labelled = 0;
    for (size_t i = 0; i < labels_.size(); ++i) {
      labelled += labels_[i].second;
      if (listed_[i] > labels_[i].second) {
        line_ = configs_line_;
        return Fail("the configs list " + std::to_string(listed_[i]) + " calls from '" + Shown(labels_[i].first) +
                    "', more than its " + std::to_string(labels_[i].second) + " calls");
      }
    }
    if (!empty_configs_ && line_ == configs_line_) {
      return Fail("'configs:' with no config after it: the tracer writes 'configs: []'");
    }
    if (total_ != labelled) {
      line_ = configs_line_;
      return Fail("the configs' calls add up to " + std::to_string(total_) + ", the labels' to " +
                  std::to_string(labelled));
    }
    return false;
  }
  if (empty_configs_) return Fail("a line after 'configs: []'");
  std::vector<std::pair<std::string, JValue>> fields;
  std::string error;
  size_t column = 0;
  if (!ReadRecord(text, {"config", "calls", "sources", "from"}, {"at_most"}, &fields, &error, &column)) {
    return Fail(error, column);
  }
  const JValue* config = Field(fields, "config");
  const JValue* calls = Field(fields, "calls");
  const JValue* sources = Field(fields, "sources");
  const JValue* from = Field(fields, "from");
  const JValue* at_most = Field(fields, "at_most");
  if (config->kind != JValue::kString) return Fail("a config is a config line");
  if (Status shape = CheckConfigShape(config->text); !shape.ok()) return Fail(shape.message());
  if (calls->kind != JValue::kCount || calls->count < 1) return Fail(CountError("calls", 1));
  if (sources->kind != JValue::kCount || sources->count < 1) return Fail(CountError("sources", 1));
  if (at_most && at_most->kind != JValue::kTrue) return Fail("at_most is written only as true");
  size_t most = static_cast<size_t>(std::min<uint64_t>(sources->count, kMaxListed));
  if (from->kind != JValue::kCounts || from->counts.empty() || from->counts.size() > most) {
    return Fail("from lists 1 to " + std::to_string(most) + " sources (of its " + std::to_string(sources->count) +
                ") with their calls");
  }
  uint64_t made = 0;
  for (const auto& [label, n] : from->counts) {
    auto it = label_index_.find(label);
    if (it == label_index_.end()) return Fail("from names '" + Shown(label) + "', which is not among the labels");
    if (n < 1) return Fail(CountError("the calls from '" + Shown(label) + "'", 1));
    listed_[it->second] += n;
    made += n;
    if (made < n) return Fail("from lists more calls than 2^64 - 1");
  }
  SourceCounts ranked = from->counts;
  Rank(&ranked);
  if (ranked != from->counts) return Fail("from lists its sources by calls, most first, ties by label");
  if (sources->count > labels_.size()) {
    return Fail("sources: " + std::to_string(sources->count) + ", more than the " + std::to_string(labels_.size()) +
                " labels");
  }
  uint64_t unlisted = sources->count - from->counts.size();
  if (!at_most && from->counts.size() != most) {
    return Fail("from lists " + std::to_string(from->counts.size()) + " of its " + std::to_string(sources->count) +
                " sources: the first " + std::to_string(most) + " are listed");
  }
  // each unlisted source made at least 1 call, and at most the last listed one's
  uint64_t least = from->counts.back().second;
  uint64_t rest = calls->count - std::min(made, calls->count);  // what the unlisted made
  bool adds_up = unlisted ? rest >= unlisted && (rest - 1) / unlisted + 1 <= least : made == calls->count;
  if (made > calls->count || (!at_most && !adds_up)) {
    return Fail("calls: " + std::to_string(calls->count) + ", but its " + std::to_string(sources->count) +
                " sources made " + std::to_string(made) +
                (unlisted ? " and more, each at most as many as the last "
                            "listed"
                          : ""));
  }
  if (config->text <= previous_ && configs_line_ + 1 < line_) {
    return Fail(std::string("the config is ") + (config->text == previous_ ? "twice" : "out of order") +
                " (after line " + std::to_string(line_ - 1) + "): the tracer writes them byte-wise sorted, once each");
  }
  total_ += calls->count;
  if (total_ < calls->count) return Fail("the configs' calls add up past 2^64 - 1");
  previous_ = config->text;
  e->config = config->text;
  e->calls = calls->count;
  e->sources = sources->count;
  e->top = from->counts;
  e->at_most = at_most != nullptr;
  return true;
}

}  // namespace api_tracer
