// api_config_sources.yaml's records (sources.h): labels and config entries
// written, a config line checked as every reader of the file checks it, and
// the text helpers the reader and the merge share (sources_internal.h).
#include "core/sources.h"

#include <algorithm>
#include <cstdio>

#include "core/sources_internal.h"
#include "core/writers.h"

namespace api_tracer {

namespace sources_internal {

std::string Shown(std::string_view s, size_t max) {
  std::string out(s.substr(0, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s.size() > max ? out + "..." : out;
}

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

}  // namespace sources_internal

using sources_internal::BadUtf8;

namespace {

// Whether a label holds a control character (C0, DEL, C1).
bool HasControl(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xa0) return true;  // U+0080..9F
  }
  return false;
}

}  // namespace

bool IsLabel(std::string_view s) {
  size_t chars = 0;
  for (char c : s) chars += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return chars >= 1 && chars <= kMaxLabel && !HasControl(s) && BadUtf8(s) == std::string_view::npos;
}

void Rank(SourceCounts* counts) {
  std::sort(counts->begin(), counts->end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
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

// -- checking a config line -------------------------------------------------------------------

Status CheckConfigShape(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    auto c = static_cast<unsigned char>(line[i]);
    if (c < 0x20 || c == 0x7f) {
      return Status::ParseError("a control character in a config line: the tracer writes none", i + 1);
    }
  }
  size_t open = line.find('(');
  if (open == std::string_view::npos) return Status::ParseError("not a config line: no '(' after its API", 0);
  if (open == 0) return Status::ParseError("not a config line: no API before its '('", 1);
  return Status::OK();
}

Status CheckConfigLine(std::string_view line, const ParseOptions& options) {
  if (Status shape = CheckConfigShape(line); !shape.ok()) return shape;
  size_t open = line.find('(');
  std::string call = "f" + std::string(line.substr(open));
  Call parsed;
  Status st = ParseCall(call, &parsed, options);
  if (!st.ok()) return Status::ParseError(st.message(), st.column() + open - 1);
  return Status::OK();
}

}  // namespace api_tracer
