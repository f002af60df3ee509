#include "aten/profile_observer.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <atomic>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "aten/callback_guard.h"

namespace api_tracer::aten {
namespace {

struct State {
  Profiler* profiler;
  at::CallbackHandle handle = 0;
  bool memory = false;
};

std::atomic<State*> g_state{nullptr};
std::mutex g_install_mu;

// Operators are timed only when they have a schema: their name then lives
// as long as torch. This thread's cache: name pointer -> is an operator.
bool IsOperator(const at::RecordFunction& fn) {
  static thread_local std::unordered_map<const char*, bool> known;
  const char* name = fn.name();
  if (auto it = known.find(name); it != known.end()) return it->second;
  if (!fn.operator_name()) return false;  // a named event: its name is not stable, do not cache
  known.emplace(name, true);
  return true;
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  CallbackGuard guard;
  State* st = g_state.load(std::memory_order_seq_cst);
  if (!st) return nullptr;
  int64_t now = Profiler::Now();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    int scope = st->profiler->NodeScope(fn.forwardThreadId(), fn.seqNr());
    std::string_view name = fn.name();
    size_t colon = name.rfind(": ");
    st->profiler->EnterNode(scope, colon == std::string_view::npos ? name : name.substr(colon + 2), now);
    return nullptr;
  }
  if (!IsOperator(fn)) return nullptr;
  if (fn.seqNr() >= 0) st->profiler->NoteNode(at::RecordFunction::currentThreadId(), fn.seqNr());
  st->profiler->EnterOp(fn.name(), now);
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  CallbackGuard guard;
  State* st = g_state.load(std::memory_order_seq_cst);
  if (!st) return;
  int64_t now = Profiler::Now();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    st->profiler->ExitNode(now);
  } else if (IsOperator(fn)) {
    st->profiler->ExitOp(now);
  }
}

class MemoryReporter : public c10::MemoryReportingInfoBase {
 public:
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, size_t /*total_allocated*/,
                         size_t /*total_reserved*/, c10::Device device) override {
    CallbackGuard guard;
    if (State* st = g_state.load(std::memory_order_seq_cst)) st->profiler->Memory(alloc_size, device.is_cuda());
  }
};

}  // namespace

Status InstallProfileObserver(Profiler* profiler, bool memory) {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_state.load()) return Status::FailedPrecondition("a layer profile is already running in this process");
  if (memory && c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) {
    return Status::FailedPrecondition(
        "profile_memory cannot run while torch.profiler (or another memory profiler) runs on this thread");
  }
  auto* st = new State();
  st->profiler = profiler;
  st->memory = memory;
  if (memory) {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<MemoryReporter>());
  }
  st->handle = at::addGlobalCallback(
      at::RecordFunctionCallback(&OnStart, &OnEnd)
          .needsInputs(false)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  g_state.store(st, std::memory_order_seq_cst);
  return Status::OK();
}

void RemoveProfileObserver() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  State* st = g_state.exchange(nullptr, std::memory_order_seq_cst);
  if (!st) return;
  at::removeCallback(st->handle);
  if (st->memory) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  WaitForCallbacks();
  delete st;
}

}  // namespace api_tracer::aten
