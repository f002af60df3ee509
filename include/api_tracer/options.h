// The options of api_tracer::Tracer (api_tracer/tracer.h). Plain C++: the
// tracer's core reads them too (csrc/core/options.h builds on them).
#pragma once

#include <string>
#include <vector>

namespace api_tracer {

// Which operator calls are kept.
enum class Nesting {
  kOutermost,  // the calls the program made, not the ops they call (default)
  kAll,        // every call, each record with its nesting depth
  kInnermost,  // only the calls that called no other operator
};

struct Options {
  std::string output_path = "trace_output";
  Nesting nesting = Nesting::kOutermost;
  bool stream_trace = true;         // false: no api_trace.*, only configs and statistics
  bool value_ranges = false;        // min and max of integer tensor inputs (reads data)
  bool float_ranges = false;        // with value_ranges: floating tensor inputs too (their range, non-finites)
  bool show_device = false;         // config lines also show devices other than cpu
  bool show_requires_grad = false;  // config lines also show requires_grad=True
  double snapshot_interval = 30;    // seconds between snapshots of the summary files (0: at stop only)
  unsigned long long trace_limit = 1ull << 30;  // bytes of api_trace.* (0: no limit)
  // The name of the set's source (a model, a test, a job): with one, the set
  // also has api_config_sources.yaml, per config its calls under this name,
  // which api-tracer merge keeps per source. Empty: no such file.
  std::string label;
  std::vector<std::string> include_apis;  // glob patterns; empty: every operator
  std::vector<std::string> exclude_apis;
};

}  // namespace api_tracer
