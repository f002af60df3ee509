#include "core/sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>
#include <unordered_map>

#include "core/string_hash.h"
#include "core/value.h"
#include "core/writers.h"

namespace api_tracer {

namespace {

constexpr uint64_t kCountMax = UINT64_MAX;
constexpr size_t kMaxFields = 5;  // config, calls, sources, at_most, from

std::string Shown(std::string_view s, size_t max = 60) {
  std::string out(s.substr(0, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s.size() > max ? out + "..." : out;
}

// The 0-based offset of the first byte that is not UTF-8, or npos.
size_t BadUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    uint32_t cp = n == 1 ? c : c & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return i;
    }
    i += n;
  }
  return std::string_view::npos;
}

// Whether a label or config holds a control character (C0, DEL, C1).
bool HasControl(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xa0) return true;  // U+0080..9F
  }
  return false;
}

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
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10
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
        default:
          --i_;
          return Fail("an escape JSON does not have");
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
    return Fail(c == '[' ? "a list: the format has none" : "not a value of the format (a string, a count, true, "
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

bool IsLabel(std::string_view s) {
  size_t chars = 0;
  for (char c : s) chars += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return chars >= 1 && chars <= kMaxLabel && !HasControl(s) && BadUtf8(s) == std::string_view::npos;
}

void Rank(SourceCounts* counts) {
  std::sort(counts->begin(), counts->end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
}

void AppendLabels(const SourceCounts& labels, std::string* out) {
  *out += "labels:\n";
  for (const auto& [label, calls] : labels) {
    *out += "- {\"label\": ";
    AppendJsonString(label, out);
    *out += ", \"calls\": " + std::to_string(calls) + "}\n";
  }
}

void AppendSourceEntry(const SourceEntry& e, std::string* out) {
  *out += "- {\"config\": ";
  AppendJsonString(e.config, out);
  *out += ", \"calls\": " + std::to_string(e.calls) + ", \"sources\": " + std::to_string(e.sources);
  if (e.at_most) *out += ", \"at_most\": true";
  *out += ", \"from\": {";
  for (size_t i = 0; i < e.top.size(); ++i) {
    if (i) *out += ", ";
    AppendJsonString(e.top[i].first, out);
    *out += ": " + std::to_string(e.top[i].second);
  }
  *out += "}}\n";
}

// -- reading ------------------------------------------------------------------------------

namespace {
// `path` opened for reading if it is a regular file: opened without blocking
// and checked once open, so that a FIFO (or /dev/zero, a directory) in its
// place is refused rather than waited on or read without end.
FileError OpenRegular(const std::string& path, std::FILE** out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {path, 0, 0, errno == ENOENT ? "no such file" : std::strerror(errno)};
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    return {path, 0, 0, dir ? "a directory, not a regular file: only regular files are read"
                            : "not a regular file: only regular files are read"};
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *out = ::fdopen(fd, "rb");
  if (!*out) {
    ::close(fd);
    return {path, 0, 0, std::strerror(errno)};
  }
  return {};
}
}  // namespace

FileError SourcesReader::Open(const std::string& path, std::unique_ptr<SourcesReader>* out) {
  std::FILE* f = nullptr;
  if (FileError e = OpenRegular(path, &f); !e.ok()) return e;
  std::unique_ptr<SourcesReader> r(new SourcesReader(path, f));
  if (!r->ReadLabels()) return r->error_;
  *out = std::move(r);
  return {};
}

SourcesReader::~SourcesReader() {
  std::fclose(f_);
  std::free(buf_);
}

bool SourcesReader::Fail(std::string message, size_t column) {
  if (error_.ok()) error_ = {path_, line_, column, std::move(message)};
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
    *error = "a record has the fields " + want + (optional.size() ? " (and at_most)" : "") + ", not " +
             FieldNames(*fields);
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
      return Fail("a label is text without control characters, of 1 to " + std::to_string(kMaxLabel) +
                  " characters");
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
  if (FileError shape = CheckConfigShape(config->text); !shape.ok()) return Fail(shape.message);
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
                " sources made " + std::to_string(made) + (unlisted ? " and more, each at most as many as the last "
                                                                      "listed" : ""));
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

// -- checking a config line -------------------------------------------------------------------

FileError CheckConfigShape(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    auto c = static_cast<unsigned char>(line[i]);
    if (c < 0x20 || c == 0x7f) {
      return {"", 0, i + 1, "a control character in a config line: the tracer writes none"};
    }
  }
  size_t open = line.find('(');
  if (open == std::string_view::npos) return {"", 0, 0, "not a config line: no '(' after its API"};
  if (open == 0) return {"", 0, 1, "not a config line: no API before its '('"};
  return {};
}

FileError CheckConfigLine(std::string_view line, const ParseOptions& options) {
  if (FileError shape = CheckConfigShape(line); !shape.ok()) return shape;
  size_t open = line.find('(');
  std::string call = "f" + std::string(line.substr(open));
  Call parsed;
  Status st = ParseCall(call, &parsed, options);
  if (!st.ok()) return {"", 0, st.column() + open - 1, st.message()};
  return {};
}

// -- merging --------------------------------------------------------------------------------

namespace {

// One input of a merge: its reader, its configs file read beside it, its
// current entry, and its calls per API.
struct Input {
  std::unique_ptr<SourcesReader> reader;
  std::FILE* configs = nullptr;
  std::string configs_path;
  char* buf = nullptr;
  size_t cap = 0, configs_line = 0;
  SourceEntry entry;
  bool live = false;
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> api_calls;

  ~Input() {
    if (configs) std::fclose(configs);
    std::free(buf);
  }

  // The next entry, checked against the configs file's next line.
  FileError Advance() {
    live = reader->Next(&entry);
    if (!reader->error().ok()) return reader->error();
    errno = 0;
    ssize_t n = ::getline(&buf, &cap, configs);
    if (n < 0 && std::ferror(configs)) return {configs_path, 0, 0, std::string("cannot read: ") + std::strerror(errno)};
    if (n >= 0) ++configs_line;
    std::string_view line = n > 0 ? std::string_view(buf, static_cast<size_t>(n) - 1) : std::string_view();
    if (!live) {
      if (n >= 0) {
        return {configs_path, configs_line, 0, "a config past the last of " + reader->path() +
                                                   ": the two are written together and hold the same lines"};
      }
      return {};
    }
    if (n < 0) {
      return {configs_path, 0, 0, "ends before the config of " + reader->path() + ":" +
                                      std::to_string(reader->line()) +
                                      ": the two are written together and hold the same lines"};
    }
    if (buf[n - 1] != '\n' || line != entry.config) {
      return {configs_path, configs_line, 0,
              "differs from " + reader->path() + ":" + std::to_string(reader->line()) +
                  " (the configs there): the two are written together and hold the same lines"};
    }
    std::string_view api = std::string_view(entry.config).substr(0, entry.config.find('('));
    auto it = api_calls.find(api);
    if (it == api_calls.end()) it = api_calls.emplace(std::string(api), 0).first;
    it->second += entry.calls;
    return {};
  }
};

class Buffered {
 public:
  explicit Buffered(Sink* sink) : sink_(sink) {}
  std::string* text() { return &text_; }
  Status MaybeFlush() { return text_.size() >= (1u << 20) ? Flush() : Status::OK(); }
  Status Flush() {
    Status st = sink_->Write(text_);
    text_.clear();
    return st;
  }

 private:
  Sink* sink_;
  std::string text_;
};

}  // namespace

FileError MergeSources(const std::vector<MergeInput>& inputs, Sink* configs_out, Sink* sources_out,
                       const ParseOptions& options, MergeResult* result) {
  std::vector<std::unique_ptr<Input>> in;
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> labels;
  size_t labelled = 0;
  for (const MergeInput& m : inputs) {
    auto input = std::make_unique<Input>();
    if (FileError e = SourcesReader::Open(m.sources, &input->reader); !e.ok()) return e;
    if (FileError e = OpenRegular(m.configs, &input->configs); !e.ok()) return e;
    input->configs_path = m.configs;
    for (const auto& [label, calls] : input->reader->labels()) {
      uint64_t& sum = labels[label];
      if (sum + calls < sum) return {m.sources, 0, 0, "the calls of '" + Shown(label) + "' add up past 2^64 - 1"};
      sum += calls;
    }
    labelled += input->reader->labels().size();
    in.push_back(std::move(input));
  }
  const bool disjoint = labels.size() == labelled;  // no source in two inputs
  SourceCounts head(labels.begin(), labels.end());
  std::sort(head.begin(), head.end());
  Buffered configs(configs_out), sources(sources_out);
  AppendLabels(head, sources.text());

  // the inputs by their current config (then index: equal lines meet in input order)
  auto later = [&](size_t a, size_t b) {
    int c = in[a]->entry.config.compare(in[b]->entry.config);
    return c != 0 ? c > 0 : a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (size_t i = 0; i < in.size(); ++i) {
    if (FileError e = in[i]->Advance(); !e.ok()) return e;
    if (in[i]->live) heap.push(i);
  }
  std::vector<size_t> group;
  SourceEntry merged;
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> counts;
  uint64_t distinct = 0;
  while (!heap.empty()) {
    group.clear();
    group.push_back(heap.top());
    heap.pop();
    while (!heap.empty() && in[heap.top()]->entry.config == in[group[0]]->entry.config) {
      group.push_back(heap.top());
      heap.pop();
    }
    const SourceEntry& first = in[group[0]]->entry;
    if (FileError e = CheckConfigLine(first.config, options); !e.ok()) {
      e.path = in[group[0]]->reader->path();
      e.line = in[group[0]]->reader->line();
      e.column = 0;  // a column of the config, not of the record's line
      return e;
    }
    if (group.size() == 1) {
      merged = first;
    } else {
      merged.config = first.config;
      merged.calls = 0;
      counts.clear();
      bool complete = true, at_most = !disjoint;
      uint64_t sum_sources = 0;
      for (size_t i : group) {
        const SourceEntry& e = in[i]->entry;
        if (merged.calls + e.calls < merged.calls) {
          return {in[i]->reader->path(), in[i]->reader->line(), 0, "the calls of this config add up past 2^64 - 1"};
        }
        merged.calls += e.calls;
        sum_sources = std::min<uint64_t>(sum_sources + std::min<uint64_t>(e.sources, head.size()), head.size());
        complete = complete && e.sources == e.top.size() && !e.at_most;
        at_most = at_most || e.at_most;
        for (const auto& [label, n] : e.top) counts[label] += n;
      }
      merged.top.assign(counts.begin(), counts.end());
      Rank(&merged.top);
      // no more sources than labels, however the inputs overlap
      merged.sources = complete ? merged.top.size() : std::max<uint64_t>(sum_sources, merged.top.size());
      merged.at_most = !complete && at_most;
      if (merged.top.size() > kMaxListed) merged.top.resize(kMaxListed);
    }
    if (distinct++ == 0) *sources.text() += "configs:\n";
    *configs.text() += merged.config;
    configs.text()->push_back('\n');
    AppendSourceEntry(merged, sources.text());
    for (size_t i : group) {
      if (FileError e = in[i]->Advance(); !e.ok()) return e;
      if (in[i]->live) heap.push(i);
    }
    Status st = configs.MaybeFlush();
    if (st.ok()) st = sources.MaybeFlush();
    if (!st.ok()) return {"", 0, 0, st.message()};
  }
  if (distinct == 0) *sources.text() += "configs: []\n";
  Status st = configs.Flush();
  if (st.ok()) st = sources.Flush();
  if (!st.ok()) return {"", 0, 0, st.message()};
  result->configs = distinct;
  result->api_calls.clear();
  for (const auto& input : in) {
    result->api_calls.emplace_back(input->api_calls.begin(), input->api_calls.end());
  }
  return {};
}

}  // namespace api_tracer
