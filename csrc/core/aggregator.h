// Aggregator: the distinct configs of one output set, their counts, the
// order APIs were first seen in, up to kMaxStacks distinct call stacks per
// API, and (when asked) the value profiles of integer tensor arguments.
//
// A call arrives as its key (key.h). The first time a key is seen it is
// decoded (which checks it) and kept; its config line and YAML record body
// are formatted once, when first needed (by a trace writer's thread, a
// snapshot), not on the traced thread; every later call with that key only
// bumps a counter. Memory therefore grows
// with the number of distinct configs, not with the number of calls.
//
// Ownership: Config objects live as long as the Aggregator; pointers to them
// stay valid. Thread-safety: all methods may be called concurrently. Record
// looks a key up in a per-thread cache first and takes the mutex only for a
// key the thread has not met yet: no lock is shared on the hot path. Counts
// are atomics; a config's value profiles have a lock of their own (taken
// only when profiles are kept, beside reading the tensors' data).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/api_table.h"
#include "core/format.h"
#include "core/key.h"
#include "core/status.h"
#include "core/per_thread.h"
#include "core/string_hash.h"

namespace api_tracer {

// A call stack: its frames as the stack format wrote them, outermost first.
using Stack = std::vector<std::string>;

class Aggregator {
 public:
  static constexpr size_t kMaxStacks = 3;

  // A distinct config. Its line, YAML record body and profile paths are
  // formatted once, when first asked for (by a trace writer, a snapshot or
  // a test), by whichever thread asks first; the call that made the config
  // only checks its key (CheckCall, which builds nothing). A first sight
  // then costs little more than a repeat on the traced thread.
  struct Config {
    ApiId api;
    const std::string* yaml_header;  // ApiTable::YamlHeader(api)
    std::atomic<uint64_t> count{0};
    mutable std::mutex profiles_mu;
    std::vector<ValueProfile> profiles;  // with value profiles: one per profiled tensor argument

    const std::string& line() const { return Rendered().line; }            // the config line
    const std::string& yaml_body() const { return Rendered().yaml_body; }  // yaml::RecordBody of the call
    // With value profiles: where each profiled tensor argument is
    // ("args[1]", "kwargs.index"; IsProfiledDtype), in the order of `profiles`.
    const std::vector<std::string>& profile_paths() const { return Rendered().profile_paths; }

   private:
    friend class Aggregator;
    struct Text {
      std::string line, yaml_body;
      std::vector<std::string> profile_paths;
    };
    const Text& Rendered() const;

    const Aggregator* owner = nullptr;
    std::string_view key;  // configs_'s copy
    mutable std::once_flag once;
    mutable Text text;
  };

  // value_profiles: keep the profiles of integer and bool tensor
  // arguments; float_profiles: of floating ones too.
  Aggregator(const ApiTable* apis, FormatOptions format, bool value_profiles = false, bool float_profiles = false)
      : apis_(apis), format_(format), value_profiles_(value_profiles), float_profiles_(float_profiles) {}
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  // Finds or creates the config of `key`, counts one call of it, and merges
  // `profiles` (one per profiled tensor argument) into it when value profiles
  // are kept. nullptr (and *status set) only for a key that cannot be decoded.
  const Config* Record(std::string_view key, std::span<const ValueProfile> profiles, Status* status);
  const Config* Record(std::string_view key, Status* status) { return Record(key, {}, status); }

  // Whether `api` still has room for another distinct stack.
  bool WantsStack(ApiId api) const;
  // Offers a stack identified by `hash`; `make` builds its frames, and is
  // only called when the stack is new and there is room for it. `make` runs
  // without the aggregator's locks held (it may run Python code, which may
  // wait for the GIL: a snapshot must never wait for it in turn).
  void AddStack(ApiId api, uint64_t hash, const std::function<Stack()>& make);

  // Snapshots for the writers (writers.h).
  struct ApiCount {
    ApiId api;
    uint64_t count;
  };
  // Per API, in the order the APIs were first seen.
  std::vector<ApiCount> ApiCounts() const { return CountsAndLines().api_counts; }
  // Every distinct config line (duplicates possible: two keys may differ only
  // in fields a config line does not show).
  std::vector<std::string> ConfigLines() const { return CountsAndLines().config_lines; }
  // Both at one moment: while calls are still recorded, the API of every
  // line is among the counts.
  // config_counts[i] is the calls of config_lines[i], read with api_counts.
  struct CountsAndLinesResult {
    std::vector<ApiCount> api_counts;
    std::vector<std::string> config_lines;
    std::vector<uint64_t> config_counts;
  };
  CountsAndLinesResult CountsAndLines() const;
  // Per API that has stacks: its stacks in first-seen order.
  std::vector<std::pair<ApiId, std::vector<Stack>>> Stacks() const;
  // Per config with integer tensor arguments: its line and the profile of
  // each argument that held values (two keys may share a line: the writer
  // merges them).
  using PathProfiles = std::vector<std::pair<std::string, ValueProfile>>;
  std::vector<std::pair<std::string, PathProfiles>> ValueProfiles() const;
  const ApiTable& apis() const { return *apis_; }

 private:
  // A thread's view of configs_: keys are configs_'s own (nodes never move).
  using LocalCache = std::unordered_map<std::string_view, Config*>;
  struct StackSet {
    std::vector<uint64_t> hashes;
    std::vector<Stack> stacks;
  };
  // The config of `key` and the key as configs_ holds it; {} (and *status
  // set) for a key that cannot be decoded.
  std::pair<std::string_view, Config*> Intern(std::string_view key, size_t nprofiles, Status* status);
  // Formats a config's line, record body and profile paths from its call.
  void Render(const Config& config) const;

  const ApiTable* apis_;
  const FormatOptions format_;
  const bool value_profiles_;
  const bool float_profiles_;
  PerThread<LocalCache> local_caches_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Config>, StringHash, std::equal_to<>> configs_;
  std::vector<ApiId> api_order_;
  std::unordered_set<ApiId> api_seen_;

  mutable std::mutex stacks_mu_;
  std::unordered_map<ApiId, StackSet> stacks_;
};

}  // namespace api_tracer
