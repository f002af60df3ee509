// api_tracer for C++ programs linked against libtorch: start here.
//
//   #include <api_tracer/tracer.h>
//
//   api_tracer::Tracer tracer(api_tracer::Options{.output_path = "trace_output"});
//   tracer.start();
//   ...                  // every aten operator call, on every thread
//   tracer.stop();       // writes the files
//
//   {  // or for a scope
//     api_tracer::TraceScope scope(api_tracer::Options{.output_path = "trace_output"});
//     ...
//   }
//
// It records what level 3 of the Python tracer records (the native observer,
// at::RecordFunction), into the same files in the same format:
// api_trace.yaml, api_trace.txt, api_apis.txt, api_configs.yaml,
// api_statistics.yaml, and api_value_ranges.yaml with value_ranges. The
// summary files are rewritten whole every snapshot_interval seconds, so a
// process killed by a signal keeps them as of the last snapshot. One
// tracer runs at a time in a process. CMake: find_package(api_tracer) and
// link api_tracer::api_tracer.
//
// Errors (an output path that cannot be written, a second tracer) are thrown
// as std::runtime_error by start(); stop() throws if writing the files failed,
// or else if a call could not be recorded (the first such error).
// Thread-safety: a Tracer is started and stopped by one thread; what it
// records may run on any number of threads.
#pragma once

#include <memory>

#include "api_tracer/options.h"

#define API_TRACER_API __attribute__((visibility("default")))

namespace api_tracer {

class API_TRACER_API Tracer {
 public:
  explicit Tracer(Options options = {});
  ~Tracer();  // stops a running tracer (errors are then lost: call stop())
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void start();
  void stop();
  bool running() const;
  const Options& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Starts a tracer now and stops it at the end of the scope.
class API_TRACER_API TraceScope {
 public:
  explicit TraceScope(Options options = {}) : tracer_(std::move(options)) { tracer_.start(); }
  Tracer& tracer() { return tracer_; }

 private:
  Tracer tracer_;
};

}  // namespace api_tracer
