// Session: the one tracing session of the process, as the hooks see it.
//
// APITracer.start() opens it (the Recorder opens its files then) and stop()
// closes it; at most one is active at a time. It owns the Recorder, the
// Converter, the optional StackCapture and the cache that maps the callables
// the modes meet to API ids. Every hook checks Session::Active() on each
// call, so a hook that outlives its session (a wrapper someone kept a
// reference to) simply calls through.
//
// A hook that runs Python code (the dialect's callbacks, the traced call
// itself) holds a Session::Pin: another thread may stop the session
// meanwhile, which closes its files at once, but the session object lives
// until the last pin is gone, and records nothing more.
//
// Thread-safety: all state is guarded by the GIL; HookThreadState is per thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/record_function.h>

#include "core/glob.h"
#include "core/recorder.h"
#include "core/suspend.h"
#include "python/convert.h"
#include "python/objects.h"
#include "python/stack.h"

namespace api_tracer::aten {
struct OpSignature;  // aten/ivalue_key.h
}  // namespace api_tracer::aten

namespace api_tracer::python {

// A call of an instrumented Python function (inplace.h) on its way: entered,
// not yet left.
struct CodeFrame {
  int level = -1;                 // the level it was recorded at; -1: not recorded
  bool quiet = false;             // a quiet call (outermost.h), open at `level`
  PyObject* outer_call = nullptr;  // HookThreadState::open_call before it
  // A construction to remember when it returns (a constructor of the exact
  // class): the object, its call encoded, and the session that recorded it.
  PyObject* made = nullptr;
  std::string construction;
  std::vector<ValueProfile> construction_profiles;  // of the tensors it holds, in its order
  uint64_t epoch = 0;
};

// What each thread keeps between hook invocations.
struct HookThreadState {
  int depth[kMaxLevel + 1] = {};  // recorded calls open, per level
  int quiet = 0;                   // quiet calls open (outermost.h): nothing is recorded inside
  // The callable of the innermost recorded setattr-level call, until a mode
  // has seen the first call inside it ("nested directly", for merging).
  PyObject* open_call = nullptr;
  KeyWriter key;
  std::vector<CodeFrame> code_frames;  // innermost last
};
HookThreadState& CurrentThread();

// What the session asks the dialect (api_tracer.dialect), as Python callables.
struct DialectHooks {
  std::vector<std::string> stack_skip_prefixes;
  // callable(func) -> (str | None, direct callable, (operator name, overload) | None)
  PyObject* resolve = nullptr;
  PyObject* classify = nullptr;          // see convert.h
  PyObject* tensor_type_name = nullptr;  // callable(type) -> str
};

class Session {
 public:
  struct ApiEntry {
    ApiId id = 0;
    bool included = false;
    // What calling the API comes down to (OpOverload -> its C++ _op), or
    // null to call the callable itself.
    pybind11::object target;
    // An operator's signature (the dialect's operator_name), by which level
    // 2 leaves out its defaults as level 3 does; else null.
    std::shared_ptr<const aten::OpSignature> op;
  };

  static Session* Active();

  // Keeps `s` (may be nullptr) alive while the pin lives.
  class Pin {
   public:
    explicit Pin(Session* s) : s_(s) {
      if (s_) ++s_->pins_;
    }
    ~Pin() {
      if (s_ && --s_->pins_ == 0 && s_->stopped_) delete s_;
    }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

   private:
    Session* s_;
  };

  // Fails (Status) when a session is active or the output cannot be opened.
  static Status Start(const TraceOptions& options, const DialectHooks& dialect);
  // Fails as Recorder::Close does: writing the files failed, or a call (at any
  // level, the native observer's included) could not be recorded.
  static Status Stop();
  // In a process just forked from a tracing one: drop the session without
  // writing (its files and buffers are the parent's).
  static void AbandonAfterFork();
  // Removes this session's native observer if it is installed, waiting for
  // its callbacks without the GIL (one may need it: a Python symbolic size).
  void RemoveObserver();

  uint64_t epoch() const { return epoch_; }
  bool Records(int level) const { return level >= 0 && level <= kMaxLevel && levels_[level]; }
  // Whether calls seen by several levels are merged into one record.
  bool merges() const { return merges_; }
  bool Allows(std::string_view api) const { return filter_.Allows(api); }
  const ApiFilter& filter() const { return filter_; }
  Recorder* recorder() { return recorder_.get(); }
  ApiId Intern(std::string_view api) { return recorder_->apis().Intern(api); }
  const std::string& ApiName(ApiId api) const { return recorder_->apis().Name(api); }
  Converter& converter() { return converter_; }

  // The API a mode's `func` stands for; `included` is false for callables
  // the dialect does not name and for APIs the filter leaves out. The entry
  // lives as long as the session, but for a callable with nothing stable to
  // key a cache on (a method-wrapper of no descriptor): that one is named
  // into `*uncached`, which the caller keeps while it uses the entry.
  const ApiEntry* Resolve(PyObject* func, ApiEntry* uncached);

  // Records one call at `level` (nothing once the session is stopped).
  // Never raises: a failure is kept by the recorder, and Stop returns it.
  void Record(int level, ApiId api, const CallArgs& args);

 private:
  Session(const DialectHooks& dialect, std::unique_ptr<Recorder> recorder, uint64_t epoch);
  ~Session();  // out of line: Pin's destructor, inlined in every hook, only calls it
  ApiEntry Name(PyObject* func);
  const ApiEntry* ResolveAccessor(PyObject* func, ApiEntry* uncached);

  std::unique_ptr<Recorder> recorder_;
  const uint64_t epoch_;
  bool levels_[kMaxLevel + 1] = {};
  bool merges_;
  ApiFilter filter_;
  Converter converter_;
  std::unique_ptr<StackCapture> stacks_;
  const pybind11::object resolve_;
  ObjectMap<ApiEntry> apis_;  // by callable
  // By descriptor: the entries of its __get__, __set__ and other accessors,
  // each named when first seen.
  ObjectMap<std::array<std::optional<ApiEntry>, 3>> accessors_;
  int pins_ = 0;
  bool stopped_ = false;
};

// Runs the tracer's own code: nothing is recorded on this thread meanwhile,
// by the hooks and the native observer (SuspendRecording) nor by any other
// RecordFunction callback (describing a module runs operators: it is
// rebuilt on the meta device).
class Suspend {
 public:
  Suspend() = default;
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  SuspendRecording suspended_;
  at::RecordFunctionGuard record_functions_{false};
};

}  // namespace api_tracer::python
