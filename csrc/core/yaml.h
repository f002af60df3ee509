// A minimal block-style YAML emitter, and the YAML form of config values.
//
// Only what the output files need: sequences, mappings and scalars in block
// style, laid out the way PyYAML's default dumper lays them out (sequences
// inside mappings are not indented). Strings are written plain when a YAML
// 1.1 or 1.2 loader reads them back as the same string, else double-quoted.
// Thread-safety: pure functions over value types.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/value.h"

namespace api_tracer::yaml {

struct Node {
  enum class Kind { kScalar, kString, kSeq, kMap };

  // A scalar whose text is already YAML (a number, true, null).
  static Node Scalar(std::string text) { return Node(Kind::kScalar, std::move(text)); }
  // A string, quoted when needed.
  static Node String(std::string text) { return Node(Kind::kString, std::move(text)); }
  static Node Seq() { return Node(Kind::kSeq, {}); }
  static Node Map() { return Node(Kind::kMap, {}); }

  Node& Add(Node item) {
    items.push_back(std::move(item));
    return items.back();
  }
  Node& Set(std::string key, Node value) {
    entries.emplace_back(std::move(key), std::move(value));
    return entries.back().second;
  }

  Kind kind;
  std::string text;
  std::vector<Node> items;                            // kSeq
  std::vector<std::pair<std::string, Node>> entries;  // kMap

 private:
  Node(Kind k, std::string t) : kind(k), text(std::move(t)) {}
};

// True when `s` can be written as a plain scalar and loads back as this string.
bool IsPlainString(std::string_view s);
// `s` as a YAML scalar: plain when safe, else double-quoted.
void AppendString(std::string_view s, std::string* out);
// Python's repr of `d` in a form YAML loaders read as that float
// ("1.0e-05", ".inf", ".nan").
void AppendFloat(double d, std::string* out);

// A document whose top node is a sequence or mapping, at `indent`.
void Emit(const Node& node, int indent, std::string* out);
// The entries of a mapping, each on its own line at `indent`.
void EmitEntries(const Node& map, int indent, std::string* out);

// The lines of one api_trace.yaml record after its "- api:" line (and after
// a "level:" line where there is one): "  args:\n  - ...\n  kwargs: ...\n",
// each value in its YAML form (docs/format.md lists each kind's form).
std::string RecordBody(const Call& call);

}  // namespace api_tracer::yaml
