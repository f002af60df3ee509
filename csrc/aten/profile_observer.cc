#include "aten/profile_observer.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <atomic>
#include <mutex>
#include <string_view>

#include "aten/callback_guard.h"

namespace api_tracer::aten {
namespace {

class MemoryReporter;

struct State {
  Profiler* profiler;
  std::shared_ptr<MemoryReporter> memory;  // pushed on the installing thread
};

CallbackOwner<State> g_state;

// Operators are timed only when they have a schema: their name then lives
// as long as torch, and the thread numbers it by address once. (A named
// event's name may live in the RecordFunction itself: it is timed as time
// nested in its caller, never numbered.)
int OperatorId(Profiler::Thread& t, const at::RecordFunction& fn) {
  const char* name = fn.name();
  int op = t.OpId(name);
  if (op < 0 && fn.operator_name()) op = t.AddOp(name);
  return op;
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  CallbackGuard guard;
  State* st = g_state.Get();
  if (!st) return nullptr;
  int64_t now = Profiler::Now();
  Profiler::Thread& t = st->profiler->ThisThread();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    t.EnterNode(st->profiler->NodeScope(t, fn.forwardThreadId(), fn.seqNr()), AutogradNodeName(fn), now);
    return nullptr;
  }
  if (fn.seqNr() >= 0) {
    if (!t.registered()) st->profiler->Register(t, at::RecordFunction::currentThreadId());
    t.NoteNode(fn.seqNr());
  }
  t.EnterOp(OperatorId(t, fn), now);
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  CallbackGuard guard;
  State* st = g_state.Get();
  if (!st) return;
  int64_t now = Profiler::Now();
  Profiler::Thread& t = st->profiler->ThisThread();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    t.ExitNode(now);
  } else {
    t.ExitOp(now);
  }
}

class MemoryReporter : public c10::MemoryReportingInfoBase {
 public:
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, size_t /*total_allocated*/,
                         size_t /*total_reserved*/, c10::Device device) override {
    CallbackGuard guard;
    if (State* st = g_state.Get()) st->profiler->ThisThread().Memory(alloc_size, device.is_cuda());
  }
};

// The profiler's registration: what RecordFunction runs for it.
at::RecordFunctionCallback Callback(at::RecordFunctionCallback::StartCallback start,
                                    at::RecordFunctionCallback::EndCallback end) {
  return at::RecordFunctionCallback(start, end)
      .needsInputs(false)
      .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
}

std::unique_ptr<at::ObserverContext> StartNothing(const at::RecordFunction&) { return nullptr; }
void EndNothing(const at::RecordFunction&, at::ObserverContext*) {}

constexpr const char* kBusy = "a layer profile is already running in this process";

// Takes `reporter` off this thread's debug info if it is on top there. (Not
// when the profile is stopped from another thread, or when something pushed
// later is still there: popping would take that instead, or throw.)
void PopReporter(MemoryReporter* reporter) {
  if (!reporter || c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != reporter) return;
  try {
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  } catch (const c10::Error&) {
    // another kind of debug info was pushed above ours: leave both
  }
}

}  // namespace

Status InstallProfileObserver(Profiler* profiler, bool memory) {
  if (g_state.Installed()) return Status::FailedPrecondition(kBusy);
  if (memory && c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) {
    return Status::FailedPrecondition(
        "profile_memory cannot run while torch.profiler (or another memory profiler) runs on this thread");
  }
  auto st = std::make_unique<State>();
  st->profiler = profiler;
  if (memory) {
    st->memory = std::make_shared<MemoryReporter>();
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, st->memory);
  }
  std::shared_ptr<MemoryReporter> reporter = st->memory;
  Status status = g_state.Install(std::move(st), Callback(&OnStart, &OnEnd), kBusy);
  if (!status.ok()) PopReporter(reporter.get());
  return status;
}

void RemoveProfileObserver() {
  std::unique_ptr<State> st = g_state.Remove();
  if (st && st->memory) PopReporter(st->memory.get());
}

void SetEmptyProfileCallback(bool on) {
  static std::mutex mu;
  static at::CallbackHandle handle = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (on && !handle) {
    handle = at::addGlobalCallback(Callback(&StartNothing, &EndNothing));
  } else if (!on && handle) {
    at::removeCallback(handle);
    handle = 0;
  }
}

}  // namespace api_tracer::aten
