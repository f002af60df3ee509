// SuspendRecording: the tracer's own work on this thread (the dialect's
// Python callbacks, the tracer's start and stop, a test runner's reports):
// while one lives, no level records a call made on the thread, the native
// observer's included.
// Thread-safety: per thread.
#pragma once

namespace api_tracer {

class SuspendRecording {
 public:
  SuspendRecording() { ++Depth(); }
  ~SuspendRecording() { --Depth(); }
  SuspendRecording(const SuspendRecording&) = delete;
  SuspendRecording& operator=(const SuspendRecording&) = delete;

  static bool Active() { return Depth() > 0; }
  // The thread's count of suspensions, for a scope held across calls (the
  // Python `suspended` context manager).
  static int& Depth() {
    thread_local int depth = 0;
    return depth;
  }
};

}  // namespace api_tracer
