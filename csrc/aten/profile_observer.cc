#include "aten/profile_observer.h"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <string_view>
#include <vector>

#include "aten/callback_guard.h"
#include "aten/op_epoch.h"

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
  t.SyncOpEpoch(OperatorEpoch());
  const char* name = fn.name();
  int op = t.OpId(name);
  if (op < 0 && fn.operator_name()) op = t.AddOp(name);
  return op;
}

// The nodes this thread makes from now on belong to its current frame's
// scope: said at every frame change, with the number its next node gets.
void NoteNodes(Profiler& p, Profiler::Thread& t) {
  if (!t.registered()) p.Register(t, at::RecordFunction::currentThreadId());
  t.NoteNode(static_cast<int64_t>(at::sequence_number::peek()));
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  CallbackGuard guard;
  State* st = g_state.Get();
  if (!st) return nullptr;
  int64_t now = Profiler::Now();
  Profiler::Thread& t = st->profiler->ThisThread();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    t.EnterNode(st->profiler->NodeScope(t, fn.forwardThreadId(), fn.seqNr()), AutogradNodeName(fn), now);
    NoteNodes(*st->profiler, t);  // a double backward's nodes
    return nullptr;
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
    NoteNodes(*st->profiler, t);
  } else {
    t.ExitOp(now);
  }
}

class MemoryReporter : public c10::MemoryReportingInfoBase {
 public:
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, size_t /*total_allocated*/, size_t /*total_reserved*/,
                         c10::Device device) override {
    CallbackGuard guard;
    if (State* st = g_state.Get()) st->profiler->ThisThread().Memory(alloc_size, device.is_cuda());
  }
};

// The profiler's registration: what RecordFunction runs for it. Without
// operators, only autograd node runs: an operator call then costs nothing
// (RecordFunction keeps its callbacks per scope).
at::RecordFunctionCallback Callback(at::RecordFunctionCallback::StartCallback start,
                                    at::RecordFunctionCallback::EndCallback end, bool ops) {
  at::RecordFunctionCallback cb(start, end);
  cb.needsInputs(false);
  if (ops) {
    cb.scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  } else {
    cb.scopes({at::RecordScope::BACKWARD_FUNCTION});
  }
  return cb;
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

// One thread's CUDA events (c10::Event, timing enabled), recorded on the
// thread's current stream of its current device and reused per device (an
// event stays on the device it was first recorded on). Nothing is recorded
// or queried while that stream is being captured into a CUDA graph (it
// would join the graph, or break the capture). Never throws: what fails is
// an event not recorded, or a frame not timed.
class CudaEvents final : public DeviceTimer::Backend {
 public:
  CudaEvents() : impl_(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)) {}

  uint32_t Record() override {
    try {
      c10::Device device = impl_->getDevice();
      c10::Stream stream = impl_->getStream(device);
      if (impl_->isStreamCapturing(stream)) return kNoEvent;
      std::vector<uint32_t>& free = FreeOn(device.index());
      uint32_t e;
      if (!free.empty()) {
        e = free.back();
        free.pop_back();
      } else {
        e = static_cast<uint32_t>(events_.size());
        events_.push_back(std::make_unique<c10::Event>(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT));
      }
      try {
        events_[e]->record(stream);
      } catch (const std::exception&) {
        Release(e);
        return kNoEvent;
      }
      return e;
    } catch (const std::exception&) {
      return kNoEvent;
    }
  }

  bool MayQuery() override {
    try {
      return !impl_->isStreamCapturing(impl_->getStream(impl_->getDevice()));
    } catch (const std::exception&) {
      return false;
    }
  }

  bool Done(uint32_t e) override {
    try {
      return events_[e]->query();
    } catch (const std::exception&) {
      return true;  // it will not become readable by waiting: ElapsedNs says so
    }
  }

  void Wait(uint32_t e) override {
    try {
      events_[e]->synchronize();
    } catch (const std::exception&) {
    }
  }

  int64_t ElapsedNs(uint32_t start, uint32_t end) override {
    if (events_[start]->device_index() != events_[end]->device_index()) return -1;
    try {
      return std::llround(events_[start]->elapsedTime(*events_[end]) * 1e6);
    } catch (const std::exception&) {
      return -1;
    }
  }

  void Release(uint32_t e) override { FreeOn(events_[e]->device_index()).push_back(e); }

 private:
  // Events never recorded have no device yet: index -1, kept apart.
  std::vector<uint32_t>& FreeOn(c10::DeviceIndex index) {
    size_t slot = static_cast<size_t>(index + 1);
    if (free_.size() <= slot) free_.resize(slot + 1);
    return free_[slot];
  }

  const c10::impl::DeviceGuardImplInterface* impl_;
  std::vector<std::unique_ptr<c10::Event>> events_;
  std::vector<std::vector<uint32_t>> free_;  // by device index + 1
};

}  // namespace

bool HasCudaDevice() {
  return c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA) &&
         c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->deviceCount() > 0;
}

std::unique_ptr<DeviceTimer::Backend> MakeCudaTimerBackend() {
  return HasCudaDevice() ? std::make_unique<CudaEvents>() : nullptr;
}

void EnterForward(Profiler& p, Profiler::Thread& t, int scope) {
  t.EnterScope(scope, Profiler::Now());
  NoteNodes(p, t);
}

void ExitForward(Profiler& p, Profiler::Thread& t, int scope) {
  t.ExitScope(scope, Profiler::Now());
  NoteNodes(p, t);
}

Status InstallProfileObserver(Profiler* profiler, bool memory, bool ops) {
  if (g_state.Installed()) return Status::FailedPrecondition(kBusy);
  if (memory && c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) {
    return Status::FailedPrecondition(
        "profile_memory cannot run while torch.profiler (or another memory profiler) runs on this thread");
  }
  WatchOperatorDeregistrations();
  auto st = std::make_unique<State>();
  st->profiler = profiler;
  if (memory) {
    st->memory = std::make_shared<MemoryReporter>();
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, st->memory);
  }
  std::shared_ptr<MemoryReporter> reporter = st->memory;
  Status status = g_state.Install(std::move(st), Callback(&OnStart, &OnEnd, ops), kBusy);
  if (!status.ok()) PopReporter(reporter.get());
  return status;
}

void RemoveProfileObserver() {
  std::unique_ptr<State> st = g_state.Remove();
  if (st && st->memory) PopReporter(st->memory.get());
}

void SetEmptyProfileCallback(bool on, bool ops) {
  static std::mutex mu;
  static at::CallbackHandle handle = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (on && !handle) {
    handle = at::addGlobalCallback(Callback(&StartNothing, &EndNothing, ops));
  } else if (!on && handle) {
    at::removeCallback(handle);
    handle = 0;
  }
}

}  // namespace api_tracer::aten
