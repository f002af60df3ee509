// The profiler's observer: feeds a Profiler (core/profiler.h) with
//   - with `ops`, every aten operator call (at::RecordFunction, FUNCTION
//     scope, no inputs: nothing is boxed for it), timed in the innermost
//     frame; without, operators cost nothing (no callback for that scope)
//     and their time is only that of the frames around them;
//   - every autograd node run (BACKWARD_FUNCTION scope), attributed to the
//     scope whose forward created the node: at every frame change the
//     thread notes the number its next node will get (at::sequence_number),
//     and a node's run carries its number back with the forward thread's id;
//   - with memory, the allocator's reports (c10::reportMemoryUsageToProfiler,
//     CPU and CUDA), through a MemoryReportingInfoBase installed as the
//     calling thread's profiler debug info, which autograd's threads inherit.
// One runs at a time; it cannot share the profiler debug info slot with a
// running torch.profiler.
#pragma once

#include <memory>

#include "core/profiler.h"
#include "core/status.h"

namespace api_tracer::aten {

Status InstallProfileObserver(Profiler* profiler, bool memory, bool ops);
void RemoveProfileObserver();

// A module's forward call of `scope` on thread `t` of `p` begins / ends
// (the nodes made in between belong to it).
void EnterForward(Profiler& p, Profiler::Thread& t, int scope);
void ExitForward(Profiler& p, Profiler::Thread& t, int scope);

// Whether this PyTorch sees a CUDA device.
bool HasCudaDevice();
// CUDA events for one thread's DeviceTimer; nullptr without a CUDA device.
std::unique_ptr<DeviceTimer::Backend> MakeCudaTimerBackend();

// For the benchmarks: a callback registered as the profiler's is, doing
// nothing, so that what at::RecordFunction costs by itself can be measured.
void SetEmptyProfileCallback(bool on, bool ops);

}  // namespace api_tracer::aten
