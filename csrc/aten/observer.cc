#include "aten/observer.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "aten/callback_guard.h"
#include "aten/ivalue_key.h"
#include "aten/op_epoch.h"
#include "core/flat_index.h"
#include "core/glob.h"
#include "core/suspend.h"
#include "core/module_context.h"
#include "core/per_thread.h"

namespace api_tracer::aten {
namespace {

struct Observer {
  Recorder* recorder;
  int level;
  Nesting nesting;     // \ the recorder's options,
  bool value_ranges;   // | copied for the hot path
  bool float_ranges;   // |
  ApiFilter filter;    // /
  uint64_t generation;
  std::mutex mu;  // ids
  std::unordered_map<const OpSignature*, std::pair<ApiId, bool>> ids;  // api id, included
};

CallbackOwner<Observer> g_observer;

// Signatures are process-wide: built once per operator schema, never freed.
// Keyed by the schema's text, not by where its name lies: an operator
// library destroyed and another registered may put a different schema
// at the same address.
std::mutex g_signatures_mu;
std::unordered_map<std::string, std::unique_ptr<OpSignature>> g_signatures;

struct OpEntry {
  const OpSignature* sig = nullptr;  // nullptr: not an operator (a named event)
  ApiId api = 0;
  bool included = false;
};

// An open operator call (or autograd node) of this thread; `rf` matches the
// end to the start: a RecordFunction stays put for the whole call.
struct Frame {
  const at::RecordFunction* rf;
  OpEntry op;
  bool has_child = false;
  bool recorded = false;  // recorded at its start (merging window)
  KeyWriter key;          // innermost: the call, written at its start
};

struct Node {
  const at::RecordFunction* rf;
  std::string name;
};

// One thread's state for the observer of `generation`.
struct ObserverThreadState {
  uint64_t generation = 0;
  FlatIndex op_index;              // the schema's name address -> op_entries
  std::vector<OpEntry> op_entries;
  uint64_t op_epoch = 0;           // OperatorEpoch() of op_index
  // Open operator calls: the first `depth` frames. Frames are reused, not
  // destroyed, so their key buffers are allocated once per nesting level.
  std::vector<Frame> frames;
  size_t depth = 0;
  std::vector<Node> backward;  // open autograd nodes
  WriteContext ctx;
  KeyWriter key;
  OpenCall open;

  Frame& Push() {
    if (depth == frames.size()) frames.emplace_back();
    Frame& f = frames[depth++];
    f.has_child = false;
    f.recorded = false;
    return f;
  }
  Frame* Top() { return depth ? &frames[depth - 1] : nullptr; }
  void ForgetOps() {
    op_index.Clear();
    op_entries.clear();
  }
};

ObserverThreadState& Local(uint64_t generation) {
  static thread_local ObserverThreadState state;
  if (state.generation != generation) {
    state.generation = generation;
    state.ForgetOps();
    state.depth = 0;
    state.backward.clear();
    state.open = {};
  }
  return state;
}

OpEntry LookupSlow(Observer* obs, ObserverThreadState& ts, const at::RecordFunction& fn) {
  std::optional<c10::FunctionSchema> schema = fn.operator_schema();
  if (!schema) return {};  // a named event: its name is no stable key, and it is no operator
  const char* name = fn.name();
  OpEntry entry;
  {
    std::lock_guard<std::mutex> lock(g_signatures_mu);
    auto& sig = g_signatures[c10::toString(*schema)];
    if (!sig) sig = std::make_unique<OpSignature>(*schema);
    entry.sig = sig.get();
  }
  {
    std::lock_guard<std::mutex> lock(obs->mu);
    auto [it, fresh] = obs->ids.try_emplace(entry.sig);
    if (fresh) {
      it->second = {obs->recorder->apis().Intern(entry.sig->api), obs->filter.Allows(entry.sig->api)};
    }
    entry.api = it->second.first;
    entry.included = it->second.second;
  }
  ts.op_index.Insert(reinterpret_cast<uintptr_t>(name), static_cast<int32_t>(ts.op_entries.size()));
  ts.op_entries.push_back(entry);
  return entry;
}

OpEntry Lookup(Observer* obs, ObserverThreadState& ts, const at::RecordFunction& fn) {
  if (uint64_t epoch = OperatorEpoch(); epoch != ts.op_epoch) {
    ts.ForgetOps();  // an operator went away: its name's address may be another's now
    ts.op_epoch = epoch;
  }
  if (int32_t i = ts.op_index.Find(reinterpret_cast<uintptr_t>(fn.name())); i >= 0) return ts.op_entries[i];
  return LookupSlow(obs, ts, fn);
}

void Record(Observer* obs, ObserverThreadState& ts, const KeyWriter& key, int depth, int worker) {
  RecordExtras extras;
  extras.level = obs->level;
  extras.depth = obs->nesting == Nesting::kAll ? depth : -1;
  extras.thread = obs->nesting == Nesting::kAll ? worker : -1;
  if (!ts.backward.empty()) extras.backward = ts.backward.back().name;
  extras.module = ModuleContext::Current();
  obs->recorder->Record(key, extras);  // a failure is kept by the recorder, for stop
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  CallbackGuard guard;
  Observer* obs = g_observer.Get();
  if (!obs) return nullptr;
  ObserverThreadState& ts = Local(obs->generation);
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ts.backward.push_back({&fn, std::string(AutogradNodeName(fn))});
    return nullptr;
  }
  if (SuspendRecording::Active()) return nullptr;  // the tracer's own work: no frame, no record
  OpEntry op = Lookup(obs, ts, fn);
  if (!op.sig) return nullptr;
  // A call on an intra-op worker thread (at::parallel_for's, thread 1 and
  // on) is made by the kernel of the operator that opened the region, on
  // another thread: nested in it, whatever this thread's own stack holds.
  int worker = at::in_parallel_region() ? at::get_thread_num() : 0;
  int depth = static_cast<int>(ts.depth) + (worker > 0 ? 1 : 0);
  if (Frame* parent = ts.Top()) parent->has_child = true;
  Frame& frame = ts.Push();
  frame.rf = &fn;
  frame.op = op;
  if (!op.included) return nullptr;
  ts.ctx.value_ranges = obs->value_ranges;
  ts.ctx.float_ranges = obs->float_ranges;
  switch (obs->nesting) {
    case Nesting::kInnermost:
      frame.key.Clear();
      WriteOpCall(*op.sig, op.api, fn.inputs(), &ts.ctx, &frame.key);
      break;
    case Nesting::kOutermost:
      if (depth) break;
      [[fallthrough]];
    case Nesting::kAll:
      ts.key.Clear();
      WriteOpCall(*op.sig, op.api, fn.inputs(), &ts.ctx, &ts.key);
      Record(obs, ts, ts.key, depth, worker > 0 ? worker : -1);
      frame.recorded = true;
      ts.open = {true, op.api};
      break;
  }
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  CallbackGuard guard;
  Observer* obs = g_observer.Get();
  if (!obs) return;
  ObserverThreadState& ts = Local(obs->generation);
  if (!ts.backward.empty() && ts.backward.back().rf == &fn) {
    ts.backward.pop_back();
    return;
  }
  // Named events pushed no frame; calls that started under an earlier
  // observer have none in this one's state.
  Frame* frame = ts.Top();
  if (!frame || frame->rf != &fn) return;
  if (frame->recorded) ts.open = {};
  if (obs->nesting == Nesting::kInnermost && frame->op.included && !frame->has_child) {
    Record(obs, ts, frame->key, static_cast<int>(ts.depth) - 1, -1);
  }
  --ts.depth;
}

}  // namespace

Status InstallObserver(Recorder* recorder, int level) {
  WatchOperatorDeregistrations();
  const TraceOptions& options = recorder->options();
  auto obs = std::make_unique<Observer>();
  obs->recorder = recorder;
  obs->level = level;
  obs->nesting = options.nesting;
  obs->value_ranges = options.value_ranges;
  obs->float_ranges = options.float_profiles();
  obs->filter = ApiFilter(options.include_apis, options.exclude_apis);
  obs->generation = NextGeneration();
  return g_observer.Install(std::move(obs),
                            at::RecordFunctionCallback(&OnStart, &OnEnd)
                                .needsInputs(true)
                                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}),
                            "the native observer (level 3) is already running");
}

void RemoveObserver(const Recorder* recorder) {
  g_observer.Remove([recorder](const Observer& obs) { return obs.recorder == recorder; });
}

void AbandonObserverAfterFork() { g_observer.AbandonAfterFork(); }

bool ObserverInstalled() { return g_observer.Installed(); }

OpenCall TakeOpenCall() {
  CallbackGuard guard;
  Observer* obs = g_observer.Get();
  if (!obs) return {};
  ObserverThreadState& ts = Local(obs->generation);
  OpenCall open = ts.open;
  ts.open = {};
  return open;
}

}  // namespace api_tracer::aten
