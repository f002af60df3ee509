// The path every level-0 hook takes on a call (the ApiWrapper of
// hooks.cc and the in-place hooks of inplace.cc): the call is recorded when
// it is the thread's outermost call at its level, made in the session the
// hook was armed for, outside the tracer's own work; then the API runs, with
// the thread marked as inside it (so torch's calls inside it are not
// recorded again, and a mode's first call inside it, of the same callable,
// is known as the same call).
// Thread-safety: the GIL must be held.
#pragma once

#include <Python.h>

#include <cstdint>

#include "python/session.h"

namespace api_tracer::python {

// Whether the session a hook was armed in (`epoch`) is the active one, and
// recording is not suspended (the converter's own calls).
inline bool Armed(uint64_t epoch) {
  Session* s = Session::Active();
  return s && s->epoch() == epoch && !SuspendRecording::Active();
}

// Whether a level-0 call of a hook armed in session `epoch` is recorded now:
// armed, and outside any recorded call at its level.
inline bool RecordsNow(int level, uint64_t epoch) { return Armed(epoch) && CurrentThread().depth[level] == 0; }

// Whether a call at `level` would be recorded but for the recorded call it
// is inside: a construction there is remembered, not recorded.
inline bool RecordsOutside(int level, uint64_t epoch) { return Armed(epoch) && CurrentThread().depth[level] > 0; }

// Marks the thread as inside a recorded call of `callable` at `level`, from
// Enter() to Leave().
class OpenCall {
 public:
  OpenCall(int level, PyObject* callable) : ts_(CurrentThread()), level_(level), outer_(ts_.open_call) {
    ++ts_.depth[level_];
    ts_.open_call = callable;
  }
  ~OpenCall() {
    ts_.open_call = outer_;
    --ts_.depth[level_];
  }
  OpenCall(const OpenCall&) = delete;
  OpenCall& operator=(const OpenCall&) = delete;

 private:
  HookThreadState& ts_;
  int level_;
  PyObject* outer_;
};

// Where RecordsNow: records `call` of `api` in the active session, then
// returns invoke(), the API's own call, run as an OpenCall.
template <typename Invoke>
PyObject* RecordThenCall(int level, ApiId api, PyObject* callable, const CallArgs& call, Invoke&& invoke) {
  Session* s = Session::Active();
  Session::Pin pin(s);  // while `s` is used: the call may stop it
  s->Record(level, api, call);
  OpenCall open(level, callable);
  return invoke();
}

}  // namespace api_tracer::python
