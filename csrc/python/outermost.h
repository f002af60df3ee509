// The path every level-0 hook takes on a call (the ApiWrapper of
// hooks.cc and the in-place hooks of inplace.cc): the call is recorded when
// it is the thread's outermost call at its level (or at every depth, for a
// hook armed to record every call), made in the session the hook was armed
// for, outside the tracer's own work; then the API runs, with
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

// Where a call of a hook is recorded now. A hook is armed at a `level`,
// whose outermost calls it records (where the session records that level),
// and may record every call it sees, nested ones too, at a level of its own
// (`every`; -1: none): Paddle's level 1 is level 0's hooks recording every
// call, its operator level hooks that record every call at their own level.
// Inside a quiet call (a call the dialect wants nothing recorded in) nothing
// is. A call both levels see is one record where the session merges them.
struct Recording {
  int outer = -1;  // the level it is recorded at as the outermost call; -1: not
  int every = -1;  // the level it is recorded at as one of every call; -1: not
  explicit operator bool() const { return outer >= 0 || every >= 0; }
};

inline Recording RecordsNow(int level, int every, uint64_t epoch) {
  Recording r;
  if (!Armed(epoch)) return r;
  const HookThreadState& ts = CurrentThread();
  if (ts.quiet > 0) return r;
  const Session* s = Session::Active();
  if (ts.depth[level] == 0 && s->Records(level)) r.outer = level;
  if (every >= 0 && every != r.outer && s->Records(every) && !(r.outer >= 0 && s->merges())) r.every = every;
  return r;
}

// Whether session `s` records something a hook armed at `level` (recording
// every call at `every`) sees: what arming it asks.
inline bool RecordsAny(const Session* s, int level, int every) {
  return s && (s->Records(level) || (every >= 0 && s->Records(every)));
}

// Whether a call at `level` would be recorded but for the recorded call it
// is inside: a construction there is remembered, not recorded.
inline bool RecordsOutside(int level, uint64_t epoch) {
  return Armed(epoch) && CurrentThread().depth[level] > 0 && CurrentThread().quiet == 0;
}

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

// Records `call` of `api` where `r` says, in the active session, then
// returns invoke(), the API's own call, run as an OpenCall at the hook's
// `level`.
inline void RecordWhere(Session* s, const Recording& r, ApiId api, const CallArgs& call) {
  if (r.outer >= 0) s->Record(r.outer, api, call);
  if (r.every >= 0) s->Record(r.every, api, call);
}

template <typename Invoke>
PyObject* RecordThenCall(const Recording& r, int level, ApiId api, PyObject* callable, const CallArgs& call,
                         Invoke&& invoke) {
  Session* s = Session::Active();
  Session::Pin pin(s);  // while `s` is used: the call may stop it
  RecordWhere(s, r, api, call);
  OpenCall open(level, callable);
  return invoke();
}

}  // namespace api_tracer::python
