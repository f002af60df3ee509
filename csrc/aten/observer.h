// The native observer (level 3): every aten operator call, on every thread,
// recorded through at::RecordFunction global callbacks, with no Python.
//
// One observer runs at a time in a process. InstallObserver() registers the
// callbacks for FUNCTION (operators) and BACKWARD_FUNCTION (autograd nodes)
// scopes; RemoveObserver() unregisters them and then waits until no thread is
// still inside one, so the Recorder may be closed and freed right after.
//
// Per call the work is per thread: the operator's signature and API id come
// from a thread-local cache (keyed by the schema's name pointer, stable for
// the operator's life), the inputs are written into a thread-local key, and
// the Recorder's per-thread caches and buffers do the rest. Which calls are
// kept follows Nesting. A call made inside an autograd node carries the
// node's name (RecordExtras::backward).
#pragma once

#include <string>
#include <vector>

#include "core/recorder.h"

namespace api_tracer::aten {

// Records into `recorder` as `level`, with the recorder's options (nesting,
// value_ranges, include_apis and exclude_apis). Fails when an observer is
// already installed.
Status InstallObserver(Recorder* recorder, int level = kNativeLevel);
// Removes the observer that records into `recorder`, if it is the one
// installed (another tracer's is left alone).
void RemoveObserver(const Recorder* recorder);
// In a process just forked from one that was tracing: forget the observer
// without touching what it recorded into (the parent's) and without waiting
// for threads that do not exist here.
void AbandonObserverAfterFork();
bool ObserverInstalled();

// The op the observer recorded last on this thread and is still running, for
// merging: a Python mode that sees its first call inside it and finds the
// same API records nothing. Taking it (Take) ends the "directly nested" window.
struct OpenCall {
  bool open = false;
  ApiId api = 0;
};
OpenCall TakeOpenCall();

}  // namespace api_tracer::aten
